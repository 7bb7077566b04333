// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel functions sch_parq's glue calls, for its unit tests: compiled
 * against the kernel's own headers, so that the glue's structures and its
 * inline helpers are the kernel's, linked with the C library for memory.
 *
 * What is here is a model, not the kernel's code: memory comes from
 * malloc() and can be made to fail, the clock is a variable, spinlocks
 * are nothing (one thread; the mutex and RCU are in kmock_net.c), the
 * red-black tree is an unbalanced binary tree (same order, same
 * interface), the netlink parser checks what parq's policies use (types,
 * lengths, ranges, the strict parsing bits) and reports the offending
 * attribute as the kernel does.  What needs a real kernel (timers,
 * estimators, softirq, other CPUs) stays in the VM's selftests.
 */
#include <linux/ethtool.h>
#include <linux/ip.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/rbtree_augmented.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <net/gen_stats.h>
#include <net/netlink.h>
#include <net/pkt_cls.h>
#include <net/pkt_sched.h>

#include "kmock.h"

u64 kmock_now;
u32 kmock_link_mbps;
long kmock_fail_at = -1;
long kmock_live, kmock_base;
long kmock_reduced_pkts, kmock_reduced_bytes;
/* Estimators started and not killed. */
static long kmock_estimators;
u64 kmock_watchdog_at;

static bool kmock_module_up;

/*
 * The module's own init (init_module(), parq_qdisc.c's module_init()),
 * once per test; ktest_teardown() calls its exit.  The C library has an
 * init_module() too, the system call's: the binary's own definition wins,
 * and nothing here calls the system call.
 */
int kmock_module_init(void)
{
	long fail_at = kmock_fail_at;
	int err;

	if (kmock_module_up)
		return 0;
	/* Not what a test injects failures into. */
	kmock_fail_at = -1;
	err = init_module();
	kmock_fail_at = fail_at;
	if (WARN_ON(err))
		return err;
	kmock_module_up = true;
	return 0;
}

/*
 * After each test: the module goes, and what the test left is checked (a
 * count of preemption or bottom halves not given back, hooks left
 * registered) and reset, so that the next starts clean.
 */
void ktest_teardown(void)
{
	if (kmock_module_up) {
		cleanup_module();
		kmock_module_up = false;
	}
	if (kmock_qdisc_ops)
		ktest_fail(__FILE__, __LINE__, "the qdisc is still registered");
	if (preempt_count())
		ktest_fail(__FILE__, __LINE__, "preempt count %#x left",
			   preempt_count());
	if (kmock_nhooks)
		ktest_fail(__FILE__, __LINE__, "%u netfilter hooks left",
			   kmock_nhooks);
	if (kmock_estimators)
		ktest_fail(__FILE__, __LINE__, "%ld rate estimators left",
			   kmock_estimators);
	kmock_estimators = 0;
	preempt_count_set(PREEMPT_ENABLED);
	kfree_skb(kmock_reply);
	kmock_reply = NULL;
	kmock_rht_size = KMOCK_RHT_SIZE;
}

void kmock_reset(void)
{
	kmock_set_now(NSEC_PER_SEC);
	kmock_link_mbps = 10000;
	kmock_fail_at = -1;
	kmock_reduced_pkts = 0;
	kmock_reduced_bytes = 0;
	kmock_watchdog_at = 0;
	kmock_filter_verdict = TC_ACT_UNSPEC;
	kmock_filter_classid = 0;
	WARN_ON(kmock_module_init());
	kmock_base = kmock_live;
}

/* --- the CPU: current, preemption, time ------------------------------- */

/*
 * Per-CPU variables are read through %gs, whose base is 0 in a user
 * process: the binary is linked without PIE, so each is at its address.
 */
static struct task_struct kmock_task;
DEFINE_PER_CPU(struct task_struct *, current_task) = &kmock_task;
/* Preemption enabled, and no reschedule asked: never 0 in a test. */
DEFINE_PER_CPU(int, __preempt_count) = PREEMPT_ENABLED;
DEFINE_PER_CPU(struct mem_cgroup *, int_active_memcg);
/* jiffies is this, as the kernel's linker script has it (Makefile). */
u64 jiffies_64 = INITIAL_JIFFIES;

