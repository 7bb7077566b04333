// SPDX-License-Identifier: GPL-2.0
/*
 * sch_parq's parameters: the netlink policy, parsing, applying them under
 * the tree lock, init, change, destroy and the dumps; and the link rate
 * that admission control divides.
 *
 * A qdisc parameter is a row of PARQ_PARAMS (<parq/params.h>), from which
 * its policy, message, default, parsing and dump here are made; what must
 * agree with another parameter is checked in parq_config_parse(), what
 * changes running state is done in parq_config_apply().
 */
#include <linux/build_bug.h>
#include <linux/ethtool.h>
#include <linux/hash.h>
#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rbtree.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/dsfield.h>
#include <net/netlink.h>
#include <net/pkt_cls.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <linux/parq.h>
#include <parq/params.h>

#include "core/parq_core.h"
#include "core/parq_policy.h"
#include "parq_compat.h"
#include "parq_credit.h"
#include "parq_genl.h"
#include "parq_monitor.h"
#include "parq_qdisc.h"

/* --- admission control ------------------------------------------------ */

/*
 * The device's link speed in bytes/s, 0 if unknown.  Under RTNL, and under
 * the device's instance lock when its operations take one (tc takes it).
 */
static u64 parq_link_speed(struct net_device *dev)
{
	struct ethtool_link_ksettings ks;

	if (parq_get_link_ksettings(dev, &ks) ||
	    !ks.base.speed || ks.base.speed == (u32)SPEED_UNKNOWN)
		return 0;
	return (u64)ks.base.speed * 1000000 / 8;
}

/*
 * The tx queues that share the link with @sch: when @sch is a tx queue's
 * own qdisc under a root that gives each queue one (mq, mqprio, taprio or
 * htb offloaded to the device), every such qdisc sends on one of the
 * device's queues.  A qdisc inside one tree (htb, taprio in software) has
 * the whole link.  A qdisc is not grafted yet while it is made (its init):
 * a root one is known by its parent, which the qdisc layer sets first (the
 * root then is still the one it replaces, mq on a multi-queue device), and
 * for a child of mq or mqprio the root tells.  Under RTNL.
 */
static unsigned int parq_link_sharers(struct Qdisc *sch)
{
	struct net_device *dev = qdisc_dev(sch);
	struct Qdisc *root = rtnl_dereference(dev->qdisc);
	unsigned int i, n = dev->real_num_tx_queues;

	if (sch->parent == TC_H_ROOT || root == sch || !n)
		return 1;
	if (!strcmp(root->ops->id, "mq") || !strcmp(root->ops->id, "mqprio"))
		return n;
	for (i = 0; i < n; i++)
		if (parq_txq_qdisc_sleeping(netdev_get_tx_queue(dev, i)) == sch)
			return n;
	return 1;
}

/*
 * What admission control divides: linkrate, else rate, else this qdisc's
 * share of the link speed (so that the children of mq cannot admit N
 * times the link between them).
 */
u64 parq_linkrate(struct Qdisc *sch, const struct parq_config *cfg)
{
	if (cfg->linkrate != PARQ_LINKRATE_AUTO)
		return cfg->linkrate;
	if (cfg->rate != PARQ_RATE_UNLIMITED)
		return cfg->rate;
	return div_u64(parq_link_speed(qdisc_dev(sch)),
		       parq_link_sharers(sch));
}

/* --- configuration --------------------------------------------------- */

/*
 * The parameters come from one table, PARQ_PARAMS in <parq/params.h>: here
 * each row gives the range its policy checks, its policy, its message, its
 * default, and where it lives in struct parq_config, from which parsing and
 * the dump are made.  The field's type says how it travels.
 */
#define PARQ_RANGE_ROW(attr, lo, hi)					\
	[attr] = { .min = (lo), .max = (hi) },
#define PARQ_RANGE_NONE(attr, lo, hi)
#define PARQ_URANGE_PARQ_U8		PARQ_RANGE_ROW
#define PARQ_URANGE_PARQ_U32		PARQ_RANGE_ROW
#define PARQ_URANGE_PARQ_U64		PARQ_RANGE_ROW
#define PARQ_URANGE_PARQ_S32		PARQ_RANGE_NONE
#define PARQ_SRANGE_PARQ_U8		PARQ_RANGE_NONE
#define PARQ_SRANGE_PARQ_U32		PARQ_RANGE_NONE
#define PARQ_SRANGE_PARQ_U64		PARQ_RANGE_NONE
#define PARQ_SRANGE_PARQ_S32		PARQ_RANGE_ROW

