/* SPDX-License-Identifier: GPL-2.0 */
/*
 * parq scheduling policy: the decisions of sch_parq, free of kernel types.
 * The qdisc (parq_qdisc.c) keeps the queues and asks these functions what
 * to do; the unit tests and the benchmarks ask the very same functions.
 *
 * The rules, in the order they apply at each dequeue:
 *
 *  0. The control queue (priority TC_PRIO_CONTROL: the credit messages of
 *     the daemons, IGMP and MLD, routing daemons that ask for it) goes first,
 *     before the shaper's gate: a GRANT or RELEASE that waited behind
 *     the host's own backlog would throttle senders later the more hosts
 *     share the receiver.  Its bytes are charged to the shaper, so the
 *     rate holds on average; what it sends early, the others wait for.
 *     It passes a closed gate only while the gate, with what is left of
 *     the burst allowance, opens within PARQ_CONTROL_AHEAD_NS: control
 *     beyond the rate waits for the gate too (still ahead of the
 *     classes), so when it stops the classes wait for no more than that
 *     (and the allowance, once per idle spell).  A parallel GSO packet,
 *     which leaves whole, can put the gate one 64 KiB packet's time
 *     ahead: control then waits for it.
 *  1. The shaper's gate.  While the next departure time lies ahead nothing
 *     goes, reserved traffic included; the watchdog is set to it.  While
 *     no local packet may go (none queued, or all waiting for credit) the
 *     gate opens the burst allowance's time earlier: a parallel message
 *     leaves at once after an idle spell, as through htb.  Local traffic,
 *     once queued, waits for the schedule itself (once, for a burst being
 *     paid), and the allowance is gone when it leaves until the qdisc is
 *     idle again: local is paced at the rate and keeps no standing queue
 *     downstream, and the parallel classes cannot keep it from its turns.
 *  2. A reserved class whose next dispatch time (NDT) has come goes first
 *     (the one with the smallest (NDT, classid); the qdisc's rb-tree keeps
 *     it leftmost).
 *  3. THRESHOLD_send between parallel and local: parallel first, but after
 *     every @threshold units of parallel sent while local waited, one unit
 *     of local goes.
 *  4. A local class whose destinations all wait for receiver credit is
 *     treated as idle: parallel goes, and that costs it no turn (its
 *     credit is not charged, since local is not waiting to send).
 *  5. When nothing may go, the watchdog is set to the earliest of the next
 *     reserved NDT and the end of the first credit wait.
 *
 * And at enqueue: the control queue takes up to PARQ_CONTROL_LIMIT
 * packets, outside the qdisc's limit (so no class can crowd it out), and
 * drops beyond.  When the qdisc is full: a local packet is dropped; any
 * other packet takes the place of a queued local one (the next local
 * destination to be served, else one that waits), or is dropped when no
 * local packet is queued.  A flow, reserved class or local destination at
 * flow-limit drops its new packet whatever the qdisc holds.  Lowering the
 * limit evicts local first, then parallel, then the reserved class due
 * first.
 */
#ifndef _PARQ_POLICY_H
#define _PARQ_POLICY_H

#include "parq_core.h"

