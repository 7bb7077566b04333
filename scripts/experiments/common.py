"""What the experiments share: parameters per preset, the plan of steps and
its progress line, the schedulers under test, measurements with parq-bench,
slowdowns and their spread, CSV, plots and Markdown.

An experiment module (exp1_sender.py, ...) defines
  NAME, TITLE      "exp1", "Experiment 1: sending side"
  PARAMS           {"full": Params, "quick": Params, "smoke": Params}
  steps(p)         the plan: [Step], each measuring one configuration
  lab(p, group)    a context manager making the namespaces, servers, ...
                   that the steps of @group run in (its "env")
  report(rows, p, out)
                   writes <NAME>.csv, .png and .md into @out and returns
                   the headline lines for summary.md
and driver.py (scripts/experiments/run) runs the plans (run_steps()) with
one progress line per step and an estimate of the time left.

Definitions (Documentation/experiments.md): a measurement is the
completion time of one exchange of Params.count messages (parq-bench's
completion_ns).  T1 is measured without interference, per scheduler, in
every repetition; a slowdown is T2/T1 (baselines) or T3/T1 (parq) with T1
of the same scheduler and repetition.  The figures are the median over
the repetitions with their minimum and maximum.
"""
import csv
import itertools
import math
import os
import signal
import statistics
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field

from parqlab import bench, jobs, ktap, parqd, scenarios, traffic
from parqlab import tc as tclib
from parqlab.netns import Topology


EF = traffic.TOS_EF
PAR_PORT = scenarios.PING_PORT		# the parallel job's server
BULK_PORT = scenarios.BULK_PORT		# the local job's sink
RANK_PORT = 12000			# every rank of a collective
# The switch port in front of a receiver: a 100 Mbit/s FIFO of 300 kB
# (24 ms), as in selftests/parq_receiver.py.
SWITCH_FIFO = ("tbf", "rate", "100mbit", "burst", "32k", "limit", "300kb")
PARQD = "parq+parqd"			# parq on the senders, parqd everywhere
# The kinds of a local job (Params.local_kind): a bulk stream
# (local_job()), or messages at a fixed rate (MessageMeter).
BULK = "bulk"
MESSAGES = "messages"


@dataclass
class Params:
    """What one run of an experiment covers (fields unused by an
    experiment keep their defaults)."""
    reps: int = 5
    count: int = 100			# messages (iterations) per measurement
    schedulers: tuple = tuple(scenarios.ALL_SCHEDULERS)
    parallel_sizes: tuple = (64, 2048)
    local_sizes: tuple = (2048, 4096, 8192, 16384)
    # The local job of local_sizes: bulk streams (BULK), or messages at a
    # fixed rate (MESSAGES, experiment 1), then with one more column of a
    # bulk stream of local_bulk-byte messages when that is not 0.
    local_kind: str = BULK
    local_bulk: int = 0
    streams: int = 1			# TCP connections of a local job
    settle: float = 0.5			# s between starting it and measuring
    hosts: tuple = (4, 8)		# exp3
    background: int = 3		# exp4: bulk flows beside the apps
    extra: dict = field(default_factory=dict)


@dataclass
class Step:
    """One measurement step: @run(env) returns rows, each completed with
    @fields; @est is the expected duration in seconds (for the ETA)."""
    label: str
    est: float
    run: object
    fields: dict
    group: object = None


def measuring(*args):
    """A Step's run: the lab env's measure(*args)."""
    return lambda env: env.measure(*args)


def kib(size):
    """"2KiB", "64B": a message size for labels."""
    return f"{size // 1024}KiB" if size >= 1024 and size % 1024 == 0 \
        else f"{size}B"


def local_label(size):
    """A local job's message size for labels; "none": no local job."""
    return kib(size) if size else "none"


def duration(seconds):
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


# --- the plan and its progress -------------------------------------------

