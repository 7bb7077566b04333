// SPDX-License-Identifier: GPL-2.0
/* The receiver credits (parq_credit.c): the table and its requests. */
#include <linux/rhashtable.h>

#include "tparq.h"

static struct parq_addr taddr(u8 dst)
{
	struct parq_addr a = { .family = AF_INET };

	a.a[0] = KMOCK_DST(dst);
	return a;
}

static enum parq_credit_verdict tcharge(u8 dst, u32 len, u64 *until)
{
	struct parq_addr a = taddr(dst);

	return parq_credit_charge(kmock_net, &a, len, kmock_now, until);
}

/* PARQ_A_PASSED and PARQ_A_HELD of 10.0.0.@dst, as credit-get replies. */
static int tcredit_get(u8 dst, u64 *passed, u64 *held)
{
	struct nlattr *tb[PARQ_A_MAX + 1];
	struct tgenl g;
	int err;

	tgenl_start(&g);
	nla_put_in_addr(g.skb, PARQ_A_ADDR4, KMOCK_DST(dst));
	err = tgenl_do(&g, PARQ_CMD_CREDIT_GET);
	tgenl_end(&g);
	if (err)
		return err;
	err = tgenl_parse_msg(nlmsg_hdr(kmock_reply), tb);
	if (!err && (!tb[PARQ_A_PASSED] || !tb[PARQ_A_HELD]))
		err = -ENODATA;
	if (!err) {
		*passed = nla_get_u64(tb[PARQ_A_PASSED]);
		*held = nla_get_u64(tb[PARQ_A_HELD]);
	}
	kfree_skb(kmock_reply);
	kmock_reply = NULL;
	return err;
}

/*
 * Within the credit a packet passes; over it, it waits for the next epoch.
 * The same epoch again changes the entry in place and keeps its usage; a
 * new epoch replaces the entry, keeping its counters, and the old one is
 * freed after a grace period, not before.
 */
KTEST(credit_charge_change_replace)
{
	u64 start, until = 0, passed = 0, held = 0;

	kmock_reset();
	start = kmock_now;
	KT_ASSERT_EQ(tcharge(7, 600, &until), PARQ_CREDIT_NONE);
	KT_ASSERT_EQ(tcredit_set(7, 1000, NSEC_PER_MSEC, NSEC_PER_SEC), 0);
	KT_ASSERT(parq_credit_active(kmock_net));
	KT_ASSERT_EQ(tcharge(7, 600, &until), PARQ_CREDIT_PASS);
	KT_ASSERT_EQ(tcharge(7, 600, &until), PARQ_CREDIT_PASS);
	KT_ASSERT_EQ(tcharge(7, 600, &until), PARQ_CREDIT_WAIT);
	KT_ASSERT_EQ(until, start + NSEC_PER_MSEC);
	KT_ASSERT_EQ(tcharge(8, 600, &until), PARQ_CREDIT_NONE);

	/* Same epoch, more credit: in place, the usage stays (1200). */
	KT_ASSERT_EQ(tcredit_set(7, 1300, NSEC_PER_MSEC, NSEC_PER_SEC), 0);
	KT_ASSERT_EQ(kmock_live, kmock_base + 1);
	KT_ASSERT_EQ(tcharge(7, 100, &until), PARQ_CREDIT_PASS);
	KT_ASSERT_EQ(tcharge(7, 100, &until), PARQ_CREDIT_WAIT);
	KT_ASSERT_EQ(tcredit_get(7, &passed, &held), 0);
	KT_ASSERT_EQ(passed, 3);
	KT_ASSERT_EQ(held, 2);

	/* A new epoch: a new entry with the counters, a fresh usage. */
	KT_ASSERT_EQ(tcredit_set(7, 1000, 2 * NSEC_PER_MSEC, NSEC_PER_SEC), 0);
	KT_ASSERT_EQ(kmock_live, kmock_base + 2);	/* the old one waits for RCU */
	KT_ASSERT_EQ(tcharge(7, 900, &until), PARQ_CREDIT_PASS);
	KT_ASSERT_EQ(tcredit_get(7, &passed, &held), 0);
	KT_ASSERT_EQ(passed, 4);
	KT_ASSERT_EQ(held, 2);
	kmock_rcu_sync();
	KT_ASSERT_EQ(kmock_live, kmock_base + 1);

	/* The lease ends: no credit applies, and the entry is swept. */
	kmock_advance(2 * NSEC_PER_SEC);
	KT_ASSERT_EQ(tcharge(7, 100, &until), PARQ_CREDIT_NONE);
	KT_ASSERT(kmock_run_work() >= 1);
	kmock_rcu_sync();
	KT_ASSERT_NO_LEAK();
	KT_ASSERT(!parq_credit_active(kmock_net));
	KT_ASSERT_EQ(tcredit_get(7, &passed, &held), -ENOENT);
}

