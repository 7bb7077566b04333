// SPDX-License-Identifier: GPL-2.0
/*
 * parq receiver-side credits: the per-namespace credit table, and the
 * handlers of the "parq" generic netlink family (parq_genl.c) that edit it.
 *
 * A receiving host that sees parallel traffic arrive tells the hosts that
 * send it local traffic to hold back (parqd does this over UDP); on each of
 * those senders, an entry here limits the local-class traffic to one
 * destination to some bytes per epoch, until the entry's lease runs out.
 * An expired entry is ignored at once and freed by a periodic sweep, so a
 * sender whose receiver went silent sends freely again after the lease.
 *
 * The table is a fixed array of RCU hash chains per network namespace.
 * Readers (the qdisc's dequeue) take no lock: they look an entry up under
 * RCU and charge it with one cmpxchg on its usage word.  Writers (netlink,
 * the sweep) hold the table's spinlock; an entry is never changed in place
 * but replaced, so a reader always sees one consistent configuration.
 */
#include <linux/in6.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "parq_compat.h"
#include "parq_credit.h"
#include "parq_genl.h"
#include "core/parq_core.h"

#define PARQ_CREDIT_HASH_BITS	8
#define PARQ_CREDIT_SWEEP	HZ	/* expired entries freed this often */

struct parq_credit {
	struct hlist_node	node;
	struct parq_addr	dst;
	struct parq_credit_cfg	cfg;
	u64			expires;	/* ns */
	atomic64_t		state;		/* see parq_credit_take() */
	atomic64_t		passed;
	atomic64_t		held;
	struct rcu_head		rcu;
};

struct parq_credit_net {
	spinlock_t		lock;		/* writers */
	u32			count;
	struct hlist_head	hash[1 << PARQ_CREDIT_HASH_BITS];
	struct delayed_work	sweep;
};

static unsigned int parq_credit_net_id __read_mostly;

static struct parq_credit_net *parq_cn(const struct net *net)
{
	return net_generic(net, parq_credit_net_id);
}

static u32 parq_addr_hash(const struct parq_addr *a)
{
	return jhash2((__force const u32 *)a->a, 4, a->family) &
	       ((1 << PARQ_CREDIT_HASH_BITS) - 1);
}

static bool parq_credit_live(const struct parq_credit *e, u64 now)
{
	return now < READ_ONCE(e->expires);
}

/* Caller holds rcu_read_lock() or the table lock. */
static struct parq_credit *parq_credit_find(struct parq_credit_net *cn,
					    const struct parq_addr *dst)
{
	struct parq_credit *e;

	hlist_for_each_entry_rcu(e, &cn->hash[parq_addr_hash(dst)], node,
				 lockdep_is_held(&cn->lock))
		if (parq_addr_eq(&e->dst, dst))
			return e;
	return NULL;
}

bool parq_skb_dst(struct sk_buff *skb, struct parq_addr *dst)
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

bool parq_credit_active(const struct net *net)
{
	return READ_ONCE(parq_cn(net)->count) != 0;
}

enum parq_credit_verdict parq_credit_charge(const struct net *net,
					    const struct parq_addr *dst,
					    u32 len, u64 now, u64 *until)
{
	struct parq_credit_net *cn = parq_cn(net);
	enum parq_credit_verdict v = PARQ_CREDIT_NONE;
	struct parq_credit *e;
	s64 old;
	u64 next;

	rcu_read_lock();
	e = parq_credit_find(cn, dst);
	if (!e || !parq_credit_live(e, now))
		goto out;
	old = atomic64_read(&e->state);
	do {
		if (!parq_credit_take(&e->cfg, (u64)old, now, len, &next)) {
			atomic64_inc(&e->held);
			/* Wait for the next epoch, or for the lease to end. */
			*until = min(parq_credit_next(&e->cfg, now),
				     READ_ONCE(e->expires));
			v = PARQ_CREDIT_WAIT;
			goto out;
		}
	} while (!atomic64_try_cmpxchg(&e->state, &old, (s64)next));
	atomic64_inc(&e->passed);
	v = PARQ_CREDIT_PASS;
out:
	rcu_read_unlock();
	return v;
}

/* --- table edits (under cn->lock) -------------------------------------- */

static void parq_credit_unlink(struct parq_credit_net *cn,
			       struct parq_credit *e)
{
	hlist_del_rcu(&e->node);
	WRITE_ONCE(cn->count, cn->count - 1);	/* read locklessly */
	kfree_rcu(e, rcu);
}

