// SPDX-License-Identifier: GPL-2.0
/*
 * sch_parq's datapath: classification, the queues, enqueue and dequeue.
 *
 * The queues: a per-flow queue for each parallel flow (deficit round robin),
 * a queue per destination host for local packets (deficit round robin, and
 * an rb-tree of the destinations waiting for receiver credit), a FIFO per
 * reserved class (an rb-tree by (NDT, classid)), and the control queue, a
 * FIFO of the packets of priority TC_PRIO_CONTROL that dequeue serves
 * before all of these.  What to send, when to look again and what a full
 * qdisc drops is decided by core/parq_policy.h.
 */
#include <linux/ethtool.h>
#include <linux/hash.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rbtree.h>
#include <linux/rbtree_augmented.h>
#include <linux/rtnetlink.h>
#include <linux/sched/mm.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/dsfield.h>
#include <net/inet_ecn.h>
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

/*
 * DSCPs of IP precedence 6 and 7 (CS6, CS7): the switches' network
 * control queue.  Any local user may set them (IP_TOS), so only the
 * control queue, which takes a privileged priority, may keep them.
 */
#define PARQ_DSCP_NETCTL_MIN	48

/*
 * dscp-mark: a packet classified parallel (or into a reserved class)
 * leaves with the configured DSCP, a local one that carries a parallel
 * DSCP with CS0, so that the receiving host's monitor counts it as this
 * qdisc classified it; a local one that carries a network control DSCP
 * leaves with CS0 too, so that it cannot ride ahead of the cluster's
 * credit messages at the switches.  ECN bits are kept.  A header that
 * cannot be made writable leaves the packet as it came.  Packets of the
 * control queue are not marked.
 */
