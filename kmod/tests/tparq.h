/* SPDX-License-Identifier: GPL-2.0 */
/* A parq qdisc on a mock device, and requests to it, for the tests. */
#ifndef _PARQ_TPARQ_H
#define _PARQ_TPARQ_H

#include <net/netlink.h>
#include <net/pkt_sched.h>

#include "../parq_qdisc.h"
#include "kmock.h"

#define TPARQ_HANDLE	0x10000U	/* 1: */
#define TPARQ_PARALLEL	(TPARQ_HANDLE | PARQ_CLASS_PARALLEL)
#define TPARQ_LOCAL	(TPARQ_HANDLE | PARQ_CLASS_LOCAL)

struct tparq {
	struct net_device	*dev;
	struct Qdisc		*sch;
	struct parq_sched_data	*q;
	struct sk_buff		*to_free;
	long			live;	/* kmock_live before the qdisc */
};

static const struct Qdisc_ops tparq_ops = {
	.id		= "parq",
	.priv_size	= sizeof(struct parq_sched_data),
};

/* A request's attributes, built in an skb: start, put, then tparq_opt(). */
struct treq {
	struct sk_buff	*skb;
	struct nlattr	*nest;
};

static inline void treq_start(struct treq *r)
{
	r->skb = kmock_nl_skb(1024);
	r->nest = nla_nest_start(r->skb, TCA_OPTIONS);
}

static inline struct nlattr *treq_end(struct treq *r)
{
	nla_nest_end(r->skb, r->nest);
	return r->nest;
}

static inline void treq_free(struct treq *r)
{
	kfree_skb(r->skb);
}

/* parq's init, as the qdisc layer calls it; destroy follows a failure. */
static inline int tparq_init(struct tparq *t, struct nlattr *opt,
			     struct netlink_ext_ack *extack)
{
	int err;

	err = kmock_module_init();
	if (err)
		return err;
	t->live = kmock_live;
	t->dev = kmock_dev_new(1500);
	t->sch = kmock_qdisc_new(t->dev, &tparq_ops, TPARQ_HANDLE);
	t->q = qdisc_priv(t->sch);
	t->to_free = NULL;
	err = parq_init(t->sch, opt, extack);
	if (err) {
		parq_destroy(t->sch);
		kmock_qdisc_free(t->sch);
		kmock_dev_free(t->dev);
	}
	return err;
}

static inline void tparq_destroy(struct tparq *t)
{
	kfree_skb_list(t->to_free);
	t->to_free = NULL;
	parq_destroy(t->sch);
	kmock_qdisc_free(t->sch);
	kmock_dev_free(t->dev);
}

static inline int tparq_enqueue(struct tparq *t, struct sk_buff *skb)
{
	return parq_enqueue(skb, t->sch, &t->to_free);
}

/* Dequeue one and free it; its length, or 0 if none. */
static inline unsigned int tparq_dequeue(struct tparq *t, u32 *prio)
{
	struct sk_buff *skb = parq_dequeue(t->sch);
	unsigned int len;

	if (!skb)
		return 0;
	len = qdisc_pkt_len(skb);
	if (prio)
		*prio = skb->priority;
	kfree_skb(skb);
	return len;
}

#endif /* _PARQ_TPARQ_H */
