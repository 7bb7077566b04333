#!/usr/bin/python3
"""parq's own shaper against htb's at the same rate, for a parallel job's
messages.

Why: an MPI program of two ranks (namespaces A and B, a 100 Mbit/s
bottleneck at A) ran its loop in 3.34 to 3.48 s through `parq rate
100mbit` and in 2.14 to 2.21 s through `htb rate 100mbit` with fq_codel or
parq below it.  parq's shaper then gave every byte its departure time and
split every GSO packet into frames each paced at the rate; htb sends a GSO
packet whole as soon as its class has tokens and pays the debt
afterwards.  This measures what that costs a chain of messages, which
part of it was the splitting, and parq's shaper as it is now (a burst
allowance for the parallel classes, their GSO packets whole) against
htb's.

The lab is first_table's (common.sender_lab): namespaces A and B, the
configuration under test on A's veth, 100 Mbit/s.  The parallel job (DSCP
EF, parq's parallel class; pinned to CPU 0 at real-time priority, as its
server on B) runs a number of steps; in each it sends K messages of SIZE
bytes (--size, default 64 KiB) to B and waits for B's 32-byte reply
before the next step, as the steps of an MPI program wait for each
other.  K messages sent back to back on one TCP connection are one stream
of K x SIZE bytes to TCP and to every qdisc, so parq-bench (one-to-one,
closed loop) sends them as one message of K x SIZE bytes (its 32-byte
header included).  The figure is the time per step: the exchange's time
over its steps (STEPS, scaled by 64 KiB / SIZE).  Workloads: the job
alone, steps back to back; the job alone, one step every SPACING times
its time on the wire, as a program that computes between its exchanges
(the figure then a step's own time, parq-bench's mean latency); and
back to back beside a local job (one parq-bench bulk stream of 16 KiB
messages, DSCP 0, started SETTLE_S before), as in first_table.

The size matters to htb: TCP's largest GSO packet carries 45 segments of
1448 bytes, 65160 bytes, so a message of 64 KiB leaves in two skbs and
its last bytes wait for htb's debt like the rest of the link; a message of
32 KiB fits in one and reaches B at once.

Configurations (configurations()): parq's own shaper in each of
PARQ_VARIANTS (and --parq's), htb 100 Mbit/s with parq below (BASE, the
reference), the same with parq splitting GSO packets (splitting without
parq's shaper: htb sends each frame when its class has tokens, its
default burst at 100 Mbit/s being 1600 bytes, one frame), htb with
fq_codel below, with pfifo below, and cake's own shaper (which splits GSO
packets too).  Alone only (UNSHAPED): parq without a shaper, GSO packets
split and whole, at the veth's own speed: what splitting costs the
emulated CPUs, apart from any pacing.  Each round measures every
configuration once, the rounds in turn; the tables give the medians over
the rounds with their range, and each configuration's time against BASE's
as the median of the ratios within a round.  Beside each figure: A's
veth's packets per message (alone only: the skbs leaving the qdisc, 46 a
64 KiB message when GSO packets are split to frames, a few when they go
whole; A's ACKs of the replies included), the parallel class's mean time
in parq (configurations with parq), the local job's rate, and how idle
the two CPUs were (common.cpu_meter()).  Each round also begins with the
timer's lateness (parq-bench timer, as common.with_timer()), since a
paced frame waits for the qdisc's watchdog.

Run it as root where sch_parq can be loaded, with parq-bench built
(PARQ_USERSPACE_BUILD, default build/userspace; make tools for
build/release), e.g. in the VM (about 7 minutes, 3 rounds; --quick, 2
rounds of fewer steps, about 3):

    make kmod plugin tools
    PARQ_USERSPACE_BUILD=build/release scripts/vm-run --timeout 1500 -- \\
        scripts/experiments/shaper.py

With --mpi the parallel job is a real MPI program instead, unmodified:
Debian's NetPIPE for Open MPI (NPopenmpi), one rank in A and one in B,
ping-pong of 64 KiB messages (--size), Open MPI's defaults, made parallel
by the cgroup it runs in alone (`parqctl job add` on both hosts, as in
experiment 5).  The figure is NetPIPE's one-way time (MPI_REPS round
trips a trial), alone and beside the same local job, in the same
configurations (no unshaped ones), the rounds in turn.

It writes every round's figures to --json (build/shaper/shaper.json, with
--mpi build/shaper/mpi.json); --table FILE prints the tables of such a file
again.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import common
from parqlab import bench, module, mpi, repo_path, scenarios
from parqlab import tc as tclib
from parqlab.netns import Topology
from parqlab.traffic import have

RATE = scenarios.RATE
RATE_BPS = 100e6
MESSAGE = 65536				# bytes of one message, header included
PER_STEP = (1, 4)			# K: messages per step
STEPS = {1: 80, 4: 20}			# steps of one exchange, per K
QUICK_STEPS = {1: 40, 4: 10}
ROUNDS = 3
QUICK_ROUNDS = 2
LOCAL_SIZE = 16384
LOCAL_PROGRESS_MS = 50
SETTLE_S = 1.0				# the local job alone before the exchanges
ALONE = "alone"
SPACED = "spaced"
BESIDE = "beside bulk"
WORKLOADS = (ALONE, SPACED, BESIDE)
# SPACED: the steps start SPACING times their time on the wire apart, as
# a program that computes between its exchanges; the figure is then a
# step's own time (parq-bench's mean latency), not the period.
SPACING = 3
BASE = "htb+parq"
# --mpi: NetPIPE's round trips per trial, and the job's cgroup (below
# /sys/fs/cgroup).
MPI_REPS = 50
QUICK_MPI_REPS = 20
MPI_JOB = "parqshaper/job_1"
# A TCP segment's payload (1500-byte MTU, timestamps on) and what each
# segment adds on the wire as the shapers count it (Ethernet, IP, TCP):
# the time a step's messages take at the rate alone (line_ms()).
MSS = 1448
SEGMENT_HEADERS = 14 + 20 + 32

# parq's own shaper, one configuration per row: (name, the tc arguments
# that follow "parq rate 100mbit").  A new variant of the shaper is a row
# here (or --parq on the command line).  "parq" is the defaults (burst
# 65536, split-gso auto: the local class's GSO packets split); "parq
# paced" paces every byte and splits every GSO packet, as parq's shaper
# did before it had either.
PARQ_VARIANTS = (
    ("parq", ()),
    ("parq burst 0", ("burst", "0")),
    ("parq paced", ("burst", "0", "split-gso")),
)


def _htb_parq_split(ns, dev, rate=RATE):
    scenarios.install_htb_parq(ns, dev, rate, extra=("split-gso",))


BASELINES = {
    BASE: scenarios.install_htb_parq,
    "htb+parq split-gso": _htb_parq_split,
    "htb+fq_codel": scenarios.install_fq_codel,
    "htb+pfifo": scenarios.install_pfifo,
    "cake": scenarios.install_cake,
}


def parq_variant(extra):
    def install(ns, dev, rate=RATE):
        scenarios.install_parq(ns, dev, rate=rate, extra=extra)
    return install


def _unshaped(*args):
    """parq at the root of the device without a shaper (the parallel job
    is EF, which parq classifies without a filter)."""
    def install(ns, dev, rate=None):
        tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:",
                 "parq", *args)
    return install


UNSHAPED = {
    "unshaped split": _unshaped("split-gso"),
    "unshaped whole": _unshaped("no-split-gso"),
}


def configurations(variants=PARQ_VARIANTS):
    """{name: installer} of the shaped configurations, parq's @variants
    first."""
    out = {name: parq_variant(tuple(extra)) for name, extra in variants}
    out.update(BASELINES)
    return out


def line_ms(k, size=MESSAGE):
    """The time @k messages of @size bytes take on the wire at RATE,
    headers included."""
    size *= k
    return (size + math.ceil(size / MSS) * SEGMENT_HEADERS) * 8e3 / RATE_BPS


def exchange(topo, prefix, k, steps, size, interval_us=0):
    """One exchange of @steps steps of @k messages of @size bytes:
    {"step_ms", "pkts_per_msg" (A's veth's packets per message),
    "parq_us" (the parallel class's mean time in parq, None without
    parq), "cpu_idle_pct" (both CPUs, common.cpu_meter()), "start_ns",
    "end_ns"}."""
    a, dev = topo.a, topo.dev_a()
    peer = f"{topo.ip_b()}:{common.PAR_PORT}"
    pkts0, _ = a.tx_counts(dev)
    with common.cpu_meter() as cpu:
        res, soj = tclib.with_sojourn(a, dev, lambda: common.figures(
            bench.exchange(a, peer, size=k * size, count=steps,
                           tos=common.EF, prefix=prefix,
                           interval_us=interval_us)))
    pkts1, _ = a.tx_counts(dev)
    step = res["mean_us"] / 1e3 if interval_us else \
        res["completion_ms"] / steps
    return {"step_ms": step,
            "pkts_per_msg": (pkts1 - pkts0) / (steps * k),
            "parq_us": soj[1] / 1e3 if soj and soj[0] else None,
            "cpu_idle_pct": cpu(res["start_ns"],
                                res["end_ns"])["cpu_idle_pct"],
            "start_ns": res["start_ns"], "end_ns": res["end_ns"]}


def _local_pin(plan):
    """The local job's argv prefix: taskset to --local-cpu, if given."""
    return () if plan["local_cpu"] is None else \
        ("taskset", "-c", str(plan["local_cpu"]))


