// SPDX-License-Identifier: GPL-2.0
/*
 * sch_parq: parallel/local two-class scheduler for shared clusters, with
 * reserved flows.
 *
 * Parallel jobs (MPI-style: small, urgent messages) and local jobs (bulk
 * copies, backups) share a host's interface.  parq keeps them apart:
 *
 * enqueue: classify the packet (tc filters on the qdisc, then skb->priority
 *	of the form <handle>:<minor>, then DSCP in dscp-parallel, then the
 *	default class).  Parallel packets go to a per-flow queue (socket, else
 *	flow hash); local packets to a queue per destination host; packets
 *	of a reserved class
 *	(<handle>:16 and up) to that class's FIFO.  With split-gso (and always
 *	for reserved classes) GSO packets are segmented first.  When the qdisc
 *	is full, local packets are dropped before any other.
 *
 * dequeue: if the shaper's next departure time lies ahead, arm the watchdog
 *	and return.  A reserved class whose next dispatch time (NDT) has come
 *	goes first: the backlogged reserved classes sit in an rb-tree keyed by
 *	(NDT, classid), and the leftmost is dispatched and its NDT advanced by
 *	its inter-dispatch time (IDT).  Otherwise THRESHOLD_send picks between
 *	parallel and local: parallel first, but after every @threshold units
 *	of parallel traffic one unit of local goes.  Inside the parallel class
 *	the backlogged flows, and inside the local class the destinations,
 *	are served by deficit round robin.  A destination under a receiver's
 *	credit (parq_credit.c) that has used its credit for the epoch waits
 *	aside, and does not hold the others back; while every local
 *	destination waits, parallel traffic goes as if local were idle.  When
 *	nothing may go, the watchdog is armed for the earliest NDT or end of
 *	a credit wait.
 *
 * The decisions (which class sends, when to look again, what a full qdisc
 * drops) live in core/parq_policy.c and the arithmetic in core/parq_core.c;
 * the user-space unit tests and benchmarks compile both unchanged.  This
 * file keeps the queues and calls them.
 */
#include <linux/ethtool.h>
#include <linux/hash.h>
#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rbtree.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/dsfield.h>
#include <net/netlink.h>
#include <net/netns/generic.h>
#include <net/pkt_cls.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <linux/parq.h>

#include "core/parq_core.h"
#include "core/parq_policy.h"
#include "parq_compat.h"
#include "parq_credit.h"
#include "parq_genl.h"
#include "parq_monitor.h"

#define PARQ_FLOW_BUCKETS	1024	/* parallel flow queues, power of 2 */
#define PARQ_LOCAL_BUCKETS	256	/* hash chains of local destinations */
#define PARQ_TIMER_SLACK_NS	(10 * NSEC_PER_USEC)

struct parq_skbq {
	struct sk_buff	*head;
	struct sk_buff	*tail;
	u32		qlen;
};

struct parq_flow {
	struct parq_rr_node	rr;
	struct parq_skbq	q;
};

/*
 * The local packets to one destination host (IPv4 or IPv6; packets with
 * neither share the zero address).  It exists while it holds packets, and
 * is then either in the local round robin or waiting for credit.
 */
struct parq_lflow {
	struct parq_rr_node	rr;	/* in lrr unless waiting */
	struct hlist_node	hnode;	/* in lhash */
	struct rb_node		wait;	/* in lwait while waiting */
	struct parq_skbq	q;
	struct parq_addr	dst;
	u64			until;	/* ns: end of its wait */
};

/* Counters of a class, fixed or reserved. */
struct parq_class {
	parq_bstats_t		bstats;
	struct gnet_stats_queue	qstats;
	u32			qlen;
};

/* A reserved flow: class <handle>:N, N >= PARQ_RESV_MINOR_MIN. */
struct parq_resv_class {
	struct Qdisc_class_common	common;	/* classid, hash node */
	struct rb_node			node;	/* in resv_backlog while queued */
	struct parq_resv		r;	/* NDT, IDT, lateness */
	struct parq_skbq		q;
	u64				bw;	/* bytes/s admitted */
	struct parq_class		c;
	struct net_rate_estimator __rcu	*rate_est;
};

/* Everything tc can set on the qdisc, validated as a whole first. */
struct parq_config {
	u64	rate;		/* bytes/s, PARQ_RATE_UNLIMITED: off */
	u64	linkrate;	/* bytes/s, PARQ_LINKRATE_AUTO */
	u64	dscp_parallel;
	u32	threshold;
	u32	limit;
	u32	flow_limit;
	s32	overhead;
	u8	unit;
	u8	split_gso;	/* enum parq_split_gso */
	u8	default_class;
	u8	reservable;	/* percent */
};

struct parq_sched_data {
	/* dequeue hot path */
	struct rb_root_cached	resv_backlog;	/* by (NDT, classid) */
	struct parq_sched	s;		/* policy state, counters */
	struct parq_rr		rr;		/* parallel flows */
	struct parq_rr		lrr;		/* local flows that may send */
	u32			parallel_qlen;
	u32			local_qlen;
	u32			local_flows;	/* local flows with packets */
	u32			local_waiting;	/* of those, waiting for credit */
	u64			lwait_next;	/* ns: earliest end of a wait */
	struct rb_root_cached	lwait;		/* waiting local flows by until */
	u32			resv_backlogged;
	bool			split_gso;

	/* enqueue */
	struct parq_flow	*flows;		/* PARQ_FLOW_BUCKETS */
	struct hlist_head	*lhash;		/* PARQ_LOCAL_BUCKETS */
	u32			lseed;
	struct tcf_proto __rcu	*filter_list;
	struct Qdisc_class_hash	clhash;		/* reserved classes */
	struct parq_config	cfg;

	/* admission control, under RTNL */
	u64			linkrate;	/* effective, bytes/s; 0: none */
	u64			resv_capacity;	/* linkrate x reservable % */
	u64			resv_sum;	/* bytes/s admitted */
	u32			resv_classes;
	bool			skip_bind_walk;	/* see parq_walk() */

	struct parq_class	cls[PARQ_NUM_CLASSES];
	struct tcf_block	*block;
	struct qdisc_watchdog	watchdog;
};

/*
 * A class handle (the unsigned long of Qdisc_class_ops) is the minor of a
 * fixed class, PARQ_CLASS_PARALLEL or PARQ_CLASS_LOCAL, or a pointer to a
 * struct parq_resv_class.
 */
static struct parq_resv_class *parq_resv_of(unsigned long cl)
{
	return cl > PARQ_NUM_CLASSES ? (struct parq_resv_class *)cl : NULL;
}

static bool parq_minor_valid(u32 minor)
{
	return minor == PARQ_CLASS_PARALLEL || minor == PARQ_CLASS_LOCAL;
}

static struct parq_class *parq_stats_of(struct parq_sched_data *q,
					unsigned long cl)
{
	struct parq_resv_class *rc = parq_resv_of(cl);

	return rc ? &rc->c : &q->cls[cl - 1];
}

static struct parq_resv_class *parq_resv_find(struct Qdisc *sch, u32 classid)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct Qdisc_class_common *common;

	common = qdisc_class_find(&q->clhash, classid);
	return common ? container_of(common, struct parq_resv_class, common) :
			NULL;
}

/* --- classification ---------------------------------------------------- */

static int parq_dscp(struct sk_buff *skb)
{
	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP):
		if (!pskb_network_may_pull(skb, sizeof(struct iphdr)))
			return -1;
		return ipv4_get_dsfield(ip_hdr(skb)) >> 2;
	case htons(ETH_P_IPV6):
		if (!pskb_network_may_pull(skb, sizeof(struct ipv6hdr)))
			return -1;
		return ipv6_get_dsfield(ipv6_hdr(skb)) >> 2;
	}
	return -1;
}

