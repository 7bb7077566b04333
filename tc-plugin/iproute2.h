/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal declarations of the iproute2 6.1 tc plugin ABI, for q_parq.so.
 *
 * tc loads q_<kind>.so with dlopen() and looks up "<kind>_qdisc_util"; the
 * plugin calls helpers that the tc binary exports dynamically.  Debian ships
 * no iproute2 development headers, so this file mirrors exactly the parts of
 * iproute2 v6.1.0 (tc/tc_util.h, include/json_print.h, include/color.h,
 * include/libnetlink.h, include/utils.h) that the plugin uses: the layout of
 * struct qdisc_util, enum output_type, enum color_attr and the prototypes of
 * the exported functions.  Everything that iproute2 implements as a static
 * inline wrapper or a macro (print_uint(), rta_getattr_u32(),
 * parse_rtattr_nested(), ...) is re-implemented here with a parq_ prefix, so
 * that the plugin only ever references symbols that /usr/sbin/tc exports
 * (check with nm -D /usr/sbin/tc).
 *
 * Do not change a layout or a prototype here unless iproute2 changes it.
 */
#ifndef _PARQ_IPROUTE2_H
#define _PARQ_IPROUTE2_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

/* tc/tc_util.h: one per qdisc kind, found by dlsym("<kind>_qdisc_util"). */
struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(struct qdisc_util *qu, int argc,
			  char **argv, struct nlmsghdr *n, const char *dev);
	int (*print_qopt)(struct qdisc_util *qu,
			  FILE *f, struct rtattr *opt);
	int (*print_xstats)(struct qdisc_util *qu,
			    FILE *f, struct rtattr *xstats);

	int (*parse_copt)(struct qdisc_util *qu, int argc,
			  char **argv, struct nlmsghdr *n, const char *dev);
	int (*print_copt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*has_block)(struct qdisc_util *qu, struct rtattr *opt,
			 __u32 block_idx, bool *p_has);
};

/* include/json_print.h */
enum output_type {
	PRINT_FP = 1,
	PRINT_JSON = 2,
	PRINT_ANY = 4,
};

/* include/color.h */
enum color_attr {
	COLOR_IFNAME,
	COLOR_MAC,
	COLOR_INET,
	COLOR_INET6,
	COLOR_OPERSTATE_UP,
	COLOR_OPERSTATE_DOWN,
	COLOR_NONE
};

/*
 * lib/json_print.c.  In JSON context these emit "key": value (or a bare
 * value when key is NULL, e.g. inside an array); otherwise they printf()
 * fmt with the value to stdout.  All return 0 in JSON context.
 */
bool is_json_context(void);
void open_json_object(const char *str);
void close_json_object(void);
void open_json_array(enum output_type type, const char *delim);
void close_json_array(enum output_type type, const char *delim);
void print_nl(void);

int print_color_int(enum output_type t, enum color_attr color,
		    const char *key, const char *fmt, int value);
int print_color_uint(enum output_type t, enum color_attr color,
		     const char *key, const char *fmt, unsigned int value);
int print_color_lluint(enum output_type t, enum color_attr color,
		       const char *key, const char *fmt,
		       unsigned long long value);
int print_color_bool(enum output_type t, enum color_attr color,
		     const char *key, const char *fmt, bool value);
int print_color_string(enum output_type t, enum color_attr color,
		       const char *key, const char *fmt, const char *value);

/* tc/tc_util.c: human units (honouring tc -iec) in text, bytes/s in JSON. */
void tc_print_rate(enum output_type t, const char *key, const char *fmt,
		   unsigned long long rate);

/* lib/utils_math.c, tc/tc_util.c: "100mbit" etc. to bytes per second. */
int get_rate64(__u64 *rate, const char *str);
int get_percent_rate64(__u64 *rate, const char *str, const char *dev);

/* lib/libnetlink.c */
int addattr8(struct nlmsghdr *n, int maxlen, int type, __u8 data);
int addattr32(struct nlmsghdr *n, int maxlen, int type, __u32 data);
int addattr64(struct nlmsghdr *n, int maxlen, int type, __u64 data);
int addattr_l(struct nlmsghdr *n, int maxlen, int type,
	      const void *data, int alen);
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta,
		       int len, unsigned short flags);

/* ---- Local equivalents of iproute2's inline helpers and macros. ---- */

static inline int parq_print_int(enum output_type t, const char *key,
				 const char *fmt, int value)
{
	return print_color_int(t, COLOR_NONE, key, fmt, value);
}

static inline int parq_print_uint(enum output_type t, const char *key,
				  const char *fmt, unsigned int value)
{
	return print_color_uint(t, COLOR_NONE, key, fmt, value);
}

static inline int parq_print_u64(enum output_type t, const char *key,
				 const char *fmt, __u64 value)
{
	return print_color_lluint(t, COLOR_NONE, key, fmt,
				  (unsigned long long)value);
}

static inline int parq_print_bool(enum output_type t, const char *key,
				  const char *fmt, bool value)
{
	return print_color_bool(t, COLOR_NONE, key, fmt, value);
}

static inline int parq_print_string(enum output_type t, const char *key,
				    const char *fmt, const char *value)
{
	return print_color_string(t, COLOR_NONE, key, fmt, value);
}

/* Nested attributes: the kernel sets NLA_F_NESTED, parse_rtattr_flags()
 * masks it off the type (as iproute2's parse_rtattr_nested() does).
 */
static inline int parq_parse_nested(struct rtattr *tb[], int max,
				    struct rtattr *rta)
{
	return parse_rtattr_flags(tb, max, RTA_DATA(rta), RTA_PAYLOAD(rta),
				  NLA_F_NESTED);
}

/* Attribute readers: memcpy, since netlink only aligns to 4 bytes. */
static inline __u8 parq_rta_u8(const struct rtattr *rta)
{
	return *(const __u8 *)RTA_DATA(rta);
}

static inline __u32 parq_rta_u32(const struct rtattr *rta)
{
	__u32 v;

	memcpy(&v, RTA_DATA(rta), sizeof(v));
	return v;
}

static inline __s32 parq_rta_s32(const struct rtattr *rta)
{
	__s32 v;

	memcpy(&v, RTA_DATA(rta), sizeof(v));
	return v;
}

static inline __u64 parq_rta_u64(const struct rtattr *rta)
{
	__u64 v;

	memcpy(&v, RTA_DATA(rta), sizeof(v));
	return v;
}

#endif /* _PARQ_IPROUTE2_H */