def measure_one(topo, confs, prefix, name, plan):
    """Configuration @name once: {(workload, K): row}."""
    confs.use(name)
    out = {}
    for k in plan["per_step"]:
        out[(ALONE, k)] = exchange(topo, prefix, k, plan["steps"][k],
                                   plan["size"])
    if name in UNSHAPED:
        return out
    for k in plan["per_step"]:
        gap = round(SPACING * line_ms(k, plan["size"]) * 1e3)
        out[(SPACED, k)] = exchange(topo, prefix, k, plan["steps"][k],
                                    plan["size"], interval_us=gap)
    sink = f"{topo.ip_b()}:{common.BULK_PORT}"
    with bench.Bulk(topo.a, sink, LOCAL_SIZE, progress_ms=LOCAL_PROGRESS_MS,
                    prefix=_local_pin(plan)) as job:
        time.sleep(SETTLE_S)
        job.first_ns()
        job.check_running("before the exchanges")
        for k in plan["per_step"]:
            row = exchange(topo, prefix, k, plan["steps"][k],
                           plan["size"])
            job.check_running("during the exchange")
            row["local_mbit"] = job.mbit(row["start_ns"], row["end_ns"])
            out[(BESIDE, k)] = row
    return out


def timer(topo, prefix):
    """How late the parallel job's timers fire now (common.with_timer()'s
    wake-ups, no traffic): {"p50_us", "p99_us"}.  A paced frame waits for
    the qdisc's watchdog, which fires late by about as much."""
    late = bench.timer(topo.a, common.TIMER_WAKEUPS,
                       common.TIMER_INTERVAL_US, prefix)["lateness_ns"]
    return {"p50_us": late["p50"] / 1e3, "p99_us": late["p99"] / 1e3}


