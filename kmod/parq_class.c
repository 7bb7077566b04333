// SPDX-License-Identifier: GPL-2.0
/*
 * sch_parq's classes: 1:1 parallel and 1:2 local are fixed; <handle>:16
 * and up are reserved classes, each paced by its rate or inter-dispatch
 * time and admitted only while the sum of reservations fits the
 * reservable share of the link (admission control).  tc class operations,
 * filters and the class dumps.
 *
 * A reserved class is in two places: the class hash (clhash), which finds
 * it by classid for the datapath and for tc, and resv_tab, a dense array
 * of all of them that the walk reads.  The walk visits the two fixed
 * classes, then resv_tab in order, so it costs one step per existing
 * class, and a dump resumed after @skip classes starts at position @skip
 * at once.  Classes have no filter blocks of their own (filters attach to
 * the qdisc), so the walk that tc_ctl_tclass() makes after a class add or
 * delete to re-bind filters finds nothing to do; it is still a full walk.
 *
 * A filter whose classid names an existing reserved class holds it: the
 * class counts its filters (bind_tcf/unbind_tcf) and cannot be deleted
 * while any is bound, so res.class never points to a freed class.
 */
#include <linux/build_bug.h>
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
#include <linux/stringify.h>
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
#include "parq_qdisc.h"

/* Minors PARQ_RESV_MINOR_MIN to 0xffff. */
#define PARQ_RESV_CLASSES_MAX	(0xffff - PARQ_RESV_MINOR_MIN + 1)

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

static_assert(PARQ_RATE_MAX == 200000000000ULL);	/* "1.6Tbit" */
static_assert(PARQ_IDT_MAX == 10 * NSEC_PER_SEC);	/* "10s" */

static const char * const parq_class_attr_err[TCA_PARQ_CLASS_MAX + 1] = {
	[TCA_PARQ_CLASS_PAD]	= "parq: unexpected padding attribute",
	[TCA_PARQ_CLASS_RATE]	= "parq: class rate must be 1 byte/s to 1.6Tbit",
	[TCA_PARQ_CLASS_IDT]	= "parq: class idt must be 1ns to 10s",
};

void parq_resv_free(struct parq_resv_class *rc)
{
	gen_kill_estimator(&rc->rate_est);
	kfree(rc);
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

/*
 * The bytes one IDT of an idt class carries, as the shaper counts them:
 * the device's MTU with its link-layer header, plus the qdisc's overhead.
 */
static u32 parq_resv_mtu(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	s64 mtu = (s64)psched_mtu(qdisc_dev(sch)) + q->cfg.overhead;

	return mtu > 0 ? mtu : 1;
}

/* Parse and admit a reservation: on success *@rate, *@idt and *@bw hold it,
 * *@capacity the reservable bytes/s it was admitted against and *@linkrate
 * the link rate that capacity is a share of.
 */
static int parq_resv_parse(struct Qdisc *sch, struct parq_resv_class *rc,
			   struct nlattr *opt, u64 *rate, u64 *idt, u64 *bw,
			   u64 *capacity, u64 *linkrate,
			   struct netlink_ext_ack *extack)
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
	*bw = parq_resv_bw(*rate, *idt, parq_resv_mtu(sch));
	*linkrate = parq_linkrate(sch, &q->cfg);
	*capacity = parq_resv_capacity(*linkrate, q->cfg.reservable);
	if (!*capacity) {
		q->s.xs.resv_rejects++;
		NL_SET_ERR_MSG(extack,
			       "parq: no link rate known for admission control: set linkrate (or rate) on the qdisc");
		return -EINVAL;
	}
	if (!parq_resv_admit(q->resv_sum, old_bw, *bw, *capacity)) {
		u64 others = q->resv_sum - old_bw;

		q->s.xs.resv_rejects++;
		PARQ_SET_ERR_FMT(extack,
				 "parq: reservation refused: more than is free of the reservable bandwidth",
				 "parq: %llu bit/s refused: %llu free of %llu",
				 *bw * 8,
				 (*capacity > others ? *capacity - others : 0) * 8,
				 *capacity * 8);
		return -ENOSPC;
	}
	return 0;
}

/* Make room in resv_tab for one more class (under RTNL, as every user of
 * resv_tab is).
 */
