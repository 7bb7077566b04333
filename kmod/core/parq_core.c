// SPDX-License-Identifier: GPL-2.0
/*
 * parq scheduling core; see parq_core.h.  Compiled into sch_parq.ko and,
 * unchanged, into the user-space unit tests.
 */
#include "parq_core.h"

#ifndef __KERNEL__
#define NSEC_PER_SEC	1000000000ULL
#define U32_MAX		UINT32_MAX
#define U64_MAX		UINT64_MAX

static inline u64 div64_u64_rem(u64 dividend, u64 divisor, u64 *remainder)
{
	*remainder = dividend % divisor;
	return dividend / divisor;
}

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}
#endif

static u32 parq_units(const struct parq_thresh *t, u32 len)
{
	return t->unit == PARQ_UNIT_PACKETS ? 1 : len;
}

void parq_thresh_init(struct parq_thresh *t, u32 threshold, u8 unit)
{
	t->threshold = threshold;
	t->unit = unit;
	t->credit = threshold;
}

void parq_thresh_charge(struct parq_thresh *t, enum parq_pick sent, u32 len,
			bool other_backlogged)
{
	s64 units = parq_units(t, len);

	if (parq_thresh_is_strict(t))
		return;
	if (sent == PARQ_PICK_PARALLEL) {
		/* Only parallel traffic sent while local waits counts. */
		if (other_backlogged)
			t->credit -= units;
		return;
	}
	/*
	 * Local sent.  On a threshold turn the refill is proportional to what
	 * local took, which keeps the ratio exact for any packet sizes.  When
	 * parallel was idle, a pending turn is settled the same way, but credit
	 * already earned is not raised: local-only periods build no burst.
	 */
	if (other_backlogged || t->credit <= 0)
		t->credit += (s64)t->threshold * units;
}

void parq_rr_set_quantum(struct parq_rr *rr, u32 quantum)
{
	rr->quantum = quantum > PARQ_QUANTUM_MIN ? quantum : PARQ_QUANTUM_MIN;
}

void parq_rr_init(struct parq_rr *rr, u32 quantum)
{
	rr->head = NULL;
	rr->tail = NULL;
	parq_rr_set_quantum(rr, quantum);
	rr->active = 0;
}

void parq_rr_add(struct parq_rr *rr, struct parq_rr_node *n)
{
	n->next = NULL;
	n->deficit = rr->quantum;
	if (rr->tail)
		rr->tail->next = n;
	else
		rr->head = n;
	rr->tail = n;
	rr->active++;
}

static void parq_rr_rotate(struct parq_rr *rr)
{
	struct parq_rr_node *n = rr->head;

	if (n == rr->tail)
		return;
	rr->head = n->next;
	n->next = NULL;
	rr->tail->next = n;
	rr->tail = n;
}

struct parq_rr_node *parq_rr_select(struct parq_rr *rr)
{
	struct parq_rr_node *n;

	/* Terminates: every pass adds a quantum to the head. */
	while ((n = rr->head) && n->deficit <= 0) {
		n->deficit += rr->quantum;
		parq_rr_rotate(rr);
	}
	return n;
}

void parq_rr_charge(struct parq_rr *rr, u32 len, bool emptied)
{
	struct parq_rr_node *n = rr->head;

	n->deficit -= len;
	if (!emptied)
		return;
	rr->head = n->next;
	if (!rr->head)
		rr->tail = NULL;
	n->next = NULL;
	rr->active--;
}

void parq_rr_remove(struct parq_rr *rr, struct parq_rr_node *n)
{
	struct parq_rr_node **pp, *prev = NULL;

	for (pp = &rr->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp != n)
			continue;
		*pp = n->next;
		if (rr->tail == n)
			rr->tail = prev;
		n->next = NULL;
		rr->active--;
		return;
	}
}

void parq_shaper_set(struct parq_shaper *s, u64 rate, s32 overhead,
		     u32 burst, u64 horizon_ns, u64 now)
{
	/* A departure computed at the old rate is dropped (at 1 byte/s a
	 * 64 KiB packet would otherwise hold a faster shaper back for hours):
	 * the new rate starts at @now, with no debt from the old one.
	 */
	bool restart = rate != s->rate;

	if (restart) {
		s->rem = 0;
		s->t_next = now;
	}
	s->rate = rate;
	s->overhead = overhead;
	s->horizon = horizon_ns;
	/* burst * 1e9 < 2^55: no overflow. */
	s->burst_ns = rate ? div64_u64((u64)burst * NSEC_PER_SEC, rate) : 0;
	/* Another change (the limit, the burst) gives no fresh allowance. */
	if (restart || s->allow_ns > s->burst_ns)
		s->allow_ns = s->burst_ns;
}

