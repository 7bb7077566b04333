// SPDX-License-Identifier: GPL-2.0
/*
 * q_parq.so: tc(8) plugin for the parq qdisc.
 *
 *   tc qdisc add dev DEV root handle 1: parq [ threshold N | inf ] ...
 *   tc class add dev DEV parent 1: classid 1:N parq { rate RATE | idt TIME }
 *
 * Classes 1:1 (parallel) and 1:2 (local) are fixed; classes with a minor of
 * PARQ_RESV_MINOR_MIN (hexadecimal, as tc writes minors) and up are reserved
 * flows.
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
#include <linux/pkt_sched.h>

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
		"                [ split-gso [ auto ] | no-split-gso ] [ limit PACKETS ]\n"
		"                [ flow-limit PACKETS ] [ dscp-parallel LIST | none ]\n"
		"                [ default parallel | local ]\n"
		"                [ linkrate RATE | auto ] [ reservable PERCENT ]\n"
		"                [ dscp-mark DSCP | off ]\n"
		"       tc class ... classid MAJOR:MINOR parq { rate RATE | idt TIME }\n"
		"\n"
		"  N        parallel units sent per local unit, %d..%d (default %d);\n"
		"           inf: strict priority for parallel\n"
		"  RATE     a rate such as 100mbit or 10gbit, at most 1600gbit;\n"
		"           rate: the shaper (default unlimited); linkrate: the capacity\n"
		"           reservations share (default auto: the shaper rate, else the\n"
		"           link speed); class rate: the class's reservation\n"
		"  BYTES    %d..%d, added to each packet's length by the shaper\n"
		"  PACKETS  1..%d (limit default %d, flow-limit default %d)\n"
		"  LIST     DSCP[,DSCP]...  DSCP := CS0..CS7 | AF11..AF43 | EF | VA | LE | 0..63\n"
		"           (default %s)\n"
		"  dscp-mark  parallel packets leave with DSCP, local ones that carry a\n"
		"           parallel DSCP with CS0 (default off: as they came)\n"
		"  PERCENT  share of linkrate that reservations may take, 1..%d (default %d)\n"
		"  TIME     a reserved class's time between packets, such as 100us,\n"
		"           1ns..%llus (units s, ms, us, ns)\n"
		"Classes 1:1 (parallel) and 1:2 (local) are fixed; reserved classes are\n"
		"MAJOR:%x to MAJOR:ffff (minors are hexadecimal).\n",
		1, PARQ_THRESHOLD_MAX, PARQ_THRESHOLD_DEFAULT,
		PARQ_OVERHEAD_MIN, PARQ_OVERHEAD_MAX,
		PARQ_LIMIT_MAX, PARQ_LIMIT_DEFAULT, PARQ_FLOW_LIMIT_DEFAULT,
		dflt, PARQ_RESERVABLE_MAX, PARQ_RESERVABLE_DEFAULT,
		(unsigned long long)(PARQ_IDT_MAX / 1000000000ULL),
		PARQ_RESV_MINOR_MIN);
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

/*
 * Bytes per second, 1..PARQ_RATE_MAX, for the "what" parameter; if @word is
 * not NULL, that word stands for @word_val ("unlimited", "auto").
 */
