#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq reserved flows: NDT/IDT pacing, admission control, classification
into reserved classes, class deletion, xstats, and scale.

Topology: namespaces A and B joined by one veth pair; parq is the root qdisc
of A's veth.  Reserved classes are <handle>:16 and up (tc minors are
hexadecimal: 1:16 is minor 0x16).

Rates: parq shapes the veth to 100 Mbit/s; reserved classes 1:16, 1:17 and
1:18 hold 5, 20 and 50 Mbit/s.  Each is fed by a UDP iperf3 stream offered
at 1.5 times its reservation (so that the class stays backlogged), steered
into the class by a u32 filter on its destination port.  After a 2.5 s
warm-up the class counters are read twice, 10 s apart; a class's rate is its
byte delta over the interval.  The counters hold L2 bytes (Ethernet header
included), which is what a reservation meters, so every class must be
within 2% of its reservation: alone, and while parallel (DSCP EF) and local
TCP bulk traffic saturate the link; best effort (classes 1:1 + 1:2) then
gets what the reservations leave, 25 Mbit/s, minus at most 2% of the link.
A run that misses is followed by two more, and the median of the three is
judged.  An idt 1ms class fed 1000-byte datagrams must send 1000 packets/s
within 2% (no shaper there: IDT pacing alone).

So that the senders, not only the scheduler, keep up under QEMU/TCG on a
busy host, the rate tests run the veth at MTU 9000 (1040 packets/s for the
75 Mbit/s reserved, not 6200) and give the iperf3 senders 16 MiB socket
buffers (net.core.wmem_max/rmem_max raised for the test, then restored):
a stalled sender must not let its class run empty, which would forfeit its
share without any fault of parq.  Every run prints the queue lengths seen
(a class that ran empty is named), the classes' lateness (how far behind
their schedule dispatches were) and the VM's stalls: a SCHED_FIFO thread
sleeping 1 ms at a time reports every gap over 10 ms, i.e. every time this
VM did not run; timers fire that much late.

Admission control is checked to the bit/s against its messages, and that a
refused change leaves the configuration (and, in the rate test, the rates)
as they were.

Scale: 10 000 classes through tc -batch, traffic through a sample of them,
all deleted, module unloaded, no slab objects leaked; then 100 000 classes
(eight qdiscs of 12 500) through one tc -batch within 120 s (at
PARQ_STRESS_SCALE, as make check sets it to a quarter on 6.1 and an
eighth on 6.12), and the slab memory each class takes.  After every
class add the kernel walks all the classes of that qdisc
(tc_bind_tclass()), so building N classes in one qdisc costs O(N^2)
callbacks: under QEMU/TCG about 70 ns each, 3 minutes
for two qdiscs of 50 000, 45 s for eight of 12 500.

Usage: parq_resv.py [SUBSTRING...]   run only the cases whose name contains
one of the SUBSTRINGs (default: all).
"""
import os
import re
import statistics
import subprocess
import sys
import threading
import time

from parqlab import ktap, lab, module, resv, uapi
from parqlab import tc as tclib
from parqlab.ktap import check, check_eq, diag
from parqlab.tc import TcError, tc
from parqlab.traffic import (TOS_EF, UDP_OVERHEAD, Iperf3Client,
                             Iperf3Server, udp_socket)

TOL = 0.02			# the design's bound on a reserved rate
RUNS = 3
WARMUP = 2.5
INTERVAL = 10.0
LINK = 100e6			# the shaper, bit/s
RATE_MTU = 9000			# of the veth in the rate tests
SOCKBUF = 16 << 20		# iperf3 -w: the senders' socket buffers
PAR, LOC = "1:1", "1:2"

# (minor, reservation bit/s, UDP port)
FLOWS = [(0x16, 5e6, 5301), (0x17, 20e6, 5302), (0x18, 50e6, 5303)]
PORT_PAR, PORT_LOC = 5201, 5202

# Classic BPF on the frame from its Ethernet header (egress): IPv4, UDP,
# destination port (IHL 5) -> -1 (the filter's classid), else 0.
BPF_UDP_DPORT = ("8,40 0 0 12,21 0 5 2048,48 0 0 23,21 0 3 17,"
                 "40 0 0 36,21 0 1 {port},6 0 0 4294967295,6 0 0 0")

MSG_NO_LINKRATE = ("parq: no link rate known for admission control: "
                   "set linkrate (or rate) on the qdisc")


def cid(m):
    return resv.classid(m)


def mbit(bps):
    return f"{bps / 1e6:.3f} Mbit/s"


def del_root(env, dev=None, ns=None):
    tc(ns or env.a, "qdisc", "del", "dev", dev or env.dev, "root", check=False)


def add_root(env, *args, dev=None, ns=None):
    del_root(env, dev, ns)
    tc(ns or env.a, "qdisc", "add", "dev", dev or env.dev, "root", "handle",
       "1:", "parq", *args)


def add_class(env, m, *spec, dev=None, ns=None, check=True):
    return tc(ns or env.a, "class", "add", "dev", dev or env.dev, "parent",
              "1:", "classid", cid(m), "parq", *spec, check=check)


def refused(env, argv, want_msg, ns=None):
    """Run tc @argv, which must fail with the kernel's message @want_msg
    (tc prints it as "Error: <msg>.")."""
    p = tc(ns or env.a, *argv, check=False)
    err = (p.stderr + p.stdout).strip()
    check(p.returncode != 0, f"tc {' '.join(argv)} was accepted")
    check(f"Error: {want_msg}." in err,
          f"tc {' '.join(argv)}: message {err!r}, want {want_msg!r}")
    return err


def qx(env, dev=None, ns=None):
    """The parq qdisc (options, counters and xstats) of @dev."""
    return resv.qdisc(ns or env.a, dev or env.dev)


def consistent_state(env, dev=None, ns=None, tries=20):
    """(qdisc dict, reserved classes) read while nothing was dequeued: the
    qdisc's packet counter is the same before and after the class dump."""
    for _ in range(tries):
        q0 = qx(env, dev, ns)
        cls = resv.classes(ns or env.a, dev or env.dev)
        q = qx(env, dev, ns)
        if q["packets"] == q0["packets"]:
            return q, {k: c for k, c in cls.items() if "xs" in c}
        time.sleep(0.2)
    raise AssertionError("the qdisc kept sending: no consistent snapshot")


def freeze(env, dev=None, ns=None):
    """Stop all dequeues: the shaper at 1 byte/s (the linkrate kept), so
    that counters can be compared in a snapshot while classes are still
    backlogged.  One packet may leave at the change."""
    q = qx(env, dev, ns)
    tc(ns or env.a, "qdisc", "change", "dev", dev or env.dev, "root", "parq",
       "linkrate", f"{q['effective_linkrate'] * 8}bit", "rate", "8bit",
       "burst", "0")


def check_xstats(env, dev=None, ns=None, rejects=None, dispatches=True):
    """The resv_* xstats agree with the reserved classes: count, sum of
    reservations (each class's xstats rate), capacity (linkrate x
    reservable%), dispatches (sum of the classes' packets), backlogged."""
    q, rc = consistent_state(env, dev, ns)
    opts = q["options"]
    check_eq(q["xstats_version"], uapi.PARQ_XSTATS_VERSION, "xstats_version")
    check_eq(q["resv_classes"], len(rc), "resv_classes")
    check_eq(q["resv_sum_rate"], sum(c["xs"]["rate"] for c in rc.values()),
             "resv_sum_rate")
    check_eq(q["resv_capacity"],
             q["effective_linkrate"] * opts["reservable"] // 100,
             "resv_capacity")
    check(q["resv_sum_rate"] <= q["resv_capacity"],
          f"resv_sum_rate {q['resv_sum_rate']} > resv_capacity "
          f"{q['resv_capacity']}")
    if dispatches:  # not after classes were deleted
        check_eq(q["resv_dispatches"],
                 sum(c["packets"] for c in rc.values()),
                 "resv_dispatches (sum of reserved class packets)")
    for k, c in rc.items():
        check_eq(c["xs"]["dispatches"], c["packets"],
                 f"class {k} xstats dispatches")
    backlogged = sum(1 for c in rc.values() if c["qlen"])
    check_eq(q["resv_backlogged"], backlogged, "resv_backlogged")
    check(q["resv_throttled"] <= q["resv_backlogged"],
          f"resv_throttled {q['resv_throttled']} > resv_backlogged")
    if rejects is not None:
        check_eq(q["resv_rejects"], rejects, "resv_rejects")
    return q, rc


