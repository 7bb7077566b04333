// SPDX-License-Identifier: GPL-2.0
/* Reserved classes (parq_class.c): admission, change, delete. */
#include "tparq.h"

/* Class 1:<minor> in tc's notation, whose minors are hexadecimal. */
#define TCLASS(minor)	(TPARQ_HANDLE | 0x##minor)

/* Add or change class @classid as @opt says; @arg as tc passes it. */
static int tclass_change(struct tparq *t, u32 classid, struct nlattr *opt,
			 unsigned long *arg, struct netlink_ext_ack *extack)
{
	struct nlattr *tca[TCA_MAX + 1] = {};

	tca[TCA_OPTIONS] = opt;
	return parq_class_ops.change(t->sch, classid, TPARQ_HANDLE, tca, arg,
				     extack);
}

static void tclass_req(struct treq *r, u64 rate)
{
	treq_start(r);
	nla_put_u64_64bit(r->skb, TCA_PARQ_CLASS_RATE, rate,
			  TCA_PARQ_CLASS_PAD);
	treq_end(r);
}

/* Add or change class @classid to @rate bytes/s. */
static int tclass_set(struct tparq *t, u32 classid, u64 rate,
		      unsigned long *arg, struct netlink_ext_ack *extack)
{
	struct treq r;
	int err;

	tclass_req(&r, rate);
	err = tclass_change(t, classid, r.nest, arg, extack);
	treq_free(&r);
	return err;
}

static unsigned long tclass_find(struct tparq *t, u32 classid)
{
	return parq_class_ops.find(t->sch, classid);
}

static int tclass_delete(struct tparq *t, unsigned long arg)
{
	return parq_class_ops.delete(t->sch, arg, NULL);
}

