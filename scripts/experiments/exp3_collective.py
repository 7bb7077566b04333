#!/usr/bin/python3
"""Experiment 3, a collective: one-to-all followed by all-to-one (parq-bench
barrier) across 4 and 8 hosts, with a local job between the root and
another host.

N hosts h0 ... h(N-1) joined through a switch namespace (netns.Star);
the interfaces of h0 and h1, where the local job runs, have the scheduler
under test behind a 100 Mbit/s bottleneck (as in experiment 1; the other
hosts send nothing but the parallel job's answers, so they keep the
default qdisc: installing it on 8 hosts for every step cost more time
than the measurement), and the switch's port toward the root h0 is a 100
Mbit/s FIFO of 300 kB (as in experiment 2).  The parallel job:
100 barrier iterations of 64-byte messages, DSCP EF, rank i on host hi.
The local job: a bulk stream of 16 KiB messages each way between h0 and
h1, so that the root's one-to-all messages queue behind it at h0 and h1's
answer at h1.  `parq+parqd` adds parqd, h0 in the receiving role.
Slowdown: the barrier's completion time with the local job over the same
without it, same configuration, same repetition.

    scripts/experiments/exp3_collective.py [--quick] [--hosts N,...]
        [--out DIR]
"""
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace

import common
from common import Panel, Params, Step, kib
from parqlab import bench
from parqlab.netns import Star

NAME = "exp3"
# --hosts: any number of hosts (no bound of its own).
MAX_HOSTS = None
TITLE = "Experiment 3: one-to-all then all-to-one"
PARAMS = {
    "full": Params(reps=3, local_sizes=(16384,), parallel_sizes=(64,)),
    "quick": Params(reps=2, local_sizes=(16384,), parallel_sizes=(64,)),
    "smoke": Params(reps=1, count=20, schedulers=("parq",),
                    parallel_sizes=(64,), local_sizes=(16384,), hosts=(4,)),
}
ROOT, PEER = "h0", "h1"
# The local job's two streams, each metered (common.LocalMeter): from the
# root, where it shares the root's link with the one-to-all messages, and
# to the root, where it shares the switch port with the answers.
DIRECTIONS = (("local_send", ROOT, PEER, "root to h1"),
              ("local_recv", PEER, ROOT, "h1 to root"))
FIELDS = ["hosts", "rep", "scheduler", "parallel_size", "local_size",
          "completion_ms", "mean_us", "p99_us", "slowdown", "grants"] + \
    [f"{d}_{v}" for d, *_ in DIRECTIONS
     for v in ("alone_mbit", "mbit", "kept")] + \
    ["cpu_idle_pct", "cpu_softirq_pct", "port_skb_bytes"]


def configs(p):
    return common.configurations(p, with_parqd=True)


def steps(p):
    local = p.local_sizes[0]
    out = []
    for n in p.hosts:
        for rep in range(1, p.reps + 1):
            for cfg in configs(p):
                for size in (0, local):
                    out.append(Step(
                        f"{NAME} {cfg} hosts={n} "
                        f"local={common.local_label(size)} "
                        f"rep {rep}/{p.reps}",
                        (8.0 if size else 5.0) + n * 0.5,
                        common.measuring(cfg, size),
                        {"hosts": n, "rep": rep, "scheduler": cfg,
                         "local_size": size}, group=n))
    return out


@contextmanager
def lab(p, n):
    hosts = [f"h{i}" for i in range(n)]
    with Star(f"{NAME}-{n}", hosts=hosts) as star, \
            tempfile.TemporaryDirectory(prefix="parq-exp3-") as tmp, \
            ExitStack() as stack:
        common.switch_fifo(star, ROOT)
        prefix = common.probe_prefix(star.ns[ROOT])
        for h in (ROOT, PEER):
            stack.enter_context(bench.Server(star.ns[h], star.ip(h),
                                             common.BULK_PORT))
        confs = stack.enter_context(common.Configurations(
            [(star.ns[h], "eth0") for h in (ROOT, PEER)],
            cluster=common.receivers_cluster(star, [ROOT], tmp)))
        yield SimpleNamespace(measure=lambda cfg, size: _measure(
            star, confs, prefix, p, cfg, size))


