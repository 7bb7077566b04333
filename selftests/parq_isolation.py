#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq latency isolation: a parallel job's small messages do not wait
behind a local bulk transfer.

The parallel job is sockperf ping-pong, 64-byte messages over TCP from A to
B, classified parallel by a u32 filter on its port; the local job is a bulk
iperf3 transfer from A to B.  Both cross A's veth, shaped to 100 Mbit/s:
  parq:   parq rate 100mbit (+ the u32 filter)
  pfifo:  htb root, one class at 100mbit, pfifo leaf (what one gets today)
  idle:   parq rate 100mbit, sockperf alone
  busy:   parq rate 100mbit, sockperf alone, while the same bulk job runs
          over a second veth pair through its own parq: the machine is as
          loaded as in "parq", but nothing shares the probe's queue
sockperf's round-trip p99 must satisfy
  parq p99 <= pfifo p99 / 4   and   parq p99 <= 5 x busy p99.
The four are measured in one run, round-robin, three rounds of 4 s each;
the medians of the rounds are judged and every number is printed.  A
round whose idle p99 is more than NOISY times the run's lowest idle p99
is void: nothing queued in it, so the machine stalled the probe, and the
other three kinds of that round measured the host rather than a queue.
At least the quietest round is always judged.

Why the bounds hold: through pfifo the probe waits behind the bulk job's
backlog in the FIFO, many times its round trip alone; through parq it
waits for at most one local packet at the shaper, so its p99 falls by
far more than 4.  "busy" has the same CPU load without the shared queue,
so parq's p99 within 5 times busy's says that what is left is the
machine, not the queueing discipline.  Under QEMU/TCG (lab.emulated())
the first is a printed figure and the bound is parq p50 <= pfifo p50 / 4:
there parq's p99 is the emulated CPU's (busy's p99 is as high), and the
p99 ratio moves with how busy the host is, while the p50 ratio stays
large.  parq's p99 against idle's (target: at most 5 times) is printed,
not asserted: under QEMU/TCG the bulk job's CPU time alone moves the
probe's p99 by that much, which is the machine, not the queueing
discipline; "busy" takes the CPU out of the comparison.

The local bulk job is iperf3 TCP with 4 streams: a bulk copy as a local job
runs it (rsync/scp-like, congestion controlled).  One TCP stream would not
do: TCP small queues keep a single flow's backlog in the qdisc to a couple
of packets, so a pfifo baseline would hardly queue and the comparison would
say nothing.  (A UDP flood is no better a baseline: its socket's send
buffer, not the qdisc, then holds the backlog.)  The pfifo backlog seen
during each run is printed to show that the baseline really queues.

sockperf (client and server) runs at real-time priority (chrt -f 50) in all
three measurements, as latency probes do: the test is about the queueing
discipline, and on a small (emulated) machine the bulk job's processes
would otherwise add their CPU time to the probe's round trips.  It blocks
in recvfrom, so it never spins.
"""
import statistics
import sys
import threading
import time

from parqlab import ktap, lab
from parqlab import tc as tclib
from parqlab.ktap import check, diag
from parqlab.tc import tc
from parqlab.traffic import (Iperf3Client, Iperf3Server,
                             SockperfServer, realtime_prefix,
                             sockperf_pingpong)

RATE = "100mbit"
SECONDS = 4
WARMUP = 2
ROUNDS = 3
BULK_STREAMS = 4
SP_PORT, BULK_PORT = 11111, 5201
NOISY = 3


def setup_parq(env, dev=None):
    """parq on @dev (default: the probe's link, with the probe's filter)."""
    tc(env.a, "qdisc", "replace", "dev", dev or env.dev, "root", "handle",
       "1:", "parq", "rate", RATE)
    if dev is None:
        tc(env.a, "filter", "add", "dev", env.dev, "parent", "1:",
           "protocol", "ip", "prio", "1", "u32", "match", "ip", "dport",
           SP_PORT, "0xffff", "flowid", "1:1")


def setup_pfifo(env):
    a, dev = env.a, env.dev
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
       "default", "1")
    tc(a, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1",
       "htb", "rate", RATE)
    tc(a, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
       "pfifo")
    if not env.pfifo_limit:
        # pfifo's default limit is the device's tx_queue_len.
        leaf = [q for q in tclib.qdiscs(a, dev) if q["kind"] == "pfifo"][0]
        env.pfifo_limit.append(leaf["options"]["limit"])
        txq = a.run(["cat", f"/sys/class/net/{dev}/tx_queue_len"]).stdout
        diag(f"pfifo default limit: {env.pfifo_limit[0]} packets "
             f"(tx_queue_len of {dev}: {txq.strip()})")


def leaf_backlog(env):
    """(qlen, backlog bytes) of the qdisc that holds the packets."""
    for q in tclib.qdiscs(env.a, env.dev):
        if q["kind"] in ("pfifo", "parq"):
            return q["qlen"], q["backlog"]
    return 0, 0


def measure(env, kind):
    a, dev, topo = env.a, env.dev, env.topo
    tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    setup_parq(env) if kind != "pfifo" else setup_pfifo(env)
    bulk = None
    backlog = []
    stop = threading.Event()

    def watch():
        while not stop.wait(1.0):
            backlog.append(leaf_backlog(env))
    try:
        if kind != "idle":
            link = 1 if kind == "busy" else 0
            bulk = Iperf3Client(a, topo.ip_b(link), BULK_PORT + link,
                                WARMUP + SECONDS + 15,
                                parallel=BULK_STREAMS)
            time.sleep(WARMUP)
            bulk.check_running("early (bulk)")
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        try:
            st = sockperf_pingpong(a, topo.ip_b(), SP_PORT, SECONDS,
                                   prefix=env.probe_prio)
        finally:
            stop.set()
            t.join(10)
        if bulk is not None:
            bulk.check_running("early (bulk)")
        q = tclib.root_qdisc(a, dev)
    finally:
        if bulk is not None:
            bulk.stop()
        tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    qlens = [b[0] for b in backlog]
    nbytes = [b[1] for b in backlog]
    st["qlen_med"] = statistics.median(qlens) if qlens else 0
    st["backlog_med"] = statistics.median(nbytes) if nbytes else 0
    st["qdisc_mbit"] = q["bytes"] * 8 / 1e6
    return st


def fmt(st):
    return (f"mean {st['avg']:.0f} p50 {st['p50']:.0f} p99 {st['p99']:.0f} "
            f"max {st.get('max', 0):.0f} us ({st['observations']} obs); "
            f"queue median {st['qlen_med']:.0f} pkts "
            f"{st['backlog_med'] / 1000:.0f} kB")


def t_measure(env):
    """All four, round-robin, so slow phases of the machine hit all."""
    results, judged = env.results, env.judged
    diag("sockperf runs under chrt -f 50 (SCHED_FIFO)" if env.probe_prio else
         "chrt -f 50 refused: sockperf runs at normal priority")
    for rnd in range(1, ROUNDS + 1):
        for kind in ("idle", "busy", "parq", "pfifo"):
            st = measure(env, kind)
            results[kind].append(st)
            diag(f"round {rnd} {kind:5}: {fmt(st)}")
    quiet = min(s["p99"] for s in results["idle"])
    judged[:] = [i for i, s in enumerate(results["idle"])
                 if s["p99"] <= NOISY * quiet]
    void = [i + 1 for i in range(ROUNDS) if i not in judged]
    if void:
        diag(f"rounds {void} void: their idle p99 is more than {NOISY} "
             f"times the lowest ({quiet:.0f} us): the machine stalled")
    # The baseline must queue, or the comparison is void.
    med_pfifo_backlog = statistics.median(
        s["backlog_med"] for s in results["pfifo"])
    check(med_pfifo_backlog >= 30000,
          f"the pfifo baseline hardly queues ({med_pfifo_backlog:.0f} "
          f"bytes): no bulk backlog to isolate from")


def med(env, kind, key="p99"):
    """The median over the judged rounds."""
    return statistics.median(env.results[kind][i][key] for i in env.judged)


def t_vs_pfifo(env):
    check(all(env.results.values()), "no measurements")
    parq, pfifo = med(env, "parq"), med(env, "pfifo")
    diag(f"median p99: parq {parq:.0f} us, pfifo {pfifo:.0f} us, ratio "
         f"pfifo/parq {pfifo / parq:.1f} (target >= 4: "
         f"{'met' if parq <= pfifo / 4 else 'missed'})")
    diag(f"median mean: parq {med(env, 'parq', 'avg'):.0f} us, pfifo "
         f"{med(env, 'pfifo', 'avg'):.0f} us; median p50: parq "
         f"{med(env, 'parq', 'p50'):.0f} us, pfifo "
         f"{med(env, 'pfifo', 'p50'):.0f} us")
    if lab.emulated():
        diag("under QEMU/TCG the p99 is a figure (the emulated CPU's: "
             "see busy); the bound is p50 / 4")
        ktap.check_le(med(env, "parq", "p50"), med(env, "pfifo", "p50") / 4,
                      "parq p50 vs pfifo p50 / 4")
    else:
        ktap.check_le(parq, pfifo / 4, "parq p99 vs pfifo p99 / 4")


def t_vs_busy(env):
    check(all(env.results.values()), "no measurements")
    parq, idle, busy = med(env, "parq"), med(env, "idle"), med(env, "busy")
    r = parq / idle
    diag(f"median p99: parq {parq:.0f} us, idle {idle:.0f} us, ratio "
         f"{r:.2f} (target <= 5: {'met' if r <= 5 else 'missed'})")
    diag(f"median p99: parq {parq:.0f} us, busy {busy:.0f} us, ratio "
         f"{parq / busy:.2f} (want <= 5)")
    ktap.check_le(parq, 5 * busy, "parq p99 vs 5 x busy p99")


def setup(env):
    """The probe's priority, the measurements' state, the servers in B."""
    topo = env.topo
    # argv prefix of sockperf: chrt -f 50, if it works
    env.probe_prio = realtime_prefix(env.a)
    env.results = {"parq": [], "pfifo": [], "idle": [], "busy": []}
    env.judged = []  # the rounds (indices) the medians are taken over
    env.pfifo_limit = []
    setup_parq(env, topo.dev_a(1))  # the busy case's bulk link, for good
    return [SockperfServer(topo.b, topo.ip_b(), SP_PORT,
                           prefix=env.probe_prio),
            Iperf3Server(topo.b, topo.ip_b(), BULK_PORT),
            Iperf3Server(topo.b, topo.ip_b(1), BULK_PORT + 1)]


def main():
    suite = ktap.Suite("parq_isolation")
    suite.case("measure idle, parq and pfifo latency", t_measure, timeout=900,
               speed="the bulk job must fill a 100 Mbit/s FIFO")
    suite.case("parq against pfifo", t_vs_pfifo,
               speed="round-trip percentiles of a loaded machine")
    suite.case("parq p99 <= 5 x busy p99", t_vs_busy,
               speed="round-trip percentiles of a loaded machine")
    return lab.run(suite, "iso", tools=("sockperf", "iperf3"), links=2,
                   setup=setup)


if __name__ == "__main__":
    sys.exit(main())
