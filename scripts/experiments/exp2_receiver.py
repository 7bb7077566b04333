#!/usr/bin/python3
"""Experiment 2, the receiving side: a parallel job on host P and a local
job on host L send to one receiver R through a switch whose port toward R
is a FIFO.

Three hosts joined through a switch namespace (netns.Star); the switch's
port toward R is a 100 Mbit/s FIFO of 300 kB (tbf, 24 ms).  The scheduler
under test is the root qdisc of P's and L's interfaces, without a shaper:
the queue forms at the switch, which no sender-side scheduler controls.
The last configuration is parq with parqd on all three hosts (R in the
receiving role, as in selftests/parq_receiver.py), which holds L back
while parallel traffic arrives at R.  Workloads and slowdown as in
experiment 1 (sweep.py), the parallel job from P, the local job from L.

    scripts/experiments/exp2_receiver.py [--quick] [--out DIR]
"""
import sys
import tempfile
from contextlib import contextmanager
from types import SimpleNamespace

import common
import sweep
from parqlab import bench
from parqlab.netns import Star

NAME = "exp2"
TITLE = "Experiment 2: receiving side"
PARAMS = sweep.presets(smoke_schedulers=("parq",))
INTRO = """\
A parallel job on host P (exchanges of {count} messages of {psizes},
DSCP EF, each answered by a 32-byte reply) and a local job on host L (one
parq-bench bulk stream of {lsizes} messages, DSCP 0) both send to host R
through a switch whose port toward R is a 100 Mbit/s FIFO of 300 kB (tbf).
P and L run the scheduler under test without a shaper; `{parqd}` is parq
with parqd on the three hosts, R in the receiving role.  T1: the exchange
alone; slowdown: with the local job over T1, same configuration, same
repetition.  Documentation/experiments.md has the details.
"""


def configs(p):
    return common.configurations(p, with_parqd=True)


def steps(p):
    def est(cfg, local, kind):
        return (6.5 if local else 4.0) + (1.0 if cfg == common.PARQD else 0)
    return sweep.steps(NAME, p, configs(p), est)


@contextmanager
def lab(p, group=None):
    with Star(NAME, hosts=("p", "l", "r")) as star, \
            tempfile.TemporaryDirectory(prefix="parq-exp2-") as tmp:
        common.switch_fifo(star, "r")
        prefix = common.probe_prefix(star.ns["p"])
        r, ip = star.ns["r"], star.ip("r")
        cluster = common.receivers_cluster(star, ["r"], tmp)
        senders = [(star.ns[h], "eth0") for h in ("p", "l")]
        with bench.Server(r, ip, common.PAR_PORT, tos=common.EF,
                          prefix=prefix), \
                bench.Server(r, ip, common.BULK_PORT), \
                common.Configurations(senders, rate=None,
                                      cluster=cluster) as confs:
            yield SimpleNamespace(measure=lambda cfg, local, kind: _measure(
                star, confs, prefix, p, cfg, local))


def _measure(star, confs, prefix, p, cfg, local):
    ip = star.ip("r")
    confs.use(cfg)

    def measure():
        rows = [dict(parallel_size=ps,
                     **common.exchange(star.ns["p"],
                                       f"{ip}:{common.PAR_PORT}", ps,
                                       p.count, prefix))
                for ps in p.parallel_sizes]
        return [meter.add(r) for r in rows] if meter else rows
    with common.local_job(star.ns["l"], f"{ip}:{common.BULK_PORT}", local,
                          p) as meter:
        return common.with_grants(confs, ["r"], measure)


def report(rows, p, out):
    return sweep.report(NAME, TITLE, rows, p, configs(p), out, INTRO)


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
