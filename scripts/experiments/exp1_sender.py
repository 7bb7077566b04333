#!/usr/bin/python3
"""Experiment 1, the sending side: a parallel job and a local job on one
host share its 100 Mbit/s interface.

Namespaces A and B joined by one veth pair (netns.Topology); the scheduler
under test on A's veth behind a 100 Mbit/s bottleneck (parq's own shaper;
an htb class above each baseline).  The parallel job: exchanges of 100
messages of 64 B and of 2 KiB from A to a parq-bench server on B, DSCP EF
(each message waits for the server's 32-byte reply).  The local job: a
parq-bench bulk stream from A to B with 2, 4, 8 or 16 KiB messages,
DSCP 0.  Slowdown: the exchange's completion time with the local job over
the same without it (sweep.py).

    scripts/experiments/exp1_sender.py [--quick] [--out DIR]
"""
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import common
import sweep

NAME = "exp1"
TITLE = "Experiment 1: sending side"
PARAMS = sweep.presets(smoke_schedulers=("pfifo", "parq"))
INTRO = """\
A parallel job (exchanges of {count} messages of {psizes}, DSCP EF, each
answered by a 32-byte reply) and a local job (one parq-bench bulk stream
of {lsizes} messages, DSCP 0) leave host A through one interface with a
100 Mbit/s bottleneck: parq's shaper, or an htb class above each baseline
(pfifo, prio and ets with the parallel job in their strict band,
fq_codel), or cake's own shaper (diffserv4: EF in its Voice tin).
T1: the exchange alone; slowdown: with the local job over T1, same
scheduler, same repetition.  Documentation/experiments.md has the
details.
"""


def steps(p):
    def est(cfg, local):
        return 6.0 if local else 4.0
    return sweep.steps(NAME, p, common.configurations(p), est)


@contextmanager
def lab(p, group=None):
    with common.sender_lab(NAME) as (topo, confs, prefix):
        yield SimpleNamespace(measure=lambda cfg, local: _measure(
            topo, confs, prefix, p, cfg, local))


def _measure(topo, confs, prefix, p, cfg, local):
    a, ip = topo.a, topo.ip_b()
    confs.use(cfg)
    with common.local_job(a, f"{ip}:{common.BULK_PORT}", local,
                          p) as meter:
        rows = [dict(parallel_size=ps, **common.in_parq(
            a, topo.dev_a(), lambda ps=ps: common.exchange(
                a, f"{ip}:{common.PAR_PORT}", ps, p.count, prefix)))
                for ps in p.parallel_sizes]
        rows = common.with_timer(a, prefix, rows)
        return [meter.add(r) for r in rows] if meter else rows


def report(rows, p, out):
    return sweep.report(NAME, TITLE, rows, p, common.configurations(p), out,
                        INTRO)


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