# --- rates ---------------------------------------------------------------

class StallWatch:
    """A SCHED_FIFO thread that sleeps 1 ms at a time and records how much
    longer it slept: a gap much longer than 1 ms means this VM (or at
    least this thread's CPU) did not run, e.g. QEMU's threads were not
    scheduled on a loaded host.  Timers then fire that much late.  (Python
    hands the GIL over every 1 ms meanwhile, so gaps over GAP are not the
    interpreter's.)"""
    GAP = 0.010

    def __init__(self):
        self.gaps = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        except OSError:
            pass
        last = time.monotonic()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            if now - last > self.GAP:
                self.gaps.append(now - last)
            last = now

    def __enter__(self):
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(0.001)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(5)
        sys.setswitchinterval(self._switch)
        return False

    def summary(self):
        if not self.gaps:
            return "no stall > 10 ms"
        return (f"{len(self.gaps)} stalls > 10 ms, longest "
                f"{max(self.gaps) * 1e3:.0f} ms, "
                f"{sum(1 for g in self.gaps if g > 0.1)} > 100 ms, "
                f"{sum(self.gaps):.2f}s in all")


class Sampler:
    """Class counters read twice, @interval apart, after @warmup; queue
    lengths every second in between; @during() runs once after the first
    read (in this thread).  A StallWatch runs over the interval."""

    def __init__(self, env, dev=None):
        self.a = env.a
        self.dev = dev or env.dev

    def _read(self):
        t0 = time.monotonic()
        c = resv.classes(self.a, self.dev)
        return (t0 + time.monotonic()) / 2, c

    def run(self, warmup, interval, during=None):
        time.sleep(warmup)
        with StallWatch() as self.stalls:
            t0, before = self._read()
            self.qlen = {k: [] for k in before}
            if during:
                during()
            end = t0 + interval
            while end - time.monotonic() > 1.2:
                time.sleep(1.0)
                for k, c in resv.classes(self.a, self.dev).items():
                    self.qlen.setdefault(k, []).append(c["qlen"])
            time.sleep(max(0.0, end - time.monotonic()))
            t1, after = self._read()
        self.before, self.after, self.dt = before, after, t1 - t0
        return self

    def delta(self, k, key="bytes"):
        return self.after[k][key] - self.before[k][key]

    def bps(self, k):
        return self.delta(k) * 8 / self.dt

    def pps(self, k):
        return self.delta(k, "packets") / self.dt

    def min_qlen(self, k):
        return min(self.qlen.get(k) or [0])


def set_mtu(env, mtu):
    a, dev, topo = env.a, env.dev, env.topo
    a.run(["ip", "link", "set", dev, "mtu", str(mtu)])
    topo.b.run(["ip", "link", "set", topo.dev_b(), "mtu", str(mtu)])


class BigSocketBuffers:
    """net.core.{w,r}mem_max raised so that iperf3 -w SOCKBUF works (the
    senders' buffers must outlast a stall of the sending process, or a
    class runs empty); restored afterwards."""
    KEYS = ("wmem_max", "rmem_max")

    def __enter__(self):
        self.old = {}
        for k in self.KEYS:
            path = f"/proc/sys/net/core/{k}"
            with open(path) as f:
                self.old[k] = f.read().strip()
            if int(self.old[k]) < SOCKBUF:
                with open(path, "w") as f:
                    f.write(str(SOCKBUF))
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            with open(f"/proc/sys/net/core/{k}", "w") as f:
                f.write(v)
        return False


def setup_rates(env):
    """parq rate 100mbit with the three reserved classes and their u32
    filters (UDP only: the iperf3 control connections stay best effort)."""
    a, dev = env.a, env.dev
    set_mtu(env, RATE_MTU)
    add_root(env, "rate", "100mbit")
    for m, bps, port in FLOWS:
        add_class(env, m, "rate", f"{int(bps)}bit")
        tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
           "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
           "match", "ip", "dport", str(port), "0xffff", "flowid", cid(m))


def start_servers(env, ports):
    topo = env.topo
    return [Iperf3Server(topo.b, topo.ip_b(), p) for p in ports]


def stop_all(procs):
    for p in procs:
        p.stop()


def udp_client(env, port, bps, seconds, length=None, sockbuf=True):
    """A UDP flow of the largest unfragmented datagrams, offered at 1.5x
    @bps (iperf3 -b counts payload alone); with @sockbuf, SOCKBUF socket
    buffers (inside BigSocketBuffers)."""
    a, topo = env.a, env.topo
    return Iperf3Client(a, topo.ip_b(), port, seconds, udp=True,
                        bitrate=f"{int(bps * 1.5)}",
                        length=length or RATE_MTU - 28,
                        extra=["-w", str(SOCKBUF)] if sockbuf else [])


def check_running(clients):
    for c in clients:
        if not c.running():
            out, err = c.proc.communicate(timeout=10)
            raise AssertionError(f"iperf3 ended early: {' '.join(c.argv)}: "
                                 f"{(err or out)[-300:]}")


def rate_run(env, load, during=None):
    """One measurement of the three flows; @load adds the TCP bulk
    transfers.  Fresh iperf3 servers for every run (a server may still be
    winding down the previous test).  Returns (Sampler, qdisc dict)."""
    a, topo = env.a, env.topo
    secs = int(WARMUP + INTERVAL + 20)
    # A fresh qdisc: a backlog left by the previous run would hold the
    # first datagram of the next iperf3 test for seconds.
    setup_rates(env)
    ports = [port for _, _, port in FLOWS]
    servers = start_servers(env,
                            ports + ([PORT_PAR, PORT_LOC] if load else []))
    clients = []
    try:
        clients = [udp_client(env, port, bps, secs) for _, bps, port in FLOWS]
        if load:
            clients += [Iperf3Client(a, topo.ip_b(), PORT_PAR, secs,
                                     parallel=2, tos=TOS_EF),
                        Iperf3Client(a, topo.ip_b(), PORT_LOC, secs,
                                     parallel=2)]
        s = Sampler(env).run(WARMUP, INTERVAL, during)
        check_running(clients)
        q = qx(env)
    finally:
        stop_all(clients)
        stop_all(servers)
    return s, q


def report_run(run_no, s, q, load):
    errs = {}
    for m, bps, _ in FLOWS:
        k = cid(m)
        got = s.bps(k)
        errs[k] = (got - bps) / bps
        lmax, lmean = lateness(s, k)
        diag(f"run {run_no}: {k} reserved {mbit(bps)}: {mbit(got)} "
             f"({errs[k] * 100:+.3f}%), min qlen {s.min_qlen(k)}, "
             f"lateness max {lmax:.0f} us mean {lmean:.1f} us")
    be = s.bps(PAR) + s.bps(LOC)
    total = be + sum(s.bps(cid(m)) for m, _, _ in FLOWS)
    diag(f"run {run_no}: best effort {mbit(be)} (parallel "
         f"{mbit(s.bps(PAR))}, local {mbit(s.bps(LOC))}), link total "
         f"{mbit(total)} over {s.dt:.2f}s" + ("" if load else " (no load)"))
    return errs, be, total


