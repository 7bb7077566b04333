#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parqd, the sending host's role, and parqctl, against the kernel.

Namespace A is the sending host: it runs parqd (generated cluster key and
a cluster file: [[host]] sections for A and B, A finding its own by its
address; metrics file rewritten every 100 ms).  Namespace B plays the
receiving host (peer 2, address 10.77.0.2): it builds credit messages with
parqlab.credits, which follows Documentation/parqd-protocol.md byte by byte
(independently of parqd's C++ encoder), and sends them to parqd's UDP port.
  - a valid GRANT makes the kernel's entry appear, with the credit, epoch
    and lease the message says (read with parqctl --json and with
    parqlab.genl); a RELEASE removes it;
  - forged (wrong key), replayed, out-of-time (stamped 60 s ago), unknown
    key id, malformed, unknown-peer and wrong-source messages change nothing
    and are counted, by reason, in parqd's metrics file;
  - parqctl peers (parqd's status socket) follows what peer 2 sends:
    the newest message accepted, the credit held, drops by reason;
  - parqctl credit set / show / clear, errors with the kernel's message,
    and parqctl qdisc show, all with --json output that parses;
  - a parqd whose admission role or status socket cannot start exits
    with the error and leaves the kernel's receive monitor off; an etcd
    that never answers stalls nothing but admission (in B, which runs no
    other parqd), and a SIGTERM stops it within etcd-timeout (its calls
    in flight give up);
  - parqd speaks to its service manager as sd_notify(3) says (READY=1
    with a STATUS= line once it runs, WATCHDOG=1 at half WATCHDOG_USEC,
    STOPPING=1), read from a NOTIFY_SOCKET the test binds;
  - SIGHUP reloads the keys (a relative key-file, beside the
    configuration) and max-clock-skew, keeps the replay windows (a
    sequence number accepted under key 1 is a duplicate under key 2), and
    a configuration that does not parse changes nothing;
  - parqd stops cleanly on SIGTERM.

The binaries come from $PARQ_SBIN (scripts/deb-test: what the package
installed), else $PARQ_USERSPACE_BUILD (default build/userspace, what
`make userspace` builds): parqd/parqd and parqd/parqctl.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from parqlab import credits, ktap, lab, sbin, tc
from parqlab.parqd import read_metrics, topology_text
from parqlab.genl import ParqGenl
from parqlab.ktap import check, check_eq, diag


PARQD = str(sbin("parqd"))
PARQCTL = str(sbin("parqctl"))
PORT = 7207
ME, PEER, STRANGER = 1, 2, 3
EPOCH_US = 10000			# 10 ms
# Leases must outlast the parqctl runs that read them: 0.3 s each under
# TCG, 10 to 12 s under the debug kernel (KASAN on every page fault of a
# C++ program's start), where a 5 s GRANT expired before the first read.
LEASE_SCALE = ktap.slowdown() ** 2
GRANT_LEASE = 500 * LEASE_SCALE		# epochs: 5 s, 80 s under debug
CTL_LEASE_S = 10 * LEASE_SCALE
MS = 1000000

# systemd's WatchdogSec: parqd pings every half of it.
WATCHDOG_S = 1.0 * ktap.slowdown()
# parqd's max-clock-skew: the time a message may take from B's
# CLOCK_REALTIME stamp to parqd (the same clock), and how long after its
# start parqd drops messages stamped before it (what a restart must not
# let through).  A replayed message must arrive within it to be counted
# as a duplicate rather than as too late: under TCG, reading the table
# between the two can take more than 0.5 s, parqd's default.
SKEW_S = 2 * ktap.slowdown()


def nxt(env):
    """The time stamp (now) and next sequence number of peer 2."""
    env.seq += 1
    return time.time_ns(), env.seq


def send(env, data, ns=None):
    topo = env.topo
    with (ns or topo.b).socket() as s:
        s.sendto(data, (topo.ip_a(), PORT))


def send_accepted(env, data, what, also=lambda: True):
    """Send @data and wait until parqd's metrics file (rewritten every
    100 ms) counts one more accepted message and also() holds: a later
    duplicate of @data must come within the skew of its stamp, or it is
    dropped as time_behind, so the wait does not go through parqctl (10
    to 12 s to start under the debug kernel)."""
    accepted = metrics(env).get("parqd_messages_accepted_total", 0)
    send(env, data)
    wait_for(what, lambda: also() and metrics(env).get(
        "parqd_messages_accepted_total", 0) > accepted)


def ctl(env, *args, check_rc=True):
    r = env.a.run([PARQCTL] + list(args), check=False)
    if check_rc:
        check(r.returncode == 0,
              f"parqctl {' '.join(args)}: exit {r.returncode}: "
              f"{r.stdout}{r.stderr}")
    return r


def ctl_json(env, *args, check_rc=True):
    r = ctl(env, *args, "--json", check_rc=check_rc)
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise AssertionError(f"parqctl {' '.join(args)} --json: not JSON "
                             f"({e}): {r.stdout!r} {r.stderr!r}")


def table(env):
    return {e["addr"]: e for e in ctl_json(env, "credit", "show")}


def kernel_table(env):
    """The credit table as the kernel has it (the parq genl family, from
    this process): no parqctl to start, which takes 10 to 12 s under the
    debug kernel."""
    with ParqGenl(env.topo.a) as g:
        return {e["addr"]: e for e in g.dump()}


def metrics(env):
    """parqd's metrics file as {'name{labels}': value}."""
    return read_metrics(os.path.join(env.tmp, "parqd.prom"))


def wait_for(what, pred, timeout=5.0):
    return ktap.wait_for(what, pred, timeout)


def drops(env, reason):
    return metrics(env).get(
        f'parqd_messages_dropped_total{{reason="{reason}"}}', 0)


def write_config(env, name, side, metrics_file, keys="", sections="",
                 key_file=None, skew_ms=None, cluster=False):
    """parqd.toml for host @side ("a": node 1, peer B; "b": node 2, peer
    A), with its metrics file @metrics_file in env.tmp, top-level @keys
    and, after the [[peer]] section, @sections; @key_file (default
    env.tmp/cluster.key), @skew_ms (default SKEW_S); @cluster: a cluster
    file ([[host]] sections for both, no node-id: parqd finds itself by
    address); returns its path."""
    topo, tmp = env.topo, env.tmp
    me, peer = (ME, PEER) if side == "a" else (PEER, ME)
    dev, ip = ((topo.dev_a(), topo.ip_a()) if side == "a"
               else (topo.dev_b(), topo.ip_b()))
    peer_ip = topo.ip_b() if side == "a" else topo.ip_a()
    cfg = os.path.join(tmp, name)
    if cluster:
        node = ""
        hosts = (f'[[host]]\nid = {ME}\naddresses = ["{topo.ip_a()}"]\n\n'
                 f'[[host]]\nid = {PEER}\naddresses = ["{topo.ip_b()}"]\n')
    else:
        node = f"node-id = {me}"
        hosts = f'[[peer]]\nid = {peer}\naddresses = ["{peer_ip}"]\n'
    with open(cfg, "w") as f:
        f.write(f"""# parq_parqd selftest
interface = "{dev}"
listen-address = "{ip}"
listen-port = {PORT}
{node}
key-file = "{key_file or tmp + '/cluster.key'}"
metrics-file = "{tmp}/{metrics_file}"
metrics-period = "100ms"
status-socket = "{tmp}/{name}.sock"
max-clock-skew = "{skew_ms or int(SKEW_S * 1000)}ms"
{keys}
{hosts}
{sections}""")
    return cfg


def write_key(env, name, k):
    fd = os.open(os.path.join(env.tmp, name),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, k.hex().encode() + b"\n")
    os.close(fd)


class Notes:
    """What parqd sends to its NOTIFY_SOCKET, read as it comes by a
    thread, as systemd does: a datagram socket's queue holds 10 messages
    (net.unix.max_dgram_qlen), and sd_notify() blocks when it is full."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.got = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            m = self.sock.recv(4096).decode()
            with self.cv:
                self.got.append(m)
                self.cv.notify_all()

    def take(self):
        """The messages since the last take()."""
        with self.cv:
            out, self.got = self.got, []
        return out

    def until(self, line, timeout=5.0):
        """The messages up to the first with @line (fails after @timeout
        x slowdown seconds); later ones stay."""
        deadline = time.monotonic() + timeout * ktap.slowdown()
        with self.cv:
            while True:
                for i, m in enumerate(self.got):
                    if line in m.split("\n"):
                        out, self.got = self.got[:i + 1], self.got[i + 1:]
                        return out
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {line} from parqd; it sent "
                                         f"{self.got}")
                self.cv.wait(left)


def notes(env, until, timeout=5.0):
    return env.notify.until(until, timeout)


def drain_notes(env):
    return env.notify.take()


def setup(env):
    """Adds .tmp, .key (the cluster key), .seq (peer 2's last sequence
    number), .notify (the NOTIFY_SOCKET parqd writes to), .parqd and
    .started (time.time() when parqd started) to @env."""
    topo = env.topo
    env.seq = 0
    env.tmp = tmp = tempfile.mkdtemp(prefix="parq-parqd-")
    env.key = os.urandom(32)
    write_key(env, "cluster.key", env.key)
    env.notify = Notes(os.path.join(tmp, "notify.sock"))
    # A cluster file: A finds its own [[host]] by its address.
    cfg = write_config(env, "parqd.toml", "a", "parqd.prom", cluster=True)
    r = topo.a.run([PARQD, "-c", cfg, "--check-config"], check=False)
    diag(f"parqd --check-config: {r.stdout.strip()} {r.stderr.strip()}")
    check_eq(r.returncode, 0, "parqd --check-config")
    check("valid; node 1, 1 peer(s)" in r.stdout,
          f"A found its [[host]] by address: {r.stdout!r}")
    with ParqGenl(topo.a) as g:
        g.delete()
    penv = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify.sock"),
                WATCHDOG_USEC=str(int(WATCHDOG_S * 1e6)))
    env.parqd = topo.a.popen([PARQD, "-c", cfg, "--log-level", "debug"],
                             env=penv)
    env.started = time.time()
    wait_for("parqd's first metrics file",
             lambda: "parqd_messages_received_total" in metrics(env))
    check(env.parqd.poll() is None, "parqd exited at start")
    # It started before its first metrics: messages stamped from now
    # plus its skew on are after its start plus the skew.
    time.sleep(SKEW_S)
    return [Stopper(env)]


class Stopper:
    def __init__(self, env):
        self.env = env

    def stop(self):
        parqd = self.env.parqd
        if parqd is not None and parqd.poll() is None:
            parqd.kill()
            parqd.wait(5)


def t_grant_release(env):
    topo, key = env.topo, env.key
    e, s = nxt(env)
    send(env, credits.grant(key, PEER, e, s, credit=3000, addrs=[topo.ip_b()],
                            epoch_us=EPOCH_US, lease=GRANT_LEASE,
                            to=topo.ip_a()))
    t = wait_for("the GRANT's kernel entry",
                 lambda: table(env).get(topo.ip_b()))
    check_eq((t["credit"], t["epoch_ns"]), (3000, EPOCH_US * 1000),
             "credit, epoch from the GRANT")
    check(0 < t["lease_ns"] <= GRANT_LEASE * EPOCH_US * 1000,
          f"lease left {t['lease_ns']}")
    with ParqGenl(topo.a) as g:
        check_eq(g.get(topo.ip_b())["credit"], 3000, "parqlab.genl get")
    # A restatement with a new credit replaces it (absolute credits).
    e, s = nxt(env)
    send(env, credits.grant(key, PEER, e, s, credit=0, addrs=[topo.ip_b()],
                            epoch_us=EPOCH_US, lease=GRANT_LEASE,
                            to=topo.ip_a()))
    wait_for("credit 0", lambda: table(env)[topo.ip_b()]["credit"] == 0)
    e, s = nxt(env)
    send(env, credits.release(key, PEER, e, s, addrs=[topo.ip_b()],
                              epoch_us=EPOCH_US,
                              to=topo.ip_a()))
    wait_for("the RELEASE", lambda: topo.ip_b() not in table(env))
    with ParqGenl(topo.a) as g:
        check_eq(g.dump(), [], "kernel table after RELEASE")
    m = wait_for("metrics", lambda: (lambda m: m if m.get(
        "parqd_releases_applied_total") == 1 else None)(metrics(env)))
    check_eq((m["parqd_grants_applied_total"],
              m['parqd_kernel_requests_total{cmd="credit_set"}'],
              m['parqd_kernel_errors_total{cmd="credit_set"}']),
             (2, 2, 0), "grants applied, kernel sets, kernel errors")


def t_bad_messages_change_nothing(env):
    topo, key = env.topo, env.key
    e, s = nxt(env)
    good = credits.grant(key, PEER, e, s, credit=1000, addrs=[topo.ip_b()],
                         epoch_us=EPOCH_US, lease=GRANT_LEASE,
                         to=topo.ip_a())
    send_accepted(env, good, "the GRANT",
                  lambda: topo.ip_b() in kernel_table(env))
    before = metrics(env)
    accepted = before["parqd_messages_accepted_total"]
    bad = []
    e, s = nxt(env)
    bad.append(("bad_mac", credits.grant(os.urandom(32), PEER, e, s, 5,
                                         [topo.ip_b()], EPOCH_US, 500,
                                         to=topo.ip_a())))
    # Made with the right key for another host (the MAC covers the
    # recipient): a GRANT captured on its way elsewhere and replayed here.
    e7, s7 = nxt(env)
    bad.append(("bad_mac", credits.grant(key, PEER, e7, s7, 0, [topo.ip_b()],
                                         EPOCH_US, 500, to="10.9.9.10")))
    bad.append(("duplicate", good))
    e2, s2 = nxt(env)
    bad.append(("time_behind", credits.grant(key, PEER, e2 - 60 * 10**9, s2,
                                             6, [topo.ip_b()], EPOCH_US,
                                             500,
                                             to=topo.ip_a())))
    e6, s6 = nxt(env)
    bad.append(("unknown_key", credits.grant(key, PEER, e6, s6, 11,
                                             [topo.ip_b()], EPOCH_US, 500,
                                             key_id=7,
                                             to=topo.ip_a())))
    bad.append(("malformed", good[:60]))
    e3, s3 = nxt(env)
    bad.append(("unknown_peer", credits.grant(key, STRANGER, e3, s3, 7,
                                              [topo.ip_b()], EPOCH_US, 500,
                                              to=topo.ip_a())))
    e4, s4 = nxt(env)
    bad.append(("malformed", credits.encode(key, credits.GRANT, PEER, e4, s4,
                                            8, EPOCH_US, 500, [topo.ip_b()],
                                            flags=1,
                                            to=topo.ip_a())))
    e5, s5 = nxt(env)
    bad.append(("foreign_address", credits.grant(key, PEER, e5, s5, 9,
                                                 ["10.9.9.9"], EPOCH_US,
                                                 500,
                                                 to=topo.ip_a())))
    for _, data in bad:
        send(env, data)
    expect = {}
    for reason, _ in bad:
        expect[reason] = expect.get(reason, 0) + 1

    def counted():
        m = metrics(env)
        return all(m.get(f'parqd_messages_dropped_total{{reason="{r}"}}', 0)
                   - before.get(f'parqd_messages_dropped_total'
                                f'{{reason="{r}"}}', 0) == n
                   for r, n in expect.items()) and m
    m = wait_for(f"drops counted {expect}", counted)
    check_eq(m["parqd_messages_accepted_total"], accepted, "accepted")
    check_eq(m['parqd_messages_malformed_total{error="short"}'] -
             before.get('parqd_messages_malformed_total{error="short"}', 0),
             1, "malformed: short")
    check_eq(m['parqd_messages_malformed_total{error="bad_flags"}'] -
             before.get('parqd_messages_malformed_total{error="bad_flags"}',
                        0), 1, "malformed: bad_flags")
    check_eq(m["parqd_messages_received_total"],
             m["parqd_messages_accepted_total"] +
             sum(v for k, v in m.items()
                 if k.startswith("parqd_messages_dropped_total")),
             "received = accepted + dropped")
    t = table(env)
    check_eq(sorted(t), [topo.ip_b()], "table after bad messages")
    check_eq(t[topo.ip_b()]["credit"], 1000, "credit after bad messages")
    # The replay window did not move: the next good message is accepted.
    e, s = nxt(env)
    send(env, credits.release(key, PEER, e, s, [topo.ip_b()], EPOCH_US,
                              to=topo.ip_a()))
    wait_for("the RELEASE after bad messages",
             lambda: topo.ip_b() not in table(env))


def t_wrong_source(env):
    """The right key and peer id from an address that is not the peer's."""
    topo, key = env.topo, env.key
    topo.b.run(["ip", "addr", "add", "10.77.0.9/24", "dev", topo.dev_b()])
    topo.a.run(["ip", "neigh", "replace", "10.77.0.9", "lladdr",
                topo.mac_b(), "dev", topo.dev_a(), "nud", "permanent"])
    before = drops(env, "wrong_source")
    e, s = nxt(env)
    data = credits.grant(key, PEER, e, s, 10, [topo.ip_b()], EPOCH_US, 500,
                         to=topo.ip_a())
    with topo.b.socket() as sock:
        sock.bind(("10.77.0.9", 0))
        sock.sendto(data, (topo.ip_a(), PORT))
    wait_for("wrong_source counted",
             lambda: drops(env, "wrong_source") == before + 1)
    check_eq(table(env), {}, "table after a wrong-source message")


def peers(env):
    """parqctl peers --json: peer 2's entry, checked against the reply's
    shape."""
    tmp = env.tmp
    r = ctl_json(env, "peers", "--socket",
                 os.path.join(tmp, "parqd.toml.sock"))
    check_eq((r.get("ok"), r.get("node"), r.get("receiver")),
             (True, ME, False), f"peers reply {r}")
    check_eq([p["id"] for p in r["peers"]], [PEER], "one peer, node 2")
    return r["peers"][0]


def t_parqctl_peers(env):
    """What parqd's status socket says of peer 2 follows what it sends: a
    GRANT accepted (sequence, credit held), then a forgery and a replay
    counted by reason, a RELEASE; the text form lists the peer."""
    topo, key, tmp = env.topo, env.key, env.tmp
    before = peers(env)
    e, s = nxt(env)
    good = credits.grant(key, PEER, e, s, credit=2500, addrs=[topo.ip_b()],
                         epoch_us=EPOCH_US, lease=GRANT_LEASE,
                         to=topo.ip_a())
    send_accepted(env, good, "the GRANT accepted")
    e2, s2 = nxt(env)
    send(env, credits.grant(os.urandom(32), PEER, e2, s2, 5, [topo.ip_b()],
                            EPOCH_US, 500,
                            to=topo.ip_a()))
    send(env, good)
    want = {"bad_mac": before["dropped"]["bad_mac"] + 1,
            "duplicate": before["dropped"]["duplicate"] + 1}
    p = wait_for("peers: a forgery and a replay counted",
                 lambda: (lambda p: p if all(
                     p["dropped"][k] == v for k, v in want.items())
                     else None)(peers(env)))
    check_eq(p["accepted"], before["accepted"] + 1, "accepted")
    check_eq((p["last_accepted"]["type"], p["last_accepted"]["sequence"],
              p["last_accepted"]["time_ns"]), ("grant", s, e),
             "last accepted: type, sequence, timestamp")
    check_eq([(h["address"], h["credit"], h["epoch_ns"]) for h in p["held"]],
             [(topo.ip_b(), 2500, EPOCH_US * 1000)], "credit held")
    check(p["granted"] is None and p["last_sent"] is None,
          "no receiving role: nothing granted, nothing sent")
    check_eq(sorted(k for k, v in p["dropped"].items()
                    if v != before["dropped"][k]),
             ["bad_mac", "duplicate"], "no other drop reason moved")
    text = ctl(env, "peers", "--socket", os.path.join(tmp, "parqd.toml.sock"))
    diag(*text.stdout.splitlines())
    check("node 1: 1 peer(s), receiving role off" in text.stdout and
          "grant " in text.stdout and "bad_mac" in text.stdout,
          "text form")
    e, s = nxt(env)
    send(env, credits.release(key, PEER, e, s, [topo.ip_b()], EPOCH_US,
                              to=topo.ip_a()))
    p = wait_for("peers: the RELEASE", lambda: (lambda p: p if p[
        "last_accepted"]["type"] == "release" else None)(peers(env)))
    check_eq(p["held"], [], "nothing held after the RELEASE")
    # A connection that asks nothing is closed after 2 s (parqd.md), also
    # when nothing else arrives at the socket.
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as silent:
        silent.connect(os.path.join(tmp, "parqd.toml.sock"))
        silent.settimeout(6 * ktap.slowdown())
        t0 = time.monotonic()
        try:
            got = silent.recv(4096)
        except socket.timeout:
            raise AssertionError("a silent connection was still open after "
                                 f"{6 * ktap.slowdown()} s")
        check_eq(got, b"", "a silent connection is closed without a reply")
        diag(f"silent connection closed after {time.monotonic() - t0:.1f} s")
    r = ctl_json(env, "peers", "--socket", os.path.join(tmp, "none.sock"),
                 check_rc=False)
    check(r.get("ok") is False and "cannot reach parqd's status socket"
          in r.get("error", ""), f"no parqd there: {r}")


def t_parqctl_credit(env):
    check_eq(ctl_json(env, "credit", "set", "10.9.9.9", "--credit", "1500",
                      "--epoch", "2ms", "--lease", f"{CTL_LEASE_S}s"),
             {"ok": True},
             "set --json")
    check_eq(ctl_json(env, "credit", "set", "fd00:9::9", "--credit", "0",
                      "--lease", f"{CTL_LEASE_S}s"), {"ok": True},
             "set v6 --json")
    t = table(env)
    check_eq(sorted(t), ["10.9.9.9", "fd00:9::9"], "show --json")
    check_eq((t["10.9.9.9"]["credit"], t["10.9.9.9"]["epoch_ns"]),
             (1500, 2 * MS), "10.9.9.9 entry")
    check(0 < t["10.9.9.9"]["lease_ns"] <= CTL_LEASE_S * 1000 * MS, "lease")
    with ParqGenl(env.a) as g:
        check_eq(g.get("10.9.9.9")["credit"], 1500, "parqlab.genl agrees")
    text = ctl(env, "credit", "show").stdout
    diag(*text.splitlines())
    check("10.9.9.9" in text and "ADDRESS" in text, "show text")
    check_eq(ctl_json(env, "credit", "clear", "10.9.9.9"), {"ok": True},
             "clear one")
    r = ctl_json(env, "credit", "clear", "10.9.9.9", check_rc=False)
    check_eq(r.get("ok"), False, f"clear a missing entry: {r}")
    check("no credit entry" in r.get("error", ""),
          f"the kernel's extack message is shown: {r}")
    r = ctl(env, "credit", "clear", "10.9.9.9", check_rc=False)
    check(r.returncode == 1 and "no credit entry" in r.stderr,
          f"text error: {r.returncode} {r.stderr!r}")
    # An error the kernel's policy finds (lease above PARQ_LEASE_MAX is
    # refused by parqctl itself; a credit set in an unprivileged process
    # is not tried here).
    check_eq(ctl_json(env, "credit", "clear"), {"ok": True}, "clear all")
    check_eq(ctl_json(env, "credit", "show"), [], "empty table")


def t_parqctl_qdisc(env):
    topo = env.topo
    r = ctl_json(env, "qdisc", "show", topo.dev_a(), check_rc=False)
    check(r.get("ok") is False and "no parq qdisc" in r.get("error", ""),
          f"no parq qdisc yet: {r}")
    # Options away from their defaults, names, words and a negative one.
    topo.a.run(["tc", "qdisc", "add", "dev", topo.dev_a(), "root", "handle",
                "1:", "parq", "threshold", "7", "unit", "packets", "rate",
                "50mbit", "overhead", "-4", "no-split-gso",
                "dscp-parallel", "EF,CS5,AF41", "dscp-mark", "CS4",
                "default", "parallel", "linkrate", "1gbit"])
    q = ctl_json(env, "qdisc", "show", topo.dev_a())
    check(isinstance(q, list) and len(q) == 1, f"one parq qdisc: {q}")
    check_eq((q[0]["kind"], q[0]["dev"], q[0]["handle"], q[0].get("root")),
             ("parq", topo.dev_a(), "1:", True), "kind, dev, handle, root")
    # parqctl reads the kernel's attributes by the parameter and statistics
    # tables; tc prints them through the plugin: both name and show them
    # alike (the qdisc is idle: its statistics stand still).
    # tc prints the extended statistics beside the others, parqctl apart.
    t = tc.root_qdisc(topo.a, topo.dev_a())
    check_eq(q[0]["options"], t["options"], "options as tc -j shows them")
    basic = {"kind", "handle", "root", "parent", "refcnt", "options",
             *tc.STAT_KEYS}
    check_eq(q[0]["xstats"], {k: v for k, v in t.items() if k not in basic},
             "xstats as tc -s -j shows them")
    check_eq({k: q[0][k] for k in tc.STAT_KEYS},
             {k: t[k] for k in tc.STAT_KEYS}, "statistics")
    # The other words: no parallel DSCP, no shaper, the link's own speed.
    topo.a.run(["tc", "qdisc", "change", "dev", topo.dev_a(), "root", "parq",
                "dscp-parallel", "none", "rate", "unlimited", "linkrate",
                "auto", "threshold", "inf", "dscp-mark", "off"])
    q = ctl_json(env, "qdisc", "show", topo.dev_a())
    t = tc.root_qdisc(topo.a, topo.dev_a())
    check_eq(q[0]["options"], t["options"], "words as tc -j shows them")
    check("threshold_turns" in q[0]["xstats"]
          and "local_sojourn_hist" in q[0]["xstats"],
          f"every group of xstats: {sorted(q[0]['xstats'])}")
    diag(*ctl(env, "qdisc", "show", topo.dev_a()).stdout.splitlines()[:8])
    topo.a.run(["tc", "qdisc", "del", "dev", topo.dev_a(), "root"])


ETCD_TIMEOUT_S = 4


def b_config(env, name, admission):
    """A configuration of B's own (the receiving role on) with
    `admission`, the body of its [admission] section; returns its
    path."""
    topo = env.topo
    return write_config(env, name, "b", "b.prom",
                        keys=f'receiver = true\naddresses = ["{topo.ip_b()}"]',
                        sections="\n[admission]\n" + admission)


def t_admission_failure_leaves_monitor_off(env):
    """A parqd whose admission role cannot start (here: no topology file)
    exits with its error and leaves the kernel's receive monitor as it
    found it, off: parqd starts that role before the receiving role.  Run
    in B, where no parqd runs."""
    topo, tmp = env.topo, env.tmp
    cfg = b_config(env, "admission-fails.toml", f"""\
etcd-endpoints = ["http://127.0.0.1:9"]
topology-file = "{tmp}/no-such-topology.toml"
""")
    with ParqGenl(topo.b) as g:
        check_eq(g.mon_get()["mon_enabled"], 0, "B's monitor before")
    r = topo.b.run([PARQD, "-c", cfg], check=False,
                   timeout=20 * ktap.slowdown())
    diag(*r.stderr.strip().splitlines()[-3:])
    check_eq(r.returncode, 1, "parqd's exit status")
    check("no-such-topology.toml" in r.stderr, "the error names the file")
    with ParqGenl(topo.b) as g:
        check_eq(g.mon_get()["mon_enabled"], 0, "B's monitor after")


def t_status_socket_failure_leaves_monitor_off(env):
    """A parqd whose status socket cannot be made (its directory's parent
    does not exist) exits with the error and leaves the kernel's receive
    monitor off: the socket is opened before the receiving role starts.
    Run in B, where no parqd runs."""
    topo, tmp = env.topo, env.tmp
    cfg = write_config(env, "status-fails.toml", "b", "b.prom",
                       keys=f'receiver = true\naddresses = ["{topo.ip_b()}"]'
                       '\nlink-rate = 1000000000')
    with open(cfg) as f:
        text = f.read()
    bad = os.path.join(tmp, "no-such-dir", "sub", "status.sock")
    with open(cfg, "w") as f:
        f.write(text.replace(f'status-socket = "{tmp}/status-fails.toml.sock"',
                             f'status-socket = "{bad}"'))
    r = topo.b.run([PARQD, "-c", cfg], check=False,
                   timeout=20 * ktap.slowdown())
    diag(*r.stderr.strip().splitlines()[-2:])
    check_eq(r.returncode, 1, "parqd's exit status")
    check("status socket" in r.stderr and "no-such-dir" in r.stderr,
          "the error names the socket")
    with ParqGenl(topo.b) as g:
        check_eq(g.mon_get()["mon_enabled"], 0, "B's monitor after")


def t_silent_etcd_stalls_nothing(env):
    """An etcd that accepts connections and never answers holds each of
    parqd's etcd calls for etcd-timeout (4 s).  The calls run on the
    admission role's thread: the daemon's loop goes on rewriting its
    metrics file every 100 ms (in one loop, a gap of 4 s per attempt), and
    parqd admits nothing, says why, and stops promptly on SIGTERM."""
    topo, tmp = env.topo, env.tmp
    hole = topo.b.socket(type=socket.SOCK_STREAM)
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    topology = os.path.join(tmp, "topology.toml")
    with open(topology, "w") as f:
        f.write(topology_text({"a": topo.ip_a(), "b": topo.ip_b()},
                              capacity="1gbit"))
    prom = os.path.join(tmp, "b.prom")
    cfg = b_config(env, "silent-etcd.toml", f"""\
etcd-endpoints = ["http://127.0.0.1:{hole.getsockname()[1]}"]
etcd-timeout = "{ETCD_TIMEOUT_S}s"
topology-file = "{topology}"
host = "b"
lease = "10s"
socket = "{tmp}/admission.sock"
""")
    p = topo.b.popen([PARQD, "-c", cfg])
    try:
        # (A parqd that calls etcd on its loop writes it only after its
        # first call gave up.)
        wait_for("B's metrics file", lambda: os.path.exists(prom),
                 timeout=3 * ETCD_TIMEOUT_S)
        # Three etcd attempts' worth: the largest gap between rewrites.
        stamps = []
        end = time.monotonic() + 3 * ETCD_TIMEOUT_S
        while time.monotonic() < end:
            stamps.append(os.stat(prom).st_mtime_ns)
            time.sleep(0.02)
        writes = sorted(set(stamps))
        gap = max(b - a for a, b in zip(writes, writes[1:])) / 1e9
        diag(f"{len(writes)} rewrites in {3 * ETCD_TIMEOUT_S} s, the "
             f"longest gap {gap:.2f} s")
        check(gap < ETCD_TIMEOUT_S / 2,
              f"the metrics file went {gap:.2f} s without a rewrite while "
              f"etcd held a call for {ETCD_TIMEOUT_S} s")
        m = read_metrics(prom)
        check_eq(m.get("parqd_admission_lease_held"), 0, "no lease")
        r = topo.b.run([PARQCTL, "reserve", "--to", "a", "--rate", "1mbit",
                        "--socket", f"{tmp}/admission.sock"], check=False,
                       timeout=30 * ktap.slowdown())
        diag(r.stderr.strip())
        check(r.returncode != 0 and "no lease" in r.stderr,
              f"a reservation without a lease: {r.returncode} {r.stderr!r}")
        # Its etcd calls in flight give up at the stop (about a second):
        # no waiting out etcd-timeout once per thread (twice ETCD_TIMEOUT_S).
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(ETCD_TIMEOUT_S * ktap.slowdown())
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        diag(f"stopped in {took:.1f} s")
        check(rc is not None, f"parqd still runs {took:.1f} s after SIGTERM, "
              f"etcd-timeout being {ETCD_TIMEOUT_S} s")
        check_eq(rc, 0, "parqd's exit status")
    finally:
        hole.close()
        if p.poll() is None:
            p.kill()
            p.wait(5)


def t_notify(env):
    """READY=1 once parqd runs, with its status; then WATCHDOG=1 every
    half WATCHDOG_USEC: between 2 and 8 in 3 periods of the watchdog."""
    got = notes(env, "READY=1")
    ready = got[-1].split("\n")
    diag(f"parqd's notifications: {got}")
    check_eq([x for x in ready if x.startswith("STATUS=")],
             ["STATUS=node 1, 1 peer(s), sending role, key id 1"], "STATUS")
    drain_notes(env)
    time.sleep(3 * WATCHDOG_S)
    pings = sum(m.split("\n").count("WATCHDOG=1") for m in drain_notes(env))
    diag(f"{pings} WATCHDOG=1 in {3 * WATCHDOG_S:.1f} s "
         f"(WATCHDOG_USEC {int(WATCHDOG_S * 1e6)})")
    check(2 <= pings <= 8, f"{pings} watchdog pings in 3 watchdog periods")


def t_sighup_reload(env):
    """Key 1 to key 2 by SIGHUP, with the replay window kept."""
    topo, key, tmp, parqd = env.topo, env.key, env.tmp, env.parqd
    e, s = nxt(env)
    send(env, credits.grant(key, PEER, e, s, credit=1200, addrs=[topo.ip_b()],
                            epoch_us=EPOCH_US, lease=GRANT_LEASE,
                            to=topo.ip_a()))
    wait_for("the GRANT under key 1",
             lambda: table(env).get(topo.ip_b(), {}).get("credit") == 1200)
    key2 = os.urandom(32)
    write_key(env, "cluster2.key", key2)
    # A relative key-file: beside the configuration (no credentials).  A
    # larger skew, so that the window of sequence s is not forgotten (at
    # its newest timestamp + skew) before the duplicate below arrives; but
    # half the time parqd has run at most: it drops what is stamped before
    # its start + skew, the new skew once reloaded.
    skew_s = min(60, max(SKEW_S, (time.time() - env.started) / 2))
    diag(f"reloading with max-clock-skew {skew_s:.1f} s, "
         f"{time.time() - env.started:.1f} s after parqd's start")
    write_config(env, "parqd.toml", "a", "parqd.prom", keys="key-id = 2",
                 key_file="cluster2.key", skew_ms=int(skew_s * 1000),
                 cluster=True)
    drain_notes(env)
    parqd.send_signal(signal.SIGHUP)
    got = notes(env, "READY=1")
    diag(f"after SIGHUP: {got}")
    check(any("RELOADING=1" in m.split("\n") for m in got[:-1]),
          "RELOADING=1 before READY=1")
    check("STATUS=node 1, 1 peer(s), sending role, key id 2"
          in got[-1].split("\n"), f"STATUS after the reload: {got[-1]!r}")

    def grant2(sq, credit, k=key2, key_id=2):
        send(env, credits.grant(k, PEER, time.time_ns(), sq, credit=credit,
                                addrs=[topo.ip_b()], epoch_us=EPOCH_US,
                                lease=GRANT_LEASE, key_id=key_id,
                                to=topo.ip_a()))

    dup, unk = drops(env, "duplicate"), drops(env, "unknown_key")
    grant2(s, 5)
    wait_for("sequence s under key 2 dropped as a duplicate",
             lambda: drops(env, "duplicate") == dup + 1)
    _, s1 = nxt(env)
    grant2(s1, 6, k=key, key_id=1)
    wait_for("key 1 unknown after the reload",
             lambda: drops(env, "unknown_key") == unk + 1)
    _, s2 = nxt(env)
    grant2(s2, 2400)
    wait_for("a GRANT under key 2",
             lambda: table(env).get(topo.ip_b(), {}).get("credit") == 2400)
    # A file that does not parse: parqd goes on with key 2.
    with open(os.path.join(tmp, "parqd.toml"), "a") as f:
        f.write("node-id = \n")
    drain_notes(env)
    parqd.send_signal(signal.SIGHUP)
    notes(env, "READY=1")
    check(parqd.poll() is None, "parqd runs after a failed reload")
    _, s3 = nxt(env)
    grant2(s3, 3600)
    wait_for("a GRANT under key 2 after the failed reload",
             lambda: table(env).get(topo.ip_b(), {}).get("credit") == 3600)


def t_sigterm(env):
    parqd = env.parqd
    drain_notes(env)
    parqd.send_signal(signal.SIGTERM)
    try:
        rc = parqd.wait(5)
    except subprocess.TimeoutExpired:
        raise AssertionError("parqd did not stop within 5 s of SIGTERM")
    err = parqd.stderr.read()
    diag(*err.splitlines()[-6:])
    check_eq(rc, 0, "parqd exit status")
    check("stopping" in err, "parqd logged its stop")
    check("reload: " in err and "the running configuration stays" in err,
          "parqd logged the failed reload")
    check(any("STOPPING=1" in m.split("\n") for m in drain_notes(env)),
          "STOPPING=1")


def main():
    suite = ktap.Suite("parq_parqd")
    suite.case("grant_release", t_grant_release, timeout=30)
    suite.case("bad_messages_change_nothing", t_bad_messages_change_nothing,
               timeout=30)
    suite.case("wrong_source", t_wrong_source, timeout=30)
    suite.case("parqctl peers: accepted, dropped by reason, credit held",
               t_parqctl_peers, timeout=60)
    suite.case("parqctl_credit", t_parqctl_credit, timeout=30)
    suite.case("parqctl_qdisc", t_parqctl_qdisc, timeout=30)
    suite.case("a failed admission role leaves the monitor off",
               t_admission_failure_leaves_monitor_off, timeout=30)
    suite.case("a status socket that cannot be made leaves the monitor off",
               t_status_socket_failure_leaves_monitor_off, timeout=30)
    suite.case("an etcd that never answers stalls nothing",
               t_silent_etcd_stalls_nothing, timeout=60,
               speed="rewrites every 100 ms, judged against a 2 s gap")
    suite.case("sd_notify: READY=1, STATUS=, WATCHDOG=1", t_notify,
               timeout=30)
    suite.case("SIGHUP reloads the keys and keeps the replay windows",
               t_sighup_reload, timeout=60)
    suite.case("sigterm", t_sigterm, timeout=30)
    for b in (PARQD, PARQCTL):
        if not os.access(b, os.X_OK):
            return suite.skip_all(f"{b} not built (make userspace, or set "
                                  "PARQ_USERSPACE_BUILD)")
    return lab.run(suite, "pqd", setup=setup)


if __name__ == "__main__":
    sys.exit(main())
