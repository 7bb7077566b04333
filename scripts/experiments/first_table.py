"""The demo's first table: what parq does on the sending host.

A parallel job's small messages and a local job's bulk transfer leave host
A through one 100 Mbit/s interface (namespaces A and B, common.sender_lab:
parq's own shaper, an htb class above pfifo and fq_codel, cake's own
shaper).  The parallel job: exchanges of COUNT messages of 64 bytes, DSCP
EF, each waiting for the server's 32-byte reply before the next is sent,
as the steps of a parallel program wait for each other (parq-bench
one-to-one, closed loop; pinned to one CPU at real-time priority, as in
experiment 1).  Its figure is the time an exchange takes over COUNT: the
mean round trip that a chain of dependent messages sees.  The local job:
one parq-bench bulk stream of 16 KiB messages, DSCP 0, started
SETTLE_S before the exchange.

Why not the p99 of a ping-pong's samples: a ping-pong takes one sample per
round trip, so it samples the calm moments far more often than the
congested ones (while a FIFO holds 40 ms of bulk data it takes one sample,
while the FIFO is empty hundreds), and where the queue comes and goes
(several TCP streams served by one iperf3 thread, on a busy 2-CPU machine)
the p99 of its samples can lie near the idle one.  The time a whole chain
of exchanges takes counts every moment as it is.

Every configuration is measured once per round, the rounds in turn, so
that a slow phase of the machine hits all of them; the table gives the
median over the rounds, and the verdict compares parq with each baseline
within each round (the median of those ratios): parq's round trip under
load is expected MARGIN[baseline] times below pfifo's and fq_codel's, and
the table says where it stands against cake.
"""
import statistics
import time

import common
from parqlab import bench

SCHEDULERS = ("pfifo", "fq_codel", "cake", "parq")
IDLE = "idle"				# parq, the parallel job alone
SIZE = 64
COUNT = 200
LOCAL_SIZE = 16384
LOCAL_PROGRESS_MS = 50
SETTLE_S = 1.0				# the local job alone before the exchange
# How far below each baseline parq's round trip under load must be (the
# median over the rounds of the ratio within each round).  pfifo: the
# message waits for the whole queue the bulk stream keeps (tens of ms at
# 100 Mbit/s, against about 1 ms under parq).  fq_codel serves a sparse
# flow first, but not inside a GSO packet: behind htb at 100 Mbit/s the
# message waits for the rest of the bulk stream's packet being sent (TCP
# sizes them to about a millisecond of its rate, up to 64 KB: 5 ms), and a
# chain of dependent messages is not sparse for long; parq splits GSO
# packets and waits for at most one frame (121 us) plus its timer's slack.
# Measured in the VM (2 emulated CPUs), medians of 3 rounds: pfifo 7.8 to
# 13.7 times parq's, fq_codel 2.1 to 3.2 times (a parq that does no better
# than fq_codel: 0.8).
MARGIN = {"pfifo": 3.0, "fq_codel": 1.25}


def measure_one(topo, confs, prefix, name):
    """One configuration once: {"rtt_us" (an exchange's time over COUNT),
    "local_mbit" (None for IDLE)}."""
    a, ip = topo.a, topo.ip_b()
    confs.use("parq" if name == IDLE else name)

    def exchange():
        res = common.exchange(a, f"{ip}:{common.PAR_PORT}", SIZE, COUNT,
                              prefix)
        return res, {"rtt_us": res["completion_ms"] * 1e3 / COUNT}

    if name == IDLE:
        return dict(exchange()[1], local_mbit=None)
    sink = f"{ip}:{common.BULK_PORT}"
    with bench.Bulk(a, sink, LOCAL_SIZE,
                    progress_ms=LOCAL_PROGRESS_MS) as job:
        time.sleep(SETTLE_S)
        job.first_ns()
        job.check_running("before the exchange")
        res, row = exchange()
        job.check_running("during the exchange")
        row["local_mbit"] = job.mbit(res["start_ns"], res["end_ns"])
    return row


def measure(rounds, progress=print):
    """{configuration: [row of each round]} for IDLE and SCHEDULERS."""
    names = (IDLE,) + SCHEDULERS
    results = {n: [] for n in names}
    with common.sender_lab("first") as (topo, confs, prefix):
        for rnd in range(1, rounds + 1):
            progress(f"  round {rnd} of {rounds}: {', '.join(names)}")
            for name in names:
                results[name].append(measure_one(topo, confs, prefix, name))
    return results


def _median(rows, key):
    vals = [r[key] for r in rows if r[key] is not None]
    return statistics.median(vals) if vals else None


def ratio(results, base):
    """@base's round trip over parq's: the median over the rounds of the
    ratio within each round."""
    return statistics.median(b["rtt_us"] / p["rtt_us"]
                             for b, p in zip(results[base], results["parq"]))


def table(results):
    """The table's lines."""
    lines = [f"{'scheduler':<10} {'round trip (us)':>16} "
             f"{'local Mbit/s':>13} {'over parq':>10}"]
    for name, rows in results.items():
        local = _median(rows, "local_mbit")
        than = "" if name in (IDLE, "parq") else \
            f"{ratio(results, name):.1f}x"
        lines.append(f"{name:<10} {_median(rows, 'rtt_us'):16.0f} "
                     f"{'-' if local is None else f'{local:.1f}':>13} "
                     f"{than:>10}")
    return lines


def verdict(results):
    """(True when as expected, the sentence that says so or what was not)."""
    over = {b: ratio(results, b) for b in (*MARGIN, "cake")}
    short = [f"{b}'s ({over[b]:.1f}x, expected {m:g}x)"
             for b, m in MARGIN.items() if over[b] < m]
    cake = over["cake"]
    against_cake = (f"against cake, parq's round trip is "
                    f"{max(cake, 1 / cake):.2f}x "
                    f"{'shorter' if cake >= 1 else 'longer'}")
    if short:
        return False, ("NOT as expected: parq's round trip under load was "
                       f"not far enough below {' and '.join(short)}; "
                       f"{against_cake}")
    return True, ("as expected: parq's round trip under load is "
                  + ", ".join(f"{over[b]:.1f}x shorter than {b}'s"
                              for b in MARGIN)
                  + f"; {against_cake}")
