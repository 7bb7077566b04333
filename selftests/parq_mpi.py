#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Real MPI, unmodified: an Open MPI job's small messages, made parallel by
the job's cgroup alone, do not wait behind a local bulk transfer.

Namespace A sends to namespace B over a veth shaped to 100 Mbit/s at A's
root qdisc.  The MPI job is Debian's NetPIPE for Open MPI (NPopenmpi),
64-byte ping-pong, one rank in A and one in B (scripts/parqlab/mpi.py:
mpirun's rsh agent enters the namespace, each namespace has a hostname of
its own, --bind-to none).  It is started in a cgroup that `parqctl job
add` made a job in A and in B: nothing in MPI is configured for parq, and
no tc filter names its ports.  The local job is a bulk copy outside every
job: iperf3, one TCP stream of 16 KiB writes from A to B.

Cases:
  - the job's packets are parallel at A's parq (class counters) and B's
    receive monitor counts them as parallel (what engages parqd);
  - under the bulk job, NetPIPE's one-way time through parq, pfifo (htb
    at 100mbit, pfifo leaf: what one gets today) and fq_codel (the same,
    fq_codel leaf: the best one gets without parq), measured round-robin
    in one run, ROUNDS rounds, medians judged: parq <= pfifo / 1.5.
The issue's targets, pfifo / parq >= 10 and fq_codel / parq >= 3, are
printed as figures (met or missed), not asserted, and neither is parq
against fq_codel: under QEMU/TCG the two ranks busy-poll both emulated
CPUs, which the bulk job and its softirqs share, and single rounds spread
several-fold.  Measured here (us, one way, rounds of 2026-11-26): pfifo
8 900-10 300, fq_codel 2 200-5 000, parq 800-5 700, idle 140-240; and
200-680 with the same bulk job on a link of its own, which is the CPU's
share.  Letting a parallel packet leave up to 1 ms ahead of the shaper
(a trial module, not kept) did not move parq's time beyond that spread,
so the shaper's timer is not what remains.  The idle time (parq, no
bulk) is printed next to them, and with each parq round the time the
job's packets spent in A's parq (its parallel sojourn times, tc -s): the
queue's share of the one-way time.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(REPO, "scripts"))
from parqlab import jobs as joblib  # noqa: E402
from parqlab import ktap, lab, mpi  # noqa: E402
from parqlab import tc as tclib  # noqa: E402
from parqlab.genl import ParqGenl  # noqa: E402
from parqlab.ktap import check, diag  # noqa: E402
from parqlab.tc import tc  # noqa: E402
from parqlab.traffic import Iperf3Client, Iperf3Server  # noqa: E402

PARQCTL = joblib.PARQCTL
CG = joblib.CG
JOB = "parqmpi/job_1"		# below CG
RATE = "100mbit"
SIZE = 64
REPS = 100
ROUNDS = 3
WARMUP = 2
BULK_STREAMS = 1
BULK_WRITE = "16K"
BULK_PORT = 5201
PAR = "1:1"
KINDS = ("parq", "fq_codel", "pfifo")


sh = joblib.sh


def parqctl(ns, *args):
    r = joblib.parqctl(ns, *args)
    check(r.returncode == 0, f"parqctl {' '.join(args)} in {ns.name}: "
          f"{r.stderr.strip()}")


def qdisc(env, kind):
    topo = env.topo
    dev = topo.dev_a()
    tc(topo.a, "qdisc", "del", "dev", dev, "root", check=False)
    if kind == "parq":
        tc(topo.a, "qdisc", "add", "dev", dev, "root", "handle", "1:",
           "parq", "rate", RATE)
        return
    tc(topo.a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
       "default", "1")
    tc(topo.a, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1",
       "htb", "rate", RATE)
    tc(topo.a, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
       kind)


def netpipe(env):
    return mpi.netpipe_latency(env.hosts, size=SIZE, reps=REPS, cgroup=JOB)


def monitor_par(env):
    topo = env.topo
    with ParqGenl(topo.b) as g:
        return g.peers().get(topo.ip_a(), {}).get("par_packets", 0)


