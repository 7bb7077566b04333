// SPDX-License-Identifier: GPL-2.0
/* Enqueue and dequeue (parq_datapath.c) on the mock. */
#include "tparq.h"

/* Count what goes out of the first @n dequeues, by class (prio). */
static void tdrain(struct tparq *t, unsigned int n, unsigned int *parallel,
		   unsigned int *local)
{
	unsigned int i;
	u32 prio;

	*parallel = 0;
	*local = 0;
	for (i = 0; i < n; i++) {
		if (!tparq_dequeue(t, &prio))
			return;
		if (prio == TPARQ_PARALLEL)
			(*parallel)++;
		else
			(*local)++;
	}
}

/*
 * THRESHOLD_send in packets: with both classes backlogged, one local
 * packet goes for every @threshold parallel ones.
 */
KTEST(datapath_threshold_share_in_packets)
{
	unsigned int i, par, loc;
	struct tparq t;
	struct treq r;

	kmock_reset();
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_THRESHOLD, 4);
	nla_put_u8(r.skb, TCA_PARQ_UNIT, PARQ_UNIT_PACKETS);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	for (i = 0; i < 100; i++) {
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(200, 5, TPARQ_PARALLEL, 0)),
			     NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1400, 6, TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
	}
	tdrain(&t, 50, &par, &loc);
	KT_ASSERT_EQ(par + loc, 50);
	KT_ASSERT_EQ(par, 40);
	KT_ASSERT_EQ(loc, 10);
	/* Parallel runs out first; the rest is local. */
	tdrain(&t, 150, &par, &loc);
	KT_ASSERT_EQ(par, 60);
	KT_ASSERT_EQ(loc, 90);
	KT_ASSERT_EQ(t.sch->q.qlen, 0);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A destination over its receiver's credit waits aside: the other local
 * destinations go on, the watchdog is armed for its next epoch, and then
 * it sends again, one credit's worth per epoch.
 */
KTEST(datapath_credit_wait_holds_one_destination)
{
	unsigned int i, len, to_7 = 0, to_8 = 0;
	struct tparq t;
	u64 start;

	kmock_reset();
	start = kmock_now;
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	/* 1000 bytes per 1 ms epoch to 10.0.0.7. */
	KT_ASSERT_EQ(tcredit_set(7, 1000, NSEC_PER_MSEC, NSEC_PER_SEC), 0);
	for (i = 0; i < 4; i++) {
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 7, TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(600, 8, TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
	}

	/* One packet to 10.0.0.7 uses its epoch's credit; 10.0.0.8's go. */
	while ((len = tparq_dequeue(&t, NULL))) {
		to_7 += len == 1000;
		to_8 += len == 600;
	}
	KT_ASSERT_EQ(to_7, 1);
	KT_ASSERT_EQ(to_8, 4);
	KT_ASSERT_EQ(t.q->local_waiting, 1);
	KT_ASSERT_EQ(t.sch->q.qlen, 3);
	KT_ASSERT_EQ(kmock_watchdog_at, start + NSEC_PER_MSEC);

	/* Each epoch lets one more go. */
	for (i = 2; i <= 4; i++) {
		kmock_set_now(kmock_watchdog_at);
		KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
		KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
		KT_ASSERT_EQ(t.sch->q.qlen, 4 - i);
		if (i < 4)
			KT_ASSERT_EQ(kmock_watchdog_at,
				     start + i * NSEC_PER_MSEC);
	}
	KT_ASSERT_EQ(t.q->local_waiting, 0);
	KT_ASSERT_EQ(tcredit_del(0), 0);
	kmock_rcu_sync();
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A GSO packet for a reserved class is queued as its segments: the
 * parents are told the difference in packets and bytes, and a
 * segmentation that fails for memory drops the packet whole.
 */
KTEST(datapath_gso_segments_accounted)
{
	struct nlattr *tca[TCA_MAX + 1] = {};
	unsigned long cl = 0;
	unsigned int bytes = 0, len, n = 0;
	struct tparq t;
	struct treq r;
	long live;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	treq_start(&r);
	nla_put_u64_64bit(r.skb, TCA_PARQ_CLASS_RATE, 1000000,
			  TCA_PARQ_CLASS_PAD);
	tca[TCA_OPTIONS] = treq_end(&r);
	KT_ASSERT_EQ(parq_class_ops.change(t.sch, TPARQ_HANDLE | 0x16,
					   TPARQ_HANDLE, tca, &cl, NULL), 0);
	treq_free(&r);

	/*
	 * 20 + 4 x 1000 bytes: four segments of 1020, which the stack counted
	 * as 4080 bytes already; the parents hold one packet, parq four.
	 */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4_gso(4020, 9,
						      TPARQ_HANDLE | 0x16,
						      1000)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, 4);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 4 * 1020);
	KT_ASSERT_EQ(t.q->s.xs.gso_segments, 4);
	KT_ASSERT_EQ(kmock_reduced_pkts, 1 - 4);
	KT_ASSERT_EQ(kmock_reduced_bytes, 0);

	/* Out of memory at the second segment: nothing more is held. */
	live = kmock_live;
	kmock_fail_at = 4;	/* the packet's skb and data, a segment's */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4_gso(4020, 9,
						      TPARQ_HANDLE | 0x16,
						      1000)),
		     NET_XMIT_DROP);
	kmock_fail_at = -1;
	KT_ASSERT_EQ(t.sch->q.qlen, 4);
	KT_ASSERT_EQ(t.q->s.xs.drop_gso_failed, 1);
	kfree_skb_list(t.to_free);
	t.to_free = NULL;
	KT_ASSERT_EQ(kmock_live, live);

	/* The reserved class's pace lets one go per its interval. */
	while (n < 4) {
		len = tparq_dequeue(&t, NULL);
		if (!len) {
			KT_ASSERT(kmock_watchdog_at > kmock_now);
			kmock_set_now(kmock_watchdog_at);
			continue;
		}
		KT_ASSERT_EQ(len, 1020);
		bytes += len;
		n++;
	}
	KT_ASSERT_EQ(bytes, 4 * 1020);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A full qdisc takes a parallel packet in the place of a local one, and
 * drops a local packet that arrives; the parents are told of the eviction
 * only once the new packet is in, and a reset empties it all.
 */
