// SPDX-License-Identifier: GPL-2.0
/*
 * parq receive monitor: what arrives at this host, per source host.
 *
 * A receiving host must know when parallel traffic is arriving, and which
 * hosts send it local traffic meanwhile, to tell those to hold back.  When
 * enabled in a network namespace, a netfilter hook at LOCAL_IN (IPv4 and
 * IPv6) classifies each arriving packet as parallel or local by its DSCP,
 * with the meaning of the qdisc's dscp-parallel, and counts it for its
 * source host: packets, bytes (IP length) and last-seen time per class.
 *
 * The table is bounded (PARQ_A_MON_SIZE sources); a new source beyond it
 * evicts the least recently seen, so spoofed sources cannot exhaust
 * memory.  Lookups take no lock (RCU, atomic counters); the table lock is
 * taken for a new source, and at most once a second per source to keep the
 * recency order.
 *
 * Once the table is full, a new source takes the place of the least
 * recently seen one only if that one has been idle for PARQ_MON_IDLE_NS;
 * otherwise the new source's packets are counted as uncounted
 * (PARQ_A_MON_UNCOUNTED), and it is tried again at a later packet.  And
 * each CPU makes at most size / (PARQ_MON_TURNOVER_S x CPUs) such tries a
 * second; beyond that, packets from unknown sources are counted as
 * uncounted without taking any shared lock.  So a flood from spoofed
 * sources, whatever its rate, takes the table lock a bounded number of
 * times a second and never evicts a source seen within the last
 * PARQ_MON_IDLE_NS: the hosts parqd reads stay.  The price: while the
 * table is full of active sources, a new one is not counted until one of
 * them goes idle (or the operator makes the table larger).
 *
 * With a peer set (PARQ_A_MON_PEERS: parqd passes the hosts of its
 * cluster), a packet whose source is not in it is not counted at all, only
 * summed per CPU (PARQ_A_MON_FOREIGN): a host outside the cluster neither
 * takes a place in the table nor starts parallel traffic, whatever DSCP it
 * sets.  The set is a sorted array read under RCU, replaced whole.
 *
 * Parallel traffic starting to arrive, and stopping (no parallel packet
 * for PARQ_A_MON_HOLD), is reported to the family's "events" group.  The
 * reports are edge-triggered: one start, then one stop at least a hold
 * later, so there are at most two per hold period.
 *
 * A few parallel packets are not parallel traffic: with PARQ_A_MON_MIN_BYTES
 * set, parallel bytes are summed over windows of one hold (each begins at
 * the first parallel packet after the last one ended), and a parallel
 * packet counts as parallel traffic (starts it, keeps it going, moves its
 * source's par-age) only once its window has reached that volume.  So a
 * sender below min-bytes per hold can neither start parallel traffic nor
 * keep it from stopping: at most one hold after the volume falls, the
 * stop timer finds no counting packet for a hold and reports the end.  The
 * packets below it are still counted in the table, and summed in
 * PARQ_A_MON_BELOW.  The window is one shared pair of words, updated
 * without a lock: two CPUs opening a window together may lose a packet's
 * bytes, which can only delay a start.
 *
 * With PARQ_A_MON_REPORT_LOCAL on, a local packet that arrives while
 * parallel traffic does, from a source counted in the table whose last
 * local packet is a hold old or more (or that has sent none), is reported
 * too (PARQ_CMD_MON_LOCAL, with the source's address).  So a reader that
 * dumps the table when parallel traffic starts learns every later local
 * sender from the reports, with no dump while nothing changes: at most
 * one report per source per hold (two CPUs racing may both report), and
 * only for the sources the table admits.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/memcontrol.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/rculist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/stringify.h>
#include <linux/spinlock.h>
#include <net/dsfield.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <linux/parq.h>

#include "parq_compat.h"
#include "parq_genl.h"
#include "parq_monitor.h"

#define PARQ_MON_HASH_BITS	10
#define PARQ_MON_TURNOVER_S	4	/* s: replacement tries per table */
#define PARQ_MON_IDLE_NS	(2 * NSEC_PER_SEC)	/* evictable after */

enum { PARQ_PAR, PARQ_LOC, PARQ_NCLS };

struct parq_peer {
	struct hlist_node	node;
	struct list_head	lru;		/* most recently seen first */
	struct parq_addr	src;
	unsigned long		moved;		/* jiffies of the last LRU move */
	atomic64_t		packets[PARQ_NCLS];
	atomic64_t		bytes[PARQ_NCLS];
	u64			last[PARQ_NCLS];	/* ns, 0: never */
	u64			added;		/* ns */
	struct rcu_head		rcu;
};

