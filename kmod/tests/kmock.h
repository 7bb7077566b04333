/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A user-space stand-in for the kernel functions sch_parq's glue calls
 * (kmock.c), and what a test controls and reads of it.  Included by the
 * tests, which are compiled against the kernel's headers.
 */
#ifndef _PARQ_KMOCK_H
#define _PARQ_KMOCK_H

#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/sch_generic.h>

#include "ktest.h"

/* The C library, which the kernel's headers do not declare. */
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void free(void *p);
int vprintf(const char *fmt, va_list ap);

/* The clock ktime_get() reads, in ns: kmock_set_now() moves it. */
extern u64 kmock_now;
/* The link speed ethtool reports, in Mbit/s; 0: none (an error). */
extern u32 kmock_link_mbps;
/*
 * Allocation failure injection: the allocation that many allocations
 * from now fails (0: the next one); negative: none fails.  Every kmalloc,
 * kvmalloc, kmem_cache_alloc and skb counts.
 */
extern long kmock_fail_at;
/*
 * Allocations not freed yet, and those that were live when the test
 * started (kmock_reset()).
 */
extern long kmock_live;
extern long kmock_base;

/* Everything the test allocated is freed. */
#define KT_ASSERT_NO_LEAK()	KT_ASSERT_EQ(kmock_live, kmock_base)
/* What the qdisc told its parents it dropped (qdisc_tree_reduce_backlog). */
extern long kmock_reduced_pkts, kmock_reduced_bytes;
/* The last qdisc_watchdog_schedule_range_ns(): its expiry, 0 if none. */
extern u64 kmock_watchdog_at;
/* What the last gnet_stats_copy_app copied (xstats), and its length. */
extern char kmock_app[256];
extern int kmock_app_len;

/*
 * The filters of a qdisc whose filter_list a test set (to any non-NULL
 * value): every packet gets this verdict (TC_ACT_*, or TC_ACT_UNSPEC for
 * no match) and classid.
 */
extern int kmock_filter_verdict;
extern u32 kmock_filter_classid;

/*
 * A set of @n pending pointers (work queued, timers armed): add @p unless
 * it is in already (false then; a full set WARNs), or take it out (false
 * if it was not in).
 */
bool kmock_pending_add(void **set, unsigned int n, void *p);
bool kmock_pending_del(void **set, unsigned int n, void *p);

/* A tracked, zeroed allocation (kvfree() frees it), for the mock's own use. */
void *kmock_zalloc(size_t size);

/* The one network namespace (kmock_net.c). */
extern struct net *kmock_net;
/* Buckets of the rhashtables made from now on (a power of 2). */
#define KMOCK_RHT_SIZE	4096
extern unsigned int kmock_rht_size;
/* A socket in it, for a dump's request. */
struct sock *kmock_sock(void);
/* Free what kfree_rcu() was given: a grace period. */
void kmock_rcu_sync(void);
/* Run the delayed work queued so far; how many ran. */
unsigned int kmock_run_work(void);
/* The last unicast reply (genlmsg_reply()), the test's to free. */
extern struct sk_buff *kmock_reply;
/* The generic netlink family registered, for requests to it. */
extern const struct genl_family *kmock_genl_family;
/* Multicast notifications sent. */
extern long kmock_notified;

/* The netfilter hooks registered last (kmock_mon.c). */
extern const struct nf_hook_ops *kmock_hooks;
extern unsigned int kmock_nhooks;
/* Fire the hrtimers due at kmock_now; how many fired. */
unsigned int kmock_fire_timers(void);

/*
 * Start a test from a clean mock: clock at 1 s, 10 Gbit/s, no injection,
 * and the module initialized.
 */
void kmock_reset(void);

/*
 * The module's own init, once per test whatever the calls; after the test
 * ktest_teardown() runs its exit.
 */
int kmock_module_init(void);
/* The qdisc's operations, as the module registered them. */
extern const struct Qdisc_ops *kmock_qdisc_ops;

/*
 * A net_device with @ntx tx queues, and at its root what the kernel puts
 * there first: mq when there are several queues, pfifo_fast for one.
 */
struct net_device *kmock_dev_new(unsigned int mtu, unsigned int ntx);
void kmock_dev_free(struct net_device *dev);

/*
 * A qdisc of @ops with its private area on @dev, as qdisc_create() makes
 * it before its init: its parent set, not grafted.
 */
struct Qdisc *kmock_qdisc_new(struct net_device *dev,
			      const struct Qdisc_ops *ops, u32 handle,
			      u32 parent);
/* Graft @sch as the root (@txq < 0) or as tx queue @txq's qdisc (mq's). */
void kmock_graft(struct Qdisc *sch, int txq);
void kmock_qdisc_free(struct Qdisc *sch);

/*
 * The tests' addresses: a destination host is 10.0.0.@n, a sender that
 * packets arrive from is 10.0.1.@n (network byte order).
 */
#define KMOCK_DST(n)	htonl(0x0a000000 | (n))
#define KMOCK_SRC(n)	htonl(0x0a000100 | (n))

/* An skb for netlink attributes; kfree_skb() frees it. */
struct sk_buff *kmock_nl_skb(unsigned int size);

/*
 * An IPv4 packet of @len bytes from the network header on (protocol UDP,
 * zeros after the IP header), to 10.0.0.@dst, with @prio in
 * skb->priority and @tos in its header.
 */
struct sk_buff *kmock_ipv4(unsigned int len, u8 dst, u32 prio, u8 tos);

/*
 * A GSO packet of @len bytes from the network header on, to 10.0.0.@dst,
 * that segments into pieces of @mss bytes after its IPv4 header; its
 * length for the qdisc counts every segment's header, as the stack's.
 */
struct sk_buff *kmock_ipv4_gso(unsigned int len, u8 dst, u32 prio,
			       unsigned int mss);

/* An arriving IPv4 packet from 10.0.1.@src, with @tos. */
struct sk_buff *kmock_ipv4_from(unsigned int len, u8 src, u8 tos);

/* Set the clock, or move it on by @ns; jiffies follow. */
void kmock_set_now(u64 ns);
void kmock_advance(u64 ns);

#endif /* _PARQ_KMOCK_H */