/* Admission: up to the reservable share of the link, no further. */
KTEST(class_admission_up_to_capacity)
{
	struct netlink_ext_ack extack = {};
	unsigned long a = 0, b = 0;
	struct tparq t;
	u64 cap;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	cap = t.q->resv_capacity;
	/* 90% of 10 Gbit/s, in bytes/s. */
	KT_ASSERT_EQ(cap, 10000ULL * 1000000 / 8 * PARQ_RESERVABLE_DEFAULT / 100);

	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), cap / 2, &a, NULL), 0);
	KT_ASSERT(a && tclass_find(&t, TCLASS(16)) == a);
	KT_ASSERT_EQ(t.q->resv_sum, cap / 2);

	/* One byte/s too many is refused, and nothing is left of it. */
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(17), cap - cap / 2 + 1, &b, &extack),
		     -ENOSPC);
	KT_ASSERT(extack._msg && strstr(extack._msg, "refused"));
	KT_ASSERT_EQ(b, 0);
	KT_ASSERT_EQ(tclass_find(&t, TCLASS(17)), 0);
	KT_ASSERT_EQ(t.q->resv_sum, cap / 2);
	KT_ASSERT_EQ(t.q->resv_classes, 1);
	KT_ASSERT_EQ(t.q->s.xs.resv_rejects, 1);

	/* A class may grow into what it holds and what is free. */
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), cap, &a, NULL), 0);
	KT_ASSERT_EQ(t.q->resv_sum, cap);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), cap + 1, &a, NULL), -ENOSPC);
	KT_ASSERT_EQ(t.q->resv_sum, cap);

	/* The qdisc cannot lower its reservable share below what is held. */
	{
		struct treq r;

		treq_start(&r);
		nla_put_u8(r.skb, TCA_PARQ_RESERVABLE, 50);
		KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), NULL), -EINVAL);
		treq_free(&r);
		KT_ASSERT_EQ(t.q->cfg.reservable, PARQ_RESERVABLE_DEFAULT);
		KT_ASSERT_EQ(t.q->resv_capacity, cap);
	}
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/* Fixed classes and bad minors are refused with a reason. */
KTEST(class_bad_ids_refused)
{
	struct netlink_ext_ack extack = {};
	unsigned long a = 0;
	struct tparq t;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(3), 1000, &a, &extack), -EINVAL);
	KT_ASSERT(extack._msg && strstr(extack._msg, "16 and up"));
	KT_ASSERT_EQ(tclass_set(&t, 0x20000 | PARQ_RESV_MINOR_MIN, 1000, &a, NULL), -EINVAL);
	a = PARQ_CLASS_PARALLEL;
	KT_ASSERT_EQ(tclass_set(&t, TPARQ_PARALLEL, 1000, &a, NULL),
		     -EOPNOTSUPP);
	KT_ASSERT_EQ(tclass_delete(&t, PARQ_CLASS_LOCAL), -EOPNOTSUPP);
	KT_ASSERT_EQ(t.q->resv_classes, 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/* Adding a class fails cleanly at each of its allocations. */
KTEST(class_add_every_allocation_fails_cleanly)
{
	struct parq_resv_class **tab;
	unsigned long a;
	struct tparq t;
	struct treq r;
	long n, live;
	int err;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	tclass_req(&r, 1000000);
	for (n = 0; n < 16; n++) {
		a = 0;
		live = kmock_live;
		tab = t.q->resv_tab;
		kmock_fail_at = n;
		err = tclass_change(&t, TCLASS(16), r.nest, &a, NULL);
		kmock_fail_at = -1;
		if (!err)
			break;
		KT_ASSERT_EQ(err, -ENOMEM);
		KT_ASSERT_EQ(a, 0);
		/* Only the room made for the class may stay, for later. */
		KT_ASSERT_EQ(kmock_live, live + (!tab && t.q->resv_tab));
		KT_ASSERT_EQ(t.q->resv_sum, 0);
		KT_ASSERT_EQ(t.q->resv_classes, 0);
		KT_ASSERT_EQ(tclass_find(&t, TCLASS(16)), 0);
	}
	treq_free(&r);
	/* The class table and the class. */
	KT_ASSERT(n >= 2 && n < 16);
	KT_ASSERT_EQ(t.q->resv_sum, 1000000);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A class a filter points at cannot go; one with packets can, and they go
 * with it, told to the parents.  The others stay found.
 */
KTEST(class_delete_with_filters_and_backlog)
{
	unsigned long a = 0, b = 0, c = 0, f;
	struct tparq t;
	unsigned int i;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), 1000000, &a, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(17), 2000000, &b, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(18), 3000000, &c, NULL), 0);

	f = parq_class_ops.bind_tcf(t.sch, 0, TCLASS(16));
	KT_ASSERT_EQ(f, a);
	KT_ASSERT_EQ(tclass_delete(&t, a), -EBUSY);
	KT_ASSERT_EQ(tclass_find(&t, TCLASS(16)), a);
	parq_class_ops.unbind_tcf(t.sch, f);

	for (i = 0; i < 5; i++)
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(500, 4, TCLASS(16), 0)),
			     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(700, 4, TCLASS(17), 0)),
		     NET_XMIT_SUCCESS);
	KT_ASSERT_EQ(t.sch->q.qlen, 6);
	KT_ASSERT_EQ(t.q->resv_backlogged, 2);

	KT_ASSERT_EQ(tclass_delete(&t, a), 0);
	KT_ASSERT_EQ(tclass_find(&t, TCLASS(16)), 0);
	KT_ASSERT_EQ(tclass_find(&t, TCLASS(17)), b);
	KT_ASSERT_EQ(tclass_find(&t, TCLASS(18)), c);
	KT_ASSERT_EQ(t.q->resv_classes, 2);
	KT_ASSERT_EQ(t.q->resv_sum, 5000000);
	KT_ASSERT_EQ(t.q->resv_backlogged, 1);
	KT_ASSERT_EQ(t.sch->q.qlen, 1);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 700);
	KT_ASSERT_EQ(kmock_reduced_pkts, 5);
	KT_ASSERT_EQ(kmock_reduced_bytes, 2500);

	/* The last packet is still sent, from the class that stayed. */
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 700);
	KT_ASSERT_EQ(tparq_dequeue(&t, NULL), 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

struct twalk {
	struct qdisc_walker	w;
	unsigned long		seen[8];
	unsigned int		n;
	unsigned int		stop_at;	/* 0: never */
};

static int twalk_fn(struct Qdisc *sch, unsigned long cl,
		    struct qdisc_walker *w)
{
	struct twalk *tw = container_of(w, struct twalk, w);

	if (tw->stop_at && tw->n == tw->stop_at)
		return -1;
	if (tw->n < ARRAY_SIZE(tw->seen))
		tw->seen[tw->n] = cl;
	tw->n++;
	return 0;
}

/*
 * The walk gives the fixed classes, then the reserved ones; a dump that
 * stopped resumes after what it sent; a class dumps its rate.
 */
KTEST(class_walk_resumes_and_dump)
{
	struct nlattr *tb[TCA_PARQ_CLASS_MAX + 1];
	struct twalk tw = { .w.fn = twalk_fn };
	unsigned long a = 0, b = 0;
	struct sk_buff *skb;
	struct tcmsg tcm;
	struct tparq t;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), 1000000, &a, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(17), 2000000, &b, NULL), 0);

	parq_class_ops.walk(t.sch, &tw.w);
	KT_ASSERT_EQ(tw.n, 4);
	KT_ASSERT_EQ(tw.seen[0], PARQ_CLASS_PARALLEL);
	KT_ASSERT_EQ(tw.seen[1], PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tw.seen[2], a);
	KT_ASSERT_EQ(tw.seen[3], b);

	/* A dump that stops after three resumes at the fourth. */
	memset(&tw, 0, sizeof(tw));
	tw.w.fn = twalk_fn;
	tw.stop_at = 3;
	parq_class_ops.walk(t.sch, &tw.w);
	KT_ASSERT_EQ(tw.w.stop, 1);
	KT_ASSERT_EQ(tw.w.count, 3);
	tw.w.skip = tw.w.count;
	tw.w.count = 0;
	tw.w.stop = 0;
	tw.stop_at = 0;
	tw.n = 0;
	parq_class_ops.walk(t.sch, &tw.w);
	KT_ASSERT_EQ(tw.n, 1);
	KT_ASSERT_EQ(tw.seen[0], b);

	skb = kmock_nl_skb(256);
	KT_ASSERT(parq_class_ops.dump(t.sch, b, skb, &tcm) > 0);
	KT_ASSERT_EQ(tcm.tcm_handle, TCLASS(17));
	KT_ASSERT_EQ(nla_parse_nested(tb, TCA_PARQ_CLASS_MAX,
				      (struct nlattr *)skb->data, NULL, NULL),
		     0);
	KT_ASSERT(tb[TCA_PARQ_CLASS_RATE] &&
		  nla_get_u64(tb[TCA_PARQ_CLASS_RATE]) == 2000000);
	kfree_skb(skb);
	skb = kmock_nl_skb(256);
	KT_ASSERT_EQ(parq_class_ops.dump(t.sch, PARQ_CLASS_LOCAL, skb, &tcm),
		     0);
	KT_ASSERT_EQ(tcm.tcm_handle, TPARQ_LOCAL);
	KT_ASSERT_EQ(skb->len, 0);
	kfree_skb(skb);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * Two reserved classes, both backlogged, are paced each at its rate, and
 * go ahead of the parallel and local classes when their time has come.
 */