static int parq_parse_rate(const char *what, const char *arg, const char *dev,
			   const char *word, __u64 word_val, __u64 *rate)
{
	char expected[96], scaled[64];
	__u64 unit, r;
	double num;
	char *suffix;

	snprintf(expected, sizeof(expected),
		 "expected a rate such as 100mbit or 10gbit%s%s",
		 word ? ", or " : "", word ? word : "");
	if (word && strcmp(arg, word) == 0) {
		*rate = word_val;
		return 0;
	}

	if (strchr(arg, '%')) {
		/* tc's "rate 10%" of the link speed; prints its own error. */
		if (!dev || !*dev || get_percent_rate64(&r, arg, dev))
			return parq_bad_value(what, arg,
					      "cannot compute a percentage of the link speed");
	} else {
		/*
		 * get_rate64() converts a double to __u64 without a range
		 * check, so bound the magnitude first: "1000000<suffix>" gives
		 * the suffix's scale (times 10^6, exact in a __u64) and a
		 * known-good suffix.
		 */
		if (!isdigit((unsigned char)arg[0]) && arg[0] != '.')
			return parq_bad_value(what, arg, "%s", expected);
		errno = 0;
		num = strtod(arg, &suffix);
		if (suffix == arg || errno || !isfinite(num) || num < 0)
			return parq_bad_value(what, arg, "%s", expected);
		if (strlen(suffix) > sizeof(scaled) - 16)
			return parq_bad_value(what, arg, "%s", expected);
		snprintf(scaled, sizeof(scaled), "1000000%s", suffix);
		if (get_rate64(&unit, scaled))
			return parq_bad_value(what, arg, "%s", expected);
		if (num * (double)unit / 1e6 >= (double)PARQ_RATE_MAX + 1.0)
			goto too_big;
		if (get_rate64(&r, arg))
			return parq_bad_value(what, arg, "%s", expected);
	}

	if (r == 0) {
		if (word)
			return parq_bad_value(what, arg,
					      "rate must be positive; use \"%s %s\" %s",
					      what, word,
					      strcmp(word, "unlimited") == 0 ?
					      "to turn the shaper off" :
					      "for the default");
		return parq_bad_value(what, arg, "rate must be positive");
	}
	if (r > PARQ_RATE_MAX)
		goto too_big;
	*rate = r;
	return 0;

too_big:
	return parq_bad_value(what, arg,
			      "expected at most 1600gbit (%llu bytes/s)%s%s",
			      (unsigned long long)PARQ_RATE_MAX,
			      word ? ", or " : "", word ? word : "");
}

/* ---- Times: exact decimal with a unit, to whole nanoseconds ---- */

struct parq_time_unit {
	const char *name;
	__u64 scale;		/* ns */
	unsigned int digits;	/* log10(scale) */
};

static const struct parq_time_unit parq_time_units[] = {
	{ "s", 1000000000ULL, 9 }, { "sec", 1000000000ULL, 9 },
	{ "secs", 1000000000ULL, 9 },
	{ "ms", 1000000ULL, 6 }, { "msec", 1000000ULL, 6 },
	{ "msecs", 1000000ULL, 6 },
	{ "us", 1000ULL, 3 }, { "usec", 1000ULL, 3 }, { "usecs", 1000ULL, 3 },
	{ "ns", 1ULL, 0 }, { "nsec", 1ULL, 0 }, { "nsecs", 1ULL, 0 },
};

#define PARQ_NUM_TIME_UNITS \
	(sizeof(parq_time_units) / sizeof(parq_time_units[0]))

/*
 * "100us", "1.5ms", "250ns", "2s": 1 ns..@max.  A unit is required (tc's
 * bare numbers mean microseconds in some places and nanoseconds in others),
 * and the value must be a whole number of nanoseconds.  No floating point,
 * so that what is printed parses back to the same value.
 */
static int parq_parse_time(const char *what, const char *arg, __u64 max,
			   __u64 *ns)
{
	static const char expected[] =
		"expected a time such as 100us, 1.5ms or 250ns (units s, ms, us, ns)";
	const struct parq_time_unit *u = NULL;
	const char *p = arg, *frac = NULL;
	unsigned int nint = 0, nfrac = 0, i;
	__u64 iv = 0, fv = 0, v;
	bool big = false;

	for (; isdigit((unsigned char)*p); p++, nint++) {
		if (iv > max)
			big = true;	/* stop growing: no overflow */
		else
			iv = iv * 10 + (*p - '0');
	}
	if (*p == '.') {
		frac = ++p;
		for (; isdigit((unsigned char)*p); p++)
			nfrac++;
		if (!nfrac)
			return parq_bad_value(what, arg, "%s", expected);
	}
	if (!nint && !nfrac)
		return parq_bad_value(what, arg, "%s", expected);
	for (i = 0; i < PARQ_NUM_TIME_UNITS; i++)
		if (strcasecmp(p, parq_time_units[i].name) == 0)
			u = &parq_time_units[i];
	if (!u)
		return parq_bad_value(what, arg, "%s", expected);

	/* Fraction: the first u->digits digits count, the rest must be 0. */
	for (i = 0; i < u->digits; i++)
		fv = fv * 10 + (i < nfrac ? (__u64)(frac[i] - '0') : 0);
	for (; i < nfrac; i++)
		if (frac[i] != '0')
			return parq_bad_value(what, arg,
					      "not a whole number of nanoseconds");

	if (big || iv > max / u->scale + 1)
		goto too_big;
	v = iv * u->scale + fv;
	if (v == 0)
		return parq_bad_value(what, arg, "time must be positive");
	if (v > max)
		goto too_big;
	*ns = v;
	return 0;

too_big:
	return parq_bad_value(what, arg, "expected at most %llus",
			      (unsigned long long)(max / 1000000000ULL));
}