def _measure(star, confs, prefix, p, cfg, size):
    hosts = star.hosts
    confs.use(cfg)

    def measure():
        with common.cpu_meter() as cpu:
            res = bench.collective([star.ns[h] for h in hosts],
                                   [star.ip(h) for h in hosts],
                                   common.RANK_PORT, "barrier",
                                   size=p.parallel_sizes[0], count=p.count,
                                   tos=common.EF, prefix=prefix)
        row = dict(parallel_size=p.parallel_sizes[0], **common.figures(res))
        row.update(cpu(row["start_ns"], row["end_ns"]))
        for (name, *_), meter in zip(DIRECTIONS, meters):
            if meter:
                meter.add(row, name)
        return [row]
    port = star.port(ROOT)
    with ExitStack() as stack:
        before = star.s.tx_counts(port)
        meters = [stack.enter_context(common.local_job(
            star.ns[src], f"{star.ip(dst)}:{common.BULK_PORT}", size,
            p)) for _, src, dst, _ in DIRECTIONS]
        rows = common.with_grants(confs, [ROOT], measure)
    after = star.s.tx_counts(port)
    skbs = after[0] - before[0]
    for r in rows:
        r["port_skb_bytes"] = (after[1] - before[1]) / skbs if skbs else None
    return rows


def report(rows, p, out):
    cfgs = configs(p)
    common.add_slowdowns(rows, ("scheduler", "hosts", "rep"),
                         lambda r: r["local_size"] == 0)
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    loaded = [r for r in rows if r["local_size"]]
    idle = [r for r in rows if not r["local_size"]]
    st = common.summarize(loaded, ("scheduler", "hosts"))
    t1 = common.summarize(idle, ("scheduler", "hosts"), "completion_ms")
    xs = list(p.hosts)
    key = (lambda c, n: (c, n))
    kept = {d: common.summarize(loaded, ("scheduler", "hosts"),
                                f"{d}_kept") for d, *_ in DIRECTIONS}
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel(f"with the local job ({kib(p.local_sizes[0])} messages)",
              "hosts", "slowdown (T/T1)", xs,
              common.series(st, cfgs, xs, key), hline=1.0, logy=True),
        Panel("T1: without it", "hosts",
              f"completion of {p.count} iterations (ms)", xs,
              common.series(t1, cfgs, xs, key))] + [
        Panel(f"the local job, {label}", "hosts",
              "its rate during / alone", xs,
              common.series(kept[d], cfgs, xs, key), hline=1.0)
        for d, _, _, label in DIRECTIONS if kept[d]])
    table = [[c] + [common.cell(t1.get((c, n)), 0) for n in xs] +
             [common.cell(st.get((c, n))) for n in xs] for c in cfgs]
    n = max(xs)
    head = (f"{NAME}: slowdown of {p.count} barrier iterations across {n} "
            f"hosts with a {kib(p.local_sizes[0])} local job between the "
            f"root and a host, median (min-max): " +
            ", ".join(f"{c} {common.cell(st.get((c, n)))}" for c in cfgs) +
            ".")
    heads = [head]
    if any(kept.values()):
        heads.append(
            f"{NAME}: the {kib(p.local_sizes[0])} local job's rate during "
            f"the barrier over its rate alone across {n} hosts, median "
            f"(min-max): " + "; ".join(
                f"{label}: " + ", ".join(
                    f"{c} {common.cell(kept[d].get((c, n)))}" for c in cfgs)
                for d, _, _, label in DIRECTIONS) + ".")
    local = [("The local job's cost", f"""\
Each of the local job's two streams: its rate (Mbit/s that the server
acknowledged) while the barrier ran, over its rate alone (the
{common.LOCAL_ALONE_S:g} s before), median over {p.reps} repetitions
(min-max): 1, the parallel job cost it nothing; 0, it stopped it.  Root
to h1 leaves through the root's scheduler beside the one-to-all
messages; h1 to root arrives through the switch port beside the
answers.

""" + common.md_table(
        ["scheduler"] + [f"{label}, {m} hosts"
                         for _, _, _, label in DIRECTIONS for m in xs],
        [[c] + [common.cell(kept[d].get((c, m)))
                for d, *_ in DIRECTIONS for m in xs] for c in cfgs]))] \
        if any(kept.values()) else []
    cpus = [("The CPUs and the packets", cpu_text(rows, cfgs, xs))]
    n4 = min(xs)
    idle = common.summarize(loaded, ("scheduler", "hosts"), "cpu_idle_pct")
    skb = common.summarize(loaded, ("scheduler", "hosts"), "port_skb_bytes")
    if idle:
        heads.append(
            f"{NAME}: the VM's CPUs idle while the barrier ran beside the "
            f"local job across {n4} hosts, median (min-max) %, and the mean "
            f"skb the switch port toward the root forwarded (bytes): " +
            ", ".join(f"{c} {common.cell(idle.get((c, n4)), 0)} % / "
                      f"{common.cell(skb.get((c, n4)), 0)} B" for c in cfgs)
            + ".")
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
{p.count} iterations of parq-bench's barrier (the root sends
{kib(p.parallel_sizes[0])} to every rank, each answers with as much; DSCP
EF) across {' and '.join(map(str, xs))} hosts joined by a switch, against
a local job (one bulk stream of {kib(p.local_sizes[0])} messages each way
between the root and one other host, DSCP 0).  Those two hosts send
through the scheduler under test behind a 100 Mbit/s bottleneck (the
others send only the parallel job's answers); the switch port toward the
root is a 100 Mbit/s FIFO of 300 kB.  `{common.PARQD}` is parq
with parqd, the root in the receiving role.  Slowdown: completion time
with the local job over T1 (without it), same configuration, same
repetition; medians over {p.reps} repetitions (min-max).
Documentation/experiments.md has the details.
""", [("Results", common.md_table(
        ["scheduler"] + [f"T1 (ms), {n} hosts" for n in xs] +
        [f"slowdown, {n} hosts" for n in xs], table))] + local +
        cpus + [("Headline", "\n\n".join(heads))])
    return heads


def cpu_text(rows, cfgs, xs):
    """The section on the VM's CPUs: their idle and softirq shares while
    the barrier ran, with the local job and without, and the size of the
    skbs the switch port toward the root forwarded."""
    def col(value, size):
        st = common.summarize([r for r in rows if bool(r["local_size"]) ==
                               size], ("scheduler", "hosts"), value)
        return {k: common.cell(v, 0) for k, v in st.items()}
    cols = [("idle %, alone", col("cpu_idle_pct", False)),
            ("idle %, with the local job", col("cpu_idle_pct", True)),
            ("softirq %, with it", col("cpu_softirq_pct", True)),
            ("port skb (B), with it", col("port_skb_bytes", True))]
    return """\
All the hosts are namespaces of one VM with 2 vCPUs under QEMU/TCG.
Idle and softirq: the shares of both CPUs' time while the barrier ran
(/proc/stat sampled every 20 ms), median over the repetitions (min-max).
Port skb: the bytes over the skbs that the switch port toward the root
sent during the step (the local job alone, then beside the barrier): a
GSO packet is one skb. Schedulers that split GSO packets (parq, cake)
send the local job as MTU-sized packets, each of which every namespace
on its path handles on the same two CPUs; the others pass TCP's GSO
packets whole.

""" + common.md_table(
        ["scheduler"] + [f"{h}, {n} hosts" for h, _ in cols for n in xs],
        [[c] + [v.get((c, n), "-") for _, v in cols for n in xs]
         for c in cfgs])


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