/* The class a filter or skb->priority named by its minor, or the default. */
static unsigned long parq_class_of(struct Qdisc *sch, u32 minor)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;

	if (parq_minor_valid(minor))
		return minor;
	if (minor >= PARQ_RESV_MINOR_MIN) {
		rc = parq_resv_find(sch, TC_H_MAKE(sch->handle, minor));
		if (rc)
			return (unsigned long)rc;
	}
	q->s.xs.unknown_class++;
	return q->cfg.default_class;
}

/* Returns the class handle, or 0 when a filter dropped or stole the skb. */
static unsigned long parq_classify(struct sk_buff *skb, struct Qdisc *sch,
				   int *qerr)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct tcf_proto *fl = rcu_dereference_bh(q->filter_list);
	struct tcf_result res;
	int dscp, result;

	*qerr = NET_XMIT_SUCCESS | __NET_XMIT_BYPASS;
	if (fl) {
		result = parq_tcf_classify(skb, fl, &res);
		if (result >= 0) {
#ifdef CONFIG_NET_CLS_ACT
			switch (result) {
			case TC_ACT_QUEUED:
			case TC_ACT_STOLEN:
			case TC_ACT_TRAP:
				*qerr = NET_XMIT_SUCCESS | __NET_XMIT_STOLEN;
				fallthrough;
			case TC_ACT_SHOT:
				return 0;
			}
#endif
			if (!TC_H_MAJ(res.classid) ||
			    TC_H_MAJ(res.classid) == sch->handle)
				return parq_class_of(sch, TC_H_MIN(res.classid));
			return parq_class_of(sch, 0);
		}
	}
	if (TC_H_MAJ(skb->priority) == sch->handle)
		return parq_class_of(sch, TC_H_MIN(skb->priority));
	dscp = parq_dscp(skb);
	if (dscp >= 0 && (q->cfg.dscp_parallel & PARQ_DSCP_BIT(dscp)))
		return PARQ_CLASS_PARALLEL;
	return q->cfg.default_class;
}

/* --- queues -------------------------------------------------------------- */

static struct parq_flow *parq_flow_of(struct parq_sched_data *q,
				      struct sk_buff *skb)
{
	struct sock *sk = skb->sk;
	u32 hash;

	if (sk && sk_fullsock(sk))
		hash = hash_ptr(sk, 32);
	else
		hash = skb_get_hash(skb);
	return &q->flows[hash & (PARQ_FLOW_BUCKETS - 1)];
}

static void parq_skbq_add(struct parq_skbq *pq, struct sk_buff *skb)
{
	skb->next = NULL;
	if (pq->head)
		pq->tail->next = skb;
	else
		pq->head = skb;
	pq->tail = skb;
	pq->qlen++;
}

static struct sk_buff *parq_skbq_pop(struct parq_skbq *pq)
{
	struct sk_buff *skb = pq->head;

	pq->head = skb->next;
	skb_mark_not_on_list(skb);
	pq->qlen--;
	return skb;
}

/* Free every packet of @pq (outside the tree lock when possible). */
static void parq_skbq_purge(struct parq_skbq *pq)
{
	rtnl_kfree_skbs(pq->head, pq->tail);
	pq->head = NULL;
	pq->tail = NULL;
	pq->qlen = 0;
}

/*
 * The packets in parq's own queues.  sch->q.qlen counts also those that
 * the stack parked in sch->gso_skb or sch->skb_bad_txq after a requeue or
 * a parent's peek, which parq_evict() cannot take.
 */
static unsigned int parq_held(const struct Qdisc *sch)
{
	return sch->q.qlen - skb_queue_len(&sch->gso_skb) -
	       skb_queue_len(&sch->skb_bad_txq);
}

static void parq_count_in(struct Qdisc *sch, struct parq_class *c,
			  struct sk_buff *skb)
{
	c->qlen++;
	c->qstats.backlog += qdisc_pkt_len(skb);
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
}

static void parq_count_out(struct Qdisc *sch, struct parq_class *c,
			   struct sk_buff *skb)
{
	c->qlen--;
	c->qstats.backlog -= qdisc_pkt_len(skb);
	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
}

/* --- the local class: a queue per destination ------------------------ */

static struct hlist_head *parq_lhead(struct parq_sched_data *q,
				     const struct parq_addr *dst)
{
	u32 h = jhash2((__force const u32 *)dst->a, ARRAY_SIZE(dst->a),
		       dst->family ^ q->lseed);

	return &q->lhash[h & (PARQ_LOCAL_BUCKETS - 1)];
}

/* The local flow of @skb's destination, made if it has none (then added
 * to the round robin by the caller's first packet); NULL if out of memory.
 */
static struct parq_lflow *parq_lflow_get(struct parq_sched_data *q,
					 struct sk_buff *skb)
{
	struct hlist_head *head;
	struct parq_addr dst;
	struct parq_lflow *f;

	if (!parq_skb_dst(skb, &dst))
		memset(&dst, 0, sizeof(dst));
	head = parq_lhead(q, &dst);
	hlist_for_each_entry(f, head, hnode)
		if (parq_addr_eq(&f->dst, &dst))
			return f;
	f = kzalloc(sizeof(*f), GFP_ATOMIC | __GFP_NOWARN);
	if (!f)
		return NULL;
	f->dst = dst;
	hlist_add_head(&f->hnode, head);
	RB_CLEAR_NODE(&f->wait);
	q->local_flows++;
	return f;
}

static void parq_lflow_free(struct parq_sched_data *q, struct parq_lflow *f)
{
	hlist_del(&f->hnode);
	q->local_flows--;
	kfree(f);
}

static bool parq_lflow_waiting(const struct parq_lflow *f)
{
	return !RB_EMPTY_NODE(&f->wait);
}

static bool parq_lwait_less(struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct parq_lflow, wait)->until <
	       rb_entry(b, struct parq_lflow, wait)->until;
}

/* The local flow whose credit wait ends first, NULL if none waits. */
static struct parq_lflow *parq_lwait_first(struct parq_sched_data *q)
{
	struct rb_node *n = rb_first_cached(&q->lwait);

	return n ? rb_entry(n, struct parq_lflow, wait) : NULL;
}

static void parq_lwait_del(struct parq_sched_data *q, struct parq_lflow *f)
{
	struct parq_lflow *first;

	rb_erase_cached(&f->wait, &q->lwait);
	RB_CLEAR_NODE(&f->wait);
	q->local_waiting--;
	first = parq_lwait_first(q);
	q->lwait_next = first ? first->until : U64_MAX;
}

/* Take the head packet of local flow @f: the one parq_rr_select() chose,
 * or (to evict) the head of the round robin or a waiting flow.
 */
static struct sk_buff *parq_lflow_take(struct Qdisc *sch,
				       struct parq_lflow *f, bool selected)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = parq_skbq_pop(&f->q);
	bool emptied = !f->q.qlen;

	if (selected) {
		parq_rr_charge(&q->lrr, qdisc_pkt_len(skb), emptied);
	} else if (emptied) {
		if (parq_lflow_waiting(f))
			parq_lwait_del(q, f);
		else
			parq_rr_remove(&q->lrr, &f->rr);
	}
	if (emptied)
		parq_lflow_free(q, f);
	q->local_qlen--;
	parq_count_out(sch, &q->cls[PARQ_CLASS_LOCAL - 1], skb);
	return skb;
}

/*
 * Local flows whose credit wait is over go back to the round robin.  The
 * waiting flows are kept in order of the end of their wait, so this costs
 * O(log n) per flow woken, and nothing when none is due.
 */
static void parq_local_wake(struct parq_sched_data *q, u64 now)
{
	struct parq_lflow *f;

	while (now >= q->lwait_next) {
		f = parq_lwait_first(q);
		if (WARN_ON_ONCE(!f)) {	/* lwait_next is the first's until */
			q->lwait_next = U64_MAX;
			break;
		}
		parq_lwait_del(q, f);
		parq_rr_add(&q->lrr, &f->rr);
	}
}