def measure(plan, progress=print):
    """({configuration: [measure_one()'s result in each round]},
    [timer() at the start of each round])."""
    installers = configurations(plan["variants"])
    if plan["unshaped"]:
        installers.update(UNSHAPED)
    results = {n: [] for n in installers}
    timers = []
    with common.sender_lab("shaper", installers) as (topo, confs, prefix):
        for rnd in range(1, plan["rounds"] + 1):
            timers.append(timer(topo, prefix))
            for name in installers:
                t0 = time.monotonic()
                rows = measure_one(topo, confs, prefix, name, plan)
                results[name].append(rows)
                progress(f"  round {rnd}/{plan['rounds']} {name:<18} " +
                         "  ".join(f"{w} K={k}: {r['step_ms']:.2f} ms"
                                   for (w, k), r in rows.items()) +
                         f"  ({time.monotonic() - t0:.0f} s)")
    return results, timers


def mpi_step(ranks, plan):
    """NetPIPE's one-way time, as a row of measure_one()'s: "step_ms",
    "start_ns", "end_ns"."""
    start = time.monotonic_ns()
    us = mpi.netpipe_latency(ranks, size=plan["size"],
                             reps=plan["steps"][1], cgroup=MPI_JOB,
                             timeout=300)
    return {"step_ms": us / 1e3, "start_ns": start,
            "end_ns": time.monotonic_ns()}


