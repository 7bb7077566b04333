/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * parq: a two-class (parallel/local) qdisc for shared clusters.
 *
 * This header is the one source of truth for the netlink attributes and
 * statistics that the sch_parq module, the q_parq.so tc plugin and the
 * user-space tools exchange.  Attributes are nested in TCA_OPTIONS.
 *
 * Sentinels: a value one past the maximum of a range means "no limit"
 * (PARQ_THRESHOLD_INF, PARQ_RATE_UNLIMITED), so that one netlink range
 * check covers every valid value.
 */
#ifndef _UAPI_LINUX_PARQ_H
#define _UAPI_LINUX_PARQ_H

#include <linux/types.h>

/* Fixed class minors: classid <handle>:1 and <handle>:2. */
#define PARQ_CLASS_PARALLEL	1
#define PARQ_CLASS_LOCAL	2
#define PARQ_NUM_CLASSES	2

enum parq_unit {
	PARQ_UNIT_BYTES,	/* threshold counts bytes (byte deficit) */
	PARQ_UNIT_PACKETS,	/* threshold counts packets, as published */
	__PARQ_UNIT_MAX
};

#define PARQ_UNIT_MAX (__PARQ_UNIT_MAX - 1)

#define PARQ_THRESHOLD_DEFAULT	4
#define PARQ_THRESHOLD_MAX	65535
#define PARQ_THRESHOLD_INF	(PARQ_THRESHOLD_MAX + 1)	/* strict priority */

/* Shaper rate in bytes per second. */
#define PARQ_RATE_MAX		200000000000ULL		/* 1.6 Tbit/s */
#define PARQ_RATE_UNLIMITED	(PARQ_RATE_MAX + 1)	/* shaper off */

#define PARQ_OVERHEAD_MIN	(-64)
#define PARQ_OVERHEAD_MAX	256

#define PARQ_LIMIT_DEFAULT	10000
#define PARQ_FLOW_LIMIT_DEFAULT	1000
#define PARQ_LIMIT_MAX		1000000

enum parq_split_gso {
	PARQ_SPLIT_GSO_AUTO,	/* split local ones whenever the shaper is on */
	PARQ_SPLIT_GSO_ON,
	PARQ_SPLIT_GSO_OFF,
	__PARQ_SPLIT_GSO_MAX
};

#define PARQ_SPLIT_GSO_MAX (__PARQ_SPLIT_GSO_MAX - 1)

/*
 * effective_split_gso in the statistics: which GSO packets are split now
 * (a reserved class's always are).  ALL: split-gso on, or auto with the
 * shaper on and unit packets.
 */
enum parq_split_now {
	PARQ_SPLIT_NONE,
	PARQ_SPLIT_ALL,
	PARQ_SPLIT_LOCAL,	/* split-gso auto, the shaper on, unit bytes */
};

/*
 * Bit n set: DSCP n is parallel.  Default: CS5 and EF.  Not CS6 and CS7:
 * routing protocols and network control use them (RFC 4594), and a
 * receiver that took them for a parallel job would throttle its other
 * senders whenever a router spoke.
 */
#define PARQ_DSCP_BIT(d)	(1ULL << (d))
#define PARQ_DSCP_DEFAULT	(PARQ_DSCP_BIT(40) | PARQ_DSCP_BIT(46))

/*
 * TCA_PARQ_DSCP_MARK: the DSCP (0..63) that packets the qdisc classifies
 * parallel (by filter, skb->priority or DSCP; reserved classes too) leave
 * with; a local packet that carries a parallel DSCP leaves with CS0.  So
 * the receiving host's monitor sees what the sending qdisc decided.
 * PARQ_DSCP_MARK_OFF (the default): packets leave as they came.
 */
#define PARQ_DSCP_MAX		63
#define PARQ_DSCP_MARK_OFF	(PARQ_DSCP_MAX + 1)

/*
 * TCA_PARQ_BURST: while no local packet may go, the shaper's gate opens
 * this many bytes' time (at the rate) ahead of the schedule, so that a
 * parallel message of up to this size leaves at once, as through htb; while
 * local traffic is queued the shaper paces every byte.  The long-run rate
 * is the same.
 */
#define PARQ_BURST_DEFAULT	65536
#define PARQ_BURST_MAX		(16U << 20)

/*
 * The control queue: packets of priority TC_PRIO_CONTROL (exactly 7, so
 * not a classid) go to a FIFO that dequeue serves before any class,
 * outside the limit, at most this many packets: a GRANT to each of the
 * most peers a receiver's monitor counts (PARQ_MON_PEERS_MAX), sent at once.
 */