/*
 * The local flow to send from now, its head packet charged to its
 * destination's credit, or NULL when every local flow waits.  A flow over
 * its credit leaves the round robin until its credit may allow it again
 * (the next epoch, or the end of the lease).
 */
static struct parq_lflow *parq_local_next(struct Qdisc *sch, u64 now)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	const struct net *net = dev_net(qdisc_dev(sch));
	struct parq_rr_node *n;
	struct parq_lflow *f;
	u64 until;

	while ((n = parq_rr_select(&q->lrr))) {
		f = container_of(n, struct parq_lflow, rr);
		if (!f->dst.family || !parq_credit_active(net) ||
		    parq_credit_charge(net, &f->dst, qdisc_pkt_len(f->q.head),
				       now, &until) != PARQ_CREDIT_WAIT)
			return f;
		parq_rr_charge(&q->lrr, 0, true);
		f->until = until;
		rb_add_cached(&f->wait, &q->lwait, parq_lwait_less);
		q->local_waiting++;
		q->lwait_next = min(q->lwait_next, until);
		q->s.xs.credit_waits++;
	}
	return NULL;
}

static void parq_local_purge(struct parq_sched_data *q)
{
	struct hlist_node *tmp;
	struct parq_lflow *f;
	unsigned int i;

	if (!q->lhash)		/* init failed before allocating it */
		return;
	for (i = 0; i < PARQ_LOCAL_BUCKETS; i++) {
		hlist_for_each_entry_safe(f, tmp, &q->lhash[i], hnode) {
			parq_skbq_purge(&f->q);
			parq_lflow_free(q, f);
		}
	}
	q->lrr.head = NULL;
	q->lrr.tail = NULL;
	q->lrr.active = 0;
	q->lwait = RB_ROOT_CACHED;
	q->local_waiting = 0;
	q->lwait_next = U64_MAX;
	q->local_qlen = 0;
}

static bool parq_resv_less(struct rb_node *a, const struct rb_node *b)
{
	return parq_resv_before(&rb_entry(a, struct parq_resv_class, node)->r,
				&rb_entry(b, struct parq_resv_class, node)->r);
}

static struct parq_resv_class *parq_resv_first(struct parq_sched_data *q)
{
	struct rb_node *n = rb_first_cached(&q->resv_backlog);

	return n ? rb_entry(n, struct parq_resv_class, node) : NULL;
}

/* A packet for reserved class @rc; @now is read only if it was idle. */
static void parq_resv_enqueue(struct parq_sched_data *q,
			      struct parq_resv_class *rc, struct sk_buff *skb)
{
	if (!rc->q.qlen) {
		parq_resv_wake(&rc->r, ktime_get_ns());
		rb_add_cached(&rc->node, &q->resv_backlog, parq_resv_less);
		q->resv_backlogged++;
	}
	parq_skbq_add(&rc->q, skb);
}

/* Take the head packet of reserved class @rc; the caller re-keys it. */
static struct sk_buff *parq_resv_take(struct Qdisc *sch,
				      struct parq_resv_class *rc)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb;

	rb_erase_cached(&rc->node, &q->resv_backlog);
	skb = parq_skbq_pop(&rc->q);
	parq_count_out(sch, &rc->c, skb);
	if (!rc->q.qlen)
		q->resv_backlogged--;
	return skb;
}

static void parq_resv_requeue(struct parq_sched_data *q,
			      struct parq_resv_class *rc)
{
	if (rc->q.qlen)
		rb_add_cached(&rc->node, &q->resv_backlog, parq_resv_less);
}

/* Take the next packet of the parallel class (DRR over its flows). */
static struct sk_buff *parq_take_parallel(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_flow *flow;
	struct sk_buff *skb;

	flow = container_of(parq_rr_select(&q->rr), struct parq_flow, rr);
	skb = parq_skbq_pop(&flow->q);
	parq_rr_charge(&q->rr, qdisc_pkt_len(skb), !flow->q.qlen);
	q->parallel_qlen--;
	parq_count_out(sch, &q->cls[PARQ_CLASS_PARALLEL - 1], skb);
	return skb;
}

/* Drop one queued packet of class @act (parq_sched_evict() chose it): of
 * local, the destination served next, else one that waits; of the
 * reserved classes, the one due first.  Returns the dropped length.
 */
static unsigned int parq_evict(struct Qdisc *sch, enum parq_act act,
			       struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	struct sk_buff *skb;
	unsigned long cl;
	unsigned int len;

	if (act == PARQ_ACT_LOCAL) {
		cl = PARQ_CLASS_LOCAL;
		skb = parq_lflow_take(sch, q->lrr.head ?
				      container_of(q->lrr.head,
						   struct parq_lflow, rr) :
				      parq_lwait_first(q),
				      false);
	} else if (act == PARQ_ACT_PARALLEL) {
		cl = PARQ_CLASS_PARALLEL;
		skb = parq_take_parallel(sch);
	} else {
		rc = parq_resv_first(q);
		cl = (unsigned long)rc;
		skb = parq_resv_take(sch, rc);
		parq_resv_requeue(q, rc);
	}
	len = qdisc_pkt_len(skb);
	parq_stats_of(q, cl)->qstats.drops++;
	qdisc_drop(skb, sch, to_free);
	return len;
}

static int parq_drop_class(struct sk_buff *skb, struct Qdisc *sch,
			   struct parq_class *c, struct sk_buff **to_free)
{
	c->qstats.drops++;
	return qdisc_drop(skb, sch, to_free);
}

static int parq_drop_new(struct sk_buff *skb, struct Qdisc *sch,
			 struct parq_class *c, u64 *reason,
			 struct sk_buff **to_free)
{
	(*reason)++;
	return parq_drop_class(skb, sch, c, to_free);
}

static int parq_enqueue_one(struct sk_buff *skb, struct Qdisc *sch,
			    unsigned long cl, struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(cl);
	struct parq_class *c = parq_stats_of(q, cl);
	struct parq_flow *flow = NULL;
	struct parq_lflow *lflow = NULL;
	struct parq_skbq *pq = NULL;	/* queue under flow-limit */
	unsigned int evicted = 0;
	struct parq_fill fill;

	if (cl == PARQ_CLASS_PARALLEL) {
		flow = parq_flow_of(q, skb);
		pq = &flow->q;
	} else if (rc) {
		pq = &rc->q;
	} else {
		lflow = parq_lflow_get(q, skb);
		if (!lflow)
			return parq_drop_new(skb, sch, c,
					     &q->s.xs.drop_local_nomem, to_free);
		pq = &lflow->q;
	}
	fill = (struct parq_fill){
		.qlen = sch->q.qlen,
		.limit = q->cfg.limit,
		.flow_qlen = pq->qlen,
		.flow_limit = q->cfg.flow_limit,
		.local_qlen = q->local_qlen,
		.local = lflow,
	};
	switch (parq_sched_admit(&q->s, &fill)) {
	case PARQ_ADMIT_QUEUE:
		break;
	case PARQ_ADMIT_EVICT:
		evicted = parq_evict(sch, PARQ_ACT_LOCAL, to_free);
		break;
	default:
		if (lflow && !lflow->q.qlen)	/* just made for this packet */
			parq_lflow_free(q, lflow);
		return parq_drop_class(skb, sch, c, to_free);
	}
	/* ktime is read only when the shaper needs it. */
	if (!sch->q.qlen && parq_shaper_on(&q->s.shaper))
		parq_sched_wake(&q->s, ktime_get_ns());
	parq_count_in(sch, c, skb);
	if (flow) {
		if (!flow->q.qlen)
			parq_rr_add(&q->rr, &flow->rr);
		parq_skbq_add(&flow->q, skb);
		q->parallel_qlen++;
	} else if (rc) {
		parq_resv_enqueue(q, rc, skb);
	} else {
		if (!lflow->q.qlen)
			parq_rr_add(&q->lrr, &lflow->rr);
		parq_skbq_add(&lflow->q, skb);
		q->local_qlen++;
	}
	/* Told only now, so that parents never see this qdisc empty. */
	if (evicted)
		qdisc_tree_reduce_backlog(sch, 1, evicted);
	return NET_XMIT_SUCCESS;
}