def judge_rates(env, load, during=None):
    """One run; if it misses, two more, and the median of the three is
    judged (never the mean of a miss and a hit)."""
    runs = []
    for run_no in range(1, RUNS + 1):
        s, q = rate_run(env, load, during)
        errs, be, total = report_run(run_no, s, q, load)
        empty = [cid(m) for m, _, _ in FLOWS if s.min_qlen(cid(m)) == 0]
        diag(f"run {run_no}: VM: {s.stalls.summary()}" +
             (f"; ran empty: {' '.join(empty)}" if empty else ""))
        runs.append((errs, be, empty))
        ok = not empty and all(abs(e) <= TOL for e in errs.values())
        if load:
            ok = ok and (0.25 - TOL) * LINK <= be <= (0.25 + TOL) * LINK
        if ok and run_no == 1:
            break
    med = {k: statistics.median(r[0][k] for r in runs) for k in runs[0][0]}
    be = statistics.median(r[1] for r in runs)
    if len(runs) > 1:
        diag(f"median of {len(runs)} runs: " + ", ".join(
            f"{k} {e * 100:+.3f}%" for k, e in med.items()) +
            (f"; best effort {mbit(be)}" if load else ""))
    note = "".join(f" (run {i}: {' '.join(r[2])} ran empty, the sender "
                   "fell behind)" for i, r in enumerate(runs, 1) if r[2])
    for m, bps, _ in FLOWS:
        k = cid(m)
        check(abs(med[k]) <= TOL,
              f"class {k}: rate off by {med[k] * 100:+.3f}% of its "
              f"{mbit(bps)} reservation (bound {TOL * 100:.0f}%){note}")
    if load:
        check(be >= (0.25 - TOL) * LINK,
              f"best effort got {mbit(be)}, want 25 Mbit/s - "
              f"{TOL * LINK / 1e6:.0f} Mbit/s{note}")
        check(be <= (0.25 + TOL) * LINK,
              f"best effort got {mbit(be)}, more than the 25 Mbit/s left")


def t_rates_alone(env):
    a, dev = env.a, env.dev
    outcome = {}

    def refused_changes():
        # Sum 75 of 90 Mbit/s reservable: each of these would exceed it.
        before = tclib.snapshot(a, dev)
        try:
            refused(env, ["class", "change", "dev", dev, "classid", cid(0x16),
                          "parq", "rate", "30mbit"],
                    resv.refusal(30000000, 20000000, 90000000))
            refused(env, ["qdisc", "change", "dev", dev, "root", "parq",
                          "reservable", "70"],
                    resv.below_reserved(70000000, 75000000))
            refused(env, ["qdisc", "change", "dev", dev, "root", "parq",
                          "rate", "80mbit"],
                    resv.below_reserved(72000000, 75000000))
            after = tclib.snapshot(a, dev)
            outcome.setdefault("config", []).extend(
                d for d in tclib.diff(before, after) if not _is_counter(d))
        except AssertionError as e:
            outcome["error"] = str(e)

    def undo():
        del_root(env)
        set_mtu(env, 1500)
    ktap.defer(undo)
    with BigSocketBuffers():
        judge_rates(env, load=False, during=refused_changes)
    check("error" not in outcome, outcome.get("error", ""))
    check(not outcome["config"], "a refused change altered the "
          f"configuration: {outcome['config']}")
    diag("refused during every run: class 1:16 to 30mbit, reservable "
         "70, rate 80mbit; configuration unchanged")
    freeze(env)
    check_xstats(env, rejects=3)  # 1 class, 2 qdisc changes


_COUNTERS = ("bytes", "packets", "drops", "overlimits", "requeues",
             "backlog", "qlen", "xstats", "throttled", "wakeups",
             "parallel_only", "local_only", "threshold_turns",
             "resv_dispatches", "resv_rejects", "resv_backlogged",
             "resv_throttled", "gso_segments", "flows_active",
             "drop_local_full", "drop_local_evicted", "drop_parallel_full",
             "drop_flow_limit", "unknown_class")


def _is_counter(d):
    """Whether a tclib.diff() line ("path: a != b") is about a counter."""
    path = d.split(": ", 1)[0]
    return path.rsplit(".", 1)[-1] in _COUNTERS


def t_rates_load(env):
    def undo():
        del_root(env)
        set_mtu(env, 1500)
    ktap.defer(undo)
    with BigSocketBuffers():
        judge_rates(env, load=True)
    freeze(env)
    check_xstats(env, rejects=0)


def lateness(s, k):
    """(max, mean over the interval) lateness of class @k, in us."""
    b, a = s.before[k]["xs"], s.after[k]["xs"]
    n = a["dispatches"] - b["dispatches"]
    return (a["lateness_max"] / 1e3,
            (a["lateness_sum"] - b["lateness_sum"]) / max(1, n) / 1e3)


def setup_idt(env, m, port):
    a, dev = env.a, env.dev
    # IDT pacing alone: no shaper; the linkrate only for admission.
    add_root(env, "linkrate", "100mbit")
    add_class(env, m, "idt", "1ms")
    tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
       "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
       "match", "ip", "dport", str(port), "0xffff", "flowid", cid(m))


