#!/usr/bin/python3
"""Experiment 4, reservations: an application with a reserved rate runs
its exchange while 0, 2 and 3 background bulk flows share its host's
interface.

Namespaces A and B (netns.Topology), the scheduler under test on A's veth
behind a 100 Mbit/s bottleneck (as in experiment 1).  The application: 100
messages of 64 KiB from A to a parq-bench server on B (port APP_PORT,
DSCP 0), each answered by 32 bytes: a stream that lives by its rate, each
message 28 ms at the reservation, so that the per-message cost of the
round trip (0.3-0.5 ms under QEMU/TCG, where a 16 KiB message takes 7 ms)
does not stand in for the scheduler.  Its share: under parq a reserved
class of RESERVED_MBIT (20 Mbit/s); under prio and ets, a filter putting it in
the strict band (the closest those schedulers come to a guarantee),
under cake (diffserv4) a filter putting it in its Voice tin (a quarter
of the rate before it yields); pfifo and fq_codel have no way to express
one.  The background: 2 or 3
parq-bench bulk flows (16 KiB messages) from A to B.  Figure: the
exchange's completion time, and its ratio to the run without background,
same scheduler, same repetition; parq's must stay within 5%.

    scripts/experiments/exp4_reservation.py [--quick] [--out DIR]
"""
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import common
from common import Panel, Params, Step, kib
from parqlab import bench, scenarios
from parqlab import tc as tclib
from parqlab.netns import Topology

NAME = "exp4"
TITLE = "Experiment 4: reservations"
APP_PORT = 7000
APP_SIZE = 65536
RESERVED_MBIT = 20
BULK_SIZE = 16384
BOUND = 1.05			# parq: within 5% of the run without background
PARAMS = {
    "full": Params(),
    "quick": Params(reps=2),
    "smoke": Params(reps=1, count=20, schedulers=("pfifo", "parq"),
                    background=(0, 2)),
}
FIELDS = ["rep", "scheduler", "background", "completion_ms", "mean_us",
          "p99_us", "slowdown"]


def steps(p):
    out = []
    for rep in range(1, p.reps + 1):
        for cfg in p.schedulers:
            for n in p.background:
                out.append(Step(
                    f"{NAME} {cfg} background={n} rep {rep}/{p.reps}",
                    3.0 + n, common.measuring(cfg, n),
                    {"rep": rep, "scheduler": cfg, "background": n}))
    return out


def reserve(ns, dev, cfg):
    """The application's share, where scheduler @cfg can express one."""
    def to(flowid):
        tclib.tc(ns, "filter", "add", "dev", dev, "parent", flowid.split(
            ":")[0] + ":", "protocol", "ip", "prio", "1", "u32", "match",
            "ip", "dport", str(APP_PORT), "0xffff", "flowid", flowid)
    if cfg == "parq":
        tclib.tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid",
                 "1:16", "parq", "rate", f"{RESERVED_MBIT}mbit")
        to("1:16")
    elif cfg in ("prio", "ets"):
        to("10:1")
    elif cfg == "cake":
        # cake takes the tin from the packet's priority (its handle and
        # the tin); a filter's classid would choose a flow queue.
        tclib.tc(ns, "filter", "add", "dev", dev, "parent", "10:",
                 "protocol", "ip", "prio", "1", "u32", "match", "ip",
                 "dport", str(APP_PORT), "0xffff", "action", "skbedit",
                 "priority", f"10:{scenarios.CAKE_VOICE}")


@contextmanager
def lab(p, group=None):
    with Topology(NAME) as topo:
        prefix = common.probe_prefix(topo.a)
        ip = topo.ip_b()
        with bench.Server(topo.b, ip, APP_PORT, prefix=prefix), \
                bench.Server(topo.b, ip, common.BULK_PORT), \
                common.Configurations([(topo.a, topo.dev_a())],
                                      extra=reserve) as confs:
            yield SimpleNamespace(measure=lambda cfg, n: _measure(
                topo, confs, prefix, p, cfg, n))


def _measure(topo, confs, prefix, p, cfg, n):
    a, ip = topo.a, topo.ip_b()
    confs.use(cfg)
    with common.local_job(a, f"{ip}:{common.BULK_PORT}", BULK_SIZE, p,
                          streams=n):
        res = bench.exchange(a, f"{ip}:{APP_PORT}", size=APP_SIZE,
                             count=p.count, prefix=prefix)
    return [common.figures(res)]


def verdict(stat):
    return "-" if stat is None else \
        ("yes" if stat[0] <= BOUND else "no")


def report(rows, p, out):
    common.add_slowdowns(rows, ("scheduler", "rep"),
                         lambda r: r["background"] == 0)
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    ct = common.summarize(rows, ("scheduler", "background"), "completion_ms")
    sd = common.summarize(rows, ("scheduler", "background"))
    xs, cfgs = list(p.background), list(p.schedulers)
    key = (lambda c, n: (c, n))
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel("the application's exchange", "background bulk flows",
              f"completion of {p.count} messages (ms)", xs,
              common.series(ct, cfgs, xs, key), logy=True),
        Panel("against no background", "background bulk flows",
              "T / T(0 flows)", xs, common.series(sd, cfgs, xs, key),
              hline=BOUND, logy=True)])
    worst = max(xs)
    table = [[c] + [common.cell(ct.get((c, n)), 0) for n in xs] +
             [common.cell(sd.get((c, n))) for n in xs if n] +
             [verdict(_worst(sd, c, xs))] for c in cfgs]
    head = (f"{NAME}: completion time of the application's exchange with "
            f"{worst} background flows over that without, median (min-max):"
            " " + ", ".join(f"{c} {common.cell(sd.get((c, worst)))}"
                            for c in cfgs) +
            f"; parq within {BOUND - 1:.0%}: "
            f"{verdict(_worst(sd, 'parq', xs))}.")
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
An application on host A exchanges {p.count} messages of {kib(APP_SIZE)}
with a server on B (each answered by 32 bytes, DSCP 0) while 0 to
{worst} background bulk flows ({kib(BULK_SIZE)} messages, DSCP 0) leave A
through the same interface, behind a 100 Mbit/s bottleneck.  parq gives
the application a reserved class of {RESERVED_MBIT} Mbit/s (so without
background it is slower than under the baselines, which let it use the
whole link); prio and ets put it in their strict band, cake in its Voice
tin; pfifo and fq_codel
cannot single it out.  Medians over {p.reps} repetitions (min-max); the
ratio is to the run without background of the same scheduler and
repetition.  "Within
{BOUND - 1:.0%}": the largest median ratio is at most {BOUND}.
Documentation/experiments.md has the details.
""", [("Results", common.md_table(
        ["scheduler"] + [f"T (ms), {n} flows" for n in xs] +
        [f"T/T(0), {n} flows" for n in xs if n] +
        [f"within {BOUND - 1:.0%}"], table)),
          ("Headline", head)])
    return [head]


def _worst(sd, cfg, xs):
    """The largest median ratio of @cfg over the background counts."""
    stats = [sd[(cfg, n)] for n in xs if n and (cfg, n) in sd]
    return max(stats, key=lambda s: s[0]) if stats else None


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
