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
 * The table is a resizable RCU hash table (rhashtable) per network
 * namespace, hashed with a random seed of its own, so that no choice of
 * addresses piles entries into one chain and a table of 65 536 entries
 * keeps short chains.  Readers (the qdisc's dequeue) take no lock: they
 * look an entry up under RCU and charge it with one cmpxchg on its usage
 * word.  Writers (netlink, the sweep) are all in process context and hold
 * the table's mutex; an entry is never changed in place but replaced, so a
 * reader always sees one consistent configuration.  The sweep walks the
 * table in batches with bottom halves enabled and yields between them.
 */
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/netns/generic.h>

#include "parq_compat.h"
#include "parq_credit.h"
#include "parq_genl.h"
#include "core/parq_core.h"

#define PARQ_CREDIT_SWEEP	HZ	/* expired entries freed this often */
#define PARQ_CREDIT_BATCH	256	/* sweep: entries between yields */

struct parq_credit {
	struct rhash_head	node;
	struct parq_addr	dst;
	struct parq_credit_cfg	cfg;
	u64			expires;	/* ns */
	atomic64_t		state;		/* see parq_credit_take() */
	atomic64_t		passed;
	atomic64_t		held;
	struct list_head	doomed;		/* parq_credit_flush() */
	struct rcu_head		rcu;
};

struct parq_credit_net {
	struct mutex		lock;		/* writers */
	u32			count;		/* read locklessly */
	struct rhashtable	ht;
	struct delayed_work	sweep;
};

/* struct parq_addr has no padding: all of it is the key. */
static const struct rhashtable_params parq_credit_params = {
	.key_len		= sizeof(struct parq_addr),
	.key_offset		= offsetof(struct parq_credit, dst),
	.head_offset		= offsetof(struct parq_credit, node),
	.automatic_shrinking	= true,
};

static unsigned int parq_credit_net_id __read_mostly;

static struct parq_credit_net *parq_cn(const struct net *net)
{
	return net_generic(net, parq_credit_net_id);
}

static bool parq_credit_live(const struct parq_credit *e, u64 now)
{
	return now < READ_ONCE(e->expires);
}

/*
 * The entry's configuration as one value: its credit may change in place
 * (parq_credit_set()) while another CPU charges it; epoch and start never
 * do for the entry's life.
 */
static struct parq_credit_cfg parq_credit_cfg(const struct parq_credit *e)
{
	struct parq_credit_cfg c = {
		.credit	= READ_ONCE(e->cfg.credit),
		.epoch	= e->cfg.epoch,
		.start	= e->cfg.start,
	};

	return c;
}

/* Caller holds rcu_read_lock(). */
static struct parq_credit *parq_credit_find(struct parq_credit_net *cn,
					    const struct parq_addr *dst)
{
	return rhashtable_lookup(&cn->ht, dst, parq_credit_params);
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
	struct parq_credit_cfg cfg;
	struct parq_credit *e;
	s64 old;
	u64 next;

	rcu_read_lock();
	e = parq_credit_find(cn, dst);
	if (!e || !parq_credit_live(e, now))
		goto out;
	cfg = parq_credit_cfg(e);
	old = atomic64_read(&e->state);
	do {
		if (!parq_credit_take(&cfg, (u64)old, now, len, &next)) {
			atomic64_inc(&e->held);
			/* Wait for the next epoch, or for the lease to end. */
			*until = min(parq_credit_next(&cfg, now),
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

/* The entry for @dst; caller holds cn->lock, so it cannot go meanwhile. */
static struct parq_credit *parq_credit_find_locked(struct parq_credit_net *cn,
						   const struct parq_addr *dst)
{
	struct parq_credit *e;

	lockdep_assert_held(&cn->lock);
	rcu_read_lock();
	e = parq_credit_find(cn, dst);
	rcu_read_unlock();
	return e;
}

static void parq_credit_unlink(struct parq_credit_net *cn,
			       struct parq_credit *e)
{
	lockdep_assert_held(&cn->lock);
	/* Cannot fail: @e is in the table and only cn->lock's holder edits. */
	WARN_ON_ONCE(rhashtable_remove_fast(&cn->ht, &e->node,
					    parq_credit_params));
	WRITE_ONCE(cn->count, cn->count - 1);
	kfree_rcu(e, rcu);
}

/*
 * Free every entry, or only the expired ones.  The walk marks them, and
 * they go after it: removing entries during a walk that stops and starts
 * again (as it does every PARQ_CREDIT_BATCH entries, to drop RCU and
 * yield) can make it skip the ones after them in the same chain.  Nothing
 * else removes or adds an entry meanwhile (cn->lock); a resize of the table
 * restarts the walk (-EAGAIN), and an entry seen twice is marked once.
 */
static void parq_credit_flush(struct parq_credit_net *cn, bool expired_only)
{
	struct parq_credit *e, *tmp;
	struct rhashtable_iter it;
	u64 now = ktime_get_ns();
	unsigned int n = 0;
	LIST_HEAD(doomed);

	mutex_lock(&cn->lock);
	rhashtable_walk_enter(&cn->ht, &it);
	rhashtable_walk_start(&it);
	while ((e = rhashtable_walk_next(&it))) {
		if (IS_ERR(e))
			continue;	/* -EAGAIN: resized, walk restarted */
		if ((!expired_only || !parq_credit_live(e, now)) &&
		    list_empty(&e->doomed))
			list_add_tail(&e->doomed, &doomed);
		if (++n % PARQ_CREDIT_BATCH == 0) {
			rhashtable_walk_stop(&it);
			cond_resched();
			rhashtable_walk_start(&it);
		}
	}
	rhashtable_walk_stop(&it);
	rhashtable_walk_exit(&it);
	n = 0;
	list_for_each_entry_safe(e, tmp, &doomed, doomed) {
		parq_credit_unlink(cn, e);
		if (++n % PARQ_CREDIT_BATCH == 0)
			cond_resched();
	}
	mutex_unlock(&cn->lock);
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
 * Create or replace the entry for @dst.  With the same epoch, a live entry
 * is changed in place (its credit and lease): it keeps the epoch grid and
 * its usage word, which other CPUs may be charging this very moment, so
 * that a repeated message (parqd resends every epoch) loses no charge and
 * changes nothing but the lease.  A new epoch is a new grid: a new entry
 * replaces the old one.
 */
static int parq_credit_set(struct parq_credit_net *cn,
			   const struct parq_addr *dst, u32 credit, u64 epoch,
			   u64 lease, struct netlink_ext_ack *extack)
{
	struct parq_credit *e, *old;
	u64 now = ktime_get_ns();
	int err;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	INIT_LIST_HEAD(&e->doomed);
	e->dst = *dst;
	e->cfg.credit = credit;
	e->cfg.epoch = epoch;
	e->cfg.start = now;
	e->expires = parq_credit_expiry(now, lease);

	mutex_lock(&cn->lock);
	old = parq_credit_find_locked(cn, dst);
	if (old && old->cfg.epoch == epoch && parq_credit_live(old, now)) {
		WRITE_ONCE(old->cfg.credit, credit);
		WRITE_ONCE(old->expires, e->expires);
		mutex_unlock(&cn->lock);
		kfree(e);
		return 0;
	}
	if (!old && cn->count >= PARQ_CREDIT_ENTRIES_MAX) {
		err = -ENOSPC;
		NL_SET_ERR_MSG(extack, "parq: credit table full");
		goto out;
	}
	if (old) {
		atomic64_set(&e->passed, atomic64_read(&old->passed));
		atomic64_set(&e->held, atomic64_read(&old->held));
		err = rhashtable_replace_fast(&cn->ht, &old->node, &e->node,
					      parq_credit_params);
		if (!err)
			kfree_rcu(old, rcu);
	} else {
		/* May fail for memory, when the table must grow first. */
		err = rhashtable_insert_fast(&cn->ht, &e->node,
					     parq_credit_params);
		if (!err)
			WRITE_ONCE(cn->count, cn->count + 1);
	}
	if (err && err != -ENOSPC)
		NL_SET_ERR_MSG(extack, "parq: the credit table cannot take the entry now");
out:
	mutex_unlock(&cn->lock);
	if (err) {
		kfree(e);
		return err;
	}
	if (!old)
		schedule_delayed_work(&cn->sweep, PARQ_CREDIT_SWEEP);
	return 0;
}

static int parq_credit_del(struct parq_credit_net *cn,
			   const struct parq_addr *dst)
{
	struct parq_credit *e;

	mutex_lock(&cn->lock);
	e = parq_credit_find_locked(cn, dst);
	if (e)
		parq_credit_unlink(cn, e);
	mutex_unlock(&cn->lock);
	return e ? 0 : -ENOENT;
}

/* --- generic netlink handlers (the family is in parq_genl.c) ------------ */

static int parq_credit_fill(struct sk_buff *skb, const struct parq_credit *e,
			    u32 portid, u32 seq, int flags, u64 now)
{
	u64 left = parq_credit_live(e, now) ? READ_ONCE(e->expires) - now : 0;
	struct parq_credit_cfg cfg = parq_credit_cfg(e);
	void *hdr;

	hdr = parq_genl_put(skb, portid, seq, flags, PARQ_CMD_CREDIT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (parq_genl_put_addr(skb, &e->dst) ||
	    nla_put_u32(skb, PARQ_A_CREDIT, cfg.credit) ||
	    nla_put_u64_64bit(skb, PARQ_A_EPOCH, cfg.epoch, PARQ_A_PAD) ||
	    nla_put_u64_64bit(skb, PARQ_A_LEASE, left, PARQ_A_PAD) ||
	    nla_put_u32(skb, PARQ_A_USED,
			parq_credit_used(&cfg, atomic64_read(&e->state),
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

/*
 * A dump walks the table with an iterator that lives from .start to .done.
 * An entry that did not fit in one message is the walk's current one and
 * is peeked again at the next.  If the table is resized meanwhile the walk
 * starts over, and entries already sent may be sent again.
 */
int parq_credit_genl_dump_start(struct netlink_callback *cb)
{
	struct parq_credit_net *cn = parq_cn(sock_net(cb->skb->sk));
	struct rhashtable_iter *it;

	it = kmalloc(sizeof(*it), GFP_KERNEL);
	if (!it)
		return -ENOMEM;
	rhashtable_walk_enter(&cn->ht, it);
	cb->args[0] = (unsigned long)it;
	return 0;
}

int parq_credit_genl_dump_done(struct netlink_callback *cb)
{
	struct rhashtable_iter *it = (struct rhashtable_iter *)cb->args[0];

	if (it) {
		rhashtable_walk_exit(it);
		kfree(it);
	}
	return 0;
}

int parq_credit_genl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct rhashtable_iter *it = (struct rhashtable_iter *)cb->args[0];
	u64 now = ktime_get_ns();
	struct parq_credit *e;

	rhashtable_walk_start(it);
	for (e = rhashtable_walk_peek(it); e; e = rhashtable_walk_next(it)) {
		if (IS_ERR(e))
			continue;	/* -EAGAIN: resized, walk restarted */
		if (parq_credit_fill(skb, e, NETLINK_CB(cb->skb).portid,
				     cb->nlh->nlmsg_seq, NLM_F_MULTI, now))
			break;
	}
	rhashtable_walk_stop(it);
	return skb->len;
}

/* --- namespaces and module --------------------------------------------- */

static int __net_init parq_credit_net_init(struct net *net)
{
	struct parq_credit_net *cn = parq_cn(net);

	mutex_init(&cn->lock);
	INIT_DELAYED_WORK(&cn->sweep, parq_credit_sweep);
	return rhashtable_init(&cn->ht, &parq_credit_params);
}

static void parq_credit_free(void *ptr, void *arg)
{
	kfree(ptr);
}

static void __net_exit parq_credit_net_exit(struct net *net)
{
	struct parq_credit_net *cn = parq_cn(net);

	/*
	 * Readers are the dequeues of this namespace's qdiscs, and its devices
	 * are gone (or, on module unload, no parq qdisc is left): the entries
	 * and the buckets can be freed at once.
	 */
	cancel_delayed_work_sync(&cn->sweep);
	rhashtable_free_and_destroy(&cn->ht, parq_credit_free, NULL);
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