static void parq_credit_flush(struct parq_credit_net *cn, bool expired_only)
{
	struct parq_credit *e;
	struct hlist_node *tmp;
	u64 now = ktime_get_ns();
	unsigned int i;

	spin_lock_bh(&cn->lock);
	for (i = 0; i < ARRAY_SIZE(cn->hash); i++)
		hlist_for_each_entry_safe(e, tmp, &cn->hash[i], node)
			if (!expired_only || !parq_credit_live(e, now))
				parq_credit_unlink(cn, e);
	spin_unlock_bh(&cn->lock);
}

static void parq_credit_sweep(struct work_struct *work)
{
	struct parq_credit_net *cn = container_of(to_delayed_work(work),
						  struct parq_credit_net,
						  sweep);

	parq_credit_flush(cn, true);
	if (READ_ONCE(cn->count))
		schedule_delayed_work(&cn->sweep, PARQ_CREDIT_SWEEP);
}

/*
 * Create or replace the entry for @dst.  A replacement with the same epoch
 * keeps the epoch grid and what was used in the current epoch, so that a
 * repeated message (parqd resends every epoch) changes nothing but the
 * lease.
 */
static int parq_credit_set(struct parq_credit_net *cn,
			   const struct parq_addr *dst, u32 credit, u64 epoch,
			   u64 lease, struct netlink_ext_ack *extack)
{
	struct parq_credit *e, *old;
	u64 now = ktime_get_ns();

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	e->dst = *dst;
	e->cfg.credit = credit;
	e->cfg.epoch = epoch;
	e->cfg.start = now;
	e->expires = parq_credit_expiry(now, lease);

	spin_lock_bh(&cn->lock);
	old = parq_credit_find(cn, dst);
	if (!old && cn->count >= PARQ_CREDIT_ENTRIES_MAX) {
		spin_unlock_bh(&cn->lock);
		kfree(e);
		NL_SET_ERR_MSG(extack, "parq: credit table full");
		return -ENOSPC;
	}
	if (old) {
		if (old->cfg.epoch == epoch && parq_credit_live(old, now)) {
			e->cfg.start = old->cfg.start;
			atomic64_set(&e->state, atomic64_read(&old->state));
		}
		atomic64_set(&e->passed, atomic64_read(&old->passed));
		atomic64_set(&e->held, atomic64_read(&old->held));
		hlist_replace_rcu(&old->node, &e->node);
		kfree_rcu(old, rcu);
	} else {
		hlist_add_head_rcu(&e->node, &cn->hash[parq_addr_hash(dst)]);
		WRITE_ONCE(cn->count, cn->count + 1);
	}
	spin_unlock_bh(&cn->lock);
	if (!old)
		schedule_delayed_work(&cn->sweep, PARQ_CREDIT_SWEEP);
	return 0;
}

static int parq_credit_del(struct parq_credit_net *cn,
			   const struct parq_addr *dst)
{
	struct parq_credit *e;

	spin_lock_bh(&cn->lock);
	e = parq_credit_find(cn, dst);
	if (e)
		parq_credit_unlink(cn, e);
	spin_unlock_bh(&cn->lock);
	return e ? 0 : -ENOENT;
}

/* --- generic netlink handlers (the family is in parq_genl.c) ------------ */