/* Admission of new sources, per CPU: no lock, no shared cache line. */
struct parq_mon_pcpu {
	unsigned long		window;		/* jiffies the second began */
	u32			admitted;	/* new sources in this second */
	u64			uncounted;	/* packets refused admission */
	u64			foreign;	/* packets not from a peer */
};

/* The peer set: sorted by parq_addr_cmp(), no duplicates. */
struct parq_mon_peers {
	struct rcu_head		rcu;
	u32			n;
	struct parq_addr	addr[];
};

struct parq_mon_net {
	spinlock_t		lock;		/* table, LRU, events */
	struct hlist_head	hash[1 << PARQ_MON_HASH_BITS];
	struct list_head	lru;
	u32			count;
	u32			size;
	u64			dscp;
	u64			hold;		/* ns */
	bool			enabled;	/* counting */
	bool			hooked;		/* hooks registered */
	bool			active;		/* parallel arriving */
	u64			last_parallel;	/* ns */
	u32			min_bytes;	/* per hold; 0: off */
	u64			win_start;	/* ns: the volume window's */
	atomic64_t		win_bytes;	/* parallel bytes in it */
	atomic64_t		below;		/* packets under min_bytes */
	u64			evicted;
	u64			events;
	atomic64_t		local_events;	/* PARQ_CMD_MON_LOCAL sent */
	bool			report_local;
	u32			seed;
	u32			admit;		/* new sources/s per CPU */
	struct parq_mon_pcpu __percpu *pcpu;
	struct parq_mon_peers __rcu *peers;	/* NULL: every source */
	struct mem_cgroup __rcu	*memcg;		/* charged for the sources */
	struct hrtimer		stop;		/* reports the end of parallel */
	struct net		*net;
};

static unsigned int parq_mon_net_id __read_mostly;

static struct parq_mon_net *parq_mn(const struct net *net)
{
	return net_generic(net, parq_mon_net_id);
}

static struct hlist_head *parq_peer_head(struct parq_mon_net *mn,
					 const struct parq_addr *a)
{
	u32 h = jhash2((__force const u32 *)a->a, ARRAY_SIZE(a->a),
		       a->family ^ mn->seed);

	return &mn->hash[h & ((1 << PARQ_MON_HASH_BITS) - 1)];
}

/* Caller holds rcu_read_lock() or mn->lock. */
static struct parq_peer *parq_peer_find(struct parq_mon_net *mn,
					const struct parq_addr *src)
{
	struct parq_peer *p;

	hlist_for_each_entry_rcu(p, parq_peer_head(mn, src), node,
				 lockdep_is_held(&mn->lock))
		if (parq_addr_eq(&p->src, src))
			return p;
	return NULL;
}

/*
 * Caller holds mn->lock.  hlist_del_init_rcu(), not hlist_del_rcu(): a
 * hook that found @p without the lock tests hlist_unhashed() under it
 * before moving @p in the LRU, and hlist_del_rcu() leaves pprev poisoned,
 * not NULL, so an evicted peer would still look hashed.
 */
static void parq_peer_unlink(struct parq_mon_net *mn, struct parq_peer *p)
{
	hlist_del_init_rcu(&p->node);
	list_del(&p->lru);
	WRITE_ONCE(mn->count, mn->count - 1);
	kfree_rcu(p, rcu);
}

/*
 * Sources a request frees per hold of mn->lock: flush, trim and a new peer
 * set walk up to PARQ_MON_SIZE_MAX sources, in process context, and drop
 * the lock (and bottom halves' exclusion) between batches, so that the
 * hooks on other CPUs, and the softirqs of this one, wait for one batch at
 * most.
 */
#define PARQ_MON_BATCH	64

/*
 * Evict the least recently seen down to @size.  Sources arriving
 * meanwhile find the table full (parq_peer_add()), so it converges.
 * Process context; the caller holds no lock.
 */
static void parq_peer_trim(struct parq_mon_net *mn, u32 size)
{
	bool more;

	do {
		u32 n = 0;

		spin_lock_bh(&mn->lock);
		while (mn->count > size && n++ < PARQ_MON_BATCH) {
			parq_peer_unlink(mn, list_last_entry(&mn->lru,
							     struct parq_peer,
							     lru));
			mn->evicted++;
		}
		more = mn->count > size;
		spin_unlock_bh(&mn->lock);
		cond_resched();
	} while (more);
}

/* Seen last (or added) at least PARQ_MON_IDLE_NS before @now? */
static bool parq_peer_idle(const struct parq_peer *p, u64 now)
{
	u64 seen = max3(p->added, READ_ONCE(p->last[PARQ_PAR]),
			READ_ONCE(p->last[PARQ_LOC]));

	/* Signed: another CPU may have stamped it after we read @now. */
	return (s64)(now - seen) >= (s64)PARQ_MON_IDLE_NS;
}

