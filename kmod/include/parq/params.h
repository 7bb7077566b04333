/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * sch_parq's qdisc parameters: the one table.
 *
 * Each row declares a parameter once; the module makes its netlink policy,
 * its field in struct parq_config, its default, its message for a refused
 * value and its dump from the row; q_parq.so its parsing, printing and
 * help; parq-nlfuzz its ranges; the selftests' harness its constants
 * (through parq-params, which prints the table).  A new parameter is a new
 * TCA_PARQ_* attribute in <linux/parq.h>, a row here, its semantics where
 * they act, and its paragraph in tc-parq(8).
 *
 *   P(attr, field, keyword, type, syntax, meta, min, max, dflt, word,
 *     word_value, names, msg)
 *
 * attr        its attribute, TCA_PARQ_*; rows are in attribute order.
 * field       its field in struct parq_config; tc -j prints it under the
 *             keyword with '-' as '_'.
 * keyword     how tc(8) names it.
 * type        PARQ_U8, PARQ_U32, PARQ_S32 or PARQ_U64: how it travels.
 * syntax      how tc(8) spells a value:
 *               PARQ_SYN_NUMBER    decimal, min..max;
 *               PARQ_SYN_PERCENT   decimal, min..max, a '%' allowed after;
 *               PARQ_SYN_RATE      a rate such as 10gbit, min..max bytes/s;
 *               PARQ_SYN_NAMES     names[value - min], min..max;
 *               PARQ_SYN_FLAG      as PARQ_SYN_NAMES for -j; tc's text is
 *                                  "KEYWORD names[0]", "KEYWORD" for
 *                                  names[1] and "no-KEYWORD" for names[2];
 *               PARQ_SYN_DSCP      one DSCP: a name or min..max;
 *               PARQ_SYN_DSCP_SET  DSCPs, comma separated: bit n for DSCP n.
 * meta        what tc-parq(8) calls a value (NULL for names and flags).
 * min, max    the values tc accepts, besides word.
 * dflt        the value an absent attribute gives.
 * word        a word that stands for word_value (outside min..max unless
 *             it names a value in it), or NULL with word_value min; the
 *             module accepts min(min, word_value)..max(max, word_value).
 * names       PARQ_NAMES("a", "b", ...) or PARQ_NO_NAMES.
 * msg         the module's message for a refused value, in tc's words.
 *
 * The message's numbers are spelled from the constants where the
 * preprocessor can; the module ties the others to the constants with
 * static assertions (parq_config.c).
 */
#ifndef _PARQ_PARAMS_H
#define _PARQ_PARAMS_H

#include <linux/parq.h>

#define PARQ_STR_(x) #x
#define PARQ_STR(x) PARQ_STR_(x)

