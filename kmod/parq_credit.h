/* SPDX-License-Identifier: GPL-2.0 */
/*
 * parq receiver-side credits, as the qdisc sees them: see parq_credit.c.
 */
#ifndef _PARQ_CREDIT_H
#define _PARQ_CREDIT_H

#include <linux/skbuff.h>
#include <linux/types.h>
#include <net/net_namespace.h>

/* A destination host: AF_INET uses a[0]; the rest stays zero. */
struct parq_addr {
	__be32	a[4];
	u32	family;		/* AF_INET or AF_INET6 */
};

static inline bool parq_addr_eq(const struct parq_addr *a,
				const struct parq_addr *b)
{
	return a->family == b->family && !memcmp(a->a, b->a, sizeof(a->a));
}

/* A total order: by family, then address. */
static inline int parq_addr_cmp(const struct parq_addr *a,
				const struct parq_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->a, b->a, sizeof(a->a));
}

enum parq_credit_verdict {
	PARQ_CREDIT_NONE,	/* no live entry: send freely */
	PARQ_CREDIT_PASS,	/* within the credit, now charged */
	PARQ_CREDIT_WAIT,	/* over the credit until *until */
};

/* Does namespace @net hold any credit entry?  (A cheap first test.) */
bool parq_credit_active(const struct net *net);
/* Charge @len bytes of local traffic to @dst at @now (RCU, no lock). */
enum parq_credit_verdict parq_credit_charge(const struct net *net,
					    const struct parq_addr *dst,
					    u32 len, u64 now, u64 *until);

int parq_credit_init(void);
void parq_credit_exit(void);

#endif /* _PARQ_CREDIT_H */
