/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sch_parq's private header: the qdisc's state and the functions its
 * four files share.
 *
 *   parq_qdisc.c     the operations table, module init and exit
 *   parq_datapath.c  classification, the queues, enqueue and dequeue
 *   parq_config.c    the qdisc's parameters: policy, parse, apply, dump
 *   parq_class.c     the classes: reserved classes with admission control
 *
 * The decisions themselves are in core/parq_policy.h, the arithmetic in
 * core/parq_core.c.
 *
 * Adding a qdisc parameter (TCA_PARQ_*): see <parq/params.h>.
 */
#ifndef _PARQ_QDISC_H
#define _PARQ_QDISC_H

#include <linux/rbtree.h>
#include <linux/skbuff.h>
#include <net/gen_stats.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>
#include <linux/parq.h>
#include <parq/params.h>

#include "core/parq_core.h"
#include "core/parq_policy.h"
#include "parq_compat.h"
#include "parq_credit.h"

#define PARQ_FLOW_BUCKETS	1024	/* parallel flow queues, power of 2 */
/* rb-trees of local destinations: limit / 8, a power of 2, in this range */
#define PARQ_LOCAL_BUCKETS_MIN	1024
#define PARQ_LOCAL_BUCKETS_MAX	131072
/* An empty destination queue is kept this long for its next packet. */
#define PARQ_LOCAL_IDLE_AGE	(3 * HZ)
/* At most this many stale queues freed by one lookup. */
#define PARQ_LOCAL_GC_MAX	8
#define PARQ_TIMER_SLACK_NS	(10 * NSEC_PER_USEC)

/* What parq keeps in the control block of a packet it holds. */
struct parq_skb_cb {
	u64	enqueued;	/* ns: when it came in */
};

static inline struct parq_skb_cb *parq_skb_cb(const struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct parq_skb_cb));
	return (struct parq_skb_cb *)qdisc_skb_cb(skb)->data;
}

/* How long @skb has been in the qdisc at @now. */
static inline u64 parq_sojourn(const struct sk_buff *skb, u64 now)
{
	u64 in = parq_skb_cb(skb)->enqueued;

	return now > in ? now - in : 0;
}

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
 * neither share the zero address), in the rb-tree of its bucket of lhash.
 * While it holds packets it is either in the local round robin or waiting
 * for credit; once empty it is idle, kept for its next packet until it is
 * stale (idle for PARQ_LOCAL_IDLE_AGE), and then freed by a lookup that
 * passes it.
 */
struct parq_lflow {
	struct parq_rr_node	rr;	/* in lrr unless waiting or idle */
	struct rb_node		node;	/* in its bucket's tree, by dst */
	struct rb_node		wait;	/* in lwait while waiting */
	struct parq_skbq	q;
	struct parq_addr	dst;
	union {
		u64		until;	/* ns: end of its wait */
		unsigned long	idle_since;	/* jiffies: when it emptied */
	};
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
	u32				subtree; /* nodes under node, itself too */
	struct parq_resv		r;	/* NDT, IDT, lateness */
	struct parq_skbq		q;
	u64				bw;	/* bytes/s admitted */
	struct parq_use			use;	/* of bw, under the tree lock */
	struct parq_class		c;
	struct net_rate_estimator __rcu	*rate_est;
	u32				pos;	/* in resv_tab */
	u32				filters; /* bound to it, under RTNL */
};

/* Everything tc can set on the qdisc, validated as a whole first. */
/*
 * The qdisc's parameters, a field each, declared by their rows in
 * PARQ_PARAMS (<parq/params.h>): rates in bytes/s, PARQ_RATE_UNLIMITED the
 * shaper off, PARQ_LINKRATE_AUTO the link's speed; dscp_mark a DSCP or
 * PARQ_DSCP_MARK_OFF; reservable a percentage.
 */
#define PARQ_FIELD_U64_PARQ_U64(f)	u64 f;
#define PARQ_FIELD_U64_PARQ_U32(f)
#define PARQ_FIELD_U64_PARQ_S32(f)
#define PARQ_FIELD_U64_PARQ_U8(f)
#define PARQ_FIELD_32_PARQ_U64(f)
#define PARQ_FIELD_32_PARQ_U32(f)	u32 f;
#define PARQ_FIELD_32_PARQ_S32(f)	s32 f;
#define PARQ_FIELD_32_PARQ_U8(f)
#define PARQ_FIELD_U8_PARQ_U64(f)
#define PARQ_FIELD_U8_PARQ_U32(f)
#define PARQ_FIELD_U8_PARQ_S32(f)
#define PARQ_FIELD_U8_PARQ_U8(f)	u8 f;
#define PARQ_FIELD_U64(attr, field, kw, type, syn, meta, min, max, dflt, \
		       word, wval, names, msg)				\
	PARQ_FIELD_U64_##type(field)
#define PARQ_FIELD_32(attr, field, kw, type, syn, meta, min, max, dflt, \
		      word, wval, names, msg)				\
	PARQ_FIELD_32_##type(field)
#define PARQ_FIELD_U8(attr, field, kw, type, syn, meta, min, max, dflt, \
		      word, wval, names, msg)				\
	PARQ_FIELD_U8_##type(field)

