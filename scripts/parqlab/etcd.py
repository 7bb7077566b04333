"""An etcd cluster of Debian's etcd-server, one member in each of some hosts
of a netns.Star, on the hosts' addresses: the store of parqd's admission
role, as a cluster runs it, with the switch between its members.

    members = etcd.Cluster(star, ["a", "b", "c"], workdir)
    members.start()                   # waits until every member answers
    members.endpoints()               # ["http://10.90.0.1:2379", ...]
    members.move_leader("c", "a")     # c leads (asked from a)
    star.cut("c"); members.healthy("a")   # which members answer, from a
    members.stop()

Raft's timers are etcd's defaults (a heartbeat of 100 ms, an election
after 1 s) times timer_scale(): ktap.slowdown(), and twice that under
QEMU/TCG, so that a member of a slow guest does not call elections it need
not (a leader's heartbeat held up for a second by an emulated CPU that is
busy elsewhere makes the followers elect again, and no write, lease
renewal included, goes through until they agree).  Pre-vote is on (etcd
3.5's default, off in 3.4): a member cut off from the others does not
raise its term, so that when the cut heals it does not depose the leader
and hold up every write for an election.  Data directories and logs are
in @workdir/etcd-NAME.
"""
import json
import os
import time

from . import ktap, lab

ETCD = "/usr/bin/etcd"
ETCDCTL = "/usr/bin/etcdctl"
CLIENT_PORT = 2379
PEER_PORT = 2380


def timer_scale():
    """The factor on etcd's Raft timers (see above)."""
    return ktap.slowdown() * (2 if lab.emulated() else 1)


def available():
    return os.access(ETCD, os.X_OK) and os.access(ETCDCTL, os.X_OK)


class Cluster:
    def __init__(self, star, hosts, workdir):
        self.star = star
        self.hosts = list(hosts)
        self.workdir = str(workdir)
        self.procs = {}

    def client_url(self, h):
        return f"http://{self.star.ip(h)}:{CLIENT_PORT}"

    def peer_url(self, h):
        return f"http://{self.star.ip(h)}:{PEER_PORT}"

    def endpoints(self, first=None):
        """The members' client URLs, @first's (a member's host) first: a
        client tries them in order, so a host asks its own member first."""
        hosts = self.hosts
        if first in hosts:
            i = hosts.index(first)
            hosts = hosts[i:] + hosts[:i]
        return [self.client_url(h) for h in hosts]

    def _log_path(self, h):
        return os.path.join(self.workdir, f"etcd-{h}.log")

    def log(self, h, tail=800):
        try:
            with open(self._log_path(h)) as f:
                return f.read()[-tail:]
        except FileNotFoundError:
            return ""

    def start(self, timeout=30):
        """Start every member, then wait (@timeout seconds times
        ktap.slowdown()) until each answers a linearizable read."""
        initial = ",".join(f"{h}={self.peer_url(h)}" for h in self.hosts)
        election_ms = round(self.election_timeout() * 1000)
        for h in self.hosts:
            d = os.path.join(self.workdir, f"etcd-{h}")
            os.makedirs(d, exist_ok=True)
            with open(d + ".log", "w") as log:
                self.procs[h] = self.star.ns[h].popen(
                    [ETCD, f"--name={h}", f"--data-dir={d}",
                     f"--listen-client-urls={self.client_url(h)}",
                     f"--advertise-client-urls={self.client_url(h)}",
                     f"--listen-peer-urls={self.peer_url(h)}",
                     f"--initial-advertise-peer-urls={self.peer_url(h)}",
                     f"--initial-cluster={initial}",
                     "--initial-cluster-state=new",
                     f"--heartbeat-interval={election_ms // 10}",
                     f"--election-timeout={election_ms}",
                     "--pre-vote"],
                    stdout=log, stderr=log)
        deadline = time.monotonic() + timeout * ktap.slowdown()
        while set(self.healthy(self.hosts[0])) != set(self.hosts):
            for h, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"etcd {h} exited: {self.log(h)}")
            if time.monotonic() > deadline:
                raise RuntimeError("etcd: the members did not all answer: " +
                                   " | ".join(self.log(h, 300)
                                              for h in self.hosts))
            time.sleep(0.2)

    def healthy(self, frm):
        """The members that answer a linearizable read (one that needs a
        quorum) when asked from host @frm."""
        rows = self._ctl(frm, "endpoint", "health") or []
        return [h for h in self.hosts for e in rows
                if e.get("endpoint") == self.client_url(h) and
                e.get("health")]

    def _ctl(self, frm, *args):
        """etcdctl @args from host @frm, asking every member; its parsed
        JSON output, or None."""
        r = self.star.ns[frm].run(
            [ETCDCTL, "--endpoints", ",".join(self.endpoints()),
             "--command-timeout", f"{2 * ktap.slowdown()}s"] + list(args) +
            ["-w", "json"], check=False, timeout=30 * ktap.slowdown())
        try:
            return json.loads(r.stdout or "null")
        except ValueError:
            return None

    def election_timeout(self):
        """Raft's election timeout of the members, in seconds (the
        heartbeat is a tenth of it)."""
        return 1.0 * timer_scale()

    def log_size(self, h):
        """How long host @h's member's log is now: an offset for
        log_since()."""
        try:
            return os.path.getsize(self._log_path(h))
        except FileNotFoundError:
            return 0

    def log_since(self, h, offset):
        """What host @h's member logged after @offset (log_size())."""
        try:
            with open(self._log_path(h), "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def leader(self, frm):
        """The host whose member leads, as every member that answers from
        host @frm says; None if they do not agree or none answers."""
        rows = self._ctl(frm, "endpoint", "status") or []
        leads = {e["Status"]["leader"] for e in rows}
        urls = {e["Status"]["header"]["member_id"]: e["Endpoint"]
                for e in rows}
        if len(leads) != 1:
            return None
        url = urls.get(leads.pop())
        return next((h for h in self.hosts if self.client_url(h) == url),
                    None)

    def move_leader(self, to, frm):
        """Make host @to's member the leader (etcdctl move-leader, sent to
        the leader), and wait until every member says so; RuntimeError if
        it does not happen within 30 s times ktap.slowdown()."""
        deadline = time.monotonic() + 30 * ktap.slowdown()
        while (lead := self.leader(frm)) != to:
            if time.monotonic() > deadline:
                raise RuntimeError(f"etcd: {to} did not become the leader "
                                   f"(now {lead})")
            members = (self._ctl(frm, "member", "list") or {}).get(
                "members", [])
            ids = [m["ID"] for m in members if m.get("name") == to]
            if lead is not None and ids:
                self.star.ns[frm].run(
                    [ETCDCTL, "--endpoints", self.client_url(lead),
                     "move-leader", f"{ids[0]:x}"], check=False,
                    timeout=30 * ktap.slowdown())
            time.sleep(0.2)

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(10)
            except Exception:  # noqa: BLE001 - then it is killed
                p.kill()
                p.wait(5)
        self.procs = {}