class Progress:
    """The progress line: "[ 12/80 ] exp1 pfifo local=8KiB rep 3/5 ...
    ETA 6m10s".  The estimate is the remaining steps' expected durations
    scaled by how the steps done so far compared with theirs."""

    def __init__(self, steps, out=sys.stdout):
        self.total = len(steps)
        self.left = sum(s.est for s in steps)
        self.done = self.done_est = 0
        self.t0 = time.monotonic()
        self.out = out

    PRIOR = 60.0  # s of expected time the first guess weighs as

    def eta(self):
        """The expected time left, scaled by (time taken + PRIOR) /
        (time expected + PRIOR) for the steps done: the first steps, which
        also set up the namespaces, do not swing it."""
        elapsed = time.monotonic() - self.t0
        return self.left * (elapsed + self.PRIOR) / \
            (self.done_est + self.PRIOR)

    def start(self, step):
        w = len(str(self.total))
        print(f"[{self.done + 1:>{w + 1}}/{self.total} ] {step.label} ... "
              f"ETA {duration(self.eta())}", file=self.out, flush=True)

    def finish(self, step):
        self.done += 1
        self.done_est += step.est
        self.left -= step.est

    def elapsed(self):
        return time.monotonic() - self.t0


def run_steps(steps, lab, progress, failures):
    """Run @steps in order, opening lab(group) for each run of steps of
    one group; returns their rows.  A step that fails is tried once more,
    then recorded in @failures (label: error) and left out
    (PARQ_EXPERIMENTS_DEBUG=1 prints the tracebacks)."""
    rows = []
    for group, members in itertools.groupby(steps, key=lambda s: s.group):
        with lab(group) as env:
            for step in members:
                progress.start(step)
                rows += _attempt(step, env, failures)
                progress.finish(step)
    return rows


class StepTimeout(Exception):
    """A step ran past its time limit."""


@contextmanager
def time_limit(seconds):
    """Raise StepTimeout in the body after @seconds (SIGALRM).  An alarm
    set outside (a selftest case's) is put back, less the time spent."""
    def fire(signum, frame):
        raise StepTimeout(f"no end after {seconds:.0f} s")
    old = signal.signal(signal.SIGALRM, fire)
    outer = signal.alarm(0)
    t0 = time.monotonic()
    signal.alarm(max(1, int(min(seconds, outer or seconds))))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        if outer:
            signal.alarm(max(1, int(outer - (time.monotonic() - t0))))


def _attempt(step, env, failures, tries=2):
    """The step's rows; it may take ten times its estimate (at least two
    minutes) before it counts as failed."""
    limit = max(120, 10 * step.est)
    for n in range(1, tries + 1):
        try:
            with time_limit(limit):
                rows = step.run(env)
            return [dict(step.fields, **r) for r in rows]
        except Exception as e:  # noqa: B902 - one step never ends the run
            why = f"{type(e).__name__}: {e}"
            print(f"    {step.label}: try {n} failed: {why}", flush=True)
            if os.environ.get("PARQ_EXPERIMENTS_DEBUG"):
                traceback.print_exc()
    failures[step.label] = why
    return []


# --- schedulers --------------------------------------------------------------

def configurations(p, with_parqd=False):
    """The configurations an experiment compares: @p's schedulers, and
    parq with parqd when asked (and parq is among them)."""
    out = list(p.schedulers)
    if with_parqd and "parq" in out:
        out.append(PARQD)
    return out