ktime_t ktime_get(void)
{
	return ns_to_ktime(kmock_now);
}

u32 get_random_u32(void)
{
	static u32 x = 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

void __rcu_read_lock(void)
{
}

void __rcu_read_unlock(void)
{
}

void _raw_spin_lock_bh(raw_spinlock_t *lock)
{
}

void _raw_spin_unlock_bh(raw_spinlock_t *lock)
{
}

int rtnl_is_locked(void)
{
	return 1;
}

void __warn_printk(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

void do_trace_netlink_extack(const char *msg)
{
}

struct mem_cgroup *get_mem_cgroup_from_mm(struct mm_struct *mm)
{
	return NULL;
}

/* --- memory ------------------------------------------------------------- */

static void *kmock_alloc(size_t size, gfp_t flags)
{
	void *p;

	if (kmock_fail_at >= 0 && kmock_fail_at-- == 0)
		return NULL;
	if (!size)
		return ZERO_SIZE_PTR;
	p = flags & __GFP_ZERO ? calloc(1, size) : malloc(size);
	if (p)
		kmock_live++;
	return p;
}

void *kmock_zalloc(size_t size)
{
	return kmock_alloc(size, __GFP_ZERO);
}

static void kmock_free(const void *p)
{
	if (!p || ZERO_OR_NULL_PTR(p))
		return;
	kmock_live--;
	free((void *)p);
}

struct kmem_cache *kmalloc_caches[NR_KMALLOC_TYPES][KMALLOC_SHIFT_HIGH + 1];

void *kmalloc_trace(struct kmem_cache *s, gfp_t flags, size_t size)
{
	return kmock_alloc(size, flags);
}

void *__kmalloc(size_t size, gfp_t flags)
{
	return kmock_alloc(size, flags);
}

void *kvmalloc_node(size_t size, gfp_t flags, int node)
{
	/* As the kernel's: larger would overflow its callers' arithmetic. */
	if (size > INT_MAX) {
		WARN_ON_ONCE(!(flags & __GFP_NOWARN));
		return NULL;
	}
	return kmock_alloc(size, flags);
}

void kfree(const void *p)
{
	kmock_free(p);
}

void kvfree(const void *p)
{
	kmock_free(p);
}

/* A cache is its object size. */
struct kmock_cache {
	unsigned int size;
};

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
				     unsigned int align, slab_flags_t flags,
				     void (*ctor)(void *))
{
	struct kmock_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->size = size;
	return (struct kmem_cache *)c;
}

void kmem_cache_destroy(struct kmem_cache *s)
{
	free(s);
}

void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
	return kmock_alloc(((struct kmock_cache *)s)->size, flags);
}

void kmem_cache_free(struct kmem_cache *s, void *p)
{
	kmock_free(p);
}

/* --- packets ------------------------------------------------------------ */

struct sk_buff *__alloc_skb(unsigned int size, gfp_t gfp, int flags, int node)
{
	struct sk_buff *skb = kmock_alloc(sizeof(*skb), gfp | __GFP_ZERO);
	unsigned int room = SKB_DATA_ALIGN(size);
	u8 *data;

	if (!skb)
		return NULL;
	data = kmock_alloc(room + sizeof(struct skb_shared_info),
			   gfp | __GFP_ZERO);
	if (!data) {
		kmock_free(skb);
		return NULL;
	}
	skb->head = data;
	skb->data = data;
	skb_reset_tail_pointer(skb);
	skb->end = room;
	refcount_set(&skb->users, 1);
	skb->mac_header = (typeof(skb->mac_header))~0U;
	skb->transport_header = (typeof(skb->transport_header))~0U;
	return skb;
}

static void kmock_skb_free(struct sk_buff *skb)
{
	kmock_free(skb->head);
	kmock_free(skb);
}

void kfree_skb_reason(struct sk_buff *skb, enum skb_drop_reason reason)
{
	if (skb)
		kmock_skb_free(skb);
}

void kfree_skb_list_reason(struct sk_buff *segs, enum skb_drop_reason reason)
{
	while (segs) {
		struct sk_buff *next = segs->next;

		kmock_skb_free(segs);
		segs = next;
	}
}

void consume_skb(struct sk_buff *skb)
{
	if (skb)
		kmock_skb_free(skb);
}