/* Segment a GSO packet and queue its segments in class @cl. */
static int parq_enqueue_segs(struct sk_buff *skb, struct Qdisc *sch,
			     unsigned long cl, struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	unsigned int len = qdisc_pkt_len(skb), seg_len = 0;
	struct sk_buff *segs, *nskb;
	netdev_features_t features;
	int nb = 0;

	features = netif_skb_features(skb);
	segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return parq_drop_new(skb, sch, parq_stats_of(q, cl),
				     &q->s.xs.drop_gso_failed, to_free);

	skb_list_walk_safe(segs, segs, nskb) {
		unsigned int l = segs->len;

		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = l;
		if (parq_enqueue_one(segs, sch, cl, to_free) ==
		    NET_XMIT_SUCCESS) {
			nb++;
			seg_len += l;
		}
	}
	q->s.xs.gso_segments += nb;
	/* The parent accounts one packet of @len; correct it to what we hold
	 * (one segment too: its length is not @len).
	 */
	if (nb > 0)
		qdisc_tree_reduce_backlog(sch, 1 - nb, len - seg_len);
	consume_skb(skb);
	return nb > 0 ? NET_XMIT_SUCCESS : NET_XMIT_DROP;
}

static int parq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	int ret;
	unsigned long cl = parq_classify(skb, sch, &ret);

	if (!cl) {
		if (ret & __NET_XMIT_BYPASS)
			qdisc_qstats_drop(sch);
		q->s.xs.drop_filter++;
		__qdisc_drop(skb, to_free);
		return ret;
	}
	/* Reserved classes always count in MTU-sized packets. */
	if (skb_is_gso(skb) && (q->split_gso || parq_resv_of(cl)))
		return parq_enqueue_segs(skb, sch, cl, to_free);
	return parq_enqueue_one(skb, sch, cl, to_free);
}

/*
 * The next packet, as parq_sched_decide() rules.  The queues are kept here;
 * the policy (shaper gate, reserved before the threshold rule, a local
 * class blocked by credit, the watchdog's deadline) is in core/.
 */
static struct sk_buff *parq_dequeue(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	struct parq_lflow *lf = NULL;
	struct parq_decision d;
	struct parq_view v;
	unsigned int quantum;
	struct sk_buff *skb;
	unsigned long cl;
	u64 now;

	if (!sch->q.qlen)
		return NULL;
	/* Read at each packet: the device's MTU may have changed. */
	quantum = psched_mtu(qdisc_dev(sch));
	parq_rr_set_quantum(&q->rr, quantum);
	parq_rr_set_quantum(&q->lrr, quantum);
	now = ktime_get_ns();

	parq_local_wake(q, now);
	rc = parq_resv_first(q);
	v.resv_ndt = rc ? rc->r.ndt : U64_MAX;
	v.lwait_next = q->lwait_next;
	v.parallel = q->parallel_qlen != 0;
	v.local = q->lrr.active != 0;
	d = parq_sched_decide(&q->s, &v, now);
	if (d.act == PARQ_ACT_LOCAL) {
		lf = parq_local_next(sch, now);
		if (!lf) {	/* every destination is over its credit */
			v.local = false;
			v.lwait_next = q->lwait_next;
			d = parq_sched_decide(&q->s, &v, now);
		}
	}

	switch (d.act) {
	case PARQ_ACT_RESV:
		skb = parq_resv_take(sch, rc);
		parq_resv_dispatch(&rc->r, now, qdisc_pkt_len(skb));
		parq_resv_requeue(q, rc);
		cl = (unsigned long)rc;
		break;
	case PARQ_ACT_PARALLEL:
		skb = parq_take_parallel(sch);
		cl = PARQ_CLASS_PARALLEL;
		break;
	case PARQ_ACT_LOCAL:
		skb = parq_lflow_take(sch, lf, true);
		cl = PARQ_CLASS_LOCAL;
		break;
	case PARQ_ACT_WAIT:
		parq_sched_wait(&q->s);
		qdisc_watchdog_schedule_range_ns(&q->watchdog, d.until,
						 PARQ_TIMER_SLACK_NS);
		return NULL;
	default:	/* sch->q.qlen said there were packets */
		WARN_ON_ONCE(1);
		return NULL;
	}
	parq_sched_sent(&q->s, &d, now, qdisc_pkt_len(skb));
	bstats_update(&parq_stats_of(q, cl)->bstats, skb);
	qdisc_bstats_update(sch, skb);
	return skb;
}

static void parq_purge(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	struct parq_rr_node *n;
	struct parq_flow *flow;
	int i;

	while ((n = q->rr.head)) {
		flow = container_of(n, struct parq_flow, rr);
		parq_rr_remove(&q->rr, n);
		parq_skbq_purge(&flow->q);
	}
	while ((rc = parq_resv_first(q))) {
		rb_erase_cached(&rc->node, &q->resv_backlog);
		parq_skbq_purge(&rc->q);
		rc->c.qlen = 0;
		rc->c.qstats.backlog = 0;
	}
	parq_local_purge(q);
	q->parallel_qlen = 0;
	q->resv_backlogged = 0;
	for (i = 0; i < PARQ_NUM_CLASSES; i++) {
		q->cls[i].qlen = 0;
		q->cls[i].qstats.backlog = 0;
	}
	sch->q.qlen = 0;
	sch->qstats.backlog = 0;
}

static void parq_reset(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);

	parq_purge(sch);
	parq_sched_reset(&q->s);
	qdisc_watchdog_cancel(&q->watchdog);
}

/* --- admission control ------------------------------------------------ */

#ifdef PARQ_NEED_ERR_RING
/*
 * Each namespace has its own ring, so a request's text can only be
 * overwritten by PARQ_ERR_RING later failures in the same namespace
 * between its handler's return and its acknowledgement, never by another
 * namespace's.  The last byte of each buffer is never written: a text read
 * while it is being replaced is garbled at worst, never unterminated.
 */
#define PARQ_ERR_RING	16
#define PARQ_ERR_LEN	192

struct parq_qdisc_net {
	unsigned int	err_next;			/* under RTNL */
	char		err[PARQ_ERR_RING][PARQ_ERR_LEN];
};

static unsigned int parq_qdisc_net_id __read_mostly;

void parq_set_err_fmt(const struct net *net, struct netlink_ext_ack *extack,
		      const char *fmt, ...)
{
	struct parq_qdisc_net *qn = net_generic(net, parq_qdisc_net_id);
	va_list ap;
	char *buf;

	ASSERT_RTNL();
	if (!extack)
		return;
	buf = qn->err[qn->err_next++ % PARQ_ERR_RING];
	va_start(ap, fmt);
	vsnprintf(buf, PARQ_ERR_LEN - 1, fmt, ap);
	va_end(ap);
	extack->_msg = buf;
}

static struct pernet_operations parq_qdisc_net_ops = {
	.id	= &parq_qdisc_net_id,
	.size	= sizeof(struct parq_qdisc_net),
};
#endif

/* The device's link speed in bytes/s, 0 if unknown.  Under RTNL. */
static u64 parq_link_speed(struct net_device *dev)
{
	struct ethtool_link_ksettings ks;

	if (__ethtool_get_link_ksettings(dev, &ks) ||
	    !ks.base.speed || ks.base.speed == (u32)SPEED_UNKNOWN)
		return 0;
	return (u64)ks.base.speed * 1000000 / 8;
}

/*
 * The tx queues that share the link with @sch: under a root that gives
 * each tx queue a qdisc of its own (mq, mqprio, taprio: those with an
 * attach operation), every child sends on one of the device's queues.
 * Under RTNL.
 */
