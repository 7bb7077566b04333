// SPDX-License-Identifier: GPL-2.0
/*
 * q_parq.so: tc(8) plugin for the parq qdisc.
 *
 *   tc qdisc add dev DEV root handle 1: parq [ threshold N | inf ] ...
 *
 * Only the parameters given on the command line are sent, so that
 * "tc qdisc change ... parq threshold 8" changes nothing else.  All
 * attributes travel nested (NLA_F_NESTED) in TCA_OPTIONS; their types and
 * ranges come from <linux/parq.h>.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <linux/parq.h>

#include "iproute2.h"

#define PARQ_MAXLEN	1024	/* bound passed to addattr*, as tc's qdiscs */

/* ---- DSCP names (RFC 2474, 2597, 3246, 5865, 8622) ---- */

struct parq_dscp_name {
	const char *name;
	unsigned int dscp;
};

static const struct parq_dscp_name parq_dscp_names[] = {
	{ "CS0", 0 },  { "LE", 1 },
	{ "CS1", 8 },  { "AF11", 10 }, { "AF12", 12 }, { "AF13", 14 },
	{ "CS2", 16 }, { "AF21", 18 }, { "AF22", 20 }, { "AF23", 22 },
	{ "CS3", 24 }, { "AF31", 26 }, { "AF32", 28 }, { "AF33", 30 },
	{ "CS4", 32 }, { "AF41", 34 }, { "AF42", 36 }, { "AF43", 38 },
	{ "CS5", 40 }, { "VA", 44 },   { "EF", 46 },
	{ "CS6", 48 }, { "CS7", 56 },
};

#define PARQ_NUM_DSCP_NAMES \
	(sizeof(parq_dscp_names) / sizeof(parq_dscp_names[0]))

static const char *parq_dscp_to_name(unsigned int dscp)
{
	size_t i;

	for (i = 0; i < PARQ_NUM_DSCP_NAMES; i++)
		if (parq_dscp_names[i].dscp == dscp)
			return parq_dscp_names[i].name;
	return NULL;
}

/* "CS5,EF,CS6,CS7": names where they exist, else numbers; "" if empty. */
#define PARQ_DSCP_TEXT	(64 * 6)

static void parq_format_dscp(__u64 mask, char *buf, size_t size)
{
	const char *name;
	size_t len = 0;
	unsigned int d;
	int n;

	buf[0] = '\0';
	for (d = 0; d < 64; d++) {
		if (!(mask & PARQ_DSCP_BIT(d)))
			continue;
		name = parq_dscp_to_name(d);
		if (name)
			n = snprintf(buf + len, size - len, "%s%s",
				     len ? "," : "", name);
		else
			n = snprintf(buf + len, size - len, "%s%u",
				     len ? "," : "", d);
		if (n < 0 || (size_t)n >= size - len)
			return;
		len += n;
	}
}

static void explain(void)
{
	char dflt[PARQ_DSCP_TEXT];

	parq_format_dscp(PARQ_DSCP_DEFAULT, dflt, sizeof(dflt));
	fprintf(stderr,
		"Usage: ... parq [ threshold N | inf ] [ unit bytes | packets ]\n"
		"                [ rate RATE | unlimited ] [ overhead BYTES ]\n"
		"                [ split-gso | no-split-gso ] [ limit PACKETS ]\n"
		"                [ flow-limit PACKETS ] [ dscp-parallel LIST | none ]\n"
		"                [ default parallel | local ]\n"
		"\n"
		"  N        parallel units sent per local unit, %d..%d (default %d);\n"
		"           inf: strict priority for parallel\n"
		"  RATE     shaper rate, e.g. 100mbit or 10gbit (default unlimited)\n"
		"  BYTES    %d..%d, added to each packet's length by the shaper\n"
		"  PACKETS  1..%d (limit default %d, flow-limit default %d)\n"
		"  LIST     DSCP[,DSCP]...  DSCP := CS0..CS7 | AF11..AF43 | EF | VA | LE | 0..63\n"
		"           (default %s)\n"
		"Classes 1:1 (parallel) and 1:2 (local) are fixed.\n",
		1, PARQ_THRESHOLD_MAX, PARQ_THRESHOLD_DEFAULT,
		PARQ_OVERHEAD_MIN, PARQ_OVERHEAD_MAX,
		PARQ_LIMIT_MAX, PARQ_LIMIT_DEFAULT, PARQ_FLOW_LIMIT_DEFAULT,
		dflt);
}