void rtnl_kfree_skbs(struct sk_buff *head, struct sk_buff *tail)
{
	kfree_skb_list_reason(head, SKB_DROP_REASON_NOT_SPECIFIED);
}

void *skb_put(struct sk_buff *skb, unsigned int len)
{
	if (WARN_ON(len > skb_tailroom(skb)))
		return NULL;
	return __skb_put(skb, len);
}

void skb_trim(struct sk_buff *skb, unsigned int len)
{
	if (skb->len > len)
		__skb_trim(skb, len);
}

/* Only linear packets are made here. */
void *__pskb_pull_tail(struct sk_buff *skb, int delta)
{
	return NULL;
}

int skb_copy_bits(const struct sk_buff *skb, int offset, void *to, int len)
{
	if (offset < 0 || len < 0 || offset + len > skb_headlen(skb))
		return -EFAULT;
	memcpy(to, skb->data + offset, len);
	return 0;
}

int pskb_expand_head(struct sk_buff *skb, int nhead, int ntail, gfp_t gfp)
{
	return -ENOMEM;
}

void __skb_get_hash_net(const struct net *net, struct sk_buff *skb)
{
	u32 h = 2166136261u;
	unsigned int i;

	for (i = 0; i < skb_headlen(skb) && i < 40; i++)
		h = (h ^ skb->data[i]) * 16777619u;
	__skb_set_sw_hash(skb, h ?: 1, true);
}

netdev_features_t netif_skb_features(struct sk_buff *skb)
{
	return 0;
}

/*
 * A GSO packet made by kmock_ipv4_gso(): an IPv4 header and its payload in
 * gso_size pieces, each segment the header and one piece, as the kernel's
 * segmentation gives (without checksums or a transport header).
 */
struct sk_buff *__skb_gso_segment(struct sk_buff *skb,
				  netdev_features_t features, bool tx_path)
{
	unsigned int hlen = sizeof(struct iphdr), mss = skb_shinfo(skb)->gso_size;
	struct sk_buff *segs = NULL, **tail = &segs;
	unsigned int off, n;

	if (!mss || skb_headlen(skb) <= hlen)
		return ERR_PTR(-EINVAL);
	for (off = hlen; off < skb->len; off += n) {
		struct sk_buff *seg;

		n = min_t(unsigned int, mss, skb->len - off);
		seg = alloc_skb(hlen + n, GFP_ATOMIC);
		if (!seg) {
			kfree_skb_list(segs);
			return ERR_PTR(-ENOMEM);
		}
		skb_reset_network_header(seg);
		skb_put_data(seg, skb->data, hlen);
		skb_put_data(seg, skb->data + off, n);
		ip_hdr(seg)->tot_len = htons(hlen + n);
		/* What __copy_skb_header() carries over. */
		seg->protocol = skb->protocol;
		seg->priority = skb->priority;
		seg->mark = skb->mark;
		seg->hash = skb->hash;
		seg->l4_hash = skb->l4_hash;
		seg->sw_hash = skb->sw_hash;
		memcpy(seg->cb, skb->cb, sizeof(seg->cb));
		*tail = seg;
		tail = &seg->next;
	}
	return segs;
}

struct sk_buff *kmock_nl_skb(unsigned int size)
{
	return alloc_skb(size, GFP_KERNEL);
}

struct sk_buff *kmock_ipv4(unsigned int len, u8 dst, u32 prio, u8 tos)
{
	struct sk_buff *skb = alloc_skb(len, GFP_ATOMIC);
	struct iphdr *ip;

	if (!skb)
		return NULL;
	skb_reset_network_header(skb);
	ip = skb_put_zero(skb, len);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = tos;
	ip->tot_len = htons(len);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(0x0a000001);
	ip->daddr = KMOCK_DST(dst);
	skb->protocol = htons(ETH_P_IP);
	skb->priority = prio;
	qdisc_skb_cb(skb)->pkt_len = len;
	return skb;
}

