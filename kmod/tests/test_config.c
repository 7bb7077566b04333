// SPDX-License-Identifier: GPL-2.0
/* The qdisc's parameters (parq_config.c): init, change, dump, destroy. */
#include "tparq.h"

/* A qdisc made with defaults holds them, and destroy frees all it took. */
KTEST(config_init_defaults_destroy_frees_all)
{
	struct tparq t;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	KT_ASSERT_EQ(t.q->cfg.limit, PARQ_LIMIT_DEFAULT);
	KT_ASSERT_EQ(t.q->cfg.threshold, PARQ_THRESHOLD_DEFAULT);
	/* 10 Gbit/s, the whole link: the qdisc is the root. */
	KT_ASSERT_EQ(t.q->linkrate, 10000ULL * 1000000 / 8);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * The link a qdisc divides among reservations: a root parq made on a
 * multi-queue device (where mq is the root until parq is grafted) has all
 * of it from the start; a child of mq has its queue's share.
 */
KTEST(config_linkrate_root_over_mq_and_child_of_mq)
{
	const u64 link = 10000ULL * 1000000 / 8;
	struct net_device *dev;
	struct tparq t, c;

	kmock_reset();
	dev = kmock_dev_new(1500, 4);
	KT_ASSERT_EQ(tparq_init_on(&t, dev, TC_H_ROOT, -1, NULL, NULL), 0);
	KT_ASSERT_EQ(t.q->linkrate, link);
	KT_ASSERT_EQ(t.q->resv_capacity, link * PARQ_RESERVABLE_DEFAULT / 100);
	tparq_destroy(&t);

	dev = kmock_dev_new(1500, 4);
	KT_ASSERT_EQ(tparq_init_on(&c, dev, TC_H_MAKE(0, 2), 1, NULL,
				   NULL), 0);
	KT_ASSERT_EQ(c.q->linkrate, link / 4);
	tparq_destroy(&c);
	KT_ASSERT_NO_LEAK();
}

/* A request that fails validation changes nothing and says why. */
KTEST(config_change_refused_changes_nothing)
{
	struct netlink_ext_ack extack = {};
	struct parq_config before;
	struct tparq t;
	struct treq r;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	before = t.q->cfg;

	/* Each value in range, but flow-limit above limit. */
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 100);
	nla_put_u32(r.skb, TCA_PARQ_FLOW_LIMIT, 200);
	nla_put_u32(r.skb, TCA_PARQ_THRESHOLD, 7);
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), &extack), -EINVAL);
	KT_ASSERT(extack._msg && strstr(extack._msg, "flow-limit"));
	KT_ASSERT(!memcmp(&before, &t.q->cfg, sizeof(before)));
	treq_free(&r);

	/* A value out of its range: the parameter is named. */
	memset(&extack, 0, sizeof(extack));
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_THRESHOLD, 7);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 0);
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), &extack), -ERANGE);
	KT_ASSERT(extack._msg && strstr(extack._msg, "limit"));
	KT_ASSERT(!memcmp(&before, &t.q->cfg, sizeof(before)));
	treq_free(&r);

	/* The pad attribute is refused. */
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_PAD, 0);
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), NULL), -EINVAL);
	KT_ASSERT(!memcmp(&before, &t.q->cfg, sizeof(before)));
	treq_free(&r);

	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * A limit that resizes the local destinations' table needs memory before
 * it touches anything: without it the change fails whole.
 */
KTEST(config_change_out_of_memory_changes_nothing)
{
	struct parq_config before;
	struct tparq t;
	struct treq r;
	u32 lbuckets;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	before = t.q->cfg;
	lbuckets = t.q->lbuckets;
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, PARQ_LIMIT_DEFAULT * 16);
	nla_put_u32(r.skb, TCA_PARQ_THRESHOLD, 3);
	kmock_fail_at = 0;
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), NULL), -ENOMEM);
	KT_ASSERT(!memcmp(&before, &t.q->cfg, sizeof(before)));
	KT_ASSERT_EQ(t.q->lbuckets, lbuckets);

	/* With memory it takes effect. */
	KT_ASSERT_EQ(parq_change(t.sch, r.nest, NULL), 0);
	KT_ASSERT_EQ(t.q->cfg.limit, PARQ_LIMIT_DEFAULT * 16);
	KT_ASSERT_EQ(t.q->cfg.threshold, 3);
	KT_ASSERT(t.q->lbuckets > lbuckets);
	treq_free(&r);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * Init fails cleanly at every allocation it makes: the qdisc layer then
 * calls destroy, which must free what was taken and nothing else.
 */