#define PARQ_URANGE(attr, field, kw, type, syn, meta, lo, hi, dflt, word, \
		    wval, names, msg)					\
	PARQ_URANGE_##type(attr, PARQ_PARAM_LO(lo, wval),		\
			   PARQ_PARAM_HI(hi, wval))
/* Not const: on 6.1 and older, struct nla_policy points at them so. */
static struct netlink_range_validation parq_ranges[TCA_PARQ_MAX + 1] = {
	PARQ_PARAMS(PARQ_URANGE)
};

#define PARQ_SRANGE(attr, field, kw, type, syn, meta, lo, hi, dflt, word, \
		    wval, names, msg)					\
	PARQ_SRANGE_##type(attr, PARQ_PARAM_LO(lo, wval),		\
			   PARQ_PARAM_HI(hi, wval))
static struct netlink_range_validation_signed parq_sranges[TCA_PARQ_MAX + 1] = {
	PARQ_PARAMS(PARQ_SRANGE)
};

/*
 * Messages whose numbers are not spelled from the UAPI header are tied to
 * it here, so that a change there breaks the build until the message
 * follows.
 */
static_assert(PARQ_RATE_MAX == 200000000000ULL);	/* "1.6Tbit" */
static_assert(PARQ_OVERHEAD_MIN == -64);
static_assert(PARQ_BURST_MAX == 16777216);
static_assert(PARQ_CLASS_PARALLEL == 1 && PARQ_CLASS_LOCAL == 2);

#define PARQ_POLICY_PARQ_U8(a)	NLA_POLICY_FULL_RANGE(NLA_U8, &parq_ranges[a])
#define PARQ_POLICY_PARQ_U32(a)	NLA_POLICY_FULL_RANGE(NLA_U32, &parq_ranges[a])
#define PARQ_POLICY_PARQ_U64(a)	NLA_POLICY_FULL_RANGE(NLA_U64, &parq_ranges[a])
#define PARQ_POLICY_PARQ_S32(a)	\
	NLA_POLICY_FULL_RANGE_SIGNED(NLA_S32, &parq_sranges[a])
#define PARQ_POLICY(attr, field, kw, type, syn, meta, min, max, dflt,	\
		    word, wval, names, msg)				\
	[attr] = PARQ_POLICY_##type(attr),
static const struct nla_policy parq_policy[TCA_PARQ_MAX + 1] = {
	[TCA_PARQ_PAD]	= { .type = NLA_REJECT },
	PARQ_PARAMS(PARQ_POLICY)
};

#define PARQ_ERR(attr, field, kw, type, syn, meta, min, max, dflt, word, \
		 wval, names, msg)					\
	[attr] = msg,
static const char * const parq_attr_err[TCA_PARQ_MAX + 1] = {
	[TCA_PARQ_PAD]	= "parq: unexpected padding attribute",
	PARQ_PARAMS(PARQ_ERR)
};

struct parq_param {
	u16	attr;
	u8	offset;		/* in struct parq_config */
	u8	size;		/* 1, 4 or 8 bytes */
	u64	def;
};

#define PARQ_ROW(attr_, field, kw, type, syn, meta, min, max, dflt, word, \
		 wval, names, msg)					\
	{ .attr = attr_, .offset = offsetof(struct parq_config, field),	\
	  .size = sizeof_field(struct parq_config, field), .def = dflt },
static const struct parq_param parq_params[] = {
	PARQ_PARAMS(PARQ_ROW)
};

/* Every attribute but the padding has its row (W=1 warns of a repeated one). */
static_assert(ARRAY_SIZE(parq_params) == TCA_PARQ_MAX - TCA_PARQ_PAD);
static_assert(sizeof(struct parq_config) <= U8_MAX);

static void parq_param_set(struct parq_config *cfg,
			   const struct parq_param *p, u64 v)
{
	void *field = (u8 *)cfg + p->offset;

	switch (p->size) {
	case sizeof(u8):
		*(u8 *)field = v;
		break;
	case sizeof(u32):
		*(u32 *)field = v;
		break;
	default:
		*(u64 *)field = v;
	}
}