struct sk_buff *kmock_ipv4_gso(unsigned int len, u8 dst, u32 prio,
			       unsigned int mss)
{
	struct sk_buff *skb = kmock_ipv4(len, dst, prio, 0);

	if (skb) {
		u16 segs = DIV_ROUND_UP(len - sizeof(struct iphdr), mss);

		skb_shinfo(skb)->gso_size = mss;
		skb_shinfo(skb)->gso_segs = segs;
		skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
		/* As qdisc_pkt_len_init(): each segment's header counted. */
		qdisc_skb_cb(skb)->pkt_len = len + (segs - 1) *
					     sizeof(struct iphdr);
	}
	return skb;
}

struct sk_buff *kmock_ipv4_from(unsigned int len, u8 src, u8 tos)
{
	struct sk_buff *skb = kmock_ipv4(len, 1, 0, tos);

	if (skb)
		ip_hdr(skb)->saddr = KMOCK_SRC(src);
	return skb;
}

/* jiffies follow the clock, from INITIAL_JIFFIES at 0. */
void kmock_set_now(u64 ns)
{
	kmock_now = ns;
	jiffies_64 = INITIAL_JIFFIES + div_u64(ns, NSEC_PER_SEC / HZ);
}

void kmock_advance(u64 ns)
{
	kmock_set_now(kmock_now + ns);
}

/* --- red-black trees, unbalanced --------------------------------------- */

void rb_insert_color(struct rb_node *node, struct rb_root *root)
{
}

void __rb_insert_augmented(struct rb_node *node, struct rb_root *root,
			   void (*augment_rotate)(struct rb_node *old,
						  struct rb_node *new))
{
}

/* Colours are not kept, so nothing is rebalanced after an erase either. */
void __rb_erase_color(struct rb_node *parent, struct rb_root *root,
		      void (*augment_rotate)(struct rb_node *old,
					     struct rb_node *new))
{
}

static void kmock_rb_noop(struct rb_node *a, struct rb_node *b)
{
}

static void kmock_rb_noop1(struct rb_node *a, struct rb_node *stop)
{
}

static const struct rb_augment_callbacks kmock_rb_plain = {
	.propagate = kmock_rb_noop1,
	.copy = kmock_rb_noop,
	.rotate = kmock_rb_noop,
};

void rb_erase(struct rb_node *node, struct rb_root *root)
{
	__rb_erase_augmented(node, root, &kmock_rb_plain);
}

struct rb_node *rb_next(const struct rb_node *node)
{
	struct rb_node *parent;

	if (RB_EMPTY_NODE(node))
		return NULL;
	if (node->rb_right) {
		node = node->rb_right;
		while (node->rb_left)
			node = node->rb_left;
		return (struct rb_node *)node;
	}
	while ((parent = rb_parent(node)) && node == parent->rb_right)
		node = parent;
	return parent;
}

static struct rb_node *kmock_rb_left_deepest(const struct rb_node *node)
{
	for (;;) {
		if (node->rb_left)
			node = node->rb_left;
		else if (node->rb_right)
			node = node->rb_right;
		else
			return (struct rb_node *)node;
	}
}

struct rb_node *rb_first_postorder(const struct rb_root *root)
{
	return root->rb_node ? kmock_rb_left_deepest(root->rb_node) : NULL;
}

struct rb_node *rb_next_postorder(const struct rb_node *node)
{
	const struct rb_node *parent;

	if (!node)
		return NULL;
	parent = rb_parent(node);
	if (parent && node == parent->rb_left && parent->rb_right)
		return kmock_rb_left_deepest(parent->rb_right);
	return (struct rb_node *)parent;
}

/* --- netlink -------------------------------------------------------------- */

static int kmock_nla_bad(const struct nlattr *nla, const char *msg,
			 struct netlink_ext_ack *extack)
{
	if (extack) {
		extack->_msg = msg;
		extack->bad_attr = nla;
	}
	return -EINVAL;
}

/* The kernel answers a value out of its range with ERANGE. */
static int kmock_nla_erange(const struct nlattr *nla,
			    struct netlink_ext_ack *extack)
{
	kmock_nla_bad(nla, "integer out of range", extack);
	return -ERANGE;
}

static int kmock_nla_range(const struct nla_policy *pt,
			   const struct nlattr *nla,
			   struct netlink_ext_ack *extack)
{
	s64 smin = S64_MIN, smax = S64_MAX, sv;
	u64 umin = 0, umax = U64_MAX, uv;
	bool is_signed = pt->type == NLA_S32 || pt->type == NLA_S8 ||
			 pt->type == NLA_S16 || pt->type == NLA_S64;