static int parq_resv_tab_reserve(struct parq_sched_data *q)
{
	struct parq_resv_class **tab;
	u32 size;

	if (q->resv_classes < q->resv_tab_size)
		return 0;
	size = clamp_t(u32, q->resv_tab_size * 2, 16, PARQ_RESV_CLASSES_MAX);
	if (size <= q->resv_classes)
		return -ENOSPC;
	tab = kvmalloc_array(size, sizeof(*tab), GFP_KERNEL_ACCOUNT);
	if (!tab)
		return -ENOMEM;
	if (q->resv_classes)
		memcpy(tab, q->resv_tab, q->resv_classes * sizeof(*tab));
	kvfree(q->resv_tab);
	q->resv_tab = tab;
	q->resv_tab_size = size;
	return 0;
}

/* Start or replace @rc's rate estimator if the request has one. */
static int parq_resv_estimator(struct Qdisc *sch, struct parq_resv_class *rc,
			       struct nlattr *est,
			       struct netlink_ext_ack *extack)
{
	int err;

	if (!est)
		return 0;
	err = parq_replace_estimator(sch, &rc->c.bstats, &rc->rate_est, est);
	if (err)
		NL_SET_ERR_MSG(extack, "parq: invalid rate estimator");
	return err;
}

static int parq_class_change(struct Qdisc *sch, u32 classid, u32 parentid,
			     struct nlattr **tca, unsigned long *arg,
			     struct netlink_ext_ack *extack)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(*arg);
	u64 rate, idt, bw, capacity, linkrate, now;
	u32 mtu;
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
			      &capacity, &linkrate, extack);
	if (err)
		return err;

	if (rc) {
		err = parq_resv_estimator(sch, rc, tca[TCA_RATE], extack);
		if (err)
			return err;
	} else {
		err = parq_resv_tab_reserve(q);
		if (err)
			return err;
		rc = kzalloc(sizeof(*rc), GFP_KERNEL_ACCOUNT);
		if (!rc)
			return -ENOMEM;
		parq_bstats_init(&rc->c.bstats);
		rc->common.classid = classid;
		rc->r.classid = classid;
		err = parq_resv_estimator(sch, rc, tca[TCA_RATE], extack);
		if (err) {
			kfree(rc);
			return err;
		}
	}

	mtu = parq_resv_mtu(sch);
	now = ktime_get_ns();
	sch_tree_lock(sch);
	if (rc->r.rate != rate || rc->r.idt != idt || rc->r.mtu != mtu) {
		/* A new pace: an NDT set at the old one may not hold it back. */
		if (rc->q.qlen)
			parq_resv_backlog_del(q, rc);
		parq_resv_set(&rc->r, rate, idt);
		rc->r.mtu = mtu;
		parq_resv_rebase(&rc->r, now);
		if (rc->q.qlen) {
			parq_resv_backlog_add(q, rc);
			qdisc_watchdog_schedule_range_ns(&q->watchdog,
							 rc->r.ndt, 0);
		}
	}
	q->resv_sum = q->resv_sum - rc->bw + bw;
	q->resv_capacity = capacity;
	q->linkrate = linkrate;
	/* Use is measured against one rate: a new one starts a window. */
	if (!*arg || rc->bw != bw)
		parq_use_reset(&rc->use, now);
	rc->bw = bw;
	if (rc->q.qlen)		/* its head's NDT may have come back */
		parq_use_wait(&rc->use, now, bw, rc->r.ndt);
	if (!*arg) {
		qdisc_class_hash_insert(&q->clhash, &rc->common);
		rc->pos = q->resv_classes++;
		q->resv_tab[rc->pos] = rc;
	}
	sch_tree_unlock(sch);
	if (!*arg)
		qdisc_class_hash_grow(sch, &q->clhash);
	*arg = (unsigned long)rc;
	return 0;
}

