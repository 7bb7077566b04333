// SPDX-License-Identifier: GPL-2.0
/*
 * The "parq" generic netlink family: the credit table (parq_credit.c) and
 * the receive monitor (parq_monitor.c), per network namespace.  Every
 * request, reads too, and joining the "events" group (the monitor's start
 * and stop reports) need CAP_NET_ADMIN over the namespace, that is in the
 * user namespace that owns it (GENL_UNS_ADMIN_PERM): what the tables hold
 * tells which hosts talk to which, and a container's root manages its own
 * namespace and no other.  Documentation/netlink/specs/parq.yaml describes
 * the family; the UAPI (linux/parq_genl.h) and each request's strict
 * policy (parq_genl_policy.h) are made from it by scripts/ynl-regen, with
 * the kernel's ynl-gen.
 */
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <net/genetlink.h>
#include <linux/parq.h>

#include "parq_compat.h"
#include "parq_genl.h"
#include "parq_genl_policy.h"

/*
 * The requests that take no attribute (mon-get, peer-get) refuse any: the
 * generated policies cover only requests with attributes, and the genl
 * core refuses the attributes of a request without a policy only since
 * 6.1 (5.10 ignores them): with this one, every kernel refuses them.
 */
static const struct nla_policy parq_genl_no_attrs[PARQ_A_PAD + 1] = {
	[PARQ_A_PAD]	= { .type = NLA_REJECT },
};

/*
 * Open while the per-namespace tables exist: a request's handler runs under
 * the genl mutex, and does not hold the module, so module init opens the
 * family after the tables are made and exit closes it before they go.
 */
static bool parq_genl_open;

/*
 * A dump does not pass pre_doit: its start checks the same, under the genl
 * mutex too (the family is not parallel_ops), so that no dump walks a
 * table before module init has made it.
 */
static int parq_genl_dump_start_open(struct netlink_callback *cb)
{
	return parq_genl_open ? 0 : -ESHUTDOWN;
}

static int parq_genl_credit_dump_start(struct netlink_callback *cb)
{
	int err = parq_genl_dump_start_open(cb);

	return err ? err : parq_credit_genl_dump_start(cb);
}

static int parq_genl_pre_doit(PARQ_GENL_PRE_DOIT_OPS_T *ops,
			      struct sk_buff *skb, struct genl_info *info)
{
	return parq_genl_open ? 0 : -ESHUTDOWN;
}