	switch (pt->validation_type) {
	case NLA_VALIDATE_NONE:
		return 0;
	case NLA_VALIDATE_RANGE_PTR:
		if (is_signed) {
			smin = pt->range_signed->min;
			smax = pt->range_signed->max;
		} else {
			umin = pt->range->min;
			umax = pt->range->max;
		}
		break;
	case NLA_VALIDATE_RANGE:
	case NLA_VALIDATE_MIN:
	case NLA_VALIDATE_MAX:
		if (pt->validation_type != NLA_VALIDATE_MAX) {
			smin = pt->min;
			umin = pt->min;
		}
		if (pt->validation_type != NLA_VALIDATE_MIN) {
			smax = pt->max;
			umax = pt->max;
		}
		break;
	default:
		return kmock_nla_bad(nla, "kmock: validation not modelled",
				     extack);
	}
	switch (pt->type) {
	case NLA_U8:
		uv = nla_get_u8(nla);
		break;
	case NLA_U16:
		uv = nla_get_u16(nla);
		break;
	case NLA_U32:
		uv = nla_get_u32(nla);
		break;
	case NLA_U64:
		uv = nla_get_u64(nla);
		break;
	case NLA_S32:
		sv = nla_get_s32(nla);
		if (sv < smin || sv > smax)
			return kmock_nla_erange(nla, extack);
		return 0;
	default:
		return kmock_nla_bad(nla, "kmock: type not modelled", extack);
	}
	if (uv < umin || uv > umax)
		return kmock_nla_erange(nla, extack);
	return 0;
}

static int kmock_nla_validate_all(const struct nlattr *head, int len,
				  int maxtype, const struct nla_policy *policy,
				  unsigned int validate, struct nlattr **tb,
				  struct netlink_ext_ack *extack);

/* One attribute against its policy; @validate: the NL_VALIDATE_* bits. */
static int kmock_nla_validate(const struct nla_policy *pt,
			      const struct nlattr *nla, unsigned int validate,
			      struct netlink_ext_ack *extack)
{
	static const u8 size[] = {
		[NLA_U8] = 1, [NLA_U16] = 2, [NLA_U32] = 4, [NLA_U64] = 8,
		[NLA_S8] = 1, [NLA_S16] = 2, [NLA_S32] = 4, [NLA_S64] = 8,
		[NLA_FLAG] = 0, [NLA_MSECS] = 8,
	};
	bool nested = pt->type == NLA_NESTED || pt->type == NLA_NESTED_ARRAY;
	int len = nla_len(nla);

	if (validate & NL_VALIDATE_NESTED) {
		if (nested && !(nla->nla_type & NLA_F_NESTED))
			return kmock_nla_bad(nla, "NLA_F_NESTED is missing",
					     extack);
		if (!nested && pt->type != NLA_UNSPEC &&
		    (nla->nla_type & NLA_F_NESTED))
			return kmock_nla_bad(nla, "NLA_F_NESTED not expected",
					     extack);
	}
	switch (pt->type) {
	case NLA_REJECT:
		return kmock_nla_bad(nla, "Attribute not allowed", extack);
	case NLA_UNSPEC:
		if (validate & NL_VALIDATE_UNSPEC)
			return kmock_nla_bad(nla, "Unsupported attribute",
					     extack);
		return 0;
	case NLA_U8: case NLA_U16: case NLA_U32: case NLA_U64:
	case NLA_S8: case NLA_S16: case NLA_S32: case NLA_S64:
	case NLA_FLAG: case NLA_MSECS:
		if ((validate & NL_VALIDATE_STRICT_ATTRS) &&
		    len != size[pt->type])
			return kmock_nla_bad(nla, "invalid attribute length",
					     extack);
		if (len < size[pt->type]) {
			kmock_nla_bad(nla, "Attribute too short", extack);
			return -ERANGE;
		}
		break;
	case NLA_BINARY:
		/* NLA_POLICY_EXACT_LEN() and its kin: a range of lengths. */
		if (pt->validation_type == NLA_VALIDATE_RANGE) {
			if (len < pt->min || len > pt->max) {
				kmock_nla_bad(nla,
					      "binary attribute size out of range",
					      extack);
				return -ERANGE;
			}
			return 0;
		}
		if (pt->validation_type != NLA_VALIDATE_NONE)
			return kmock_nla_bad(nla,
					     "kmock: validation not modelled",
					     extack);
		if (pt->len && len > pt->len) {
			kmock_nla_bad(nla, "Attribute too long", extack);
			return -ERANGE;
		}
		return 0;
	case NLA_NESTED:
		if (len && len < NLA_HDRLEN)
			return kmock_nla_bad(nla, "Attribute has wrong length",
					     extack);
		if (!pt->nested_policy || !len)
			return 0;
		return kmock_nla_validate_all(nla_data(nla), len, pt->len,
					      pt->nested_policy, validate,
					      NULL, extack);
	default:
		return kmock_nla_bad(nla, "kmock: type not modelled", extack);
	}
	return kmock_nla_range(pt, nla, extack);
}