static unsigned int parq_link_sharers(struct Qdisc *sch)
{
	struct net_device *dev = qdisc_dev(sch);
	struct Qdisc *root = rtnl_dereference(dev->qdisc);

	if (root == sch || !root->ops->attach || dev->real_num_tx_queues < 1)
		return 1;
	return dev->real_num_tx_queues;
}

/*
 * What admission control divides: linkrate, else rate, else this qdisc's
 * share of the link speed (so that the children of mq cannot admit N
 * times the link between them).
 */
static u64 parq_linkrate(struct Qdisc *sch, const struct parq_config *cfg)
{
	if (cfg->linkrate != PARQ_LINKRATE_AUTO)
		return cfg->linkrate;
	if (cfg->rate != PARQ_RATE_UNLIMITED)
		return cfg->rate;
	return div_u64(parq_link_speed(qdisc_dev(sch)),
		       parq_link_sharers(sch));
}

/* --- configuration --------------------------------------------------- */

static struct netlink_range_validation parq_threshold_range = {
	.min = 1, .max = PARQ_THRESHOLD_INF,
};

static struct netlink_range_validation parq_rate_range = {
	.min = 1, .max = PARQ_RATE_UNLIMITED,
};

static struct netlink_range_validation parq_limit_range = {
	.min = 1, .max = PARQ_LIMIT_MAX,
};

static const struct nla_policy parq_policy[TCA_PARQ_MAX + 1] = {
	[TCA_PARQ_PAD]		= { .type = NLA_REJECT },
	[TCA_PARQ_THRESHOLD]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&parq_threshold_range),
	[TCA_PARQ_UNIT]		= NLA_POLICY_MAX(NLA_U8, PARQ_UNIT_MAX),
	[TCA_PARQ_RATE]		= NLA_POLICY_FULL_RANGE(NLA_U64,
							&parq_rate_range),
	[TCA_PARQ_OVERHEAD]	= NLA_POLICY_RANGE(NLA_S32, PARQ_OVERHEAD_MIN,
						   PARQ_OVERHEAD_MAX),
	[TCA_PARQ_SPLIT_GSO]	= NLA_POLICY_MAX(NLA_U8, PARQ_SPLIT_GSO_MAX),
	[TCA_PARQ_LIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&parq_limit_range),
	[TCA_PARQ_FLOW_LIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32,
							&parq_limit_range),
	[TCA_PARQ_DSCP_PARALLEL] = { .type = NLA_U64 },
	[TCA_PARQ_DEFAULT_CLASS] = NLA_POLICY_RANGE(NLA_U8, PARQ_CLASS_PARALLEL,
						    PARQ_CLASS_LOCAL),
	[TCA_PARQ_LINKRATE]	= NLA_POLICY_FULL_RANGE(NLA_U64,
							&parq_rate_range),
	[TCA_PARQ_RESERVABLE]	= NLA_POLICY_RANGE(NLA_U8, 1, 100),
};

/* What a rejected attribute means, in the words of tc-parq(8). */
static const char * const parq_attr_err[TCA_PARQ_MAX + 1] = {
	[TCA_PARQ_PAD]		 = "parq: unexpected padding attribute",
	[TCA_PARQ_THRESHOLD]	 = "parq: threshold must be 1..65535 or inf",
	[TCA_PARQ_UNIT]		 = "parq: unit must be bytes or packets",
	[TCA_PARQ_RATE]		 = "parq: rate must be 1 byte/s to 1.6Tbit, or unlimited",
	[TCA_PARQ_OVERHEAD]	 = "parq: overhead must be -64..256 bytes",
	[TCA_PARQ_SPLIT_GSO]	 = "parq: invalid split-gso mode",
	[TCA_PARQ_LIMIT]	 = "parq: limit must be 1..1000000 packets",
	[TCA_PARQ_FLOW_LIMIT]	 = "parq: flow-limit must be 1..1000000 packets",
	[TCA_PARQ_DSCP_PARALLEL] = "parq: dscp-parallel must be a 64-bit mask",
	[TCA_PARQ_DEFAULT_CLASS] = "parq: default must be parallel (1) or local (2)",
	[TCA_PARQ_LINKRATE]	 = "parq: linkrate must be 1 byte/s to 1.6Tbit, or auto",
	[TCA_PARQ_RESERVABLE]	 = "parq: reservable must be 1..100 percent",
};

static struct netlink_range_validation parq_idt_range = {
	.min = 1, .max = PARQ_IDT_MAX,
};

static struct netlink_range_validation parq_class_rate_range = {
	.min = 1, .max = PARQ_RATE_MAX,
};

static const struct nla_policy parq_class_policy[TCA_PARQ_CLASS_MAX + 1] = {
	[TCA_PARQ_CLASS_PAD]	= { .type = NLA_REJECT },
	[TCA_PARQ_CLASS_RATE]	= NLA_POLICY_FULL_RANGE(NLA_U64,
							&parq_class_rate_range),
	[TCA_PARQ_CLASS_IDT]	= NLA_POLICY_FULL_RANGE(NLA_U64,
							&parq_idt_range),
};

static const char * const parq_class_attr_err[TCA_PARQ_CLASS_MAX + 1] = {
	[TCA_PARQ_CLASS_PAD]	= "parq: unexpected padding attribute",
	[TCA_PARQ_CLASS_RATE]	= "parq: class rate must be 1 byte/s to 1.6Tbit",
	[TCA_PARQ_CLASS_IDT]	= "parq: class idt must be 1ns to 10s",
};

/* Replace the policy's generic message by one naming the parameter. */
static void parq_name_bad_attr(const struct nlattr *opt,
			       const char * const *msgs, int maxtype,
			       struct netlink_ext_ack *extack)
{
	int type;

	if (!extack || !extack->bad_attr || extack->bad_attr == opt)
		return;
	type = nla_type(extack->bad_attr);
	if (type <= maxtype && msgs[type])
		extack->_msg = msgs[type];
}

static void parq_config_default(struct parq_config *cfg)
{
	cfg->rate = PARQ_RATE_UNLIMITED;
	cfg->linkrate = PARQ_LINKRATE_AUTO;
	cfg->dscp_parallel = PARQ_DSCP_DEFAULT;
	cfg->threshold = PARQ_THRESHOLD_DEFAULT;
	cfg->limit = PARQ_LIMIT_DEFAULT;
	cfg->flow_limit = PARQ_FLOW_LIMIT_DEFAULT;
	cfg->overhead = 0;
	cfg->unit = PARQ_UNIT_BYTES;
	cfg->split_gso = PARQ_SPLIT_GSO_AUTO;
	cfg->default_class = PARQ_CLASS_LOCAL;
	cfg->reservable = PARQ_RESERVABLE_DEFAULT;
}