/* A request that cannot be met changes nothing. */
KTEST(credit_refusals_change_nothing)
{
	struct tgenl g;

	kmock_reset();

	/* Out of memory for the entry. */
	tcredit_req(&g, 9, 1000, NSEC_PER_MSEC, NSEC_PER_SEC);
	kmock_fail_at = 0;
	KT_ASSERT_EQ(tgenl_do(&g, PARQ_CMD_CREDIT_SET), -ENOMEM);
	kmock_fail_at = -1;
	tgenl_end(&g);
	KT_ASSERT(!parq_credit_active(kmock_net));
	KT_ASSERT_NO_LEAK();

	/* No lease. */
	tgenl_start(&g);
	nla_put_in_addr(g.skb, PARQ_A_ADDR4, KMOCK_DST(9));
	nla_put_u32(g.skb, PARQ_A_CREDIT, 1000);
	KT_ASSERT_EQ(tgenl_do(&g, PARQ_CMD_CREDIT_SET), -EINVAL);
	KT_ASSERT(g.extack._msg && strstr(g.extack._msg, "lease"));
	tgenl_end(&g);

	/* Two addresses. */
	tgenl_start(&g);
	nla_put_in_addr(g.skb, PARQ_A_ADDR4, KMOCK_DST(9));
	nla_put(g.skb, PARQ_A_ADDR6, 16, &(struct in6_addr){ .s6_addr = { 1 } });
	nla_put_u32(g.skb, PARQ_A_CREDIT, 1000);
	nla_put_u64_64bit(g.skb, PARQ_A_LEASE, NSEC_PER_SEC, PARQ_A_PAD);
	KT_ASSERT_EQ(tgenl_do(&g, PARQ_CMD_CREDIT_SET), -EINVAL);
	tgenl_end(&g);

	/* An epoch out of its range is refused by the policy. */
	KT_ASSERT_EQ(tcredit_set(9, 1000, 1, NSEC_PER_SEC), -ERANGE);

	/* Deleting what is not there. */
	KT_ASSERT_EQ(tcredit_del(9), -ENOENT);
	KT_ASSERT(!parq_credit_active(kmock_net));
	KT_ASSERT_NO_LEAK();
	KT_ASSERT_EQ(kmock_run_work(), 0);
}

/* Set a credit of @credit for the IPv6 host ::@host, a lease of 1 s. */
static int tcredit_set6(u32 host, u32 credit)
{
	struct in6_addr a = { .s6_addr32 = { 0, 0, 0, htonl(host) } };
	struct tgenl g;
	int err;

	tgenl_start(&g);
	nla_put(g.skb, PARQ_A_ADDR6, sizeof(a), &a);
	nla_put_u32(g.skb, PARQ_A_CREDIT, credit);
	nla_put_u64_64bit(g.skb, PARQ_A_LEASE, NSEC_PER_SEC, PARQ_A_PAD);
	err = tgenl_do(&g, PARQ_CMD_CREDIT_SET);
	tgenl_end(&g);
	return err;
}