class Configurations:
    """The scheduler configuration on every (ns, dev) of @targets, behind
    @rate (None: no shaper).  use(name) installs scheduler @name (a key
    of @installers, by default scenarios.ALL_SCHEDULERS, or PARQD: parq,
    and parqd on @cluster) unless it is already there, so that the steps
    of one configuration share its installation; @extra(ns, dev, name)
    runs after installing.  close() (or the end of a with-block) removes
    it all."""

    def __init__(self, targets, rate=scenarios.RATE, cluster=None,
                 extra=None, installers=None):
        self.targets, self.rate = list(targets), rate
        self.cluster, self.extra = cluster, extra
        self.installers = installers or scenarios.ALL_SCHEDULERS
        self.current = None

    def use(self, name):
        if name == self.current:
            return
        self.close()
        install = self.installers["parq" if name == PARQD else name]
        for ns, dev in self.targets:
            install(ns, dev, rate=self.rate)
            if self.extra:
                self.extra(ns, dev, name)
        self.current = name
        if name == PARQD:
            self.cluster.start()

    def close(self):
        """Stop parqd (raises unless every one exits 0), remove the
        schedulers."""
        try:
            if self.current == PARQD:
                self.cluster.stop()
        finally:
            if self.cluster:
                self.cluster.close()
            for ns, dev in self.targets:
                scenarios.clear(ns, dev)
            self.current = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def probe_prefix(ns):
    """The argv prefix of every process of the parallel job: CPU 0 at
    real-time priority (where allowed).  In a 2-vCPU VM under a busy host,
    a wake-up across vCPUs can wait for the host's scheduler: unpinned,
    idle round trips are 0.3 or 8 ms at random; pinned, 0.3 ms."""
    return ["taskset", "-c", "0"] + traffic.realtime_prefix(ns)


WARM_UP = 10			# messages of sender_lab()'s first exchange


@contextmanager
def sender_lab(name, installers=None):
    """Experiment 1's lab (7's too): namespaces A and B (netns.Topology
    @name), on B a parq-bench server for the parallel job (EF, under
    probe_prefix()) and one for the local job, the scheduler under test on
    A's veth (Configurations of @installers).  Yields (topo,
    Configurations, the probe prefix)."""
    with Topology(name) as topo:
        prefix = probe_prefix(topo.a)
        ip = topo.ip_b()
        with bench.Server(topo.b, ip, PAR_PORT, tos=EF, prefix=prefix), \
                bench.Server(topo.b, ip, BULK_PORT), \
                Configurations([(topo.a, topo.dev_a())],
                               installers=installers) as confs:
            # Untimed, as the parallel job's (exchange()): the first
            # exchange of a lab pays for what is cold (the server's first
            # message, the neighbour's entry), which would weigh on the
            # first step's time alone only.
            exchange(topo.a, f"{ip}:{PAR_PORT}", 64, WARM_UP, prefix)
            yield topo, confs, prefix


def switch_fifo(star, host):
    """The receive-side bottleneck: a FIFO on the switch port toward
    @host."""
    tclib.tc(star.s, "qdisc", "replace", "dev", star.port(host), "root",
             *SWITCH_FIFO)


@contextmanager
def parq_job(namespaces, cgroup, before_removal=None):
    """Cgroup @cgroup (a path below /sys/fs/cgroup) made a job (parqctl
    job add) in each of @namespaces for the body; then the jobs deleted,
    @before_removal() called if given, and the cgroup removed."""
    ns0 = namespaces[0]
    jobs.sh(ns0, f"mkdir -p {jobs.CG}/{cgroup}")
    added = []
    try:
        for ns in namespaces:
            r = jobs.parqctl(ns, "job", "add", f"{jobs.CG}/{cgroup}")
            if r.returncode != 0:
                raise RuntimeError(f"parqctl job add in {ns.name}: "
                                   f"{r.stderr.strip()}")
            added.append(ns)
        yield
    finally:
        for ns in added:
            jobs.parqctl(ns, "job", "del", f"{jobs.CG}/{cgroup}")
        if before_removal:
            before_removal()
        jobs.sh(ns0, f"rmdir {jobs.CG}/{cgroup} "
                f"{jobs.CG}/{cgroup.split('/')[0]}", check_rc=False)


def wait_lease(cluster, h, timeout=30):
    """Wait until parqd's admission role on @h (of parqd.Cluster
    @cluster) holds its etcd lease."""
    deadline = time.monotonic() + timeout
    while not cluster.metrics(h).get("parqd_admission_lease_held"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"parqd on {h}: no etcd lease: "
                               f"{cluster.log(h)}")
        time.sleep(0.2)