static int kmock_nla_validate_all(const struct nlattr *head, int len,
				  int maxtype, const struct nla_policy *policy,
				  unsigned int validate, struct nlattr **tb,
				  struct netlink_ext_ack *extack)
{
	u16 strict_start = policy ? policy[0].strict_start_type : 0;
	const struct nlattr *nla;
	int rem, err;

	nla_for_each_attr(nla, head, len, rem) {
		u16 type = nla_type(nla);
		unsigned int v = validate;

		if (strict_start && type >= strict_start)
			v |= NL_VALIDATE_STRICT;
		if (type == 0 || type > maxtype) {
			if (v & NL_VALIDATE_MAXTYPE)
				return kmock_nla_bad(nla,
						     "Unknown attribute type",
						     extack);
			continue;
		}
		if (policy) {
			err = kmock_nla_validate(&policy[type], nla, v, extack);
			if (err)
				return err;
		}
		if (tb)
			tb[type] = (struct nlattr *)nla;
	}
	if (rem > 0 && (validate & NL_VALIDATE_TRAILING)) {
		NL_SET_ERR_MSG(extack, "bytes leftover after parsing attributes");
		return -EINVAL;
	}
	return 0;
}

int __nla_parse(struct nlattr **tb, int maxtype, const struct nlattr *head,
		int len, const struct nla_policy *policy, unsigned int validate,
		struct netlink_ext_ack *extack)
{
	memset(tb, 0, sizeof(*tb) * (maxtype + 1));
	return kmock_nla_validate_all(head, len, maxtype, policy, validate, tb,
				      extack);
}

int nla_memcpy(void *dest, const struct nlattr *src, int count)
{
	int n = min_t(int, count, nla_len(src));

	memcpy(dest, nla_data(src), n);
	if (n < count)
		memset(dest + n, 0, count - n);
	return n;
}

int nla_put(struct sk_buff *skb, int type, int len, const void *data)
{
	struct nlattr *nla;

	if (skb_tailroom(skb) < nla_total_size(len))
		return -EMSGSIZE;
	nla = skb_put_zero(skb, nla_total_size(len));
	nla->nla_type = type;
	nla->nla_len = nla_attr_size(len);
	if (len)
		memcpy(nla_data(nla), data, len);
	return 0;
}

/* x86-64 needs no padding before a 64-bit attribute. */
int nla_put_64bit(struct sk_buff *skb, int type, int len, const void *data,
		  int padattr)
{
	return nla_put(skb, type, len, data);
}

/* --- the qdisc layer ------------------------------------------------------ */

void qdisc_tree_reduce_backlog(struct Qdisc *sch, int n, int len)
{
	kmock_reduced_pkts += n;
	kmock_reduced_bytes += len;
}

void qdisc_watchdog_init(struct qdisc_watchdog *wd, struct Qdisc *sch)
{
	wd->qdisc = sch;
	wd->last_expires = 0;
}

void qdisc_watchdog_schedule_range_ns(struct qdisc_watchdog *wd, u64 expires,
				      u64 delta_ns)
{
	wd->last_expires = expires;
	kmock_watchdog_at = expires;
}

void qdisc_watchdog_cancel(struct qdisc_watchdog *wd)
{
	kmock_watchdog_at = 0;
}