/* parq_addr_cmp() for sort(). */
static int parq_addr_sort_cmp(const void *x, const void *y)
{
	return parq_addr_cmp(x, y);
}

/* Under rcu_read_lock(): may @src be counted? */
static bool parq_mon_peer_ok(struct parq_mon_net *mn,
			     const struct parq_addr *src)
{
	const struct parq_mon_peers *ps = rcu_dereference(mn->peers);
	u32 lo = 0, hi;

	if (!ps)
		return true;
	hi = ps->n;
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		int c = parq_addr_cmp(src, &ps->addr[mid]);

		if (!c)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

/*
 * A new source's entry, charged to the memory cgroup of whoever enabled
 * the monitor (in softirq there is no caller to charge).  A memory cgroup
 * is freed an RCU grace period after its last reference goes, and the
 * hook runs under rcu_read_lock(), so @memcg stays valid meanwhile even if
 * parq_mon_genl_set() replaces it.
 */
static struct parq_peer *parq_peer_alloc(struct mem_cgroup *memcg)
{
#if PARQ_HAVE_SOFTIRQ_MEMCG
	struct mem_cgroup *old;
	struct parq_peer *p;

	if (memcg) {
		old = set_active_memcg(memcg);
		/* Not GFP_ATOMIC: its __GFP_HIGH charges past memory.max. */
		p = kzalloc(sizeof(*p),
			    GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT);
		set_active_memcg(old);
		return p;
	}
#endif
	return kzalloc(sizeof(struct parq_peer), GFP_ATOMIC | __GFP_NOWARN);
}

/*
 * A source seen for the first time at @now; NULL if memory is short or the
 * table is full of sources that are not idle.  Called under
 * rcu_read_lock(), in softirq.
 */
static struct parq_peer *parq_peer_add(struct parq_mon_net *mn,
				       const struct parq_addr *src, u64 now)
{
	struct mem_cgroup *memcg = rcu_dereference(mn->memcg);
	struct parq_peer *p, *old;

	p = parq_peer_alloc(memcg);
	if (!p)
		return NULL;
	p->src = *src;
	p->moved = jiffies;
	p->added = now;
	spin_lock_bh(&mn->lock);
	old = parq_peer_find(mn, src);	/* another CPU was first */
	/*
	 * The peer set is replaced under the lock: a source that passed the
	 * old set may not enter after the new one has been pruned to.
	 */
	if (old || !mn->enabled || !parq_mon_peer_ok(mn, src)) {
		spin_unlock_bh(&mn->lock);
		kfree(p);
		return old;
	}
	if (mn->count >= mn->size) {
		struct parq_peer *lru = list_last_entry(&mn->lru,
							struct parq_peer, lru);

		/* Over the size: a smaller one is being trimmed to. */
		if (mn->count > mn->size || !parq_peer_idle(lru, now)) {
			spin_unlock_bh(&mn->lock);
			kfree(p);
			this_cpu_inc(mn->pcpu->uncounted);
			return NULL;
		}
		parq_peer_unlink(mn, lru);
		mn->evicted++;
	}
	hlist_add_head_rcu(&p->node, parq_peer_head(mn, src));
	list_add(&p->lru, &mn->lru);
	WRITE_ONCE(mn->count, mn->count + 1);
	spin_unlock_bh(&mn->lock);
	return p;
}

static u32 parq_mon_admit_budget(u32 size)
{
	return max(1U, DIV_ROUND_UP(size, PARQ_MON_TURNOVER_S *
				    num_possible_cpus()));
}

/*
 * May a packet from an unknown source add it to the table?  A softirq on
 * the same CPU can interleave with a hook in process context: at worst one
 * source more is admitted, or one packet less is counted as uncounted.
 */
static bool parq_mon_admit(struct parq_mon_net *mn)
{
	struct parq_mon_pcpu *pc = get_cpu_ptr(mn->pcpu);
	unsigned long now = jiffies;
	bool ok;

	if (time_after_eq(now, pc->window + HZ)) {
		pc->window = now;
		pc->admitted = 0;
	}
	ok = pc->admitted < READ_ONCE(mn->admit);
	if (ok)
		pc->admitted++;
	else
		pc->uncounted++;
	put_cpu_ptr(mn->pcpu);
	return ok;
}

/* The per-CPU counters summed: packets uncounted and foreign. */
static void parq_mon_pcpu_sums(struct parq_mon_net *mn, u64 *uncounted,
			       u64 *foreign)
{
	int cpu;

	*uncounted = 0;
	*foreign = 0;
	for_each_possible_cpu(cpu) {
		const struct parq_mon_pcpu *pc = per_cpu_ptr(mn->pcpu, cpu);

		*uncounted += READ_ONCE(pc->uncounted);
		*foreign += READ_ONCE(pc->foreign);
	}
}

/* Forget every source: the monitor is disabled, so none is added. */
static void parq_peer_flush(struct parq_mon_net *mn)
{
	parq_peer_trim(mn, 0);
}

/* --- fault injection (PARQ_FAULT_INJECT builds only) ----------------------
 *
 * Built with PARQ_FAULT_INJECT=y (make KERNEL=debug does), the module has
 * /sys/kernel/debug/sch_parq/mon_stop_delay_us: the stop timer busy-waits
 * that long between deciding that parallel traffic has stopped and
 * publishing it, so that a test can land a packet inside that window (the
 * race parq_mon_parallel() and parq_mon_stop_timer() are written against;
 * selftests/parq_stress.py).  0, the default, adds nothing.
 */
#ifdef PARQ_FAULT_INJECT
static struct dentry *parq_fault_dir;
static u32 parq_fault_stop_delay_us;

static void parq_fault_stop_delay(void)
{
	u32 us = READ_ONCE(parq_fault_stop_delay_us);

	if (us) {
		mdelay(us / 1000);
		udelay(us % 1000);
	}
}

static void __init parq_fault_init(void)
{
	parq_fault_dir = debugfs_create_dir("sch_parq", NULL);
	debugfs_create_u32("mon_stop_delay_us", 0600, parq_fault_dir,
			   &parq_fault_stop_delay_us);
}

static void parq_fault_exit(void)
{
	debugfs_remove(parq_fault_dir);
}
#else
static inline void parq_fault_stop_delay(void) {}
static inline void parq_fault_init(void) {}
static inline void parq_fault_exit(void) {}
#endif

/* --- events ------------------------------------------------------------- */

static void parq_mon_event(struct parq_mon_net *mn, bool active,
			   const struct parq_addr *src, gfp_t gfp)
{
	struct sk_buff *skb;
	void *hdr;

	mn->events++;
	skb = genlmsg_new(NLMSG_GOODSIZE, gfp);
	if (!skb)
		return;
	hdr = parq_genl_put(skb, 0, 0, 0, PARQ_CMD_MON_EVENT);
	if (!hdr ||
	    nla_put_u8(skb, PARQ_A_MON_ACTIVE, active) ||
	    (src && parq_genl_put_addr(skb, src))) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	parq_genl_notify(mn->net, skb, gfp);
}

/*
 * A local packet from @src arrived at @now (softirq, under RCU), after
 * none since @prev (0: never): report it if it is the source's first in a
 * hold and parallel traffic is arriving.
 */
static void parq_mon_local(struct parq_mon_net *mn,
			   const struct parq_addr *src, u64 prev, u64 now)
{
	struct sk_buff *skb;
	void *hdr;

	/* prev may be a little after now: another CPU's clock read. */
	if (!READ_ONCE(mn->report_local) || !READ_ONCE(mn->active) ||
	    (prev && now < prev + READ_ONCE(mn->hold)))
		return;
	atomic64_inc(&mn->local_events);
	/* One address: PARQ_A_ADDR6 at most. */
	skb = genlmsg_new(nla_total_size(sizeof(struct in6_addr)), GFP_ATOMIC);
	if (!skb)
		return;
	hdr = parq_genl_put(skb, 0, 0, 0, PARQ_CMD_MON_LOCAL);
	if (!hdr || parq_genl_put_addr(skb, src)) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	parq_genl_notify(mn->net, skb, GFP_ATOMIC);
}

/*
 * A parallel packet of @len bytes arrived at @now (softirq): does it count
 * as parallel traffic, its window of one hold having reached min_bytes?
 * A clock read by another CPU may be a little behind win_start: that
 * packet joins the window.
 */
static bool parq_mon_enough(struct parq_mon_net *mn, unsigned int len,
			    u64 now)
{
	u32 min = READ_ONCE(mn->min_bytes);
	u64 start;

	if (!min)
		return true;
	start = READ_ONCE(mn->win_start);
	if (now > start && now - start >= READ_ONCE(mn->hold) &&
	    cmpxchg64(&mn->win_start, start, now) == start)
		atomic64_set(&mn->win_bytes, 0);
	if (atomic64_add_return(len, &mn->win_bytes) >= min)
		return true;
	atomic64_inc(&mn->below);
	return false;
}

/*
 * A parallel packet from @src arrived at @now (softirq).
 *
 * last_parallel only moves forward: a CPU that read the clock before
 * another may store after it, and a last_parallel moved back would let the
 * stop timer report the end early.  The store, then a full barrier, then
 * the read of active pair with the stop timer's store of active, barrier,
 * read of last_parallel: either this hook sees that the timer stopped
 * (and reports a start), or the timer sees this packet (and keeps going).
 */
static void parq_mon_parallel(struct parq_mon_net *mn,
			      const struct parq_addr *src, u64 now)
{
	u64 old = READ_ONCE(mn->last_parallel), prev;

	while (old < now) {
		prev = cmpxchg64(&mn->last_parallel, old, now);
		if (prev == old)
			break;
		old = prev;
	}
	/* Pairs with the barrier in parq_mon_stop_timer(). */
	smp_mb();
	if (READ_ONCE(mn->active))
		return;
	spin_lock_bh(&mn->lock);
	if (!mn->active && mn->enabled) {
		WRITE_ONCE(mn->active, true);
		parq_mon_event(mn, true, src, GFP_ATOMIC);
		hrtimer_start(&mn->stop, ns_to_ktime(now + mn->hold),
			      HRTIMER_MODE_ABS_SOFT);
	}
	spin_unlock_bh(&mn->lock);
}

/*
 * Fires a hold after the last parallel packet seen when it was armed
 * (softirq): has parallel traffic stopped, or when to look again.  An
 * hrtimer, not a delayed work: the stop report is part of the senders'
 * recovery time, and a work would add up to two jiffies and a kworker's
 * wake-up.  The report goes out under the lock, so that it cannot pass a
 * start report of the next burst.
 */
static enum hrtimer_restart parq_mon_stop_timer(struct hrtimer *t)
{
	struct parq_mon_net *mn = container_of(t, struct parq_mon_net, stop);
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	u64 now = ktime_get_ns(), due;

	spin_lock(&mn->lock);
	if (mn->active) {
		due = READ_ONCE(mn->last_parallel) + mn->hold;
		if (now >= due) {
			/*
			 * A packet whose hook read active before this store
			 * reports no start: look again after it (pairs with
			 * the barrier in parq_mon_parallel()).
			 */
			parq_fault_stop_delay();
			WRITE_ONCE(mn->active, false);
			/* Pairs with the barrier in parq_mon_parallel(). */
			smp_mb();
			due = READ_ONCE(mn->last_parallel) + mn->hold;
		}
		if (now >= due) {
			parq_mon_event(mn, false, NULL, GFP_ATOMIC);
		} else {
			WRITE_ONCE(mn->active, true);
			hrtimer_set_expires(t, ns_to_ktime(due));
			ret = HRTIMER_RESTART;
		}
	}
	spin_unlock(&mn->lock);
	return ret;
}

/* --- the hook ----------------------------------------------------------- */

static unsigned int parq_mon_hook(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	struct parq_mon_net *mn = parq_mn(state->net);
	struct parq_addr src = {};
	struct parq_peer *p;
	unsigned int len;
	int cls, dscp;
	bool counts;
	u64 now, prev;

	if (!READ_ONCE(mn->enabled))
		return NF_ACCEPT;
	if (state->pf == NFPROTO_IPV4) {
		const struct iphdr *iph = ip_hdr(skb);

		src.family = AF_INET;
		src.a[0] = iph->saddr;
		dscp = ipv4_get_dsfield(iph) >> 2;
		len = ntohs(iph->tot_len);
	} else {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		src.family = AF_INET6;
		memcpy(src.a, &ip6h->saddr, sizeof(src.a));
		dscp = ipv6_get_dsfield(ip6h) >> 2;
		len = sizeof(*ip6h) + ntohs(ip6h->payload_len);
	}
	cls = READ_ONCE(mn->dscp) & PARQ_DSCP_BIT(dscp) ? PARQ_PAR : PARQ_LOC;
	/* Sources outside the peer set do not add to the volume. */
	counts = cls == PARQ_LOC;

	rcu_read_lock();
	if (!parq_mon_peer_ok(mn, &src)) {
		rcu_read_unlock();
		this_cpu_inc(mn->pcpu->foreign);
		return NF_ACCEPT;
	}
	now = ktime_get_ns();
	if (cls == PARQ_PAR)
		counts = parq_mon_enough(mn, len, now);
	p = parq_peer_find(mn, &src);
	/* Free room is not rationed: filling it evicts nobody. */
	if (!p && (READ_ONCE(mn->count) < READ_ONCE(mn->size) ||
		   parq_mon_admit(mn)))
		p = parq_peer_add(mn, &src, now);
	if (p) {
		atomic64_inc(&p->packets[cls]);
		atomic64_add(len, &p->bytes[cls]);
		prev = READ_ONCE(p->last[cls]);
		if (counts)
			WRITE_ONCE(p->last[cls], now);
		if (cls == PARQ_LOC)
			parq_mon_local(mn, &src, prev, now);
		if (time_after(jiffies, READ_ONCE(p->moved) + HZ)) {
			spin_lock_bh(&mn->lock);
			if (!hlist_unhashed(&p->node)) {
				list_move(&p->lru, &mn->lru);
				WRITE_ONCE(p->moved, jiffies);
			}
			spin_unlock_bh(&mn->lock);
		}
	}
	rcu_read_unlock();
	if (cls == PARQ_PAR && counts)
		parq_mon_parallel(mn, &src, now);
	return NF_ACCEPT;
}

static const struct nf_hook_ops parq_mon_ops[] = {
	{
		.hook		= parq_mon_hook,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP_PRI_LAST,
	},
	{
		.hook		= parq_mon_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP6_PRI_LAST,
	},
};

/*
 * Stop counting and forget the sources.  Requests are serialized by the
 * genl mutex.  @notify: report a parallel stream that was still arriving
 * as stopped (not when the namespace or the module goes away).
 *
 * The hooks stay registered until the namespace goes away (parq_mon_net_
 * exit()): the first registration and the last unregistration in the
 * kernel flip a static key, which rewrites the code of every packet's path
 * through LOCAL_IN, and a monitor that parqd enables and disables at each
 * start and stop would do that under traffic each time.  A hook that runs
 * while disabled returns at once; one that was already past that check
 * can neither add a source nor arm the timer, which both test enabled
 * under the lock.
 */
static void parq_mon_disable(struct parq_mon_net *mn, bool notify)
{
	bool was_active;

	if (!mn->enabled)
		return;
	spin_lock_bh(&mn->lock);
	WRITE_ONCE(mn->enabled, false);
	spin_unlock_bh(&mn->lock);
	hrtimer_cancel(&mn->stop);	/* no hook can arm it again */
	spin_lock_bh(&mn->lock);
	was_active = mn->active;
	WRITE_ONCE(mn->active, false);
	spin_unlock_bh(&mn->lock);
	if (was_active && notify)
		parq_mon_event(mn, false, NULL, GFP_KERNEL);
	parq_peer_flush(mn);
}

/*
 * From now on new sources are charged to @memcg (a reference the caller
 * hands over; NULL: none).  Requests are serialized by the genl mutex.
 */
static void parq_mon_set_memcg(struct parq_mon_net *mn,
			       struct mem_cgroup *memcg)
{
	mem_cgroup_put(rcu_replace_pointer(mn->memcg, memcg, true));
}

/* --- generic netlink handlers -------------------------------------------- */

/*
 * The peer set in @nest (PARQ_A_ADDR4 and PARQ_A_ADDR6, validated by the
 * policy): sorted, duplicates dropped.  NULL in *@out for an empty nest.
 */
static int parq_mon_peers_parse(const struct nlattr *nest,
				struct parq_mon_peers **out,
				struct netlink_ext_ack *extack)
{
	struct parq_mon_peers *ps;
	const struct nlattr *na;
	u32 n = 0, i, j;
	int rem;

	*out = NULL;
	nla_for_each_nested(na, nest, rem)
		n++;
	if (!n)
		return 0;
	if (n > PARQ_MON_PEERS_MAX) {
		NL_SET_ERR_MSG_ATTR(extack, nest,
				    "parq: too many peers, the most is "
				    __stringify(PARQ_MON_PEERS_MAX));
		return -E2BIG;
	}
	ps = kvzalloc(struct_size(ps, addr, n), GFP_KERNEL_ACCOUNT);
	if (!ps)
		return -ENOMEM;
	i = 0;
	nla_for_each_nested(na, nest, rem) {
		struct parq_addr *pa = &ps->addr[i++];

		if (nla_type(na) == PARQ_A_ADDR4) {
			pa->family = AF_INET;
			pa->a[0] = nla_get_in_addr(na);
		} else {
			pa->family = AF_INET6;
			nla_memcpy(pa->a, na, sizeof(pa->a));
		}
	}
	sort(ps->addr, n, sizeof(ps->addr[0]), parq_addr_sort_cmp, NULL);
	for (i = 1, j = 1; i < n; i++)
		if (parq_addr_cmp(&ps->addr[i], &ps->addr[j - 1]))
			ps->addr[j++] = ps->addr[i];
	ps->n = j;
	*out = ps;
	return 0;
}

/*
 * Drop the sources outside the peer set just installed, one hash bucket per
 * hold of mn->lock: a source added meanwhile was checked against the new
 * set already.  Requests, which install sets, are serialized by the genl
 * mutex.  Process context; the caller holds no lock.
 */
static void parq_mon_peers_prune(struct parq_mon_net *mn)
{
	struct parq_peer *p;
	struct hlist_node *tmp;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(mn->hash); i++) {
		spin_lock_bh(&mn->lock);
		rcu_read_lock();	/* parq_mon_peer_ok() reads under it */
		hlist_for_each_entry_safe(p, tmp, &mn->hash[i], node)
			if (!parq_mon_peer_ok(mn, &p->src))
				parq_peer_unlink(mn, p);
		rcu_read_unlock();
		spin_unlock_bh(&mn->lock);
		if (!(i % PARQ_MON_BATCH))
			cond_resched();
	}
}