def t_idt(env):
    a, dev, topo = env.a, env.dev, env.topo
    m, port = 0x19, 5304
    k = cid(m)
    setup_idt(env, m, port)
    c = resv.classes(a, dev)[k]
    mtu = 1500 + 14
    check_eq(c["xs"]["idt"], 1000000, "class xstats idt (ns)")
    check_eq(c["xs"]["rate"], -(-mtu * 10**9 // 10**6),
             "class xstats rate (one MTU per IDT, bytes/s)")
    pps = []
    with BigSocketBuffers():
        for run_no in range(1, RUNS + 1):
            secs = int(WARMUP + INTERVAL + 20)
            setup_idt(env, m, port)		# empty queues for every run
            servers = start_servers(env, [port])
            # 1000-byte UDP payloads offered at 1500 packets/s.
            cli = Iperf3Client(a, topo.ip_b(), port, secs, udp=True,
                               bitrate=str(1500 * 1000 * 8), length=1000,
                               extra=["-w", str(4 << 20)])
            try:
                s = Sampler(env).run(WARMUP, INTERVAL)
                check_running([cli])
            finally:
                cli.stop()
                stop_all(servers)
            got = s.pps(k)
            lmax, lmean = lateness(s, k)
            diag(f"run {run_no}: idt 1ms: {got:.2f} packets/s "
                 f"({(got - 1000) / 10:+.3f}%) of "
                 f"{s.delta(k) / max(1, s.delta(k, 'packets')):.0f} bytes, "
                 f"min qlen {s.min_qlen(k)}, lateness max {lmax:.0f} us "
                 f"mean {lmean:.1f} us")
            diag(f"run {run_no}: VM: {s.stalls.summary()}")
            pps.append(got)
            if run_no == 1 and abs(got - 1000) <= TOL * 1000 and \
                    s.min_qlen(k) > 0:
                break
    med = statistics.median(pps)
    check(abs(med - 1000) <= TOL * 1000,
          f"idt 1ms: {med:.2f} packets/s, want 1000 +- 2%")
    freeze(env)
    check_xstats(env, rejects=0)
    del_root(env)


def t_idt_jumbo(env):
    """An idt class admitted at MTU 1500 (1514 bytes per 1 ms) may not
    carry more after the MTU is raised to 9000: each 9014-byte packet takes
    9014 / 1514 IDTs, so the last of 80 leaves at least 79 x 5.95 ms =
    470 ms after the first (one IDT each would be 79 ms).  A lower bound on
    a time: a slow machine can only make it longer."""
    a, dev, topo = env.a, env.dev, env.topo
    b = topo.b
    m, port, n = 0x19, 5305, 80
    setup_idt(env, m, port)
    a.run(["ip", "link", "set", dev, "mtu", "9000"])
    b.run(["ip", "link", "set", topo.dev_b(), "mtu", "9000"])

    def undo():
        a.run(["ip", "link", "set", dev, "mtu", "1500"])
        b.run(["ip", "link", "set", topo.dev_b(), "mtu", "1500"])
        del_root(env)
    ktap.defer(undo)
    s = udp_socket(a)
    payload = 9000 - UDP_OVERHEAD + 14  # a 9000-byte IP packet
    t0 = time.monotonic()
    try:
        for _ in range(n):
            s.sendto(bytes(payload), (topo.ip_b(), port))
    finally:
        s.close()
    q = resv.wait_qlen(a, dev, 0, timeout=30)
    took = time.monotonic() - t0
    c = resv.classes(a, dev)[cid(m)]
    diag(f"{c['packets']} packets of {c['bytes'] // max(1, c['packets'])}"
         f" bytes in {took * 1000:.0f} ms; drops {c['drops']}")
    check_eq((q["qlen"], c["packets"], c["drops"]), (0, n, 0),
             "qlen, packets sent by the class, drops")
    want = (n - 1) * 9014 / 1514 * 1e-3
    check(took >= 0.99 * want,
          f"{n} packets of 9014 bytes left in {took:.3f} s, want >= "
          f"{want:.3f} s (1514 bytes per ms)")


# --- admission -----------------------------------------------------------

def refusal(req, free, cap, reserved):
    """The refusal's text (@reserved, the sum before the request, is not
    in it: it is @cap - @free plus what the class had)."""
    del reserved
    return resv.refusal(req, free, cap)


def class_rates(env):
    """{classid: (dumped option, xstats rate)} of the reserved classes."""
    a, dev = env.a, env.dev
    out = {}
    for k, c in resv.classes(a, dev).items():
        if "xs" in c:
            out[k] = c["xs"]["rate"]
    return out


def t_admission(env):
    a, dev = env.a, env.dev
    add_root(env, "linkrate", "100mbit", "reservable", "90")
    q = qx(env)
    check_eq((q["options"]["linkrate"], q["options"]["reservable"]),
             (12500000, 90), "linkrate (bytes/s), reservable")
    check_eq(q["resv_capacity"], 11250000, "resv_capacity (bytes/s)")
    for m, bps in ((0x16, 5), (0x17, 20), (0x18, 50)):
        add_class(env, m, "rate", f"{bps}mbit")
    cap = 90000000
    refused(env, ["class", "add", "dev", dev, "parent", "1:", "classid",
                  "1:19", "parq", "rate", "16mbit"],
            refusal(16000000, 15000000, cap, 75000000))
    check(cid(0x19) not in class_rates(env), "refused class 1:19 exists")
    add_class(env, 0x19, "rate", "15mbit")		# exactly the rest
    check_eq(qx(env)["resv_sum_rate"], 11250000, "resv_sum_rate: all reserved")
    refused(env, ["class", "add", "dev", dev, "parent", "1:", "classid",
                  "1:1a", "parq", "rate", "8bit"],
            refusal(8, 0, cap, cap))
    # idt: one MTU (1500 + 14 bytes) per 10 s is ceil(151.4) = 152 bytes/s.
    refused(env, ["class", "add", "dev", dev, "parent", "1:", "classid",
                  "1:1a", "parq", "idt", "10s"],
            refusal(152 * 8, 0, cap, cap))
    rates = class_rates(env)
    want = {cid(0x16): 625000, cid(0x17): 2500000, cid(0x18): 6250000,
            cid(0x19): 1875000}
    check_eq(rates, want, "reserved class rates (bytes/s)")

    # Raising a class beyond the capacity: refused, the old rate stays.
    refused(env, ["class", "change", "dev", dev, "classid", "1:16", "parq",
                  "rate", "6mbit"], refusal(6000000, 5000000, cap, cap))
    check_eq(class_rates(env), want, "rates after a refused class change")
    text = tc(a, "class", "show", "dev", dev, "classid", "1:16").stdout
    check("rate 5Mbit" in text, f"tc class show 1:16: {text.strip()!r}")
    # Lowering then raising it back fits exactly.
    tc(a, "class", "change", "dev", dev, "classid", "1:16", "parq", "rate",
       "4mbit")
    check_eq(qx(env)["resv_sum_rate"], 11125000, "sum after lowering 1:16")
    tc(a, "class", "change", "dev", dev, "classid", "1:16", "parq", "rate",
       "5mbit")
    # A class may switch to idt mode within its old bandwidth.
    refused(env, ["class", "change", "dev", dev, "classid", "1:16", "parq",
                  "idt", "100us"],
            refusal(-(-1514 * 10**9 // 100000) * 8, 5000000, cap, cap))
    check_eq(class_rates(env), want, "rates after a refused idt change")

    # The qdisc may not shrink the capacity below the sum.
    opts = qx(env)["options"]
    for args, got_cap in ((["reservable", "89"], 89000000),
                          (["linkrate", "99mbit"], 89100000),
                          (["linkrate", "auto", "rate", "50mbit"], 45000000)):
        refused(env, ["qdisc", "change", "dev", dev, "root", "parq", *args],
                resv.below_reserved(got_cap, cap))
        check_eq(qx(env)["options"], opts, f"options after refused {args}")
        check_eq(class_rates(env), want, f"rates after refused {args}")
    # Raising it is fine, and makes room.
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "reservable", "100")
    check_eq(qx(env)["resv_capacity"], 12500000, "capacity at reservable 100")
    add_class(env, 0x1a, "rate", "10mbit")
    refused(env, ["qdisc", "change", "dev", dev, "root", "parq", "reservable",
                  "90"],
            resv.below_reserved(90000000, 100000000))
    tc(a, "class", "del", "dev", dev, "classid", "1:1a")
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "reservable", "90")
    # 5 refused class adds/changes and 4 refused qdisc changes.
    check_xstats(env, rejects=9)
    del_root(env)


def t_no_link_speed(env):
    a, dev = env.a, env.dev
    dummy = "parqdum0"
    a.run(["ip", "link", "add", dummy, "type", "dummy"])
    try:
        a.run(["ip", "link", "set", dummy, "up"])
        r = a.run(["ethtool", dummy], check=False)
        speed = [ln.strip() for ln in r.stdout.splitlines()
                 if "Speed" in ln]
        diag(f"ethtool {dummy}: {speed or (r.stderr.strip() or 'no speed')}")
        add_root(env, dev=dummy)
        q = qx(env, dummy)
        check_eq((q["options"]["linkrate"], q["effective_linkrate"]),
                 ("auto", 0), "linkrate of a dummy (auto: none)")
        check_eq(q["resv_capacity"], 0, "resv_capacity without a linkrate")
        refused(env, ["class", "add", "dev", dummy, "parent", "1:", "classid",
                      "1:16", "parq", "rate", "1mbit"], MSG_NO_LINKRATE)
        refused(env, ["class", "add", "dev", dummy, "parent", "1:", "classid",
                      "1:16", "parq", "idt", "1ms"], MSG_NO_LINKRATE)
        check_xstats(env, dev=dummy, rejects=2)
        tc(a, "qdisc", "change", "dev", dummy, "root", "parq", "linkrate",
           "1gbit")
        add_class(env, 0x16, "rate", "1mbit", dev=dummy)
        check_xstats(env, dev=dummy, rejects=2)
        del_root(env, dummy)
        # The shaper rate is the linkrate when none is given.
        add_root(env, "rate", "10mbit", dev=dummy)
        check_eq(qx(env, dummy)["effective_linkrate"], 1250000,
                 "linkrate auto = the shaper rate")
        add_class(env, 0x16, "rate", "9mbit", dev=dummy)
        del_root(env, dummy)
    finally:
        a.run(["ip", "link", "del", dummy], check=False)
    # A veth reports 10000Mb/s: the linkrate without rate or linkrate.
    r = a.run(["ethtool", dev], check=False)
    speed = [ln.strip() for ln in r.stdout.splitlines() if "Speed" in ln]
    diag(f"ethtool {dev}: {speed}")
    add_root(env)
    check_eq(qx(env)["effective_linkrate"], 10000 * 10**6 // 8,
             "linkrate auto of a veth (its 10000Mb/s)")
    add_class(env, 0x16, "rate", "9gbit")
    refused(env, ["class", "add", "dev", dev, "parent", "1:", "classid",
                  "1:17", "parq", "rate", "8bit"],
            refusal(8, 0, 9000000000, 9000000000))
    del_root(env)


# --- classification and deletion ---------------------------------------------

def send(env, m_or_none, port, payload, count, tos=None):
    """@count datagrams to B:@port, with SO_PRIORITY 1:@m if @m_or_none."""
    a, topo = env.a, env.topo
    prio = resv.prio_of(m_or_none) if m_or_none is not None else None
    with udp_socket(a, tos=tos, priority=prio) as s:
        for _ in range(count):
            s.sendto(bytes(payload), (topo.ip_b(), port))
    return payload + UDP_OVERHEAD


def check_counts(env, want):
    """@want: {classid: (packets, bytes)}; every other class must be 0."""
    a, dev = env.a, env.dev
    q = resv.wait_qlen(a, dev, 0)
    check_eq(q["qlen"], 0, "qdisc qlen after draining")
    cls = resv.classes(a, dev)
    for k, c in sorted(cls.items()):
        got = (c["packets"], c["bytes"])
        diag(f"class {k}: {got[0]} packets {got[1]} bytes")
        check_eq(got, want.get(k, (0, 0)), f"class {k} (packets, bytes)")
        check_eq((c["qlen"], c["backlog"], c["drops"]), (0, 0, 0),
                 f"class {k} (qlen, backlog, drops)")
    return q


def t_filters(env):
    a, dev = env.a, env.dev
    add_root(env, "linkrate", "1gbit")
    for m in range(0x16, 0x1b):
        add_class(env, m, "rate", "100mbit")

    def flt(*args):
        tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
           *args)

    flt("prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
        "match", "ip", "dport", "6001", "0xffff", "flowid", "1:16")
    flt("prio", "2", "flower", "ip_proto", "udp", "dst_port", "6002",
        "classid", "1:17")
    flt("prio", "3", "bpf", "bytecode", BPF_UDP_DPORT.format(port=6003),
        "classid", "1:18")
    K = 20
    want = {}

    def sent(k, l2, n):
        p, b = want.get(k, (0, 0))
        want[k] = (p + n, b + n * l2)

    sent("1:16", send(env, None, 6001, 100, K), K)
    sent("1:17", send(env, None, 6002, 200, K, tos=TOS_EF), K)  # beats DSCP
    sent("1:18", send(env, None, 6003, 300, K), K)
    sent("1:19", send(env, 0x19, 6004, 400, K), K)  # SO_PRIORITY, no filter
    sent("1:16", send(env, 0x19, 6001, 101, 5), 5)  # a filter beats priority
    sent(LOC, send(env, None, 6005, 500, K), K)
    check_counts(env, want)
    # matchall last: what nothing else matched goes to 1:1a.
    flt("prio", "9", "matchall", "classid", "1:1a")
    sent("1:1a", send(env, None, 6005, 600, K), K)
    sent("1:1a", send(env, 0x19, 6004, 700, 7), 7)  # filters before priority
    sent("1:18", send(env, None, 6003, 301, 3), 3)
    q = check_counts(env, want)
    check_eq(q["unknown_class"], 0, "unknown_class")
    check_xstats(env, rejects=0)
    del_root(env)


def shown(env):
    """The classes `tc class show` lists, as a set of handles (text:
    bookworm's tc prints no JSON for classes)."""
    a, dev = env.a, env.dev
    out = tc(a, "class", "show", "dev", dev).stdout
    got = re.findall(r"^class parq (\S+) ", out, flags=re.M)
    check_eq(len(got), len(set(got)), f"no class listed twice: {got}")
    return set(got)


def t_show_after_change(env):
    """The class walk lists every class whatever came before it: a
    `tc class show` right after every kind of class change (each followed
    by the kernel's own walk, tc_bind_tclass()) must list every class,
    with and without filters, and filters added before their class must
    steer into it once it exists."""
    a, dev = env.a, env.dev
    add_root(env, "linkrate", "100mbit")
    base = {"1:1", "1:2"}
    check_eq(shown(env), base, "a new qdisc's classes")
    add_class(env, 0x16, "rate", "10mbit")
    check_eq(shown(env), base | {"1:16"}, "right after an add")
    add_class(env, 0x17, "idt", "1ms")
    check_eq(shown(env), base | {"1:16", "1:17"}, "right after a second add")
    tc(a, "class", "change", "dev", dev, "parent", "1:", "classid", "1:16",
       "parq", "rate", "20mbit")
    check_eq(shown(env), base | {"1:16", "1:17"}, "right after a change")
    check(add_class(env, 0x18, "rate", "1gbit", check=False).returncode != 0,
          "an add over the capacity is refused")
    check_eq(shown(env), base | {"1:16", "1:17"}, "right after a refused add")
    p = tc(a, "class", "del", "dev", dev, "classid", "1:1", check=False)
    check(p.returncode != 0, "deleting class 1:1 is refused")
    check_eq(shown(env), base | {"1:16", "1:17"},
             "right after a refused delete")
    tc(a, "class", "del", "dev", dev, "classid", "1:16")
    check_eq(shown(env), base | {"1:17"}, "right after a delete")
    # Filters: one steers into 1:20 before that class exists.
    tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
       "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
       "match", "ip", "dport", "6020", "0xffff", "flowid", "1:20")
    tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
       "prio", "2", "matchall", "classid", "1:17")
    add_class(env, 0x20, "rate", "10mbit")
    check_eq(shown(env), base | {"1:17", "1:20"}, "with filters, after an add")
    add_class(env, 0x21, "rate", "10mbit")
    check_eq(shown(env), base | {"1:17", "1:20", "1:21"},
             "with filters, after a second add")
    send(env, None, 6020, 100, 10)
    send(env, None, 6021, 100, 10)
    resv.wait_qlen(a, dev, 0)
    cls = resv.classes(a, dev)
    check_eq(cls["1:20"]["packets"], 10, "the u32 filter steers into 1:20")
    check_eq(cls["1:17"]["packets"], 10, "matchall takes the rest")
    tc(a, "class", "del", "dev", dev, "classid", "1:21")
    check_eq(shown(env), base | {"1:17", "1:20"},
             "with filters, after a delete")
    # The same in one tc process: the requests follow back to back.
    batch = "class add dev {d} parent 1: classid 1:22 parq rate 1mbit\n" \
            "class show dev {d}\n" \
            "class del dev {d} classid 1:22\n" \
            "class show dev {d}\n".format(d=dev)
    out = a.run(["tc", "-batch", "-"], input=batch).stdout
    check_eq(out.count("class parq 1:22"), 1,
             "tc -batch: an add then a show lists the new class once")
    check_eq(out.count("class parq 1:17"), 2,
             "tc -batch: both shows list the other classes")
    del_root(env)


