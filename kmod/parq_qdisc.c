// SPDX-License-Identifier: GPL-2.0
/*
 * sch_parq: parallel/local two-class scheduler for shared clusters.
 *
 * Parallel jobs (MPI-style: small, urgent messages) and local jobs (bulk
 * copies, backups) share a host's interface.  parq keeps them apart:
 *
 * enqueue: classify the packet (tc filters on the qdisc, then skb->priority
 *	of the form <handle>:<minor>, then DSCP in dscp-parallel, then the
 *	default class).  Parallel packets go to a per-flow queue (socket, else
 *	flow hash); local packets to one FIFO.  With split-gso, GSO packets are
 *	segmented first so no parallel packet waits behind more than one MTU.
 *	When the qdisc is full, local packets are dropped before parallel ones.
 *
 * dequeue: if the shaper's next departure time lies ahead, arm the watchdog
 *	and return.  Otherwise THRESHOLD_send picks the class: parallel first,
 *	but after every @threshold units of parallel traffic one unit of local
 *	goes (parq_thresh in core/parq_core.c).  Inside the parallel class the
 *	backlogged flows are served by deficit round robin.
 *
 * All arithmetic lives in core/parq_core.c, which the user-space unit tests
 * compile unchanged.
 */
#include <linux/hash.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/dsfield.h>
#include <net/netlink.h>
#include <net/pkt_cls.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <linux/parq.h>

#include "core/parq_core.h"
#include "parq_compat.h"

#define PARQ_FLOW_BUCKETS	1024	/* parallel flow queues, power of 2 */
#define PARQ_TIMER_SLACK_NS	(10 * NSEC_PER_USEC)
#define PARQ_SHAPER_HORIZON_NS	NSEC_PER_MSEC	/* lateness caught up */

struct parq_flow {
	struct parq_rr_node	rr;
	struct sk_buff		*head;
	struct sk_buff		*tail;
	u32			qlen;
};

struct parq_class {
	parq_bstats_t		bstats;
	struct gnet_stats_queue	qstats;
	u32			qlen;
};

/* Everything tc can set, validated as a whole before it is applied. */
struct parq_config {
	u64	rate;		/* bytes/s, PARQ_RATE_UNLIMITED: off */
	u64	dscp_parallel;
	u32	threshold;
	u32	limit;
	u32	flow_limit;
	s32	overhead;
	u8	unit;
	u8	split_gso;	/* enum parq_split_gso */
	u8	default_class;
};

struct parq_sched_data {
	/* dequeue hot path */
	struct parq_thresh	thresh;
	struct parq_shaper	shaper;
	struct parq_rr		rr;
	struct qdisc_skb_head	local;
	u32			parallel_qlen;
	bool			throttled;
	bool			split_gso;

	/* enqueue */
	struct parq_flow	*flows;		/* PARQ_FLOW_BUCKETS */
	struct tcf_proto __rcu	*filter_list;
	struct parq_config	cfg;

	struct parq_class	cls[PARQ_NUM_CLASSES];
	struct tc_parq_xstats	xs;
	struct tcf_block	*block;
	struct qdisc_watchdog	watchdog;
};

static struct parq_class *parq_cls(struct parq_sched_data *q, u32 minor)
{
	return &q->cls[minor - 1];
}

static bool parq_minor_valid(u32 minor)
{
	return minor == PARQ_CLASS_PARALLEL || minor == PARQ_CLASS_LOCAL;
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

/* Class minor named by a filter or skb->priority, or the default. */
static u32 parq_class_of(struct parq_sched_data *q, u32 minor)
{
	if (parq_minor_valid(minor))
		return minor;
	q->xs.unknown_class++;
	return q->cfg.default_class;
}

/* Returns the class minor, or 0 when a filter dropped or stole the skb. */
static u32 parq_classify(struct sk_buff *skb, struct Qdisc *sch, int *qerr)
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
				return parq_class_of(q, TC_H_MIN(res.classid));
			return parq_class_of(q, 0);
		}
	}
	if (TC_H_MAJ(skb->priority) == sch->handle)
		return parq_class_of(q, TC_H_MIN(skb->priority));
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

static void parq_flow_add(struct parq_flow *flow, struct sk_buff *skb)
{
	skb->next = NULL;
	if (flow->head)
		flow->tail->next = skb;
	else
		flow->head = skb;
	flow->tail = skb;
	flow->qlen++;
}

static struct sk_buff *parq_flow_pop(struct parq_flow *flow)
{
	struct sk_buff *skb = flow->head;