/* Overlay the attributes of a request on @cfg and check the result. */
static int parq_config_parse(struct Qdisc *sch, struct parq_config *cfg,
			     struct nlattr **tb, u64 *linkrate,
			     struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 capacity;

	if (tb[TCA_PARQ_THRESHOLD])
		cfg->threshold = nla_get_u32(tb[TCA_PARQ_THRESHOLD]);
	if (tb[TCA_PARQ_UNIT])
		cfg->unit = nla_get_u8(tb[TCA_PARQ_UNIT]);
	if (tb[TCA_PARQ_RATE])
		cfg->rate = nla_get_u64(tb[TCA_PARQ_RATE]);
	if (tb[TCA_PARQ_OVERHEAD])
		cfg->overhead = nla_get_s32(tb[TCA_PARQ_OVERHEAD]);
	if (tb[TCA_PARQ_SPLIT_GSO])
		cfg->split_gso = nla_get_u8(tb[TCA_PARQ_SPLIT_GSO]);
	if (tb[TCA_PARQ_LIMIT])
		cfg->limit = nla_get_u32(tb[TCA_PARQ_LIMIT]);
	if (tb[TCA_PARQ_FLOW_LIMIT])
		cfg->flow_limit = nla_get_u32(tb[TCA_PARQ_FLOW_LIMIT]);
	if (tb[TCA_PARQ_DSCP_PARALLEL])
		cfg->dscp_parallel = nla_get_u64(tb[TCA_PARQ_DSCP_PARALLEL]);
	if (tb[TCA_PARQ_DEFAULT_CLASS])
		cfg->default_class = nla_get_u8(tb[TCA_PARQ_DEFAULT_CLASS]);
	if (tb[TCA_PARQ_LINKRATE])
		cfg->linkrate = nla_get_u64(tb[TCA_PARQ_LINKRATE]);
	if (tb[TCA_PARQ_RESERVABLE])
		cfg->reservable = nla_get_u8(tb[TCA_PARQ_RESERVABLE]);

	if (cfg->flow_limit > cfg->limit) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_PARQ_FLOW_LIMIT] ?:
				    tb[TCA_PARQ_LIMIT],
				    "parq: flow-limit must not exceed limit");
		return -EINVAL;
	}
	*linkrate = parq_linkrate(sch, cfg);
	capacity = parq_resv_capacity(*linkrate, cfg->reservable);
	if (q->resv_sum > capacity) {
		q->s.xs.resv_rejects++;
		parq_set_err_fmt(dev_net(qdisc_dev(sch)), extack,
				 "parq: %llu bit/s reservable (linkrate x reservable) is below the %llu bit/s already reserved",
				 capacity * 8, q->resv_sum * 8);
		return -EINVAL;
	}
	return 0;
}

static bool parq_split_gso(const struct parq_config *cfg)
{
	if (cfg->split_gso == PARQ_SPLIT_GSO_AUTO)
		return cfg->rate != PARQ_RATE_UNLIMITED;
	return cfg->split_gso == PARQ_SPLIT_GSO_ON;
}

/* Make @cfg the running configuration.  Caller holds the tree lock. */
static void parq_config_apply(struct Qdisc *sch, const struct parq_config *cfg,
			      u64 linkrate)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 rate = cfg->rate == PARQ_RATE_UNLIMITED ? 0 : cfg->rate;

	if (cfg->threshold != q->cfg.threshold || cfg->unit != q->cfg.unit)
		parq_thresh_init(&q->s.thresh, cfg->threshold, cfg->unit);
	parq_shaper_set(&q->s.shaper, rate, cfg->overhead, PARQ_CATCHUP_NS,
			ktime_get_ns());
	q->split_gso = parq_split_gso(cfg);
	q->linkrate = linkrate;
	q->resv_capacity = parq_resv_capacity(linkrate, cfg->reservable);
	q->cfg = *cfg;
}

static int parq_change(struct Qdisc *sch, struct nlattr *opt,
		       struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_PARQ_MAX + 1];
	unsigned int dropped = 0, dropped_len = 0;
	struct sk_buff *to_free = NULL;
	struct parq_config cfg;
	enum parq_act act;
	u64 linkrate;
	int err;

	if (!opt)
		return 0;
	err = nla_parse_nested(tb, TCA_PARQ_MAX, opt, parq_policy, extack);
	if (err) {
		parq_name_bad_attr(opt, parq_attr_err, TCA_PARQ_MAX, extack);
		return err;
	}
	cfg = q->cfg;
	err = parq_config_parse(sch, &cfg, tb, &linkrate, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	parq_config_apply(sch, &cfg, linkrate);
	while (parq_held(sch) > cfg.limit) {
		act = parq_sched_evict(&q->s, q->local_qlen, q->parallel_qlen);
		dropped_len += parq_evict(sch, act, &to_free);
		dropped++;
	}
	qdisc_tree_reduce_backlog(sch, dropped, dropped_len);
	/* A wait armed under the old configuration may no longer hold. */
	if (sch->q.qlen)
		qdisc_watchdog_schedule_range_ns(&q->watchdog, ktime_get_ns(),
						 0);
	sch_tree_unlock(sch);
	kfree_skb_list(to_free);
	return 0;
}

static int parq_init(struct Qdisc *sch, struct nlattr *opt,
		     struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_config cfg;
	int i, err;

	/* First: destroy() cancels the watchdog even if init fails. */
	qdisc_watchdog_init(&q->watchdog, sch);
	for (i = 0; i < PARQ_NUM_CLASSES; i++)
		parq_bstats_init(&q->cls[i].bstats);
	q->resv_backlog = RB_ROOT_CACHED;
	parq_rr_init(&q->rr, psched_mtu(qdisc_dev(sch)));
	parq_rr_init(&q->lrr, psched_mtu(qdisc_dev(sch)));
	q->lwait = RB_ROOT_CACHED;
	q->lwait_next = U64_MAX;
	q->lseed = get_random_u32();

	err = qdisc_class_hash_init(&q->clhash);
	if (err)
		return err;
	err = tcf_block_get(&q->block, &q->filter_list, sch, extack);
	if (err)
		return err;
	q->flows = kvcalloc(PARQ_FLOW_BUCKETS, sizeof(*q->flows), GFP_KERNEL_ACCOUNT);
	q->lhash = kvcalloc(PARQ_LOCAL_BUCKETS, sizeof(*q->lhash), GFP_KERNEL_ACCOUNT);
	if (!q->flows || !q->lhash)
		return -ENOMEM;

	parq_config_default(&cfg);
	q->cfg = cfg;
	q->cfg.threshold = 0;	/* forces parq_thresh_init() */
	parq_config_apply(sch, &cfg, parq_linkrate(sch, &cfg));
	return parq_change(sch, opt, extack);
}

static void parq_resv_free(struct parq_resv_class *rc)
{
	gen_kill_estimator(&rc->rate_est);
	kfree(rc);
}

static void parq_destroy(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	struct hlist_node *next;
	unsigned int i;

	qdisc_watchdog_cancel(&q->watchdog);
	tcf_block_put(q->block);
	if (q->flows)
		parq_purge(sch);
	kvfree(q->flows);
	kvfree(q->lhash);
	if (!q->clhash.hash)
		return;
	for (i = 0; i < q->clhash.hashsize; i++)
		hlist_for_each_entry_safe(rc, next, &q->clhash.hash[i],
					  common.hnode)
			parq_resv_free(rc);
	qdisc_class_hash_destroy(&q->clhash);
}

static int parq_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	const struct parq_config *cfg = &q->cfg;
	struct nlattr *opts;

	opts = nla_nest_start(skb, TCA_OPTIONS);
	if (!opts)
		return -EMSGSIZE;
	if (nla_put_u32(skb, TCA_PARQ_THRESHOLD, cfg->threshold) ||
	    nla_put_u8(skb, TCA_PARQ_UNIT, cfg->unit) ||
	    nla_put_u64_64bit(skb, TCA_PARQ_RATE, cfg->rate, TCA_PARQ_PAD) ||
	    nla_put_s32(skb, TCA_PARQ_OVERHEAD, cfg->overhead) ||
	    nla_put_u8(skb, TCA_PARQ_SPLIT_GSO, q->split_gso ?
		       PARQ_SPLIT_GSO_ON : PARQ_SPLIT_GSO_OFF) ||
	    nla_put_u32(skb, TCA_PARQ_LIMIT, cfg->limit) ||
	    nla_put_u32(skb, TCA_PARQ_FLOW_LIMIT, cfg->flow_limit) ||
	    nla_put_u64_64bit(skb, TCA_PARQ_DSCP_PARALLEL, cfg->dscp_parallel,
			      TCA_PARQ_PAD) ||
	    nla_put_u8(skb, TCA_PARQ_DEFAULT_CLASS, cfg->default_class) ||
	    nla_put_u64_64bit(skb, TCA_PARQ_LINKRATE, q->linkrate,
			      TCA_PARQ_PAD) ||
	    nla_put_u8(skb, TCA_PARQ_RESERVABLE, cfg->reservable)) {
		nla_nest_cancel(skb, opts);
		return -EMSGSIZE;
	}
	return nla_nest_end(skb, opts);
}