def t_classified(env):
    topo = env.topo
    qdisc(env, "parq")
    par0 = monitor_par(env)
    us = netpipe(env)
    env.idle_us.append(us)
    st = tclib.class_stats(topo.a, topo.dev_a())
    par, loc = (st.get(c, {}).get("packets", 0) for c in (PAR, "1:2"))
    bpar = monitor_par(env) - par0
    diag(f"idle NetPIPE {SIZE} B: {us:.1f} us one way; A's parq: parallel "
         f"{par} packets, local {loc}; B's monitor: {bpar} parallel "
         f"packets from A")
    # Three trials of REPS round trips at least, plus the job's start-up.
    ktap.check_ge(par, 3 * REPS, "A's parallel packets")
    ktap.check_le(loc, par // 10, "A's local packets (not the job's)")
    ktap.check_ge(bpar, 3 * REPS, "B's monitor: A's parallel packets")


def measure(env, kind):
    topo = env.topo
    qdisc(env, kind)
    bulk = None
    try:
        bulk = Iperf3Client(topo.a, topo.ip_b(), BULK_PORT,
                                WARMUP + 60, parallel=BULK_STREAMS,
                            length=BULK_WRITE)
        time.sleep(WARMUP)
        bulk.check_running("early (bulk)")
        us, soj = tclib.with_sojourn(topo.a, topo.dev_a(),
                                     lambda: netpipe(env))
        bulk.check_running("early (bulk)")
        if soj is not None:
            env.in_parq.append(soj[1:])
        return us
    finally:
        if bulk is not None:
            bulk.stop()


def t_measure(env):
    in_parq = env.in_parq
    for rnd in range(1, ROUNDS + 1):
        line = []
        for kind in KINDS:
            us = measure(env, kind)
            env.results[kind].append(us)
            line.append(f"{kind} {us:.0f}")
            if kind == "parq":
                line[-1] += (f" (its packets in A's parq: mean "
                             f"{in_parq[-1][0] / 1000:.0f}, p99 < "
                             f"{fmt_bound(in_parq[-1][1])})")
        diag(f"round {rnd}: NetPIPE {SIZE} B one way (us): "
             + ", ".join(line))


def fmt_bound(ns):
    return "inf" if ns is None else f"{ns / 1000:.0f}"


def med(env, kind):
    return statistics.median(env.results[kind])


def t_bounds(env):
    in_parq, idle_us = env.in_parq, env.idle_us
    check(all(env.results.values()), "no measurements")
    parq, pfifo, fq = (med(env, k) for k in ("parq", "pfifo", "fq_codel"))
    idle = idle_us[0] if idle_us else float("nan")
    diag(f"medians (us): idle {idle:.0f}, parq {parq:.0f}, fq_codel "
         f"{fq:.0f}, pfifo {pfifo:.0f}; pfifo/parq {pfifo / parq:.1f} "
         f"(want >= 1.5), fq_codel/parq {fq / parq:.1f}, "
         f"parq/idle {parq / idle:.1f}")
    if in_parq:
        mean = statistics.median(m for m, _ in in_parq)
        diag(f"the job's packets in A's parq (median of rounds): mean "
             f"{mean / 1000:.0f} us, of parq's {parq:.0f} us one way; the "
             f"rest is outside the qdisc (B's side, the CPU, the stack)")
    for name, base, target in (("pfifo", pfifo, 10), ("fq_codel", fq, 3)):
        diag(f"target: {name} / parq >= {target}: "
             f"{'met' if base / parq >= target else 'missed'}")
    ktap.check_le(parq, pfifo / 1.5, "parq vs pfifo / 1.5")


def setup(env):
    t = env.topo
    env.hosts = [(t.a, t.ip_a()), (t.b, t.ip_b())]
    env.idle_us = []
    env.results = {k: [] for k in KINDS}
    env.in_parq = []		# (mean, p99 bound) ns of the job's packets
    with ParqGenl(t.b) as g:
        r = g.mon_set(mon_enabled=1, mon_size=16)
        check(not r.error, f"monitor: {r.msg}")
    sh(t.a, f"mkdir -p {CG}/{JOB}")
    for ns in (t.a, t.b):
        parqctl(ns, "job", "add", f"{CG}/{JOB}")
    return [Iperf3Server(t.b, t.ip_b(), BULK_PORT), Cleanup(t)]


class Cleanup:
    def __init__(self, topo):
        self.topo = topo

    def stop(self):
        topo = self.topo
        for ns in (topo.a, topo.b):
            ns.run(["nft", "delete", "table", "inet", "parq"], check=False)
        sh(topo.a, f"rmdir {CG}/{JOB} {CG}/{os.path.dirname(JOB)}",
           check_rc=False)


def main():
    suite = ktap.Suite("parq_mpi")
    if not os.path.exists(PARQCTL):
        return suite.skip_all(f"{PARQCTL} not built (make userspace)")
    missing = mpi.have_mpi()
    if missing:
        return suite.skip_all(missing)
    with open("/proc/filesystems") as f:
        if "cgroup2" not in f.read():
            return suite.skip_all("this kernel has no cgroup v2")
    suite.case("the MPI job is parallel at A and at B's monitor",
               t_classified, timeout=180)
    suite.case("NetPIPE under bulk: parq, fq_codel, pfifo",
               t_measure, timeout=900,
               speed="NetPIPE must end within the bulk job's 60 s")
    suite.case("parq <= pfifo / 1.5", t_bounds,
               speed="one-way times of a loaded machine")
    return lab.run(suite, "mpi", tools=("nft", "iperf3"), setup=setup)


if __name__ == "__main__":
    sys.exit(main())