int parq_mon_genl_set(struct sk_buff *skb, struct genl_info *info)
{
	struct parq_mon_net *mn = parq_mn(genl_info_net(info));
	struct parq_mon_peers *peers = NULL, *old;
	struct nlattr **a = info->attrs;
	bool enable = mn->enabled;
	int err;

	/* What can fail goes first: a refused request changes nothing. */
	if (a[PARQ_A_MON_PEERS]) {
		err = parq_mon_peers_parse(a[PARQ_A_MON_PEERS], &peers,
					   info->extack);
		if (err)
			return err;
	}
	if (a[PARQ_A_MON_ENABLED])
		enable = nla_get_u8(a[PARQ_A_MON_ENABLED]);
	if (enable && !mn->hooked) {
		err = nf_register_net_hooks(mn->net, parq_mon_ops,
					    ARRAY_SIZE(parq_mon_ops));
		if (err) {
			NL_SET_ERR_MSG(info->extack,
				       "parq: cannot register the netfilter hooks");
			kvfree(peers);
			return err;
		}
		mn->hooked = true;
	} else if (!enable) {
		parq_mon_disable(mn, true);
	}
	if (enable)
		parq_mon_set_memcg(mn, get_mem_cgroup_from_mm(current->mm));
	spin_lock_bh(&mn->lock);
	if (a[PARQ_A_MON_SIZE]) {
		WRITE_ONCE(mn->size, nla_get_u32(a[PARQ_A_MON_SIZE]));
		WRITE_ONCE(mn->admit, parq_mon_admit_budget(mn->size));
	}
	if (a[PARQ_A_MON_DSCP])
		WRITE_ONCE(mn->dscp, nla_get_u64(a[PARQ_A_MON_DSCP]));
	if (a[PARQ_A_MON_HOLD])
		WRITE_ONCE(mn->hold, nla_get_u64(a[PARQ_A_MON_HOLD]));
	if (a[PARQ_A_MON_PEERS]) {
		old = rcu_replace_pointer(mn->peers, peers,
					  lockdep_is_held(&mn->lock));
		if (old)
			kvfree_rcu(old, rcu);
	}
	if (a[PARQ_A_MON_REPORT_LOCAL])
		WRITE_ONCE(mn->report_local,
			   nla_get_u8(a[PARQ_A_MON_REPORT_LOCAL]));
	if (a[PARQ_A_MON_MIN_BYTES])
		WRITE_ONCE(mn->min_bytes,
			   nla_get_u32(a[PARQ_A_MON_MIN_BYTES]));
	WRITE_ONCE(mn->enabled, enable);
	spin_unlock_bh(&mn->lock);
	if (a[PARQ_A_MON_SIZE])
		parq_peer_trim(mn, READ_ONCE(mn->size));
	if (peers)
		parq_mon_peers_prune(mn);
	return 0;
}