static int parq_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 now = ktime_get_ns();
	struct tc_parq_xstats xs;
	struct rb_node *n;
	u32 due = 0;

	sch_tree_lock(sch);
	xs = q->s.xs;
	xs.flows_active = q->rr.active;
	xs.local_flows = q->local_flows;
	xs.local_waiting = q->local_waiting;
	xs.resv_sum_rate = q->resv_sum;
	xs.resv_capacity = q->resv_capacity;
	xs.resv_classes = q->resv_classes;
	xs.resv_backlogged = q->resv_backlogged;
	for (n = rb_first_cached(&q->resv_backlog); n; n = rb_next(n)) {
		if (!parq_resv_eligible(&rb_entry(n, struct parq_resv_class,
						  node)->r, now))
			break;
		due++;
	}
	xs.resv_throttled = q->resv_backlogged - due;
	sch_tree_unlock(sch);
	xs.version = PARQ_XSTATS_VERSION;
	return gnet_stats_copy_app(d, &xs, sizeof(xs));
}

/* --- classes: 1:1 parallel, 1:2 local, 1:16 and up reserved ------------ */

static struct Qdisc *parq_leaf(struct Qdisc *sch, unsigned long arg)
{
	return NULL;
}

static unsigned long parq_find(struct Qdisc *sch, u32 classid)
{
	u32 minor = TC_H_MIN(classid);

	if (TC_H_MAJ(classid) && TC_H_MAJ(classid) != sch->handle)
		return 0;
	if (parq_minor_valid(minor))
		return minor;
	return (unsigned long)parq_resv_find(sch, TC_H_MAKE(sch->handle,
							    minor));
}

/* Parse and admit a reservation: on success *@rate, *@idt and *@bw hold it
 * and *@capacity the reservable bytes/s it was admitted against.
 */
static int parq_resv_parse(struct Qdisc *sch, struct parq_resv_class *rc,
			   struct nlattr *opt, u64 *rate, u64 *idt, u64 *bw,
			   u64 *capacity, struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_PARQ_CLASS_MAX + 1];
	u64 old_bw = rc ? rc->bw : 0;
	int err;

	if (!opt) {
		NL_SET_ERR_MSG(extack, "parq: a reserved class needs rate or idt");
		return -EINVAL;
	}
	err = nla_parse_nested(tb, TCA_PARQ_CLASS_MAX, opt, parq_class_policy,
			       extack);
	if (err) {
		parq_name_bad_attr(opt, parq_class_attr_err,
				   TCA_PARQ_CLASS_MAX, extack);
		return err;
	}
	if (!tb[TCA_PARQ_CLASS_RATE] == !tb[TCA_PARQ_CLASS_IDT]) {
		NL_SET_ERR_MSG(extack, "parq: give exactly one of rate and idt");
		return -EINVAL;
	}
	*rate = tb[TCA_PARQ_CLASS_RATE] ?
		nla_get_u64(tb[TCA_PARQ_CLASS_RATE]) : 0;
	*idt = tb[TCA_PARQ_CLASS_IDT] ? nla_get_u64(tb[TCA_PARQ_CLASS_IDT]) : 0;
	*bw = parq_resv_bw(*rate, *idt, psched_mtu(qdisc_dev(sch)));
	*capacity = parq_resv_capacity(parq_linkrate(sch, &q->cfg),
				       q->cfg.reservable);
	if (!*capacity) {
		q->s.xs.resv_rejects++;
		NL_SET_ERR_MSG(extack,
			       "parq: no link rate known for admission control: set linkrate (or rate) on the qdisc");
		return -EINVAL;
	}
	if (!parq_resv_admit(q->resv_sum, old_bw, *bw, *capacity)) {
		u64 others = q->resv_sum - old_bw;

		q->s.xs.resv_rejects++;
		parq_set_err_fmt(dev_net(qdisc_dev(sch)), extack,
				 "parq: reservation of %llu bit/s refused: %llu bit/s free of %llu bit/s reservable, %llu bit/s reserved",
				 *bw * 8,
				 (*capacity > others ? *capacity - others : 0) * 8,
				 *capacity * 8, q->resv_sum * 8);
		return -ENOSPC;
	}
	return 0;
}

static int parq_class_change(struct Qdisc *sch, u32 classid, u32 parentid,
			     struct nlattr **tca, unsigned long *arg,
			     struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(*arg);
	u64 rate, idt, bw, capacity;
	int err;

	if (*arg && !rc) {
		NL_SET_ERR_MSG(extack,
			       "parq: classes 1 (parallel) and 2 (local) are fixed; reserved classes are <handle>:16 and up");
		return -EOPNOTSUPP;
	}
	if (!rc) {
		if (TC_H_MIN(classid) < PARQ_RESV_MINOR_MIN ||
		    TC_H_MAJ(classid) != sch->handle) {
			NL_SET_ERR_MSG(extack,
				       "parq: reserved classes are <handle>:16 and up; 1 and 2 are fixed");
			return -EINVAL;
		}
		if (parentid && parentid != TC_H_ROOT &&
		    parentid != sch->handle) {
			NL_SET_ERR_MSG(extack,
				       "parq: reserved classes hang off the qdisc (parent <handle>:)");
			return -EINVAL;
		}
	}
	err = parq_resv_parse(sch, rc, tca[TCA_OPTIONS], &rate, &idt, &bw,
			      &capacity, extack);
	if (err)
		return err;

	if (rc) {
		if (tca[TCA_RATE]) {
			err = parq_replace_estimator(sch, &rc->c.bstats,
						     &rc->rate_est,
						     tca[TCA_RATE]);
			if (err) {
				NL_SET_ERR_MSG(extack,
					       "parq: invalid rate estimator");
				return err;
			}
		}
	} else {
		rc = kzalloc(sizeof(*rc), GFP_KERNEL_ACCOUNT);
		if (!rc)
			return -ENOMEM;
		parq_bstats_init(&rc->c.bstats);
		rc->common.classid = classid;
		rc->r.classid = classid;
		if (tca[TCA_RATE]) {
			err = parq_replace_estimator(sch, &rc->c.bstats,
						     &rc->rate_est,
						     tca[TCA_RATE]);
			if (err) {
				NL_SET_ERR_MSG(extack,
					       "parq: invalid rate estimator");
				kfree(rc);
				return err;
			}
		}
	}

	sch_tree_lock(sch);
	if (rc->r.rate != rate || rc->r.idt != idt) {
		/* A new pace: an NDT set at the old one may not hold it back. */
		if (rc->q.qlen)
			rb_erase_cached(&rc->node, &q->resv_backlog);
		parq_resv_set(&rc->r, rate, idt);
		parq_resv_rebase(&rc->r, ktime_get_ns());
		if (rc->q.qlen) {
			rb_add_cached(&rc->node, &q->resv_backlog,
				      parq_resv_less);
			qdisc_watchdog_schedule_range_ns(&q->watchdog,
							 rc->r.ndt, 0);
		}
	}
	q->resv_sum = q->resv_sum - rc->bw + bw;
	q->resv_capacity = capacity;
	rc->bw = bw;
	if (!*arg) {
		qdisc_class_hash_insert(&q->clhash, &rc->common);
		q->resv_classes++;
	}
	sch_tree_unlock(sch);
	if (!*arg) {
		qdisc_class_hash_grow(sch, &q->clhash);
		q->skip_bind_walk = true;
	}
	*arg = (unsigned long)rc;
	return 0;
}

