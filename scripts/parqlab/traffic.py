"""Traffic for the tests: exact UDP packets from a socket inside a netns,
iperf3 and sockperf in namespaces, and a sampler of class byte counters.

All runs are bounded: every process has a duration and a timeout, and is
killed at topology cleanup at the latest.
"""
import json
import re
import shutil
import socket
import subprocess
import time

from . import ktap
from . import tc as tclib

ETH_HLEN = 14
IPV4_HLEN = 20
UDP_HLEN = 8
UDP_OVERHEAD = ETH_HLEN + IPV4_HLEN + UDP_HLEN  # L2 length = payload + 42

SO_PRIORITY = socket.SO_PRIORITY
TOS_EF = 0xb8		# DSCP 46 << 2


def have(tool):
    return shutil.which(tool) is not None


# --- exact UDP packets ---------------------------------------------------

def udp_socket(ns, tos=None, priority=None):
    """A UDP socket in @ns with IP_TOS and/or SO_PRIORITY set (TOS first:
    setting IP_TOS also rewrites sk_priority)."""
    s = ns.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if tos is not None:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    if priority is not None:
        s.setsockopt(socket.SOL_SOCKET, SO_PRIORITY, priority)
    return s


def send_udp(sock, dst, port, payload, count, gap=0.0):
    """Send @count datagrams of @payload bytes; returns the L2 length of one
    (what a qdisc on the sending veth counts)."""
    data = bytes(payload)
    for _ in range(count):
        sock.sendto(data, (dst, port))
        if gap:
            time.sleep(gap)
    return payload + UDP_OVERHEAD


def udp_burst(ns, dst, port, payload, count, tos=None, priority=None):
    s = udp_socket(ns, tos=tos, priority=priority)
    try:
        return send_udp(s, dst, port, payload, count)
    finally:
        s.close()


# --- listening-socket readiness -----------------------------------------

def wait_listen(ns, port, proto="tcp", timeout=15):
    """Wait until something listens on @port in @ns (ss -l), @timeout
    seconds times ktap.slowdown() (servers built with ASan start slowly
    under the debug kernel)."""
    flag = "-Hltn" if proto == "tcp" else "-Hlun"
    deadline = time.monotonic() + timeout * ktap.slowdown()
    while time.monotonic() < deadline:
        r = ns.run(["ss", flag, f"sport = :{port}"], check=False)
        if r.returncode == 0 and r.stdout.strip():
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {proto} port {port} in {ns.name}")


# --- iperf3 -----------------------------------------------------------------

