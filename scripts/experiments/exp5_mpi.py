#!/usr/bin/python3
"""Experiment 5, real MPI: Open MPI's NetPIPE (Debian's netpipe-openmpi,
a benchmark not written here) against a local job, on the sending side
and on the receiving side.

The parallel job is NPopenmpi's ping-pong of 64-byte messages between
two ranks, one per namespace (parqlab.mpi: mpirun's rsh agent enters the
namespace, --bind-to none), started in a cgroup that `parqctl job add`
made a job on every host: nothing in MPI is set for parq, no filter names
its ports; the job's packets leave with DSCP EF, which each scheduler
under test classifies as exp1 does (parq: parallel; prio and ets: their
strict band).  The local job is a parq-bench bulk stream (DSCP 0, in no
job).
  send: the ranks on A and B, the local job from A to B, the scheduler
        under test on A behind a 100 Mbit/s bottleneck (exp1's lab);
  recv: the ranks on P and R, the local job from L to R, through a switch
        whose port toward R is a 100 Mbit/s FIFO of 300 kB; the scheduler
        under test on P and L without a shaper, then parq with parqd on
        the three hosts (exp2's lab).
A measurement is NetPIPE's one-way time (half the round trip, the best of
its trials of Params.count round trips); the slowdown is that with the
local job over the same without it: same side, configuration and
repetition.  Open MPI's event library is polled every
parqlab.mpi.EVENT_TICK_US (100 us) instead of its default 10 ms, under
which a rank sometimes read its socket only every 10 ms whatever the
queue (parqlab/mpi.py; selftests/parq_mpi.py measures both).

    scripts/experiments/exp5_mpi.py [--quick] [--out DIR]
"""
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace

import common
from common import Params, Step, kib
from parqlab import bench, mpi
from parqlab.netns import Star, Topology

NAME = "exp5"
TITLE = "Experiment 5: MPI (NetPIPE), both sides"
SIDES = ("send", "recv")
JOB = "parqexp5/job_1"		# the job's cgroup, below /sys/fs/cgroup
PARAMS = {
    "full": Params(reps=3, parallel_sizes=(64,), local_sizes=(16384,)),
    "quick": Params(reps=1, parallel_sizes=(64,), local_sizes=(16384,)),
    # What parq_mpi does not cover: parq+parqd on the receiving side
    # (parq_experiments checks that parqd engaged for the job).
    "smoke": Params(reps=1, count=50, schedulers=("parq",),
                    parallel_sizes=(64,), local_sizes=(16384,),
                    extra={"recv": (common.PARQD,)}),
}
VALUE = "oneway_us"		# what a row measures (exp1-4: completion_ms)
SMOKE_TIMEOUT = 300		# s, parq_experiments' bound on the smoke run
FIELDS = ["rep", "side", "scheduler", "parallel_size", "local_size",
          "oneway_us", "slowdown", "grants", "parq_mean_us", "parq_p99_us",
          "local_alone_mbit", "local_mbit", "local_kept"]
INTRO = """\
An Open MPI job, Debian's NetPIPE (NPopenmpi) ping-pong of {psizes}
messages, {count} round trips per trial, runs in a cgroup that `parqctl
job add` made a job on every host: the job's packets leave with DSCP EF,
and nothing in MPI is set for parq (Open MPI's event library is polled
every {tick} us rather than its default 10 ms, under which a rank
sometimes read its socket only every 10 ms whatever the queue: an Open
MPI setting that is not parq's, the same for every scheduler; see
parqd.md, "Unmodified MPI").  The local job is one parq-bench bulk
stream of {lsizes} messages (DSCP 0).  On the sending side (send) the two
ranks are on A and B and the local job goes from A to B, the scheduler
under test on A behind a 100 Mbit/s bottleneck (as in exp1).  On the
receiving side (recv) the ranks are on P and R and the local job goes
from L to R, through a switch whose port toward R is a 100 Mbit/s FIFO of
300 kB; the scheduler is on P and L without a shaper, and `{parqd}` adds
parqd on the three hosts (as in exp2).  T1: NetPIPE's one-way time
without the local job; slowdown: with it over T1, same side,
configuration and repetition.  Documentation/experiments.md has the
details.
"""


def configs(p, side):
    """The configurations of @side: @p's schedulers (on the receiving
    side, and parq+parqd), or those p.extra[side] names."""
    return list(p.extra.get(side) or
                common.configurations(p, with_parqd=side == "recv"))


def steps(p):
    """Repetitions outermost; within one, each side's configurations in a
    lab of their own (group: the side)."""
    out = []
    for rep in range(1, p.reps + 1):
        for side in SIDES:
            for cfg in configs(p, side):
                for local in (0,) + tuple(p.local_sizes):
                    est = 9.0 * len(p.parallel_sizes) + (2.0 if local
                                                         else 0.0)
                    out.append(Step(
                        f"{NAME} {side} {cfg} "
                        f"local={common.local_label(local)} "
                        f"rep {rep}/{p.reps}", est,
                        common.measuring(cfg, local),
                        {"rep": rep, "side": side, "scheduler": cfg,
                         "local_size": local}, group=side))
    return out


