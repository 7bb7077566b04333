#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq bandwidth shares under saturation (THRESHOLD_send).

parq shapes A's veth to 100 Mbit/s; two bulk TCP transfers from A to B keep
both classes backlogged: parallel = iperf3 -P 4 with DSCP EF (-S 0xb8),
local = iperf3 -P 4 without.  After a 2 s warm-up the class byte counters
are read twice, 2 s apart (the method of the net/forwarding sch_ets tests):
25 MB at 100 Mbit/s, some 16 000 packets, of which the rule's rounding
at either end of the interval moves a few: the shares are exact to far
better than the tolerance (2 points: over 300 packets).
With threshold N the parallel class sends N units for every local unit, so:
  unit bytes,   N = 1:   local byte share 1/2  (+- 2 points)
  unit bytes,   N = 4:   local byte share 1/5  (+- 2 points)
  unit bytes,   N = inf: local byte share < 1% (strict priority)
  unit packets, N = 4:   local packet share 1/5 (+- 2 points)
Each configuration is measured three times and the median is judged; all
values are printed, with the smallest queue length seen in each class
(sampled every half second).  A run in which a class ran empty did not
measure the rule (the other class may then take everything); it is
reported and replaced, at most twice.
"""
import statistics
import sys

from parqlab import ktap, lab
from parqlab.ktap import check, diag
from parqlab.tc import tc
from parqlab.traffic import (TOS_EF, Iperf3Client, Iperf3Server,
                             sample_classes)

RATE = "100mbit"
WARMUP = 2
INTERVAL = 2
RUNS = 3
MAX_ATTEMPTS = 5
TOL = 0.02
PAR, LOC = "1:1", "1:2"
PORT_PAR, PORT_LOC = 5201, 5202
BACKLOGGED = "iperf3 must keep both classes backlogged at 100 Mbit/s"


def measure(env, threshold, unit):
    """One run: both classes saturated; returns the Sample."""
    a, dev, topo = env.a, env.dev, env.topo
    tc(a, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "parq",
       "rate", RATE, "threshold", threshold, "unit", unit)
    servers = [Iperf3Server(topo.b, topo.ip_b(), PORT_PAR),
               Iperf3Server(topo.b, topo.ip_b(), PORT_LOC)]
    secs = WARMUP + INTERVAL + 10
    clients = [Iperf3Client(a, topo.ip_b(), PORT_PAR, secs, parallel=4,
                            tos=TOS_EF),
               Iperf3Client(a, topo.ip_b(), PORT_LOC, secs, parallel=4)]
    try:
        s = sample_classes(a, dev, WARMUP, INTERVAL, qlen_every=0.5)
        for c in clients:
            c.check_running("early")
    finally:
        for c in clients:
            c.stop()
        for srv in servers:
            srv.stop()
        tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    return s


def share_case(threshold, unit, key, want=None, below=None):
    def fn(env):
        shares = []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            s = measure(env, threshold, unit)
            share = s.share(LOC, key)
            par, loc = s.rate_bps(PAR) / 1e6, s.rate_bps(LOC) / 1e6
            mq_par, mq_loc = s.min_qlen(PAR), s.min_qlen(LOC)
            # A share is only enforced while both classes have packets
            # queued (with inf: local waiting behind parallel).  A run in
            # which a class ran empty in a sample is not a measurement of
            # the rule; it is reported and replaced by another run.
            valid = bool(mq_par) and bool(mq_loc)
            diag(f"run {attempt}: local {key} share {share * 100:.2f}% "
                 f"(parallel {par:.1f} Mbit/s, local {loc:.1f} Mbit/s, "
                 f"total {par + loc:.1f} of {RATE}; min qlen parallel "
                 f"{mq_par} local {mq_loc}; {s.dt:.1f}s)"
                 f"{'' if valid else ' -- a class ran empty: run void'}")
            if valid:
                shares.append(share)
            if len(shares) == RUNS:
                break
        check(len(shares) == RUNS,
              f"only {len(shares)} of {MAX_ATTEMPTS} runs kept both classes "
              f"backlogged")
        med = statistics.median(shares)
        if want is not None:
            diag(f"median local {key} share {med * 100:.2f}% of "
                 f"{', '.join(f'{x * 100:.2f}' for x in shares)}; want "
                 f"{want * 100:.2f}% +- {TOL * 100:.0f} points")
            ktap.check_within(med, want, TOL, f"local {key} share")
        else:
            diag(f"median local {key} share {med * 100:.3f}% of "
                 f"{', '.join(f'{x * 100:.3f}' for x in shares)}; want < "
                 f"{below * 100:.0f}%")
            ktap.check_le(med, below, f"local {key} share")
    return fn


def main():
    suite = ktap.Suite("parq_share")
    suite.case("threshold 1 bytes: local share 1/2",
               share_case(1, "bytes", "bytes", want=1 / 2),
               speed=BACKLOGGED)
    suite.case("threshold 4 bytes: local share 1/5",
               share_case(4, "bytes", "bytes", want=1 / 5),
               speed=BACKLOGGED)
    suite.case("threshold inf: local share < 1%",
               share_case("inf", "bytes", "bytes", below=0.01),
               speed=BACKLOGGED)
    suite.case("threshold 4 packets: local packet share 1/5",
               share_case(4, "packets", "packets", want=1 / 5),
               speed=BACKLOGGED)
    return lab.run(suite, "shr", tools=("iperf3",))


if __name__ == "__main__":
    sys.exit(main())