MSG_CLASS_HAS_FILTERS = ("parq: filters steer into this class; delete them "
                         "(or point them elsewhere) first")


def t_filter_holds_class(env):
    """A filter that names an existing reserved class holds it, as the
    kernel's classful qdiscs do: deleting the class is refused with a
    message while any such filter exists, so that no filter keeps a
    pointer to a freed class.  Played as an attacker would: filters bound
    by u32, flower (then re-pointed by replace) and one added before its
    class; each class deleted while bound, then traffic that matches the
    filters, a filter dump, the filters deleted (one key, a whole u32
    priority) and the qdisc deleted with filters still bound.  The kernel
    log must stay clean (the debug kernel's KASAN sees any use after
    free)."""
    a, dev = env.a, env.dev
    add_root(env, "linkrate", "1gbit")
    base = {"1:1", "1:2"}
    for m in (0x16, 0x17, 0x18):
        add_class(env, m, "rate", "10mbit")

    def flt(verb, *args):
        tc(a, "filter", verb, "dev", dev, "parent", "1:", "protocol", "ip",
           *args)

    def u32_dport(prio, port, classid):
        flt("add", "prio", str(prio), "u32", "match", "ip", "protocol",
            "17", "0xff", "match", "ip", "dport", str(port), "0xffff",
            "flowid", classid)

    def delete(m):
        return ["class", "del", "dev", dev, "classid", cid(m)]

    u32_dport(1, 6001, "1:16")
    flt("add", "prio", "2", "handle", "1", "flower", "ip_proto", "udp",
        "dst_port", "6002", "classid", "1:17")
    u32_dport(3, 6020, "1:20")		# before its class exists
    K = 10
    for m in (0x16, 0x17):
        refused(env, delete(m), MSG_CLASS_HAS_FILTERS)
    check_eq(shown(env), base | {"1:16", "1:17", "1:18"},
             "the classes filters hold are still there")
    check_eq(qx(env)["resv_classes"], 3, "resv_classes after the refusals")
    send(env, None, 6001, 100, K)
    send(env, None, 6002, 100, K)
    resv.wait_qlen(a, dev, 0)
    cls = resv.classes(a, dev)
    check_eq((cls["1:16"]["packets"], cls["1:17"]["packets"]), (K, K),
             "the filters still steer into their classes")
    out = tc(a, "filter", "show", "dev", dev).stdout
    check("flowid 1:16" in out and "classid 1:17" in out,
          f"the filter dump names the classes: {out!r}")

    # Re-pointed: the filter now holds 1:18 and lets 1:17 go.
    flt("replace", "prio", "2", "handle", "1", "flower", "ip_proto", "udp",
        "dst_port", "6002", "classid", "1:18")
    tc(a, *delete(0x17))
    refused(env, delete(0x18), MSG_CLASS_HAS_FILTERS)
    send(env, None, 6002, 100, K)
    resv.wait_qlen(a, dev, 0)
    check_eq(resv.classes(a, dev)["1:18"]["packets"], K,
             "the replaced filter steers into 1:18")

    # A filter added before its class names it only by classid: the class
    # can go, and the filter's packets then count as unknown_class.
    add_class(env, 0x20, "rate", "10mbit")
    send(env, None, 6020, 100, K)
    resv.wait_qlen(a, dev, 0)
    check_eq(resv.classes(a, dev)["1:20"]["packets"], K,
             "a filter added before its class steers into it")
    tc(a, *delete(0x20))
    unknown = qx(env)["unknown_class"]
    send(env, None, 6020, 100, K)
    resv.wait_qlen(a, dev, 0)
    check_eq(qx(env)["unknown_class"] - unknown, K,
             "packets of a filter whose class is gone: unknown_class")

    # Deleted filters let their classes go: a whole u32 priority, then
    # one flower filter.
    flt("del", "prio", "1")
    tc(a, *delete(0x16))
    flt("del", "prio", "2", "handle", "1", "flower")
    tc(a, *delete(0x18))
    send(env, None, 6001, 100, K)
    send(env, None, 6002, 100, K)
    q = resv.wait_qlen(a, dev, 0)
    check_eq((q["qlen"], q["resv_classes"]), (0, 0),
             "(qlen, resv_classes) with every reserved class deleted")
    check_eq(shown(env), base, "only the fixed classes are left")
    out = tc(a, "filter", "show", "dev", dev).stdout
    check("1:16" not in out and "1:18" not in out and "flowid 1:20" in out,
          f"the filter dump after the deletes: {out!r}")
    check_xstats(env, dispatches=False)

    # The qdisc deleted while filters hold classes.
    add_class(env, 0x16, "rate", "10mbit")
    u32_dport(4, 6001, "1:16")
    refused(env, delete(0x16), MSG_CLASS_HAS_FILTERS)
    send(env, None, 6001, 100, K)
    del_root(env)
    check(not tc(a, "qdisc", "show", "dev", dev).stdout.count("parq"),
          "the parq qdisc is gone")