/* Exact: the largest unit not above @ns, with as many decimals as needed. */
#define PARQ_TIME_TEXT	32

static void parq_format_time(__u64 ns, char *buf, size_t size)
{
	static const struct parq_time_unit *const pick[] = {
		&parq_time_units[0], &parq_time_units[3],
		&parq_time_units[6], &parq_time_units[9],
	};
	const struct parq_time_unit *u = pick[3];
	size_t i, len;

	for (i = 0; i < 3; i++)
		if (ns >= pick[i]->scale) {
			u = pick[i];
			break;
		}
	if (ns % u->scale == 0) {
		snprintf(buf, size, "%llu%s",
			 (unsigned long long)(ns / u->scale), u->name);
		return;
	}
	snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(ns / u->scale),
		 (int)u->digits, (unsigned long long)(ns % u->scale));
	len = strlen(buf);
	while (len && buf[len - 1] == '0')
		buf[--len] = '\0';
	snprintf(buf + len, size - len, "%s", u->name);
}

/* One DSCP: a name (any case) or 0..63; -1 if neither. */
static int parq_parse_dscp(const char *tok)
{
	long long num;
	size_t i;

	if (parq_parse_ll(tok, false, 0, PARQ_DSCP_MAX, &num) == 0)
		return num;
	for (i = 0; i < PARQ_NUM_DSCP_NAMES; i++)
		if (strcasecmp(tok, parq_dscp_names[i].name) == 0)
			return parq_dscp_names[i].dscp;
	return -1;
}