static void parq_mark(struct sk_buff *skb, const struct parq_config *cfg,
		      unsigned long cl)
{
	u8 mark = cfg->dscp_mark;
	int dscp = parq_dscp(skb);
	unsigned int wlen = skb_network_offset(skb);

	if (mark == PARQ_DSCP_MARK_OFF || dscp < 0)
		return;
	if (cl == PARQ_CLASS_LOCAL) {
		if (!(cfg->dscp_parallel & PARQ_DSCP_BIT(dscp)) &&
		    dscp < PARQ_DSCP_NETCTL_MIN)
			return;
		mark = 0;
	}
	if (dscp == mark)
		return;
	if (skb_protocol(skb, true) == htons(ETH_P_IP)) {
		if (skb_try_make_writable(skb, wlen + sizeof(struct iphdr)))
			return;
		ipv4_change_dsfield(ip_hdr(skb), INET_ECN_MASK, mark << 2);
	} else {
		if (skb_try_make_writable(skb, wlen + sizeof(struct ipv6hdr)))
			return;
		ipv6_change_dsfield(ipv6_hdr(skb), INET_ECN_MASK, mark << 2);
	}
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

/*
 * Network control (TC_PRIO_CONTROL: SO_PRIORITY 7 needs CAP_NET_ADMIN or
 * CAP_NET_RAW, and the stack gives it to its own IGMP and MLD reports)
 * goes to the control queue, before filters: a filter that catches all
 * cannot hold it back.  Only 7 itself: a priority with a major number is a
 * classid, this qdisc's or a parent's (parq as a leaf of htb).
 */
static bool parq_is_control(const struct sk_buff *skb)
{
	return skb->priority == TC_PRIO_CONTROL;
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
	/*
	 * A qdisc of handle 0 (the default qdisc, mq's children) has no
	 * classids to address: there any user's SO_PRIORITY 1 or 2 would
	 * pick a class.
	 */
	if (sch->handle && TC_H_MAJ(skb->priority) == sch->handle)
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
void parq_skbq_purge(struct parq_skbq *pq)
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
unsigned int parq_held(const struct Qdisc *sch)
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

/*
 * The destinations are hashed (with a per-qdisc random seed) into
 * lbuckets rb-trees ordered by address, so a lookup costs O(log n)
 * however the addresses are chosen; there are about limit / 8 trees
 * (parq_local_buckets()), so that a lookup descends a few levels.  A
 * queue that empties stays in its tree, idle, so that a destination that
 * empties and refills allocates nothing; a lookup frees up to
 * PARQ_LOCAL_GC_MAX stale ones on its path.  The idle queues are bounded
 * by the limit: one that empties while that many are idle is freed at
 * once.
 */
static struct kmem_cache *parq_lflow_cache __read_mostly;

int parq_datapath_init(void)
{
	parq_lflow_cache = KMEM_CACHE(parq_lflow, 0);
	return parq_lflow_cache ? 0 : -ENOMEM;
}

void parq_datapath_exit(void)
{
	kmem_cache_destroy(parq_lflow_cache);
}

static struct rb_root *parq_lroot(struct parq_sched_data *q,
				  const struct parq_addr *dst)
{
	u32 h = jhash2((__force const u32 *)dst->a, ARRAY_SIZE(dst->a),
		       dst->family ^ q->lseed);

	return &q->lhash[h & (q->lbuckets - 1)];
}

/* The number of trees for @limit packets: limit / 8, a power of 2. */
u32 parq_local_buckets(u32 limit)
{
	u32 n = roundup_pow_of_two(max(limit / 8, 1U));

	return clamp_t(u32, n, PARQ_LOCAL_BUCKETS_MIN, PARQ_LOCAL_BUCKETS_MAX);
}

/*
 * A local flow's entry, charged to the memory cgroup of whoever made the
 * qdisc: it is made in softirq (or under the sender's context, which
 * should not pay for a queue others share), and a user who owns a network
 * namespace may make millions.  Kernels that do not export the softirq
 * memcg to modules charge nobody (parq_compat.h).
 */
static struct parq_lflow *parq_lflow_alloc(struct parq_sched_data *q)
{
#if PARQ_HAVE_SOFTIRQ_MEMCG
	struct mem_cgroup *old;
	struct parq_lflow *f;

	if (q->memcg) {
		old = set_active_memcg(q->memcg);
		/* Not GFP_ATOMIC: its __GFP_HIGH charges past memory.max. */
		f = kmem_cache_zalloc(parq_lflow_cache, GFP_NOWAIT |
				      __GFP_NOWARN | __GFP_ACCOUNT);
		set_active_memcg(old);
		return f;
	}
#endif
	return kmem_cache_zalloc(parq_lflow_cache, GFP_ATOMIC | __GFP_NOWARN);
}

static bool parq_lflow_stale(const struct parq_lflow *f)
{
	return !f->q.qlen &&
	       time_after(jiffies, f->idle_since + PARQ_LOCAL_IDLE_AGE);
}

static void parq_lflow_free(struct parq_sched_data *q, struct rb_root *root,
			    struct parq_lflow *f)
{
	rb_erase(&f->node, root);
	q->local_idle--;
	kmem_cache_free(parq_lflow_cache, f);
}

/* The IPv4/IPv6 destination of @skb; false if it has none. */
static bool parq_skb_dst(struct sk_buff *skb, struct parq_addr *dst)
{
	memset(dst, 0, sizeof(*dst));
	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP):
		if (!pskb_network_may_pull(skb, sizeof(struct iphdr)))
			return false;
		dst->family = AF_INET;
		dst->a[0] = ip_hdr(skb)->daddr;
		return true;
	case htons(ETH_P_IPV6):
		if (!pskb_network_may_pull(skb, sizeof(struct ipv6hdr)))
			return false;
		dst->family = AF_INET6;
		memcpy(dst->a, &ipv6_hdr(skb)->daddr, sizeof(dst->a));
		return true;
	}
	return false;
}

/*
 * The local flow of @skb's destination, made idle if it has none (the
 * caller's packet makes it busy); NULL if out of memory.  Stale flows met
 * on the way down are freed.
 */