def measure_mpi(plan, progress=print):
    """measure()'s results for the MPI job (--mpi): each configuration
    once a round, alone and beside the local job, as (ALONE, 1) and
    (BESIDE, 1)."""
    installers = configurations(plan["variants"])
    results = {n: [] for n in installers}
    with Topology("shapermpi") as topo, \
            common.parq_job([topo.a, topo.b], MPI_JOB), \
            bench.Server(topo.b, topo.ip_b(), common.BULK_PORT), \
            common.Configurations([(topo.a, topo.dev_a())],
                                  installers=installers) as confs:
        ranks = [(topo.a, topo.ip_a()), (topo.b, topo.ip_b())]
        sink = f"{topo.ip_b()}:{common.BULK_PORT}"
        mpi_step(ranks, dict(plan, steps={1: 5}))  # warm, untimed
        for rnd in range(1, plan["rounds"] + 1):
            for name in installers:
                t0 = time.monotonic()
                confs.use(name)
                rows = {(ALONE, 1): mpi_step(ranks, plan)}
                with bench.Bulk(topo.a, sink, LOCAL_SIZE,
                                progress_ms=LOCAL_PROGRESS_MS,
                                prefix=_local_pin(plan)) as job:
                    time.sleep(SETTLE_S)
                    job.first_ns()
                    job.check_running("before NetPIPE")
                    row = mpi_step(ranks, plan)
                    job.check_running("during NetPIPE")
                    row["local_mbit"] = job.mbit(row["start_ns"],
                                                 row["end_ns"])
                rows[(BESIDE, 1)] = row
                results[name].append(rows)
                progress(f"  round {rnd}/{plan['rounds']} {name:<18} "
                         f"one way alone {rows[(ALONE, 1)]['step_ms']:.2f} "
                         f"ms, beside bulk {row['step_ms']:.2f} ms "
                         f"({time.monotonic() - t0:.0f} s)")
    return results, []


def _values(rounds, key, field):
    return [r[key][field] for r in rounds
            if key in r and r[key].get(field) is not None]


def _median(rounds, key, field):
    vals = _values(rounds, key, field)
    return statistics.median(vals) if vals else None


def _spread(vals, digits=0):
    """"7.02 (6.60-7.98)": the median of @vals (over the rounds) and their
    range; "-" without any."""
    if not vals:
        return "-"
    return f"{statistics.median(vals):.{digits}f} " \
        f"({min(vals):.{digits}f}-{max(vals):.{digits}f})"


def ratio(results, name, key, base=BASE):
    """@name's time per step over @base's: the median over the rounds of
    the ratio within each round."""
    vals = [r[key]["step_ms"] / b[key]["step_ms"]
            for r, b in zip(results[name], results[base])
            if key in r and key in b]
    return statistics.median(vals) if vals else None


def _fmt(v, width, digits, unit=""):
    """@v right-aligned in @width with @digits decimals and @unit, or
    "-"."""
    return f"{'-' if v is None else f'{v:.{digits}f}{unit}':>{width}}"