KTEST(class_reserved_paced_at_their_rates)
{
	unsigned int slow = 0, fast = 0, other = 0, i, len;
	unsigned long a = 0, b = 0;
	struct tparq t;
	u32 prio;
	u64 end;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	/* 1000-byte packets: one every 1 ms and every 0.5 ms. */
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), 1000000, &a, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(17), 2000000, &b, NULL), 0);
	for (i = 0; i < 60; i++) {
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 3, TCLASS(16),
							  0)),
			     NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 3, TCLASS(17),
							  0)),
			     NET_XMIT_SUCCESS);
	}
	KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 3, TPARQ_PARALLEL, 0)),
		     NET_XMIT_SUCCESS);

	/* 20 ms of the qdisc's time, going wherever the watchdog says. */
	end = kmock_now + 20 * NSEC_PER_MSEC;
	while (kmock_now < end) {
		len = tparq_dequeue(&t, &prio);
		if (!len) {
			KT_ASSERT(kmock_watchdog_at > kmock_now);
			kmock_set_now(kmock_watchdog_at);
			continue;
		}
		if (prio == TCLASS(16))
			slow++;
		else if (prio == TCLASS(17))
			fast++;
		else
			other++;
	}
	/* 20 and 40, give or take the first dispatch of each. */
	KT_ASSERT(slow >= 19 && slow <= 22);
	KT_ASSERT(fast >= 39 && fast <= 42);
	KT_ASSERT_EQ(other, 1);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/* Class @arg's xstats, as tc -s class show asks for them. */
