// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's tables, namespaces, deferred work and generic netlink, as a
 * model for the unit tests (kmock.c has the rest):
 *
 * - one network namespace, kmock_net, whose per-net data the pernet
 *   operations get as in the kernel (net_generic());
 * - rhashtable's out-of-line half over the kernel's own inline half: a
 *   table of fixed size that never resizes (so a walk never restarts), and
 *   a walker that keeps its place by position in the bucket and resumes
 *   after an entry that went, as the kernel's does;
 * - RCU's deferred frees wait for kmock_rcu_sync(), so that a reader the
 *   test runs before it still sees the old object, and ASan sees a use
 *   after it;
 * - delayed work runs when the test says (kmock_run_work());
 * - a mutex taken twice is a WARN; local_bh_enable() gives back the count
 *   local_bh_disable() took.
 */
#include <linux/mutex.h>
#include <linux/rhashtable.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/sock.h>

#include "kmock.h"

/* --- the namespace -------------------------------------------------------- */

#define KMOCK_NET_IDS	8

static struct net kmock_net_ns;
struct net *kmock_net = &kmock_net_ns;
static struct pernet_operations *kmock_pernet[KMOCK_NET_IDS];

static struct net_generic *kmock_net_gen(void)
{
	struct net_generic *ng = rcu_dereference_raw(kmock_net_ns.gen);

	if (!ng) {
		ng = calloc(1, sizeof(*ng) + KMOCK_NET_IDS * sizeof(void *));
		ng->s.len = KMOCK_NET_IDS;
		rcu_assign_pointer(kmock_net_ns.gen, ng);
	}
	return ng;
}

/* A socket in kmock_net, as a dump's request comes from. */
struct sock *kmock_sock(void)
{
	static struct sock *sk;

	if (!sk) {
		sk = calloc(1, sizeof(*sk));
		sock_net_set(sk, &kmock_net_ns);
	}
	return sk;
}

int register_pernet_subsys(struct pernet_operations *ops)
{
	struct net_generic *ng = kmock_net_gen();
	unsigned int id = 1;
	int err = 0;

	while (id < KMOCK_NET_IDS && kmock_pernet[id])
		id++;
	if (WARN_ON(id >= KMOCK_NET_IDS))
		return -ENOSPC;
	if (ops->id) {
		*ops->id = id;
		ng->ptr[id] = calloc(1, ops->size);
	}
	if (ops->init)
		err = ops->init(&kmock_net_ns);
	if (err) {
		free(ng->ptr[id]);
		ng->ptr[id] = NULL;
		return err;
	}
	kmock_pernet[id] = ops;
	return 0;
}

void unregister_pernet_subsys(struct pernet_operations *ops)
{
	struct net_generic *ng = kmock_net_gen();
	unsigned int id;

	for (id = 1; id < KMOCK_NET_IDS; id++) {
		if (kmock_pernet[id] != ops)
			continue;
		/* As cleanup_net(): pre_exit, a grace period, exit. */
		if (ops->pre_exit)
			ops->pre_exit(&kmock_net_ns);
		kmock_rcu_sync();
		if (ops->exit)
			ops->exit(&kmock_net_ns);
		free(ng->ptr[id]);
		ng->ptr[id] = NULL;
		kmock_pernet[id] = NULL;
	}
}

/* --- RCU, mutexes, scheduling ------------------------------------------- */

struct kmock_rcu_free {
	struct kmock_rcu_free	*next;
	void			*obj;
};

static struct kmock_rcu_free *kmock_rcu_pending;

/* kfree_rcu(): @func is the rcu_head's offset in the object. */
void kvfree_call_rcu(struct rcu_head *head, rcu_callback_t func)
{
	struct kmock_rcu_free *f;

	/* kvfree_rcu() of one argument, which parq does not use. */
	if (WARN_ON(!head))
		return;
	f = calloc(1, sizeof(*f));
	f->obj = (char *)head - (unsigned long)func;
	f->next = kmock_rcu_pending;
	kmock_rcu_pending = f;
}

