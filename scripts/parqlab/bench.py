"""parq-bench in network namespaces: servers, message exchanges (one-to-one
and collectives) and bulk streams, with their JSON results.

    srv = bench.Server(topo.b, topo.ip_b(), 11111, tos=traffic.TOS_EF)
    res = bench.exchange(topo.a, f"{topo.ip_b()}:11111", size=64, count=100,
                         tos=traffic.TOS_EF)      # the root's JSON (dict)
    res["completion_ns"], res["latency_ns"]["mean"]
    with bench.Bulk(topo.a, f"{topo.ip_b()}:5201", size=16384, streams=4):
        ...                                       # local job running
    res = bench.collective(nss, ips, 12000, "barrier", size=64, count=100)

The binary is $PARQ_USERSPACE_BUILD/bench/parq-bench (default
build/userspace); Documentation/parq-bench.md says what it measures.
"""
import bisect
import json
import os
import subprocess
import threading

from . import repo_path
from .traffic import wait_listen

BUILD = repo_path(os.environ.get("PARQ_USERSPACE_BUILD", "build/userspace"))
PARQ_BENCH = BUILD / "bench" / "parq-bench"


def available():
    return os.access(PARQ_BENCH, os.X_OK)


def _marking(tos):
    return [] if tos is None else ["--tos", str(tos)]


def _stop(proc, grace=5, read=True):
    """SIGTERM, then SIGKILL after @grace seconds; returns stdout, or None
    without @read (another thread reads it)."""
    if proc.poll() is None:
        proc.terminate()
    wait = proc.communicate if read else proc.wait
    try:
        out = wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        out = wait(timeout=5)
    return out[0] if read else None


def _parse(argv, out, err, rc):
    """parq-bench's JSON result; raises with its error text if it failed."""
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {rc}: "
                           f"{(err or out or '')[-400:].strip()}")
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        raise RuntimeError(f"{' '.join(argv)}: no JSON: {out[-300:]!r}") \
            from None


def _transport(udp):
    return ["--udp"] if udp else []