static int parq_class_delete(PARQ_CLASS_DELETE_ARGS)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc = parq_resv_of(arg);
	struct parq_resv_class *last;
	unsigned int qlen, backlog;

	if (!rc) {
		NL_SET_ERR_MSG(PARQ_CLASS_DELETE_EXTACK,
			       "parq: classes 1 (parallel) and 2 (local) are fixed; they cannot be deleted");
		return -EOPNOTSUPP;
	}
	if (rc->filters) {
		NL_SET_ERR_MSG(PARQ_CLASS_DELETE_EXTACK,
			       "parq: filters steer into this class; delete them (or point them elsewhere) first");
		return -EBUSY;
	}
	sch_tree_lock(sch);
	qlen = rc->q.qlen;
	backlog = rc->c.qstats.backlog;
	if (qlen) {
		parq_resv_backlog_del(q, rc);
		q->resv_backlogged--;
		sch->q.qlen -= qlen;
		sch->qstats.backlog -= backlog;
		__qdisc_qstats_drop(sch, qlen);	/* freed with the class */
		qdisc_tree_reduce_backlog(sch, qlen, backlog);
	}
	qdisc_class_hash_remove(&q->clhash, &rc->common);
	q->resv_sum -= rc->bw;
	last = q->resv_tab[--q->resv_classes];
	q->resv_tab[rc->pos] = last;
	last->pos = rc->pos;
	sch_tree_unlock(sch);
	parq_skbq_purge(&rc->q);
	parq_resv_free(rc);
	return 0;
}

/* The walk's @i-th class: the fixed ones, then resv_tab. */
static unsigned long parq_class_at(struct parq_sched_data *q, u32 i)
{
	if (i < PARQ_NUM_CLASSES)
		return PARQ_CLASS_PARALLEL + i;
	return (unsigned long)q->resv_tab[i - PARQ_NUM_CLASSES];
}

static void parq_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	u32 n = PARQ_NUM_CLASSES + q->resv_classes;
	u32 i = 0;

	if (arg->stop)
		return;
	/* The first @skip classes were visited by an earlier part of a dump:
	 * they are positions 0 to @skip - 1, passed over without a look.
	 */
	if (arg->count < arg->skip) {
		i = min_t(u32, arg->skip - arg->count, n);
		arg->count += i;
	}
	for (; i < n; i++) {
		if (arg->fn(sch, parq_class_at(q, i), arg) < 0) {
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

/*
 * A filter that steers into a class holds it: what bind_tcf returns is kept
 * in the filter's res.class until unbind_tcf, and a reserved class with
 * filters bound cannot be deleted.  The fixed classes are never freed.
 * A classid naming no class binds nothing (res.class 0): the datapath goes
 * by res.classid, so such a filter steers into the class once it exists.
 * The count changes under RTNL: parq's class operations are not marked
 * QDISC_CLASS_OPS_DOIT_UNLOCKED, so every filter request holds it.
 */
static unsigned long parq_bind_tcf(struct Qdisc *sch, unsigned long parent,
				   u32 classid)
{
	unsigned long cl = parq_find(sch, classid);
	struct parq_resv_class *rc = parq_resv_of(cl);

	if (rc)
		rc->filters++;
	return cl;
}

static void parq_unbind_tcf(struct Qdisc *sch, unsigned long arg)
{
	struct parq_resv_class *rc = parq_resv_of(arg);

	if (rc)
		rc->filters--;
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
	u64 now;

	if (parq_copy_basic(sch, d, &c->bstats) < 0 ||
	    (rc && gnet_stats_copy_rate_est(d, &rc->rate_est) < 0) ||
	    gnet_stats_copy_queue(d, NULL, &c->qstats, c->qlen) < 0)
		return -1;
	if (!rc)
		return 0;
	now = ktime_get_ns();
	sch_tree_lock(sch);
	xs.rate = rc->bw;
	xs.idt = rc->r.idt;
	xs.dispatches = rc->r.dispatches;
	xs.lateness_max = rc->r.lateness_max;
	xs.lateness_sum = rc->r.lateness_sum;
	/* A window that ended with no packet since is closed here. */
	parq_use_roll(&rc->use, now, rc->bw);
	xs.throttled_ns = parq_use_busy_total(&rc->use, now);
	xs.use_windows = rc->use.windows;
	xs.choked_ppm = rc->use.choked;
	xs.unused_ppm = rc->use.unused;
	sch_tree_unlock(sch);
	return gnet_stats_copy_app(d, &xs, sizeof(xs));
}

const struct Qdisc_class_ops parq_class_ops = {
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