void rcu_barrier(void)
{
	kmock_rcu_sync();
}

void kmock_rcu_sync(void)
{
	while (kmock_rcu_pending) {
		struct kmock_rcu_free *f = kmock_rcu_pending;

		kmock_rcu_pending = f->next;
		kvfree(f->obj);
		free(f);
	}
}

void __mutex_init(struct mutex *lock, const char *name,
		  struct lock_class_key *key)
{
	atomic_long_set(&lock->owner, 0);
}

void mutex_lock(struct mutex *lock)
{
	WARN_ON(atomic_long_read(&lock->owner));
	atomic_long_set(&lock->owner, 1);
}

void mutex_unlock(struct mutex *lock)
{
	WARN_ON(!atomic_long_read(&lock->owner));
	atomic_long_set(&lock->owner, 0);
}

/* local_bh_disable() added @cnt to the count inline. */
void __local_bh_enable_ip(unsigned long ip, unsigned int cnt)
{
	__preempt_count_sub(cnt);
}

/*
 * preempt_enable() calls the scheduler only when the count falls to 0,
 * which kmock.c's never does (PREEMPT_ENABLED): reaching it is a bug.
 */
struct static_call_key __SCK__preempt_schedule;

void __SCT__preempt_schedule(void)
{
	__builtin_trap();
}

struct static_call_key __SCK__cond_resched;

int __SCT__cond_resched(void)
{
	return 0;
}

/* --- delayed work ----------------------------------------------------------- */

#define KMOCK_WORKS	16

static void *kmock_works[KMOCK_WORKS];	/* struct delayed_work * */
struct workqueue_struct *system_wq;

void init_timer_key(struct timer_list *timer,
		    void (*func)(struct timer_list *), unsigned int flags,
		    const char *name, struct lock_class_key *key)
{
	timer->function = func;
}

void delayed_work_timer_fn(struct timer_list *t)
{
}

bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq,
			   struct delayed_work *dwork, unsigned long delay)
{
	return kmock_pending_add(kmock_works, KMOCK_WORKS, dwork);
}

/* The table's resize work: the mock's tables never resize. */
bool queue_work_on(int cpu, struct workqueue_struct *wq,
		   struct work_struct *work)
{
	return true;
}

bool cancel_delayed_work_sync(struct delayed_work *dwork)
{
	return kmock_pending_del(kmock_works, KMOCK_WORKS, dwork);
}

unsigned int kmock_run_work(void)
{
	struct delayed_work *due[KMOCK_WORKS];
	unsigned int i, n = 0;

	/* What the work queues again waits for the next call. */
	for (i = 0; i < KMOCK_WORKS; i++) {
		if (kmock_works[i])
			due[n++] = kmock_works[i];
		kmock_works[i] = NULL;
	}
	for (i = 0; i < n; i++)
		due[i]->work.func(&due[i]->work);
	return n;
}

/* --- rhashtable ------------------------------------------------------------- */

/* Buckets of every table made from now on (a power of 2). */
unsigned int kmock_rht_size = KMOCK_RHT_SIZE;

/* The hash the kernel's inline code computes for a key of @len bytes. */
static u32 kmock_jhash2(const void *key, u32 len, u32 seed)
{
	return jhash2(key, len / sizeof(u32), seed);
}

static u32 kmock_jhash(const void *key, u32 len, u32 seed)
{
	return jhash(key, len, seed);
}