class Server:
    """parq-bench serve in @ns on @ip:@port (TCP, or UDP if @udp),
    answering one-to-one clients and sinking bulk streams, its sockets
    marked @tos; @prefix: argv to run it under.  A context manager."""

    def __init__(self, ns, ip, port, tos=None, prefix=(), udp=False):
        argv = [str(PARQ_BENCH), "serve", "--listen", f"{ip}:{port}"]
        self.proc = ns.popen(list(prefix) + argv + _marking(tos) +
                             _transport(udp), stderr=subprocess.DEVNULL)
        wait_listen(ns, port, "udp" if udp else "tcp")

    def stop(self):
        _stop(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _exchange_argv(peer, size=64, count=100, tos=None, prefix=(),
                   interval_us=0, udp=False):
    return list(prefix) + [str(PARQ_BENCH), "run", "--pattern",
                           "one-to-one", "--peers", peer, "--size",
                           str(size), "--count", str(count),
                           "--interval", str(interval_us)] + \
        _marking(tos) + _transport(udp)


def exchange(ns, peer, size=64, count=100, tos=None, timeout=120,
             prefix=(), interval_us=0, udp=False):
    """A one-to-one exchange from @ns to the Server at @peer
    ("ADDR:PORT"): @count messages of @size bytes, back to back (each waits
    for the previous reply) or, with @interval_us, one every @interval_us
    whatever the replies; over UDP if @udp.  Returns parq-bench's JSON.
    @prefix: argv to run it under (e.g. traffic.realtime_prefix())."""
    argv = _exchange_argv(peer, size, count, tos, prefix, interval_us, udp)
    p = ns.run(argv, timeout=timeout, check=False)
    return _parse(argv, p.stdout, p.stderr, p.returncode)


def timer(ns, count=1000, interval_us=200, prefix=(), timeout=60):
    """parq-bench timer in @ns under @prefix: @count wake-ups
    @interval_us apart, and how late each came (its JSON,
    "lateness_ns")."""
    argv = list(prefix) + [str(PARQ_BENCH), "timer", "--count", str(count),
                           "--interval", str(interval_us)]
    p = ns.run(argv, timeout=timeout, check=False)
    return _parse(argv, p.stdout, p.stderr, p.returncode)


class Exchange:
    """exchange() in the background, for traffic that must run while a
    test does something else: is_alive() until it has sent its @count
    messages, stop() ends it at once.  The arguments are exchange()'s."""

    def __init__(self, ns, peer, **kw):
        self.proc = ns.popen(_exchange_argv(peer, **kw))

    def is_alive(self):
        return self.proc.poll() is None

    def check_running(self, what=""):
        """Raise AssertionError (saying why) if the exchange has ended, as
        Bulk's: for one whose @count outlasts what it runs beside."""
        if not self.is_alive():
            _, err = self.proc.communicate(timeout=5)
            raise AssertionError(f"exchange ended {what}: exit "
                                 f"{self.proc.returncode}: "
                                 f"{err[-300:].strip()}")

    def stop(self):
        _stop(self.proc)


def collective(nss, ips, port, pattern, size=64, count=100, tos=None,
               timeout=180, prefix=()):
    """One run of @pattern with rank i in namespace @nss[i] listening on
    @ips[i]:@port; rank 0 (the root) is the last started and the one
    timed.  Returns the root's JSON."""
    peers = ",".join(f"{ip}:{port}" for ip in ips)
    base = list(prefix) + [str(PARQ_BENCH), "run", "--pattern", pattern,
                           "--peers", peers, "--size", str(size)] + \
        _marking(tos)
    others = [ns.popen(base + ["--rank", str(r), "--idle-timeout", "30"])
              for r, ns in enumerate(nss) if r > 0]
    try:
        argv = base + ["--rank", "0", "--count", str(count)]
        p = nss[0].run(argv, timeout=timeout, check=False)
        root = _parse(argv, p.stdout, p.stderr, p.returncode)
        for r in others:
            out, err = r.communicate(timeout=30)
            _parse(r.args, out, err, r.returncode)
        return root
    finally:
        for r in others:
            _stop(r)


class Bulk:
    """A local job: @streams parq-bench bulk connections from @ns to the
    Server at @peer, @size-byte messages back to back, until stop() (or
    @seconds; then results() has each stream's rate).  With @progress_ms,
    each stream reports what the server has acknowledged every so many ms,
    and mbit() reads the job's rate over any window of the run.  @prefix:
    argv to run each stream under (e.g. taskset).  A context manager."""

    def __init__(self, ns, peer, size, streams=1, seconds=600, tos=None,
                 progress_ms=0, prefix=()):
        self.argv = list(prefix) + [
            str(PARQ_BENCH), "bulk", "--to", peer, "--size", str(size),
            "--seconds", str(seconds)] + _marking(tos)
        if progress_ms:
            self.argv += ["--progress-ms", str(progress_ms)]
        self.procs = [ns.popen(self.argv) for _ in range(streams)]
        # Per stream: [(t_ns, bytes acked)], and the rest of its stdout
        # (the summary), read by a thread while it runs.
        self.samples = [[] for _ in self.procs]
        self._rest = [[] for _ in self.procs]
        self._cv = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(i,),
                                          daemon=True)
                         for i in range(len(self.procs))] \
            if progress_ms else []
        for t in self._readers:
            t.start()

    def _read(self, i):
        for line in self.procs[i].stdout:
            # A sample is one line of JSON; the summary spans several
            # (its first is "{").
            sample = None
            if line.startswith('{"'):
                try:
                    sample = json.loads(line)
                except json.JSONDecodeError:
                    pass
            with self._cv:
                if not isinstance(sample, dict) or "t_ns" not in sample:
                    self._rest[i].append(line)
                else:
                    self.samples[i].append((sample["t_ns"],
                                            sample["bytes_acked"]))
                    self._cv.notify_all()

    def acked(self, t_ns, timeout=5.0):
        """Bytes the server had acknowledged at CLOCK_MONOTONIC @t_ns,
        summed over the streams (interpolated between samples); waits up to
        @timeout s for every stream's first sample after @t_ns.  Raises if
        a stream has none from before @t_ns, or none after."""
        with self._cv:
            if not self._cv.wait_for(
                    lambda: all(s and s[-1][0] >= t_ns
                                for s in self.samples), timeout):
                raise AssertionError(
                    f"bulk stream: no progress sample after {t_ns} ns")
            return sum(_interpolate(s, t_ns) for s in self.samples)

    def first_ns(self, timeout=5.0):
        """When the last stream to connect took its first sample."""
        with self._cv:
            if not self._cv.wait_for(lambda: all(self.samples), timeout):
                raise AssertionError("bulk stream: no progress sample")
            return max(s[0][0] for s in self.samples)

    def mbit(self, t0_ns, t1_ns):
        """The job's rate (Mbit/s of what the server acknowledged) from
        @t0_ns to @t1_ns, CLOCK_MONOTONIC (time.monotonic_ns(), parq-bench's
        "start_ns")."""
        return (self.acked(t1_ns) - self.acked(t0_ns)) * 8e3 / \
            (t1_ns - t0_ns)

    def check_running(self, what=""):
        """Raise AssertionError (saying why) if a stream has ended."""
        for p in self.procs:
            if p.poll() is not None:
                out, err = self._finish(p)
                raise AssertionError(f"bulk stream ended {what}: exit "
                                     f"{p.returncode}: {err[-300:].strip()}")

    def _finish(self, p, timeout=5):
        """stdout (the progress samples left out) and stderr of stream @p,
        once it has ended."""
        if not self._readers:
            return p.communicate(timeout=timeout)
        i = self.procs.index(p)
        p.wait(timeout=timeout)
        self._readers[i].join(timeout)
        return "".join(self._rest[i]), p.stderr.read()

    def results(self, timeout):
        """Wait up to @timeout seconds for every stream to end by itself
        (its @seconds) and return their JSON results, in order; raises
        with its error text if one failed."""
        out = []
        for p in self.procs:
            o, e = self._finish(p, timeout)
            out.append(_parse(self.argv, o, e, p.returncode))
        return out

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            _stop(p, read=not self._readers)
        for t in self._readers:
            t.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _interpolate(samples, t_ns):
    """Bytes acked at @t_ns from one stream's [(t_ns, bytes)], linear
    between the samples around it."""
    i = bisect.bisect_left(samples, (t_ns,))
    if i == len(samples) or (i == 0 and samples[0][0] > t_ns):
        raise AssertionError(
            f"bulk stream: no progress sample around {t_ns} ns (samples "
            f"from {samples[0][0] if samples else '-'} to "
            f"{samples[-1][0] if samples else '-'})")
    t1, b1 = samples[i]
    if t1 == t_ns:
        return b1
    t0, b0 = samples[i - 1]
    return b0 + (b1 - b0) * (t_ns - t0) / (t1 - t0)
