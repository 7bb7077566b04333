/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel API differences between 5.15 and current
 * kernels are absorbed.  Feature tests where a macro exists; version
 * numbers only where an interface changed without one.
 */
#ifndef _PARQ_COMPAT_H
#define _PARQ_COMPAT_H

#include <linux/version.h>
#include <linux/module.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>
#include <net/gen_stats.h>
/*
 * 6.5 moved skb_gso_segment() and friends from <linux/netdevice.h> to
 * <net/gso.h>.  A version test: sparse 0.6.4 (bookworm's) does not parse
 * __has_include(<...>).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#include <net/gso.h>
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
 * Formatted extack messages (6.2), at most NETLINK_MAX_FMTMSG_LEN - 1
 * characters: parq's fit with any value their fields can take.  Older
 * kernels get the plain text @plain (the arguments are still evaluated and
 * checked against @fmt).
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

/* 6.1 added the big-endian integer policy types. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#define NLA_BE32	NLA_U32
#endif

#endif /* _PARQ_COMPAT_H */