int parq_mon_genl_get(struct sk_buff *skb, struct genl_info *info)
{
	struct parq_mon_net *mn = parq_mn(genl_info_net(info));
	const struct parq_mon_peers *ps;
	u64 uncounted, foreign;
	struct sk_buff *msg;
	void *hdr;

	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = parq_genl_put(msg, info->snd_portid, info->snd_seq, 0,
			    PARQ_CMD_MON_GET);
	if (!hdr)
		goto nospace;
	parq_mon_pcpu_sums(mn, &uncounted, &foreign);
	spin_lock_bh(&mn->lock);
	ps = rcu_dereference_protected(mn->peers, lockdep_is_held(&mn->lock));
	if (nla_put_u8(msg, PARQ_A_MON_ENABLED, mn->enabled) ||
	    nla_put_u32(msg, PARQ_A_MON_SIZE, mn->size) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_DSCP, mn->dscp, PARQ_A_PAD) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_HOLD, mn->hold, PARQ_A_PAD) ||
	    nla_put_u32(msg, PARQ_A_MON_SOURCES, mn->count) ||
	    nla_put_u8(msg, PARQ_A_MON_ACTIVE, mn->active) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_EVICTED, mn->evicted,
			      PARQ_A_PAD) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_EVENTS, mn->events,
			      PARQ_A_PAD) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_UNCOUNTED, uncounted,
			      PARQ_A_PAD) ||
	    nla_put_u32(msg, PARQ_A_MON_NPEERS, ps ? ps->n : 0) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_FOREIGN, foreign, PARQ_A_PAD) ||
	    nla_put_u8(msg, PARQ_A_MON_REPORT_LOCAL, mn->report_local) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_LOCAL_EVENTS,
			      atomic64_read(&mn->local_events), PARQ_A_PAD) ||
	    nla_put_u32(msg, PARQ_A_MON_MIN_BYTES, mn->min_bytes) ||
	    nla_put_u64_64bit(msg, PARQ_A_MON_BELOW,
			      atomic64_read(&mn->below), PARQ_A_PAD)) {
		spin_unlock_bh(&mn->lock);
		goto nospace;
	}
	spin_unlock_bh(&mn->lock);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static int parq_peer_fill(struct sk_buff *skb, const struct parq_peer *p,
			  u32 portid, u32 seq, u64 now)
{
	static const int attr[PARQ_NCLS][3] = {
		{ PARQ_A_PAR_PACKETS, PARQ_A_PAR_BYTES, PARQ_A_PAR_AGE },
		{ PARQ_A_LOC_PACKETS, PARQ_A_LOC_BYTES, PARQ_A_LOC_AGE },
	};
	void *hdr;
	u64 last;
	int c;

	hdr = parq_genl_put(skb, portid, seq, NLM_F_MULTI, PARQ_CMD_PEER_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (parq_genl_put_addr(skb, &p->src))
		goto nospace;
	for (c = 0; c < PARQ_NCLS; c++) {
		last = READ_ONCE(p->last[c]);
		if (nla_put_u64_64bit(skb, attr[c][0],
				      atomic64_read(&p->packets[c]),
				      PARQ_A_PAD) ||
		    nla_put_u64_64bit(skb, attr[c][1],
				      atomic64_read(&p->bytes[c]),
				      PARQ_A_PAD) ||
		    (last && nla_put_u64_64bit(skb, attr[c][2],
					       now > last ? now - last : 0,
					       PARQ_A_PAD)))
			goto nospace;
	}
	genlmsg_end(skb, hdr);
	return 0;
nospace:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int parq_peer_dump_one(struct sk_buff *skb, struct hlist_node *node,
			      struct netlink_callback *cb, u64 now)
{
	return parq_peer_fill(skb, hlist_entry(node, struct parq_peer, node),
			      NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			      now);
}

int parq_peer_genl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct parq_mon_net *mn = parq_mn(sock_net(skb->sk));

	return parq_genl_dump_chains(skb, cb, mn->hash, ARRAY_SIZE(mn->hash),
				     parq_peer_dump_one);
}

/* --- namespaces ----------------------------------------------------------- */

static int __net_init parq_mon_net_init(struct net *net)
{
	struct parq_mon_net *mn = parq_mn(net);

	mn->pcpu = alloc_percpu_gfp(struct parq_mon_pcpu, GFP_KERNEL_ACCOUNT);
	if (!mn->pcpu)
		return -ENOMEM;
	spin_lock_init(&mn->lock);
	INIT_LIST_HEAD(&mn->lru);
	hrtimer_setup(&mn->stop, parq_mon_stop_timer, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS_SOFT);
	mn->size = PARQ_MON_SIZE_DEFAULT;
	mn->admit = parq_mon_admit_budget(mn->size);
	mn->dscp = PARQ_DSCP_DEFAULT;
	mn->hold = PARQ_MON_HOLD_DEFAULT;
	mn->seed = get_random_u32();
	mn->net = net;
	return 0;
}

/*
 * Unregistering does not wait for a hook still running on another CPU.  The
 * namespace core waits for an RCU grace period between every .pre_exit and
 * the first .exit, once for all the namespaces that go together, so the
 * hooks are gone before parq_mon_net_exit() frees what they use: one grace
 * period for a module unload or a batch of namespaces, not one each.
 */
static void __net_exit parq_mon_net_pre_exit(struct net *net)
{
	struct parq_mon_net *mn = parq_mn(net);

	if (mn->hooked)
		nf_unregister_net_hooks(net, parq_mon_ops,
					ARRAY_SIZE(parq_mon_ops));
}

static void __net_exit parq_mon_net_exit(struct net *net)
{
	struct parq_mon_net *mn = parq_mn(net);

	parq_mon_disable(mn, false);
	hrtimer_cancel(&mn->stop);
	parq_mon_set_memcg(mn, NULL);
	/* The hooks are gone (pre_exit, then a grace period). */
	kvfree(rcu_dereference_protected(mn->peers, true));
	free_percpu(mn->pcpu);
}

static struct pernet_operations parq_mon_net_ops = {
	.init		= parq_mon_net_init,
	.pre_exit	= parq_mon_net_pre_exit,
	.exit		= parq_mon_net_exit,
	.id		= &parq_mon_net_id,
	.size		= sizeof(struct parq_mon_net),
};

int __init parq_monitor_init(void)
{
	int err = register_pernet_subsys(&parq_mon_net_ops);

	if (!err)
		parq_fault_init();
	return err;
}

void parq_monitor_exit(void)
{
	parq_fault_exit();
	unregister_pernet_subsys(&parq_mon_net_ops);
}