static struct parq_lflow *parq_lflow_get(struct parq_sched_data *q,
					 struct sk_buff *skb)
{
	struct parq_lflow *stale[PARQ_LOCAL_GC_MAX];
	struct rb_node **link, *parent;
	unsigned int i, nstale = 0;
	struct parq_lflow *f;
	bool gc = true;
	struct parq_addr dst;
	struct rb_root *root;
	int cmp;

	if (!parq_skb_dst(skb, &dst))
		memset(&dst, 0, sizeof(dst));
	root = parq_lroot(q, &dst);
again:
	link = &root->rb_node;
	parent = NULL;
	f = NULL;
	while (*link) {
		parent = *link;
		f = rb_entry(parent, struct parq_lflow, node);
		cmp = parq_addr_cmp(&dst, &f->dst);
		if (!cmp)
			break;
		if (gc && nstale < ARRAY_SIZE(stale) && parq_lflow_stale(f))
			stale[nstale++] = f;
		link = cmp < 0 ? &parent->rb_left : &parent->rb_right;
		f = NULL;
	}
	if (nstale) {
		for (i = 0; i < nstale; i++)
			parq_lflow_free(q, root, stale[i]);
		nstale = 0;
		/* Erasing moved nodes: the place to insert is found again. */
		if (!f) {
			gc = false;
			goto again;
		}
	}
	if (f)
		return f;
	f = parq_lflow_alloc(q);
	if (!f)
		return NULL;
	f->dst = dst;
	f->idle_since = jiffies;
	RB_CLEAR_NODE(&f->wait);
	rb_link_node(&f->node, parent, link);
	rb_insert_color(&f->node, root);
	q->local_idle++;
	return f;
}

/* Put @f in its tree of the current table (no flow of its address is). */
static void parq_lflow_insert(struct parq_sched_data *q, struct parq_lflow *f)
{
	struct rb_root *root = parq_lroot(q, &f->dst);
	struct rb_node **link = &root->rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		link = parq_addr_cmp(&f->dst, &rb_entry(parent, struct parq_lflow,
							node)->dst) < 0 ?
		       &parent->rb_left : &parent->rb_right;
	}
	rb_link_node(&f->node, parent, link);
	rb_insert_color(&f->node, root);
}

/*
 * Move every local flow with packets into @lhash, @lbuckets empty trees,
 * free the idle ones, and return the table they were in, for the caller
 * to free.  Caller holds the tree lock; the flows keep their packets and
 * their place in the round robin.
 */
struct rb_root *parq_local_rehash(struct parq_sched_data *q,
				  struct rb_root *lhash, u32 lbuckets)
{
	struct rb_root *old = q->lhash;
	u32 i, n = q->lbuckets;
	struct parq_lflow *f, *tmp;

	q->lhash = lhash;
	q->lbuckets = lbuckets;
	for (i = 0; i < n; i++) {
		rbtree_postorder_for_each_entry_safe(f, tmp, &old[i], node) {
			if (f->q.qlen) {
				parq_lflow_insert(q, f);
				continue;
			}
			/* Idle: not worth its move under the lock. */
			q->local_idle--;
			kmem_cache_free(parq_lflow_cache, f);
		}
	}
	return old;
}

/* @f gets its first packet: it joins the round robin. */
static void parq_lflow_busy(struct parq_sched_data *q, struct parq_lflow *f)
{
	q->local_idle--;
	q->local_flows++;
	parq_rr_add(&q->lrr, &f->rr);
}

/*
 * @f has no packet (it emptied, or a packet for it was dropped): it is
 * kept idle, or freed if as many as the limit are idle already.
 */