def qstate(env):
    a, dev = env.a, env.dev
    q = qx(env)
    cls = resv.classes(a, dev)
    return q, cls


def check_backlog_consistent(q, cls):
    qlen = sum(c["qlen"] for c in cls.values())
    backlog = sum(c["backlog"] for c in cls.values())
    check_eq((q["qlen"], q["backlog"]), (qlen, backlog),
             "qdisc (qlen, backlog) vs the sum over its classes")


def t_delete_queued(env):
    a, dev = env.a, env.dev
    # 1 byte/s: the first packet leaves, the rest stay queued.
    add_root(env, "rate", "8bit", "burst", "0", "linkrate", "1gbit")
    add_class(env, 0x16, "rate", "10mbit")
    add_class(env, 0x17, "rate", "10mbit")
    send(env, None, 9, 100, 1)				# arms the shaper
    l16 = send(env, 0x16, 9, 200, 10)
    l17 = send(env, 0x17, 9, 300, 15)
    lloc = send(env, None, 9, 400, 5)
    q, cls = qstate(env)
    check_eq((q["qlen"], q["backlog"]), (30, 10 * l16 + 15 * l17 + 5 * lloc),
             "queued (qlen, backlog)")
    check_backlog_consistent(q, cls)
    check_eq((cls["1:16"]["qlen"], cls["1:16"]["backlog"]), (10, 10 * l16),
             "class 1:16 (qlen, backlog)")
    check_eq(q["resv_backlogged"], 2, "resv_backlogged")
    drops0 = q["drops"]
    tc(a, "class", "del", "dev", dev, "classid", "1:16")
    q, cls = qstate(env)
    check("1:16" not in cls, "class 1:16 still listed")
    check_eq(q["drops"] - drops0, 10, "qdisc drops: 1:16's queued packets")
    check_eq((q["qlen"], q["backlog"]), (20, 15 * l17 + 5 * lloc),
             "(qlen, backlog) after deleting 1:16")
    check_backlog_consistent(q, cls)
    check_eq((q["resv_backlogged"], q["resv_classes"]), (1, 1),
             "resv_backlogged, resv_classes after deleting 1:16")
    # Packets for the deleted class now go to the default class.
    lnew = send(env, 0x16, 9, 250, 2)
    q, cls = qstate(env)
    check_eq(q["unknown_class"], 2, "unknown_class")
    check_backlog_consistent(q, cls)
    tc(a, "class", "del", "dev", dev, "classid", "1:17")
    q, cls = qstate(env)
    check_eq((q["qlen"], q["backlog"]), (7, 5 * lloc + 2 * lnew),
             "(qlen, backlog) after deleting 1:17")
    check_eq(q["drops"] - drops0, 25, "qdisc drops after deleting 1:17")
    check_backlog_consistent(q, cls)
    check_eq((q["resv_backlogged"], q["resv_classes"], q["resv_sum_rate"]),
             (0, 0, 0), "resv_* after deleting both")
    # Open the shaper; one more packet kicks the queue out.
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "rate", "unlimited")
    send(env, None, 9, 100, 1)
    q = resv.wait_qlen(a, dev, 0)
    check_eq((q["qlen"], q["backlog"]), (0, 0), "(qlen, backlog) drained")
    cls = resv.classes(a, dev)
    check_eq(cls[LOC]["packets"], 1 + 5 + 2 + 1, "local class packets")
    del_root(env)


def t_delete_live(env):
    """Delete and re-add a reserved class while its UDP flow keeps it
    backlogged; afterwards every queue drains to exactly 0."""
    a, dev, topo = env.a, env.dev, env.topo
    add_root(env, "rate", "100mbit")
    m, port = 0x16, 5301
    tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
       "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
       "match", "ip", "dport", str(port), "0xffff", "flowid", cid(m))
    add_class(env, m, "rate", "20mbit")
    servers = start_servers(env, [port, PORT_LOC])
    clients = [udp_client(env, port, 40e6, 12, length=1472, sockbuf=False),
               Iperf3Client(a, topo.ip_b(), PORT_LOC, 12)]
    cycles = 0
    try:
        time.sleep(2)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            tc(a, "class", "del", "dev", dev, "classid", cid(m))
            time.sleep(0.1)
            add_class(env, m, "rate", "20mbit")
            time.sleep(0.2)
            cycles += 1
        q, cls = qstate(env)
        check(cls[cid(m)]["packets"] > 0,
              "the re-added class sent nothing: no load")
    finally:
        stop_all(clients)
        stop_all(servers)
    q = resv.wait_qlen(a, dev, 0, timeout=15)
    cls = resv.classes(a, dev)
    diag(f"{cycles} delete/add cycles under load; unknown_class "
         f"{q['unknown_class']}")
    check_eq((q["qlen"], q["backlog"]), (0, 0), "(qlen, backlog) drained")
    check_backlog_consistent(q, cls)
    check_xstats(env, dispatches=False)
    del_root(env)