/* ---- Strict number parsing: decimal only, whole token, no overflow ---- */

static int parq_parse_ll(const char *arg, bool is_signed, long long min,
			 long long max, long long *val)
{
	const char *p = arg;
	char *end;
	long long v;

	if (*p == '-' || *p == '+') {
		if (!is_signed)
			return -1;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*val = v;
	return 0;
}

/* "parq: illegal "what" value "arg": <expected...>", always returns -1. */
static int __attribute__((format(printf, 3, 4)))
parq_bad_value(const char *what, const char *arg, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "parq: illegal \"%s\" value \"%s\": ", what, arg);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* Bytes per second, 1..PARQ_RATE_MAX, or PARQ_RATE_UNLIMITED. */
static int parq_parse_rate(const char *arg, const char *dev, __u64 *rate)
{
	static const char expected[] =
		"expected a rate such as 100mbit or 10gbit, or unlimited";
	char scaled[64];
	__u64 unit, r;
	double num;
	char *suffix;

	if (strcmp(arg, "unlimited") == 0) {
		*rate = PARQ_RATE_UNLIMITED;
		return 0;
	}

	if (strchr(arg, '%')) {
		/* tc's "rate 10%" of the link speed; prints its own error. */
		if (!dev || get_percent_rate64(&r, arg, dev))
			return parq_bad_value("rate", arg,
					      "cannot compute a percentage of the link speed");
	} else {
		/*
		 * get_rate64() converts a double to __u64 without a range
		 * check, so bound the magnitude first: "1000000<suffix>" gives
		 * the suffix's scale (times 10^6, exact in a __u64) and a
		 * known-good suffix.
		 */
		if (!isdigit((unsigned char)arg[0]) && arg[0] != '.')
			return parq_bad_value("rate", arg, "%s", expected);
		errno = 0;
		num = strtod(arg, &suffix);
		if (suffix == arg || errno || !isfinite(num) || num < 0)
			return parq_bad_value("rate", arg, "%s", expected);
		if (strlen(suffix) > sizeof(scaled) - 16)
			return parq_bad_value("rate", arg, "%s", expected);
		snprintf(scaled, sizeof(scaled), "1000000%s", suffix);
		if (get_rate64(&unit, scaled))
			return parq_bad_value("rate", arg, "%s", expected);
		if (num * (double)unit / 1e6 >= (double)PARQ_RATE_MAX + 1.0)
			goto too_big;
		if (get_rate64(&r, arg))
			return parq_bad_value("rate", arg, "%s", expected);
	}

	if (r == 0)
		return parq_bad_value("rate", arg,
				      "rate must be positive; use \"rate unlimited\" to turn the shaper off");
	if (r > PARQ_RATE_MAX)
		goto too_big;
	*rate = r;
	return 0;

too_big:
	return parq_bad_value("rate", arg,
			      "expected at most 1600gbit (%llu bytes/s), or unlimited",
			      (unsigned long long)PARQ_RATE_MAX);
}

/* Comma separated DSCP names or numbers, or "none". */
static int parq_parse_dscp_list(const char *arg, __u64 *mask)
{
	static const char expected[] =
		"expected CS0..CS7, AF11..AF43, EF, VA, LE or 0..63, "
		"comma separated, or none";
	char *copy, *tok, *save = NULL;
	const char *p;
	long long num;
	__u64 m = 0;
	size_t i;
	int err = 0;

	if (strcmp(arg, "none") == 0) {
		*mask = 0;
		return 0;
	}
	/* Empty list or empty element ("CS5,,EF", "CS5,"): strtok would
	 * silently skip those.
	 */
	if (!*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,"))
		return parq_bad_value("dscp-parallel", arg, "%s", expected);

	copy = strdup(arg);
	if (!copy) {
		fprintf(stderr, "parq: out of memory\n");
		return -1;
	}
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (parq_parse_ll(tok, false, 0, 63, &num) == 0) {
			m |= PARQ_DSCP_BIT(num);
			continue;
		}
		for (i = 0; i < PARQ_NUM_DSCP_NAMES; i++)
			if (strcasecmp(tok, parq_dscp_names[i].name) == 0)
				break;
		if (i == PARQ_NUM_DSCP_NAMES) {
			for (p = tok; *p && isdigit((unsigned char)*p); p++)
				;
			fprintf(stderr,
				"parq: illegal \"dscp-parallel\" value \"%s\": %s \"%s\"; %s\n",
				arg, *p ? "unknown DSCP name" :
				"DSCP out of range", tok, expected);
			err = -1;
			break;
		}
		m |= PARQ_DSCP_BIT(parq_dscp_names[i].dscp);
	}
	free(copy);
	if (!err)
		*mask = m;
	return err;
}

/* ---- parse_qopt ---- */

struct parq_opts {
	unsigned int seen;	/* bit per TCA_PARQ_* attribute given */
	__u32 threshold;
	__u8 unit;
	__u64 rate;
	__s32 overhead;
	__u8 split_gso;
	__u32 limit;
	__u32 flow_limit;
	__u64 dscp_parallel;
	__u8 default_class;
};

/* Mark @attr given; a second occurrence is an error. */
static int parq_seen(struct parq_opts *o, int attr, const char *kw)
{
	if (o->seen & (1U << attr)) {
		fprintf(stderr,
			"parq: duplicate or conflicting parameter \"%s\"\n", kw);
		return -1;
	}
	o->seen |= 1U << attr;
	return 0;
}

static int parq_put_opts(const struct parq_opts *o, struct nlmsghdr *n)
{
	struct rtattr *tail;
	__u32 before = n->nlmsg_len;
	int err = 0;

	tail = addattr_nest(n, PARQ_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (n->nlmsg_len == before)
		return -1;	/* addattr_l() printed the error */

#define PARQ_GIVEN(a)	(o->seen & (1U << (a)))
	if (PARQ_GIVEN(TCA_PARQ_THRESHOLD))
		err |= addattr32(n, PARQ_MAXLEN, TCA_PARQ_THRESHOLD,
				 o->threshold);
	if (PARQ_GIVEN(TCA_PARQ_UNIT))
		err |= addattr8(n, PARQ_MAXLEN, TCA_PARQ_UNIT, o->unit);
	if (PARQ_GIVEN(TCA_PARQ_RATE))
		err |= addattr64(n, PARQ_MAXLEN, TCA_PARQ_RATE, o->rate);
	if (PARQ_GIVEN(TCA_PARQ_OVERHEAD))
		err |= addattr_l(n, PARQ_MAXLEN, TCA_PARQ_OVERHEAD,
				 &o->overhead, sizeof(o->overhead));
	if (PARQ_GIVEN(TCA_PARQ_SPLIT_GSO))
		err |= addattr8(n, PARQ_MAXLEN, TCA_PARQ_SPLIT_GSO,
				o->split_gso);
	if (PARQ_GIVEN(TCA_PARQ_LIMIT))
		err |= addattr32(n, PARQ_MAXLEN, TCA_PARQ_LIMIT, o->limit);
	if (PARQ_GIVEN(TCA_PARQ_FLOW_LIMIT))
		err |= addattr32(n, PARQ_MAXLEN, TCA_PARQ_FLOW_LIMIT,
				 o->flow_limit);
	if (PARQ_GIVEN(TCA_PARQ_DSCP_PARALLEL))
		err |= addattr64(n, PARQ_MAXLEN, TCA_PARQ_DSCP_PARALLEL,
				 o->dscp_parallel);
	if (PARQ_GIVEN(TCA_PARQ_DEFAULT_CLASS))
		err |= addattr8(n, PARQ_MAXLEN, TCA_PARQ_DEFAULT_CLASS,
				o->default_class);
#undef PARQ_GIVEN
	if (err)
		return -1;
	addattr_nest_end(n, tail);
	return 0;
}

static int parq_parse_opt(struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev)
{
	struct parq_opts o;
	long long v;

	(void)qu;
	memset(&o, 0, sizeof(o));

	for (; argc > 0; argc--, argv++) {
		const char *kw = *argv;
		const char *arg = NULL;

		if (strcmp(kw, "help") == 0) {
			explain();
			return -1;
		}
		if (strcmp(kw, "split-gso") == 0 ||
		    strcmp(kw, "no-split-gso") == 0) {
			if (parq_seen(&o, TCA_PARQ_SPLIT_GSO, kw))
				return -1;
			o.split_gso = kw[0] == 'n' ? PARQ_SPLIT_GSO_OFF :
						     PARQ_SPLIT_GSO_ON;
			continue;
		}

		if (strcmp(kw, "threshold") && strcmp(kw, "unit") &&
		    strcmp(kw, "rate") && strcmp(kw, "overhead") &&
		    strcmp(kw, "limit") && strcmp(kw, "flow-limit") &&
		    strcmp(kw, "dscp-parallel") && strcmp(kw, "default")) {
			fprintf(stderr, "parq: unknown parameter \"%s\"\n", kw);
			explain();
			return -1;
		}
		if (argc < 2) {
			fprintf(stderr, "parq: missing value after \"%s\"\n",
				kw);
			return -1;
		}
		argc--;
		argv++;
		arg = *argv;

		if (strcmp(kw, "threshold") == 0) {
			if (parq_seen(&o, TCA_PARQ_THRESHOLD, kw))
				return -1;
			if (strcmp(arg, "inf") == 0)
				o.threshold = PARQ_THRESHOLD_INF;
			else if (parq_parse_ll(arg, false, 1,
					       PARQ_THRESHOLD_MAX, &v) == 0)
				o.threshold = v;
			else
				return parq_bad_value(kw, arg,
						      "expected 1..%u or inf",
						      PARQ_THRESHOLD_MAX);
		} else if (strcmp(kw, "unit") == 0) {
			if (parq_seen(&o, TCA_PARQ_UNIT, kw))
				return -1;
			if (strcmp(arg, "bytes") == 0)
				o.unit = PARQ_UNIT_BYTES;
			else if (strcmp(arg, "packets") == 0)
				o.unit = PARQ_UNIT_PACKETS;
			else
				return parq_bad_value(kw, arg,
						      "expected bytes or packets");
		} else if (strcmp(kw, "rate") == 0) {
			if (parq_seen(&o, TCA_PARQ_RATE, kw))
				return -1;
			if (parq_parse_rate(arg, dev, &o.rate))
				return -1;
		} else if (strcmp(kw, "overhead") == 0) {
			if (parq_seen(&o, TCA_PARQ_OVERHEAD, kw))
				return -1;
			if (parq_parse_ll(arg, true, PARQ_OVERHEAD_MIN,
					  PARQ_OVERHEAD_MAX, &v))
				return parq_bad_value(kw, arg,
						      "expected %d..%d bytes",
						      PARQ_OVERHEAD_MIN,
						      PARQ_OVERHEAD_MAX);
			o.overhead = v;
		} else if (strcmp(kw, "limit") == 0 ||
			   strcmp(kw, "flow-limit") == 0) {
			int attr = kw[0] == 'l' ? TCA_PARQ_LIMIT :
						  TCA_PARQ_FLOW_LIMIT;

			if (parq_seen(&o, attr, kw))
				return -1;
			if (parq_parse_ll(arg, false, 1, PARQ_LIMIT_MAX, &v))
				return parq_bad_value(kw, arg,
						      "expected 1..%u packets",
						      PARQ_LIMIT_MAX);
			if (attr == TCA_PARQ_LIMIT)
				o.limit = v;
			else
				o.flow_limit = v;
		} else if (strcmp(kw, "dscp-parallel") == 0) {
			if (parq_seen(&o, TCA_PARQ_DSCP_PARALLEL, kw))
				return -1;
			if (parq_parse_dscp_list(arg, &o.dscp_parallel))
				return -1;
		} else { /* default */
			if (parq_seen(&o, TCA_PARQ_DEFAULT_CLASS, kw))
				return -1;
			if (strcmp(arg, "parallel") == 0)
				o.default_class = PARQ_CLASS_PARALLEL;
			else if (strcmp(arg, "local") == 0)
				o.default_class = PARQ_CLASS_LOCAL;
			else
				return parq_bad_value(kw, arg,
						      "expected parallel or local");
		}
	}

	return parq_put_opts(&o, n);
}

/* ---- print_qopt ---- */

static void parq_print_dscp(__u64 mask)
{
	char text[PARQ_DSCP_TEXT];
	const char *name;
	unsigned int d;

	if (is_json_context()) {
		open_json_array(PRINT_JSON, "dscp_parallel");
		for (d = 0; d < 64; d++) {
			if (!(mask & PARQ_DSCP_BIT(d)))
				continue;
			name = parq_dscp_to_name(d);
			if (name)
				parq_print_string(PRINT_JSON, NULL, NULL, name);
			else
				parq_print_uint(PRINT_JSON, NULL, NULL, d);
		}
		close_json_array(PRINT_JSON, NULL);
		return;
	}

	parq_format_dscp(mask, text, sizeof(text));
	parq_print_string(PRINT_FP, NULL, "dscp-parallel %s ",
			  text[0] ? text : "none");
}

static int parq_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_PARQ_MAX + 1];
	struct rtattr *a;
	__u32 u32v;
	__u64 u64v;
	__u8 u8v;

	(void)qu;
	(void)f;
	if (!opt)
		return 0;
	parq_parse_nested(tb, TCA_PARQ_MAX, opt);

#define PARQ_ATTR(t, type) \
	((a = tb[t]) && RTA_PAYLOAD(a) >= sizeof(type))

	if (PARQ_ATTR(TCA_PARQ_THRESHOLD, __u32)) {
		u32v = parq_rta_u32(a);
		if (u32v >= PARQ_THRESHOLD_INF)
			parq_print_string(PRINT_ANY, "threshold",
					  "threshold %s ", "inf");
		else
			parq_print_uint(PRINT_ANY, "threshold",
					"threshold %u ", u32v);
	}
	if (PARQ_ATTR(TCA_PARQ_UNIT, __u8)) {
		u8v = parq_rta_u8(a);
		if (u8v == PARQ_UNIT_BYTES || u8v == PARQ_UNIT_PACKETS)
			parq_print_string(PRINT_ANY, "unit", "unit %s ",
					  u8v == PARQ_UNIT_BYTES ?
					  "bytes" : "packets");
		else
			parq_print_uint(PRINT_ANY, "unit", "unit %u ", u8v);
	}
	if (PARQ_ATTR(TCA_PARQ_RATE, __u64)) {
		u64v = parq_rta_u64(a);
		if (u64v >= PARQ_RATE_UNLIMITED)
			parq_print_string(PRINT_ANY, "rate", "rate %s ",
					  "unlimited");
		else
			tc_print_rate(PRINT_ANY, "rate", "rate %s ", u64v);
	}
	if (PARQ_ATTR(TCA_PARQ_OVERHEAD, __s32))
		parq_print_int(PRINT_ANY, "overhead", "overhead %d ",
			       parq_rta_s32(a));
	if (PARQ_ATTR(TCA_PARQ_SPLIT_GSO, __u8)) {
		/* The kernel dumps the effective state, never AUTO. */
		u8v = parq_rta_u8(a);
		if (u8v == PARQ_SPLIT_GSO_ON || u8v == PARQ_SPLIT_GSO_OFF) {
			parq_print_bool(PRINT_JSON, "split_gso", NULL,
					u8v == PARQ_SPLIT_GSO_ON);
			parq_print_string(PRINT_FP, NULL, "%s ",
					  u8v == PARQ_SPLIT_GSO_ON ?
					  "split-gso" : "no-split-gso");
		}
	}
	if (PARQ_ATTR(TCA_PARQ_LIMIT, __u32))
		parq_print_uint(PRINT_ANY, "limit", "limit %u ",
				parq_rta_u32(a));
	if (PARQ_ATTR(TCA_PARQ_FLOW_LIMIT, __u32))
		parq_print_uint(PRINT_ANY, "flow_limit", "flow-limit %u ",
				parq_rta_u32(a));
	if (PARQ_ATTR(TCA_PARQ_DSCP_PARALLEL, __u64))
		parq_print_dscp(parq_rta_u64(a));
	if (PARQ_ATTR(TCA_PARQ_DEFAULT_CLASS, __u8)) {
		u8v = parq_rta_u8(a);
		if (u8v == PARQ_CLASS_PARALLEL || u8v == PARQ_CLASS_LOCAL)
			parq_print_string(PRINT_ANY, "default", "default %s ",
					  u8v == PARQ_CLASS_PARALLEL ?
					  "parallel" : "local");
		else
			parq_print_uint(PRINT_ANY, "default", "default %u ",
					u8v);
	}
#undef PARQ_ATTR
	return 0;
}

