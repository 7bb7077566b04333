"""parqd on the hosts of a netns.Star: a shared key, one configuration per
host, start, stop and the metrics files.

    cluster = parqd.Cluster(star, receivers=["r"], senders=["p", "l"],
                            workdir=tmp)
    cluster.start()                  # every host; waits for first metrics
    cluster.metrics("r").get("parqd_grants_sent_total", 0)
    cluster.stop()                   # SIGTERM; raises unless all exit 0

With pair_keys=True each host gets a keys file of its own (parqctl key
derive, from one secret per key id in @workdir) instead of the shared
cluster key; add_key(), use_key() and drop_key() then roll the cluster
from one key id to the next (Documentation/parqd-protocol.md, "Rotating
keys"), restart() one host at a time.

A receiver runs parqd's receiving role (receiver = true, threshold-recv,
epoch, hold, lease) and knows every sender as a peer; a sender runs the
sending role only and knows every receiver.  Node ids are the hosts'
positions in the Star, from 1.  The defaults of Settings are those that
converge under QEMU/TCG with a 24 ms FIFO in front of the receiver
(selftests/parq_receiver.py says why).

The binaries are parqlab.sbin()'s: $PARQ_SBIN, else
$PARQ_USERSPACE_BUILD/parqd (default build/userspace).
"""
import os
import signal
import subprocess
import time
from dataclasses import dataclass

from . import ktap, sbin

PARQD = sbin("parqd")
PARQCTL = sbin("parqctl")
PORT = 7207


def available():
    return os.access(PARQD, os.X_OK)


def read_metrics(path):
    """A parqd metrics file as {'name{labels}': value}, an int, or a float
    for a share ("0.75"); {} while there is none."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                name, value = line.rsplit(" ", 1)
                try:
                    out[name] = int(value)
                except ValueError:
                    out[name] = float(value)
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
    parallel_dscp: list = None  # e.g. ["af41"]; None: parqd's default
    # Every host's max-clock-skew: parqd's default, longer under the debug
    # kernel, where a message can wait that long for parqd to run.
    max_skew_ms: int = None		# None: 500 x ktap.slowdown()

    def skew_ms(self):
        if self.max_skew_ms is not None:
            return self.max_skew_ms
        return int(500 * ktap.slowdown())


def star_topology(star, hosts, capacity="100mbit", reservable=None):
    """topology_text() for @hosts of netns.Star @star."""
    return topology_text({h: star.ip(h) for h in hosts}, capacity,
                         reservable)


def topology_text(addresses, capacity="100mbit", reservable=None):
    """The text of a topology file (Documentation/admission.md) for the
    hosts of @addresses ({name: address}): each host with its address and
    a NIC of @capacity, the switch "s" and a link of @capacity each way
    between it and every host; @reservable: the percentage, when not
    parqd's default."""
    hosts = list(addresses)
    text = "" if reservable is None else f"reservable = {reservable}\n\n"
    for h in hosts:
        text += (f'[[host]]\nname = "{h}"\naddresses = ["{addresses[h]}"]'
                 f'\nnic = "{capacity}"\n\n')
    text += '[[switch]]\nname = "s"\n\n'
    for h in hosts:
        for a, b in ((h, "s"), ("s", h)):
            text += (f'[[link]]\nfrom = "{a}"\nto = "{b}"\n'
                     f'capacity = "{capacity}"\n\n')
    return text


def admission_section(host, endpoints, topology, socket, lease=None,
                      etcd_timeout=None):
    """The [admission] section of host @host's parqd configuration
    (Documentation/admission.md): etcd at @endpoints (URLs, the first
    tried first), the topology file @topology, the control socket
    @socket; @lease and @etcd_timeout in seconds, when not parqd's
    defaults."""
    eps = ", ".join(f'"{e}"' for e in endpoints)
    text = f'\n[admission]\netcd-endpoints = [{eps}]\n'
    # The lab's etcd answers plain HTTP on the namespaces' own links.
    if any(e.startswith("http://") for e in endpoints):
        text += 'etcd-insecure = true\n'
    if etcd_timeout is not None:
        text += f'etcd-timeout = "{etcd_timeout}s"\n'
    text += f'topology-file = "{topology}"\nhost = "{host}"\n'
    if lease is not None:
        text += f'lease = "{lease}s"\n'
    return text + f'socket = "{socket}"\n'


