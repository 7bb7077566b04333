/* SPDX-License-Identifier: GPL-2.0 */
/*
 * parq scheduling core: the arithmetic of sch_parq, free of kernel types so
 * that the very same object code is unit-tested in user space.
 *
 *  - parq_thresh: THRESHOLD_send.  While both classes are backlogged, the
 *    parallel class may send @threshold units (bytes or packets) for every
 *    unit the local class sends.  @credit is what parallel may still send
 *    before local's turn; a local send refills it by threshold * len, so the
 *    byte (or packet) ratio under saturation is exactly threshold : 1
 *    whatever the packet sizes, with an error bounded by one packet.
 *  - parq_rr: deficit round robin by bytes over the backlogged parallel
 *    flows, kept in one singly linked ring of active flows.
 *  - parq_shaper: earliest departure time shaper on a ns clock, with the
 *    division remainder carried so that departure times never drift.
 */
#ifndef _PARQ_CORE_H
#define _PARQ_CORE_H

#include "../include/uapi/linux/parq.h"

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/math64.h>
#include <linux/time64.h>
#include <linux/limits.h>
#include <linux/bitops.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* The kernel's types, from the compiler's own (as <stdint.h> makes them). */
typedef __UINT8_TYPE__ u8;
typedef __UINT32_TYPE__ u32;
typedef __INT32_TYPE__ s32;
typedef __UINT64_TYPE__ u64;
typedef __INT64_TYPE__ s64;
#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's: the position of the most significant set bit, 1-based. */
static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}
#endif

/*
 * How far behind its schedule a backlogged shaper or reserved flow may fall
 * and still catch up (timer slack, softirq delay, a busy or emulated CPU).
 * Beyond it the debt is capped at this much: after a stall (a stopped
 * device) a flow sends at most PARQ_CATCHUP_NS worth of traffic early.  An
 * idle queue never catches up at all: it restarts at the current time when
 * its next packet arrives (parq_shaper_wake, parq_resv_wake).
 */
#define PARQ_CATCHUP_NS		100000000ULL	/* 100 ms */

enum parq_pick {
	PARQ_PICK_NONE,
	PARQ_PICK_PARALLEL,
	PARQ_PICK_LOCAL,
};

struct parq_thresh {
	s64	credit;		/* parallel units left before local's turn */
	u32	threshold;	/* N; PARQ_THRESHOLD_INF means strict */
	u8	unit;		/* enum parq_unit */
};

void parq_thresh_init(struct parq_thresh *t, u32 threshold, u8 unit);
/* Account a sent packet of @len bytes of class @sent.  @other_backlogged:
 * the other class had packets queued when this one was picked.
 */
void parq_thresh_charge(struct parq_thresh *t, enum parq_pick sent, u32 len,
			bool other_backlogged);

static inline bool parq_thresh_is_strict(const struct parq_thresh *t)
{
	return t->threshold >= PARQ_THRESHOLD_INF;
}

/* The class that sends next, given which of the two have packets. */
static inline enum parq_pick parq_thresh_pick(const struct parq_thresh *t,
					      bool parallel_backlogged,
					      bool local_backlogged)
{
	if (!local_backlogged)
		return parallel_backlogged ? PARQ_PICK_PARALLEL : PARQ_PICK_NONE;
	if (!parallel_backlogged)
		return PARQ_PICK_LOCAL;
	if (parq_thresh_is_strict(t) || t->credit > 0)
		return PARQ_PICK_PARALLEL;
	return PARQ_PICK_LOCAL;
}

struct parq_rr_node {
	struct parq_rr_node	*next;
	s32			deficit;
};

struct parq_rr {
	struct parq_rr_node	*head;
	struct parq_rr_node	*tail;
	u32			quantum;
	u32			active;	/* nodes in the ring */
};

/*
 * The smallest quantum: a round adds at least this much to a node's
 * deficit, so that selecting a node that owes a 64 KiB GSO packet takes a
 * bounded number of passes (a device of MTU 0 and no link header would
 * give a quantum of 0, and a loop without end).
 */
#define PARQ_QUANTUM_MIN	256

/* An empty ring whose rounds add @quantum (at least PARQ_QUANTUM_MIN). */
void parq_rr_init(struct parq_rr *rr, u32 quantum);
/* The device's MTU changed: the next rounds add @quantum (clamped). */
void parq_rr_set_quantum(struct parq_rr *rr, u32 quantum);
/* @n was idle and now has a packet: it joins at the tail with a quantum. */
void parq_rr_add(struct parq_rr *rr, struct parq_rr_node *n);
/* The node that sends next (rotating past nodes out of deficit), or NULL. */
struct parq_rr_node *parq_rr_select(struct parq_rr *rr);
/* The selected node sent @len bytes; @emptied: it has nothing left. */
void parq_rr_charge(struct parq_rr *rr, u32 len, bool emptied);
/* Remove @n wherever it stands (flow purged).  O(active). */
void parq_rr_remove(struct parq_rr *rr, struct parq_rr_node *n);