/* ---- print_xstats ---- */

static int parq_print_xstats(struct qdisc_util *qu, FILE *f,
			     struct rtattr *xstats)
{
	struct tc_parq_xstats st;
	size_t len;

	(void)qu;
	(void)f;
	if (!xstats)
		return 0;

	/* Versioned: an older module sends a shorter struct, a newer one a
	 * longer one.  Print exactly the fields that are present.
	 */
	len = RTA_PAYLOAD(xstats);
	memset(&st, 0, sizeof(st));
	memcpy(&st, RTA_DATA(xstats), len < sizeof(st) ? len : sizeof(st));

#define PARQ_HAS(field) \
	(offsetof(struct tc_parq_xstats, field) + sizeof(st.field) <= len)
#define PARQ_X32(field, pre)						\
	do {								\
		if (PARQ_HAS(field))					\
			parq_print_uint(PRINT_ANY, #field,		\
					pre #field " %u", st.field);	\
	} while (0)
#define PARQ_X64(field, pre)						\
	do {								\
		if (PARQ_HAS(field))					\
			parq_print_u64(PRINT_ANY, #field,		\
				       pre #field " %llu", st.field);	\
	} while (0)

	if (!PARQ_HAS(version))
		return 0;

	parq_print_uint(PRINT_ANY, "xstats_version", "  xstats_version %u",
			st.version);
	PARQ_X32(flows_active, " ");
	PARQ_X64(threshold_turns, " ");
	PARQ_X64(parallel_only, " ");
	PARQ_X64(local_only, " ");

	if (PARQ_HAS(throttled)) {
		print_nl();
		PARQ_X64(throttled, "  ");
		PARQ_X64(wakeups, " ");
		PARQ_X64(gso_segments, " ");
		PARQ_X64(unknown_class, " ");
	}

	if (PARQ_HAS(drop_local_full)) {
		print_nl();
		PARQ_X64(drop_local_full, "  ");
		PARQ_X64(drop_local_evicted, " ");
		PARQ_X64(drop_parallel_full, " ");
		PARQ_X64(drop_flow_limit, " ");
		PARQ_X64(drop_gso_failed, " ");
		PARQ_X64(drop_filter, " ");
	}
#undef PARQ_X64
#undef PARQ_X32
#undef PARQ_HAS
	return 0;
}

/* ---- classes: 1:1 parallel and 1:2 local, created with the qdisc ---- */

static int parq_parse_copt(struct qdisc_util *qu, int argc, char **argv,
			   struct nlmsghdr *n, const char *dev)
{
	(void)qu;
	(void)argc;
	(void)argv;
	(void)n;
	(void)dev;
	fprintf(stderr,
		"parq: classes are fixed (1:1 parallel, 1:2 local); they cannot be added or changed\n");
	return -1;
}

/* Classes have no parameters.  Present so that tc does not complain
 * "[cannot parse class parameters]" if the kernel sends TCA_OPTIONS.
 */
static int parq_print_copt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	(void)qu;
	(void)f;
	(void)opt;
	return 0;
}

struct qdisc_util parq_qdisc_util = {
	.id		= "parq",
	.parse_qopt	= parq_parse_opt,
	.print_qopt	= parq_print_opt,
	.print_xstats	= parq_print_xstats,
	.parse_copt	= parq_parse_copt,
	.print_copt	= parq_print_copt,
};
