/* SPDX-License-Identifier: GPL-2.0 */
/* A parq qdisc on a mock device, and requests to it, for the tests. */
#ifndef _PARQ_TPARQ_H
#define _PARQ_TPARQ_H

#include <net/netlink.h>
#include <net/pkt_sched.h>

#include "../parq_genl.h"
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

/*
 * parq's init on @dev, as the qdisc layer makes a qdisc: created with its
 * parent, init, then grafted (as the root when @txq < 0, else as mq's
 * child on queue @txq); destroy follows a failed init.
 */
static inline int tparq_init_on(struct tparq *t, struct net_device *dev,
				u32 parent, int txq, struct nlattr *opt,
				struct netlink_ext_ack *extack)
{
	int err;

	err = kmock_module_init();
	if (err)
		return err;
	t->dev = dev;
	t->sch = kmock_qdisc_new(dev, kmock_qdisc_ops,
				 txq < 0 ? TPARQ_HANDLE : 0, parent);
	t->q = qdisc_priv(t->sch);
	t->to_free = NULL;
	err = parq_init(t->sch, opt, extack);
	if (err) {
		parq_destroy(t->sch);
		kmock_qdisc_free(t->sch);
		return err;
	}
	kmock_graft(t->sch, txq);
	return 0;
}

/* A root parq on a device of its own with one queue. */
static inline int tparq_init(struct tparq *t, struct nlattr *opt,
			     struct netlink_ext_ack *extack)
{
	struct net_device *dev = kmock_dev_new(1500, 1);
	int err = tparq_init_on(t, dev, TC_H_ROOT, -1, opt, extack);

	if (err)
		kmock_dev_free(dev);
	return err;
}

/* The qdisc goes (its device stays: kmock_dev_free()). */
static inline void tparq_destroy_qdisc(struct tparq *t)
{
	kfree_skb_list(t->to_free);
	t->to_free = NULL;
	parq_destroy(t->sch);
	kmock_qdisc_free(t->sch);
}

static inline void tparq_destroy(struct tparq *t)
{
	tparq_destroy_qdisc(t);
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

/*
 * A request to the parq family: put attributes in g.skb, then tgenl_do()
 * does what the genl core does with a request for @cmd: finds its
 * operation in the family that registered, parses the attributes with the
 * operation's policy into a table of the operation's size (so that ASan
 * sees a handler read past it), and calls pre_doit, then doit with the
 * genl_info it would make.  Permissions are not checked here.
 */
struct tgenl {
	struct sk_buff		*skb;
	struct nlattr		**tb;
	struct genl_info	info;
	struct netlink_ext_ack	extack;
};

static inline void tgenl_start(struct tgenl *g)
{
	memset(g, 0, sizeof(*g));
	g->skb = kmock_nl_skb(1024);
}

static inline int tgenl_do(struct tgenl *g, u8 cmd)
{
	const struct genl_family *f = kmock_genl_family;
	const struct genl_ops *op = NULL;
	int i, err;

	for (i = 0; f && i < f->n_ops; i++)
		if (f->ops[i].cmd == cmd)
			op = &f->ops[i];
	if (!op || !op->doit)
		return -EOPNOTSUPP;
	free(g->tb);
	g->tb = calloc(op->maxattr + 1, sizeof(*g->tb));
	memset(&g->extack, 0, sizeof(g->extack));
	err = nla_parse(g->tb, op->maxattr, (struct nlattr *)g->skb->data,
			g->skb->len, op->policy, &g->extack);
	if (err)
		return err;
	memset(&g->info, 0, sizeof(g->info));
	g->info.attrs = g->tb;
	g->info.extack = &g->extack;
	write_pnet(&g->info._net, kmock_net);
	if (f->pre_doit) {
		err = f->pre_doit(op, NULL, &g->info);
		if (err)
			return err;
	}
	return op->doit(NULL, &g->info);
}

static inline void tgenl_end(struct tgenl *g)
{
	kfree_skb(g->skb);
	g->skb = NULL;
	free(g->tb);
	g->tb = NULL;
}

/* The attributes of a message of the family. */
static inline int tgenl_parse_msg(struct nlmsghdr *nlh,
				  struct nlattr *tb[PARQ_A_MAX + 1])
{
	struct genlmsghdr *gh = nlmsg_data(nlh);

	return nla_parse_deprecated(tb, PARQ_A_MAX, genlmsg_data(gh),
				    genlmsg_len(gh), NULL, NULL);
}

/* A request setting a credit for 10.0.0.@dst, as parqd sends it. */
static inline void tcredit_req(struct tgenl *g, u8 dst, u32 credit,
			       u64 epoch, u64 lease)
{
	tgenl_start(g);
	nla_put_in_addr(g->skb, PARQ_A_ADDR4, KMOCK_DST(dst));
	nla_put_u32(g->skb, PARQ_A_CREDIT, credit);
	nla_put_u64_64bit(g->skb, PARQ_A_EPOCH, epoch, PARQ_A_PAD);
	nla_put_u64_64bit(g->skb, PARQ_A_LEASE, lease, PARQ_A_PAD);
}

static inline int tcredit_set(u8 dst, u32 credit, u64 epoch, u64 lease)
{
	struct tgenl g;
	int err;

	tcredit_req(&g, dst, credit, epoch, lease);
	err = tgenl_do(&g, PARQ_CMD_CREDIT_SET);
	tgenl_end(&g);
	return err;
}

/* Delete 10.0.0.@dst's credit, or every credit when @dst is 0. */
static inline int tcredit_del(u8 dst)
{
	struct tgenl g;
	int err;

	tgenl_start(&g);
	if (dst)
		nla_put_in_addr(g.skb, PARQ_A_ADDR4, KMOCK_DST(dst));
	err = tgenl_do(&g, PARQ_CMD_CREDIT_DEL);
	tgenl_end(&g);
	return err;
}

#endif /* _PARQ_TPARQ_H */