/* @len and @segs segments' overhead; never below nothing. */
static u64 parq_shaper_bytes(const struct parq_shaper *s, u32 len, u32 segs)
{
	s64 bytes = (s64)len + (s64)s->overhead * segs;

	return bytes > 0 ? bytes : 0;
}

/*
 * ns to send @bytes at @rate bytes/s, plus the carried remainder *@rem of the
 * previous division, which is updated: summed over packets the result never
 * drifts from the exact total.  bytes * 1e9 < 2^47 for any packet and
 * *rem < rate <= 2^38: no overflow.
 */
static u64 parq_ns_carry(u64 bytes, u64 rate, u64 *rem)
{
	return div64_u64_rem(bytes * NSEC_PER_SEC + *rem, rate, rem);
}

#ifndef __KERNEL__
u64 parq_shaper_delay(const struct parq_shaper *s, u32 len)
{
	u64 rem;

	if (!parq_shaper_on(s))
		return 0;
	return div64_u64_rem(parq_shaper_bytes(s, len, 1) * NSEC_PER_SEC,
			     s->rate, &rem);
}
#endif

/* A schedule that was idle at @now restarts there: no burst to catch up. */
static void parq_sched_wake(u64 *t, u64 *rem, u64 now)
{
	if (*t < now) {
		*t = now;
		*rem = 0;
	}
}

/*
 * A backlogged schedule *@t is due and served at @now: lateness up to
 * @horizon is kept (the departures after it follow at full speed until the
 * schedule is met again, so the long-run rate is exact); a longer stall
 * forgives the debt beyond @horizon.
 */
static void parq_sched_cap(u64 *t, u64 *rem, u64 now, u64 horizon)
{
	if (now > *t && now - *t > horizon) {
		*t = now - horizon;
		*rem = 0;
	}
}

void parq_shaper_charge_segs(struct parq_shaper *s, u64 now, u32 len,
			     u32 segs)
{
	if (!parq_shaper_on(s))
		return;
	parq_sched_cap(&s->t_next, &s->rem, now, s->horizon);
	s->t_next += parq_ns_carry(parq_shaper_bytes(s, len, segs ? segs : 1),
				   s->rate, &s->rem);
}

void parq_shaper_wake(struct parq_shaper *s, u64 now)
{
	if (!parq_shaper_on(s))
		return;
	if (s->t_next < now)
		s->allow_ns = s->burst_ns;
	parq_sched_wake(&s->t_next, &s->rem, now);
}

void parq_resv_set(struct parq_resv *r, u64 rate, u64 idt)
{
	if (rate != r->rate || idt != r->idt)
		r->rem = 0;
	r->rate = rate;
	r->idt = idt;
}

void parq_resv_rebase(struct parq_resv *r, u64 now)
{
	if (r->ndt > now) {
		r->ndt = now;
		r->rem = 0;
	}
}

void parq_resv_wake(struct parq_resv *r, u64 now)
{
	parq_sched_wake(&r->ndt, &r->rem, now);
}

bool parq_resv_before(const struct parq_resv *a, const struct parq_resv *b)
{
	if (a->ndt != b->ndt)
		return a->ndt < b->ndt;
	return a->classid < b->classid;
}

void parq_resv_dispatch(struct parq_resv *r, u64 now, u32 len)
{
	u64 late = now > r->ndt ? now - r->ndt : 0;
	u64 rem;

	r->dispatches++;
	r->lateness_sum += late;
	if (late > r->lateness_max)
		r->lateness_max = late;
	/* From the NDT, not from @now: a late dispatch keeps the schedule. */
	parq_sched_cap(&r->ndt, &r->rem, now, PARQ_CATCHUP_NS);
	if (r->idt && r->mtu && len > r->mtu)
		r->ndt += div64_u64_rem((u64)len * r->idt + r->mtu - 1, r->mtu,
					&rem);
	else if (r->idt)
		r->ndt += r->idt;
	else
		r->ndt += parq_ns_carry(len, r->rate, &r->rem);
}

#define PARQ_USE_WINDOW_NS	((u64)PARQ_USE_WINDOW_MS * 1000000ULL)
#define PARQ_PPM		1000000U

/* The part of [@u->from, @u->to) before @t counts as held back. */
static void parq_use_upto(struct parq_use *u, u64 t)
{
	u64 end = t < u->to ? t : u->to;

	if (end > u->from) {
		u->busy += end - u->from;
		u->busy_total += end - u->from;
		u->from = end;
	}
}

void parq_use_reset(struct parq_use *u, u64 now)
{
	parq_use_upto(u, now);
	if (u->from < now)
		u->from = now;
	u->start = now;
	u->busy = 0;
	u->bytes = 0;
}