def t_xstats(env):
    """Every resv_* field is dumped (tc -s -j and raw), with the numbers
    of a known configuration."""
    a, dev = env.a, env.dev
    add_root(env, "rate", "100mbit", "reservable", "50")
    add_class(env, 0x16, "rate", "10mbit")
    add_class(env, 0x17, "idt", "1ms")
    refused(env, ["class", "add", "dev", dev, "parent", "1:", "classid",
                  "1:18", "parq", "rate", "29mbit"],
            refusal(29000000, 27888000, 50000000, 22112000))
    q = qx(env)
    names = [n for n, _ in uapi.XSTATS_FIELDS if n.startswith("resv_")]
    check_eq(sorted(names), sorted(["resv_dispatches", "resv_rejects",
                                    "resv_sum_rate", "resv_capacity",
                                    "resv_classes", "resv_backlogged",
                                    "resv_throttled"]),
             "resv_* fields of struct tc_parq_xstats")
    missing = [n for n in names if n not in q]
    check(not missing, f"tc -s -j qdisc show lacks {missing}")
    want = {"resv_dispatches": 0, "resv_rejects": 1,
            "resv_sum_rate": 1250000 + 1514000, "resv_capacity": 6250000,
            "resv_classes": 2, "resv_backlogged": 0, "resv_throttled": 0}
    check_eq({n: q[n] for n in names}, want, "resv_* xstats")
    l16 = send(env, 0x16, 9, 500, 10)
    send(env, 0x17, 9, 500, 4)
    q = resv.wait_qlen(a, dev, 0)
    q, rc = check_xstats(env, rejects=1)
    check_eq(q["resv_dispatches"], 14, "resv_dispatches")
    check_eq((rc["1:16"]["packets"], rc["1:16"]["bytes"]), (10, 10 * l16),
             "class 1:16 (packets, bytes)")
    check_eq(rc["1:17"]["xs"]["idt"], 10**6, "class 1:17 idt")
    check_eq(rc["1:16"]["xs"]["idt"], 0, "class 1:16 idt")
    text = tc(a, "-s", "qdisc", "show", "dev", dev).stdout
    for n in names:
        check(n in text, f"tc -s qdisc show lacks {n}")
    del_root(env)


def t_use_of_rate(env):
    """What a class carries against its rate (xstats version 2): one
    reserved 40 Mbit/s that is sent 10 leaves about three quarters of its
    rate unused and is seldom held back by it; one reserved 10 Mbit/s that
    is offered 30 is held back most of the time and leaves nothing unused.
    The shares are of the last full second, compared between the two
    classes of one run.  Under QEMU/TCG a dispatch is often late (the
    watchdog fires late), and the time past an NDT is not held back: the
    choked class's share is bounded at a half, not near all of it."""
    a, dev = env.a, env.dev
    add_root(env, "rate", "100mbit")
    ktap.defer(lambda: del_root(env))
    for m, rate, port in ((0x16, "40mbit", 5311), (0x17, "10mbit", 5312)):
        add_class(env, m, "rate", rate)
        tc(a, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
           "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
           "match", "ip", "dport", str(port), "0xffff", "flowid", cid(m))
    secs = 6
    servers = start_servers(env, [5311, 5312])
    clients = []
    try:
        with BigSocketBuffers():
            clients = [
                Iperf3Client(a, env.topo.ip_b(), 5311, secs, udp=True,
                             bitrate="10M", length=1400),
                Iperf3Client(a, env.topo.ip_b(), 5312, secs, udp=True,
                             bitrate="30M", length=1400,
                             extra=["-w", str(SOCKBUF)])]
            time.sleep(secs - 1.5)
            check_running(clients)
            rc = resv.classes(a, dev)
    finally:
        stop_all(clients)
        stop_all(servers)
    light, choked = rc["1:16"]["xs"], rc["1:17"]["xs"]
    for k, x in (("1:16", light), ("1:17", choked)):
        diag(f"class {k}: {x['use_windows']} windows, choked "
             f"{x['choked_ppm'] / 1e4:.1f}%, unused "
             f"{x['unused_ppm'] / 1e4:.1f}%, throttled "
             f"{x['throttled_ns'] / 1e9:.2f} s")
    check(0.55e6 <= light["unused_ppm"] <= 0.9e6,
          f"class 1:16 sent a quarter of its rate: "
          f"{light['unused_ppm'] / 1e4:.1f}% unused, want about 75%")
    check(choked["unused_ppm"] <= 0.05e6,
          f"class 1:17 offered 3x its rate left "
          f"{choked['unused_ppm'] / 1e4:.1f}% unused")
    check(choked["choked_ppm"] >= 0.5e6,
          f"class 1:17 offered 3x its rate was held back only "
          f"{choked['choked_ppm'] / 1e4:.1f}% of a second")
    check(light["choked_ppm"] * 3 <= choked["choked_ppm"],
          "class 1:16, sent a quarter of its rate, was held back "
          f"{light['choked_ppm'] / 1e4:.1f}% of a second, not far less "
          "than the choked class")
    check(choked["throttled_ns"] >= 1.5e9,
          f"class 1:17 held back {choked['throttled_ns'] / 1e9:.2f} s "
          "in all")


def t_throttled_count(env):
    """resv_throttled counts exactly the backlogged classes whose NDT is
    still ahead, with many of each kind and after deletes.  The count is
    kept in the tree of backlogged classes (subtree sizes), not walked,
    so it is checked here in every shape the tree takes."""
    a, dev = env.a, env.dev
    paced = list(range(0x16, 0x16 + 40))  # idt 10s: one packet, then wait
    due = list(range(0x3e, 0x3e + 60))  # 10 Mbit/s, held by the shaper
    add_root(env, "linkrate", "10gbit")
    batch = "".join(f"class add dev {dev} parent 1: classid {cid(m)} parq "
                    "idt 10s\n" for m in paced)
    batch += "".join(f"class add dev {dev} parent 1: classid {cid(m)} parq "
                     "rate 10mbit\n" for m in due)
    a.run(["tc", "-batch", "-"], input=batch)
    # Within 10 s from here: the paced classes' second packets wait 10 s.
    for m in paced:
        send(env, m, 9, 100, 2)		# the first leaves, the second waits
    freeze(env)
    time.sleep(0.1)
    for m in due:
        send(env, m, 9, 100, 2)
    time.sleep(0.1)

    def want(paced_left, due_left):
        q, rc = consistent_state(env)
        backlogged = sum(1 for c in rc.values() if c["qlen"])
        check_eq((q["resv_backlogged"], q["resv_throttled"]),
                 (backlogged, paced_left),
                 f"(resv_backlogged, resv_throttled) with {paced_left} "
                 f"classes paced and {due_left} due")
        check_eq(backlogged, paced_left + due_left,
                 "backlogged classes (their qlen)")

    def delete(ms):
        a.run(["tc", "-batch", "-"], input="".join(
            f"class del dev {dev} classid {cid(m)}\n" for m in ms))

    want(len(paced), len(due))
    delete(paced[::4] + due[1::3])
    want(len(paced) - len(paced[::4]), len(due) - len(due[1::3]))
    delete(paced[1::4])
    want(len(paced) - len(paced[::4]) - len(paced[1::4]),
         len(due) - len(due[1::3]))
    del_root(env)


# --- scale -------------------------------------------------------------------

SCALE_NET = "10.99.{}.1/24"
SCALE_DEVS = [f"parqscale{i}" for i in range(1, 9)]
# 100 000 classes through tc -batch within 120 s; a pass at
# PARQ_STRESS_SCALE (make check's quarter on 6.1) makes that share of them
# within that share of the time.
SCALE_N = len(SCALE_DEVS) * max(
    1, round(100000 * min(1.0, ktap.stress_scale()) / len(SCALE_DEVS)))
# Never below 5 s: tc itself takes a while to start under QEMU/TCG.
SCALE_BOUND = max(5.0, 120.0 * SCALE_N / 100000)


def scale_dummy(env, name, i):
    a = env.a
    a.run(["ip", "link", "add", name, "type", "dummy"])
    a.run(["ip", "addr", "add", SCALE_NET.format(i), "dev", name])
    a.run(["ip", "link", "set", name, "up"])


def settle_slab():
    resv.shrink_slabs()
    time.sleep(0.5)
    resv.shrink_slabs()
    return resv.slab_active(), resv.meminfo()