static int parq_credit_fill(struct sk_buff *skb, const struct parq_credit *e,
			    u32 portid, u32 seq, int flags, u64 now)
{
	u64 left = parq_credit_live(e, now) ? READ_ONCE(e->expires) - now : 0;
	void *hdr;

	hdr = parq_genl_put(skb, portid, seq, flags, PARQ_CMD_CREDIT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (parq_genl_put_addr(skb, &e->dst) ||
	    nla_put_u32(skb, PARQ_A_CREDIT, e->cfg.credit) ||
	    nla_put_u64_64bit(skb, PARQ_A_EPOCH, e->cfg.epoch, PARQ_A_PAD) ||
	    nla_put_u64_64bit(skb, PARQ_A_LEASE, left, PARQ_A_PAD) ||
	    nla_put_u32(skb, PARQ_A_USED,
			parq_credit_used(&e->cfg, atomic64_read(&e->state),
					 now)) ||
	    nla_put_u64_64bit(skb, PARQ_A_PASSED, atomic64_read(&e->passed),
			      PARQ_A_PAD) ||
	    nla_put_u64_64bit(skb, PARQ_A_HELD, atomic64_read(&e->held),
			      PARQ_A_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int parq_credit_genl_set(struct sk_buff *skb, struct genl_info *info)
{
	struct parq_credit_net *cn = parq_cn(genl_info_net(info));
	struct parq_addr dst;
	u64 epoch = PARQ_EPOCH_DEFAULT;
	int err;

	err = parq_genl_addr(info, &dst);
	if (err == -ENODATA) {
		NL_SET_ERR_MSG(info->extack,
			       "parq: a credit needs a destination address");
		return -EINVAL;
	}
	if (err)
		return err;
	if (!info->attrs[PARQ_A_CREDIT] || !info->attrs[PARQ_A_LEASE]) {
		NL_SET_ERR_MSG(info->extack,
			       "parq: a credit needs a credit and a lease");
		return -EINVAL;
	}
	if (info->attrs[PARQ_A_EPOCH])
		epoch = nla_get_u64(info->attrs[PARQ_A_EPOCH]);
	return parq_credit_set(cn, &dst,
			       nla_get_u32(info->attrs[PARQ_A_CREDIT]), epoch,
			       nla_get_u64(info->attrs[PARQ_A_LEASE]),
			       info->extack);
}

int parq_credit_genl_del(struct sk_buff *skb, struct genl_info *info)
{
	struct parq_credit_net *cn = parq_cn(genl_info_net(info));
	struct parq_addr dst;
	int err;

	err = parq_genl_addr(info, &dst);
	if (err == -ENODATA) {
		parq_credit_flush(cn, false);
		return 0;
	}
	if (err)
		return err;
	err = parq_credit_del(cn, &dst);
	if (err)
		NL_SET_ERR_MSG(info->extack,
			       "parq: no credit entry for that address");
	return err;
}

int parq_credit_genl_get(struct sk_buff *skb, struct genl_info *info)
{
	struct parq_credit_net *cn = parq_cn(genl_info_net(info));
	struct parq_credit *e;
	struct parq_addr dst;
	struct sk_buff *msg;
	int err;

	err = parq_genl_addr(info, &dst);
	if (err == -ENODATA) {
		NL_SET_ERR_MSG(info->extack,
			       "parq: give an address, or dump the table");
		return -EINVAL;
	}
	if (err)
		return err;
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	rcu_read_lock();
	e = parq_credit_find(cn, &dst);
	if (e)
		err = parq_credit_fill(msg, e, info->snd_portid,
				       info->snd_seq, 0, ktime_get_ns());
	else
		err = -ENOENT;
	rcu_read_unlock();
	if (err) {
		nlmsg_free(msg);
		if (err == -ENOENT)
			NL_SET_ERR_MSG(info->extack,
				       "parq: no credit entry for that address");
		return err;
	}
	return genlmsg_reply(msg, info);
}

static int parq_credit_dump_one(struct sk_buff *skb, struct hlist_node *node,
				struct netlink_callback *cb, u64 now)
{
	return parq_credit_fill(skb, hlist_entry(node, struct parq_credit, node),
				NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, NLM_F_MULTI, now);
}

int parq_credit_genl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct parq_credit_net *cn = parq_cn(sock_net(skb->sk));

	return parq_genl_dump_chains(skb, cb, cn->hash, ARRAY_SIZE(cn->hash),
				     parq_credit_dump_one);
}

/* --- namespaces and module --------------------------------------------- */

static int __net_init parq_credit_net_init(struct net *net)
{
	struct parq_credit_net *cn = parq_cn(net);

	spin_lock_init(&cn->lock);
	INIT_DELAYED_WORK(&cn->sweep, parq_credit_sweep);
	return 0;
}

static void __net_exit parq_credit_net_exit(struct net *net)
{
	struct parq_credit_net *cn = parq_cn(net);

	cancel_delayed_work_sync(&cn->sweep);
	parq_credit_flush(cn, false);
}

static struct pernet_operations parq_credit_net_ops = {
	.init	= parq_credit_net_init,
	.exit	= parq_credit_net_exit,
	.id	= &parq_credit_net_id,
	.size	= sizeof(struct parq_credit_net),
};

int __init parq_credit_init(void)
{
	return register_pernet_subsys(&parq_credit_net_ops);
}

void parq_credit_exit(void)
{
	unregister_pernet_subsys(&parq_credit_net_ops);
}