def table(results, plan):
    """The tables' lines: one per workload and K."""
    lines = []
    for work in WORKLOADS:
        for k in plan["per_step"]:
            key = (work, k)
            names = [n for n in results if results[n] and
                     key in results[n][0]]
            if not names:
                continue
            extra = "local Mbit/s" if work == BESIDE else "pkts/msg"
            every = f", one every {SPACING} times that" if work == SPACED \
                else ""
            what, unit = (f"{work}: {k} x {common.kib(plan['size'])} a "
                          f"step, {plan['steps'][k]} steps", "ms/step")
            if plan.get("mpi"):
                what, unit = (f"MPI (NetPIPE) {work}: "
                              f"{common.kib(plan['size'])} messages, "
                              f"{plan['steps'][k]} round trips a trial, "
                              "one-way time", "ms one way")
            lines += ["", f"{what} (the rate alone: "
                      f"{line_ms(k, plan['size']):.2f} ms a "
                      f"{'message' if plan.get('mpi') else 'step'}{every})",
                      f"{'configuration':<20} {unit + ' (range)':>23} "
                      f"{'over ' + BASE:>14} {extra:>12} "
                      f"{'in parq (us)':>12} {'CPU idle %':>10}"]
            for n in names:
                rows = results[n]
                over = ratio(results, n, key) if BASE in results else None
                side = _median(rows, key, "local_mbit" if work == BESIDE
                               else "pkts_per_msg")
                lines.append(
                    f"{n:<20} "
                    f"{_spread(_values(rows, key, 'step_ms'), 2):>23} "
                    f"{_fmt(over, 14, 2, 'x')} {_fmt(side, 12, 1)} "
                    f"{_fmt(_median(rows, key, 'parq_us'), 12, 0)} "
                    f"{_fmt(_median(rows, key, 'cpu_idle_pct'), 10, 0)}")
    return lines


def headline(results, timers, plan):
    """parq's own shaper against BASE, per workload and K, and the
    timers' lateness."""
    out = []
    for work in WORKLOADS:
        for k in plan["per_step"]:
            parts = [f"{n} {ratio(results, n, (work, k)):.2f}x"
                     for n, _ in plan["variants"]
                     if ratio(results, n, (work, k)) is not None]
            if parts:
                out.append(f"{work}, K={k}: over {BASE}: "
                           + ", ".join(parts))
    if timers:
        out.append("timers (no traffic): lateness p50 " + _spread(
            [t["p50_us"] for t in timers]) + " us, p99 " + _spread(
            [t["p99_us"] for t in timers]) + " us")
    return out


def _variant(text):
    """--parq "burst 65536": ("parq burst 65536", ("burst", "65536"))."""
    args = tuple(text.split())
    if not args:
        raise argparse.ArgumentTypeError("--parq needs parq's arguments")
    return " ".join(("parq",) + args), args


def _steps(steps):
    """"40 steps (K=1), 10 (K=4)"."""
    return ", ".join(f"{n}{' steps' if i == 0 else ''} (K={k})"
                     for i, (k, n) in enumerate(steps.items()))


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/experiments/shaper.py",
        description="parq's own shaper against htb's at the same rate, "
        "for a parallel job's messages (see the module's doc).")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_ROUNDS} rounds of {_steps(QUICK_STEPS)} "
                    f"(default {ROUNDS} of {_steps(STEPS)})")
    ap.add_argument("--rounds", type=int, help="rounds (each measures "
                    "every configuration once)")
    ap.add_argument("--size", type=int, default=MESSAGE, metavar="BYTES",
                    help="bytes of one message, parq-bench's 32-byte "
                    "header included (default %(default)s); the steps "
                    "scale so that an exchange carries as many bytes")
    ap.add_argument("--parq", type=_variant, action="append", default=[],
                    metavar="ARGS", help="one more variant of parq's "
                    "shaper: its tc arguments after 'parq rate 100mbit', "
                    "e.g. --parq 'threshold inf'; repeatable")
    ap.add_argument("--only-parq", action="store_true",
                    help="of parq's variants, only --parq's")
    ap.add_argument("--local-cpu", type=int, metavar="CPU",
                    help="run the local job on this CPU alone (default: "
                    "wherever the kernel puts it, as first_table; the "
                    "parallel job is on CPU 0)")
    ap.add_argument("--mpi", action="store_true",
                    help="the parallel job a real MPI program (NetPIPE, "
                    "Open MPI's defaults) made parallel by its cgroup")
    ap.add_argument("--no-unshaped", action="store_true",
                    help="leave out parq without a shaper (alone)")
    ap.add_argument("--json", help="where to write every round's figures "
                    "(default build/shaper/shaper.json, with --mpi "
                    "build/shaper/mpi.json)")
    ap.add_argument("--table", metavar="JSON",
                    help="measure nothing: print the tables of a run that "
                    "--json wrote")
    return ap.parse_args(argv)


