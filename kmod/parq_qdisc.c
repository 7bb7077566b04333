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
 * drops) live in core/parq_policy.h and the arithmetic in core/parq_core.c;
 * the user-space unit tests and benchmarks compile both unchanged.  The
 * qdisc is in four files (parq_qdisc.h lists them); this one holds the
 * operations table and the module's init and exit.
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

	err = parq_datapath_init();
	if (err)
		return err;
	/* The family first, closed: the monitor's reports go through it. */
	err = parq_genl_init();
	if (err)
		goto err_datapath;
	err = parq_credit_init();
	if (err)
		goto err_genl;
	err = parq_monitor_init();
	if (err)
		goto err_credit;
	parq_genl_set_open(true);
	err = register_qdisc(&parq_qdisc_ops);
	if (err)
		goto err_open;
	return 0;

err_open:
	parq_genl_set_open(false);
	parq_monitor_exit();
err_credit:
	parq_credit_exit();
err_genl:
	parq_genl_exit();
err_datapath:
	parq_datapath_exit();
	return err;
}

/*
 * The reverse: no request reaches the tables once they start to go, and the
 * family outlives the monitor, whose timer may still send a report.
 */
static void __exit parq_module_exit(void)
{
	unregister_qdisc(&parq_qdisc_ops);
	parq_genl_set_open(false);
	parq_monitor_exit();
	parq_credit_exit();
	parq_genl_exit();
	/* Every entry queued for kfree_rcu() is freed before the module goes. */
	rcu_barrier();
	/* No qdisc is left: each freed its local flows in ->destroy. */
	parq_datapath_exit();
}

module_init(parq_module_init);
module_exit(parq_module_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("parq developers");
#ifdef PARQ_VERSION
MODULE_VERSION(PARQ_VERSION);
#endif
MODULE_DESCRIPTION("parq: parallel/local packet scheduler with reserved flows, receiver-side credits and a receive monitor");
PARQ_MODULE_ALIAS();
