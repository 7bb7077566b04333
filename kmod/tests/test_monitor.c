// SPDX-License-Identifier: GPL-2.0
/* The receive monitor (parq_monitor.c): its table, reports and peers. */
#include <linux/netfilter.h>

#include "tparq.h"

#define TMON_EF		46	/* the DSCP parallel traffic carries here */

/* Set the monitor: enabled, @size sources, EF parallel, @hold ns. */
static int tmon_set(u32 size, u64 hold)
{
	struct tgenl g;
	int err;

	tgenl_start(&g);
	nla_put_u8(g.skb, PARQ_A_MON_ENABLED, 1);
	nla_put_u32(g.skb, PARQ_A_MON_SIZE, size);
	nla_put_u64_64bit(g.skb, PARQ_A_MON_DSCP, PARQ_DSCP_BIT(TMON_EF),
			  PARQ_A_PAD);
	nla_put_u64_64bit(g.skb, PARQ_A_MON_HOLD, hold, PARQ_A_PAD);
	err = tgenl_do(&g, PARQ_CMD_MON_SET);
	tgenl_end(&g);
	return err;
}

/* Put the peer set 10.0.1.@src, for each of @n sources, in @skb. */
static void tmon_put_peers(struct sk_buff *skb, const u8 *src, unsigned int n)
{
	struct nlattr *nest = nla_nest_start(skb, PARQ_A_MON_PEERS);
	unsigned int i;

	for (i = 0; i < n; i++)
		nla_put_in_addr(skb, PARQ_A_ADDR4, KMOCK_SRC(src[i]));
	nla_nest_end(skb, nest);
}

/* Set the peer set. */
static int tmon_peers(const u8 *src, unsigned int n)
{
	struct tgenl g;
	int err;

	tgenl_start(&g);
	tmon_put_peers(g.skb, src, n);
	err = tgenl_do(&g, PARQ_CMD_MON_SET);
	tgenl_end(&g);
	return err;
}

/* One of the monitor's counters, as mon-get replies. */
static u64 tmon_get(int attr)
{
	struct nlattr *tb[PARQ_A_MAX + 1];
	struct tgenl g;
	u64 v = U64_MAX;

	tgenl_start(&g);
	if (tgenl_do(&g, PARQ_CMD_MON_GET))
		goto out;
	if (tgenl_parse_msg(nlmsg_hdr(kmock_reply), tb) || !tb[attr])
		goto out;
	switch (nla_len(tb[attr])) {
	case 1:
		v = nla_get_u8(tb[attr]);
		break;
	case 4:
		v = nla_get_u32(tb[attr]);
		break;
	default:
		v = nla_get_u64(tb[attr]);
	}
out:
	tgenl_end(&g);
	kfree_skb(kmock_reply);
	kmock_reply = NULL;
	return v;
}

/* A packet from 10.0.1.@src arrives, with DSCP @dscp. */
static void tmon_rx(u8 src, u8 dscp)
{
	struct nf_hook_state state = {
		.pf	= NFPROTO_IPV4,
		.net	= kmock_net,
	};
	struct sk_buff *skb = kmock_ipv4_from(500, src, dscp << 2);

	if (WARN_ON(!skb || !kmock_nhooks))
		return;
	kmock_hooks[0].hook(kmock_hooks[0].priv, skb, &state);
	kfree_skb(skb);
}

/*
 * A full table admits a new source only in the place of one idle for
 * PARQ_MON_IDLE_NS; meanwhile the new source's packets are uncounted.
 */
