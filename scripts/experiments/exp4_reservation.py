#!/usr/bin/python3
"""Experiment 4, reservations, as seed 002's figure 13: two applications
with different reserved rates on one host, at once, beside background
bulk flows; each application's time against its time alone.

Namespaces A and B (netns.Topology), the scheduler under test on A's veth
behind a 100 Mbit/s bottleneck (as in experiment 1).  Each application
exchanges 64 KiB messages with its own parq-bench server on B (A1 on port
7000, A2 on 7001, DSCP 0), each answered by 32 bytes: a stream that lives
by its rate, each message 28 ms at A1's reservation, so that the
per-message cost of the round trip (0.3-0.5 ms under QEMU/TCG, where a
16 KiB message takes 7 ms) does not stand in for the scheduler.  A1
reserves 20 Mbit/s and sends p.count messages, A2 10 Mbit/s and half as
many: 2.6 s each at its rate.  Their shares: under parq a reserved class
each; under prio and ets a filter putting both in the strict band (the
closest those schedulers come to a guarantee), under cake (diffserv4) a
filter putting both in its Voice tin (a quarter of the rate before it
yields); pfifo and fq_codel have no way to express one.  Background:
p.background parq-bench bulk flows (16 KiB messages) from A to B.

Each step measures one application in one condition: alone; beside the
background; beside the background and the other application (its
exchange kept running for the whole step: seed 002's figure 13).
Figure: each one's completion time over its time alone, same scheduler,
same repetition; parq's must stay within 5% in every condition.

    scripts/experiments/exp4_reservation.py [--quick] [--out DIR]
"""
import sys
import time
from contextlib import contextmanager, nullcontext
from types import SimpleNamespace
from typing import NamedTuple

import common
from common import Panel, Params, Step, kib
from parqlab import bench, scenarios
from parqlab import tc as tclib
from parqlab.netns import Topology

NAME = "exp4"
TITLE = "Experiment 4: two reservations at once (seed 002, Fig. 13)"
APP_SIZE = 65536
BULK_SIZE = 16384


class App(NamedTuple):
    port: int		# its server's on B
    mbit: int		# its reservation
    classid: str  # parq's reserved class
    divisor: int  # it sends p.count // divisor messages


APPS = {"a1": App(7000, 20, "1:16", 1), "a2": App(7001, 10, "1:17", 2)}
CONDITIONS = ("alone", "background", "together")
BOUND = 1.05			# parq: within 5% of the application alone
# What the other application's exchange sends at most: it runs until the
# step stops it (the slowest step, pfifo's, takes about 25 s).
OTHER_COUNT = 100000
PARAMS = {
    "full": Params(reps=3),
    "quick": Params(reps=2),
    "smoke": Params(reps=1, count=20, schedulers=("pfifo", "parq"),
                    background=2),
}
FIELDS = ["rep", "scheduler", "app", "condition", "reserved_mbit",
          "completion_ms", "rate_mbit", "mean_us", "p99_us", "slowdown",
          "local_alone_mbit", "local_mbit", "local_kept"]