def stop_server(proc):
    """Terminate a server started with Popen; kill it if it has not ended
    within 5 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


class Iperf3Server:
    """iperf3 -s in @ns bound to @ip:@port; serves clients until stopped."""

    def __init__(self, ns, ip, port):
        self.ns, self.ip, self.port = ns, ip, port
        self.proc = ns.popen(["iperf3", "-s", "-B", ip, "-p", str(port)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        wait_listen(ns, port)

    def stop(self):
        stop_server(self.proc)


class Iperf3Client:
    """iperf3 -c in @ns, started at once; result() waits and parses -J."""

    def __init__(self, ns, server_ip, port, seconds, parallel=1, tos=None,
                 udp=False, bitrate=None, length=None, extra=()):
        argv = ["iperf3", "-c", server_ip, "-p", str(port), "-t",
                str(seconds), "-J", "-P", str(parallel)]
        if tos is not None:
            argv += ["-S", str(tos)]
        if udp:
            argv += ["-u"]
        if bitrate is not None:
            argv += ["-b", str(bitrate)]
        if length is not None:
            argv += ["-l", str(length)]
        argv += list(extra)
        self.seconds = seconds
        self.argv = argv
        self.proc = ns.popen(argv)

    def running(self):
        return self.proc.poll() is None

    def check_running(self, what=""):
        """Raise AssertionError (saying why) if the client has ended."""
        if not self.running():
            raise AssertionError(f"iperf3 ended {what}: {' '.join(self.argv)}"
                                 f": {self.why_ended()}")

    def why_ended(self):
        """For a client that ended: its exit status and error text."""
        try:
            out, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            return "still running"
        msg = ""
        try:
            msg = json.loads(out).get("error", "")
        except (json.JSONDecodeError, AttributeError):
            msg = (out or "")[-300:]
        return f"exit {self.proc.returncode}: {msg} {(err or '')[-300:]}"

    def result(self, timeout=None):
        """Wait for the end of the run; return iperf3's JSON (dict).  Raises
        if iperf3 failed."""
        timeout = timeout or self.seconds + 30
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate(timeout=10)
            raise TimeoutError(f"{' '.join(self.argv)}: no end after "
                               f"{timeout}s") from None
        try:
            res = json.loads(out)
        except json.JSONDecodeError:
            raise RuntimeError(f"{' '.join(self.argv)}: exit "
                               f"{self.proc.returncode}, no JSON: "
                               f"{(err or out)[-300:]}") from None
        if self.proc.returncode != 0 or "error" in res:
            raise RuntimeError(f"{' '.join(self.argv)}: exit "
                               f"{self.proc.returncode}: "
                               f"{res.get('error', err[-300:])}")
        return res

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate(timeout=5)


def iperf3_bps(res):
    """Received bits/s of an iperf3 -J result (sum over streams)."""
    end = res.get("end", {})
    for key in ("sum_received", "sum"):
        if key in end:
            return end[key]["bits_per_second"]
    raise KeyError("no sum in iperf3 result")


# --- sockperf -----------------------------------------------------------

def realtime_prefix(ns):
    """The argv prefix that runs a latency probe in @ns at real-time
    priority (chrt -f 50), or [] where that is refused.  On a small or
    emulated machine the bulk job's processes would otherwise add their CPU
    time to the probe's round trips; sockperf blocks in recvfrom, so it
    never spins."""
    rt = ["chrt", "-f", "50"]
    return rt if ns.run(rt + ["true"], check=False).returncode == 0 else []


class SockperfServer:
    """sockperf server in @ns; @prefix: argv to run it under (e.g. chrt)."""

    def __init__(self, ns, ip, port, tcp=True, prefix=()):
        argv = list(prefix) + ["sockperf", "sr", "-i", ip, "-p", str(port)]
        if tcp:
            argv.append("--tcp")
        self.proc = ns.popen(argv, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        wait_listen(ns, port, "tcp" if tcp else "udp")

    def stop(self):
        stop_server(self.proc)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_sockperf(text):
    """Round-trip statistics (usec) of a sockperf ping-pong --full-rtt run:
    {"avg", "std", "p25", "p50", "p75", "p90", "p99", "p99.9", "min", "max",
    "observations"}."""
    text = _ANSI.sub("", text)
    out = {}
    m = re.search(r"avg-(?:rtt|lat(?:ency)?)=([\d.]+) \(std-dev=([\d.]+)\)",
                  text)
    if m:
        out["avg"], out["std"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"Total (\d+) observations", text)
    if m:
        out["observations"] = int(m.group(1))
    for pct, val in re.findall(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)", text):
        p = float(pct)
        name = "p" + (f"{p:g}")
        out[name] = float(val)
    m = re.search(r"<MAX> observation\s*=\s*([\d.]+)", text)
    if m:
        out["max"] = float(m.group(1))
    m = re.search(r"<MIN> observation\s*=\s*([\d.]+)", text)
    if m:
        out["min"] = float(m.group(1))
    missing = {"avg", "p50", "p99", "observations"} - set(out)
    if missing:
        raise ValueError(f"sockperf output lacks {sorted(missing)}: "
                         f"{text[-500:]!r}")
    return out


def sockperf_pingpong(ns, ip, port, seconds, msg_size=64, tcp=True,
                      extra=(), prefix=()):
    """Run a ping-pong client in @ns for @seconds; return parse_sockperf().
    @prefix: argv to run it under (e.g. chrt)."""
    argv = list(prefix) + ["sockperf", "pp", "-i", ip, "-p", str(port),
                           "-m", str(msg_size), "-t", str(seconds),
                           "--full-rtt"]
    if tcp:
        argv.append("--tcp")
    argv += list(extra)
    r = ns.run(argv, timeout=seconds + 60, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: "
                           f"{(r.stderr + r.stdout)[-400:]}")
    return parse_sockperf(r.stdout + r.stderr)


# --- class counters ---------------------------------------------------------

class Sample:
    """Counter deltas of the classes between two snapshots."""

    def __init__(self, before, after, dt, qlen_samples):
        self.dt = dt
        self.before, self.after = before, after
        self.qlen_samples = qlen_samples  # {classid: [qlen, ...]}

    def delta(self, cid, key):
        return self.after[cid][key] - self.before[cid][key]

    def share(self, cid, key="bytes"):
        total = sum(self.delta(c, key) for c in self.after)
        return self.delta(cid, key) / total if total else float("nan")

    def rate_bps(self, cid):
        return self.delta(cid, "bytes") * 8 / self.dt

    def min_qlen(self, cid):
        s = self.qlen_samples.get(cid, [])
        return min(s) if s else None


def sample_classes(ns, dev, warmup, interval, qlen_every=1.0):
    """After @warmup seconds read the class counters of @dev, then again
    @interval seconds later; in between read the class queue lengths every
    @qlen_every seconds (to see whether both classes stayed backlogged)."""
    time.sleep(warmup)
    t0 = time.monotonic()
    before = tclib.class_stats(ns, dev)
    qlen = {cid: [] for cid in before}
    end = t0 + interval
    while True:
        now = time.monotonic()
        if now + qlen_every >= end:
            break
        time.sleep(qlen_every)
        for cid, st in tclib.class_stats(ns, dev).items():
            qlen.setdefault(cid, []).append(st.get("qlen", 0))
    time.sleep(max(0.0, end - time.monotonic()))
    after = tclib.class_stats(ns, dev)
    return Sample(before, after, time.monotonic() - t0, qlen)