static struct tc_parq_class_xstats tclass_xstats(struct tparq *t,
						 unsigned long arg)
{
	struct tc_parq_class_xstats xs = {};

	kmock_app_len = 0;
	if (!parq_class_ops.dump_stats(t->sch, arg, NULL) &&
	    kmock_app_len == sizeof(xs))
		memcpy(&xs, kmock_app, sizeof(xs));
	return xs;
}

/*
 * What a class carries against its rate: one reserved 40 Mbit/s that sends
 * 10 is 75 % unused and never choked; one offered twice its rate is choked
 * and uses all of it.  The shares are of the last full second; the time
 * held back by the rate counts from the class's start.
 */
KTEST(class_use_of_its_rate)
{
	struct tc_parq_class_xstats xs;
	unsigned long a = 0, b = 0;
	struct tparq t;
	u64 start, end;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), 5000000, &a, NULL), 0);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(17), 1000000, &b, NULL), 0);
	xs = tclass_xstats(&t, a);
	KT_ASSERT_EQ(xs.version, PARQ_XSTATS_CLASS | PARQ_CLASS_XSTATS_VERSION);
	KT_ASSERT_EQ(xs.use_windows, 0);

	start = kmock_now;
	end = start + 2 * NSEC_PER_SEC;
	for (; kmock_now < end; kmock_set_now(kmock_now + NSEC_PER_MSEC)) {
		tparq_enqueue(&t, kmock_ipv4(1250, 3, TCLASS(16), 0));
		tparq_enqueue(&t, kmock_ipv4(1000, 4, TCLASS(17), 0));
		tparq_enqueue(&t, kmock_ipv4(1000, 4, TCLASS(17), 0));
		while (tparq_dequeue(&t, NULL))
			;
	}
	xs = tclass_xstats(&t, a);
	KT_ASSERT_EQ(xs.use_windows, 2);
	KT_ASSERT(xs.unused_ppm >= 740000 && xs.unused_ppm <= 760000);
	KT_ASSERT_EQ(xs.choked_ppm, 0);
	KT_ASSERT_EQ(xs.throttled_ns, 0);

	xs = tclass_xstats(&t, b);
	KT_ASSERT_EQ(xs.use_windows, 2);
	KT_ASSERT(xs.choked_ppm >= 990000);
	KT_ASSERT(xs.unused_ppm <= 10000);
	KT_ASSERT(xs.throttled_ns >= 2 * NSEC_PER_SEC - 2 * NSEC_PER_MSEC);

	/* Idle since: the dump closes the windows that ended with no packet. */
	kmock_set_now(end + 3 * NSEC_PER_SEC);
	xs = tclass_xstats(&t, a);
	KT_ASSERT_EQ(xs.use_windows, 5);
	KT_ASSERT_EQ(xs.unused_ppm, 1000000);
	/*
	 * Still backlogged, and nothing sent: its head's NDT came long ago,
	 * so it waits for the qdisc to run, not for its rate.
	 */
	xs = tclass_xstats(&t, b);
	KT_ASSERT_EQ(xs.choked_ppm, 0);
	KT_ASSERT_EQ(xs.unused_ppm, 1000000);

	/*
	 * A new rate starts a window of its own: changed 0.3 s into one, 0.9 s
	 * later no window has ended.
	 */
	kmock_set_now(kmock_now + 3 * NSEC_PER_SEC / 10);
	KT_ASSERT_EQ(tclass_set(&t, TCLASS(16), 2500000, &a, NULL), 0);
	kmock_set_now(kmock_now + 9 * NSEC_PER_SEC / 10);
	xs = tclass_xstats(&t, a);
	KT_ASSERT_EQ(xs.use_windows, 5);
	KT_ASSERT(xs.choked_ppm <= 1000000);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}