KTEST(monitor_turnover_evicts_only_the_idle)
{
	kmock_reset();
	KT_ASSERT_EQ(tmon_set(4, 10 * NSEC_PER_MSEC), 0);
	tmon_rx(1, 0);
	tmon_rx(2, 0);
	tmon_rx(3, 0);
	tmon_rx(4, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 4);

	/* Full, and every source fresh: 5 is not counted. */
	tmon_rx(5, 0);
	tmon_rx(5, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 4);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_UNCOUNTED), 2);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_EVICTED), 0);

	/* 1 goes idle while 2, 3 and 4 keep sending: 5 takes 1's place. */
	kmock_advance(3 * NSEC_PER_SEC);
	tmon_rx(2, 0);
	tmon_rx(3, 0);
	tmon_rx(4, 0);
	tmon_rx(5, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 4);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_EVICTED), 1);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_UNCOUNTED), 2);

	/* 1 is back, but nobody is idle (and this second's try is spent). */
	tmon_rx(1, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_EVICTED), 1);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_UNCOUNTED), 3);
}

/* Parallel traffic's start and, a hold after its last packet, its stop. */
KTEST(monitor_reports_start_and_stop)
{
	kmock_reset();
	KT_ASSERT_EQ(tmon_set(16, 10 * NSEC_PER_MSEC), 0);
	kmock_notified = 0;
	tmon_rx(1, 0);
	KT_ASSERT_EQ(kmock_notified, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_ACTIVE), 0);
	tmon_rx(1, TMON_EF);
	KT_ASSERT_EQ(kmock_notified, 1);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_ACTIVE), 1);

	/* More parallel packets within the hold: no new report. */
	kmock_advance(5 * NSEC_PER_MSEC);
	tmon_rx(2, TMON_EF);
	KT_ASSERT_EQ(kmock_notified, 1);
	kmock_advance(5 * NSEC_PER_MSEC);
	kmock_fire_timers();
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_ACTIVE), 1);

	/* A hold after the last one: stopped, reported once. */
	kmock_advance(6 * NSEC_PER_MSEC);
	kmock_fire_timers();
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_ACTIVE), 0);
	KT_ASSERT_EQ(kmock_notified, 2);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_EVENTS), 2);
}

/*
 * With a peer set, a source outside it takes no place and starts nothing;
 * a new set drops the sources it leaves out.
 */
KTEST(monitor_peer_set_keeps_foreign_out)
{
	static const u8 both[] = { 1, 2 }, one[] = { 1 };

	kmock_reset();
	KT_ASSERT_EQ(tmon_set(16, 10 * NSEC_PER_MSEC), 0);
	KT_ASSERT_EQ(tmon_peers(both, ARRAY_SIZE(both)), 0);
	kmock_notified = 0;
	tmon_rx(3, TMON_EF);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_FOREIGN), 1);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_ACTIVE), 0);
	KT_ASSERT_EQ(kmock_notified, 0);
	tmon_rx(1, 0);
	tmon_rx(2, 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 2);

	KT_ASSERT_EQ(tmon_peers(one, ARRAY_SIZE(one)), 0);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_NPEERS), 1);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SOURCES), 1);
	kmock_rcu_sync();
}

/* A set that cannot get its memory changes nothing, at any allocation. */
KTEST(monitor_set_out_of_memory_changes_nothing)
{
	static const u8 peers[] = { 4, 5, 6 };
	long n;
	int err;

	kmock_reset();
	KT_ASSERT_EQ(tmon_set(16, 10 * NSEC_PER_MSEC), 0);
	for (n = 0; n < 16; n++) {
		struct tgenl g;

		tgenl_start(&g);
		nla_put_u32(g.skb, PARQ_A_MON_SIZE, 8);
		tmon_put_peers(g.skb, peers, ARRAY_SIZE(peers));
		kmock_fail_at = n;
		err = tgenl_do(&g, PARQ_CMD_MON_SET);
		kmock_fail_at = -1;
		tgenl_end(&g);
		if (!err)
			break;
		KT_ASSERT_EQ(err, -ENOMEM);
		KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SIZE), 16);
		KT_ASSERT_EQ(tmon_get(PARQ_A_MON_NPEERS), 0);
	}
	KT_ASSERT(n >= 1 && n < 16);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_SIZE), 8);
	KT_ASSERT_EQ(tmon_get(PARQ_A_MON_NPEERS), 3);
	kmock_rcu_sync();
}