KTEST(datapath_full_evicts_local_for_parallel)
{
	struct tparq t;
	struct treq r;
	unsigned int i;

	kmock_reset();
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 8);
	nla_put_u32(r.skb, TCA_PARQ_FLOW_LIMIT, 8);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	for (i = 0; i < 8; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(900, 2 + i % 3,
							  TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(900, 2, TPARQ_LOCAL, 0)),
		     NET_XMIT_DROP);
	KT_ASSERT_EQ(t.sch->qstats.drops, 1);
	for (i = 0; i < 3; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 9,
							  TPARQ_PARALLEL, 0)),
			     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, 8);
	KT_ASSERT_EQ(t.q->parallel_qlen, 3);
	KT_ASSERT_EQ(t.q->local_qlen, 5);
	KT_ASSERT_EQ(kmock_reduced_pkts, 3);
	KT_ASSERT_EQ(kmock_reduced_bytes, 3 * 900);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 3 * 100 + 5 * 900);

	/* A parallel packet goes first; reset drops what is left. */
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 100);
	parq_reset(t.sch);
	KT_ASSERT_EQ(parq_held(t.sch), 0);
	KT_ASSERT_EQ(t.q->parallel_qlen, 0);
	KT_ASSERT_EQ(t.q->local_qlen, 0);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * The shaper: at 1 MB/s a 1000-byte packet goes, the next waits 1 ms with
 * the watchdog armed for it, and goes then.
 */
KTEST(datapath_shaper_paces_at_its_rate)
{
	u64 start, wait;
	struct tparq t;
	struct treq r;

	kmock_reset();
	treq_start(&r);
	nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 1000000, TCA_PARQ_PAD);
	nla_put_u8(r.skb, TCA_PARQ_SPLIT_GSO, PARQ_SPLIT_GSO_OFF);
	nla_put_u32(r.skb, TCA_PARQ_BURST, 0);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	start = kmock_now;
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 2, TPARQ_PARALLEL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 2, TPARQ_PARALLEL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	wait = kmock_watchdog_at - start;
	KT_ASSERT(wait >= NSEC_PER_MSEC && wait <= NSEC_PER_MSEC + 100000);
	kmock_set_now(kmock_watchdog_at - 1);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	kmock_set_now(start + wait);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * split-gso auto with the shaper on splits a local GSO packet, so that a
 * parallel packet waits behind one frame of it, and keeps a parallel one
 * whole; split-gso (on) splits both; without the shaper neither is.
 */
static void split_case(u8 mode, bool shaped, u8 unit, unsigned int want_local,
		       unsigned int want_parallel, u8 want_now)
{
	struct tparq t;
	struct treq r;

	kmock_reset();
	treq_start(&r);
	if (shaped)
		nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 1000000, TCA_PARQ_PAD);
	nla_put_u8(r.skb, TCA_PARQ_UNIT, unit);
	nla_put_u8(r.skb, TCA_PARQ_SPLIT_GSO, mode);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(t.q->split_gso, want_now);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4_gso(4020, 9, TPARQ_LOCAL,
						      1000)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, want_local);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4_gso(4020, 9, TPARQ_PARALLEL,
						      1000)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, want_local + want_parallel);
	KT_ASSERT_EQ(t.q->s.xs.gso_segments,
		     (want_local > 1 ? want_local : 0) +
		     (want_parallel > 1 ? want_parallel : 0));
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A parallel GSO packet that leaves whole pays each segment's overhead,
 * also when it came from an untrusted source with no segment count yet
 * (gso_segs 0): then at most one segment more, never fewer.
 */