def receivers_cluster(star, receivers, workdir):
    """parqd with @receivers in the receiving role, every other host of
    @star in the sending role (parqd.Settings' defaults)."""
    senders = [h for h in star.hosts if h not in receivers]
    return parqd.Cluster(star, receivers, senders, workdir)


def with_grants(confs, receivers, measure):
    """measure()'s rows, each with "grants": how many GRANT messages the
    @receivers' parqd sent meanwhile (when confs runs parqd)."""
    if confs.current != PARQD:
        return measure()

    def sent():
        return sum(confs.cluster.metrics(h).get("parqd_grants_sent_total",
                                                0) for h in receivers)
    before = sent()
    rows = measure()
    time.sleep(0.15)		# parqd writes its metrics every 100 ms
    for r in rows:
        r["grants"] = sent() - before
    return rows


# --- measurements ------------------------------------------------------------

def figures(res):
    """completion_ms, mean_us, p99_us of a parq-bench run (root) JSON, and
    when it ran: start_ns, end_ns (CLOCK_MONOTONIC)."""
    lat = res["latency_ns"]
    return {"completion_ms": res["completion_ns"] / 1e6,
            "mean_us": lat["mean"] / 1e3, "p99_us": lat["p99"] / 1e3,
            "start_ns": res["start_ns"],
            "end_ns": res["start_ns"] + res["completion_ns"]}


def exchange(ns, peer, size, count, prefix=()):
    """The parallel job's one-to-one exchange (DSCP EF); figures()."""
    return figures(bench.exchange(ns, peer, size=size, count=count, tos=EF,
                                  prefix=prefix))


def in_parq(ns, dev, run):
    """run()'s row (a dict) with the parallel class's time in the parq
    qdisc of @dev during the call added (tclib.sojourn(), tc -s):
    parq_mean_us and parq_p99_us, the bound of the power-of-two bucket
    that holds the 99th percentile.  Both None under another scheduler;
    parq_p99_us None past the last bucket."""
    row, soj = tclib.with_sojourn(ns, dev, run)
    _, mean, p99 = soj or (0, None, None)
    return dict(row, parq_mean_us=None if mean is None else mean / 1000,
                parq_p99_us=None if p99 is None else p99 / 1000)


# The target of the parallel class's time in parq: one local
# frame's serialization at the shaper's rate (a 1514-byte frame at
# 100 Mbit/s), plus the timer's slack, which is not in it: that is
# measured in the step itself (with_timer()).
SOJOURN_TARGET_US = 1514 * 8 / 100
# The timer's slack, as the parallel job sees it: parq-bench timer under
# its prefix (CPU 0, SCHED_FIFO), TIMER_WAKEUPS wake-ups TIMER_INTERVAL_US
# apart (0.1 s and whatever they are late), right after the exchange and
# with the local job, if any, still running.  Its p99 lateness is an upper
# estimate of how late parq's shaper watchdog fires
# (Documentation/parq-bench.md).
TIMER_WAKEUPS = 500
TIMER_INTERVAL_US = 200


def with_timer(ns, prefix, rows):
    """@rows (in_parq()'s, of one step) with the timer's p99 lateness
    measured now in @ns (timer_p99_us; its median, timer_p50_us), the
    target it makes (parq_target_us: SOJOURN_TARGET_US plus the p99) and
    whether the row's time in parq met it (parq_within: 1 or 0; a p99
    past the last bucket did not), when they are parq's rows; as they are
    otherwise."""
    if not rows or rows[0].get("parq_mean_us") is None:
        return rows
    res = bench.timer(ns, TIMER_WAKEUPS, TIMER_INTERVAL_US, prefix)
    late = res["lateness_ns"]["p99"] / 1e3
    target = SOJOURN_TARGET_US + late
    return [dict(r, timer_p99_us=late,
                 timer_p50_us=res["lateness_ns"]["p50"] / 1e3,
                 parq_target_us=target,
                 parq_within=int(r.get("parq_p99_us") is not None and
                                 r["parq_p99_us"] <= target))
            for r in rows]


