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
 * attributes travel nested (NLA_F_NESTED) in TCA_OPTIONS.  The qdisc's
 * parameters (keyword, spelling, type, range, default) are the rows of
 * PARQ_PARAMS in <parq/params.h>: parsing, printing and the usage are made
 * from them.
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
#include <parq/params.h>
#include <parq/xstats.h>

#include "iproute2.h"

#define PARQ_MAXLEN	1024	/* bound passed to addattr*, as tc's qdiscs */

/* ---- DSCP names: PARQ_DSCP_NAMES ---- */

struct parq_dscp_name {
	const char *name;
	unsigned int dscp;
};

#define PARQ_DSCP_NAME(name_, dscp_)	{ .name = name_, .dscp = dscp_ },
static const struct parq_dscp_name parq_dscp_names[] = {
	PARQ_DSCP_NAMES(PARQ_DSCP_NAME)
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

/* ---- The qdisc's parameters: the rows of PARQ_PARAMS ---- */

struct parq_qopt {
	const char *kw;
	unsigned short attr;
	enum parq_param_type type;
	enum parq_param_syntax syntax;
	const char *meta;	/* what tc-parq(8) calls a value */
	long long min;
	__u64 max;
	__u64 dflt;
	const char *word;	/* stands for word_value, or NULL */
	__u64 word_value;
	const char *const *names;	/* names[v - min], NULL-terminated */
};

#define PARQ_NAMES(...)		((const char *const[]){ __VA_ARGS__, NULL })
#define PARQ_NO_NAMES		NULL
#define PARQ_QOPT(a, field, kw_, t, syn, meta_, lo, hi, dflt_, word_,	\
		  wval, names_, msg)					\
	{ .kw = kw_, .attr = a, .type = t, .syntax = syn, .meta = meta_, \
	  .min = lo,							\
	  .max = hi, .dflt = dflt_, .word = word_, .word_value = wval,	\
	  .names = names_ },

static const struct parq_qopt parq_qopts[] = {
	PARQ_PARAMS(PARQ_QOPT)
};

#define PARQ_NUM_QOPTS	(sizeof(parq_qopts) / sizeof(parq_qopts[0]))

/* Attributes are bits of struct parq_opts's seen. */
_Static_assert(TCA_PARQ_MAX < 32, "parq: too many attributes for seen");

/* The JSON key: the keyword with '-' as '_'. */
static void parq_json_key(const struct parq_qopt *o, char *buf, size_t size)
{
	size_t i;

	for (i = 0; o->kw[i] && i + 1 < size; i++)
		buf[i] = o->kw[i] == '-' ? '_' : o->kw[i];
	buf[i] = '\0';
}

static size_t parq_num_names(const struct parq_qopt *o)
{
	size_t n = 0;

	while (o->names && o->names[n])
		n++;
	return n;
}

/* The name of @o's value @v, or NULL if the names do not cover it. */
static const char *parq_value_name(const struct parq_qopt *o, __u64 v)
{
	if (v < (__u64)o->min || v - o->min >= parq_num_names(o))
		return NULL;
	return o->names[v - o->min];
}

/* "a", "a or b", "a, b or c". */
static void parq_join_names(const struct parq_qopt *o, const char *sep,
			    const char *last, char *buf, size_t size)
{
	size_t i, n = parq_num_names(o), len = 0;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s",
				i == 0 ? "" : i + 1 == n ? last : sep,
				o->names[i]);
}

/* @o's grammar on tc's command line, as tc-parq(8)'s SYNOPSIS has it. */
static void parq_syntax(const struct parq_qopt *o, char *buf, size_t size)
{
	char names[64];

	if (o->syntax == PARQ_SYN_FLAG) {
		snprintf(buf, size, "%s [ %s ] | no-%s", o->kw, o->names[0],
			 o->kw);
	} else if (o->meta) {
		snprintf(buf, size, "%s %s%s%s", o->kw, o->meta,
			 o->word ? " | " : "", o->word ? o->word : "");
	} else {
		parq_join_names(o, " | ", " | ", names, sizeof(names));
		snprintf(buf, size, "%s %s", o->kw, names);
	}
}

static void parq_format_value(const struct parq_qopt *o, __u64 v,
			      char *buf, size_t size);

/*
 * The grammar, then each parameter's values and default: all from the
 * table but the placeholders' and the classes' lines.
 */
