/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * Do not edit: made by scripts/ynl-regen from
 * Documentation/netlink/specs/parq.yaml with the kernel's ynl-gen-c.py.
 * The policies of the parq family's requests, for kmod/parq_genl.c only.
 */
#ifndef _PARQ_GENL_POLICY_H
#define _PARQ_GENL_POLICY_H

#include <net/netlink.h>
#include <linux/parq.h>

/* Integer value ranges */
static struct netlink_range_validation parq_a_epoch_range = {
	.min	= 10000ULL,
	.max	= 10000000000ULL,
};

static struct netlink_range_validation parq_a_lease_range = {
	.min	= 1ULL,
	.max	= 3600000000000ULL,
};

static struct netlink_range_validation parq_a_mon_size_range = {
	.min	= 1ULL,
	.max	= 65536ULL,
};

static struct netlink_range_validation parq_a_mon_hold_range = {
	.min	= 1000000ULL,
	.max	= 10000000000ULL,
};

/* Common nested types */
static const struct nla_policy parq_peer_nl_policy[PARQ_A_ADDR6 + 1] = {
	[PARQ_A_ADDR4] = { .type = NLA_U32, },
	[PARQ_A_ADDR6] = NLA_POLICY_EXACT_LEN(16),
};

/* PARQ_CMD_CREDIT_SET - do */
static const struct nla_policy parq_credit_set_nl_policy[PARQ_A_LEASE + 1] = {
	[PARQ_A_ADDR4] = { .type = NLA_U32, },
	[PARQ_A_ADDR6] = NLA_POLICY_EXACT_LEN(16),
	[PARQ_A_CREDIT] = { .type = NLA_U32, },
	[PARQ_A_EPOCH] = NLA_POLICY_FULL_RANGE(NLA_U64, &parq_a_epoch_range),
	[PARQ_A_LEASE] = NLA_POLICY_FULL_RANGE(NLA_U64, &parq_a_lease_range),
};

/* PARQ_CMD_CREDIT_DEL - do */
static const struct nla_policy parq_credit_del_nl_policy[PARQ_A_ADDR6 + 1] = {
	[PARQ_A_ADDR4] = { .type = NLA_U32, },
	[PARQ_A_ADDR6] = NLA_POLICY_EXACT_LEN(16),
};

/* PARQ_CMD_CREDIT_GET - do */
static const struct nla_policy parq_credit_get_nl_policy[PARQ_A_ADDR6 + 1] = {
	[PARQ_A_ADDR4] = { .type = NLA_U32, },
	[PARQ_A_ADDR6] = NLA_POLICY_EXACT_LEN(16),
};

/* PARQ_CMD_MON_SET - do */
static const struct nla_policy parq_mon_set_nl_policy[PARQ_A_MON_MIN_BYTES + 1] = {
	[PARQ_A_MON_ENABLED] = NLA_POLICY_MAX(NLA_U8, 1),
	[PARQ_A_MON_SIZE] = NLA_POLICY_FULL_RANGE(NLA_U32, &parq_a_mon_size_range),
	[PARQ_A_MON_DSCP] = { .type = NLA_U64, },
	[PARQ_A_MON_HOLD] = NLA_POLICY_FULL_RANGE(NLA_U64, &parq_a_mon_hold_range),
	[PARQ_A_MON_PEERS] = NLA_POLICY_NESTED(parq_peer_nl_policy),
	[PARQ_A_MON_REPORT_LOCAL] = NLA_POLICY_MAX(NLA_U8, 1),
	[PARQ_A_MON_MIN_BYTES] = { .type = NLA_U32, },
};

#endif /* _PARQ_GENL_POLICY_H */