int qdisc_class_hash_init(struct Qdisc_class_hash *clhash)
{
	clhash->hashsize = 4;
	clhash->hashmask = 3;
	clhash->hashelems = 0;
	clhash->hash = kvmalloc_node(4 * sizeof(*clhash->hash),
				     GFP_KERNEL | __GFP_ZERO, NUMA_NO_NODE);
	return clhash->hash ? 0 : -ENOMEM;
}

void qdisc_class_hash_insert(struct Qdisc_class_hash *clhash,
			     struct Qdisc_class_common *cl)
{
	unsigned int h = qdisc_class_hash(cl->classid, clhash->hashmask);

	hlist_add_head(&cl->hnode, &clhash->hash[h]);
	clhash->hashelems++;
}

void qdisc_class_hash_remove(struct Qdisc_class_hash *clhash,
			     struct Qdisc_class_common *cl)
{
	hlist_del(&cl->hnode);
	clhash->hashelems--;
}

/* Four buckets hold any number of classes, if slowly. */
void qdisc_class_hash_grow(struct Qdisc *sch, struct Qdisc_class_hash *clhash)
{
}

void qdisc_class_hash_destroy(struct Qdisc_class_hash *clhash)
{
	kvfree(clhash->hash);
}

int tcf_block_get(struct tcf_block **p_block,
		  struct tcf_proto __rcu **p_filter_chain, struct Qdisc *q,
		  struct netlink_ext_ack *extack)
{
	*p_block = NULL;
	return 0;
}

void tcf_block_put(struct tcf_block *block)
{
}

int kmock_filter_verdict = TC_ACT_UNSPEC;
u32 kmock_filter_classid;

/* The qdisc's filters, when a test has given it some: one verdict. */
int tcf_classify(struct sk_buff *skb, const struct tcf_block *block,
		 const struct tcf_proto *tp, struct tcf_result *res,
		 bool compat_mode)
{
	res->classid = kmock_filter_classid;
	return kmock_filter_verdict;
}

void gnet_stats_basic_sync_init(struct gnet_stats_basic_sync *b)
{
	memset(b, 0, sizeof(*b));
}

char kmock_app[256];
int kmock_app_len;

int gnet_stats_copy_app(struct gnet_dump *d, void *st, int len)
{
	int i;

	kmock_app_len = len;
	for (i = 0; i < len && i < (int)sizeof(kmock_app); i++)
		kmock_app[i] = ((char *)st)[i];
	return 0;
}

int gnet_stats_copy_basic(struct gnet_dump *d,
			  struct gnet_stats_basic_sync __percpu *cpu,
			  struct gnet_stats_basic_sync *b, bool running)
{
	return 0;
}

int gnet_stats_copy_queue(struct gnet_dump *d,
			  struct gnet_stats_queue __percpu *cpu_q,
			  struct gnet_stats_queue *q, __u32 qlen)
{
	return 0;
}

int gnet_stats_copy_rate_est(struct gnet_dump *d,
			     struct net_rate_estimator __rcu **ptr)
{
	return 0;
}

int gen_replace_estimator(struct gnet_stats_basic_sync *bstats,
			  struct gnet_stats_basic_sync __percpu *cpu_bstats,
			  struct net_rate_estimator __rcu **ptr,
			  spinlock_t *lock, bool running, struct nlattr *opt)
{
	if (!*ptr) {
		*ptr = (struct net_rate_estimator __rcu *)&kmock_estimators;
		kmock_estimators++;
	}
	return 0;
}

void gen_kill_estimator(struct net_rate_estimator __rcu **ptr)
{
	if (*ptr) {
		*ptr = NULL;
		kmock_estimators--;
	}
}

int __ethtool_get_link_ksettings(struct net_device *dev,
				 struct ethtool_link_ksettings *ks)
{
	memset(ks, 0, sizeof(*ks));
	if (!kmock_link_mbps)
		return -EOPNOTSUPP;
	ks->base.speed = kmock_link_mbps;
	return 0;
}

/* --- pending work and timers: a small set of pointers -------------------- */

bool kmock_pending_add(void **set, unsigned int n, void *p)
{
	unsigned int i, slot = n;

	for (i = 0; i < n; i++) {
		if (set[i] == p)
			return false;
		if (!set[i] && slot == n)
			slot = i;
	}
	if (WARN_ON(slot == n))
		return false;
	set[slot] = p;
	return true;
}