/* Shares of window [@u->start, @end), @end at most one window on. */
static void parq_use_close(struct parq_use *u, u64 end, u64 bw)
{
	u64 allow, rem;

	parq_use_upto(u, end);
	/* busy <= the window: the ratio fits u32. */
	u->choked = (u32)div64_u64_rem(u->busy * PARQ_PPM, PARQ_USE_WINDOW_NS,
				       &rem);
	/* bw <= PARQ_RATE_MAX (2^38 bytes/s) and a window is a second or less */
	allow = div64_u64_rem(bw * PARQ_USE_WINDOW_MS, 1000, &rem);
	if (!allow || u->bytes >= allow)
		u->unused = 0;
	else
		u->unused = (u32)div64_u64_rem((allow - u->bytes) * PARQ_PPM,
					       allow, &rem);
	u->windows++;
	u->start = end;
	u->busy = 0;
	u->bytes = 0;
}

void parq_use_roll(struct parq_use *u, u64 now, u64 bw)
{
	u64 rem, n;

	if (now < u->start || now - u->start < PARQ_USE_WINDOW_NS)
		return;
	parq_use_close(u, u->start + PARQ_USE_WINDOW_NS, bw);
	if (now - u->start < PARQ_USE_WINDOW_NS)
		return;
	/* Whole windows without an event: the last of them is as it was. */
	n = div64_u64_rem(now - u->start, PARQ_USE_WINDOW_NS, &rem);
	u->start += (n - 1) * PARQ_USE_WINDOW_NS;
	parq_use_upto(u, u->start);
	u->busy = 0;
	u->windows += n - 1;
	parq_use_close(u, u->start + PARQ_USE_WINDOW_NS, bw);
}

void parq_use_wait(struct parq_use *u, u64 now, u64 bw, u64 until)
{
	parq_use_roll(u, now, bw);
	parq_use_upto(u, now);
	u->from = now > u->start ? now : u->start;
	u->to = until > u->from ? until : u->from;
}

void parq_use_sent(struct parq_use *u, u64 now, u64 bw, u32 len)
{
	parq_use_roll(u, now, bw);
	u->bytes += len;
}

u64 parq_use_busy_total(const struct parq_use *u, u64 now)
{
	u64 end = now < u->to ? now : u->to;

	return u->busy_total + (end > u->from ? end - u->from : 0);
}

u64 parq_resv_bw(u64 rate, u64 idt, u32 mtu)
{
	u64 rem;

	if (!idt)
		return rate;
	/* ceil(mtu * 1e9 / idt): never admit less than the flow can send */
	return div64_u64_rem((u64)mtu * NSEC_PER_SEC + idt - 1, idt, &rem);
}

u64 parq_resv_capacity(u64 linkrate, u32 percent)
{
	u64 rem;

	/* linkrate <= 2^38 and percent <= 100: the product fits. */
	return div64_u64_rem(linkrate * percent, 100, &rem);
}

bool parq_resv_admit(u64 sum, u64 old_bw, u64 new_bw, u64 capacity)
{
	u64 rest = sum - old_bw;	/* old_bw is part of sum */

	return new_bw <= capacity && rest <= capacity - new_bw;
}

u32 parq_credit_epoch(const struct parq_credit_cfg *c, u64 now)
{
	u64 rem;

	if (now <= c->start)
		return 0;
	return (u32)div64_u64_rem(now - c->start, c->epoch, &rem);
}

u64 parq_credit_next(const struct parq_credit_cfg *c, u64 now)
{
	u64 rem, left;

	if (now < c->start)
		return c->start;
	div64_u64_rem(now - c->start, c->epoch, &rem);
	/* start + (n + 1) * epoch = now - rem + epoch, saturated */
	left = c->epoch - rem;
	return now > U64_MAX - left ? U64_MAX : now + left;
}

static u64 parq_credit_word(u32 epoch, u32 used)
{
	return (u64)epoch << 32 | used;
}

/* What usage word @state leaves used in epoch number @epoch. */
static u32 parq_credit_left(const struct parq_credit_cfg *c, u64 state,
			    u32 epoch)
{
	/* Epochs since the charge, mod 2^32 like the numbers themselves. */
	u32 gone = epoch - (u32)(state >> 32);
	u64 paid = (u64)gone * c->credit;

	return paid >= (u32)state ? 0 : (u32)state - (u32)paid;
}

u32 parq_credit_used(const struct parq_credit_cfg *c, u64 state, u64 now)
{
	return parq_credit_left(c, state, parq_credit_epoch(c, now));
}

bool parq_credit_take(const struct parq_credit_cfg *c, u64 state, u64 now,
		      u32 len, u64 *next)
{
	u32 epoch = parq_credit_epoch(c, now);
	u32 used = parq_credit_left(c, state, epoch);

	if (used >= c->credit)
		return false;
	*next = parq_credit_word(epoch,
				 len > U32_MAX - used ? U32_MAX : used + len);
	return true;
}

u64 parq_credit_expiry(u64 now, u64 lease)
{
	return now > U64_MAX - lease ? U64_MAX : now + lease;
}
