// SPDX-License-Identifier: GPL-2.0
/* Classification and dscp-mark (parq_datapath.c). */
#include <linux/ip.h>
#include <net/pkt_cls.h>

#include "tparq.h"

#define TOS_EF	(46 << 2)
#define TOS_CS6	(48 << 2)
#define TOS_CS7	(56 << 2)

/* Enqueue @skb and dequeue it again: its class by the counters it moved. */
static unsigned long tclass_of(struct tparq *t, struct sk_buff *skb,
			       u8 *tos_out)
{
	u32 before_par = t->q->parallel_qlen, before_loc = t->q->local_qlen;
	unsigned long cl = 0;

	if (tparq_enqueue(t, skb) != NET_XMIT_SUCCESS)
		return 0;
	if (t->q->parallel_qlen > before_par)
		cl = PARQ_CLASS_PARALLEL;
	else if (t->q->local_qlen > before_loc)
		cl = PARQ_CLASS_LOCAL;
	skb = parq_dequeue(t->sch);
	if (skb && tos_out)
		*tos_out = ip_hdr(skb)->tos;
	kfree_skb(skb);
	return cl;
}

/*
 * Without filters: skb->priority of the qdisc's handle names the class,
 * else a parallel DSCP makes it parallel, else the default class.
 */
KTEST(classify_priority_then_dscp_then_default)
{
	struct tparq t;
	struct treq r;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_PARALLEL, 0), NULL),
		     PARQ_CLASS_PARALLEL);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_LOCAL, TOS_EF),
			       NULL), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0, TOS_EF), NULL),
		     PARQ_CLASS_PARALLEL);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0, 0), NULL),
		     PARQ_CLASS_LOCAL);
	/* Another qdisc's handle in the priority: as if there were none. */
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0x20001, 0), NULL),
		     PARQ_CLASS_LOCAL);
	/* A minor that names no class: the default, counted. */
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_HANDLE | 0x30, 0),
			       NULL), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(t.q->s.xs.unknown_class, 1);

	/* default parallel, and no parallel DSCP. */
	treq_start(&r);
	nla_put_u8(r.skb, TCA_PARQ_DEFAULT_CLASS, PARQ_CLASS_PARALLEL);
	nla_put_u64_64bit(r.skb, TCA_PARQ_DSCP_PARALLEL, 0, TCA_PARQ_PAD);
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0, 0), NULL),
		     PARQ_CLASS_PARALLEL);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_LOCAL, TOS_EF),
			       NULL), PARQ_CLASS_LOCAL);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * In a qdisc of handle 0 (mq's children, default_qdisc) a socket's
 * priority picks no class: any user could make its traffic parallel.
 */
KTEST(classify_handle0_ignores_priority)
{
	struct net_device *dev;
	struct tparq t;

	kmock_reset();
	dev = kmock_dev_new(1500, 2);
	KT_ASSERT_EQ(tparq_init_on(&t, dev, TC_H_MAKE(0, 1), 0, NULL,
				   NULL), 0);
	KT_ASSERT_EQ(t.sch->handle, 0);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, PARQ_CLASS_PARALLEL, 0),
			       NULL), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0, TOS_EF), NULL),
		     PARQ_CLASS_PARALLEL);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * Filters come first: their class, the default for a class that is not
 * there, and a drop (shot) counted and freed.
 */
KTEST(classify_filters_first)
{
	struct tparq t;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	/* Any non-NULL list: the mock's filters give one verdict. */
	RCU_INIT_POINTER(t.q->filter_list, (struct tcf_proto *)&t);
	kmock_filter_verdict = TC_ACT_OK;
	kmock_filter_classid = TPARQ_PARALLEL;
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_LOCAL, 0), NULL),
		     PARQ_CLASS_PARALLEL);
	kmock_filter_classid = TPARQ_HANDLE | 0x40;
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_PARALLEL, 0),
			       NULL), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(t.q->s.xs.unknown_class, 1);
	kmock_filter_verdict = TC_ACT_SHOT;
	KT_ASSERT(tparq_enqueue(&t, kmock_ipv4(100, 2, TPARQ_PARALLEL, 0)) &
		  __NET_XMIT_BYPASS);
	KT_ASSERT_EQ(t.q->s.xs.drop_filter, 1);
	KT_ASSERT_EQ(t.sch->q.qlen, 0);
	RCU_INIT_POINTER(t.q->filter_list, NULL);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * dscp-mark: a parallel packet leaves with the mark, a local one that
 * carried a parallel DSCP with CS0, the ECN bits kept either way.
 */
KTEST(classify_dscp_mark)
{
	struct tparq t;
	struct treq r;
	u8 tos = 0xff;

	kmock_reset();
	treq_start(&r);
	nla_put_u8(r.skb, TCA_PARQ_DSCP_MARK, 40);	/* CS5 */
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_PARALLEL, 0x01),
			       &tos), PARQ_CLASS_PARALLEL);
	KT_ASSERT_EQ(tos, 40 << 2 | 0x01);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_LOCAL,
					      TOS_EF | 0x02), &tos),
		     PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tos, 0x02);
	/* A local packet without a parallel DSCP keeps its own. */
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TPARQ_LOCAL, 8 << 2),
			       &tos), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tos, 8 << 2);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * dscp-mark and network control: a local packet with CS6 or CS7 (which
 * IP_TOS lets anyone set) leaves with CS0; one of the control queue
 * (priority TC_PRIO_CONTROL) keeps its CS6; without dscp-mark nothing is
 * re-marked.
 */
KTEST(classify_dscp_mark_network_control)
{
	struct tparq t;
	struct treq r;
	u8 tos = 0xff;

	kmock_reset();
	treq_start(&r);
	nla_put_u8(r.skb, TCA_PARQ_DSCP_MARK, 40);	/* CS5 */
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 6, TOS_CS6 | 0x01),
			       &tos), PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tos, 0x01);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 0, TOS_CS7), &tos),
		     PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tos, 0);
	/* Neither class: the control queue, as it came. */
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, TC_PRIO_CONTROL,
					      TOS_CS6), &tos), 0);
	KT_ASSERT_EQ(tos, TOS_CS6);
	KT_ASSERT_EQ(t.q->s.xs.control_sent, 1);
	tparq_destroy(&t);

	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(tclass_of(&t, kmock_ipv4(100, 2, 6, TOS_CS6), &tos),
		     PARQ_CLASS_LOCAL);
	KT_ASSERT_EQ(tos, TOS_CS6);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}