static int parq_class_delete(PARQ_CLASS_DELETE_ARGS)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(arg);
	unsigned int qlen, backlog;

	q->skip_bind_walk = true;	/* even if refused: see parq_walk() */
	if (!rc) {
		NL_SET_ERR_MSG(PARQ_CLASS_DELETE_EXTACK,
			       "parq: classes 1 (parallel) and 2 (local) are fixed; they cannot be deleted");
		return -EOPNOTSUPP;
	}
	sch_tree_lock(sch);
	qlen = rc->q.qlen;
	backlog = rc->c.qstats.backlog;
	if (qlen) {
		rb_erase_cached(&rc->node, &q->resv_backlog);
		q->resv_backlogged--;
		sch->q.qlen -= qlen;
		sch->qstats.backlog -= backlog;
		__qdisc_qstats_drop(sch, qlen);	/* freed with the class */
		qdisc_tree_reduce_backlog(sch, qlen, backlog);
	}
	qdisc_class_hash_remove(&q->clhash, &rc->common);
	q->resv_sum -= rc->bw;
	q->resv_classes--;
	sch_tree_unlock(sch);
	parq_skbq_purge(&rc->q);
	parq_resv_free(rc);
	return 0;
}

static int parq_walk_one(struct Qdisc *sch, unsigned long cl,
			 struct qdisc_walker *arg)
{
	if (arg->count < arg->skip) {
		arg->count++;
		return 0;
	}
	if (arg->fn(sch, cl, arg) < 0) {
		arg->stop = 1;
		return -1;
	}
	arg->count++;
	return 0;
}

/*
 * After every class add and every class delete, tc_ctl_tclass() walks all
 * the classes (tc_bind_tclass(), under the same RTNL hold) to re-bind the
 * filters attached to each class's block.  parq classes have no block
 * (parq_tcf_block() gives none for cl != 0), so that walk can do nothing;
 * but visiting every class makes building N reserved classes cost O(N^2):
 * 65 000 classes took minutes.  The first walk after parq_class_change()
 * created a class or parq_class_delete() ran is that one, and is skipped.
 */
static void parq_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	unsigned long cl;
	unsigned int i;

	if (q->skip_bind_walk) {
		q->skip_bind_walk = false;
		return;
	}
	if (arg->stop)
		return;
	for (cl = PARQ_CLASS_PARALLEL; cl <= PARQ_CLASS_LOCAL; cl++)
		if (parq_walk_one(sch, cl, arg))
			return;
	for (i = 0; i < q->clhash.hashsize; i++)
		hlist_for_each_entry(rc, &q->clhash.hash[i], common.hnode)
			if (parq_walk_one(sch, (unsigned long)rc, arg))
				return;
}

static struct tcf_block *parq_tcf_block(struct Qdisc *sch, unsigned long cl,
					struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);

	if (cl) {
		NL_SET_ERR_MSG(extack,
			       "parq: attach filters to the qdisc (parent <handle>:), not to a class");
		return NULL;
	}
	return q->block;
}

static unsigned long parq_bind_tcf(struct Qdisc *sch, unsigned long parent,
				   u32 classid)
{
	return parq_find(sch, classid);
}

static void parq_unbind_tcf(struct Qdisc *sch, unsigned long arg)
{
}

static int parq_class_dump(struct Qdisc *sch, unsigned long cl,
			   struct sk_buff *skb, struct tcmsg *tcm)
{
	struct parq_resv_class *rc = parq_resv_of(cl);
	struct nlattr *opts;
	int err;

	tcm->tcm_parent = TC_H_ROOT;
	tcm->tcm_handle = rc ? rc->common.classid : TC_H_MAKE(sch->handle, cl);
	tcm->tcm_info = 0;
	if (!rc)
		return 0;
	opts = nla_nest_start(skb, TCA_OPTIONS);
	if (!opts)
		return -EMSGSIZE;
	if (rc->r.idt)
		err = nla_put_u64_64bit(skb, TCA_PARQ_CLASS_IDT, rc->r.idt,
					TCA_PARQ_CLASS_PAD);
	else
		err = nla_put_u64_64bit(skb, TCA_PARQ_CLASS_RATE, rc->r.rate,
					TCA_PARQ_CLASS_PAD);
	if (err) {
		nla_nest_cancel(skb, opts);
		return -EMSGSIZE;
	}
	return nla_nest_end(skb, opts);
}

static int parq_class_dump_stats(struct Qdisc *sch, unsigned long cl,
				 struct gnet_dump *d)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(cl);
	struct parq_class *c = parq_stats_of(q, cl);
	struct tc_parq_class_xstats xs = {
		.version = PARQ_XSTATS_CLASS | PARQ_CLASS_XSTATS_VERSION,
	};

	if (parq_copy_basic(sch, d, &c->bstats) < 0 ||
	    (rc && gnet_stats_copy_rate_est(d, &rc->rate_est) < 0) ||
	    gnet_stats_copy_queue(d, NULL, &c->qstats, c->qlen) < 0)
		return -1;
	if (!rc)
		return 0;
	sch_tree_lock(sch);
	xs.rate = rc->bw;
	xs.idt = rc->r.idt;
	xs.dispatches = rc->r.dispatches;
	xs.lateness_max = rc->r.lateness_max;
	xs.lateness_sum = rc->r.lateness_sum;
	sch_tree_unlock(sch);
	return gnet_stats_copy_app(d, &xs, sizeof(xs));
}

static const struct Qdisc_class_ops parq_class_ops = {
	.leaf		= parq_leaf,
	.find		= parq_find,
	.change		= parq_class_change,
	.delete		= parq_class_delete,
	.walk		= parq_walk,
	.tcf_block	= parq_tcf_block,
	.bind_tcf	= parq_bind_tcf,
	.unbind_tcf	= parq_unbind_tcf,
	.dump		= parq_class_dump,
	.dump_stats	= parq_class_dump_stats,
};

static struct Qdisc_ops parq_qdisc_ops __read_mostly = {
	.id		= "parq",
	.cl_ops		= &parq_class_ops,
	.priv_size	= sizeof(struct parq_sched_data),
	.enqueue	= parq_enqueue,
	.dequeue	= parq_dequeue,
	.peek		= qdisc_peek_dequeued,
	.init		= parq_init,
	.reset		= parq_reset,
	.destroy	= parq_destroy,
	.change		= parq_change,
	.dump		= parq_dump,
	.dump_stats	= parq_dump_stats,
	.owner		= THIS_MODULE,
};

static int __init parq_module_init(void)
{
	int err;

	/* The family first, closed: the monitor's reports go through it. */
	err = parq_genl_init();
	if (err)
		return err;
	err = parq_credit_init();
	if (err)
		goto err_genl;
	err = parq_monitor_init();
	if (err)
		goto err_credit;
	parq_genl_set_open(true);
#ifdef PARQ_NEED_ERR_RING
	err = register_pernet_subsys(&parq_qdisc_net_ops);
	if (err)
		goto err_open;
#endif
	err = register_qdisc(&parq_qdisc_ops);
	if (err)
		goto err_ring;
	return 0;

err_ring:
#ifdef PARQ_NEED_ERR_RING
	unregister_pernet_subsys(&parq_qdisc_net_ops);
err_open:
#endif
	parq_genl_set_open(false);
	parq_monitor_exit();
err_credit:
	parq_credit_exit();
err_genl:
	parq_genl_exit();
	return err;
}

/*
 * The reverse: no request reaches the tables once they start to go, and the
 * family outlives the monitor, whose timer may still send a report.
 */
static void __exit parq_module_exit(void)
{
	unregister_qdisc(&parq_qdisc_ops);
#ifdef PARQ_NEED_ERR_RING
	unregister_pernet_subsys(&parq_qdisc_net_ops);
#endif
	parq_genl_set_open(false);
	parq_monitor_exit();
	parq_credit_exit();
	parq_genl_exit();
	/* Every entry queued for kfree_rcu() is freed before the module goes. */
	rcu_barrier();
}

module_init(parq_module_init);
module_exit(parq_module_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("parq developers");
MODULE_DESCRIPTION("parq: parallel/local packet scheduler with reserved flows, receiver-side credits and a receive monitor");
PARQ_MODULE_ALIAS();
