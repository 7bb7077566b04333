// SPDX-License-Identifier: GPL-2.0
/*
 * parq scheduling policy; see parq_policy.h.  Compiled into sch_parq.ko
 * and, unchanged, into the user-space unit tests and benchmarks.
 */
#include "parq_policy.h"

#ifndef __KERNEL__
void parq_sched_init(struct parq_sched *s, u32 threshold, u8 unit)
{
	*s = (struct parq_sched){};
	parq_thresh_init(&s->thresh, threshold, unit);
}
#endif

void parq_sched_reset(struct parq_sched *s)
{
	parq_thresh_init(&s->thresh, s->thresh.threshold, s->thresh.unit);
	s->shaper.t_next = 0;
	s->shaper.rem = 0;
	s->throttled = false;
}

void parq_sched_wait(struct parq_sched *s)
{
	if (!s->throttled) {
		s->throttled = true;
		s->xs.throttled++;
	}
}

enum parq_admit parq_sched_admit(struct parq_sched *s,
				 const struct parq_fill *f)
{
	/* Bounded on its own: it is small, and served before the limit bites. */
	if (f->control) {
		if (f->flow_qlen < PARQ_CONTROL_LIMIT)
			return PARQ_ADMIT_QUEUE;
		s->xs.drop_control++;
		return PARQ_ADMIT_DROP_CONTROL;
	}
	/* One flow, reserved class or local destination cannot fill it all. */
	if (f->flow_qlen >= f->flow_limit) {
		s->xs.drop_flow_limit++;
		return PARQ_ADMIT_DROP_FLOW_LIMIT;
	}
	if (f->qlen < f->limit)
		return PARQ_ADMIT_QUEUE;
	if (f->local) {
		s->xs.drop_local_full++;
		return PARQ_ADMIT_DROP_LOCAL_FULL;
	}
	if (!f->local_qlen) {
		s->xs.drop_parallel_full++;
		return PARQ_ADMIT_DROP_FULL;
	}
	s->xs.drop_local_evicted++;
	return PARQ_ADMIT_EVICT;
}

enum parq_act parq_sched_evict(struct parq_sched *s, u32 local_qlen,
			       u32 parallel_qlen)
{
	if (local_qlen) {
		s->xs.drop_local_full++;
		return PARQ_ACT_LOCAL;
	}
	s->xs.drop_parallel_full++;
	return parallel_qlen ? PARQ_ACT_PARALLEL : PARQ_ACT_RESV;
}
