/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * sch_parq's extended statistics, struct tc_parq_xstats of <linux/parq.h>,
 * field by field in the struct's order: the one list that q_parq.so prints
 * (tc -s) and parqctl reads (parqctl qdisc show), each under the field's
 * name.  A new field is appended to the struct and here; both readers
 * fail to build unless the rows' sizes add up to the struct's, padding
 * included, and parqctl also checks that they follow its order.
 *
 *   X(kind, field, lead)
 *
 * kind   PARQ_XS_VERSION  the struct's version, printed as xstats_version;
 *        PARQ_XS_U32, PARQ_XS_U64  a count;
 *        PARQ_XS_RATE     bytes/s, printed as a rate;
 *        PARQ_XS_SUM      ns, the sum that the histogram of the same name
 *                         without _sum needs; not printed by itself;
 *        PARQ_XS_HIST     PARQ_SOJOURN_BUCKETS counts of sojourn times:
 *                         printed as FIELD_pkts, FIELD_sum, FIELD_mean and
 *                         FIELD_hist, all histograms or none;
 *        PARQ_XS_PAD      padding, not printed.
 * lead   1 if tc's text starts a line with the field.
 *
 * A reader prints a field only if the payload holds all of it: an older
 * module sends fewer.  The sums come before the histograms, so a payload
 * that holds the histograms holds their sums.
 *
 * For user space only (tc's plugin, parqctl): the module fills the struct
 * itself.
 */
#ifndef _PARQ_XSTATS_H
#define _PARQ_XSTATS_H

#include <stddef.h>
#include <string.h>
#include <linux/parq.h>

#define PARQ_XSTATS(X)							\
	X(PARQ_XS_VERSION, version, 0)					\
	X(PARQ_XS_U32, flows_active, 0)					\
	X(PARQ_XS_U64, threshold_turns, 0)				\
	X(PARQ_XS_U64, parallel_only, 0)				\
	X(PARQ_XS_U64, local_only, 0)					\
	X(PARQ_XS_U64, throttled, 1)					\
	X(PARQ_XS_U64, wakeups, 0)					\
	X(PARQ_XS_U64, gso_segments, 0)					\
	X(PARQ_XS_U64, unknown_class, 0)				\
	X(PARQ_XS_U64, drop_local_full, 1)				\
	X(PARQ_XS_U64, drop_local_evicted, 0)				\
	X(PARQ_XS_U64, drop_parallel_full, 0)				\
	X(PARQ_XS_U64, drop_flow_limit, 0)				\
	X(PARQ_XS_U64, drop_gso_failed, 0)				\
	X(PARQ_XS_U64, drop_filter, 0)					\
	X(PARQ_XS_U64, resv_dispatches, 1)				\
	X(PARQ_XS_U64, resv_rejects, 0)					\
	X(PARQ_XS_RATE, resv_sum_rate, 0)				\
	X(PARQ_XS_RATE, resv_capacity, 0)				\
	X(PARQ_XS_U32, resv_classes, 0)					\
	X(PARQ_XS_U32, resv_backlogged, 0)				\
	X(PARQ_XS_U32, resv_throttled, 0)				\
	X(PARQ_XS_PAD, pad, 0)						\
	X(PARQ_XS_U32, local_flows, 1)					\
	X(PARQ_XS_U32, local_waiting, 0)				\
	X(PARQ_XS_U64, credit_waits, 0)					\
	X(PARQ_XS_U64, drop_local_nomem, 0)				\
	X(PARQ_XS_SUM, parallel_sojourn_sum, 0)				\
	X(PARQ_XS_SUM, local_sojourn_sum, 0)				\
	X(PARQ_XS_HIST, parallel_sojourn, 1)				\
	X(PARQ_XS_HIST, local_sojourn, 1)				\
	X(PARQ_XS_RATE, effective_linkrate, 1)				\
	X(PARQ_XS_U32, effective_split_gso, 0)				\
	X(PARQ_XS_PAD, pad2, 0)						\
	X(PARQ_XS_U64, control_sent, 1)					\
	X(PARQ_XS_U64, drop_control, 0)

enum parq_xs_kind {
	PARQ_XS_VERSION,
	PARQ_XS_U32,
	PARQ_XS_U64,
	PARQ_XS_RATE,
	PARQ_XS_SUM,
	PARQ_XS_HIST,
	PARQ_XS_PAD,
};

/* A row as data: PARQ_XSTATS(PARQ_XS_FIELD) fills an array of these. */
struct parq_xs_field {
	const char *name;
	unsigned int offset;
	unsigned int size;
	enum parq_xs_kind kind;
	int lead;
};

#define PARQ_XS_MEMBER_SIZE(field) \
	sizeof(((struct tc_parq_xstats *)0)->field)
#define PARQ_XS_FIELD(kind, field, lead)				\
	{ #field, offsetof(struct tc_parq_xstats, field),		\
	  PARQ_XS_MEMBER_SIZE(field), kind, lead },
/* 0 PARQ_XSTATS(PARQ_XS_SIZE) is the rows' total size. */
#define PARQ_XS_SIZE(kind, field, lead) + PARQ_XS_MEMBER_SIZE(field)

/*
 * Where the last histogram of the @n rows @f ends: a reader prints the
 * histograms only if the payload holds them all.
 */
static inline size_t parq_xs_hist_end(const struct parq_xs_field *f,
				      size_t n)
{
	size_t i, end = 0;

	for (i = 0; i < n; i++)
		if (f[i].kind == PARQ_XS_HIST)
			end = f[i].offset + f[i].size;
	return end;
}

/* The PARQ_XS_SUM row of histogram @hist (its name and "_sum"), or NULL. */
static inline const struct parq_xs_field *
parq_xs_sum_of(const struct parq_xs_field *f, size_t n, const char *hist)
{
	size_t i, len = strlen(hist);

	for (i = 0; i < n; i++)
		if (f[i].kind == PARQ_XS_SUM && !strncmp(f[i].name, hist, len) &&
		    !strcmp(f[i].name + len, "_sum"))
			return &f[i];
	return NULL;
}

#endif /* _PARQ_XSTATS_H */