/*
 * The table holds PARQ_CREDIT_ENTRIES_MAX destinations and refuses one
 * more, but still takes a change to one it holds.
 */
KTEST(credit_table_full)
{
	int err = 0;
	u32 i;

	kmock_reset();
	for (i = 0; i < PARQ_CREDIT_ENTRIES_MAX && !err; i++)
		err = tcredit_set6(i + 1, 1000);
	KT_ASSERT_EQ(err, 0);
	err = tcredit_set(9, 1000, NSEC_PER_MSEC, NSEC_PER_SEC);
	KT_ASSERT_EQ(err, -ENOSPC);
	KT_ASSERT_EQ(tcredit_set6(1, 2000), 0);
	KT_ASSERT_EQ(tcredit_set6(1, 2001), 0);
	KT_ASSERT_EQ(tcredit_del(0), 0);
	kmock_rcu_sync();
	KT_ASSERT(!parq_credit_active(kmock_net));
}

/*
 * A dump in messages too small for the table resumes where it stopped:
 * when the entry it stopped on goes before the next message, the next
 * message starts at the one after it, and every other entry is sent once.
 * A table of 8 buckets, so that entries share chains.
 */
KTEST(credit_dump_resumes)
{
	struct nlmsghdr req = { .nlmsg_seq = 5 };
	unsigned int seen[41] = {}, i, msgs = 0;
	struct netlink_callback cb = {};
	struct rhashtable_iter *it;
	struct sk_buff *skb, *in;
	int len, rem, gone = 0;

	ktest_teardown();
	kmock_rht_size = 8;
	kmock_reset();
	for (i = 1; i <= 40; i++)
		KT_ASSERT_EQ(tcredit_set(i, 1000, NSEC_PER_MSEC, NSEC_PER_SEC),
			     0);
	in = kmock_nl_skb(64);
	in->sk = kmock_sock();
	cb.skb = in;
	cb.nlh = &req;
	KT_ASSERT_EQ(parq_credit_genl_dump_start(&cb), 0);
	it = (struct rhashtable_iter *)cb.args[0];
	do {
		struct nlmsghdr *nlh;

		skb = kmock_nl_skb(256);
		len = parq_credit_genl_dump(skb, &cb);
		KT_ASSERT_EQ(len, skb->len);
		nlmsg_for_each_msg(nlh, (struct nlmsghdr *)skb->data, len, rem) {
			struct nlattr *tb[PARQ_A_MAX + 1];
			u32 a;

			KT_ASSERT_EQ(tgenl_parse_msg(nlh, tb), 0);
			KT_ASSERT(tb[PARQ_A_ADDR4]);
			a = ntohl(nla_get_in_addr(tb[PARQ_A_ADDR4])) & 0xff;
			KT_ASSERT(a >= 1 && a <= 40);
			seen[a]++;
		}
		kfree_skb(skb);
		msgs++;
		/* Once, in a chain: the entry that did not fit goes. */
		if (!gone && len && it->p &&
		    rcu_dereference_raw(it->p->next) &&
		    !rht_is_a_nulls(rcu_dereference_raw(it->p->next))) {
			const struct parq_addr *a = rht_obj(it->ht, it->p) +
						    it->ht->p.key_offset;

			gone = ntohl(a->a[0]) & 0xff;
			KT_ASSERT_EQ(seen[gone], 0);
			KT_ASSERT_EQ(tcredit_del(gone), 0);
		}
	} while (len && msgs < 100);
	KT_ASSERT_EQ(parq_credit_genl_dump_done(&cb), 0);
	kfree_skb(in);
	KT_ASSERT(gone);
	KT_ASSERT(msgs > 10 && msgs < 100);
	for (i = 1; i <= 40; i++)
		KT_ASSERT_EQ(seen[i], i == gone ? 0 : 1);
	KT_ASSERT_EQ(tcredit_del(0), 0);
	kmock_rcu_sync();
	KT_ASSERT(!parq_credit_active(kmock_net));
}
