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
	long live;

	kmock_reset();
	live = kmock_live;
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
	KT_ASSERT_EQ(kmock_live, live);
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
		kmock_now = kmock_watchdog_at;
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
	KT_ASSERT_EQ(kmock_live, t.live);
}