static u64 parq_param_get(const struct parq_config *cfg,
			  const struct parq_param *p)
{
	const void *field = (const u8 *)cfg + p->offset;

	switch (p->size) {
	case sizeof(u8):
		return *(const u8 *)field;
	case sizeof(u32):
		return *(const u32 *)field;
	default:
		return *(const u64 *)field;
	}
}

/*
 * An attribute's value, @size bytes: the policy has checked its length,
 * and parq_config_build_check() that the policy's type has the field's
 * size.
 */
static u64 parq_param_read(const struct nlattr *a, u8 size)
{
	switch (size) {
	case sizeof(u8):
		return nla_get_u8(a);
	case sizeof(u32):
		return nla_get_u32(a);
	default:
		return nla_get_u64(a);
	}
}

static __always_inline unsigned int parq_nla_size(u8 type)
{
	switch (type) {
	case NLA_U8:
		return sizeof(u8);
	case NLA_U32:
	case NLA_S32:
		return sizeof(u32);
	case NLA_U64:
		return sizeof(u64);
	default:
		return 0;
	}
}

/*
 * Every row's policy carries a value of its field's size: checked when the
 * module is built (the compiler folds each row's policy type, a constant),
 * so that no request can read past an attribute.
 */
#define PARQ_SIZE_BAD(a, field, kw, t, syn, meta, min, max, dflt, word, \
		      wval, names, msg)					\
	parq_nla_size(parq_policy[a].type) !=				\
		sizeof_field(struct parq_config, field) ||
static __always_inline void parq_config_build_check(void)
{
	BUILD_BUG_ON(PARQ_PARAMS(PARQ_SIZE_BAD) false);
}

/* Replace the policy's generic message by one naming the parameter. */
void parq_name_bad_attr(const struct nlattr *opt,
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
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(parq_params); i++)
		parq_param_set(cfg, &parq_params[i], parq_params[i].def);
}

/* Overlay the attributes of a request on @cfg and check the result. */
static int parq_config_parse(struct Qdisc *sch, struct parq_config *cfg,
			     struct nlattr **tb, u64 *linkrate,
			     struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	unsigned int i;
	u64 capacity;

	parq_config_build_check();	/* no code: all at build time */
	for (i = 0; i < ARRAY_SIZE(parq_params); i++) {
		const struct parq_param *p = &parq_params[i];
		const struct nlattr *a = tb[p->attr];

		if (a)
			parq_param_set(cfg, p, parq_param_read(a, p->size));
	}
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
		PARQ_SET_ERR_FMT(extack,
				 "parq: the reservable bandwidth (linkrate x reservable) would fall below what is already reserved",
				 "parq: %llu bit/s reservable is below the %llu reserved",
				 capacity * 8, q->resv_sum * 8);
		return -EINVAL;
	}
	return 0;
}

/* Which GSO packets are split: enum parq_split_now. */
static u8 parq_split_gso(const struct parq_config *cfg)
{
	/* Under unit packets a whole GSO packet would count as one. */
	if (cfg->split_gso == PARQ_SPLIT_GSO_AUTO) {
		if (cfg->rate == PARQ_RATE_UNLIMITED)
			return PARQ_SPLIT_NONE;
		return cfg->unit == PARQ_UNIT_PACKETS ? PARQ_SPLIT_ALL :
							PARQ_SPLIT_LOCAL;
	}
	return cfg->split_gso == PARQ_SPLIT_GSO_ON ? PARQ_SPLIT_ALL :
						     PARQ_SPLIT_NONE;
}

/* Make @cfg the running configuration.  Caller holds the tree lock. */
static void parq_config_apply(struct Qdisc *sch, const struct parq_config *cfg,
			      u64 linkrate)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 rate = cfg->rate == PARQ_RATE_UNLIMITED ? 0 : cfg->rate;

	if (cfg->threshold != q->cfg.threshold || cfg->unit != q->cfg.unit)
		parq_thresh_init(&q->s.thresh, cfg->threshold, cfg->unit);
	parq_shaper_set(&q->s.shaper, rate, cfg->overhead, cfg->burst,
			PARQ_CATCHUP_NS, ktime_get_ns());
	q->split_gso = parq_split_gso(cfg);
	q->linkrate = linkrate;
	q->resv_capacity = parq_resv_capacity(linkrate, cfg->reservable);
	q->cfg = *cfg;
}