int rhashtable_init(struct rhashtable *ht,
		    const struct rhashtable_params *params)
{
	struct bucket_table *tbl;
	unsigned int i;

	memset(ht, 0, sizeof(*ht));
	ht->p = *params;
	ht->key_len = params->key_len;
	ht->max_elems = 1U << 31;
	if (!ht->p.hashfn)
		ht->p.hashfn = ht->key_len % sizeof(u32) ? kmock_jhash :
							    kmock_jhash2;
	tbl = kvzalloc(struct_size(tbl, buckets, kmock_rht_size), GFP_KERNEL);
	if (!tbl)
		return -ENOMEM;
	tbl->size = kmock_rht_size;
	tbl->hash_rnd = get_random_u32();
	INIT_LIST_HEAD(&tbl->walkers);
	for (i = 0; i < tbl->size; i++)
		INIT_RHT_NULLS_HEAD(tbl->buckets[i]);
	RCU_INIT_POINTER(ht->tbl, tbl);
	return 0;
}

static struct bucket_table *kmock_rht_tbl(struct rhashtable *ht)
{
	return rcu_dereference_raw(ht->tbl);
}

/*
 * The inline insert comes here when a chain is long or the table is
 * fuller than its size; the kernel would grow it.  Here the entry goes at
 * the head of its chain.
 */
void *rhashtable_insert_slow(struct rhashtable *ht, const void *key,
			     struct rhash_head *obj)
{
	struct bucket_table *tbl = kmock_rht_tbl(ht);
	const void *k = key ?: rht_obj(ht, obj) + ht->p.key_offset;
	unsigned int hash = ht->p.hashfn(k, ht->key_len, tbl->hash_rnd) &
			    (tbl->size - 1);
	struct rhash_lock_head __rcu **bkt = &tbl->buckets[hash];
	struct rhash_head *p;

	rht_lock(tbl, bkt);
	if (key) {
		rht_for_each_from(p, rht_ptr(bkt, tbl, hash), tbl, hash) {
			if (!memcmp(rht_obj(ht, p) + ht->p.key_offset, key,
				    ht->key_len)) {
				rht_unlock(tbl, bkt);
				return rht_obj(ht, p);
			}
		}
	}
	RCU_INIT_POINTER(obj->next, rht_ptr(bkt, tbl, hash));
	rht_assign_unlock(tbl, bkt, obj);
	atomic_inc(&ht->nelems);
	return NULL;
}

struct rhash_lock_head __rcu **rht_bucket_nested(const struct bucket_table *tbl,
						 unsigned int hash)
{
	WARN(1, "kmock: nested tables are not modelled");
	return NULL;
}

struct rhash_lock_head __rcu **__rht_bucket_nested(const struct bucket_table *tbl,
						   unsigned int hash)
{
	return rht_bucket_nested(tbl, hash);
}

struct rhash_lock_head __rcu **rht_bucket_nested_insert(struct rhashtable *ht,
							struct bucket_table *tbl,
							unsigned int hash)
{
	return rht_bucket_nested(tbl, hash);
}

void rhashtable_free_and_destroy(struct rhashtable *ht,
				 void (*free_fn)(void *ptr, void *arg),
				 void *arg)
{
	struct bucket_table *tbl = kmock_rht_tbl(ht);
	struct rhash_head *p, *next;
	unsigned int i;

	for (i = 0; free_fn && i < tbl->size; i++) {
		p = rht_ptr_exclusive(&tbl->buckets[i]);
		while (!rht_is_a_nulls(p)) {
			next = rht_dereference(p->next, ht);
			free_fn(rht_obj(ht, p), arg);
			p = next;
		}
	}
	kvfree(tbl);
	RCU_INIT_POINTER(ht->tbl, NULL);
}

void rhashtable_walk_enter(struct rhashtable *ht, struct rhashtable_iter *iter)
{
	memset(iter, 0, sizeof(*iter));
	iter->ht = ht;
	iter->walker.tbl = kmock_rht_tbl(ht);
}

void rhashtable_walk_exit(struct rhashtable_iter *iter)
{
}