def t_scale_10k(env):
    a = env.a
    N = 10000
    dev = "parqscale0"
    del_root(env)
    scale_dummy(env, dev, 0)
    try:
        slab0, mem0 = settle_slab()
        add_root(env, "linkrate", "100gbit", dev=dev)
        minors = range(resv.RESV_MIN, resv.RESV_MIN + N)
        # Two batches of N/2, to show how the cost of an add grows with
        # the classes already there.
        half = [minors[:N // 2], minors[N // 2:]]
        t = [resv.tc_batch(a, resv.class_add_lines(dev, h, "rate 1mbit"))[0]
             for h in half]
        secs = sum(t)
        diag(f"tc -batch: {N} class add in {secs:.1f}s "
             f"({secs / N * 1e3:.2f} ms per class; the first {N // 2} in "
             f"{t[0]:.1f}s, the next {N - N // 2} in {t[1]:.1f}s)")
        q = qx(env, dev)
        check_eq((q["resv_classes"], q["resv_sum_rate"]), (N, N * 125000),
                 "resv_classes, resv_sum_rate")
        slab1, mem1 = settle_slab()
        grown = resv.grown_caches(slab0, slab1, int(N * 0.9))
        diag(f"slab caches grown by >= {int(N * 0.9)} objects: {grown}; "
             f"Slab +{(mem1['Slab'] - mem0['Slab']) / N:.0f} bytes/class")
        check(grown, "no slab cache grew by one object per class")
        cache = grown[0][0]

        # Traffic through a sample of the classes (SO_PRIORITY 1:minor).
        sample = list(minors)[::N // 50]
        with udp_socket(a) as s:
            for m in sample:
                resv.send_to_class(a, "10.99.0.2", 9, 100, 3, m, sock=s)
        q = resv.wait_qlen(a, dev, 0)
        check_eq(q["qlen"], 0, "qdisc drained")
        cls = resv.classes(a, dev)
        # Every class is listed, over many parts of one dump.
        check_eq(len(cls), N + 2, "classes listed by tc class show")
        bad = [(cid(m), cls[cid(m)]["packets"]) for m in sample
               if cls[cid(m)]["packets"] != 3]
        check(not bad, f"sampled classes without exactly 3 packets: {bad}")
        check_eq(q["resv_dispatches"], 3 * len(sample), "resv_dispatches")

        secs, _ = resv.tc_batch(a, resv.class_del_lines(dev, minors))
        diag(f"tc -batch: {N} class del in {secs:.1f}s")
        q = qx(env, dev)
        check_eq((q["resv_classes"], q["resv_sum_rate"]), (0, 0),
                 "resv_classes, resv_sum_rate after deleting all")
        del_root(env, dev)
    finally:
        a.run(["ip", "link", "del", dev], check=False)
    del_root(env)
    users = module.refcnt()
    check_eq(users, 0, "sch_parq users after deleting every parq qdisc")
    r = module.rmmod()
    check(r.returncode == 0, f"rmmod sch_parq: {r.stderr.strip()}")
    check(not module.loaded(), "sch_parq still loaded")
    slab2, mem2 = settle_slab()
    leak = slab2.get(cache, 0) - slab0.get(cache, 0)
    dslab = mem2["Slab"] - mem0["Slab"]
    diag(f"after: {cache} {leak:+d} objects, Slab {dslab / 1024:+.0f} KiB "
         f"against before the qdisc")
    module.ensure_loaded()
    check(leak < N * 0.05,
          f"{cache}: {leak} more objects than before {N} classes")
    check(dslab < N * 256 * 0.05,
          f"Slab grew by {dslab} bytes over {N} classes")


def count_created(env, devs):
    n = 0
    for dev in devs:
        try:
            n += qx(env, dev)["resv_classes"]
        except (AssertionError, TcError, ValueError):
            pass
    return n


def t_scale_100k(env):
    a = env.a
    N, BOUND = SCALE_N, SCALE_BOUND
    devs = SCALE_DEVS
    per = N // len(devs)
    check(resv.RESV_MIN + per - 1 <= resv.RESV_MAX, "minors overflow")

    # Deleting a qdisc of many classes takes as long as making them.
    undo_s = max(30, BOUND) * ktap.slowdown()
    for i, dev in enumerate(devs, 1):
        # Clean-ups run last first: the qdisc goes, then the device.
        ktap.defer(a.run, ["ip", "link", "del", dev], check=False,
                   timeout=undo_s)
        scale_dummy(env, dev, i)
        ktap.defer(tc, a, "qdisc", "del", "dev", dev, "root", check=False,
                   timeout=undo_s)
    slab0, mem0 = settle_slab()
    lines = []
    for dev in devs:
        add_root(env, "linkrate", "100gbit", dev=dev)
        lines += resv.class_add_lines(
            dev, range(resv.RESV_MIN, resv.RESV_MIN + per), "rate 1mbit")
    t0 = time.monotonic()
    timed_out = False
    try:
        secs, _ = resv.tc_batch(a, lines, timeout=BOUND)
    except subprocess.TimeoutExpired:
        timed_out = True
        secs = time.monotonic() - t0
    made = count_created(env, devs)
    slab1, mem1 = settle_slab()
    per_class = (mem1["Slab"] - mem0["Slab"]) / max(1, made)
    k256 = resv.grown_caches(slab0, slab1, int(made * 0.9))
    diag(f"tc -batch: {made} of {N} classes ({len(devs)} qdiscs of "
         f"{per}) in {secs:.1f}s" + (" (killed at the bound)"
                                     if timed_out else ""))
    diag(f"memory: Slab +{per_class:.0f} bytes per class; caches grown "
         f"{[(c, round(g / max(1, made), 2)) for c, g in k256]} "
         "objects per class")
    check(not timed_out and made == N,
          f"{N} classes through tc -batch took more than {BOUND:.0f}s: "
          f"{made} made in {secs:.0f}s")
    check(secs < BOUND, f"{N} classes took {secs:.1f}s")


def main():
    suite = ktap.Suite("parq_resv")
    rate = "rates are measured from iperf3 at up to 100 Mbit/s"
    cases = [
        ("rates 5/20/50 Mbit/s alone, refused changes", t_rates_alone, 200,
         rate),
        ("rates under parallel and local load, best effort gets 25 Mbit/s",
         t_rates_load, 200, rate),
        ("idt 1ms: 1000 packets/s", t_idt, 150,
         "1000 packets/s are timed to 2%"),
        ("idt 1ms admitted at MTU 1500 paces 9000-byte packets by size",
         t_idt_jumbo, 60, None),
        ("admission: exact refusals, old config stays", t_admission, 60,
         None),
        ("admission: no link speed needs linkrate", t_no_link_speed, 60,
         None),
        ("filters u32/flower/bpf/matchall and priority into reserved "
         "classes", t_filters, 60, None),
        ("tc class show right after every class change, with and without "
         "filters", t_show_after_change, 60, None),
        ("a class that filters steer into cannot be deleted",
         t_filter_holds_class, 60, None),
        ("class delete with packets queued", t_delete_queued, 60, None),
        ("class delete/add under traffic", t_delete_live, 90,
         "iperf3 must load the re-added class within its run"),
        ("xstats resv_* fields", t_xstats, 60, None),
        ("a class's use of its rate: unused and choked shares",
         t_use_of_rate, 60, "iperf3 must offer 10 and 30 Mbit/s"),
        ("resv_throttled exact with 100 backlogged classes, after deletes",
         t_throttled_count, 120, None),
        ("scale: 10000 classes, traffic, delete, unload, no leak",
         t_scale_10k, 400, None),
        (f"scale: {SCALE_N} classes on {len(SCALE_DEVS)} qdiscs via tc "
         f"-batch in < {SCALE_BOUND:.3g} s",
         t_scale_100k, 300, "a time bound"),
    ]
    for name, fn, timeout, speed in cases:
        suite.case(name, fn, timeout, speed=speed)
    return lab.run(suite, "resv", tools=("iperf3",))


if __name__ == "__main__":
    sys.exit(main())