def count(p, app):
    return max(1, p.count // APPS[app].divisor)


def steps(p):
    out = []
    for rep in range(1, p.reps + 1):
        for cfg in p.schedulers:
            for app in APPS:
                for cond in CONDITIONS:
                    est = 3.0 + (p.background if cond != "alone" else 0)
                    out.append(Step(
                        f"{NAME} {cfg} {app} {cond} rep {rep}/{p.reps}",
                        est, common.measuring(cfg, app, cond),
                        {"rep": rep, "scheduler": cfg, "app": app,
                         "condition": cond,
                         "reserved_mbit": APPS[app].mbit}))
    return out


def reserve(ns, dev, cfg):
    """Each application's share, where scheduler @cfg can express one."""
    def to(port, flowid):
        tclib.tc(ns, "filter", "add", "dev", dev, "parent", flowid.split(
            ":")[0] + ":", "protocol", "ip", "prio", "1", "u32", "match",
            "ip", "dport", str(port), "0xffff", "flowid", flowid)
    for a in APPS.values():
        if cfg == "parq":
            tclib.tc(ns, "class", "add", "dev", dev, "parent", "1:",
                     "classid", a.classid, "parq", "rate", f"{a.mbit}mbit")
            to(a.port, a.classid)
        elif cfg in ("prio", "ets"):
            to(a.port, "10:1")
        elif cfg == "cake":
            # cake takes the tin from the packet's priority (its handle
            # and the tin); a filter's classid would choose a flow queue.
            tclib.tc(ns, "filter", "add", "dev", dev, "parent", "10:",
                     "protocol", "ip", "prio", "1", "u32", "match", "ip",
                     "dport", str(a.port), "0xffff", "action", "skbedit",
                     "priority", f"10:{scenarios.CAKE_VOICE}")


@contextmanager
def lab(p, group=None):
    with Topology(NAME) as topo:
        prefix = common.probe_prefix(topo.a)
        ip = topo.ip_b()
        with bench.Server(topo.b, ip, APPS["a1"].port, prefix=prefix), \
                bench.Server(topo.b, ip, APPS["a2"].port, prefix=prefix), \
                bench.Server(topo.b, ip, common.BULK_PORT), \
                common.Configurations([(topo.a, topo.dev_a())],
                                      extra=reserve) as confs:
            yield SimpleNamespace(measure=lambda cfg, app, cond: _measure(
                topo, confs, prefix, p, cfg, app, cond))


@contextmanager
def other_app(ns, peer, p, prefix):
    """The other application's exchange, running for the whole body."""
    job = bench.Exchange(ns, peer, size=APP_SIZE, count=OTHER_COUNT,
                         prefix=prefix)
    try:
        time.sleep(p.settle)
        if not job.is_alive():
            raise AssertionError("the other application's exchange ended "
                                 "before the measurement")
        yield
        if not job.is_alive():
            raise AssertionError("the other application's exchange ended "
                                 "during the measurement")
    finally:
        job.stop()


def _measure(topo, confs, prefix, p, cfg, app, cond):
    a, ip = topo.a, topo.ip_b()
    other = next(k for k in APPS if k != app)
    confs.use(cfg)
    n = 0 if cond == "alone" else p.background
    together = other_app(a, f"{ip}:{APPS[other].port}", p, prefix) \
        if cond == "together" else nullcontext()
    background = common.local_job(a, f"{ip}:{common.BULK_PORT}", BULK_SIZE,
                                  p, streams=n,
                                  progress_ms=common.LOCAL_PROGRESS_LONG_MS)
    with background as meter, together:
        res = bench.exchange(a, f"{ip}:{APPS[app].port}", size=APP_SIZE,
                             count=count(p, app), prefix=prefix)
        row = common.figures(res)
        if meter:
            meter.add(row)
    row["rate_mbit"] = count(p, app) * APP_SIZE * 8 / \
        (row["completion_ms"] * 1e3)
    return [row]


def verdict(stat):
    return "-" if stat is None else \
        ("yes" if stat[0] <= BOUND else "no")


def _worst(sd, cfg):
    """The largest median ratio of @cfg over the applications and the
    conditions with company."""
    stats = [sd[(cfg, app, c)] for app in APPS for c in CONDITIONS[1:]
             if (cfg, app, c) in sd]
    return max(stats, key=lambda s: s[0]) if stats else None


def report(rows, p, out):
    common.add_slowdowns(rows, ("scheduler", "app", "rep"),
                         lambda r: r["condition"] == "alone")
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    keys = ("scheduler", "app", "condition")
    ct = common.summarize(rows, keys, "completion_ms")
    rt = common.summarize(rows, keys, "rate_mbit")
    sd = common.summarize(rows, keys)
    kept = common.summarize(rows, keys, "local_kept")
    cfgs, n = list(p.schedulers), p.background
    conds = list(CONDITIONS)
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel(f"{app.upper()}: {APPS[app].mbit} Mbit/s reserved",
              f"condition ({n} background flows)",
              "T / T(alone)", conds,
              common.series(sd, cfgs, conds,
                            lambda c, x, app=app: (c, app, x)),
              hline=BOUND, logy=True)
        for app in APPS] + [
        Panel(f"the background beside {app.upper()}",
              f"condition ({n} background flows)",
              "its rate during / alone", conds[1:],
              common.series(kept, cfgs, conds[1:],
                            lambda c, x, app=app: (c, app, x)), hline=1.0)
        for app in APPS if kept])
    sections = []
    for app, a in APPS.items():
        table = [[c] + [common.cell(ct.get((c, app, x)), 0) for x in conds]
                 + [common.cell(rt.get((c, app, x)), 1) for x in conds]
                 + [common.cell(sd.get((c, app, x))) for x in conds[1:]]
                 for c in cfgs]
        sections.append((
            f"{app.upper()}: {count(p, app)} messages, {a.mbit} Mbit/s "
            "reserved", common.md_table(
                ["scheduler"] + [f"T (ms), {x}" for x in conds] +
                [f"Mbit/s, {x}" for x in conds] +
                [f"T/T(alone), {x}" for x in conds[1:]], table)))
    if kept:
        sections.append(("The background's cost", f"""\
The background flows' rate (Mbit/s that the server acknowledged, summed)
while the application's exchange ran, over their rate alone (the
{common.LOCAL_ALONE_S:g} s before; in "together", before the other
application started), median (min-max): 1, the applications cost it
nothing.  The two applications together send at most 30 Mbit/s of the
100 under parq (their reservations), more under the others.

""" + common.md_table(
            ["scheduler"] + [f"beside {app.upper()}, {x}" for app in APPS
                             for x in conds[1:]],
            [[c] + [common.cell(kept.get((c, app, x))) for app in APPS
                    for x in conds[1:]] for c in cfgs])))
    verdicts = common.md_table(
        ["scheduler", f"every ratio within {BOUND - 1:.0%}"],
        [[c, verdict(_worst(sd, c))] for c in cfgs])

    def together(app):
        return ", ".join(f"{c} {common.cell(sd.get((c, app, 'together')))}"
                         for c in cfgs)
    head = (f"{NAME}: each application's time beside the other and {n} "
            f"background flows over its time alone, median (min-max): " +
            "; ".join(f"{app.upper()} ({a.mbit} Mbit/s) {together(app)}"
                      for app, a in APPS.items()) +
            f"; parq within {BOUND - 1:.0%}: "
            f"{verdict(_worst(sd, 'parq'))}.")
    heads = [head]
    if kept:
        heads.append(
            f"{NAME}: the {n} background flows' rate while both "
            f"applications ran (A1's exchange beside A2's) over their rate "
            f"alone, median (min-max): " + ", ".join(
                f"{c} {common.cell(kept.get((c, 'a1', 'together')))}"
                for c in cfgs) + ".")
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
Two applications on host A exchange 64 KiB messages with servers on B
(each answered by 32 bytes, DSCP 0): A1 {count(p, 'a1')} messages with
{APPS['a1'].mbit} Mbit/s reserved, A2 {count(p, 'a2')} with
{APPS['a2'].mbit} Mbit/s.  Each is measured alone, beside {n} background
bulk flows ({kib(BULK_SIZE)} messages, DSCP 0), and beside those and the
other application's exchange, which runs for the whole step (seed 002's
figure 13).  Everything leaves A through one interface behind a 100
Mbit/s bottleneck.  parq gives each application a reserved class of its
rate (so alone it is slower than under the baselines, which let it use
the whole link); prio and ets put both in their strict band, cake both
in its Voice tin; pfifo and fq_codel cannot single them out.  Medians
over {p.reps} repetitions (min-max); each ratio is to the application
alone, same scheduler and repetition.  "Within {BOUND - 1:.0%}": every
median ratio is at most {BOUND}.  Documentation/experiments.md has the
details.
""", sections + [("Verdict", verdicts),
                 ("Headline", "\n\n".join(heads))])
    return heads


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