def _key(text):
    """"beside bulk K=4": ("beside bulk", 4)."""
    work, k = text.rsplit(" K=", 1)
    return work, int(k)


def load(path):
    """(results, timers, plan) of a run that main() wrote to @path."""
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    plan = dict(saved["plan"],
                steps={int(k): v for k, v in saved["plan"]["steps"].items()})
    plan.setdefault("size", MESSAGE)
    results = {n: [{_key(t): row for t, row in rnd.items()} for rnd in rounds]
               for n, rounds in saved["results"].items()}
    return results, saved["timer"], plan


def report(results, timers, plan):
    """The tables and the headline."""
    return table(results, plan) + [""] + headline(results, timers, plan)


def unavailable(mpi_job=False):
    """Why this cannot run here (with @mpi_job: the MPI job too), or
    None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc)"
    if not bench.available():
        return f"{bench.PARQ_BENCH} missing: run make tools (and set " \
            "PARQ_USERSPACE_BUILD=build/release) or make userspace"
    if not have("taskset"):
        return "taskset missing"
    return mpi.have_mpi() if mpi_job else None


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    args.json = args.json or str(repo_path(
        "build", "shaper", "mpi.json" if args.mpi else "shaper.json"))
    if args.table:
        print("\n".join(report(*load(args.table))))
        return 0
    why = unavailable(args.mpi)
    if why:
        print(f"shaper: {why}", file=sys.stderr)
        return 4
    module.ensure_loaded()
    variants = (() if args.only_parq else PARQ_VARIANTS) + tuple(args.parq)
    if not 64 <= args.size <= MESSAGE * 16:
        print(f"shaper: --size {args.size}: from 64 to {MESSAGE * 16}",
              file=sys.stderr)
        return 2
    steps = QUICK_STEPS if args.quick else STEPS
    plan = {"rounds": args.rounds or (QUICK_ROUNDS if args.quick
                                      else ROUNDS),
            "size": args.size,
            "steps": {k: max(1, n * MESSAGE // args.size)
                      for k, n in steps.items()},
            "per_step": PER_STEP, "variants": variants,
            "unshaped": not args.no_unshaped, "local_cpu": args.local_cpu}
    if args.mpi:
        plan.update(mpi=True, per_step=(1,), unshaped=False,
                    steps={1: QUICK_MPI_REPS if args.quick else MPI_REPS})
    started = datetime.datetime.now(datetime.timezone.utc)
    what = "MPI (NetPIPE) ping-pong of" if args.mpi else "steps of K x"
    print(f"shaper: {plan['rounds']} rounds, {what} "
          f"{common.kib(args.size)} "
          f"(K = {', '.join(map(str, plan['per_step']))}) at {RATE}, "
          f"{os.uname().release}, {started:%Y-%m-%d %H:%M} UTC", flush=True)
    t0 = time.monotonic()
    results, timers = (measure_mpi if args.mpi else measure)(
        plan, progress=lambda m: print(m, flush=True))
    print("\n".join(report(results, timers, plan)))
    took = time.monotonic() - t0
    print(f"\nshaper: done in {common.duration(took)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"started": started.isoformat(), "seconds": took,
                   "kernel": os.uname().release, "rate": RATE,
                   "plan": plan,
                   "timer": timers,
                   "results": {n: [{f"{w} K={k}": row
                                    for (w, k), row in rnd.items()}
                                   for rnd in rounds]
                               for n, rounds in results.items()}},
                  f, indent=1)
    print(f"shaper: every round's figures in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