static void explain(void)
{
	const char *pre = "Usage: ... parq";
	char item[96], dflt[PARQ_DSCP_TEXT];
	const struct parq_qopt *o;
	size_t col = 0, n;

	for (o = parq_qopts; o < parq_qopts + PARQ_NUM_QOPTS; o++) {
		parq_syntax(o, item, sizeof(item));
		n = strlen(item) + 5;
		if (col && col + n > 79) {
			fputc('\n', stderr);
			col = 0;
		}
		if (!col)
			col = fprintf(stderr, "%-15s", pre);
		col += fprintf(stderr, " [ %s ]", item);
		pre = "";
	}
	fputs("\n       tc class ... classid MAJOR:MINOR parq { rate RATE | idt TIME }\n\n",
	      stderr);
	for (o = parq_qopts; o < parq_qopts + PARQ_NUM_QOPTS; o++) {
		char range[48] = "";

		parq_syntax(o, item, sizeof(item));
		parq_format_value(o, o->dflt, dflt, sizeof(dflt));
		if (o->syntax == PARQ_SYN_NUMBER ||
		    o->syntax == PARQ_SYN_PERCENT)
			snprintf(range, sizeof(range), "%s %lld..%llu, ",
				 o->meta, o->min, (unsigned long long)o->max);
		fprintf(stderr, "  %-34s %sdefault %s\n", item, range, dflt);
	}
	fprintf(stderr,
		"\n  RATE     a rate such as 100mbit or 10gbit, at most 1600gbit\n"
		"  DSCP     CS0..CS7 | AF11..AF43 | EF | VA | LE | 0..63\n"
		"  LIST     DSCP[,DSCP]...\n"
		"  TIME     a reserved class's time between packets, such as 100us,\n"
		"           1ns..%llus (units s, ms, us, ns)\n"
		"Classes 1:1 (parallel) and 1:2 (local) are fixed; reserved classes are\n"
		"MAJOR:%x to MAJOR:ffff (minors are hexadecimal).  See tc-parq(8).\n",
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

/*
 * Comma separated DSCP names or numbers for @kw; its word for the empty set,
 * @none, is read before this.
 */
static int parq_parse_dscp_list(const char *kw, const char *arg,
				const char *none, __u64 *mask)
{
	char *copy, *tok, *save = NULL, expected[128];
	const char *p;
	__u64 m = 0;
	int dscp, err = 0;

	snprintf(expected, sizeof(expected),
		 "expected CS0..CS7, AF11..AF43, EF, VA, LE or 0..63, comma separated%s%s",
		 none ? ", or " : "", none ? none : "");
	/* Empty list or empty element ("CS5,,EF", "CS5,"): strtok would
	 * silently skip those.
	 */
	if (!*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,"))
		return parq_bad_value(kw, arg, "%s", expected);

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
				"parq: illegal \"%s\" value \"%s\": %s \"%s\"; %s\n",
				kw, arg, *p ? "unknown DSCP name" :
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
	__u64 val[TCA_PARQ_MAX + 1];
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
	const struct parq_qopt *q;
	struct rtattr *tail;
	__u32 before = n->nlmsg_len;
	__s32 s32v;
	int err = 0;

	tail = addattr_nest(n, PARQ_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (n->nlmsg_len == before)
		return -1;	/* addattr_l() printed the error */

	for (q = parq_qopts; q < parq_qopts + PARQ_NUM_QOPTS; q++) {
		__u64 v = o->val[q->attr];

		if (!(o->seen & (1U << q->attr)))
			continue;
		switch (q->type) {
		case PARQ_U8:
			err |= addattr8(n, PARQ_MAXLEN, q->attr, v);
			break;
		case PARQ_U32:
			err |= addattr32(n, PARQ_MAXLEN, q->attr, v);
			break;
		case PARQ_S32:
			s32v = (__s32)v;
			err |= addattr_l(n, PARQ_MAXLEN, q->attr, &s32v,
					 sizeof(s32v));
			break;
		case PARQ_U64:
			err |= addattr64(n, PARQ_MAXLEN, q->attr, v);
			break;
		}
	}
	if (err)
		return -1;
	addattr_nest_end(n, tail);
	return 0;
}

/* The row whose keyword is @kw, or "no-" and a flag's keyword. */
static const struct parq_qopt *parq_find_qopt(const char *kw)
{
	const struct parq_qopt *o;

	for (o = parq_qopts; o < parq_qopts + PARQ_NUM_QOPTS; o++) {
		if (strcmp(kw, o->kw) == 0)
			return o;
		if (o->syntax == PARQ_SYN_FLAG && strncmp(kw, "no-", 3) == 0 &&
		    strcmp(kw + 3, o->kw) == 0)
			return o;
	}
	return NULL;
}

/* @arg's index in @o's names, or -1. */
static int parq_name_index(const struct parq_qopt *o, const char *arg)
{
	size_t i, n = parq_num_names(o);

	for (i = 0; i < n; i++)
		if (strcmp(arg, o->names[i]) == 0)
			return i;
	return -1;
}

/* @arg as a value of @o (not a flag), in *@v; prints why not. */
static int parq_parse_value(const struct parq_qopt *o, const char *arg,
			    const char *dev, __u64 *v)
{
	char names[64], num[32];
	size_t len = strlen(arg);
	long long ll;
	int i;

	if (o->word && strcmp(arg, o->word) == 0) {
		*v = o->word_value;
		return 0;
	}
	switch (o->syntax) {
	case PARQ_SYN_NUMBER:
		if (parq_parse_ll(arg, o->type == PARQ_S32, o->min,
				  (long long)o->max, &ll))
			return parq_bad_value(o->kw, arg,
					      "expected %lld..%llu%s%s", o->min,
					      (unsigned long long)o->max,
					      o->word ? " or " : "",
					      o->word ? o->word : "");
		*v = ll;
		return 0;
	case PARQ_SYN_PERCENT:
		/* "90" or "90%" */
		if (len && arg[len - 1] == '%')
			len--;
		if (len < sizeof(num)) {
			memcpy(num, arg, len);
			num[len] = '\0';
		}
		if (len >= sizeof(num) ||
		    parq_parse_ll(num, false, o->min, (long long)o->max, &ll))
			return parq_bad_value(o->kw, arg,
					      "expected a percentage, %lld..%llu",
					      o->min,
					      (unsigned long long)o->max);
		*v = ll;
		return 0;
	case PARQ_SYN_RATE:
		return parq_parse_rate(o->kw, arg, dev, o->word,
				       o->word_value, v);
	case PARQ_SYN_NAMES:
	case PARQ_SYN_FLAG:
		i = parq_name_index(o, arg);
		if (i < 0) {
			parq_join_names(o, ", ", " or ", names, sizeof(names));
			return parq_bad_value(o->kw, arg, "expected %s", names);
		}
		*v = o->min + i;
		return 0;
	case PARQ_SYN_DSCP:
		i = parq_parse_dscp(arg);
		if (i < 0 || (__u64)i > o->max)
			return parq_bad_value(o->kw, arg,
					      "expected one DSCP (CS0..CS7, AF11..AF43, EF, VA, LE or 0..%llu)%s%s",
					      (unsigned long long)o->max,
					      o->word ? " or " : "",
					      o->word ? o->word : "");
		*v = i;
		return 0;
	case PARQ_SYN_DSCP_SET:
		return parq_parse_dscp_list(o->kw, arg, o->word, v);
	}
	return -1;
}

static int parq_parse_opt(struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev)
{
	const struct parq_qopt *o;
	struct parq_opts opts;

	(void)qu;
	memset(&opts, 0, sizeof(opts));

	for (; argc > 0; argc--, argv++) {
		const char *kw = *argv;

		if (strcmp(kw, "help") == 0) {
			explain();
			return -1;
		}
		o = parq_find_qopt(kw);
		if (!o) {
			fprintf(stderr, "parq: unknown parameter \"%s\"\n", kw);
			explain();
			return -1;
		}
		if (parq_seen(&opts, o->attr, kw))
			return -1;
		if (o->syntax == PARQ_SYN_FLAG) {
			/* "no-KW", "KW", or "KW NAME" */
			opts.val[o->attr] = o->min + (kw[0] == 'n' &&
						      strcmp(kw, o->kw) ? 2 : 1);
			if (strcmp(kw, o->kw) == 0 && argc > 1 &&
			    strcmp(argv[1], o->names[0]) == 0) {
				opts.val[o->attr] = o->min;
				argc--, argv++;
			}
			continue;
		}
		if (argc < 2) {
			fprintf(stderr, "parq: missing value after \"%s\"\n",
				kw);
			return -1;
		}
		argc--, argv++;
		if (parq_parse_value(o, *argv, dev, &opts.val[o->attr]))
			return -1;
	}

	return parq_put_opts(&opts, n);
}

/* ---- print_qopt ---- */

/*
 * Whether @v is @o's word: its value, or for a number or a rate whose word
 * lies past the maximum (inf, unlimited, auto), anything from there on.
 */
static bool parq_is_word(const struct parq_qopt *o, __u64 v)
{
	if (!o->word)
		return false;
	if (v == o->word_value)
		return true;
	return (o->syntax == PARQ_SYN_NUMBER || o->syntax == PARQ_SYN_RATE) &&
	       o->word_value > o->max && v > o->word_value;
}

/* @v as tc's text would give it back (not a flag's text). */
static void parq_format_value(const struct parq_qopt *o, __u64 v,
			      char *buf, size_t size)
{
	const char *name = NULL;

	if (parq_is_word(o, v)) {
		snprintf(buf, size, "%s", o->word);
		return;
	}
	switch (o->syntax) {
	case PARQ_SYN_NAMES:
	case PARQ_SYN_FLAG:
		name = parq_value_name(o, v);
		break;
	case PARQ_SYN_DSCP:
		name = v <= PARQ_DSCP_MAX ? parq_dscp_to_name(v) : NULL;
		break;
	case PARQ_SYN_DSCP_SET:
		parq_format_dscp(v, buf, size);
		return;
	case PARQ_SYN_RATE:
		snprintf(buf, size, "%llubit", (unsigned long long)v * 8);
		return;
	default:
		break;
	}
	if (name)
		snprintf(buf, size, "%s", name);
	else if (o->type == PARQ_S32)
		snprintf(buf, size, "%d", (int)(__s32)v);
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
}

static void parq_print_dscp_set(const char *key, const char *kw, __u64 mask)
{
	char text[PARQ_DSCP_TEXT], fmt[64];
	const char *name;
	unsigned int d;

	if (is_json_context()) {
		open_json_array(PRINT_JSON, key);
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
	snprintf(fmt, sizeof(fmt), "%s %%s ", kw);
	parq_print_string(PRINT_FP, NULL, fmt, text[0] ? text : "none");
}

/* One parameter, as configured: the statistics give what "auto" gives. */
static void parq_print_qopt(const struct parq_qopt *o, __u64 v)
{
	char key[32], fmt[48], text[PARQ_DSCP_TEXT];
	const char *name;
	bool number;

	parq_json_key(o, key, sizeof(key));
	snprintf(fmt, sizeof(fmt), "%s %%s ", o->kw);
	switch (o->syntax) {
	case PARQ_SYN_DSCP_SET:
		parq_print_dscp_set(key, o->kw, v);
		return;
	case PARQ_SYN_FLAG:
		/* A mode this plugin does not know: nothing, as before. */
		name = parq_value_name(o, v);
		if (!name)
			return;
		parq_print_string(PRINT_JSON, key, NULL, name);
		if (v == (__u64)o->min + 1)
			snprintf(text, sizeof(text), "%s", o->kw);
		else if (v == (__u64)o->min + 2)
			snprintf(text, sizeof(text), "no-%s", o->kw);
		else
			snprintf(text, sizeof(text), "%s %s", o->kw,
				 o->names[0]);
		parq_print_string(PRINT_FP, NULL, "%s ", text);
		return;
	case PARQ_SYN_RATE:
		if (!parq_is_word(o, v)) {
			tc_print_rate(PRINT_ANY, key, fmt, v);
			return;
		}
		break;
	default:
		break;
	}
	parq_format_value(o, v, text, sizeof(text));
	/* Numbers stay numbers in JSON; names and words are strings. */
	number = isdigit((unsigned char)text[0]) || text[0] == '-';
	if (!number) {
		parq_print_string(PRINT_ANY, key, fmt, text);
		return;
	}
	parq_print_string(PRINT_FP, NULL, fmt, text);
	if (o->type == PARQ_S32)
		parq_print_int(PRINT_JSON, key, NULL, (__s32)v);
	else
		parq_print_u64(PRINT_JSON, key, NULL, v);
}

static int parq_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	static const unsigned int size[] = {
		[PARQ_U8] = 1, [PARQ_U32] = 4, [PARQ_S32] = 4, [PARQ_U64] = 8,
	};
	struct rtattr *tb[TCA_PARQ_MAX + 1];
	const struct parq_qopt *o;
	struct rtattr *a;
	__u64 v;

	(void)qu;
	(void)f;
	if (!opt)
		return 0;
	parq_parse_nested(tb, TCA_PARQ_MAX, opt);

	for (o = parq_qopts; o < parq_qopts + PARQ_NUM_QOPTS; o++) {
		a = tb[o->attr];
		if (!a || RTA_PAYLOAD(a) < size[o->type])
			continue;
		switch (o->type) {
		case PARQ_U8:
			v = parq_rta_u8(a);
			break;
		case PARQ_U32:
			v = parq_rta_u32(a);
			break;
		case PARQ_S32:
			v = (__u64)(__s64)parq_rta_s32(a);
			break;
		default:
			v = parq_rta_u64(a);
			break;
		}
		parq_print_qopt(o, v);
	}
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

/* @ppm parts per million as a percentage with one decimal, "12.3%". */
static void parq_print_ppm(const char *key, const char *fmt, __u32 ppm)
{
	char text[16];

	parq_print_u64(PRINT_JSON, key, NULL, ppm);
	if (!is_json_context()) {
		snprintf(text, sizeof(text), "%u.%u%%", ppm / 10000,
			 ppm / 1000 % 10);
		parq_print_string(PRINT_FP, NULL, fmt, text);
	}
}

/*
 * What a reserved class carries against its rate, on a line of its own:
 * the last full window's shares (none before the first has ended), and
 * the time it was held back by its rate in all.
 */
static void parq_print_use(const struct tc_parq_class_xstats *st)
{
	print_nl();
	parq_print_u64(PRINT_ANY, "use_windows", "  use_windows %llu",
		       st->use_windows);
	if (st->use_windows) {
		parq_print_ppm("choked_ppm", " choked %s", st->choked_ppm);
		parq_print_ppm("unused_ppm", " unused %s", st->unused_ppm);
	}
	parq_print_time("throttled", " throttled %s", st->throttled_ns);
}

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
	if (PARQ_HAS(st, unused_ppm, len))
		parq_print_use(&st);
}

static const struct parq_xs_field parq_xs_fields[] = {
	PARQ_XSTATS(PARQ_XS_FIELD)
};

#define PARQ_XS_N (sizeof(parq_xs_fields) / sizeof(parq_xs_fields[0]))

_Static_assert(0 PARQ_XSTATS(PARQ_XS_SIZE) == sizeof(struct tc_parq_xstats),
	       "PARQ_XSTATS must list every field of struct tc_parq_xstats");

/* The sum of histogram @name's sojourn times, 0 if the struct has none. */
static __u64 parq_xs_sum(const char *st, const char *name)
{
	const struct parq_xs_field *x;
	__u64 v = 0;

	x = parq_xs_sum_of(parq_xs_fields, PARQ_XS_N, name);
	if (x)
		memcpy(&v, st + x->offset, sizeof(v));
	return v;
}

/* One field at @p of the struct at @st, as its row says. */
static void parq_print_xs_field(const struct parq_xs_field *x, const char *p,
				const char *st)
{
	const char *pre = x->lead ? "  " : " ";
	__u64 hist[PARQ_SOJOURN_BUCKETS];
	char fmt[80];
	__u64 v64;
	__u32 v32;

	if (x->lead && x->kind != PARQ_XS_SUM && x->kind != PARQ_XS_PAD)
		print_nl();
	switch (x->kind) {
	case PARQ_XS_VERSION:
		memcpy(&v32, p, sizeof(v32));
		parq_print_uint(PRINT_ANY, "xstats_version",
				"  xstats_version %u", v32);
		break;
	case PARQ_XS_U32:
		memcpy(&v32, p, sizeof(v32));
		snprintf(fmt, sizeof(fmt), "%s%s %%u", pre, x->name);
		parq_print_uint(PRINT_ANY, x->name, fmt, v32);
		break;
	case PARQ_XS_U64:
		memcpy(&v64, p, sizeof(v64));
		snprintf(fmt, sizeof(fmt), "%s%s %%llu", pre, x->name);
		parq_print_u64(PRINT_ANY, x->name, fmt, v64);
		break;
	case PARQ_XS_RATE:
		memcpy(&v64, p, sizeof(v64));
		snprintf(fmt, sizeof(fmt), "%s%s %%s", pre, x->name);
		tc_print_rate(PRINT_ANY, x->name, fmt, v64);
		break;
	case PARQ_XS_HIST:
		memcpy(hist, p, sizeof(hist));
		parq_print_sojourn(x->name, pre, parq_xs_sum(st, x->name), hist);
		break;
	case PARQ_XS_SUM:
	case PARQ_XS_PAD:
		break;
	}
}

static int parq_print_xstats(struct qdisc_util *qu, FILE *f,
			     struct rtattr *xstats)
{
	struct tc_parq_xstats st;
	__u32 first;
	size_t len, i;

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
	for (i = 0; i < PARQ_XS_N; i++) {
		const struct parq_xs_field *x = &parq_xs_fields[i];
		const char *p = (const char *)&st + x->offset;

		if (x->offset + x->size > len)
			break;
		if (x->kind == PARQ_XS_HIST &&
		    parq_xs_hist_end(parq_xs_fields, PARQ_XS_N) > len)
			break;
		parq_print_xs_field(x, p, (const char *)&st);
	}
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