	flow->head = skb->next;
	skb_mark_not_on_list(skb);
	flow->qlen--;
	return skb;
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

/* Take the oldest packet of @minor's queue (any flow for parallel). */
static struct sk_buff *parq_take(struct Qdisc *sch, u32 minor)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_flow *flow;
	struct sk_buff *skb;

	if (minor == PARQ_CLASS_LOCAL) {
		skb = __qdisc_dequeue_head(&q->local);
	} else {
		flow = container_of(parq_rr_select(&q->rr), struct parq_flow,
				    rr);
		skb = parq_flow_pop(flow);
		parq_rr_charge(&q->rr, qdisc_pkt_len(skb), !flow->qlen);
		q->parallel_qlen--;
	}
	parq_count_out(sch, parq_cls(q, minor), skb);
	return skb;
}

/* Drop one queued packet to make room: local first, parallel only when no
 * local packet is queued.  Returns the dropped length.
 */
static unsigned int parq_evict(struct Qdisc *sch, struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u32 minor = q->local.qlen ? PARQ_CLASS_LOCAL : PARQ_CLASS_PARALLEL;
	struct sk_buff *skb = parq_take(sch, minor);
	unsigned int len = qdisc_pkt_len(skb);

	parq_cls(q, minor)->qstats.drops++;
	qdisc_drop(skb, sch, to_free);
	return len;
}

static int parq_drop_new(struct sk_buff *skb, struct Qdisc *sch,
			 struct parq_class *c, u64 *reason,
			 struct sk_buff **to_free)
{
	(*reason)++;
	c->qstats.drops++;
	return qdisc_drop(skb, sch, to_free);
}

static int parq_enqueue_one(struct sk_buff *skb, struct Qdisc *sch, u32 minor,
			    struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_class *c = parq_cls(q, minor);
	struct parq_flow *flow = NULL;
	unsigned int evicted = 0;

	if (minor == PARQ_CLASS_PARALLEL) {
		flow = parq_flow_of(q, skb);
		if (flow->qlen >= q->cfg.flow_limit)
			return parq_drop_new(skb, sch, c,
					     &q->xs.drop_flow_limit, to_free);
	}
	if (sch->q.qlen >= q->cfg.limit) {
		if (!flow)
			return parq_drop_new(skb, sch, c,
					     &q->xs.drop_local_full, to_free);
		if (!q->local.qlen)
			return parq_drop_new(skb, sch, c,
					     &q->xs.drop_parallel_full,
					     to_free);
		evicted = parq_evict(sch, to_free);
		q->xs.drop_local_evicted++;
	}

	parq_count_in(sch, c, skb);
	if (flow) {
		if (!flow->qlen)
			parq_rr_add(&q->rr, &flow->rr);
		parq_flow_add(flow, skb);
		q->parallel_qlen++;
	} else {
		__qdisc_enqueue_tail(skb, &q->local);
	}
	/* Told only now, so that parents never see this qdisc empty. */
	if (evicted)
		qdisc_tree_reduce_backlog(sch, 1, evicted);
	return NET_XMIT_SUCCESS;
}

/* Segment a GSO packet and queue its segments in class @minor. */
static int parq_enqueue_segs(struct sk_buff *skb, struct Qdisc *sch,
			     u32 minor, struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	unsigned int len = qdisc_pkt_len(skb), seg_len = 0;
	struct sk_buff *segs, *nskb;
	netdev_features_t features;
	int nb = 0;

	features = netif_skb_features(skb);
	segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return parq_drop_new(skb, sch, parq_cls(q, minor),
				     &q->xs.drop_gso_failed, to_free);

	skb_list_walk_safe(segs, segs, nskb) {
		unsigned int l = segs->len;

		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = l;
		if (parq_enqueue_one(segs, sch, minor, to_free) ==
		    NET_XMIT_SUCCESS) {
			nb++;
			seg_len += l;
		}
	}
	q->xs.gso_segments += nb;
	/* The parent accounts one packet of @len; correct it to what we hold. */
	if (nb > 1)
		qdisc_tree_reduce_backlog(sch, 1 - nb, len - seg_len);
	consume_skb(skb);
	return nb > 0 ? NET_XMIT_SUCCESS : NET_XMIT_DROP;
}

static int parq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	int ret;
	u32 minor = parq_classify(skb, sch, &ret);

	if (!minor) {
		if (ret & __NET_XMIT_BYPASS)
			qdisc_qstats_drop(sch);
		q->xs.drop_filter++;
		__qdisc_drop(skb, to_free);
		return ret;
	}
	if (q->split_gso && skb_is_gso(skb))
		return parq_enqueue_segs(skb, sch, minor, to_free);
	return parq_enqueue_one(skb, sch, minor, to_free);
}

