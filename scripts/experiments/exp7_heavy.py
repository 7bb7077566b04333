#!/usr/bin/python3
"""Experiment 7, a heavy parallel job: its own traffic takes more than a
quarter of the link, against a local job's bulk, on the sending side.

Namespaces A and B joined by one veth pair (netns.Topology), the scheduler
under test on A's veth behind a 100 Mbit/s bottleneck, as in experiment 1.
The parallel job: an open-loop stream of 2 KiB messages from A to a
parq-bench server on B, DSCP EF, each answered by 32 bytes, one message
every interval so that it offers LOADS Mbit/s (messages start on their
schedule whether or not the replies came back).  The local job: one
parq-bench bulk stream of 16 KiB messages from A to B, DSCP 0.

Each repetition runs, per scheduler, the local job alone, and per offered
load the parallel job alone and both together.  Both jobs' results: the
parallel job's round-trip p50 and p99, and the local job's throughput,
each with the other job against without it.  cake (diffserv4) serves its
Voice tin, where EF goes, first only up to a quarter of its rate; parq
serves the parallel class first for `threshold` units before one local,
whatever its volume: at 40 Mbit/s the difference shows, at 10 it should
not.

    scripts/experiments/exp7_heavy.py [--quick] [--out DIR]
"""
import sys
import time
from contextlib import contextmanager
from types import SimpleNamespace

import common
from common import Panel, Params, Step, kib
from parqlab import bench

NAME = "exp7"
TITLE = "Experiment 7: a heavy parallel job"
SIZE = 2048			# the parallel job's messages
LOCAL_SIZE = 16384		# the local job's messages
LOADS = (10, 40)		# Mbit/s the parallel job offers
MEASURE = 2.0			# s of the parallel job's stream
PARAMS = {
    "full": Params(reps=3, extra={"loads": LOADS, "measure": MEASURE}),
    "quick": Params(reps=1, extra={"loads": LOADS, "measure": MEASURE}),
    "smoke": Params(reps=1, schedulers=("cake", "parq"),
                    extra={"loads": (40,), "measure": 1.0}),
}
MODES = ("local", "parallel", "both")
# What parq_experiments checks of each row (finite and positive).
VALUES = ()
FIELDS = ["rep", "scheduler", "mode", "load_mbit", "messages", "p50_us",
          "p99_us", "mean_us", "local_mbit", "parq_mean_us", "parq_p99_us",
          "timer_p99_us", "timer_p50_us", "parq_target_us", "parq_within"]


def steps(p):
    out = []
    loads = p.extra["loads"]
    for rep in range(1, p.reps + 1):
        for cfg in p.schedulers:
            plan = [("local", 0)] + [(m, load) for load in loads
                                     for m in ("parallel", "both")]
            for mode, load in plan:
                out.append(Step(
                    f"{NAME} {cfg} {mode}"
                    + (f" {load} Mbit/s" if load else "")
                    + f" rep {rep}/{p.reps}",
                    p.extra["measure"] + p.settle + 3,
                    common.measuring(cfg, mode, load),
                    {"rep": rep, "scheduler": cfg, "mode": mode,
                     "load_mbit": load}))
    return out


@contextmanager
def lab(p, group=None):
    with common.sender_lab(NAME) as (topo, confs, prefix):
        yield SimpleNamespace(measure=lambda cfg, mode, load: _measure(
            topo, confs, prefix, p, cfg, mode, load))


def _measure(topo, confs, prefix, p, cfg, mode, load):
    a, ip = topo.a, topo.ip_b()
    confs.use(cfg)
    measure = p.extra["measure"]
    row = {}
    bulk = None
    if mode in ("local", "both"):
        # The local job covers the parallel job's stream and its settle.
        bulk = bench.Bulk(a, f"{ip}:{common.BULK_PORT}", LOCAL_SIZE,
                          seconds=f"{measure + p.settle:.3f}")
        time.sleep(p.settle)
    try:
        if mode in ("parallel", "both"):
            interval = SIZE * 8 / load		# us: bits / (Mbit/s)
            count = int(measure * 1e6 / interval)
            res = common.in_parq(a, topo.dev_a(), lambda: bench.exchange(
                a, f"{ip}:{common.PAR_PORT}", size=SIZE, count=count,
                tos=common.EF, prefix=prefix, interval_us=int(interval)))
            lat = res["latency_ns"]
            row.update(messages=count, p50_us=lat["p50"] / 1e3,
                       p99_us=lat["p99"] / 1e3, mean_us=lat["mean"] / 1e3,
                       parq_mean_us=res["parq_mean_us"],
                       parq_p99_us=res["parq_p99_us"])
        elif bulk is not None:
            time.sleep(measure)
        if bulk is not None:
            (res,) = bulk.results(measure + 30)
            row["local_mbit"] = res["bytes_per_second"] * 8 / 1e6
    finally:
        if bulk is not None:
            bulk.stop()
    # After the local job, whose rate is over its whole run: the timer
    # beside it would run without the parallel job.
    return common.with_timer(a, prefix, [row])