/* Comma separated DSCP names or numbers, or "none". */
static int parq_parse_dscp_list(const char *arg, __u64 *mask)
{
	static const char expected[] =
		"expected CS0..CS7, AF11..AF43, EF, VA, LE or 0..63, "
		"comma separated, or none";
	char *copy, *tok, *save = NULL;
	const char *p;
	__u64 m = 0;
	int dscp, err = 0;

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
		dscp = parq_parse_dscp(tok);
		if (dscp < 0) {
			for (p = tok; *p && isdigit((unsigned char)*p); p++)
				;
			fprintf(stderr,
				"parq: illegal \"dscp-parallel\" value \"%s\": %s \"%s\"; %s\n",
				arg, *p ? "unknown DSCP name" :
				"DSCP out of range", tok, expected);
			err = -1;
			break;
		}
		m |= PARQ_DSCP_BIT(dscp);
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
	__u64 linkrate;
	__u8 reservable;
	__u8 dscp_mark;
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
	if (PARQ_GIVEN(TCA_PARQ_LINKRATE))
		err |= addattr64(n, PARQ_MAXLEN, TCA_PARQ_LINKRATE,
				 o->linkrate);
	if (PARQ_GIVEN(TCA_PARQ_RESERVABLE))
		err |= addattr8(n, PARQ_MAXLEN, TCA_PARQ_RESERVABLE,
				o->reservable);
	if (PARQ_GIVEN(TCA_PARQ_DSCP_MARK))
		err |= addattr8(n, PARQ_MAXLEN, TCA_PARQ_DSCP_MARK,
				o->dscp_mark);
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
			/* "split-gso auto": split whenever the shaper is on. */
			if (kw[0] != 'n' && argc > 1 &&
			    strcmp(argv[1], "auto") == 0) {
				o.split_gso = PARQ_SPLIT_GSO_AUTO;
				argc--, argv++;
			}
			continue;
		}

		if (strcmp(kw, "threshold") && strcmp(kw, "unit") &&
		    strcmp(kw, "rate") && strcmp(kw, "overhead") &&
		    strcmp(kw, "limit") && strcmp(kw, "flow-limit") &&
		    strcmp(kw, "dscp-parallel") && strcmp(kw, "default") &&
		    strcmp(kw, "linkrate") && strcmp(kw, "reservable") &&
		    strcmp(kw, "dscp-mark")) {
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
			if (parq_parse_rate(kw, arg, dev, "unlimited",
					    PARQ_RATE_UNLIMITED, &o.rate))
				return -1;
		} else if (strcmp(kw, "linkrate") == 0) {
			if (parq_seen(&o, TCA_PARQ_LINKRATE, kw))
				return -1;
			if (parq_parse_rate(kw, arg, dev, "auto",
					    PARQ_LINKRATE_AUTO, &o.linkrate))
				return -1;
		} else if (strcmp(kw, "reservable") == 0) {
			char num[32];
			size_t len = strlen(arg);

			if (parq_seen(&o, TCA_PARQ_RESERVABLE, kw))
				return -1;
			/* "90" or "90%" */
			if (len && arg[len - 1] == '%')
				len--;
			if (len < sizeof(num)) {
				memcpy(num, arg, len);
				num[len] = '\0';
			}
			if (len >= sizeof(num) ||
			    parq_parse_ll(num, false, 1, PARQ_RESERVABLE_MAX,
					  &v))
				return parq_bad_value(kw, arg,
						      "expected a percentage of linkrate, 1..%d",
						      PARQ_RESERVABLE_MAX);
			o.reservable = v;
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
		} else if (strcmp(kw, "dscp-mark") == 0) {
			int dscp = strcmp(arg, "off") == 0 ?
				   PARQ_DSCP_MARK_OFF : parq_parse_dscp(arg);

			if (parq_seen(&o, TCA_PARQ_DSCP_MARK, kw))
				return -1;
			if (dscp < 0)
				return parq_bad_value(kw, arg,
						      "expected one DSCP (CS0..CS7, AF11..AF43, EF, VA, LE or 0..%d) or off",
						      PARQ_DSCP_MAX);
			o.dscp_mark = dscp;
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
		/* As configured: what auto gives is in the statistics. */
		u8v = parq_rta_u8(a);
		if (u8v == PARQ_SPLIT_GSO_AUTO) {
			parq_print_string(PRINT_JSON, "split_gso", NULL, "auto");
			parq_print_string(PRINT_FP, NULL, "%s ",
					  "split-gso auto");
		} else if (u8v == PARQ_SPLIT_GSO_ON ||
			   u8v == PARQ_SPLIT_GSO_OFF) {
			parq_print_string(PRINT_JSON, "split_gso", NULL,
					  u8v == PARQ_SPLIT_GSO_ON ?
					  "on" : "off");
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
	if (PARQ_ATTR(TCA_PARQ_LINKRATE, __u64)) {
		/* As configured: what auto gives is in the statistics. */
		u64v = parq_rta_u64(a);
		if (u64v >= PARQ_LINKRATE_AUTO) {
			parq_print_string(PRINT_ANY, "linkrate",
					  "linkrate %s ", "auto");
		} else {
			tc_print_rate(PRINT_ANY, "linkrate", "linkrate %s ",
				      u64v);
		}
	}
	if (PARQ_ATTR(TCA_PARQ_RESERVABLE, __u8))
		parq_print_uint(PRINT_ANY, "reservable", "reservable %u ",
				parq_rta_u8(a));
	if (PARQ_ATTR(TCA_PARQ_DSCP_MARK, __u8)) {
		const char *name;

		u8v = parq_rta_u8(a);
		name = u8v == PARQ_DSCP_MARK_OFF ? "off" :
		       parq_dscp_to_name(u8v);
		if (name)
			parq_print_string(PRINT_ANY, "dscp_mark",
					  "dscp-mark %s ", name);
		else
			parq_print_uint(PRINT_ANY, "dscp_mark",
					"dscp-mark %u ", u8v);
	}
#undef PARQ_ATTR
	return 0;
}

/* ---- print_xstats ---- */

/* A time in ns: a number in JSON, exact with a unit in text. */
static void parq_print_time(const char *key, const char *fmt, __u64 ns)
{
	char text[PARQ_TIME_TEXT];

	parq_print_u64(PRINT_JSON, key, NULL, ns);
	if (!is_json_context()) {
		parq_format_time(ns, text, sizeof(text));
		parq_print_string(PRINT_FP, NULL, fmt, text);
	}
}

/*
 * One class's sojourn times: "NAME_pkts N NAME_mean TIME NAME_hist H", H
 * the non-empty buckets as BOUND:PACKETS, comma-separated, BOUND the time
 * they stayed less than (the last bucket: BOUND+, at least that), or "-";
 * in JSON NAME_pkts, NAME_sum (ns), NAME_mean (ns) and NAME_hist, every
 * bucket's packets in an array.
 */
static void parq_print_sojourn(const char *name, const char *pre, __u64 sum,
			       const __u64 *hist)
{
	char key[64], fmt[80], text[PARQ_TIME_TEXT];
	char buf[PARQ_SOJOURN_BUCKETS * (PARQ_TIME_TEXT + 24)];
	size_t used = 0;
	__u64 pkts = 0;
	int b;

	for (b = 0; b < PARQ_SOJOURN_BUCKETS; b++)
		pkts += hist[b];
	snprintf(key, sizeof(key), "%s_pkts", name);
	snprintf(fmt, sizeof(fmt), "%s%s_pkts %%llu", pre, name);
	parq_print_u64(PRINT_ANY, key, fmt, pkts);
	snprintf(key, sizeof(key), "%s_sum", name);
	parq_print_u64(PRINT_JSON, key, NULL, sum);
	snprintf(key, sizeof(key), "%s_mean", name);
	snprintf(fmt, sizeof(fmt), " %s_mean %%s", name);
	parq_print_time(key, fmt, pkts ? sum / pkts : 0);

	snprintf(key, sizeof(key), "%s_hist", name);
	if (is_json_context()) {
		open_json_array(PRINT_JSON, key);
		for (b = 0; b < PARQ_SOJOURN_BUCKETS; b++)
			parq_print_u64(PRINT_JSON, NULL, NULL, hist[b]);
		close_json_array(PRINT_JSON, NULL);
		return;
	}
	buf[0] = '\0';
	for (b = 0; b < PARQ_SOJOURN_BUCKETS; b++) {
		int last = b == PARQ_SOJOURN_BUCKETS - 1;

		if (!hist[b])
			continue;
		parq_format_time(1ULL << (PARQ_SOJOURN_SHIFT + b + !last),
				 text, sizeof(text));
		used += snprintf(buf + used, sizeof(buf) - used, "%s%s%s:%llu",
				 used ? "," : "", text, last ? "+" : "",
				 (unsigned long long)hist[b]);
	}
	snprintf(fmt, sizeof(fmt), " %s_hist %%s", name);
	parq_print_string(PRINT_FP, NULL, fmt, used ? buf : "-");
}

/* Versioned structs: copy what is there into a zeroed struct; a field is
 * printed only if the payload holds all of it.
 */
#define PARQ_HAS(st, field, len) \
	(offsetof(__typeof__(st), field) + sizeof((st).field) <= (len))

static void parq_print_class_xstats(const void *data, size_t len)
{
	struct tc_parq_class_xstats st;

	memset(&st, 0, sizeof(st));
	memcpy(&st, data, len < sizeof(st) ? len : sizeof(st));

	if (PARQ_HAS(st, rate, len))
		tc_print_rate(PRINT_ANY, "resv_rate", "  resv_rate %s", st.rate);
	if (PARQ_HAS(st, idt, len) && st.idt)
		parq_print_time("idt", " idt %s", st.idt);
	if (PARQ_HAS(st, dispatches, len))
		parq_print_u64(PRINT_ANY, "dispatches", " dispatches %llu",
			       st.dispatches);
	if (PARQ_HAS(st, lateness_max, len))
		parq_print_time("lateness_max", " lateness_max %s",
				st.lateness_max);
	if (PARQ_HAS(st, lateness_sum, len))
		parq_print_time("lateness_mean", " lateness_mean %s",
				st.dispatches ?
				st.lateness_sum / st.dispatches : 0);
}

static int parq_print_xstats(struct qdisc_util *qu, FILE *f,
			     struct rtattr *xstats)
{
	struct tc_parq_xstats st;
	__u32 first;
	size_t len;

	(void)qu;
	(void)f;
	if (!xstats)
		return 0;

	/* Versioned: an older module sends a shorter struct, a newer one a
	 * longer one.  Print exactly the fields that are present.
	 */
	len = RTA_PAYLOAD(xstats);
	if (len < sizeof(first))
		return 0;
	memcpy(&first, RTA_DATA(xstats), sizeof(first));
	if (first & PARQ_XSTATS_CLASS) {
		parq_print_class_xstats(RTA_DATA(xstats), len);
		return 0;
	}

	memset(&st, 0, sizeof(st));
	memcpy(&st, RTA_DATA(xstats), len < sizeof(st) ? len : sizeof(st));

#define PARQ_X32(field, pre)						\
	do {								\
		if (PARQ_HAS(st, field, len))				\
			parq_print_uint(PRINT_ANY, #field,		\
					pre #field " %u", st.field);	\
	} while (0)
#define PARQ_X64(field, pre)						\
	do {								\
		if (PARQ_HAS(st, field, len))				\
			parq_print_u64(PRINT_ANY, #field,		\
				       pre #field " %llu", st.field);	\
	} while (0)
#define PARQ_XRATE(field, pre)						\
	do {								\
		if (PARQ_HAS(st, field, len))				\
			tc_print_rate(PRINT_ANY, #field,		\
				      pre #field " %s", st.field);	\
	} while (0)

	parq_print_uint(PRINT_ANY, "xstats_version", "  xstats_version %u",
			st.version);
	PARQ_X32(flows_active, " ");
	PARQ_X64(threshold_turns, " ");
	PARQ_X64(parallel_only, " ");
	PARQ_X64(local_only, " ");

	if (PARQ_HAS(st, throttled, len)) {
		print_nl();
		PARQ_X64(throttled, "  ");
		PARQ_X64(wakeups, " ");
		PARQ_X64(gso_segments, " ");
		PARQ_X64(unknown_class, " ");
	}

	if (PARQ_HAS(st, drop_local_full, len)) {
		print_nl();
		PARQ_X64(drop_local_full, "  ");
		PARQ_X64(drop_local_evicted, " ");
		PARQ_X64(drop_parallel_full, " ");
		PARQ_X64(drop_flow_limit, " ");
		PARQ_X64(drop_gso_failed, " ");
		PARQ_X64(drop_filter, " ");
	}

	/* version 2: reserved flows */
	if (PARQ_HAS(st, resv_dispatches, len)) {
		print_nl();
		PARQ_X64(resv_dispatches, "  ");
		PARQ_X64(resv_rejects, " ");
		PARQ_XRATE(resv_sum_rate, " ");
		PARQ_XRATE(resv_capacity, " ");
		PARQ_X32(resv_classes, " ");
		PARQ_X32(resv_backlogged, " ");
		PARQ_X32(resv_throttled, " ");
	}

	/* version 3: local destinations, receiver-side credits */
	if (PARQ_HAS(st, local_flows, len)) {
		print_nl();
		PARQ_X32(local_flows, "  ");
		PARQ_X32(local_waiting, " ");
		PARQ_X64(credit_waits, " ");
		PARQ_X64(drop_local_nomem, " ");
	}

	/* version 4: sojourn times */
	if (PARQ_HAS(st, local_sojourn, len)) {
		print_nl();
		parq_print_sojourn("parallel_sojourn", "  ",
				   st.parallel_sojourn_sum, st.parallel_sojourn);
		print_nl();
		parq_print_sojourn("local_sojourn", "  ", st.local_sojourn_sum,
				   st.local_sojourn);
	}

	/* version 5: what "auto" resolves to */
	if (PARQ_HAS(st, effective_split_gso, len)) {
		print_nl();
		PARQ_XRATE(effective_linkrate, "  ");
		PARQ_X32(effective_split_gso, " ");
	}
#undef PARQ_XRATE
#undef PARQ_X64
#undef PARQ_X32
	return 0;
}

#undef PARQ_HAS

/* ---- classes: 1:1 parallel and 1:2 local, fixed; reserved ones ---- */

static int parq_parse_copt(struct qdisc_util *qu, int argc, char **argv,
			   struct nlmsghdr *n, const char *dev)
{
	const struct tcmsg *t = NLMSG_DATA(n);
	__u32 minor = TC_H_MIN(t->tcm_handle);
	__u64 rate = 0, idt = 0;
	struct rtattr *tail;
	__u32 before;
	int i;

	(void)qu;
	for (i = 0; i < argc; i++)
		if (strcmp(argv[i], "help") == 0) {
			explain();
			return -1;
		}

	if (minor == 0) {
		fprintf(stderr,
			"parq: a reserved class needs \"classid MAJOR:MINOR\" before \"parq\", MINOR %x..ffff (hexadecimal)\n",
			PARQ_RESV_MINOR_MIN);
		return -1;
	}
	if (minor < PARQ_RESV_MINOR_MIN) {
		__u32 major = TC_H_MAJ(t->tcm_handle) >> 16;

		fprintf(stderr,
			"parq: classes %x:%x and %x:%x are fixed; reserved classes are %x:%x and up (minors are hexadecimal)\n",
			major, PARQ_CLASS_PARALLEL, major, PARQ_CLASS_LOCAL,
			major, PARQ_RESV_MINOR_MIN);
		return -1;
	}

	if (n->nlmsg_type == RTM_DELTCLASS) {
		if (argc) {
			fprintf(stderr,
				"parq: \"tc class delete\" takes no parameters, not \"%s\"\n",
				argv[0]);
			return -1;
		}
		return 0;
	}

	for (; argc > 0; argc--, argv++) {
		const char *kw = *argv;

		if (strcmp(kw, "rate") && strcmp(kw, "idt")) {
			fprintf(stderr,
				"parq: unknown class parameter \"%s\"; expected rate RATE or idt TIME\n",
				kw);
			return -1;
		}
		if (rate || idt) {
			fprintf(stderr,
				"parq: duplicate or conflicting class parameter \"%s\": give one of rate and idt, once\n",
				kw);
			return -1;
		}
		if (argc < 2) {
			fprintf(stderr, "parq: missing value after \"%s\"\n",
				kw);
			return -1;
		}
		argc--;
		argv++;
		if (kw[0] == 'r') {
			if (parq_parse_rate(kw, *argv, dev, NULL, 0, &rate))
				return -1;
		} else {
			if (parq_parse_time(kw, *argv, PARQ_IDT_MAX, &idt))
				return -1;
		}
	}
	if (!rate && !idt) {
		fprintf(stderr,
			"parq: a reserved class needs \"rate RATE\" or \"idt TIME\"\n");
		return -1;
	}

	before = n->nlmsg_len;
	tail = addattr_nest(n, PARQ_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (n->nlmsg_len == before)
		return -1;
	if (rate ? addattr64(n, PARQ_MAXLEN, TCA_PARQ_CLASS_RATE, rate) :
		   addattr64(n, PARQ_MAXLEN, TCA_PARQ_CLASS_IDT, idt))
		return -1;
	addattr_nest_end(n, tail);
	return 0;
}

/* Reserved classes: rate or idt.  Classes 1:1 and 1:2 have no options. */
static int parq_print_copt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_PARQ_CLASS_MAX + 1];
	struct rtattr *a;

	(void)qu;
	(void)f;
	if (!opt)
		return 0;
	parq_parse_nested(tb, TCA_PARQ_CLASS_MAX, opt);

	a = tb[TCA_PARQ_CLASS_RATE];
	if (a && RTA_PAYLOAD(a) >= sizeof(__u64))
		tc_print_rate(PRINT_ANY, "rate", "rate %s ", parq_rta_u64(a));
	a = tb[TCA_PARQ_CLASS_IDT];
	if (a && RTA_PAYLOAD(a) >= sizeof(__u64))
		parq_print_time("idt", "idt %s ", parq_rta_u64(a));
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