#if !defined(__KERNEL__) && defined(__cplusplus)
extern "C" {
#endif

/*
 * How far ahead the shaper's next departure may lie for a control packet
 * to go at once: a class's packet at the slowest rate a GRANT should not
 * wait behind (1 500 bytes at 6 Mbit/s), and what the classes wait at most,
 * once control traffic beyond the rate stops.
 */
#define PARQ_CONTROL_AHEAD_NS	2000000ULL	/* 2 ms */

/* The scheduler's own state: the threshold rule, the shaper, counters. */
struct parq_sched {
	struct parq_thresh	thresh;
	struct parq_shaper	shaper;
	bool			throttled;	/* last dequeue sent nothing */
	struct tc_parq_xstats	xs;		/* the qdisc's counters */
};

/* What the qdisc holds, as a dequeue at @now sees it. */
struct parq_view {
	/* NDT of the first backlogged reserved class, U64_MAX when none */
	u64	resv_ndt;
	u64	lwait_next;	/* ns: end of the first credit wait, or ~0 */
	bool	parallel;	/* parallel packets queued */
	/* a local destination may send (queued, not waiting for credit) */
	bool	local;
	bool	control;	/* control packets queued */
};

enum parq_act {
	PARQ_ACT_NONE,		/* nothing queued at all */
	PARQ_ACT_WAIT,		/* nothing may go before @until */
	PARQ_ACT_RESV,		/* the first reserved class */
	PARQ_ACT_PARALLEL,
	PARQ_ACT_LOCAL,
	PARQ_ACT_CONTROL,	/* the head of the control queue */
};

struct parq_decision {
	enum parq_act	act;
	/* PARALLEL or LOCAL: the other class was backlogged (may send) */
	bool		other;
	u64		until;	/* WAIT: ns at which to look again */
};

#ifndef __KERNEL__
/* A scheduler with a fresh threshold turn and the shaper off (the unit
 * tests' and the simulation's: the module's is zeroed with the qdisc).
 */
void parq_sched_init(struct parq_sched *s, u32 threshold, u8 unit);
#endif
/* The qdisc was reset: a fresh threshold turn, no departure pending; the
 * configuration and the counters stay.
 */
void parq_sched_reset(struct parq_sched *s);

/*
 * The decision at @now.  PARQ_ACT_LOCAL means that local may go: the qdisc
 * then picks the destination, and if each one turns out to be over its
 * credit (they are moved aside as they are found so), it asks again with
 * @v->local false and the new @v->lwait_next.
 */
static inline struct parq_decision
parq_sched_decide(const struct parq_sched *s, const struct parq_view *v,
		  u64 now)
{
	struct parq_decision d = { .act = PARQ_ACT_WAIT, .other = false,
				   .until = 0 };
	bool shaped = parq_shaper_on(&s->shaper);
	/* The gate with what is left of the allowance (control's, and the
	 * classes' while no local packet may go), and the classes' own.
	 */
	u64 early = shaped ? parq_shaper_gate(&s->shaper, true) : 0;
	u64 gate = shaped && v->local ? s->shaper.t_next : early;
	enum parq_pick pick;

	if (v->control && early <= now + PARQ_CONTROL_AHEAD_NS) {
		d.act = PARQ_ACT_CONTROL;
		return d;
	}
	if (now < gate) {
		d.until = gate;
		/* Queued control goes as soon as its own gate is within reach. */
		if (v->control && early - PARQ_CONTROL_AHEAD_NS < d.until)
			d.until = early - PARQ_CONTROL_AHEAD_NS;
		return d;
	}
	if (v->resv_ndt <= now) {
		d.act = PARQ_ACT_RESV;
		return d;
	}
	pick = parq_thresh_pick(&s->thresh, v->parallel, v->local);
	if (pick == PARQ_PICK_PARALLEL) {
		d.act = PARQ_ACT_PARALLEL;
		d.other = v->local;
	} else if (pick == PARQ_PICK_LOCAL) {
		d.act = PARQ_ACT_LOCAL;
		d.other = v->parallel;
	} else {
		/* Reserved packets not due, local ones waiting for credit. */
		d.until = v->resv_ndt < v->lwait_next ? v->resv_ndt :
							v->lwait_next;
		if (d.until == (u64)~0ULL)
			d.act = PARQ_ACT_NONE;
	}
	return d;
}

/* The decision @d was WAIT: the watchdog goes off at d->until. */
void parq_sched_wait(struct parq_sched *s);

/* A packet of @len bytes (@segs segments: a GSO packet left whole; 1 for
 * any other) left at @now as decided by @d: charge the threshold rule and
 * the shaper and count it.  A control packet, which may pass a closed
 * gate, pushes the next departure back by its length: the classes pay for
 * it, and the threshold rule does not see it.
 */
static inline void parq_sched_sent(struct parq_sched *s,
				   const struct parq_decision *d, u64 now,
				   u32 len, u32 segs)
{
	switch (d->act) {
	case PARQ_ACT_CONTROL:
		/* Neither a class's wake-up nor a turn of the threshold rule. */
		s->xs.control_sent++;
		if (parq_shaper_on(&s->shaper))
			parq_shaper_charge_segs(&s->shaper, now, len, segs);
		return;
	case PARQ_ACT_RESV:
		s->xs.resv_dispatches++;
		break;
	case PARQ_ACT_PARALLEL:
		if (!d->other)
			s->xs.parallel_only++;
		parq_thresh_charge(&s->thresh, PARQ_PICK_PARALLEL, len,
				   d->other);
		break;
	case PARQ_ACT_LOCAL:
		if (d->other)
			s->xs.threshold_turns++;
		else
			s->xs.local_only++;
		parq_thresh_charge(&s->thresh, PARQ_PICK_LOCAL, len, d->other);
		parq_shaper_spend(&s->shaper);
		break;
	default:
		return;		/* nothing was sent */
	}
	if (s->throttled) {
		s->throttled = false;
		s->xs.wakeups++;
	}
	if (parq_shaper_on(&s->shaper))
		parq_shaper_charge_segs(&s->shaper, now, len, segs);
}

/*
 * Whether a GSO packet is split into its segments at enqueue, as @split
 * (enum parq_split_now) says for the class it goes to.  A reserved class's
 * always is: its pace counts packets.  Under split-gso auto with the
 * shaper on, a local one is, so that a parallel packet waits behind at
 * most one frame of local data; a parallel one is not: it would wait only
 * behind parallel data, and whole it costs one segmentation and one pass
 * through the stack below instead of one per frame, and leaves at once
 * when the gate opens, as through htb.
 */
static inline bool parq_split_gso_for(enum parq_split_now split,
				      bool parallel, bool reserved)
{
	if (reserved || split == PARQ_SPLIT_ALL)
		return true;
	return split == PARQ_SPLIT_LOCAL && !parallel;
}

/* The sojourn bucket of @ns (see PARQ_SOJOURN_BUCKETS). */
static inline unsigned int parq_sojourn_bucket(u64 ns)
{
	unsigned int b = fls64(ns >> PARQ_SOJOURN_SHIFT);

	if (b)
		b--;
	return b < PARQ_SOJOURN_BUCKETS ? b : PARQ_SOJOURN_BUCKETS - 1;
}

/* Whether the packet that @d sends counts in the sojourn times: parallel
 * and local ones do; reserved classes have their own lateness, so their
 * dequeues skip reading the packet's enqueue time.
 */
static inline bool parq_sojourn_counted(const struct parq_decision *d)
{
	return d->act == PARQ_ACT_PARALLEL || d->act == PARQ_ACT_LOCAL;
}

/* A packet that @d sent had waited @ns in the qdisc: count it for its
 * class, when parq_sojourn_counted(@d).
 */
static inline void parq_sched_sojourn(struct parq_sched *s,
				      const struct parq_decision *d, u64 ns)
{
	unsigned int b;

	if (!parq_sojourn_counted(d))
		return;
	b = parq_sojourn_bucket(ns);
	if (d->act == PARQ_ACT_PARALLEL) {
		s->xs.parallel_sojourn_sum += ns;
		s->xs.parallel_sojourn[b]++;
	} else {
		s->xs.local_sojourn_sum += ns;
		s->xs.local_sojourn[b]++;
	}
}

enum parq_admit {
	PARQ_ADMIT_QUEUE,		/* room: queue it */
	PARQ_ADMIT_EVICT,		/* full: drop a local packet, then queue */
	PARQ_ADMIT_DROP_FLOW_LIMIT,	/* its queue is at flow-limit */
	PARQ_ADMIT_DROP_LOCAL_FULL,	/* full, and it is local */
	PARQ_ADMIT_DROP_FULL,		/* full, and no local packet queued */
	PARQ_ADMIT_DROP_CONTROL,	/* control queue at PARQ_CONTROL_LIMIT */
};

/* What the qdisc holds when a packet arrives. */
struct parq_fill {
	u32	qlen;		/* packets queued in the qdisc */
	u32	limit;
	u32	flow_qlen;	/* in the packet's own queue */
	u32	flow_limit;
	u32	local_qlen;	/* local packets queued, waiting ones too */
	bool	local;		/* the packet is local */
	/*
	 * the packet is for the control queue: @flow_qlen is that queue's,
	 * and neither @qlen, @limit nor @flow_limit apply
	 */
	bool	control;
};

/* May the packet in @f come in?  Drops and evictions are counted. */
enum parq_admit parq_sched_admit(struct parq_sched *s,
				 const struct parq_fill *f);

/*
 * The class a lowered limit evicts from next: LOCAL, PARALLEL, or RESV
 * (the reserved class due first) when neither has packets.  Counted as a
 * drop of a full qdisc.
 */
enum parq_act parq_sched_evict(struct parq_sched *s, u32 local_qlen,
			       u32 parallel_qlen);

#if !defined(__KERNEL__) && defined(__cplusplus)
}
#endif

#endif /* _PARQ_POLICY_H */