/* The @n-th entry of bucket @slot (0 first), NULL past its end. */
static struct rhash_head *kmock_rht_nth(struct rhashtable_iter *iter,
					unsigned int slot, unsigned int n)
{
	struct bucket_table *tbl = iter->walker.tbl;
	struct rhash_head *p = rht_ptr_exclusive(&tbl->buckets[slot]);

	while (!rht_is_a_nulls(p) && n--)
		p = rcu_dereference_raw(p->next);
	return rht_is_a_nulls(p) ? NULL : p;
}

/* Find the current entry again: it may have gone while stopped. */
int rhashtable_walk_start_check(struct rhashtable_iter *iter)
{
	struct rhash_head *p;
	unsigned int n;

	if (!iter->p)
		return 0;
	for (n = 0; (p = kmock_rht_nth(iter, iter->slot, n)); n++) {
		if (p == iter->p) {
			iter->skip = n + 1;
			return 0;
		}
	}
	iter->p = NULL;
	return 0;
}

void rhashtable_walk_stop(struct rhashtable_iter *iter)
{
}

void *rhashtable_walk_next(struct rhashtable_iter *iter)
{
	struct bucket_table *tbl = iter->walker.tbl;
	struct rhash_head *p;

	for (; iter->slot < tbl->size; iter->slot++, iter->skip = 0) {
		p = kmock_rht_nth(iter, iter->slot, iter->skip);
		if (p) {
			iter->skip++;
			iter->p = p;
			return rht_obj(iter->ht, p);
		}
	}
	iter->p = NULL;
	iter->end_of_table = true;
	return NULL;
}

/*
 * The current entry, or the next one: when the current one went while the
 * walk was stopped, skip still counts it, and its successor took its
 * position.
 */
void *rhashtable_walk_peek(struct rhashtable_iter *iter)
{
	if (iter->p)
		return rht_obj(iter->ht, iter->p);
	if (iter->end_of_table)
		return NULL;
	if (iter->skip)
		iter->skip--;
	return rhashtable_walk_next(iter);
}

/* --- generic netlink --------------------------------------------------------- */

struct sk_buff *kmock_reply;
long kmock_notified;
const struct genl_family *kmock_genl_family;

int genl_register_family(struct genl_family *family)
{
	family->id = GENL_START_ALLOC;
	kmock_genl_family = family;
	return 0;
}

int genl_unregister_family(const struct genl_family *family)
{
	if (kmock_genl_family == family)
		kmock_genl_family = NULL;
	return 0;
}

void genl_lock(void)
{
}

void genl_unlock(void)
{
}

struct nlmsghdr *__nlmsg_put(struct sk_buff *skb, u32 portid, u32 seq,
			     int type, int len, int flags)
{
	int size = nlmsg_msg_size(len);
	struct nlmsghdr *nlh = skb_put_zero(skb, NLMSG_ALIGN(size));

	nlh->nlmsg_type = type;
	nlh->nlmsg_len = size;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_pid = portid;
	nlh->nlmsg_seq = seq;
	return nlh;
}

void *genlmsg_put(struct sk_buff *skb, u32 portid, u32 seq,
		  const struct genl_family *family, int flags, u8 cmd)
{
	struct nlmsghdr *nlh;
	struct genlmsghdr *hdr;

	nlh = nlmsg_put(skb, portid, seq, family->id,
			GENL_HDRLEN + family->hdrsize, flags);
	if (!nlh)
		return NULL;
	hdr = nlmsg_data(nlh);
	hdr->cmd = cmd;
	hdr->version = family->version;
	hdr->reserved = 0;
	return (char *)hdr + GENL_HDRLEN;
}

/* A reply: the test reads it from kmock_reply, and frees it. */
int netlink_unicast(struct sock *ssk, struct sk_buff *skb, u32 portid,
		    int nonblock)
{
	kfree_skb(kmock_reply);
	kmock_reply = skb;
	return 0;
}

int netlink_broadcast(struct sock *ssk, struct sk_buff *skb, u32 portid,
		      u32 group, gfp_t allocation)
{
	kmock_notified++;
	kfree_skb(skb);
	return 0;
}