class Cluster:
    """parqd on @receivers and @senders (host names of @star); files
    (key, configurations, metrics, logs) in @workdir; @sections: {host:
    text} appended to that host's configuration (e.g. [admission])."""

    def __init__(self, star, receivers, senders, workdir,
                 settings=None, port=PORT, pair_keys=False, sections=None):
        self.star = star
        self.sections = dict(sections or {})  # host: text after [[peer]]
        self.receivers, self.senders = list(receivers), list(senders)
        self.workdir = str(workdir)
        self.settings = settings or Settings()
        self.port = port
        self.daemons = {}
        self.pair_keys = pair_keys
        self.key_ids = [1]		# the ids every keys file holds
        self.send_id = 1		# every host's key-id
        self.key_file = self.secret(1)
        if pair_keys:
            self.derive()

    def secret(self, key_id):
        """The path of key id @key_id's secret (the cluster key when not
        pair_keys), made on first use, mode 0600."""
        path = os.path.join(self.workdir, f"secret-{key_id}.key")
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, os.urandom(32).hex().encode() + b"\n")
            os.close(fd)
        return path

    def keys_file(self, h):
        return os.path.join(self.workdir, f"{h}.keys")

    def peers_of(self, h):
        return self.senders if h in self.receivers else self.receivers

    def derive(self):
        """Write every host's keys file: its pair keys of every id in
        key_ids, with parqctl key derive."""
        for h in self.hosts():
            text = ""
            for key_id in self.key_ids:
                peers = ",".join(str(self.node_id(o))
                                 for o in self.peers_of(h))
                r = subprocess.run(
                    [str(PARQCTL), "key", "derive", "--secret",
                     self.secret(key_id), "--key-id", str(key_id),
                     "--node", str(self.node_id(h)), "--peer", peers],
                    capture_output=True, text=True, check=True)
                text += r.stdout
            path = self.keys_file(h)
            tmp = path + ".new"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, text.encode())
            os.close(fd)
            os.rename(tmp, path)

    def add_key(self, key_id):
        """Rotation, step 1: every keys file also holds @key_id."""
        self.key_ids.append(key_id)
        self.derive()

    def use_key(self, key_id):
        """Step 2: hosts (re)started from now on send under @key_id."""
        self.send_id = key_id

    def drop_key(self, key_id):
        """Step 3: keys files no longer hold @key_id."""
        self.key_ids.remove(key_id)
        self.derive()

    def restart(self, h, timeout=30):
        """SIGTERM @h's parqd (raises unless it exits 0), start it again
        with its configuration as it is now, waiting for it up to @timeout
        s times ktap.slowdown(): a restart comes under traffic, and under
        the debug kernel, with the receiver's link saturated, parqd on R
        had not written its metrics after start()'s 10 s times 4."""
        p = self.daemons.pop(h)
        p.send_signal(signal.SIGTERM)
        p.wait(10 * ktap.slowdown())
        if p.returncode != 0:
            raise RuntimeError(f"parqd on {h}: exit {p.returncode}: "
                               f"{self.log(h)}")
        self.start([h], timeout)

    def hosts(self):
        return self.receivers + self.senders

    def node_id(self, h):
        return self.star.hosts.index(h) + 1

    def metrics_file(self, h):
        return os.path.join(self.workdir, f"{h}.prom")

    def status_socket(self, h):
        return os.path.join(self.workdir, f"{h}.sock")

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
        keys = (f'keys-file = "{self.keys_file(h)}"' if self.pair_keys
                else f'key-file = "{self.key_file}"')
        text = f"""interface = "eth0"
node-id = {self.node_id(h)}
{keys}
key-id = {self.send_id}
listen-address = "{ip}"
listen-port = {self.port}
metrics-file = "{self.metrics_file(h)}"
metrics-period = "100ms"
status-socket = "{self.status_socket(h)}"
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
        for o in self.peers_of(h):
            text += f"""
[[peer]]
id = {self.node_id(o)}
addresses = ["{self.star.ip(o)}"]
"""
        text += self.sections.get(h, "")
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
                p.wait(10 * ktap.slowdown())
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