/* By size, largest first: no holes, and one cache line. */
struct parq_config {
	PARQ_PARAMS(PARQ_FIELD_U64)
	PARQ_PARAMS(PARQ_FIELD_32)
	PARQ_PARAMS(PARQ_FIELD_U8)
};

struct parq_sched_data {
	/* dequeue hot path */
	struct rb_root_cached	resv_backlog;	/* by (NDT, classid) */
	struct parq_sched	s;		/* policy state, counters */
	struct parq_skbq	control;	/* TC_PRIO_CONTROL, served first */
	struct parq_rr		rr;		/* parallel flows */
	struct parq_rr		lrr;		/* local flows that may send */
	u32			parallel_qlen;
	u32			local_qlen;
	u32			local_flows;	/* local flows with packets */
	u32			local_waiting;	/* of those, waiting for credit */
	u64			lwait_next;	/* ns: earliest end of a wait */
	struct rb_root_cached	lwait;		/* waiting local flows by until */
	u32			resv_backlogged;
	u8			split_gso;	/* enum parq_split_now */

	/* enqueue */
	struct parq_flow	*flows;		/* PARQ_FLOW_BUCKETS */
	struct rb_root		*lhash;		/* lbuckets trees */
	u32			lbuckets;	/* a power of 2 */
	u32			lseed;
	u32			local_idle;	/* local flows kept empty */
	struct mem_cgroup	*memcg;		/* charged for the local flows */
	struct tcf_proto __rcu	*filter_list;
	struct Qdisc_class_hash	clhash;		/* reserved classes */
	struct parq_config	cfg;

	/* admission control, under RTNL */
	u64			linkrate;	/* effective, bytes/s; 0: none */
	u64			resv_capacity;	/* linkrate x reservable % */
	u64			resv_sum;	/* bytes/s admitted */
	u32			resv_classes;
	u32			resv_tab_size;	/* slots of resv_tab */
	struct parq_resv_class	**resv_tab;	/* the classes, dense: walk */

	struct parq_class	cls[PARQ_NUM_CLASSES];
	struct tcf_block	*block;
	struct qdisc_watchdog	watchdog;
};

/*
 * A class handle (the unsigned long of Qdisc_class_ops) is the minor of a
 * fixed class, PARQ_CLASS_PARALLEL or PARQ_CLASS_LOCAL, or a pointer to a
 * struct parq_resv_class.
 */
static inline struct parq_resv_class *parq_resv_of(unsigned long cl)
{
	return cl > PARQ_NUM_CLASSES ? (struct parq_resv_class *)cl : NULL;
}

static inline bool parq_minor_valid(u32 minor)
{
	return minor == PARQ_CLASS_PARALLEL || minor == PARQ_CLASS_LOCAL;
}

static inline struct parq_class *parq_stats_of(struct parq_sched_data *q,
					       unsigned long cl)
{
	struct parq_resv_class *rc = parq_resv_of(cl);

	return rc ? &rc->c : &q->cls[cl - 1];
}

static inline struct parq_resv_class *parq_resv_find(struct Qdisc *sch,
						     u32 classid)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct Qdisc_class_common *common;

	common = qdisc_class_find(&q->clhash, classid);
	return common ? container_of(common, struct parq_resv_class, common) :
			NULL;
}

/* parq_datapath.c */
int parq_datapath_init(void);
void parq_datapath_exit(void);
u32 parq_local_buckets(u32 limit);
struct rb_root *parq_local_rehash(struct parq_sched_data *q,
				  struct rb_root *lhash, u32 lbuckets);
int parq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
		 struct sk_buff **to_free);
struct sk_buff *parq_dequeue(struct Qdisc *sch);
void parq_reset(struct Qdisc *sch);
void parq_purge(struct Qdisc *sch);
unsigned int parq_held(const struct Qdisc *sch);
unsigned int parq_evict(struct Qdisc *sch, enum parq_act act,
			struct sk_buff **to_free);
void parq_skbq_purge(struct parq_skbq *pq);
void parq_resv_backlog_add(struct parq_sched_data *q,
			   struct parq_resv_class *rc);
void parq_resv_backlog_del(struct parq_sched_data *q,
			   struct parq_resv_class *rc);
/* How many backlogged reserved classes may send at @now: O(log n). */
u32 parq_resv_due(const struct parq_sched_data *q, u64 now);

/* parq_config.c */
int parq_init(struct Qdisc *sch, struct nlattr *opt,
	      struct netlink_ext_ack *extack);
int parq_change(struct Qdisc *sch, struct nlattr *opt,
		struct netlink_ext_ack *extack);
void parq_destroy(struct Qdisc *sch);
int parq_dump(struct Qdisc *sch, struct sk_buff *skb);
int parq_dump_stats(struct Qdisc *sch, struct gnet_dump *d);
u64 parq_linkrate(struct Qdisc *sch, const struct parq_config *cfg);
void parq_name_bad_attr(const struct nlattr *opt, const char * const *msgs,
			int maxtype, struct netlink_ext_ack *extack);

/* parq_class.c */
extern const struct Qdisc_class_ops parq_class_ops;
void parq_resv_free(struct parq_resv_class *rc);

#endif /* _PARQ_QDISC_H */
