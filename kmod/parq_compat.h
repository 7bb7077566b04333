/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel API differences between 5.10 and 7.2, the
 * kernels parq is built and tested on, are absorbed.  Feature tests where
 * a macro exists; version numbers only where an interface changed without
 * one.
 */
#ifndef _PARQ_COMPAT_H
#define _PARQ_COMPAT_H

#include <linux/version.h>
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 10, 0)
#error "sch_parq is built and tested on Linux 5.10 to 7.2: this kernel is older"
#endif
#include <linux/module.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>
#include <net/gen_stats.h>
#include <linux/hrtimer.h>
#include <linux/netlink.h>
#include <linux/rbtree.h>
/*
 * 6.5 moved skb_gso_segment() and friends from <linux/netdevice.h> to
 * <net/gso.h>.  A version test: sparse 0.6.4 (bookworm's) does not parse
 * __has_include(<...>).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#include <net/gso.h>
#endif

/*
 * 6.13 added hrtimer_setup(), which sets the callback with the clock and
 * mode; 6.15 removed hrtimer_init().
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void
hrtimer_setup(struct hrtimer *timer,
	      enum hrtimer_restart (*function)(struct hrtimer *),
	      clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* 5.12 added rb_add_cached(): insertion by a less-than function. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 12, 0)
static inline void
rb_add_cached(struct rb_node *node, struct rb_root_cached *tree,
	      bool (*less)(struct rb_node *, const struct rb_node *))
{
	struct rb_node **link = &tree->rb_root.rb_node, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		parent = *link;
		if (less(node, parent)) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(node, parent, link);
	rb_insert_color_cached(node, tree, leftmost);
}
#endif

/* Newer kernels request "net-sch-<kind>"; 6.1 and older request sch_<kind>. */
#ifdef MODULE_ALIAS_NET_SCH
#define PARQ_MODULE_ALIAS()	MODULE_ALIAS_NET_SCH("parq")
#else
#define PARQ_MODULE_ALIAS()	MODULE_ALIAS("net-sch-parq")
#endif

/* 5.18 replaced gnet_stats_basic_packed and the seqcount "running" arg. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 18, 0)
#define parq_bstats_t			struct gnet_stats_basic_sync
#define parq_bstats_init(b)		gnet_stats_basic_sync_init(b)
#define parq_copy_basic(sch, d, b)	gnet_stats_copy_basic(d, NULL, b, true)
#else
#define parq_bstats_t			struct gnet_stats_basic_packed
#define parq_bstats_init(b)		do { } while (0)
#define parq_copy_basic(sch, d, b)	\
	gnet_stats_copy_basic(qdisc_root_sleeping_running(sch), d, NULL, b)
#endif

/* 5.16 added the tcf_block argument to tcf_classify(). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 16, 0)
#define parq_tcf_classify(skb, tp, res) tcf_classify(skb, NULL, tp, res, false)
#else
#define parq_tcf_classify(skb, tp, res) tcf_classify(skb, tp, res, false)
#endif

/* 5.19 gave Qdisc_class_ops.delete an extack. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 19, 0)
#define PARQ_CLASS_DELETE_ARGS	struct Qdisc *sch, unsigned long arg, \
				struct netlink_ext_ack *extack
#define PARQ_CLASS_DELETE_EXTACK	extack
#else
#define PARQ_CLASS_DELETE_ARGS	struct Qdisc *sch, unsigned long arg
#define PARQ_CLASS_DELETE_EXTACK	NULL
#endif

/* 5.18 also dropped the seqcount from the rate estimator API. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 18, 0)
#define parq_replace_estimator(sch, b, est, opt) \
	gen_replace_estimator(b, NULL, est, NULL, true, opt)
#else
#define parq_replace_estimator(sch, b, est, opt) \
	gen_replace_estimator(b, NULL, est, NULL, \
			      qdisc_root_sleeping_running(sch), opt)
#endif

/*
 * Formatted extack messages (6.2), at most NETLINK_MAX_FMTMSG_LEN - 1 = 79
 * characters.  parq's fit with any value their fields can take: a refusal
 * is 31 characters and three numbers of bit/s, a request of at most 15
 * digits (one 64 KiB MTU per ns) and a capacity of at most 16 (a link
 * speed of 2^32 Mbit/s), 78 in all; "below reserved" is 46 and two of at
 * most 16, 78.  Older kernels get the plain text @plain (the arguments are
 * only type-checked against @fmt).
 */
#ifdef NL_SET_ERR_MSG_FMT
#define PARQ_SET_ERR_FMT(extack, plain, fmt, ...) \
	NL_SET_ERR_MSG_FMT(extack, fmt, ##__VA_ARGS__)
#else
#define PARQ_SET_ERR_FMT(extack, plain, fmt, ...) do {	\
	NL_SET_ERR_MSG(extack, plain);			\
	no_printk(fmt, ##__VA_ARGS__);			\
} while (0)
#endif

/* 6.2 split the ops that pre_doit sees into genl_split_ops. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define PARQ_GENL_PRE_DOIT_OPS_T	const struct genl_split_ops
#else
#define PARQ_GENL_PRE_DOIT_OPS_T	const struct genl_ops
#endif

/*
 * Joining a multicast group that needs CAP_NET_ADMIN over the namespace
 * (6.6, and Debian's 6.1 by a backport).  Older kernels let anyone join,
 * and the events tell which hosts talk to which: there the family has no
 * events group at all (PARQ_HAVE_EVENTS 0), and the monitor's state is
 * read with PARQ_CMD_MON_GET and PARQ_CMD_PEER_GET.
 */
#ifdef GENL_MCAST_CAP_NET_ADMIN
#define PARQ_HAVE_EVENTS	1
#define PARQ_MCGRP_ADMIN	GENL_MCAST_CAP_NET_ADMIN
#else
#define PARQ_HAVE_EVENTS	0
#define PARQ_MCGRP_ADMIN	0
#endif

/*
 * set_active_memcg() in softirq writes int_active_memcg, which 5.10 does
 * not export to modules (6.1, the oldest tested kernel after it, does).
 * Before 6.1 the monitor's sources and the qdisc's local queues, allocated
 * in softirq, are charged to no memory cgroup.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0)
#define PARQ_HAVE_SOFTIRQ_MEMCG	1
#else
#define PARQ_HAVE_SOFTIRQ_MEMCG	0
#endif

/*
 * A device queue's qdisc_sleeping is an __rcu pointer since 6.5 (and in
 * the 6.1 and 5.15 stable series); 5.10's is a plain one.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 15, 0)
#define parq_txq_qdisc_sleeping(txq)	rtnl_dereference((txq)->qdisc_sleeping)
#else
#define parq_txq_qdisc_sleeping(txq)	((txq)->qdisc_sleeping)
#endif

/*
 * 7.2's __ethtool_get_link_ksettings() takes the device's instance lock
 * when its operations are locked (dummy, netdevsim, and drivers with queue
 * management), and tc already holds that lock around a qdisc's or class's
 * init and change: there the qdisc must call netif_get_link_ksettings(),
 * added with that change, which expects the lock (or RTNL) held.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
#define parq_get_link_ksettings	netif_get_link_ksettings
#else
#define parq_get_link_ksettings	__ethtool_get_link_ksettings
#endif

/* 6.1 added the big-endian integer policy types. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#define NLA_BE32	NLA_U32
#endif

#endif /* _PARQ_COMPAT_H */
