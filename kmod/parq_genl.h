/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "parq" generic netlink family (parq_genl.c) and its handlers, which
 * live with what they edit: parq_credit.c and parq_monitor.c.
 */
#ifndef _PARQ_GENL_H
#define _PARQ_GENL_H

#include <net/genetlink.h>

#include "parq_credit.h"

/* The one address of a request; -ENODATA if it has none. */
int parq_genl_addr(struct genl_info *info, struct parq_addr *addr);
/* PARQ_A_ADDR4 or PARQ_A_ADDR6 of @addr. */
int parq_genl_put_addr(struct sk_buff *skb, const struct parq_addr *addr);
/* The header of a message of the family. */
void *parq_genl_put(struct sk_buff *skb, u32 portid, u32 seq, int flags,
		    u8 cmd);
/*
 * A dump of the entries in @n RCU hash chains, resumed where its last
 * part stopped (cb->args[0]: the chain, cb->args[1]: the entries of it
 * already sent); @fill puts the entry of one node into @skb, or fails
 * when the part is full.
 */
int parq_genl_dump_chains(struct sk_buff *skb, struct netlink_callback *cb,
			  struct hlist_head *chains, unsigned int n,
			  int (*fill)(struct sk_buff *skb,
				      struct hlist_node *node,
				      struct netlink_callback *cb, u64 now));
/* Send @skb (made with parq_genl_put) to the "events" group of @net. */
void parq_genl_notify(struct net *net, struct sk_buff *skb, gfp_t gfp);

int parq_credit_genl_set(struct sk_buff *skb, struct genl_info *info);
int parq_credit_genl_del(struct sk_buff *skb, struct genl_info *info);
int parq_credit_genl_get(struct sk_buff *skb, struct genl_info *info);
int parq_credit_genl_dump_start(struct netlink_callback *cb);
int parq_credit_genl_dump(struct sk_buff *skb, struct netlink_callback *cb);
int parq_credit_genl_dump_done(struct netlink_callback *cb);

int parq_mon_genl_set(struct sk_buff *skb, struct genl_info *info);
int parq_mon_genl_get(struct sk_buff *skb, struct genl_info *info);
int parq_peer_genl_dump(struct sk_buff *skb, struct netlink_callback *cb);

int parq_genl_init(void);
/* Let requests in, or refuse them (-ESHUTDOWN) once the running ones end. */
void parq_genl_set_open(bool open);
void parq_genl_exit(void);

#endif /* _PARQ_GENL_H */