static void parq_lflow_idle(struct parq_sched_data *q, struct parq_lflow *f)
{
	f->idle_since = jiffies;
	if (q->local_idle > q->cfg.limit)
		parq_lflow_free(q, parq_lroot(q, &f->dst), f);
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
	if (emptied) {
		q->local_flows--;
		q->local_idle++;
		parq_lflow_idle(q, f);
	}
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

/* Free every local flow, busy or idle, and its packets. */
static void parq_local_purge(struct parq_sched_data *q)
{
	struct parq_lflow *f, *tmp;
	unsigned int i;

	if (!q->lhash)		/* init failed before allocating it */
		return;
	for (i = 0; i < q->lbuckets; i++) {
		rbtree_postorder_for_each_entry_safe(f, tmp, &q->lhash[i],
						     node) {
			parq_skbq_purge(&f->q);
			kmem_cache_free(parq_lflow_cache, f);
		}
		q->lhash[i] = RB_ROOT;
	}
	q->local_flows = 0;
	q->local_idle = 0;
	q->lrr.head = NULL;
	q->lrr.tail = NULL;
	q->lrr.active = 0;
	q->lwait = RB_ROOT_CACHED;
	q->local_waiting = 0;
	q->lwait_next = U64_MAX;
	q->local_qlen = 0;
}

/*
 * The backlogged reserved classes, by (NDT, classid), each node keeping the
 * size of its subtree: the number of those whose NDT has come is found in
 * O(log n) (parq_resv_due), so that a statistics dump never walks them.
 */
static u32 parq_resv_subtree(const struct rb_node *n)
{
	return n ? rb_entry(n, struct parq_resv_class, node)->subtree : 0;
}

static bool parq_resv_subtree_compute(struct parq_resv_class *rc, bool exit)
{
	u32 size = 1 + parq_resv_subtree(rc->node.rb_left) +
		   parq_resv_subtree(rc->node.rb_right);

	if (exit && rc->subtree == size)
		return true;
	rc->subtree = size;
	return false;
}

RB_DECLARE_CALLBACKS(static, parq_resv_augment, struct parq_resv_class, node,
		     subtree, parq_resv_subtree_compute);

void parq_resv_backlog_add(struct parq_sched_data *q,
			   struct parq_resv_class *rc)
{
	struct rb_node **link = &q->resv_backlog.rb_root.rb_node;
	struct rb_node *parent = NULL;
	bool leftmost = true;

	while (*link) {
		struct parq_resv_class *p;

		parent = *link;
		p = rb_entry(parent, struct parq_resv_class, node);
		p->subtree++;
		if (parq_resv_before(&rc->r, &p->r)) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rc->subtree = 1;
	rb_link_node(&rc->node, parent, link);
	rb_insert_augmented_cached(&rc->node, &q->resv_backlog, leftmost,
				   &parq_resv_augment);
}

void parq_resv_backlog_del(struct parq_sched_data *q,
			   struct parq_resv_class *rc)
{
	rb_erase_augmented_cached(&rc->node, &q->resv_backlog,
				  &parq_resv_augment);
}

u32 parq_resv_due(const struct parq_sched_data *q, u64 now)
{
	const struct rb_node *n = q->resv_backlog.rb_root.rb_node;
	u32 due = 0;

	while (n) {
		const struct parq_resv_class *rc =
			rb_entry(n, struct parq_resv_class, node);

		if (parq_resv_eligible(&rc->r, now)) {
			due += parq_resv_subtree(n->rb_left) + 1;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return due;
}

static struct parq_resv_class *parq_resv_first(struct parq_sched_data *q)
{
	struct rb_node *n = rb_first_cached(&q->resv_backlog);

	return n ? rb_entry(n, struct parq_resv_class, node) : NULL;
}

/* A packet for reserved class @rc at @now. */
static void parq_resv_enqueue(struct parq_sched_data *q,
			      struct parq_resv_class *rc, struct sk_buff *skb,
			      u64 now)
{
	if (!rc->q.qlen) {
		parq_resv_wake(&rc->r, now);
		parq_resv_backlog_add(q, rc);
		parq_use_wait(&rc->use, now, rc->bw, rc->r.ndt);
		q->resv_backlogged++;
	}
	parq_skbq_add(&rc->q, skb);
}

/* A packet's bytes as the shaper and reserved pacing count them. */
static u32 parq_wire_len(const struct parq_sched_data *q, u32 len)
{
	s64 wire = (s64)len + q->cfg.overhead;

	return wire > 0 ? wire : 1;
}

/* Take the head packet of reserved class @rc at @now; the caller re-keys
 * it.
 */
static struct sk_buff *parq_resv_take(struct Qdisc *sch,
				      struct parq_resv_class *rc, u64 now)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb;

	parq_resv_backlog_del(q, rc);
	skb = parq_skbq_pop(&rc->q);
	parq_count_out(sch, &rc->c, skb);
	if (!rc->q.qlen) {
		parq_use_wait(&rc->use, now, rc->bw, now);
		q->resv_backlogged--;
	}
	return skb;
}

static void parq_resv_requeue(struct parq_sched_data *q,
			      struct parq_resv_class *rc)
{
	if (rc->q.qlen)
		parq_resv_backlog_add(q, rc);
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
unsigned int parq_evict(struct Qdisc *sch, enum parq_act act,
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
		skb = parq_resv_take(sch, rc, ktime_get_ns());
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
	u64 now;

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
		.qlen = sch->q.qlen - q->control.qlen,
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
		if (lflow && !lflow->q.qlen)	/* idle, or just made */
			parq_lflow_idle(q, lflow);
		return parq_drop_class(skb, sch, c, to_free);
	}
	/* An idle shaper restarts now: it does not catch up the idle time. */
	now = ktime_get_ns();
	if (!sch->q.qlen && parq_shaper_on(&q->s.shaper))
		parq_shaper_wake(&q->s.shaper, now);
	parq_skb_cb(skb)->enqueued = now;
	parq_count_in(sch, c, skb);
	if (flow) {
		if (!flow->q.qlen)
			parq_rr_add(&q->rr, &flow->rr);
		parq_skbq_add(&flow->q, skb);
		q->parallel_qlen++;
	} else if (rc) {
		parq_resv_enqueue(q, rc, skb, now);
	} else {
		if (!lflow->q.qlen)
			parq_lflow_busy(q, lflow);
		parq_skbq_add(&lflow->q, skb);
		q->local_qlen++;
	}
	/* Told only now, so that parents never see this qdisc empty. */
	if (evicted)
		qdisc_tree_reduce_backlog(sch, 1, evicted);
	return NET_XMIT_SUCCESS;
}

/*
 * Queue @skb in the control queue.  Not split when GSO: the shaper's gate
 * holds it back only beyond PARQ_CONTROL_AHEAD_NS, and its bytes are
 * charged to the shaper as one.
 */
static int parq_enqueue_control(struct sk_buff *skb, struct Qdisc *sch,
				struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_fill fill = {
		.flow_qlen = q->control.qlen,
		.control = true,
	};
	u64 now;

	if (parq_sched_admit(&q->s, &fill) != PARQ_ADMIT_QUEUE)
		return qdisc_drop(skb, sch, to_free);
	now = ktime_get_ns();
	if (!sch->q.qlen && parq_shaper_on(&q->s.shaper))
		parq_shaper_wake(&q->s.shaper, now);
	parq_skb_cb(skb)->enqueued = now;
	parq_skbq_add(&q->control, skb);
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	return NET_XMIT_SUCCESS;
}

/*
 * The segments of a GSO packet that leaves whole, for the shaper's overhead
 * per segment: gso_segs is 0 in a packet from an untrusted source
 * (SKB_GSO_DODGY) until it is validated below the qdisc.
 */
static u32 parq_segs(const struct sk_buff *skb)
{
	const struct skb_shared_info *si = skb_shinfo(skb);

	if (!skb_is_gso(skb))
		return 1;
	if (si->gso_segs)
		return si->gso_segs;
	return DIV_ROUND_UP(skb->len, si->gso_size);
}

static struct sk_buff *parq_take_control(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = parq_skbq_pop(&q->control);

	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
	return skb;
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

int parq_enqueue(struct sk_buff *skb, struct Qdisc *sch,
		 struct sk_buff **to_free)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	unsigned long cl;
	int ret;

	if (parq_is_control(skb))
		return parq_enqueue_control(skb, sch, to_free);
	cl = parq_classify(skb, sch, &ret);
	if (!cl) {
		if (ret & __NET_XMIT_BYPASS)
			qdisc_qstats_drop(sch);
		q->s.xs.drop_filter++;
		__qdisc_drop(skb, to_free);
		return ret;
	}
	parq_mark(skb, &q->cfg, cl);
	if (skb_is_gso(skb) &&
	    parq_split_gso_for(q->split_gso, cl == PARQ_CLASS_PARALLEL,
			       !!parq_resv_of(cl)))
		return parq_enqueue_segs(skb, sch, cl, to_free);
	return parq_enqueue_one(skb, sch, cl, to_free);
}

/*
 * The next packet, as parq_sched_decide() rules.  The queues are kept here;
 * the policy (shaper gate, reserved before the threshold rule, a local
 * class blocked by credit, the watchdog's deadline) is in core/.
 */
struct sk_buff *parq_dequeue(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);
	struct parq_resv_class *rc;
	struct parq_lflow *lf = NULL;
	struct parq_decision d;
	struct parq_view v;
	unsigned int quantum;
	struct sk_buff *skb;
	unsigned long cl;
	u32 len;
	u64 now;

	if (!sch->q.qlen)
		return NULL;
	/*
	 * A packet our peek (qdisc_peek_dequeued) took already, for a parent
	 * that then calls ->dequeue rather than qdisc_dequeue_peeked() (none
	 * in 6.1 or 6.12 does): it goes first, and it is in q.qlen though no
	 * queue of ours holds it.
	 */
	skb = skb_peek(&sch->gso_skb);
	if (unlikely(skb)) {
		__skb_unlink(skb, &sch->gso_skb);
		qdisc_qstats_backlog_dec(sch, skb);
		sch->q.qlen--;
		return skb;
	}
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
	v.control = q->control.qlen != 0;
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
	case PARQ_ACT_CONTROL:
		skb = parq_take_control(sch);
		cl = 0;		/* no class */
		break;
	case PARQ_ACT_RESV:
		skb = parq_resv_take(sch, rc, now);
		len = parq_wire_len(q, qdisc_pkt_len(skb));
		parq_resv_dispatch(&rc->r, now, len);
		parq_use_sent(&rc->use, now, rc->bw, len);
		/* The next packet, if any, waits for its NDT. */
		if (rc->q.qlen)
			parq_use_wait(&rc->use, now, rc->bw, rc->r.ndt);
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
	parq_sched_sent(&q->s, &d, now, qdisc_pkt_len(skb), parq_segs(skb));
	if (parq_sojourn_counted(&d))
		parq_sched_sojourn(&q->s, &d, parq_sojourn(skb, now));
	if (cl)
		bstats_update(&parq_stats_of(q, cl)->bstats, skb);
	qdisc_bstats_update(sch, skb);
	return skb;
}

void parq_purge(struct Qdisc *sch)
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
		parq_resv_backlog_del(q, rc);
		parq_use_wait(&rc->use, ktime_get_ns(), rc->bw, 0);
		parq_skbq_purge(&rc->q);
		rc->c.qlen = 0;
		rc->c.qstats.backlog = 0;
	}
	parq_local_purge(q);
	parq_skbq_purge(&q->control);
	q->parallel_qlen = 0;
	q->resv_backlogged = 0;
	for (i = 0; i < PARQ_NUM_CLASSES; i++) {
		q->cls[i].qlen = 0;
		q->cls[i].qstats.backlog = 0;
	}
	sch->q.qlen = 0;
	sch->qstats.backlog = 0;
}

void parq_reset(struct Qdisc *sch)
{
	struct parq_sched_data *q = qdisc_priv(sch);

	parq_purge(sch);
	parq_sched_reset(&q->s);
	qdisc_watchdog_cancel(&q->watchdog);
}