#define PARQ_CONTROL_LIMIT	4096

/* Reserved flows: classes <handle>:N, N >= PARQ_RESV_MINOR_MIN. */
#define PARQ_RESV_MINOR_MIN	0x16	/* "1:16" in tc's hexadecimal minors */
#define PARQ_RESERVABLE_DEFAULT	90	/* percent of linkrate */
#define PARQ_RESERVABLE_MAX	100
#define PARQ_LINKRATE_AUTO	PARQ_RATE_UNLIMITED	/* rate, else link speed */
#define PARQ_IDT_MAX		(10ULL * 1000000000ULL)	/* ns: 10 s */

enum {
	TCA_PARQ_UNSPEC,
	TCA_PARQ_PAD,
	TCA_PARQ_THRESHOLD,	/* u32: 1..PARQ_THRESHOLD_MAX or _INF */
	TCA_PARQ_UNIT,		/* u8: enum parq_unit */
	TCA_PARQ_RATE,		/* u64: bytes/s, 1..PARQ_RATE_MAX or _UNLIMITED */
	TCA_PARQ_OVERHEAD,	/* s32: bytes added per packet by the shaper */
	/*
	 * u8: enum parq_split_gso; dumped as set,
	 * effective_split_gso in the statistics
	 */
	TCA_PARQ_SPLIT_GSO,
	TCA_PARQ_LIMIT,		/* u32: packets in the whole qdisc */
	/*
	 * u32: packets in one parallel flow, one
	 * reserved class or one local destination
	 */
	TCA_PARQ_FLOW_LIMIT,
	TCA_PARQ_DSCP_PARALLEL,	/* u64: DSCP bitmask, see PARQ_DSCP_BIT */
	TCA_PARQ_DEFAULT_CLASS,	/* u8: PARQ_CLASS_PARALLEL or _LOCAL */
	/*
	 * u64: bytes/s admission control divides,
	 * 1..PARQ_RATE_MAX or PARQ_LINKRATE_AUTO;
	 * dumped as set, effective_linkrate (0 if
	 * none) in the statistics
	 */
	TCA_PARQ_LINKRATE,
	TCA_PARQ_RESERVABLE,	/* u8: percent of linkrate, 1..100 */
	TCA_PARQ_DSCP_MARK,	/* u8: 0..PARQ_DSCP_MAX or PARQ_DSCP_MARK_OFF */
	TCA_PARQ_BURST,		/* u32: bytes, 0..PARQ_BURST_MAX */
	__TCA_PARQ_MAX
};

#define TCA_PARQ_MAX (__TCA_PARQ_MAX - 1)

/* Options of a reserved class (TCA_OPTIONS of tc class add/change). */
enum {
	TCA_PARQ_CLASS_UNSPEC,
	TCA_PARQ_CLASS_PAD,
	TCA_PARQ_CLASS_RATE,	/* u64: bytes/s, 1..PARQ_RATE_MAX */
	TCA_PARQ_CLASS_IDT,	/* u64: ns per packet, 1..PARQ_IDT_MAX */
	__TCA_PARQ_CLASS_MAX
};

#define TCA_PARQ_CLASS_MAX (__TCA_PARQ_CLASS_MAX - 1)

/*
 * Qdisc extended statistics (tc -s qdisc show).  Versioned: fields are only
 * ever appended, readers copy min(payload, sizeof) into a zeroed struct.
 */
#define PARQ_XSTATS_VERSION	6

/*
 * Sojourn times, enqueue to dequeue, of the parallel and the local class, in
 * PARQ_SOJOURN_BUCKETS buckets of powers of two: bucket b counts packets
 * that stayed less than 2^(b + PARQ_SOJOURN_SHIFT + 1) ns (bucket 0: under
 * 2.048 us, 1: under 4.096 us, ... 14: under 33.6 ms) and not less than
 * bucket b - 1's bound; the last bucket counts every longer one.  A
 * bucket's packets are the sum of its class's; dequeued packets only (a
 * dropped or evicted one is not timed).
 */
#define PARQ_SOJOURN_BUCKETS	16
#define PARQ_SOJOURN_SHIFT	10