bool kmock_pending_del(void **set, unsigned int n, void *p)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (set[i] == p) {
			set[i] = NULL;
			return true;
		}
	}
	return false;
}

/* --- the module and its qdisc ------------------------------------------ */

struct module __this_module;
const struct Qdisc_ops *kmock_qdisc_ops;

int register_qdisc(struct Qdisc_ops *ops)
{
	if (WARN_ON(kmock_qdisc_ops))
		return -EEXIST;
	kmock_qdisc_ops = ops;
	return 0;
}

void unregister_qdisc(struct Qdisc_ops *ops)
{
	WARN_ON(kmock_qdisc_ops != ops);
	kmock_qdisc_ops = NULL;
}

/* --- devices and qdiscs ------------------------------------------------- */

static const struct Qdisc_ops kmock_mq_ops = { .id = "mq" };
static const struct Qdisc_ops kmock_pfifo_fast_ops = { .id = "pfifo_fast" };

struct net_device *kmock_dev_new(unsigned int mtu, unsigned int ntx)
{
	struct net_device *dev = calloc(1, sizeof(*dev));
	struct Qdisc **dflt;
	unsigned int i;

	dev->_tx = calloc(ntx, sizeof(*dev->_tx));
	for (i = 0; i < ntx; i++)
		dev->_tx[i].dev = dev;
	dev->num_tx_queues = ntx;
	dev->real_num_tx_queues = ntx;
	dev->mtu = mtu;
	dev->hard_header_len = ETH_HLEN;
	dev_net_set(dev, kmock_net);
	/*
	 * What the kernel attaches first, handle 0 (attach_default_qdiscs()):
	 * on a device with one queue pfifo_fast at the root; with several, mq
	 * at the root and a pfifo_fast on each queue.  Kept in ml_priv, the
	 * root first, to be freed with the device.
	 */
	dflt = calloc(ntx + 1, sizeof(*dflt));
	dev->ml_priv = dflt;
	dflt[0] = kmock_qdisc_new(dev, ntx > 1 ? &kmock_mq_ops :
					      &kmock_pfifo_fast_ops,
				  0, TC_H_ROOT);
	rcu_assign_pointer(dev->qdisc, dflt[0]);
	for (i = 0; i < ntx; i++) {
		dflt[i + 1] = ntx > 1 ?
			kmock_qdisc_new(dev, &kmock_pfifo_fast_ops, 0,
					TC_H_MAKE(0, i + 1)) : dflt[0];
		rcu_assign_pointer(dev->_tx[i].qdisc_sleeping, dflt[i + 1]);
	}
	return dev;
}

void kmock_dev_free(struct net_device *dev)
{
	struct Qdisc **dflt = dev->ml_priv;
	unsigned int i;

	if (dev->num_tx_queues > 1)
		for (i = 0; i < dev->num_tx_queues; i++)
			free(dflt[i + 1]);
	free(dflt[0]);
	free(dflt);
	free(dev->_tx);
	free(dev);
}

/* As qdisc_create() makes it: not grafted yet. */
struct Qdisc *kmock_qdisc_new(struct net_device *dev,
			      const struct Qdisc_ops *ops, u32 handle,
			      u32 parent)
{
	/* qdisc_priv() is what follows the structure. */
	size_t size = sizeof(struct Qdisc) + ops->priv_size;
	struct Qdisc *sch = calloc(1, size);

	sch->ops = ops;
	sch->handle = handle;
	sch->parent = parent;
	sch->dev_queue = dev->_tx;
	spin_lock_init(&sch->q.lock);
	return sch;
}

void kmock_graft(struct Qdisc *sch, int txq)
{
	struct net_device *dev = qdisc_dev(sch);
	unsigned int i;

	if (txq >= 0) {
		sch->dev_queue = &dev->_tx[txq];
		rcu_assign_pointer(dev->_tx[txq].qdisc_sleeping, sch);
		return;
	}
	for (i = 0; i < dev->num_tx_queues; i++)
		rcu_assign_pointer(dev->_tx[i].qdisc_sleeping, sch);
	rcu_assign_pointer(dev->qdisc, sch);
}

void kmock_qdisc_free(struct Qdisc *sch)
{
	free(sch);
}

