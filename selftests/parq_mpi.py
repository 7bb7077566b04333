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
    in one run, ROUNDS rounds, with Open MPI's defaults: printed, a
    figure that make bench measures and make check leaves out
    (PARQ_FIGURES=0);
  - the same with Open MPI's event library polled every 100 us
    (mpi_event_tick_rate, parqlab.mpi.EVENT_TICK_US), medians judged:
    parq <= fq_codel / 1.5 and parq <= pfifo / 5.
Why the bounds hold: through pfifo and fq_codel the job's messages wait
in the queue that the bulk job fills (milliseconds at 100 Mbit/s), and
through parq they do not, so parq's one-way time is a fraction of
theirs; on the two emulated CPUs, which the busy-polling ranks, the bulk
job and its softirqs share, what remains above idle is mostly the CPUs'
time, so the judged ratios leave room for a busy host.  The targets on
real hardware, pfifo / parq >= 10 and fq_codel / parq >= 3, are printed
as figures (met or missed) for both series, not asserted.  With Open
MPI's defaults single rounds are bimodal: a rank sometimes reads its
socket only when Open MPI polls its event library, every 10 ms, and the
round measures 5.0 ms one way whatever the queue (parqlab/mpi.py); that
can take half of parq's rounds, so those rounds are printed, not judged.
The idle time (parq, no bulk) is printed next to them, and with each
parq round the time the job's packets spent in A's parq (its parallel
sojourn times, tc -s): the queue's share of the one-way time.
"""
import os
import statistics
import sys

from parqlab import jobs as joblib
from parqlab import ktap, lab, mpi
from parqlab import tc as tclib
from parqlab.genl import ParqGenl
from parqlab.ktap import check, diag


PARQCTL = joblib.PARQCTL
JOB = "parqmpi/job_1"		# below /sys/fs/cgroup
SIZE = 64
REPS = 100
ROUNDS = 3
PAR = "1:1"
KINDS = mpi.SendSide.KINDS


def monitor_par(env):
    topo = env.topo
    with ParqGenl(topo.b) as g:
        return g.peers().get(topo.ip_a(), {}).get("par_packets", 0)


def t_classified(env):
    topo = env.topo
    env.side.scheduler("parq")
    par0 = monitor_par(env)
    us = env.side.netpipe()
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


class Series:
    """The rounds of one way of running Open MPI: @tick, its event poll
    (None: Open MPI's default)."""

    def __init__(self, tick):
        self.tick = tick
        self.name = ("Open MPI's defaults" if tick is None else
                     f"its event library polled every {tick} us")
        self.results = {k: [] for k in KINDS}
        self.in_parq = []  # (mean, p99 bound) ns of the job's packets

    def med(self, kind):
        return statistics.median(self.results[kind])


def run_rounds(env, series):
    for rnd in range(1, ROUNDS + 1):
        line = []
        for kind in KINDS:
            us, soj = env.side.under_bulk(kind, series.tick)
            series.results[kind].append(us)
            line.append(f"{kind} {us:.0f}")
            if kind == "parq" and soj is not None:
                series.in_parq.append(soj[1:])
                line[-1] += (f" (its packets in A's parq: mean "
                             f"{soj[1] / 1000:.0f}, p99 < "
                             f"{fmt_bound(soj[2])})")
        diag(f"{series.name}, round {rnd}: NetPIPE {SIZE} B one way (us): "
             + ", ".join(line))


def t_measure(env):
    run_rounds(env, env.default)
    summary(env, env.default)


def t_measure_tick(env):
    run_rounds(env, env.tick)


def fmt_bound(ns):
    return "inf" if ns is None else f"{ns / 1000:.0f}"


def summary(env, series):
    """The medians of @series, printed with the targets; returns
    (parq, fq_codel, pfifo)."""
    check(all(series.results.values()), "no measurements")
    parq, fq, pfifo = (series.med(k) for k in KINDS)
    idle = env.idle_us[0] if env.idle_us else float("nan")
    slow = sum(us >= 4000 for us in series.results["parq"])
    diag(f"{series.name}: medians (us): idle {idle:.0f}, parq {parq:.0f}, "
         f"fq_codel {fq:.0f}, pfifo {pfifo:.0f}; pfifo/parq "
         f"{pfifo / parq:.1f}, fq_codel/parq {fq / parq:.1f}, parq/idle "
         f"{parq / idle:.1f}; parq rounds of 4 ms or more: {slow} of "
         f"{len(series.results['parq'])}")
    if series.in_parq:
        mean = statistics.median(m for m, _ in series.in_parq)
        diag(f"{series.name}: the job's packets in A's parq (median of "
             f"rounds): mean {mean / 1000:.0f} us, of parq's {parq:.0f} us "
             f"one way; the rest is outside the qdisc (B's side, the CPU, "
             f"Open MPI, the stack)")
    for name, base, target in (("pfifo", pfifo, 10), ("fq_codel", fq, 3)):
        diag(f"{series.name}: target: {name} / parq >= {target}: "
             f"{'met' if base / parq >= target else 'missed'}")
    return parq, fq, pfifo


def t_bounds_tick(env):
    parq, fq, pfifo = summary(env, env.tick)
    ktap.check_le(parq, fq / 1.5, "parq vs fq_codel / 1.5")
    ktap.check_le(parq, pfifo / 5, "parq vs pfifo / 5")


def setup(env):
    t = env.topo
    env.idle_us = []
    env.default = Series(None)
    env.tick = Series(mpi.EVENT_TICK_US)
    with ParqGenl(t.b) as g:
        r = g.mon_set(mon_enabled=1, mon_size=16)
        check(not r.error, f"monitor: {r.msg}")
    env.side = mpi.SendSide(t, JOB, size=SIZE, reps=REPS)
    try:
        env.side.start()
    except RuntimeError as e:
        env.side.stop()
        check(False, str(e))
    return [env.side]


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
    suite.case("NetPIPE under bulk, Open MPI's defaults (printed): parq, "
               "fq_codel, pfifo", t_measure, timeout=900,
               speed="NetPIPE must end within the bulk job's 60 s",
               figure=True)
    suite.case("NetPIPE under bulk, Open MPI polled every "
               f"{mpi.EVENT_TICK_US} us: parq, fq_codel, pfifo",
               t_measure_tick, timeout=900,
               speed="NetPIPE must end within the bulk job's 60 s")
    suite.case("polled: parq <= fq_codel / 1.5 and pfifo / 5",
               t_bounds_tick, speed="one-way times of a loaded machine")
    return lab.run(suite, "mpi", tools=("nft", "iperf3"), setup=setup)


if __name__ == "__main__":
    sys.exit(main())