KTEST(datapath_whole_gso_pays_each_segments_overhead)
{
	struct sk_buff *skb;
	unsigned int i;
	struct tparq t;
	struct treq r;
	u64 start, ns;

	for (i = 0; i < 2; i++) {
		kmock_reset();
		treq_start(&r);
		nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 1000000, TCA_PARQ_PAD);
		nla_put_s32(r.skb, TCA_PARQ_OVERHEAD, 24);
		KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
		treq_free(&r);
		start = kmock_now;
		skb = kmock_ipv4_gso(4020, 9, TPARQ_PARALLEL, 1000);
		if (i)
			skb_shinfo(skb)->gso_segs = 0;
		KT_ASSERT_EQ(tparq_enqueue(&t, skb), NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(t.sch->q.qlen, 1);
		KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 4080);
		/* 1 us a byte: 4 segments of 1020 and 24 bytes each */
		ns = t.q->s.shaper.t_next - start;
		KT_ASSERT(ns >= (4080 + 4 * 24) * 1000ULL);
		KT_ASSERT(ns <= (4080 + 5 * 24) * 1000ULL);
		if (!i)
			KT_ASSERT_EQ(ns, (4080 + 4 * 24) * 1000ULL);
		tparq_destroy(&t);
		KT_ASSERT_NO_LEAK();
	}
}

KTEST(datapath_split_gso_auto_splits_local_only)
{
	split_case(PARQ_SPLIT_GSO_AUTO, true, PARQ_UNIT_BYTES, 4, 1,
		   PARQ_SPLIT_LOCAL);
	split_case(PARQ_SPLIT_GSO_ON, true, PARQ_UNIT_BYTES, 4, 4,
		   PARQ_SPLIT_ALL);
	split_case(PARQ_SPLIT_GSO_AUTO, false, PARQ_UNIT_BYTES, 1, 1,
		   PARQ_SPLIT_NONE);
	split_case(PARQ_SPLIT_GSO_OFF, true, PARQ_UNIT_BYTES, 1, 1,
		   PARQ_SPLIT_NONE);
	/* Counted in packets, a whole GSO packet would be one: all split. */
	split_case(PARQ_SPLIT_GSO_AUTO, true, PARQ_UNIT_PACKETS, 4, 4,
		   PARQ_SPLIT_ALL);
}

/*
 * The burst allowance: an idle qdisc lets parallel packets of up to burst
 * bytes (and the one that finds the gate open) go at once, then paces at
 * the rate; while a local packet may go, every packet waits for the
 * schedule.
 */
KTEST(datapath_burst_for_parallel_while_no_local_may_go)
{
	unsigned int i;
	struct tparq t;
	struct treq r;
	u64 start;

	kmock_reset();
	treq_start(&r);
	nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 1000000, TCA_PARQ_PAD);
	nla_put_u32(r.skb, TCA_PARQ_BURST, 3000);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	start = kmock_now;
	for (i = 0; i < 6; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 2, TPARQ_PARALLEL,
							  0)),
			     NET_XMIT_SUCCESS);
	for (i = 0; i < 4; i++)
		KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	/* 4 000 bytes at 1 MB/s, less the allowance's 3 ms */
	KT_ASSERT_EQ(kmock_watchdog_at, start + NSEC_PER_MSEC);
	kmock_set_now(kmock_watchdog_at);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	/* A local packet arrives: it and the parallel one wait for the
	 * schedule itself, 5 ms after the start.
	 */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 3, TPARQ_LOCAL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	KT_ASSERT_EQ(kmock_watchdog_at, start + 5 * NSEC_PER_MSEC);
	kmock_set_now(kmock_watchdog_at);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * The control queue: a packet of priority TC_PRIO_CONTROL goes before a
 * backlog of parallel and local packets, through the shaper's gate, and
 * pushes the gate back by its length; the others then wait for it.
 */