#define PARQ_PARAMS(P)							\
	P(TCA_PARQ_THRESHOLD, threshold, "threshold", PARQ_U32,		\
	  PARQ_SYN_NUMBER, "N",						\
	  1, PARQ_THRESHOLD_MAX,					\
	  PARQ_THRESHOLD_DEFAULT, "inf", PARQ_THRESHOLD_INF,		\
	  PARQ_NO_NAMES,						\
	  "parq: threshold must be 1.."					\
	  PARQ_STR(PARQ_THRESHOLD_MAX) " or inf")			\
	P(TCA_PARQ_UNIT, unit, "unit", PARQ_U8,				\
	  PARQ_SYN_NAMES, NULL,						\
	  PARQ_UNIT_BYTES, PARQ_UNIT_MAX,				\
	  PARQ_UNIT_BYTES, NULL, PARQ_UNIT_BYTES,			\
	  PARQ_NAMES("bytes", "packets"),				\
	  "parq: unit must be bytes or packets")			\
	P(TCA_PARQ_RATE, rate, "rate", PARQ_U64,			\
	  PARQ_SYN_RATE, "RATE",					\
	  1, PARQ_RATE_MAX,						\
	  PARQ_RATE_UNLIMITED, "unlimited", PARQ_RATE_UNLIMITED,	\
	  PARQ_NO_NAMES,						\
	  "parq: rate must be 1 byte/s to 1.6Tbit, or unlimited")	\
	P(TCA_PARQ_OVERHEAD, overhead, "overhead", PARQ_S32,		\
	  PARQ_SYN_NUMBER, "BYTES",					\
	  PARQ_OVERHEAD_MIN, PARQ_OVERHEAD_MAX,				\
	  0, NULL, PARQ_OVERHEAD_MIN,					\
	  PARQ_NO_NAMES,						\
	  "parq: overhead must be -64.."				\
	  PARQ_STR(PARQ_OVERHEAD_MAX) " bytes")				\
	P(TCA_PARQ_SPLIT_GSO, split_gso, "split-gso", PARQ_U8,		\
	  PARQ_SYN_FLAG, NULL,						\
	  PARQ_SPLIT_GSO_AUTO, PARQ_SPLIT_GSO_MAX,			\
	  PARQ_SPLIT_GSO_AUTO, NULL, PARQ_SPLIT_GSO_AUTO,		\
	  PARQ_NAMES("auto", "on", "off"),				\
	  "parq: invalid split-gso mode")				\
	P(TCA_PARQ_LIMIT, limit, "limit", PARQ_U32,			\
	  PARQ_SYN_NUMBER, "PACKETS",					\
	  1, PARQ_LIMIT_MAX,						\
	  PARQ_LIMIT_DEFAULT, NULL, 1,					\
	  PARQ_NO_NAMES,						\
	  "parq: limit must be 1.."					\
	  PARQ_STR(PARQ_LIMIT_MAX) " packets")				\
	P(TCA_PARQ_FLOW_LIMIT, flow_limit, "flow-limit", PARQ_U32,	\
	  PARQ_SYN_NUMBER, "PACKETS",					\
	  1, PARQ_LIMIT_MAX,						\
	  PARQ_FLOW_LIMIT_DEFAULT, NULL, 1,				\
	  PARQ_NO_NAMES,						\
	  "parq: flow-limit must be 1.."				\
	  PARQ_STR(PARQ_LIMIT_MAX) " packets")				\
	P(TCA_PARQ_DSCP_PARALLEL, dscp_parallel, "dscp-parallel", PARQ_U64, \
	  PARQ_SYN_DSCP_SET, "LIST",					\
	  0, PARQ_DSCP_SET_ALL,						\
	  PARQ_DSCP_DEFAULT, "none", 0,					\
	  PARQ_NO_NAMES,						\
	  "parq: dscp-parallel must be a 64-bit mask")			\
	P(TCA_PARQ_DEFAULT_CLASS, default_class, "default", PARQ_U8,	\
	  PARQ_SYN_NAMES, NULL,						\
	  PARQ_CLASS_PARALLEL, PARQ_CLASS_LOCAL,			\
	  PARQ_CLASS_LOCAL, NULL, PARQ_CLASS_PARALLEL,			\
	  PARQ_NAMES("parallel", "local"),				\
	  "parq: default must be parallel (1) or local (2)")		\
	P(TCA_PARQ_LINKRATE, linkrate, "linkrate", PARQ_U64,		\
	  PARQ_SYN_RATE, "RATE",					\
	  1, PARQ_RATE_MAX,						\
	  PARQ_LINKRATE_AUTO, "auto", PARQ_LINKRATE_AUTO,		\
	  PARQ_NO_NAMES,						\
	  "parq: linkrate must be 1 byte/s to 1.6Tbit, or auto")	\
	P(TCA_PARQ_RESERVABLE, reservable, "reservable", PARQ_U8,	\
	  PARQ_SYN_PERCENT, "PERCENT",					\
	  1, PARQ_RESERVABLE_MAX,					\
	  PARQ_RESERVABLE_DEFAULT, NULL, 1,				\
	  PARQ_NO_NAMES,						\
	  "parq: reservable must be 1.."				\
	  PARQ_STR(PARQ_RESERVABLE_MAX) " percent")			\
	P(TCA_PARQ_DSCP_MARK, dscp_mark, "dscp-mark", PARQ_U8,		\
	  PARQ_SYN_DSCP, "DSCP",					\
	  0, PARQ_DSCP_MAX,						\
	  PARQ_DSCP_MARK_OFF, "off", PARQ_DSCP_MARK_OFF,		\
	  PARQ_NO_NAMES,						\
	  "parq: dscp-mark must be a DSCP 0.."				\
	  PARQ_STR(PARQ_DSCP_MAX) " or off")				\
	P(TCA_PARQ_BURST, burst, "burst", PARQ_U32,			\
	  PARQ_SYN_NUMBER, "BYTES",					\
	  0, PARQ_BURST_MAX,						\
	  PARQ_BURST_DEFAULT, NULL, 0,					\
	  PARQ_NO_NAMES,						\
	  "parq: burst must be 0..16777216 bytes")

/*
 * The DSCPs' names that tc-parq(8) reads and prints (RFC 2474, 2597, 3246,
 * 5865, 8622): N(name, dscp).  parqd spells DSCPs as nft does.
 */
#define PARQ_DSCP_NAMES(N)						\
	N("CS0", 0) N("LE", 1)						\
	N("CS1", 8) N("AF11", 10) N("AF12", 12) N("AF13", 14)		\
	N("CS2", 16) N("AF21", 18) N("AF22", 20) N("AF23", 22)		\
	N("CS3", 24) N("AF31", 26) N("AF32", 28) N("AF33", 30)		\
	N("CS4", 32) N("AF41", 34) N("AF42", 36) N("AF43", 38)		\
	N("CS5", 40) N("VA", 44) N("EF", 46)				\
	N("CS6", 48) N("CS7", 56)

/* Every DSCP, for PARQ_SYN_DSCP_SET's range. */
#define PARQ_DSCP_SET_ALL	(~0ULL)

/* The values the module accepts. */
#define PARQ_PARAM_LO(min, word_value) \
	((min) < (word_value) ? (min) : (word_value))
#define PARQ_PARAM_HI(max, word_value) \
	((max) > (word_value) ? (max) : (word_value))

enum parq_param_type {
	PARQ_U8,
	PARQ_U32,
	PARQ_S32,
	PARQ_U64,
};

enum parq_param_syntax {
	PARQ_SYN_NUMBER,
	PARQ_SYN_PERCENT,
	PARQ_SYN_RATE,
	PARQ_SYN_NAMES,
	PARQ_SYN_FLAG,
	PARQ_SYN_DSCP,
	PARQ_SYN_DSCP_SET,
};

#endif /* _PARQ_PARAMS_H */