@contextmanager
def lab(p, group):
    with ExitStack() as stack:
        if group == "send":
            topo = stack.enter_context(Topology(NAME))
            ranks = [(topo.a, topo.ip_a()), (topo.b, topo.ip_b())]
            local_from, sink = topo.a, topo.ip_b()
            stack.enter_context(common.parq_job([topo.a, topo.b], JOB))
            confs = stack.enter_context(common.Configurations(
                [(topo.a, topo.dev_a())]))
            receivers = []
            first = (topo.a, topo.dev_a())
        else:
            star = stack.enter_context(Star(NAME, hosts=("p", "l", "r")))
            tmp = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="parq-exp5-"))
            common.switch_fifo(star, "r")
            ranks = [(star.ns["p"], star.ip("p")),
                     (star.ns["r"], star.ip("r"))]
            local_from, sink = star.ns["l"], star.ip("r")
            stack.enter_context(
                common.parq_job(list(star.ns.values()), JOB))
            receivers = ["r"]
            first = (star.ns["p"], "eth0")
            confs = stack.enter_context(common.Configurations(
                [(star.ns[h], "eth0") for h in ("p", "l")], rate=None,
                cluster=common.receivers_cluster(star, receivers, tmp)))
        sink_ns = ranks[1][0]
        stack.enter_context(bench.Server(sink_ns, sink, common.BULK_PORT))
        yield SimpleNamespace(measure=lambda cfg, local: _measure(
            p, confs, receivers, ranks, first, local_from,
            f"{sink}:{common.BULK_PORT}", cfg, local))


def _measure(p, confs, receivers, ranks, first, local_from, peer, cfg,
             local):
    """A row per MPI message size: NetPIPE's one-way time, the job's
    time in the first rank's parq (exp5.csv's parq_mean_us, parq_p99_us),
    and the local job's rate while mpirun ran over its rate alone."""
    confs.use(cfg)

    def measure():
        rows = []
        for ps in p.parallel_sizes:
            start = time.monotonic_ns()
            row = common.in_parq(*first, lambda ps=ps: {
                "parallel_size": ps,
                "oneway_us": mpi.netpipe_latency(
                    ranks, size=ps, reps=p.count, cgroup=JOB,
                    event_tick_us=mpi.EVENT_TICK_US)})
            row.update(start_ns=start, end_ns=time.monotonic_ns())
            rows.append(meter.add(row) if meter else row)
        return rows
    with common.local_job(local_from, peer, local, p,
                          progress_ms=common.LOCAL_PROGRESS_LONG_MS) as meter:
        return common.with_grants(confs, receivers, measure)


def report(rows, p, out):
    common.add_slowdowns(rows, ("side", "scheduler", "parallel_size", "rep"),
                         lambda r: r["local_size"] == 0, value="oneway_us")
    st = common.summarize(rows, ("side", "scheduler", "parallel_size",
                                 "local_size"))
    t1 = common.summarize([r for r in rows if r["local_size"] == 0],
                          ("side", "scheduler", "parallel_size"),
                          "oneway_us")
    inq = common.summarize([r for r in rows if r["local_size"] and
                            r.get("parq_mean_us") is not None],
                           ("side", "scheduler", "parallel_size"),
                           "parq_mean_us")
    kept = common.summarize(rows, ("side", "scheduler", "parallel_size"),
                            "local_kept")
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    ls = max(p.local_sizes)
    psizes = list(p.parallel_sizes)
    # One panel per side and MPI message size: a point per configuration.
    panels = []
    for side in SIDES:
        names = configs(p, side)
        for ps in psizes:
            panels.append(common.Panel(
                f"{side}: {kib(ps)} MPI messages, {kib(ls)} local",
                "configuration", "slowdown (T/T1)", names,
                {c: {i: st[(side, c, ps, ls)]} for i, c in enumerate(names)
                 if (side, c, ps, ls) in st},
                hline=1.0, logy=True))
    common.plot(out / f"{NAME}.png", TITLE, panels)
    sections = []
    for side in SIDES:
        table = []
        for c in configs(p, side):
            for ps in psizes:
                table.append([c, kib(ps),
                              common.cell(t1.get((side, c, ps)), 0),
                              common.cell(st.get((side, c, ps, ls))),
                              common.cell(inq.get((side, c, ps)), 0),
                              common.cell(kept.get((side, c, ps)))])
        sections.append((
            f"{'Sending' if side == 'send' else 'Receiving'} side ({side})",
            f"NetPIPE's one-way time without the local job (T1, us), "
            f"its slowdown against {kib(ls)} local messages, and under "
            f"parq the mean time the job's packets spent in the first "
            f"rank's parq meanwhile (us; its sojourn times, tc -s), "
            f"and the local job's rate while mpirun ran (NetPIPE's "
            f"trials, and mpirun's start and end) over its rate alone "
            f"(the {common.LOCAL_ALONE_S:g} s before), median over "
            f"{p.reps} repetitions (min-max).\n\n" +
            common.md_table(["scheduler", "MPI message", "T1 (us)",
                             f"slowdown, local {kib(ls)}",
                             "in parq (us)", "local job kept"], table)))
    heads = [headline(side, st, kept, p) for side in SIDES]
    sections.append(("Headline", "\n".join(f"- {h}" for h in heads)))
    intro = INTRO.format(count=p.count, parqd=common.PARQD,
                         tick=mpi.EVENT_TICK_US,
                         psizes=" and ".join(map(kib, psizes)),
                         lsizes=kib(ls))
    common.write_md(out / f"{NAME}.md", TITLE, intro, sections)
    return heads


def headline(side, st, kept, p):
    ps, ls = min(p.parallel_sizes), max(p.local_sizes)
    figs = ", ".join(f"{c} {common.cell(st.get((side, c, ps, ls)))}"
                     for c in configs(p, side))
    local = ", ".join(f"{c} {common.cell(kept.get((side, c, ps)))}"
                      for c in configs(p, side))
    return (f"{NAME}: {side} side: slowdown of NetPIPE's {kib(ps)} "
            f"messages against {kib(ls)} local messages, median (min-max): "
            f"{figs}; the local job's rate meanwhile over its rate alone: "
            f"{local}.")


def unavailable():
    """Why this experiment cannot run here (driver.preflight), or None."""
    return mpi.have_mpi()


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
