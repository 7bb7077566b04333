// SPDX-License-Identifier: GPL-2.0
/* The parq family (parq_genl.c): its operations and their policies. */
#include "tparq.h"

/*
 * Each request takes only its own attributes: a monitor attribute in a
 * credit request, a credit in a monitor request and anything in a read
 * are refused, and change nothing.
 */
KTEST(genl_each_request_refuses_others_attributes)
{
	static const struct {
		u8	cmd;
		int	attr;
	} bad[] = {
		{ PARQ_CMD_CREDIT_SET, PARQ_A_MON_SIZE },
		{ PARQ_CMD_CREDIT_DEL, PARQ_A_CREDIT },
		{ PARQ_CMD_CREDIT_GET, PARQ_A_LEASE },
		{ PARQ_CMD_MON_SET, PARQ_A_CREDIT },
		{ PARQ_CMD_MON_GET, PARQ_A_MON_SIZE },
		{ PARQ_CMD_MON_GET, PARQ_A_PAD },
	};
	unsigned int i;
	struct tgenl g;
	int err, type;

	kmock_reset();
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		/* A valid credit request, but for the one attribute. */
		tgenl_start(&g);
		if (bad[i].cmd == PARQ_CMD_CREDIT_SET) {
			nla_put_in_addr(g.skb, PARQ_A_ADDR4,
					KMOCK_DST(7));
			nla_put_u32(g.skb, PARQ_A_CREDIT, 1000);
			nla_put_u64_64bit(g.skb, PARQ_A_LEASE, NSEC_PER_SEC,
					  PARQ_A_PAD);
		}
		nla_put_u32(g.skb, bad[i].attr, 16);
		err = tgenl_do(&g, bad[i].cmd);
		type = g.extack.bad_attr ? nla_type(g.extack.bad_attr) : -1;
		tgenl_end(&g);
		KT_ASSERT_EQ(err, -EINVAL);
		KT_ASSERT_EQ(type, bad[i].attr);
	}
	KT_ASSERT(!parq_credit_active(kmock_net));
	KT_ASSERT(!kmock_reply);
}

/* While the module goes, requests are refused and reach no table. */
KTEST(genl_closed_family_refuses)
{
	kmock_reset();
	parq_genl_set_open(false);
	KT_ASSERT_EQ(tcredit_set(7, 1000, NSEC_PER_MSEC, NSEC_PER_SEC),
		     -ESHUTDOWN);
	KT_ASSERT(!parq_credit_active(kmock_net));
	parq_genl_set_open(true);
	KT_ASSERT_EQ(tcredit_set(7, 1000, NSEC_PER_MSEC, NSEC_PER_SEC), 0);
	KT_ASSERT(parq_credit_active(kmock_net));
}