struct tc_parq_xstats {
	__u32	version;		/* PARQ_XSTATS_VERSION */
	__u32	flows_active;		/* parallel flows with packets queued */
	/*
	 * local packets sent by the threshold
	 * rule while parallel was backlogged
	 */
	__u64	threshold_turns;
	__u64	parallel_only;		/* parallel packets sent, local empty */
	__u64	local_only;		/* local packets sent, parallel empty */
	__u64	throttled;		/* dequeues deferred: nothing due yet */
	__u64	wakeups;		/* dequeues resumed after a throttle */
	__u64	gso_segments;		/* segments made by split-gso */
	/*
	 * classified to a missing class, sent
	 * to the default class instead
	 */
	__u64	unknown_class;
	__u64	drop_local_full;	/* local packet dropped: qdisc full */
	/*
	 * queued local packet dropped to make
	 * room for a parallel packet
	 */
	__u64	drop_local_evicted;
	__u64	drop_parallel_full;	/* parallel dropped: full, no local */
	/*
	 * dropped: its flow, reserved class or
	 * local destination at flow-limit
	 */
	__u64	drop_flow_limit;
	__u64	drop_gso_failed;	/* GSO segmentation failed */
	__u64	drop_filter;		/* dropped or stolen by a tc filter */
	/* version 2: reserved flows */
	__u64	resv_dispatches;	/* packets sent by reserved classes */
	__u64	resv_rejects;		/* reservations refused by admission */
	__u64	resv_sum_rate;		/* bytes/s reserved in all classes */
	__u64	resv_capacity;		/* bytes/s reservable: linkrate x % */
	__u32	resv_classes;		/* reserved classes configured */
	__u32	resv_backlogged;	/* reserved classes with packets now */
	__u32	resv_throttled;		/* of those, waiting for their NDT */
	__u32	pad;
	/* version 3: the local class per destination, receiver credits */
	__u32	local_flows;		/* destinations with local packets */
	__u32	local_waiting;		/* of those, waiting for credit */
	/*
	 * times a destination had used its
	 * credit and had to wait
	 */
	__u64	credit_waits;
	/*
	 * local dropped: no memory for a
	 * destination queue
	 */
	__u64	drop_local_nomem;
	/* version 4: sojourn times (see PARQ_SOJOURN_BUCKETS) */
	__u64	parallel_sojourn_sum;	/* ns, all parallel packets sent */
	__u64	local_sojourn_sum;	/* ns, all local packets sent */
	__u64	parallel_sojourn[PARQ_SOJOURN_BUCKETS];	/* packets */
	__u64	local_sojourn[PARQ_SOJOURN_BUCKETS];	/* packets */
	/*
	 * version 5: what "auto" resolves to (the options are dumped as
	 * configured): bytes/s admission control divides (linkrate, else
	 * rate, else the link speed; 0: none known), and whether GSO
	 * packets are split now (1) or not (0)
	 */
	__u64	effective_linkrate;
	__u32	effective_split_gso;
	__u32	pad2;
	/* version 6: the control queue (see PARQ_CONTROL_LIMIT) */
	__u64	control_sent;		/* packets sent from it */
	__u64	drop_control;		/* dropped: it held PARQ_CONTROL_LIMIT */
};

/*
 * Extended statistics of a reserved class (tc -s class show).  The first
 * word tells them from the qdisc's: PARQ_XSTATS_CLASS is set in it.
 */
#define PARQ_XSTATS_CLASS		0x80000000U
#define PARQ_CLASS_XSTATS_VERSION	2

/* A reserved class's use of its rate is measured over windows of this. */
#define PARQ_USE_WINDOW_MS		1000

struct tc_parq_class_xstats {
	__u32	version;	/* PARQ_XSTATS_CLASS | PARQ_CLASS_XSTATS_VERSION */
	__u32	pad;
	__u64	rate;		/* bytes/s reserved (idt: one MTU per IDT) */
	__u64	idt;		/* ns per packet in idt mode, else 0 */
	__u64	dispatches;	/* packets sent */
	__u64	lateness_max;	/* ns a packet left after its NDT, max */
	__u64	lateness_sum;	/* ns, sum over dispatches (mean = sum/n) */
	/*
	 * version 2: what the class carries against its rate.  Over the last
	 * full window of PARQ_USE_WINDOW_MS (none yet while use_windows is
	 * 0): the share of the window it had a packet held back by its rate,
	 * waiting for an NDT still to come (choked: it was sent more than its
	 * rate), and the share of the bytes its rate allowed that it did not
	 * send (over-allocated), in parts per million.  throttled_ns, that
	 * time since the class was made, lets a reader measure over a window
	 * of its own.
	 */
	__u64	throttled_ns;
	__u64	use_windows;
	__u32	choked_ppm;
	__u32	unused_ppm;
};

/*
 * The generic netlink family "parq" (receiver-side credits and the receive
 * monitor): linux/parq_genl.h, made from its spec,
 * Documentation/netlink/specs/parq.yaml, by scripts/ynl-regen.
 */
#include <linux/parq_genl.h>

#endif /* _UAPI_LINUX_PARQ_H */