KTEST(datapath_control_first_through_the_shaper)
{
	unsigned int i;
	struct tparq t;
	struct treq r;
	u64 start;
	u32 prio;

	kmock_reset();
	treq_start(&r);
	nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 1000000, TCA_PARQ_PAD);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	start = kmock_now;
	for (i = 0; i < 10; i++) {
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 5, TPARQ_PARALLEL, 0)),
			     NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 6, TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
	}
	KT_ASSERT_EQ(tparq_dequeue(&t, &prio), 1000);
	KT_ASSERT_EQ(prio, TPARQ_PARALLEL);
	/* The gate is shut for 1 ms; the control packet does not wait. */
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(500, 7, TC_PRIO_CONTROL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, 20);
	KT_ASSERT_EQ(tparq_dequeue(&t, &prio), 500);
	KT_ASSERT_EQ(prio, TC_PRIO_CONTROL);
	KT_ASSERT_EQ(t.q->s.xs.control_sent, 1);
	/* Its 500 bytes at 1 MB/s: the others wait 0.5 ms more. */
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	KT_ASSERT(kmock_watchdog_at >= start + 1500 * NSEC_PER_USEC &&
		  kmock_watchdog_at <= start + 1600 * NSEC_PER_USEC);
	kmock_set_now(kmock_watchdog_at);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 1000);
	KT_ASSERT_EQ(t.sch->q.qlen, 18);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 18000);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * Beyond PARQ_CONTROL_AHEAD_NS the gate holds control back too: at 100 KB/s
 * a 1000-byte class packet shuts it for 10 ms, the control packet waits for
 * the watchdog PARQ_CONTROL_AHEAD_NS before the gate's opening, and then
 * goes before the classes.
 */
KTEST(datapath_control_waits_for_a_gate_far_ahead)
{
	struct tparq t;
	struct treq r;
	u32 prio;

	kmock_reset();
	treq_start(&r);
	nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 100000, TCA_PARQ_PAD);
	nla_put_u32(r.skb, TCA_PARQ_BURST, 0);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 5, TPARQ_PARALLEL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 5, TPARQ_PARALLEL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_dequeue(&t, &prio), 1000);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 7, TC_PRIO_CONTROL, 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	KT_ASSERT_EQ(kmock_watchdog_at,
		     t.q->s.shaper.t_next - PARQ_CONTROL_AHEAD_NS);
	KT_ASSERT(t.q->s.shaper.t_next > kmock_now + PARQ_CONTROL_AHEAD_NS);
	kmock_set_now(kmock_watchdog_at - 1);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	kmock_set_now(t.q->s.shaper.t_next - PARQ_CONTROL_AHEAD_NS);
	KT_ASSERT_EQ(tparq_dequeue(&t, &prio), 100);
	KT_ASSERT_EQ(prio, TC_PRIO_CONTROL);
	KT_ASSERT_EQ(t.q->s.xs.control_sent, 1);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * The control queue holds PARQ_CONTROL_LIMIT packets whatever the limit,
 * drops (counted) beyond it, and a priority with a major number is a
 * classid: neither 1:7 nor 2:7 is a control packet.
 */
KTEST(datapath_control_bounded_outside_the_limit)
{
	unsigned int i;
	struct tparq t;
	struct treq r;

	kmock_reset();
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 4);
	nla_put_u32(r.skb, TCA_PARQ_FLOW_LIMIT, 4);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	for (i = 0; i < 4; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 5, TPARQ_PARALLEL, 0)),
			     NET_XMIT_SUCCESS);
	for (i = 0; i < PARQ_CONTROL_LIMIT; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 7, TC_PRIO_CONTROL, 0)),
			     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 7, TC_PRIO_CONTROL, 0)),
		     NET_XMIT_DROP);
	KT_ASSERT_EQ(t.q->s.xs.drop_control, 1);
	KT_ASSERT_EQ(t.sch->qstats.drops, 1);
	KT_ASSERT_EQ(t.sch->q.qlen, 4 + PARQ_CONTROL_LIMIT);
	/* The classes' limit counts their own packets only. */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 8, TPARQ_PARALLEL, 0)),
		     NET_XMIT_DROP);
	KT_ASSERT_EQ(t.q->s.xs.drop_parallel_full, 1);
	/* 1:7 names no class of the qdisc: the default, not control. */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 6, TPARQ_HANDLE |
						  TC_PRIO_CONTROL, 0)),
		     NET_XMIT_DROP);
	KT_ASSERT_EQ(t.q->s.xs.unknown_class, 1);
	KT_ASSERT_EQ(t.q->s.xs.drop_local_full, 1);
	/* Nor is 2:7, a parent's classid (parq as a leaf of htb). */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 6, 0x20000 |
						  TC_PRIO_CONTROL, 0)),
		     NET_XMIT_DROP);
	KT_ASSERT_EQ(t.q->s.xs.drop_local_full, 2);
	KT_ASSERT_EQ(t.q->s.xs.drop_control, 1);
	for (i = 0; i < PARQ_CONTROL_LIMIT; i++)
		KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 100);
	KT_ASSERT_EQ(t.q->s.xs.control_sent, PARQ_CONTROL_LIMIT);
	KT_ASSERT_EQ(t.q->parallel_qlen, 4);
	/* A reset empties it too. */
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 7, TC_PRIO_CONTROL, 0)),
		     NET_XMIT_SUCCESS);
	parq_reset(t.sch);
	KT_ASSERT_EQ(t.q->control.qlen, 0);
	KT_ASSERT_EQ(t.sch->q.qlen, 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}