int parq_change(struct Qdisc *sch, struct nlattr *opt,
		struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_PARQ_MAX + 1];
	unsigned int dropped = 0, dropped_len = 0;
	struct sk_buff *to_free = NULL;
	struct rb_root *lhash = NULL;
	struct parq_config cfg;
	enum parq_act act;
	u32 lbuckets;
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
	/* The local destinations' trees follow the limit. */
	lbuckets = parq_local_buckets(cfg.limit);
	if (lbuckets != q->lbuckets) {
		lhash = kvcalloc(lbuckets, sizeof(*lhash), GFP_KERNEL_ACCOUNT);
		if (!lhash)
			return -ENOMEM;
	}

	sch_tree_lock(sch);
	if (lhash)
		lhash = parq_local_rehash(q, lhash, lbuckets);
	parq_config_apply(sch, &cfg, linkrate);
	/* The control queue is bounded on its own, outside the limit. */
	while (parq_held(sch) - q->control.qlen > cfg.limit) {
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
	kvfree(lhash);		/* the old table */
	kfree_skb_list(to_free);
	return 0;
}

int parq_init(struct Qdisc *sch, struct nlattr *opt,
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
	/*
	 * The local queues, made in softirq, are charged to the creator.
	 * Taken after the class hash: parq_destroy() puts it only past the
	 * check that the hash was made.
	 */
	q->memcg = get_mem_cgroup_from_mm(current->mm);
	err = tcf_block_get(&q->block, &q->filter_list, sch, extack);
	if (err)
		return err;
	parq_config_default(&cfg);
	q->flows = kvcalloc(PARQ_FLOW_BUCKETS, sizeof(*q->flows), GFP_KERNEL_ACCOUNT);
	q->lbuckets = parq_local_buckets(cfg.limit);
	q->lhash = kvcalloc(q->lbuckets, sizeof(*q->lhash), GFP_KERNEL_ACCOUNT);
	if (!q->flows || !q->lhash)
		return -ENOMEM;

	q->cfg = cfg;
	q->cfg.threshold = 0;	/* forces parq_thresh_init() */
	parq_config_apply(sch, &cfg, parq_linkrate(sch, &cfg));
	return parq_change(sch, opt, extack);
}

void parq_destroy(struct Qdisc *sch)
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
	kvfree(q->resv_tab);
	mem_cgroup_put(q->memcg);
}

int parq_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;
	unsigned int i;
	int err = 0;

	/*
	 * As configured, "auto" too, so that the dump can be fed back as it
	 * is; the statistics give what "auto" resolves to.
	 */
	opts = nla_nest_start(skb, TCA_OPTIONS);
	if (!opts)
		return -EMSGSIZE;
	for (i = 0; i < ARRAY_SIZE(parq_params) && !err; i++) {
		const struct parq_param *p = &parq_params[i];
		u64 v = parq_param_get(&q->cfg, p);

		if (p->size == sizeof(u8))
			err = nla_put_u8(skb, p->attr, v);
		else if (p->size == sizeof(u32))
			err = nla_put_u32(skb, p->attr, v);
		else
			err = nla_put_u64_64bit(skb, p->attr, v, TCA_PARQ_PAD);
	}
	if (err) {
		nla_nest_cancel(skb, opts);
		return -EMSGSIZE;
	}
	return nla_nest_end(skb, opts);
}

int parq_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u64 now = ktime_get_ns();
	struct tc_parq_xstats xs;

	sch_tree_lock(sch);
	xs = q->s.xs;
	xs.flows_active = q->rr.active;
	xs.local_flows = q->local_flows;
	xs.local_waiting = q->local_waiting;
	xs.resv_sum_rate = q->resv_sum;
	xs.resv_capacity = q->resv_capacity;
	xs.resv_classes = q->resv_classes;
	xs.resv_backlogged = q->resv_backlogged;
	xs.resv_throttled = q->resv_backlogged - parq_resv_due(q, now);
	xs.effective_linkrate = q->linkrate;
	xs.effective_split_gso = q->split_gso;
	sch_tree_unlock(sch);
	xs.version = PARQ_XSTATS_VERSION;
	return gnet_stats_copy_app(d, &xs, sizeof(xs));
}