static struct sk_buff *parq_dequeue(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	bool parallel, local;
	enum parq_pick pick;
	struct sk_buff *skb;
	unsigned int len;
	u64 now;

	if (!sch->q.qlen)
		return NULL;
	now = ktime_get_ns();
	if (!parq_shaper_ready(&q->shaper, now)) {
		if (!q->throttled) {
			q->throttled = true;
			q->xs.throttled++;
		}
		qdisc_watchdog_schedule_range_ns(&q->watchdog, q->shaper.t_next,
						 PARQ_TIMER_SLACK_NS);
		return NULL;
	}
	if (q->throttled) {
		q->throttled = false;
		q->xs.wakeups++;
	}

	parallel = q->parallel_qlen != 0;
	local = q->local.qlen != 0;
	pick = parq_thresh_pick(&q->thresh, parallel, local);
	if (pick == PARQ_PICK_PARALLEL) {
		skb = parq_take(sch, PARQ_CLASS_PARALLEL);
		if (!local)
			q->xs.parallel_only++;
	} else {
		skb = parq_take(sch, PARQ_CLASS_LOCAL);
		if (parallel)
			q->xs.threshold_turns++;
		else
			q->xs.local_only++;
	}
	len = qdisc_pkt_len(skb);
	parq_thresh_charge(&q->thresh, pick, len,
			   pick == PARQ_PICK_PARALLEL ? local : parallel);
	parq_shaper_charge(&q->shaper, now, len);

	bstats_update(&parq_cls(q, pick == PARQ_PICK_PARALLEL ?
				PARQ_CLASS_PARALLEL : PARQ_CLASS_LOCAL)->bstats,
		      skb);
	qdisc_bstats_update(sch, skb);
	return skb;
}

static void parq_purge(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_rr_node *n;
	struct parq_flow *flow;
	int i;

	while ((n = q->rr.head)) {
		flow = container_of(n, struct parq_flow, rr);
		parq_rr_remove(&q->rr, n);
		rtnl_kfree_skbs(flow->head, flow->tail);
		flow->head = NULL;
		flow->tail = NULL;
		flow->qlen = 0;
	}
	rtnl_kfree_skbs(q->local.head, q->local.tail);
	q->local.head = NULL;
	q->local.tail = NULL;
	q->local.qlen = 0;
	q->parallel_qlen = 0;
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
	parq_thresh_init(&q->thresh, q->cfg.threshold, q->cfg.unit);
	q->shaper.t_next = 0;
	q->shaper.rem = 0;
	q->throttled = false;
	qdisc_watchdog_cancel(&q->watchdog);
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
};

static void parq_name_bad_attr(const struct nlattr *opt,
			       struct netlink_ext_ack *extack)
{
	int type;

	if (!extack || !extack->bad_attr || extack->bad_attr == opt)
		return;
	type = nla_type(extack->bad_attr);
	if (type <= TCA_PARQ_MAX && parq_attr_err[type])
		extack->_msg = parq_attr_err[type];
}

static void parq_config_default(struct parq_config *cfg)
{
	cfg->rate = PARQ_RATE_UNLIMITED;
	cfg->dscp_parallel = PARQ_DSCP_DEFAULT;
	cfg->threshold = PARQ_THRESHOLD_DEFAULT;
	cfg->limit = PARQ_LIMIT_DEFAULT;
	cfg->flow_limit = PARQ_FLOW_LIMIT_DEFAULT;
	cfg->overhead = 0;
	cfg->unit = PARQ_UNIT_BYTES;
	cfg->split_gso = PARQ_SPLIT_GSO_AUTO;
	cfg->default_class = PARQ_CLASS_LOCAL;
}

/* Overlay the attributes of a request on @cfg and check the result. */
static int parq_config_parse(struct parq_config *cfg, struct nlattr **tb,
			     struct netlink_ext_ack *extack)
{
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

