#!/usr/bin/python3
"""Experiment 1, the sending side: a parallel job and a local job on one
host share its 100 Mbit/s interface.

Namespaces A and B joined by one veth pair (netns.Topology); the scheduler
under test on A's veth behind a 100 Mbit/s bottleneck (parq's own shaper;
an htb class above each baseline).  The parallel job: exchanges of 100
messages of 64 B and of 2 KiB from A to a parq-bench server on B, DSCP EF
(each message waits for the server's 32-byte reply).  The local job, DSCP
0: 2, 4, 8 or 16 KiB messages from A to B at 500 a second, each answered
(common.MessageMeter: its cost is its round trips beside the parallel job
against alone), and in one more column a parq-bench bulk stream of 16 KiB
messages (common.LocalMeter: its rate).  Slowdown: the exchange's
completion time with the local job over the same without it (sweep.py).

    scripts/experiments/exp1_sender.py [--quick] [--out DIR]
"""
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import common
import sweep
from parqlab import scenarios

NAME = "exp1"
TITLE = "Experiment 1: sending side"
# The smoke run (make check's) takes fq too where it has bands (6.12).
SMOKE = ("pfifo", *(("fq",) if "fq" in scenarios.ALL_SCHEDULERS else ()),
         "parq")
PARAMS = sweep.presets(smoke_schedulers=SMOKE, local_kind=common.MESSAGES,
                       local_bulk=16384)
INTRO = """\
A parallel job (exchanges of {count} messages of {psizes}, DSCP EF, each
answered by a 32-byte reply) and a local job (DSCP 0: {lsizes} messages
at {rate} a second, each answered by 32 bytes, or one parq-bench bulk
stream of {bulk} messages) leave host A through one interface with a
100 Mbit/s bottleneck: parq's shaper, or an htb class above each baseline
(pfifo, prio and ets with the parallel job in their strict band,
fq_codel, and on Linux 6.7 and later fq with the parallel job in the high
one of its three bands), or cake's own shaper (diffserv4: EF in its Voice
tin).
T1: the exchange alone; slowdown: with the local job over T1, same
scheduler, same repetition.  Documentation/experiments.md has the
details.
"""


def steps(p):
    def est(cfg, local, kind):
        return (8.0 if kind == common.MESSAGES else 6.0) if local else 4.0
    return sweep.steps(NAME, p, common.configurations(p), est)


@contextmanager
def lab(p, group=None):
    with common.sender_lab(NAME) as (topo, confs, prefix):
        yield SimpleNamespace(measure=lambda cfg, local, kind: _measure(
            topo, confs, prefix, p, cfg, local, kind))


def _measure(topo, confs, prefix, p, cfg, local, kind):
    a, ip = topo.a, topo.ip_b()
    par, sink = f"{ip}:{common.PAR_PORT}", f"{ip}:{common.BULK_PORT}"
    confs.use(cfg)

    def exchanges():
        rows = [dict(parallel_size=ps, **common.in_parq(
            a, topo.dev_a(), lambda ps=ps: common.exchange(
                a, par, ps, p.count, prefix)))
                for ps in p.parallel_sizes]
        return common.with_timer(a, prefix, rows)
    if kind != common.MESSAGES:
        with common.local_job(a, sink, local, p) as meter:
            rows = exchanges()
            return [meter.add(r) for r in rows] if meter else rows
    meter = common.MessageMeter(a, sink, local)
    with common.background(a, sink, p.settle, size=local,
                           interval_us=common.LOCAL_MSG_INTERVAL_US):
        rows = exchanges()
    return [meter.add(r, lambda r=r: common.background(
        a, par, p.settle, size=r["parallel_size"], tos=common.EF,
        prefix=prefix)) for r in rows]


def report(rows, p, out):
    return sweep.report(NAME, TITLE, rows, p, common.configurations(p), out,
                        INTRO)


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
