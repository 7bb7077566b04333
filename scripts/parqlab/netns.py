"""Network namespaces joined by veth pairs, for tests that must see only
their own packets.

    with Topology("cfg") as topo:         # namespaces A and B, one veth pair
        topo.a.run(["ping", "-c1", topo.ip_b()])

Each Topology creates two namespaces with names unique to this process
(parq-<tag>-<pid>-<n>-a/-b), IPv6 disabled in both (no RS/ND/MLD packets),
veth pairs <dev_a(i)> in A and <dev_b(i)> in B with fixed MAC addresses,
10.<77+i>.0.1/24 and .2/24, and permanent neighbour entries both ways, so
the only packets on a link are the ones the test sends.  The 10.x addresses
exist only inside these namespaces.

Cleanup (processes started in the namespaces, then the namespaces) runs on
exit of the with-block, at interpreter exit, and on SIGTERM/SIGHUP, so a
failing or interrupted test leaves nothing behind.
"""
import atexit
import ctypes
import itertools
import json
import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
NETNS_RUN_DIR = "/run/netns"

_libc = ctypes.CDLL(None, use_errno=True)
_counter = itertools.count()
_live = []			# Topologies not yet cleaned up


def run(argv, timeout=30, check=True, env=None, input=None):
    """Run a command, capture text output; raise on failure if @check."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env=env, input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()}")
    return p


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextmanager
def entered(name):
    """Run the body with this thread in netns @name (for creating sockets:
    a socket stays in the namespace it was created in)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(os.path.join(NETNS_RUN_DIR, name), os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


class Netns:
    """One named network namespace (ip netns) and the processes in it."""

    def __init__(self, name):
        self.name = name
        self.procs = []
        run(["ip", "netns", "add", name])
        self.run(["ip", "link", "set", "lo", "up"])
        # No IPv6 at all: no router/neighbour solicitations, no MLD reports.
        # Set before any link exists, so that new links inherit it.
        for key in ("all", "default"):
            self.sysctl(f"net/ipv6/conf/{key}/disable_ipv6", "1",
                        missing_ok=True)

    def argv(self, argv):
        return ["ip", "netns", "exec", self.name] + list(argv)

    def run(self, argv, **kw):
        return run(self.argv(argv), **kw)

    def tx_counts(self, dev):
        """(packets, bytes) that @dev has sent so far (ip -s link): skbs,
        so a GSO packet counts once with all its bytes."""
        out = self.run(["ip", "-s", "-j", "link", "show", "dev", dev]).stdout
        tx = json.loads(out)[0]["stats64"]["tx"]
        return tx["packets"], tx["bytes"]

    def popen(self, argv, **kw):
        """Start a process in the namespace; it is killed at cleanup."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        p = subprocess.Popen(self.argv(argv), **kw)
        self.procs.append(p)
        return p

    def socket(self, family=socket.AF_INET, type=socket.SOCK_DGRAM, proto=0):
        with entered(self.name):
            return socket.socket(family, type, proto)

    def sysctl(self, key, value, missing_ok=False):
        """Write /proc/sys/<key> as seen from the namespace."""
        with entered(self.name):
            path = "/proc/sys/" + key.replace(".", "/")
            try:
                # /proc/sys/net is resolved against the opener's netns.
                with open(path, "w") as f:
                    f.write(str(value))
            except FileNotFoundError:
                if not missing_ok:
                    raise

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 3
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.procs = []
        # Anything else still running in the namespace (children, strays).
        r = run(["ip", "netns", "pids", self.name], check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def delete(self):
        self.kill_all()
        run(["ip", "netns", "del", self.name], check=False)


class _Namespaces:
    """What Topology and Star share: removing their namespaces (once, also
    at exit or on a signal) and the with-statement."""

    def _namespaces(self):
        raise NotImplementedError

    def _forget(self):
        raise NotImplementedError

    def cleanup(self):
        for ns in self._namespaces():
            if ns is not None:
                ns.delete()
        self._forget()
        if self in _live:
            _live.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False


class Topology(_Namespaces):
    """Namespaces A and B joined by @links veth pairs (see module doc)."""

    def __init__(self, tag, links=1):
        n = next(_counter)
        base = f"parq-{tag}-{os.getpid()}-{n}"
        self.links = links
        self.a = self.b = None
        _live.append(self)
        try:
            self.a = Netns(base + "-a")
            self.b = Netns(base + "-b")
            for i in range(links):
                self._link(i)
        except BaseException:
            self.cleanup()
            raise

    # Names and addresses of link i.
    def dev_a(self, i=0):
        return f"veth{i}a"

    def dev_b(self, i=0):
        return f"veth{i}b"

    def ip_a(self, i=0):
        return f"10.{77 + i}.0.1"

    def ip_b(self, i=0):
        return f"10.{77 + i}.0.2"

    def mac_a(self, i=0):
        return f"02:00:5e:{i:02x}:00:01"

    def mac_b(self, i=0):
        return f"02:00:5e:{i:02x}:00:02"

    def _link(self, i):
        a, b = self.a, self.b
        a.run(["ip", "link", "add", self.dev_a(i), "address", self.mac_a(i),
               "type", "veth", "peer", "name", self.dev_b(i),
               "address", self.mac_b(i), "netns", b.name])
        for ns, dev, ip, peer_ip, peer_mac in (
                (a, self.dev_a(i), self.ip_a(i), self.ip_b(i), self.mac_b(i)),
                (b, self.dev_b(i), self.ip_b(i), self.ip_a(i), self.mac_a(i))):
            ns.sysctl(f"net/ipv6/conf/{dev}/disable_ipv6", "1",
                      missing_ok=True)
            ns.run(["ip", "addr", "add", ip + "/24", "dev", dev])
            ns.run(["ip", "neigh", "replace", peer_ip, "lladdr", peer_mac,
                    "dev", dev, "nud", "permanent"])
            ns.run(["ip", "link", "set", dev, "up"])

    def _namespaces(self):
        return [self.a, self.b]

    def _forget(self):
        self.a = self.b = None


class Star(_Namespaces):
    """Hosts joined through a switch: namespace S holds a Linux bridge br0
    and, for every host h of @hosts, the port veth "s-<h>" whose peer is
    "eth0" in namespace h (reached as star.ns[h]).  Host i (from 0) has
    10.90.0.<i + 1>/24 and MAC 02:00:5e:90:00:<i + 1>; every host has a
    permanent neighbour entry for every other, and IPv6 is off everywhere,
    so the only packets are the test's.  Shape a host's port with tc on
    star.port(h) in star.s (egress toward h)."""

    def __init__(self, tag, hosts=("p", "l", "r")):
        n = next(_counter)
        base = f"parq-{tag}-{os.getpid()}-{n}"
        self.hosts = list(hosts)
        self.ns = {}
        self.s = None
        _live.append(self)
        try:
            self.s = Netns(base + "-s")
            self.s.run(["ip", "link", "add", "br0", "type", "bridge",
                        "forward_delay", "0", "stp_state", "0"])
            self.s.run(["ip", "link", "set", "br0", "up"])
            for h in self.hosts:
                self.ns[h] = Netns(f"{base}-{h}")
            for i, h in enumerate(self.hosts):
                self._attach(i, h)
            for h in self.hosts:
                for o in self.hosts:
                    if o != h:
                        self.ns[h].run(["ip", "neigh", "replace", self.ip(o),
                                        "lladdr", self.mac(o), "dev", "eth0",
                                        "nud", "permanent"])
        except BaseException:
            self.cleanup()
            raise

    def ip(self, h):
        return f"10.90.0.{self.hosts.index(h) + 1}"

    def mac(self, h):
        return f"02:00:5e:90:00:{self.hosts.index(h) + 1:02x}"

    def port(self, h):
        return f"s-{h}"

    def cut(self, h):
        """Partition host @h from every other: the switch drops whatever
        its port toward @h receives or would send (tc matchall on clsact;
        the link stays up, so @h's own qdisc stays as it is)."""
        p = self.port(h)
        self.s.run(["tc", "qdisc", "add", "dev", p, "clsact"])
        for d in ("ingress", "egress"):
            self.s.run(["tc", "filter", "add", "dev", p, d, "matchall",
                        "action", "drop"])

    def heal(self, h):
        """Undo cut(@h)."""
        self.s.run(["tc", "qdisc", "del", "dev", self.port(h), "clsact"])

    def _attach(self, i, h):
        ns = self.ns[h]
        self.s.run(["ip", "link", "add", self.port(h), "type", "veth",
                    "peer", "name", "eth0", "address", self.mac(h),
                    "netns", ns.name])
        self.s.run(["ip", "link", "set", self.port(h), "master", "br0"])
        self.s.run(["ip", "link", "set", self.port(h), "up"])
        ns.sysctl("net/ipv6/conf/eth0/disable_ipv6", "1", missing_ok=True)
        ns.run(["ip", "addr", "add", self.ip(h) + "/24", "dev", "eth0"])
        ns.run(["ip", "link", "set", "eth0", "up"])

    def _namespaces(self):
        return list(self.ns.values()) + [self.s]

    def _forget(self):
        self.ns = {}
        self.s = None


def _cleanup_all():
    for topo in list(_live):
        topo.cleanup()


def _on_signal(signum, frame):
    # Unwind through finally blocks and atexit.
    raise SystemExit(128 + signum)


atexit.register(_cleanup_all)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    if signal.getsignal(_sig) in (signal.SIG_DFL, None):
        signal.signal(_sig, _on_signal)