struct parq_shaper {
	u64	rate;		/* bytes per second; 0: shaper off */
	u64	t_next;		/* ns: earliest departure of the next packet */
	u64	rem;		/* remainder of the last delay division */
	u64	horizon;	/* ns of lateness still caught up */
	u64	burst_ns;	/* the burst allowance's time at the rate */
	u64	allow_ns;	/* of it, what is left until the next idle spell */
	s32	overhead;	/* bytes added to every packet */
};

/*
 * (Re)configure; a new @rate starts its schedule at @now.  @burst bytes
 * (as the shaper counts them, overhead included) may leave ahead of the
 * schedule when parq_shaper_gate() is asked for the burst gate.
 */
void parq_shaper_set(struct parq_shaper *s, u64 rate, s32 overhead,
		     u32 burst, u64 horizon_ns, u64 now);
#ifndef __KERNEL__
/* Transmission time in ns of @len bytes, before remainder carry (for the
 * unit tests; the module does not need it).
 */
u64 parq_shaper_delay(const struct parq_shaper *s, u32 len);
#endif
/*
 * A packet of @len bytes, @segs segments (a GSO packet that leaves whole;
 * 1 for any other), leaves at @now: advance the next departure by its
 * bytes and each segment's overhead.
 */
void parq_shaper_charge_segs(struct parq_shaper *s, u64 now, u32 len,
			     u32 segs);

static inline void parq_shaper_charge(struct parq_shaper *s, u64 now, u32 len)
{
	parq_shaper_charge_segs(s, now, len, 1);
}

/*
 * The qdisc had nothing queued and now has: it cannot catch up, and the
 * burst allowance is whole again.
 */
void parq_shaper_wake(struct parq_shaper *s, u64 now);
/* A local packet left: the burst allowance is gone until the next idle
 * spell, so that the parallel classes get it once per idle spell, not
 * again each time a local packet has waited for the schedule.
 */
static inline void parq_shaper_spend(struct parq_shaper *s)
{
	s->allow_ns = 0;
}

static inline bool parq_shaper_on(const struct parq_shaper *s)
{
	return s->rate != 0;
}

static inline bool parq_shaper_ready(const struct parq_shaper *s, u64 now)
{
	return !parq_shaper_on(s) || now >= s->t_next;
}

/*
 * When the gate opens: at the next departure, or with @burst what is left
 * of the burst allowance's time before it (a sender that was idle, whose
 * schedule restarted at the current time, may send that much at once; a
 * sender that keeps a backlog is paced at the rate all the same, the
 * allowance ahead).
 */
static inline u64 parq_shaper_gate(const struct parq_shaper *s, bool burst)
{
	if (!burst)
		return s->t_next;
	return s->t_next > s->allow_ns ? s->t_next - s->allow_ns : 0;
}

/*
 * Reserved flow (Senapathi and Panda's NIC rate control): an inter-dispatch
 * time (IDT) and a next dispatch time (NDT).  Among backlogged flows whose
 * NDT has come, the one with the smallest (NDT, classid) is dispatched and
 * its NDT advances by its IDT: a fixed time per packet in idt mode, or
 * len / rate in rate mode (remainder carried, so the rate is exact).  In
 * idt mode a packet longer than @mtu, the bytes one IDT was admitted for,
 * takes len / mtu IDTs (rounded up): raising the device's MTU after the
 * admission, or a GSO packet, cannot carry more than was admitted.
 */
struct parq_resv {
	u64	ndt;		/* ns: next dispatch time */
	u64	idt;		/* ns per packet in idt mode, else 0 */
	u64	rate;		/* bytes/s in rate mode, else 0 */
	u64	rem;		/* remainder of the last len/rate division */
	u64	dispatches;
	u64	lateness_max;	/* ns between NDT and actual dispatch */
	u64	lateness_sum;
	u32	classid;
	u32	mtu;		/* idt mode: bytes admitted per IDT (0: any) */
};

/* Exactly one of @rate (bytes/s) and @idt (ns) is non-zero. */
void parq_resv_set(struct parq_resv *r, u64 rate, u64 idt);
/* After a change of rate or idt, an NDT set at the old pace beyond @now
 * comes back to @now (and the caller re-keys the flow).
 */