static const struct genl_ops parq_genl_ops[] = {
	{
		.cmd	= PARQ_CMD_CREDIT_SET,
		.policy	= parq_credit_set_nl_policy,
		.maxattr = ARRAY_SIZE(parq_credit_set_nl_policy) - 1,
		.doit	= parq_credit_genl_set,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= PARQ_CMD_CREDIT_DEL,
		.policy	= parq_credit_del_nl_policy,
		.maxattr = ARRAY_SIZE(parq_credit_del_nl_policy) - 1,
		.doit	= parq_credit_genl_del,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= PARQ_CMD_CREDIT_GET,
		.policy	= parq_credit_get_nl_policy,
		.maxattr = ARRAY_SIZE(parq_credit_get_nl_policy) - 1,
		.doit	= parq_credit_genl_get,
		.start	= parq_genl_credit_dump_start,
		.dumpit	= parq_credit_genl_dump,
		.done	= parq_credit_genl_dump_done,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= PARQ_CMD_MON_SET,
		.policy	= parq_mon_set_nl_policy,
		.maxattr = ARRAY_SIZE(parq_mon_set_nl_policy) - 1,
		.doit	= parq_mon_genl_set,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= PARQ_CMD_MON_GET,
		.policy	= parq_genl_no_attrs,
		.maxattr = ARRAY_SIZE(parq_genl_no_attrs) - 1,
		.doit	= parq_mon_genl_get,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= PARQ_CMD_PEER_GET,
		.policy	= parq_genl_no_attrs,
		.maxattr = ARRAY_SIZE(parq_genl_no_attrs) - 1,
		.start	= parq_genl_dump_start_open,
		.dumpit	= parq_peer_genl_dump,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

static const struct genl_multicast_group parq_genl_mcgrps[] = {
	{ .name = PARQ_GENL_MCGRP_EVENTS, .flags = PARQ_MCGRP_ADMIN },
};

static struct genl_family parq_genl_family __ro_after_init = {
	.name		= PARQ_GENL_NAME,
	.version	= PARQ_GENL_VERSION,
	.netnsok	= true,
	.pre_doit	= parq_genl_pre_doit,
	.module		= THIS_MODULE,
	.ops		= parq_genl_ops,
	.n_ops		= ARRAY_SIZE(parq_genl_ops),
	.mcgrps		= parq_genl_mcgrps,
	.n_mcgrps	= PARQ_HAVE_EVENTS ? ARRAY_SIZE(parq_genl_mcgrps) : 0,
};

int parq_genl_addr(struct genl_info *info, struct parq_addr *addr)
{
	struct nlattr *a4 = info->attrs[PARQ_A_ADDR4];
	struct nlattr *a6 = info->attrs[PARQ_A_ADDR6];

	memset(addr, 0, sizeof(*addr));
	if (a4 && a6) {
		NL_SET_ERR_MSG_ATTR(info->extack, a6,
				    "parq: give one address, IPv4 or IPv6");
		return -EINVAL;
	}
	if (a4) {
		addr->family = AF_INET;
		addr->a[0] = nla_get_in_addr(a4);
	} else if (a6) {
		addr->family = AF_INET6;
		nla_memcpy(addr->a, a6, sizeof(addr->a));
	} else {
		return -ENODATA;
	}
	return 0;
}

int parq_genl_put_addr(struct sk_buff *skb, const struct parq_addr *addr)
{
	if (addr->family == AF_INET)
		return nla_put_in_addr(skb, PARQ_A_ADDR4, addr->a[0]);
	return nla_put(skb, PARQ_A_ADDR6, sizeof(addr->a), addr->a);
}

void *parq_genl_put(struct sk_buff *skb, u32 portid, u32 seq, int flags,
		    u8 cmd)
{
	return genlmsg_put(skb, portid, seq, &parq_genl_family, flags, cmd);
}

int parq_genl_dump_chains(struct sk_buff *skb, struct netlink_callback *cb,
			  struct hlist_head *chains, unsigned int n,
			  int (*fill)(struct sk_buff *skb,
				      struct hlist_node *node,
				      struct netlink_callback *cb, u64 now))
{
	unsigned long i = cb->args[0], skip = cb->args[1], k;
	u64 now = ktime_get_ns();
	struct hlist_node *node;

	rcu_read_lock();
	for (; i < n; i++, skip = 0) {
		k = 0;
		__hlist_for_each_rcu(node, &chains[i]) {
			if (k++ < skip)
				continue;
			if (fill(skb, node, cb, now)) {
				rcu_read_unlock();
				cb->args[0] = i;
				cb->args[1] = k - 1;
				return skb->len;
			}
		}
	}
	rcu_read_unlock();
	cb->args[0] = i;
	cb->args[1] = 0;
	return skb->len;
}

void parq_genl_notify(struct net *net, struct sk_buff *skb, gfp_t gfp)
{
	if (PARQ_HAVE_EVENTS)
		genlmsg_multicast_netns(&parq_genl_family, net, skb, 0, 0, gfp);
	else
		nlmsg_free(skb);
}

int __init parq_genl_init(void)
{
	return genl_register_family(&parq_genl_family);
}

void parq_genl_set_open(bool open)
{
	genl_lock();
	parq_genl_open = open;
	genl_unlock();
}

void parq_genl_exit(void)
{
	genl_unregister_family(&parq_genl_family);
}

MODULE_ALIAS_GENL_FAMILY(PARQ_GENL_NAME);