# The local job's cost (local_job()'s LocalMeter): its progress sampled
# every LOCAL_PROGRESS_MS, or LOCAL_PROGRESS_LONG_MS where the parallel
# runs take seconds (exp4, exp5): sampling costs the emulated CPUs, and
# sampling exp4's 3 background flows every 10 ms takes enough from the
# applications' round trips to show in parq's ratios.  Its rate alone is
# taken over the LOCAL_ALONE_S before the measurement.  The settling time
# (p.settle, 0.5 s) is stretched until every stream has been connected
# that long: a connection can come late (under parqd a SYN can wait for
# credit, for hundreds of ms), up to LOCAL_CONNECT_S (times
# ktap.slowdown(): under the debug kernel, with parqd on 4 hosts, exp3's
# stream may not connect within 5 s).
LOCAL_PROGRESS_MS = 10
LOCAL_PROGRESS_LONG_MS = 100
LOCAL_ALONE_S = 0.3
LOCAL_CONNECT_S = 5.0


@contextmanager
def local_job(ns, peer, size, p, streams=None,
              progress_ms=LOCAL_PROGRESS_MS):
    """A local job streaming @size-byte messages to @peer (@streams or
    p.streams connections, DSCP 0) for the body, started p.settle seconds
    before it; yields a LocalMeter of it, sampled every @progress_ms, or
    None (and runs nothing) when @size or @streams is 0.  Fails if the job
    ended early."""
    streams = p.streams if streams is None else streams
    if not size or not streams:
        yield None
        return
    with bench.Bulk(ns, peer, size, streams=streams,
                    progress_ms=progress_ms) as job:
        time.sleep(p.settle)
        connected = job.first_ns(LOCAL_CONNECT_S * ktap.slowdown()) / 1e9
        time.sleep(max(0.0, connected + LOCAL_ALONE_S - time.monotonic()))
        job.check_running("before the measurement")
        yield LocalMeter(job, time.monotonic_ns())
        job.check_running("during the measurement")


# /proc/stat's CPU columns, in its order (proc(5)).
CPU_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq",
               "softirq", "steal")


def cpu_times():
    """The machine's CPU time so far, all CPUs together, in clock ticks
    per /proc/stat column (CPU_COLUMNS)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:1 + len(CPU_COLUMNS)]]


@contextmanager
def cpu_meter(period_s=0.02):
    """Samples the machine's CPU time every @period_s in a thread while
    the block runs (reading /proc/stat only, so the sampling itself costs
    little); yields share(start_ns, end_ns): {"cpu_idle_pct",
    "cpu_softirq_pct"}, the shares of all CPUs' time between the first
    and the last sample taken from @start_ns to @end_ns (CLOCK_MONOTONIC),
    or Nones when fewer than two fall there."""
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append((time.monotonic_ns(), cpu_times()))
            done.wait(period_s)

    def share(start_ns, end_ns):
        inside = [s for s in samples if start_ns <= s[0] <= end_ns]
        if len(inside) < 2:
            return {"cpu_idle_pct": None, "cpu_softirq_pct": None}
        d = [b - a for a, b in zip(inside[0][1], inside[-1][1])]
        total = sum(d) or 1
        return {"cpu_idle_pct": 100 * (d[CPU_COLUMNS.index("idle")] +
                                       d[CPU_COLUMNS.index("iowait")]) /
                total,
                "cpu_softirq_pct": 100 * d[CPU_COLUMNS.index("softirq")] /
                total}
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield share
    finally:
        done.set()
        t.join()


class LocalMeter:
    """The local job's cost: its rate (Mbit/s that the server
    acknowledged) alone, over LOCAL_ALONE_S before the measurement began
    at @ready_ns, and during each of the parallel job's runs."""

    def __init__(self, job, ready_ns):
        self.job = job
        t0 = ready_ns - int(LOCAL_ALONE_S * 1e9)
        if job.first_ns() > t0:
            raise AssertionError(
                f"the local job connected "
                f"{(ready_ns - job.first_ns()) / 1e6:.0f} ms before the "
                f"measurement: too late to measure it alone")
        self.alone_mbit = job.mbit(t0, ready_ns)

    def add(self, row, name="local"):
        """@row (a parallel run's figures(), which has its start_ns and
        end_ns) with @name_alone_mbit, @name_mbit (during the run) and
        @name_kept (during over alone: 1, the parallel job cost the local
        job nothing; 0, it stopped it)."""
        during = self.job.mbit(row["start_ns"], row["end_ns"])
        row.update({f"{name}_alone_mbit": self.alone_mbit,
                    f"{name}_mbit": during,
                    f"{name}_kept": during / self.alone_mbit
                    if self.alone_mbit else math.nan})
        return row