void parq_resv_rebase(struct parq_resv *r, u64 now);
/* The flow had nothing queued and now has: it cannot catch up. */
void parq_resv_wake(struct parq_resv *r, u64 now);
/* Order of dispatch: smaller NDT first, ties to the lower classid. */
bool parq_resv_before(const struct parq_resv *a, const struct parq_resv *b);
/* A packet of @len bytes is dispatched at @now (>= NDT). */
void parq_resv_dispatch(struct parq_resv *r, u64 now, u32 len);

static inline bool parq_resv_eligible(const struct parq_resv *r, u64 now)
{
	return r->ndt <= now;
}

/*
 * What a reserved flow carries against its rate, over windows of
 * PARQ_USE_WINDOW_MS: the share of a window in which it had a packet held
 * back by its rate, waiting for an NDT still to come (choked: it was sent
 * more than its rate; a packet past its NDT that waits for the device or
 * a late timer does not count), and the share of the window's bytes at its
 * rate it did not send (over-allocated).  The caller reports each packet
 * sent and, whenever it changes, until when the flow's head waits for its
 * NDT; the figures of the last full window are kept, and a window with no
 * event in it counts as it was.  Shares are in parts per million.
 */
struct parq_use {
	u64	start;		/* ns: the current window began */
	u64	from, to;	/* ns: held back by its rate over [from, to) */
	u64	busy;		/* ns held back in the window, before @from */
	u64	bytes;		/* sent in the window */
	u64	busy_total;	/* ns held back in all, before @from */
	u64	windows;	/* full windows measured */
	u32	choked;		/* ppm of the last full window held back */
	u32	unused;		/* ppm of its bytes at the rate not sent */
};

/* Start measuring at @now (a new flow, or a new rate). */
void parq_use_reset(struct parq_use *u, u64 now);
/* Close the windows that ended by @now, at @bw bytes/s reserved. */
void parq_use_roll(struct parq_use *u, u64 now, u64 bw);
/* From @now the flow's head waits for its rate until @until (<= @now:
 * it does not wait, or the flow has nothing queued).
 */
void parq_use_wait(struct parq_use *u, u64 now, u64 bw, u64 until);
/* A packet of @len bytes was sent at @now. */
void parq_use_sent(struct parq_use *u, u64 now, u64 bw, u32 len);
/* ns held back by its rate in all, up to @now. */
u64 parq_use_busy_total(const struct parq_use *u, u64 now);

/* Bandwidth a reservation takes, bytes/s: @rate, or one @mtu per @idt. */
u64 parq_resv_bw(u64 rate, u64 idt, u32 mtu);
/* Reservable bytes/s: @percent of @linkrate. */
u64 parq_resv_capacity(u64 linkrate, u32 percent);
/* May @sum (all reservations) change by replacing @old_bw with @new_bw? */
bool parq_resv_admit(u64 sum, u64 old_bw, u64 new_bw, u64 capacity);

/*
 * Receiver-side credit for one destination: @credit bytes of local traffic
 * per epoch of @epoch ns, epochs counted from @start.  The bytes used are
 * kept together with the number of the epoch they were charged in, as one
 * u64 (epoch number in the high half, bytes in the low half), so that one
 * compare-and-exchange charges a packet.  A packet goes while the epoch's
 * usage is below @credit, whatever its size; what it takes beyond the
 * credit is a debt carried into the following epochs, each of which pays
 * off @credit of it.  So a destination sends at most @credit per epoch on
 * average plus one packet, however large its packets are (a 64 KB GSO
 * packet against a credit of 3000 bytes waits 21 epochs), and a credit
 * smaller than a packet still lets packets through now and then: nothing
 * is stuck for as long as the entry lives.  Credit 0 stops the
 * destination.
 */
struct parq_credit_cfg {
	u64	start;		/* ns */
	u64	epoch;		/* ns, > 0 */
	u32	credit;		/* bytes per epoch */
};

/* Number (mod 2^32) of the epoch that holds @now; 0 before @start. */
u32 parq_credit_epoch(const struct parq_credit_cfg *c, u64 now);
/* ns at which the epoch after the one holding @now begins (saturated). */
u64 parq_credit_next(const struct parq_credit_cfg *c, u64 now);
/*
 * May a packet of @len bytes go at @now, given the usage word @state?  If
 * so, returns true and sets *@next to the usage word that charges it.
 */
bool parq_credit_take(const struct parq_credit_cfg *c, u64 state, u64 now,
		      u32 len, u64 *next);
/*
 * Bytes used in the epoch holding @now, from usage word @state: what was
 * charged, less @credit for every epoch since (0 at least).
 */
u32 parq_credit_used(const struct parq_credit_cfg *c, u64 state, u64 now);
/* @now + @lease, saturated at U64_MAX. */
u64 parq_credit_expiry(u64 now, u64 lease);

#if !defined(__KERNEL__) && defined(__cplusplus)
}
#endif

#endif /* _PARQ_CORE_H */
