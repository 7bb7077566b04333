"""parqd on the hosts of a netns.Star: a shared key, one configuration per
host, start, stop and the metrics files.

    cluster = parqd.Cluster(star, receivers=["r"], senders=["p", "l"],
                            workdir=tmp)
    cluster.start()                  # every host; waits for first metrics
    cluster.metrics("r").get("parqd_grants_sent_total", 0)
    cluster.stop()                   # SIGTERM; raises unless all exit 0

A receiver runs parqd's receiving role (receiver = true, threshold-recv,
epoch, hold, lease) and knows every sender as a peer; a sender runs the
sending role only and knows every receiver.  Node ids are the hosts'
positions in the Star, from 1.  The defaults of Settings are those that
converge under QEMU/TCG with a 24 ms FIFO in front of the receiver
(selftests/parq_receiver.py says why).

The binary is $PARQ_USERSPACE_BUILD/parqd/parqd (default build/userspace).
"""
import os
import signal
import subprocess
import time
from dataclasses import dataclass

from . import ktap, repo_path

BUILD = repo_path(os.environ.get("PARQ_USERSPACE_BUILD", "build/userspace"))
PARQD = BUILD / "parqd" / "parqd"
PORT = 7207


def available():
    return os.access(PARQD, os.X_OK)


def read_metrics(path):
    """A parqd metrics file as {'name{labels}': int}; {} while there is
    none."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                name, value = line.rsplit(" ", 1)
                out[name] = int(value)
    except FileNotFoundError:
        pass
    return out


@dataclass
class Settings:
    """A receiver's credit parameters."""
    epoch_ms: int = 5
    threshold: int = 3000		# bytes per epoch: 4.8 Mbit/s
    hold_ms: int = 30		# > the FIFO's delay
    lease: int = 10			# epochs: 50 ms; 3 (15 ms) lapsed under TCG
    # The tests written before the floor hold L at `threshold` alone:
    # local-floor 0 (parqd's default is 20, which needs link-rate on a
    # veth, whose speed the kernel does not know).
    local_floor: int = 0		# percent of link_rate
    link_rate: int = 0		# bits/s
    parallel_dscp: list = None	# e.g. ["af41"]; None: parqd's default
    # Every host's max-clock-skew: parqd's default, longer under the debug
    # kernel, where a message can wait that long for parqd to run.
    max_skew_ms: int = None		# None: 500 x ktap.slowdown()

    def skew_ms(self):
        if self.max_skew_ms is not None:
            return self.max_skew_ms
        return int(500 * ktap.slowdown())


class Cluster:
    """parqd on @receivers and @senders (host names of @star); files
    (key, configurations, metrics, logs) in @workdir."""

    def __init__(self, star, receivers, senders, workdir,
                 settings=None, port=PORT):
        self.star = star
        self.receivers, self.senders = list(receivers), list(senders)
        self.workdir = str(workdir)
        self.settings = settings or Settings()
        self.port = port
        self.daemons = {}
        self.key_file = os.path.join(self.workdir, "cluster.key")
        if not os.path.exists(self.key_file):
            fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o600)
            os.write(fd, os.urandom(32).hex().encode() + b"\n")
            os.close(fd)

    def hosts(self):
        return self.receivers + self.senders

    def node_id(self, h):
        return self.star.hosts.index(h) + 1

    def metrics_file(self, h):
        return os.path.join(self.workdir, f"{h}.prom")

    def log_file(self, h):
        return os.path.join(self.workdir, f"{h}.log")

    def log(self, h, tail=600):
        """The end of @h's parqd log (its stderr)."""
        try:
            with open(self.log_file(h)) as f:
                return f.read()[-tail:]
        except FileNotFoundError:
            return ""

    def config(self, h):
        """Write host @h's configuration file; returns its path."""
        ip = self.star.ip(h)
        text = f"""interface = "eth0"
node-id = {self.node_id(h)}
key-file = "{self.key_file}"
listen-address = "{ip}"
listen-port = {self.port}
metrics-file = "{self.metrics_file(h)}"
metrics-period = "100ms"
max-clock-skew = "{self.settings.skew_ms()}ms"
"""
        if h in self.receivers:
            s = self.settings
            text += f"""receiver = true
addresses = ["{ip}"]
threshold-recv = {s.threshold}
epoch = "{s.epoch_ms}ms"
hold = "{s.hold_ms}ms"
lease = {s.lease}
local-floor = {s.local_floor}
link-rate = {s.link_rate}
"""
            if s.parallel_dscp is not None:
                text += "parallel-dscp = [" + ", ".join(
                    f'"{d}"' for d in s.parallel_dscp) + "]\n"
        peers = self.senders if h in self.receivers else self.receivers
        for o in peers:
            text += f"""
[[peer]]
id = {self.node_id(o)}
addresses = ["{self.star.ip(o)}"]
"""
        path = os.path.join(self.workdir, f"{h}.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def metrics(self, h):
        """read_metrics() of @h's metrics file."""
        return read_metrics(self.metrics_file(h))

    def start(self, hosts=None, timeout=10):
        """Start parqd on @hosts (default all) and wait until each has
        written its metrics once (@timeout seconds, times ktap.slowdown():
        under the debug kernel an ASan build of parqd takes 10 s or more to
        start), then for the max-clock-skew, during which a sending host
        drops credit messages as possibly recorded before its start; raises
        if one exits or is late."""
        hosts = self.hosts() if hosts is None else list(hosts)
        for h in hosts:
            try:
                os.unlink(self.metrics_file(h))
            except FileNotFoundError:
                pass
            with open(self.log_file(h), "w") as log:
                self.daemons[h] = self.star.ns[h].popen(
                    [str(PARQD), "-c", self.config(h)],
                    stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + timeout * ktap.slowdown()
        for h in hosts:
            while "parqd_messages_received_total" not in self.metrics(h):
                p = self.daemons[h]
                if p.poll() is not None:
                    raise RuntimeError(f"parqd on {h} exited: "
                                       f"{self.log(h)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"parqd on {h} did not start")
                time.sleep(0.05)
        time.sleep(self.settings.skew_ms() / 1000)

    def kill(self, h):
        """SIGKILL @h's parqd (no RELEASE) and forget it."""
        p = self.daemons.pop(h)
        p.kill()
        p.wait(5)

    def stop(self, sig=signal.SIGTERM):
        """Stop every parqd with @sig; with SIGTERM, raise RuntimeError
        naming those that did not exit 0."""
        bad = []
        for h, p in list(self.daemons.items()):
            if p.poll() is None:
                p.send_signal(sig)
                p.wait(10)
            if sig == signal.SIGTERM and p.returncode != 0:
                bad.append(f"parqd on {h}: exit {p.returncode}: "
                           f"{self.log(h)}")
            del self.daemons[h]
        if bad:
            raise RuntimeError("; ".join(bad))

    def close(self):
        """Kill whatever still runs (cleanup after a failure)."""
        for h in list(self.daemons):
            if self.daemons[h].poll() is None:
                self.kill(h)
            else:
                del self.daemons[h]