KTEST(config_init_every_allocation_fails_cleanly)
{
	long n, failed = 0;
	struct tparq t;
	int err;

	kmock_reset();
	for (n = 0; n < 64; n++) {
		kmock_fail_at = n;
		err = tparq_init(&t, NULL, NULL);
		kmock_fail_at = -1;
		if (!err) {
			tparq_destroy(&t);
			KT_ASSERT_NO_LEAK();
			break;
		}
		KT_ASSERT_EQ(err, -ENOMEM);
		KT_ASSERT_NO_LEAK();
		failed++;
	}
	/* The class hash, the flow table and the destinations' table. */
	KT_ASSERT(failed >= 3);
	KT_ASSERT(n < 64);
}

/* The dump gives every parameter back as set, and can be fed back. */
KTEST(config_dump_round_trip)
{
	struct nlattr *tb[TCA_PARQ_MAX + 1];
	struct sk_buff *dump;
	struct parq_config set;
	struct tparq t;
	struct treq r;

	kmock_reset();
	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 5000);
	nla_put_u32(r.skb, TCA_PARQ_THRESHOLD, 9);
	nla_put_u64_64bit(r.skb, TCA_PARQ_RATE, 12500000, TCA_PARQ_PAD);
	KT_ASSERT_EQ(tparq_init(&t, treq_end(&r), NULL), 0);
	treq_free(&r);
	KT_ASSERT_EQ(t.q->cfg.limit, 5000);
	KT_ASSERT_EQ(t.q->cfg.rate, 12500000);
	set = t.q->cfg;

	dump = kmock_nl_skb(2048);
	KT_ASSERT(parq_dump(t.sch, dump) > 0);
	KT_ASSERT_EQ(nla_parse_nested(tb, TCA_PARQ_MAX, (struct nlattr *)dump->data,
				      NULL, NULL), 0);
	KT_ASSERT(tb[TCA_PARQ_LIMIT] && nla_get_u32(tb[TCA_PARQ_LIMIT]) == 5000);
	KT_ASSERT(tb[TCA_PARQ_RATE] &&
		  nla_get_u64(tb[TCA_PARQ_RATE]) == 12500000);

	/* Fed back, it changes nothing. */
	KT_ASSERT_EQ(parq_change(t.sch, (struct nlattr *)dump->data, NULL), 0);
	KT_ASSERT(!memcmp(&set, &t.q->cfg, sizeof(set)));

	/* Too small a message: EMSGSIZE, and the message is left as it was. */
	kfree_skb(dump);
	dump = kmock_nl_skb(48);
	KT_ASSERT_EQ(parq_dump(t.sch, dump), -EMSGSIZE);
	KT_ASSERT_EQ(dump->len, 0);
	kfree_skb(dump);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}

/*
 * Lowering the limit below what is held drops, local first, and tells the
 * parents what went.
 */
KTEST(config_lower_limit_evicts_local_first)
{
	unsigned int i, held, len, bytes = 0;
	struct tparq t;
	struct treq r;

	kmock_reset();
	KT_ASSERT_EQ(tparq_init(&t, NULL, NULL), 0);
	for (i = 0; i < 10; i++) {
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(1000, 2, TPARQ_LOCAL, 0)),
			     NET_XMIT_SUCCESS);
		KT_ASSERT_EQ(tparq_enqueue(&t, kmock_ipv4(100, 3, TPARQ_PARALLEL, 0)),
			     NET_XMIT_SUCCESS);
	}
	KT_ASSERT_EQ(t.sch->q.qlen, 20);
	KT_ASSERT_EQ(t.q->local_qlen, 10);

	treq_start(&r);
	nla_put_u32(r.skb, TCA_PARQ_LIMIT, 12);
	nla_put_u32(r.skb, TCA_PARQ_FLOW_LIMIT, 12);
	KT_ASSERT_EQ(parq_change(t.sch, treq_end(&r), NULL), 0);
	treq_free(&r);
	held = parq_held(t.sch);
	KT_ASSERT_EQ(held, 12);
	KT_ASSERT_EQ(t.q->parallel_qlen, 10);
	KT_ASSERT_EQ(t.q->local_qlen, 2);
	KT_ASSERT_EQ(kmock_reduced_pkts, 8);
	KT_ASSERT_EQ(kmock_reduced_bytes, 8 * 1000);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 10 * 100 + 2 * 1000);

	/* What is left all goes out. */
	for (i = 0; (len = tparq_dequeue(&t, NULL)); i++)
		bytes += len;
	KT_ASSERT_EQ(i, 12);
	KT_ASSERT_EQ(bytes, 10 * 100 + 2 * 1000);
	KT_ASSERT_EQ(t.sch->qstats.backlog, 0);
	tparq_destroy(&t);
	KT_ASSERT_NO_LEAK();
}
