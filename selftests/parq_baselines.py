#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The experiments' schedulers are what Documentation/experiments.md says.

Every scheduler of scripts/parqlab/scenarios.py's ALL_SCHEDULERS installs
on a veth behind its 100 Mbit/s bottleneck with the root qdisc it names,
and scenarios.clear() leaves the device's qdiscs as they were before.

fq with its priority bands (Linux 6.7 and later) puts the parallel job in
its high band: behind an htb class so slow that packets stay queued, A
sends EF packets, packets to the parallel job's server port without EF and
best-effort packets, and fq's own statistics (band_pkt_count) must count
the first two in band 0 and the last in band 1.  Before them A sends
FILLER best-effort packets of another flow: while fq holds no flow that
could send, it puts a packet in a queue of its own that it serves before
any band (its fast path, Linux 6.7), up to 8 packets; the filler takes
htb's burst and fills that queue.

fq+small weights sets fq's band weights over raw netlink, which Debian
12's tc cannot: fq's own dump must report them, and plain fq's its
defaults.  On older kernels fq has no bands: those cases are skipped, and
neither fq is among the schedulers.
"""
import os
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(REPO, "scripts", "experiments"))
from parqlab import ktap, lab, scenarios, traffic  # noqa: E402
from parqlab import tc as tclib  # noqa: E402
from parqlab.ktap import check, check_eq, diag  # noqa: E402
from parqlab import rtnl  # noqa: E402
from parqlab.rtnl import Rtnl  # noqa: E402

# The root qdisc each installer puts on the device.
ROOTS = {"pfifo": "htb", "prio": "htb", "ets": "htb", "fq_codel": "htb",
         "cake": "cake", "fq": "htb", scenarios.FQ_SMALL: "htb",
         "parq": "parq"}
# struct tc_fq_qd_stats (Linux 6.7 and later): 8 u64, 4 u32, 4 u64, then
# band_drops[3] (u64) and band_pkt_count[3] (u32).
FQ_FASTPATH = 8 * 8 + 4 * 4 + 3 * 8
FQ_BAND_PKT_COUNT = FQ_FASTPATH + 8 + 3 * 8
FQ_BANDS = 3
# Packets of each kind A sends into the held queue, after FILLER.
EACH = 5
FILLER = 24
OTHER_PORT = 40000


def _kinds(ns, dev):
    return sorted((q["kind"], "root" if q.get("root") else q.get("parent"))
                  for q in tclib.qdiscs(ns, dev, stats=False))


def t_install_and_clear(env):
    before = _kinds(env.a, env.dev)
    diag(f"before: {before}; schedulers: "
         f"{', '.join(scenarios.ALL_SCHEDULERS)}")
    check_eq("fq" in scenarios.ALL_SCHEDULERS, scenarios.fq_has_bands(),
             "fq among the schedulers exactly where it has bands")
    for name, install in scenarios.ALL_SCHEDULERS.items():
        try:
            install(env.a, env.dev)
            root = tclib.root_qdisc(env.a, env.dev, stats=False)
            check_eq(root["kind"], ROOTS[name], f"{name}: the root qdisc")
        finally:
            scenarios.clear(env.a, env.dev)
        check_eq(_kinds(env.a, env.dev), before,
                 f"{name}: the device's qdiscs after clear()")


def _fq_bands(ns, dev):
    """band_pkt_count of the fq qdisc on @dev (packets queued per band),
    and the qdisc's qlen and fastpath_packets."""
    with Rtnl(ns) as nl:
        for q in nl.qdiscs(nl.ifindex(dev)):
            if q.get("kind") == "fq":
                x = q.get("xstats", b"")
                check(len(x) >= FQ_BAND_PKT_COUNT + 4 * FQ_BANDS,
                      f"fq's statistics are {len(x)} bytes: no bands")
                return (list(struct.unpack_from(f"={FQ_BANDS}I", x,
                                                FQ_BAND_PKT_COUNT)),
                        q.get("qlen"),
                        struct.unpack_from("=Q", x, FQ_FASTPATH)[0])
    raise AssertionError(f"no fq qdisc on {dev}")


@ktap.needs_kernel(*scenarios.FQ_BANDS_SINCE, "fq's priority bands")
def t_fq_bands(env):
    # A class of 8 kbit/s: after its first packet or two, every packet of
    # the few seconds the case takes waits in fq.
    try:
        scenarios.install_fq(env.a, env.dev, rate="8kbit")
        dst = env.topo.ip_b()
        sent = {}
        for kind, tos, port, n in (
                ("filler", 0, OTHER_PORT + 1, FILLER),
                ("EF", traffic.TOS_EF, OTHER_PORT, EACH),
                ("server port", 0, scenarios.PING_PORT, EACH),
                ("best effort", 0, OTHER_PORT, EACH)):
            with env.a.socket() as s:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
                for _ in range(n):
                    s.sendto(b"x" * 200, (dst, port))
            sent[kind] = n
        time.sleep(0.2)
        bands, qlen, fast = _fq_bands(env.a, env.dev)
        diag(f"queued per band: {bands}, fq's qlen {qlen}, fast path "
             f"{fast}, after {sent}")

        # htb's burst and fq's own queue (the fast path's count) took the
        # filler's first packets; fq serves its own queue first, and htb
        # sends less than a packet in the time the case takes after that.
        check_eq(bands[0], 2 * EACH, "band 0: the EF and server-port "
                 "packets")
        check(bands[1] >= EACH, f"band 1 holds {bands[1]}: fewer than the "
              f"{EACH} best-effort packets")
        check_eq(bands[2], 0, "band 2: nothing")
    finally:
        scenarios.clear(env.a, env.dev)


@ktap.needs_kernel(*scenarios.FQ_BANDS_SINCE, "fq's priority bands")
def t_fq_small_weights(env):
    """fq's own dump reports the weights install_fq_small_weights set,
    and plain fq its defaults (9:3:1 of 65536)."""
    for install, want in ((scenarios.install_fq_small_weights,
                           scenarios.FQ_SMALL_WEIGHTS),
                          (scenarios.install_fq, (589824, 196608, 65536))):
        try:
            install(env.a, env.dev)
            with Rtnl(env.a) as sock:
                fq = [q for q in sock.qdiscs(sock.ifindex(env.dev))
                      if q.get("kind") == "fq"]
            check_eq(len(fq), 1, "fq qdiscs on the device")
            attrs = rtnl.parse_attrs(fq[0]["options"])
            check(scenarios.TCA_FQ_WEIGHTS in attrs,
                  "fq's dump has no TCA_FQ_WEIGHTS")
            got = struct.unpack("=3i", attrs[scenarios.TCA_FQ_WEIGHTS])
            diag(f"{install.__name__}: fq's weights {got}")
            check_eq(got, tuple(want), f"{install.__name__}: fq's weights")
        finally:
            scenarios.clear(env.a, env.dev)


def main():
    suite = ktap.Suite("parq_baselines")
    suite.case("every scheduler installs with its root qdisc, and clear() "
               "leaves the device as it was", t_install_and_clear)
    suite.case("fq: the parallel job in its high band, the rest in the "
               "next", t_fq_bands)
    suite.case("fq+small weights: fq reports its best-effort bands' "
               "weights at its least", t_fq_small_weights)
    return lab.run(suite, "baselines")


if __name__ == "__main__":
    sys.exit(main())