# Experiment 1's local job at message level: an open loop of
# one message every LOCAL_MSG_INTERVAL_US, each answered by 32 bytes,
# DSCP 0.  The rate is fixed and the size varies, as the seed's local
# stream (its figure 8), so what the job puts in front of the qdisc grows
# with its message size: 500 messages a second offer 8.2 Mbit/s of 2 KiB
# messages and 65.5 of 16 KiB ones on a 100 Mbit/s link.  A bulk stream,
# by contrast, fills the queue whatever its message size (TCP coalesces
# its writes).  The job's cost is its messages' mean round trip beside
# the parallel job against alone, LOCAL_MSG_COUNT messages each.
LOCAL_MSG_INTERVAL_US = 2000
LOCAL_MSG_COUNT = 200
# A background job runs until it is stopped: this many messages are more
# than any step lasts (the step's own time limit ends it first).
BACKGROUND_COUNT = 10 ** 6


def local_messages(ns, peer, size, count=LOCAL_MSG_COUNT):
    """The message-level local job once: @count messages of @size bytes to
    the Server at @peer, one every LOCAL_MSG_INTERVAL_US; figures()."""
    return figures(bench.exchange(ns, peer, size=size, count=count,
                                  interval_us=LOCAL_MSG_INTERVAL_US))


@contextmanager
def background(ns, peer, settle, **kw):
    """bench.Exchange(@ns, @peer, count=BACKGROUND_COUNT, **kw) for the
    body, started @settle seconds before it.  Fails if the job has ended
    before the body does (it cannot have sent them all: it failed)."""
    job = bench.Exchange(ns, peer, count=BACKGROUND_COUNT, **kw)
    try:
        time.sleep(settle)
        job.check_running("before the measurement")
        yield job
        job.check_running("during the measurement")
    finally:
        job.stop()


class MessageMeter:
    """The message-level local job's cost: its mean round trip alone, and
    beside each parallel size's job running in the background (closed
    loop, as the measured exchange)."""

    def __init__(self, ns, peer, size):
        self.ns, self.peer, self.size = ns, peer, size
        self.alone_us = local_messages(ns, peer, size)["mean_us"]

    def add(self, row, parallel):
        """@row with local_alone_us, local_us (beside parallel(), a
        context manager that runs the parallel job of @row's size) and
        local_kept: alone over beside (1, the parallel job cost the local
        job nothing; 0, it stopped it)."""
        with parallel():
            beside = local_messages(self.ns, self.peer, self.size)
        row.update(local_alone_us=self.alone_us,
                   local_us=beside["mean_us"],
                   local_kept=self.alone_us / beside["mean_us"])
        return row


# --- slowdowns and their spread ----------------------------------------------

def add_slowdowns(rows, same, is_base, value="completion_ms"):
    """Set each row's "slowdown": its @value over that of the row with
    is_base(row) and the same @same fields (NaN when that is missing)."""
    base = {tuple(r[k] for k in same): r[value] for r in rows if is_base(r)}
    for r in rows:
        b = base.get(tuple(r[k] for k in same))
        r["slowdown"] = r[value] / b if b else math.nan