def _stats(rows):
    """{(scheduler, mode, load): summarize() tuple} of p99_us and of
    local_mbit."""
    keys = ("scheduler", "mode", "load_mbit")
    return (common.summarize(rows, keys, "p99_us"),
            common.summarize(rows, keys, "p50_us"),
            common.summarize(rows, keys, "local_mbit"),
            common.summarize(rows, keys, "parq_p99_us"))


def report(rows, p, out):
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    p99, p50, mbit, inq = _stats(rows)
    loads, cfgs = list(p.extra["loads"]), list(p.schedulers)
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel("the parallel job, with the local job", "offered load "
              "(Mbit/s)", "round-trip p99 (us)", loads,
              common.series(p99, cfgs, loads,
                            lambda c, x: (c, "both", x)), logy=True),
        Panel("the local job, with the parallel job", "parallel job's "
              "offered load (Mbit/s)", "throughput (Mbit/s)", loads,
              common.series(mbit, cfgs, loads,
                            lambda c, x: (c, "both", x)))])
    tgt = common.targets(rows, ("scheduler", "mode", "load_mbit"))
    sections = []
    for load in loads:
        table = [[c,
                  common.cell(p50.get((c, "parallel", load)), 0),
                  common.cell(p50.get((c, "both", load)), 0),
                  common.cell(p99.get((c, "parallel", load)), 0),
                  common.cell(p99.get((c, "both", load)), 0),
                  common.cell(mbit.get((c, "local", 0)), 1),
                  common.cell(mbit.get((c, "both", load)), 1),
                  common.cell(inq.get((c, "parallel", load)), 0),
                  common.cell(inq.get((c, "both", load)), 0),
                  tgt.get((c, "parallel", load), "-"),
                  tgt.get((c, "both", load), "-")]
                 for c in cfgs]
        sections.append((
            f"The parallel job at {load} Mbit/s",
            f"Medians over {p.reps} repetitions (min-max).  Round trips of "
            f"the parallel job's {kib(SIZE)} messages in us, alone and "
            f"with the local job; the local job's throughput in Mbit/s, "
            f"alone and with the parallel job.  Under parq, the 99th "
            f"percentile of the time the parallel job's packets spent in "
            f"parq, in us (the bound of its bucket of parq's sojourn "
            f"histogram, tc -s), alone and with the local job, and its "
            f"target: one local frame at 100 Mbit/s, "
            f"{common.SOJOURN_TARGET_US:.0f} us, plus the timer's slack "
            f"(the 99th percentile of how late {common.TIMER_WAKEUPS} "
            f"timer wake-ups {common.TIMER_INTERVAL_US} us apart came, "
            f"parq-bench timer under the parallel job's CPU and priority, "
            f"right after the step, the local job gone), median (min-max) "
            f"and in how many repetitions the p99 bound was within it."
            f"\n\n" +
            common.md_table(["scheduler", "p50 alone", "p50 with local",
                             "p99 alone", "p99 with local", "local alone",
                             "local with parallel", "in parq p99 alone",
                             "in parq p99 with local", "target alone",
                             "target with local"], table)))
    top = max(loads)
    head = (f"{NAME}: the parallel job at {top} Mbit/s of {kib(SIZE)} "
            f"messages against a {kib(LOCAL_SIZE)} bulk stream, median "
            "round-trip p99 (us) and the local job's Mbit/s: " +
            ", ".join(f"{c} {common.cell(p99.get((c, 'both', top)), 0)} us"
                      f" / {common.cell(mbit.get((c, 'both', top)), 1)}"
                      for c in cfgs) + ".")
    sections.append(("Headline", head))
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
A parallel job (an open-loop stream of {kib(SIZE)} messages from host A,
DSCP EF, each answered by 32 bytes, offering {" and ".join(map(str, loads))}
Mbit/s) and a local job (one parq-bench bulk stream of {kib(LOCAL_SIZE)}
messages, DSCP 0) leave A through one interface with a 100 Mbit/s
bottleneck, as in experiment 1.  cake (diffserv4) serves EF's Voice tin
first only up to a quarter of its rate; parq serves its parallel class
first for `threshold` units before one local, whatever its volume.
Documentation/experiments.md has the details.
""", sections)
    return [head]


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