	if (cfg->flow_limit > cfg->limit) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_PARQ_FLOW_LIMIT] ?:
				    tb[TCA_PARQ_LIMIT],
				    "parq: flow-limit must not exceed limit");
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
static void parq_config_apply(struct Qdisc *sch, const struct parq_config *cfg)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 rate = cfg->rate == PARQ_RATE_UNLIMITED ? 0 : cfg->rate;

	if (cfg->threshold != q->cfg.threshold || cfg->unit != q->cfg.unit)
		parq_thresh_init(&q->thresh, cfg->threshold, cfg->unit);
	parq_shaper_set(&q->shaper, rate, cfg->overhead,
			PARQ_SHAPER_HORIZON_NS);
	q->rr.quantum = psched_mtu(qdisc_dev(sch));
	q->split_gso = parq_split_gso(cfg);
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
	int err;

	if (!opt)
		return 0;
	err = nla_parse_nested(tb, TCA_PARQ_MAX, opt, parq_policy, extack);
	if (err) {
		parq_name_bad_attr(opt, extack);
		return err;
	}
	cfg = q->cfg;
	err = parq_config_parse(&cfg, tb, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	parq_config_apply(sch, &cfg);
	while (sch->q.qlen > cfg.limit) {
		if (q->local.qlen)
			q->xs.drop_local_full++;
		else
			q->xs.drop_parallel_full++;
		dropped_len += parq_evict(sch, &to_free);
		dropped++;
	}
	qdisc_tree_reduce_backlog(sch, dropped, dropped_len);
	sch_tree_unlock(sch);
	rtnl_kfree_skbs(to_free, NULL);
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
	q->local.head = NULL;
	q->local.tail = NULL;
	parq_rr_init(&q->rr, psched_mtu(qdisc_dev(sch)));

	err = tcf_block_get(&q->block, &q->filter_list, sch, extack);
	if (err)
		return err;
	q->flows = kvcalloc(PARQ_FLOW_BUCKETS, sizeof(*q->flows), GFP_KERNEL);
	if (!q->flows)
		return -ENOMEM;

	parq_config_default(&cfg);
	q->cfg = cfg;
	q->cfg.threshold = 0;	/* forces parq_thresh_init() */
	parq_config_apply(sch, &cfg);
	return parq_change(sch, opt, extack);
}

static void parq_destroy(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);

	qdisc_watchdog_cancel(&q->watchdog);
	tcf_block_put(q->block);
	if (q->flows)
		parq_purge(sch);
	kvfree(q->flows);
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
	    nla_put_u8(skb, TCA_PARQ_DEFAULT_CLASS, cfg->default_class)) {
		nla_nest_cancel(skb, opts);
		return -EMSGSIZE;
	}
	return nla_nest_end(skb, opts);
}

static int parq_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct tc_parq_xstats xs;

	sch_tree_lock(sch);
	xs = q->xs;
	sch_tree_unlock(sch);
	xs.version = PARQ_XSTATS_VERSION;
	xs.flows_active = q->rr.active;
	return gnet_stats_copy_app(d, &xs, sizeof(xs));
}

/* --- classes: 1:1 parallel and 1:2 local, fixed ---------------------- */

static struct Qdisc *parq_leaf(struct Qdisc *sch, unsigned long arg)
{
	return NULL;
}

static unsigned long parq_find(struct Qdisc *sch, u32 classid)
{
	u32 minor = TC_H_MIN(classid);

	if (TC_H_MAJ(classid) && TC_H_MAJ(classid) != sch->handle)
		return 0;
	return parq_minor_valid(minor) ? minor : 0;
}

static int parq_class_change(struct Qdisc *sch, u32 classid, u32 parentid,
			     struct nlattr **tca, unsigned long *arg,
			     struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG(extack,
		       "parq: classes 1 (parallel) and 2 (local) are fixed; they cannot be added or changed");
	return -EOPNOTSUPP;
}

static int parq_class_delete(PARQ_CLASS_DELETE_ARGS)
{
	NL_SET_ERR_MSG(PARQ_CLASS_DELETE_EXTACK,
		       "parq: classes 1 (parallel) and 2 (local) are fixed; they cannot be deleted");
	return -EOPNOTSUPP;
}

static void parq_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	u32 minor;

	if (arg->stop)
		return;
	for (minor = PARQ_CLASS_PARALLEL; minor <= PARQ_CLASS_LOCAL; minor++) {
		if (arg->count < arg->skip) {
			arg->count++;
			continue;
		}
		if (arg->fn(sch, minor, arg) < 0) {
			arg->stop = 1;
			return;
		}
		arg->count++;
	}
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
	tcm->tcm_parent = TC_H_ROOT;
	tcm->tcm_handle = TC_H_MAKE(sch->handle, cl);
	tcm->tcm_info = 0;
	return 0;
}

static int parq_class_dump_stats(struct Qdisc *sch, unsigned long cl,
				 struct gnet_dump *d)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_class *c = parq_cls(q, cl);

	if (parq_copy_basic(sch, d, &c->bstats) < 0 ||
	    gnet_stats_copy_queue(d, NULL, &c->qstats, c->qlen) < 0)
		return -1;
	return 0;
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
	return register_qdisc(&parq_qdisc_ops);
}

static void __exit parq_module_exit(void)
{
	unregister_qdisc(&parq_qdisc_ops);
}

module_init(parq_module_init);
module_exit(parq_module_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("parq developers");
MODULE_DESCRIPTION("parq: parallel/local two-class packet scheduler");
PARQ_MODULE_ALIAS();