def summarize(rows, keys, value="slowdown"):
    """{tuple of @keys: (median, min, max, n)} of @value over the rows
    (the repetitions) with those keys; NaNs are left out."""
    groups = {}
    for r in rows:
        v = r.get(value)
        if v is not None and not math.isnan(v):
            groups.setdefault(tuple(r[k] for k in keys), []).append(v)
    return {k: (statistics.median(v), min(v), max(v), len(v))
            for k, v in groups.items()}


def targets(rows, keys):
    """{tuple of @keys: "T (lo-hi): k of n"}: the median (range) of the
    rows' parq_target_us (with_timer()) and in how many of them the time
    in parq met it, for the keys whose rows have one."""
    out = {}
    for k, stat in summarize(rows, keys, "parq_target_us").items():
        within = sum(1 for r in rows if tuple(r[f] for f in keys) == k
                     and r.get("parq_within") == 1)
        out[k] = f"{cell(stat, 0)}: {within} of {stat[3]}"
    return out


def cell(stat, digits=2):
    """"2.31 (1.90-2.80)": a median with its range, or "-"."""
    if stat is None:
        return "-"
    med, lo, hi, _ = stat
    return f"{med:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


# --- output ----------------------------------------------------------------

def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_value(r.get(k)) for k in fields})


def _csv_value(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return "" if v is None else v


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" if i == 0 else "---:"
                               for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_md(path, title, intro, sections):
    """A Markdown page: # @title, @intro, then (heading, text) sections."""
    parts = [f"# {title}", intro.strip()]
    for heading, text in sections:
        parts += [f"## {heading}", text.strip()]
    with open(path, "w") as f:
        f.write("\n\n".join(parts) + "\n")


COLOURS = {"pfifo": "#555555", "prio": "#1f77b4", "ets": "#2ca02c",
           "fq_codel": "#ff7f0e", "cake": "#8c564b", "fq": "#e377c2",
           "fq+small weights": "#7f7f7f",
           "parq": "#d62728",
           PARQD: "#9467bd",
           # the simulation's (sim_scale.py)
           "fifo": "#555555", "parqd": "#9467bd", "parqd+cs6": "#17becf",
           "parqd+cs6, local 5%": "#bcbd22"}


@dataclass
class Panel:
    """One subplot: x positions are the indices of @xticks; @series maps a
    scheduler to its points {x index: (median, min, max, n)}."""
    title: str
    xlabel: str
    ylabel: str
    xticks: list
    series: dict
    hline: float = None
    logy: bool = False


def plot(path, title, panels):
    """One PNG with @panels side by side, medians joined by lines, the
    range of the repetitions as error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator, \
        NullFormatter

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for name, points in panel.series.items():
            xs = sorted(points)
            if not xs:
                continue
            med = [points[x][0] for x in xs]
            err = [[points[x][0] - points[x][1] for x in xs],
                   [points[x][2] - points[x][0] for x in xs]]
            ax.errorbar(xs, med, yerr=err, marker="o", capsize=3,
                        label=name, color=COLOURS.get(name))
        if panel.hline is not None:
            ax.axhline(panel.hline, color="black", linestyle=":",
                       linewidth=1)
        if panel.logy:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
        ax.set_xticks(range(len(panel.xticks)))
        ax.set_xticklabels(panel.xticks)
        ax.set_xlim(-0.3, len(panel.xticks) - 0.7)
        ax.set_title(panel.title)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", framealpha=0.7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def series(stats, names, xs, key):
    """Panel series from summarize() output: for each name, {index of x
    in @xs: stat}, with the stats' key built by key(name, x)."""
    out = {}
    for name in names:
        pts = {i: stats[key(name, x)] for i, x in enumerate(xs)
               if key(name, x) in stats}
        out[name] = pts
    return out
