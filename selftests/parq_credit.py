#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq credit table: the "parq" generic netlink family.

The table limits the local traffic a host sends to one destination (the
receiver-side credits that parqd's GRANTs set).  The first cases check
the table and its netlink interface, spoken by hand (parqlab.genl) so
that malformed requests can be sent too:
  - the family resolves, and loads sch_parq when it is not loaded;
  - set / get / dump round trips for IPv4 and IPv6 destinations; a
    repeated set keeps the entry's counters and epoch grid and refreshes
    its lease; delete one, delete all;
  - every malformed or out-of-range request is refused with an extended
    ack message, and the table is unchanged afterwards;
  - reads and writes need CAP_NET_ADMIN (parq_safety: over the namespace);
  - tables are per network namespace, and a namespace's entries go with it;
  - leases: an expired entry reads as expired at once and is freed by the
    sweep within two seconds;
  - the table holds PARQ_CREDIT_ENTRIES_MAX entries and refuses one more;
  - rmmod with entries in two namespaces, and a clean kernel log.
Then the qdisc: parq is the root of A's veth, and B has two addresses, D1
(10.77.0.2) and D2 (10.77.0.3).  A sends UDP datagrams to both; B counts
what arrives per destination, in time:
  - credit 0 for D1 stops D1's local traffic and not D2's; D1 resumes by
    itself when the lease ends, and at once when the entry is deleted;
  - parallel (EF) traffic to D1 is not held by the credit;
  - a credit of C bytes per epoch E holds D1 to at most C per epoch (the
    bound is exact: bytes parq sent over an interval <= (epochs + 2) x C),
    and the rate achieved is printed;
  - xstats count the destinations, the waiting ones and the waits;
  - while the only local destination waits, parallel traffic gets the
    whole shaped rate and no threshold turn is given to local;
  - under mq, with a parq child per TX queue of a two-queue veth and a
    sender thread pinned to each CPU (XPS: CPU i to queue i), one credit
    bounds what the children send together.
"""
import json
import os
import select
import socket
import struct
import sys
import threading
import time

from parqlab import ktap, lab, module, resv, uapi
from parqlab import tc as tclib
from parqlab.genl import ParqGenl, genlhdr
from parqlab.ktap import Skip, check, check_eq, diag
from parqlab.netns import Netns
from parqlab.rtnl import Rtnl, nla, nla_u32, nla_u64
from parqlab.tc import tc
from parqlab.traffic import TOS_EF, UDP_OVERHEAD, udp_socket

MS = 1000000
SEC = 1000 * MS
A4, B4, A6 = "10.77.0.2", "10.77.0.3", "fd00:77::2"
D1, D2 = "10.77.0.2", "10.77.0.3"  # B's two addresses
PORT = 6001
PAYLOAD = 972				# 1014 bytes on the wire


def genl(env, ns=None):
    return ParqGenl(ns if ns is not None else env.a)


def entries(g):
    return {e["addr"]: e for e in g.dump()}


def ok(res, what):
    check(res.error == 0, f"{what}: {res}")


def t_family_autoload(env):
    # Nothing may hold the module: no parq qdisc exists in this test.
    if module.loaded():
        r = module.rmmod()
        check(r.returncode == 0, f"rmmod sch_parq: {r.stderr.strip()}")
    check(not module.loaded(), "sch_parq still loaded")
    if not module.installed():
        module.ensure_loaded()
        raise Skip("sch_parq not installed: the kernel cannot autoload it")
    with genl(env) as g:
        check(g.family > 0, f"family id {g.family}")
    check(module.loaded(), "resolving the parq family did not load sch_parq")


def t_round_trip(env):
    with genl(env) as g:
        ok(g.delete(), "flush")
        ok(g.set(A4, credit=3000, lease=5 * SEC, epoch=2 * MS),
           "set v4")
        ok(g.set(A6, credit=0, lease=5 * SEC), "set v6")
        t = entries(g)
        check_eq(sorted(t), sorted([A4, A6]), "dumped addresses")
        e = t[A4]
        check_eq((e["credit"], e["epoch"], e["used"], e["passed"],
                  e["held"]), (3000, 2 * MS, 0, 0, 0), f"{A4} entry")
        check(0 < e["lease"] <= 5 * SEC, f"lease left {e['lease']}")
        check_eq((t[A6]["credit"], t[A6]["epoch"]),
                 (0, uapi.PARQ_EPOCH_DEFAULT), f"{A6} credit, default epoch")
        check_eq(g.get(A4)["credit"], 3000, "get v4")

        # A repeated set (parqd resends every epoch) refreshes the lease.
        time.sleep(0.3)
        before = g.get(A4)["lease"]
        ok(g.set(A4, credit=3000, lease=5 * SEC, epoch=2 * MS),
           "set again")
        after = g.get(A4)["lease"]
        check(after > before, f"lease not refreshed: {before} -> {after}")
        # A new credit replaces the old one (absolute, not added).
        ok(g.set(A4, credit=100, lease=5 * SEC, epoch=2 * MS),
           "set new credit")
        check_eq(g.get(A4)["credit"], 100, "credit replaced")
        check_eq(len(g.dump()), 2, "still two entries")

        ok(g.delete(A6), "delete v6")
        check_eq(sorted(entries(g)), [A4], "after delete v6")
        r = g.delete(A6)
        check_eq((r.errname, r.msg),
                 ("ENOENT", "parq: no credit entry for that address"),
                 "delete missing")
        ok(g.delete(), "delete all")
        check_eq(g.dump(), [], "table after delete all")


POLICY = ("EINVAL", "ERANGE")


def bad_requests(g):
    """(name, request attrs, cmd, errno names, extack message: the text,
    None for any (the policy's), False for none).
    The netlink policy refuses with EINVAL or ERANGE, by kernel version."""
    C = uapi.PARQ_CMD_CREDIT_SET
    a4 = nla(uapi.PARQ_A_ADDR4, bytes([10, 77, 0, 9]))
    a6 = nla(uapi.PARQ_A_ADDR6, bytes(15) + b"\x09")
    cr = nla_u32(uapi.PARQ_A_CREDIT, 1500)
    ls = nla_u64(uapi.PARQ_A_LEASE, SEC)
    return [
        ("two addresses", [a4, a6, cr, ls], C, "EINVAL",
         "parq: give one address, IPv4 or IPv6"),
        ("no address", [cr, ls], C, "EINVAL",
         "parq: a credit needs a destination address"),
        ("no lease", [a4, cr], C, "EINVAL",
         "parq: a credit needs a credit and a lease"),
        ("no credit", [a4, ls], C, "EINVAL",
         "parq: a credit needs a credit and a lease"),
        ("epoch below minimum", [a4, cr, ls,
                                 nla_u64(uapi.PARQ_A_EPOCH,
                                         uapi.PARQ_EPOCH_MIN - 1)],
         C, POLICY, None),
        ("epoch above maximum", [a4, cr, ls,
                                 nla_u64(uapi.PARQ_A_EPOCH,
                                         uapi.PARQ_EPOCH_MAX + 1)],
         C, POLICY, None),
        ("lease 0", [a4, cr, nla_u64(uapi.PARQ_A_LEASE, 0)], C, "ERANGE",
         None),
        ("lease above maximum",
         [a4, cr, nla_u64(uapi.PARQ_A_LEASE, uapi.PARQ_LEASE_MAX + 1)], C,
         POLICY, None),
        ("IPv6 address of 15 bytes",
         [nla(uapi.PARQ_A_ADDR6, bytes(15)), cr, ls], C, POLICY, None),
        ("IPv4 address of 2 bytes", [nla(uapi.PARQ_A_ADDR4, b"\x0a\x4d"), cr,
                                     ls], C, POLICY, None),
        ("credit of 2 bytes", [a4, nla(uapi.PARQ_A_CREDIT, b"\x05\xdc"), ls],
         C, POLICY, None),
        ("unknown attribute", [a4, cr, ls, nla(uapi.PARQ_A_MAX + 1,
                                               b"\0\0\0\0")], C, POLICY,
         None),
        ("read-only attribute in a set", [a4, cr, ls,
                                          nla_u32(uapi.PARQ_A_USED, 5)], C,
         POLICY, None),
        # Each request has its own policy: a monitor setting, which
        # mon-set takes, is refused in a credit request, not ignored.
        ("monitor attribute in a set",
         [a4, cr, ls, nla_u32(uapi.PARQ_A_MON_SIZE, 16)], C, POLICY, None),
        ("monitor attribute in a delete",
         [a4, nla_u32(uapi.PARQ_A_MON_SIZE, 16)], uapi.PARQ_CMD_CREDIT_DEL,
         POLICY, None),
        ("unknown command", [a4], uapi.PARQ_CMD_MAX + 1,
         ("EOPNOTSUPP", "ENOTSUP"), False),  # genl core: no message
        ("get without address", [], uapi.PARQ_CMD_CREDIT_GET, "EINVAL",
         "parq: give an address, or dump the table"),
        ("get of a missing address", [nla(uapi.PARQ_A_ADDR4,
                                          bytes([10, 77, 0, 99]))],
         uapi.PARQ_CMD_CREDIT_GET, "ENOENT",
         "parq: no credit entry for that address"),
    ]


def t_refusals(env):
    with genl(env) as g:
        ok(g.delete(), "flush")
        ok(g.set(A4, credit=3000, lease=60 * SEC), "set")
        ok(g.set(A6, credit=0, lease=60 * SEC), "set")
        snap = {k: {f: v for f, v in e.items() if f != "lease"}
                for k, e in entries(g).items()}
        for name, attrs, cmd, want, msg in bad_requests(g):
            r = g.cmd(cmd, *attrs)
            want = (want,) if isinstance(want, str) else want
            check(r.errname in want, f"{name}: error {r.errname}, want "
                  f"{' or '.join(want)}")
            if msg:
                check_eq(r.msg, msg, f"{name}: extack message")
            elif msg is None:
                check(r.msg, f"{name}: no extack message")
            diag(f"{name}: {r.errname} {r.msg!r}")
            now = {k: {f: v for f, v in e.items() if f != "lease"}
                   for k, e in entries(g).items()}
            check_eq(now, snap, f"table after the refused {name}")
        ok(g.delete(), "flush")


UNPRIV = r"""
from parqlab.genl import ParqGenl, GenlError
g = ParqGenl()
print(g.set("10.77.0.5", credit=1, lease=10**9).errname)
print(g.delete().errname)
try:
    print(len(g.dump()))
except GenlError as e:
    print(e.res.errname)
"""


def t_admin_perm(env):
    topo = env.topo
    with genl(env) as g:
        ok(g.delete(), "flush")
        ok(g.set(A4, credit=1, lease=60 * SEC), "set")
    scripts = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                           "scripts")
    p = topo.a.run(["setpriv", "--reuid=65534", "--regid=65534",
                    "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                    "env", f"PYTHONPATH={scripts}",
                    "/usr/bin/python3", "-c", UNPRIV], check=False)
    check(p.returncode == 0, f"unprivileged client: {p.stderr.strip()}")
    check_eq(p.stdout.split(), ["EPERM", "EPERM", "EPERM"],
             "unprivileged set, delete all, dump")
    with genl(env) as g:
        check_eq(sorted(entries(g)), [A4], "table after unprivileged writes")
        ok(g.delete(), "flush")


def t_netns(env):
    topo = env.topo
    with genl(env, topo.a) as ga, genl(env, topo.b) as gb:
        ok(ga.delete(), "flush a")
        ok(gb.delete(), "flush b")
        ok(ga.set(A4, credit=1, lease=60 * SEC), "set in a")
        ok(gb.set(B4, credit=2, lease=60 * SEC), "set in b")
        check_eq(sorted(entries(ga)), [A4], "a's table")
        check_eq(sorted(entries(gb)), [B4], "b's table")
        ok(gb.delete(), "flush b")
        check_eq(sorted(entries(ga)), [A4], "a's table after flushing b")
        ok(ga.delete(), "flush a")
    # A namespace's entries are freed with it.
    tmp = Netns("parqcr-tmp")
    ktap.defer(tmp.delete)
    with genl(env, tmp) as g:
        for i in range(100):
            ok(g.set(f"10.78.0.{i}", credit=i, lease=60 * SEC), "set")
        check_eq(len(g.dump()), 100, "entries in the temporary namespace")


def t_lease(env):
    with genl(env) as g:
        ok(g.delete(), "flush")
        ok(g.set(A4, credit=1, lease=200 * MS), "set, lease 200 ms")
        ok(g.set(B4, credit=1, lease=60 * SEC), "set, lease 60 s")
        check(0 < g.get(A4)["lease"] <= 200 * MS, "lease left")
        time.sleep(0.4)
        e = entries(g)
        if A4 in e:		# not swept yet: it reads as expired
            check_eq(e[A4]["lease"], 0, "lease left after expiry")
        deadline = time.monotonic() + 5
        while A4 in entries(g) and time.monotonic() < deadline:
            time.sleep(0.2)
        check(A4 not in entries(g), "expired entry not swept within 5 s")
        check_eq(sorted(entries(g)), [B4], "the live entry stays")
        ok(g.delete(), "flush")


def set_msg(family, seq, addr_u32, credit):
    body = genlhdr(uapi.PARQ_CMD_CREDIT_SET) + \
        nla(uapi.PARQ_A_ADDR4, struct.pack(">I", addr_u32)) + \
        nla_u32(uapi.PARQ_A_CREDIT, credit) + \
        nla_u64(uapi.PARQ_A_LEASE, 600 * SEC)
    return struct.pack("=IHHII", 16 + len(body), family, 1, seq, 0) + body


def t_full(env):
    N = uapi.PARQ_CREDIT_ENTRIES_MAX
    with genl(env) as g:
        ok(g.delete(), "flush")
        t0 = time.monotonic()
        # Many requests per send, without acks (errors still come back).
        buf = b""
        for i in range(N):
            buf += set_msg(g.family, i + 1, 0x0b000000 + i, i)
            if len(buf) > 60000:
                g.sock.send(buf)
                buf = b""
        if buf:
            g.sock.send(buf)
        g.sock.setblocking(False)
        errors = 0
        try:
            while True:
                errors += len(g.sock.recv(1 << 20)) > 0
        except BlockingIOError:
            pass
        g.sock.settimeout(30)
        # A dump that meets a resize of the table starts its walk over, and
        # may then list some entries twice: count addresses.
        entries = g.dump()
        n = len({e["addr"] for e in entries})
        diag(f"{n} entries set in {time.monotonic() - t0:.1f}s "
             f"({errors} error answers; the dump listed {len(entries)})")
        check_eq((n, errors), (N, 0), "entries, error answers")
        r = g.set("12.0.0.1", credit=1, lease=SEC)
        check_eq((r.errname, r.msg), ("ENOSPC", "parq: credit table full"),
                 "one more")
        # Replacing an entry of a full table is fine.
        ok(g.set("11.0.0.5", credit=7, lease=SEC), "replace in full table")
        check_eq(g.get("11.0.0.5")["credit"], 7, "replaced")
        ok(g.delete(), "flush")
        check_eq(g.dump(), [], "table after flush")


def t_rmmod_with_entries(env):
    topo = env.topo
    with genl(env, topo.a) as ga, genl(env, topo.b) as gb:
        for i in range(50):
            ok(ga.set(f"10.79.0.{i}", credit=i, lease=60 * SEC), "set a")
            ok(gb.set(f"fd00:79::{i:x}", credit=i, lease=60 * SEC),
               "set b")
    r = module.rmmod()
    check(r.returncode == 0, f"rmmod with credit entries: {r.stderr.strip()}")
    check(not module.loaded(), "sch_parq still loaded")
    module.ensure_loaded()
    with genl(env, topo.a) as ga:
        check_eq(ga.dump(), [], "table of a fresh module")


# --- the qdisc under credits ----------------------------------------------

class Receiver:
    """UDP sockets in B on D1 and D2; records (time, destination, bytes)."""

    def __init__(self, env):
        self.socks = {}
        for d in (D1, D2):
            sk = env.topo.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
            sk.bind((d, PORT))
            sk.setblocking(False)
            self.socks[sk] = d
        self.log = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            ready, _, _ = select.select(list(self.socks), [], [], 0.05)
            now = time.monotonic()
            for sk in ready:
                while True:
                    try:
                        n = len(sk.recv(65536))
                    except BlockingIOError:
                        break
                    self.log.append((now, self.socks[sk], n))

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for sk in self.socks:
            sk.close()

    def wire_bytes(self, dst, t0, t1):
        return sum(n + UDP_OVERHEAD for t, d, n in self.log
                   if d == dst and t0 <= t < t1)

    def first(self, dst, after):
        return min((t for t, d, _ in self.log if d == dst and t >= after),
                   default=None)


class Sender:
    """Datagrams from A to each of @dsts, @burst every @period seconds, one
    non-blocking socket per destination with a send buffer large enough
    that a held destination never blocks its sender: what parq holds back
    is queued (or dropped at flow-limit), and the offered load stays."""

    def __init__(self, env, dsts, burst=8, period=0.004, tos=None):
        self.socks = {}
        for d in dsts:
            sk = udp_socket(env.a, tos=tos)
            resv.big_sndbuf(sk)
            sk.setblocking(False)
            self.socks[d] = sk
        self.burst, self.period = burst, period
        self.sent = {d: 0 for d in dsts}
        self.blocked = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        data = bytes(PAYLOAD)
        while not self.stop.is_set():
            for d, sk in self.socks.items():
                for _ in range(self.burst):
                    try:
                        sk.sendto(data, (d, PORT))
                        self.sent[d] += 1
                    except BlockingIOError:
                        self.blocked += 1
            time.sleep(self.period)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for sk in self.socks.values():
            sk.close()


def qdisc_setup(env, *args):
    """A fresh parq qdisc (zeroed counters) as the root of A's veth."""
    topo = env.topo
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root", check=False)
    tc(topo.a, "qdisc", "add", "dev", topo.dev_a(), "root", "handle", "1:",
       "parq", *args)


def xs(env):
    return tclib.parq_qdisc(env.a, env.dev)


def t_stop_and_lease(env):
    topo = env.topo
    qdisc_setup(env, "flow-limit", "200")
    rx = Receiver(env)
    try:
        with genl(env) as g:
            ok(g.delete(), "flush")
            lease = 2.0
            ok(g.set(D1, credit=0, lease=int(lease * SEC)),
               "credit 0 for D1")
            t_set = time.monotonic()
            tx = Sender(env, [D1, D2])
            try:
                time.sleep(1.0)
                mid = xs(env)
                time.sleep(lease + 1.0)
            finally:
                tx.close()
            time.sleep(0.3)
    finally:
        rx.close()
    t_end = t_set + lease
    d1_held = rx.wire_bytes(D1, t_set, t_end - 0.05)
    d2_held = rx.wire_bytes(D2, t_set, t_end - 0.05)
    first = rx.first(D1, t_set)
    diag(f"while held: D1 {d1_held} B, D2 {d2_held} B; D1 first packet "
         f"{(first - t_set) if first else float('nan'):.3f}s after the set "
         f"(lease {lease}s); sent D1 {tx.sent[D1]} D2 {tx.sent[D2]}, "
         f"{tx.blocked} sends blocked")
    diag(f"mid-run xstats: local_flows {mid['local_flows']} local_waiting "
         f"{mid['local_waiting']} credit_waits {mid['credit_waits']} "
         f"drop_flow_limit {mid['drop_flow_limit']}")
    check_eq(tx.blocked, 0, "sends that blocked")
    check_eq(d1_held, 0, "bytes D1 received under credit 0")
    check(d2_held > 100000, f"D2 received only {d2_held} B meanwhile")
    check(first is not None, "D1 never resumed after the lease")
    check(first >= t_end - 0.05,
          f"D1 resumed {t_end - first:.3f}s before the lease ended")
    check(first <= t_end + 0.5,
          f"D1 resumed {first - t_end:.3f}s after the lease ended")
    # D2's queue empties between bursts; D1's waits.
    check_eq(mid["local_waiting"], 1, "local_waiting while D1 is held")
    check(mid["local_flows"] in (1, 2), f"local_flows {mid['local_flows']}")
    check(mid["credit_waits"] > 0, "credit_waits not counted")
    check(mid["drop_flow_limit"] > 0,
          "D1's queue was not held at flow-limit (200)")
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root")


def t_delete_releases(env):
    topo = env.topo
    qdisc_setup(env)
    rx = Receiver(env)
    try:
        with genl(env) as g:
            ok(g.delete(), "flush")
            ok(g.set(D1, credit=0, lease=60 * SEC), "credit 0 for D1")
            tx = Sender(env, [D1])
            try:
                time.sleep(1.0)
                # The receiver stamps a batch of datagrams with the time
                # it woke: count "before" up to the moment the delete is
                # asked, and the resume time from there.
                t_del = time.monotonic()
                ok(g.delete(D1), "delete D1's entry")
                time.sleep(1.0)
            finally:
                tx.close()
            time.sleep(0.3)
    finally:
        rx.close()
    before = rx.wire_bytes(D1, 0, t_del)
    first = rx.first(D1, t_del)
    diag(f"D1 resumed {(first - t_del) * 1e3 if first else float('nan'):.1f}"
         " ms after its entry was deleted")
    check_eq(before, 0, "bytes D1 received before the delete")
    check(first is not None and first - t_del <= 0.3,
          "D1 did not resume within 300 ms of the delete")
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root")


def t_parallel_not_held(env):
    topo = env.topo
    qdisc_setup(env)
    rx = Receiver(env)
    N = 300
    try:
        with genl(env) as g:
            ok(g.delete(), "flush")
            ok(g.set(D1, credit=0, lease=60 * SEC), "credit 0 for D1")
            with udp_socket(topo.a, tos=TOS_EF) as sk:
                for i in range(N):
                    sk.sendto(bytes(PAYLOAD), (D1, PORT))
                    if i % 20 == 19:
                        time.sleep(0.01)
            time.sleep(0.5)
            ok(g.delete(), "flush")
    finally:
        rx.close()
    got = sum(1 for _, d, _ in rx.log if d == D1)
    check_eq(got, N, "EF datagrams D1 received under credit 0")
    q = xs(env)
    check_eq(q["credit_waits"], 0, "credit_waits (no local traffic)")
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root")


def t_no_lost_turns(env):
    """With threshold 1 the local class would take half of a saturated
    8 Mbit/s shaper.  While its only destination waits for credit, the
    parallel class gets the whole rate and no threshold turn goes to
    local; when the entry is deleted, the halves come back.  "The whole
    rate" is what the parallel sender offered, up to 8 Mbit/s: a Python
    sender on a loaded emulated CPU can fall short of the shaper (it
    offered too little once: parallel got 6.97 Mbit/s, local 0, no
    threshold turn lost)."""
    topo = env.topo
    qdisc_setup(env, "rate", "8mbit", "threshold", "1")
    with Rtnl(topo.a) as nl, genl(env) as g:
        idx = nl.ifindex(topo.dev_a())

        def snap():
            c = {k["handle"]: k["bytes"] for k in nl.classes(idx)}
            return time.monotonic(), c["1:1"], c["1:2"], xs(env), par.sent[D1]

        ok(g.delete(), "flush")
        ok(g.set(D1, credit=0, lease=60 * SEC), "credit 0 for D1")
        par = Sender(env, [D1], tos=TOS_EF)
        loc = Sender(env, [D1])
        try:
            time.sleep(1.0)
            t0, p0, l0, q0, s0 = snap()
            time.sleep(3.0)
            t1, p1, l1, q1, s1 = snap()
            ok(g.delete(D1), "delete D1's entry")
            time.sleep(1.0)
            t2, p2, l2, _, _ = snap()
            time.sleep(3.0)
            t3, p3, l3, _, _ = snap()
        finally:
            par.close()
            loc.close()
    held_rate = (p1 - p0) * 8 / (t1 - t0)
    offered = (s1 - s0) * (PAYLOAD + UDP_OVERHEAD) * 8 / (t1 - t0)
    want = min(8e6, offered)
    share = (p3 - p2) / max(1, (p3 - p2) + (l3 - l2))
    diag(f"local held: parallel {held_rate / 1e6:.2f} Mbit/s of "
         f"{offered / 1e6:.2f} offered, local "
         f"{(l1 - l0) * 8 / (t1 - t0) / 1e6:.2f} Mbit/s, threshold turns "
         f"{q1['threshold_turns'] - q0['threshold_turns']}, local_waiting "
         f"{q1['local_waiting']}; released: parallel share {share:.3f}")
    check_eq(l1 - l0, 0, "local bytes sent while its destination waits")
    check_eq(q1["threshold_turns"] - q0["threshold_turns"], 0,
             "threshold turns given to a waiting local class")
    check(held_rate >= 0.9 * want,
          f"parallel got {held_rate / 1e6:.2f} of {want / 1e6:.2f} Mbit/s "
          "(8 Mbit/s or what it offered) while local waited")
    check(0.4 <= share <= 0.6, f"parallel byte share {share:.3f} once "
          "released, want 1/2 (threshold 1)")
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root")


class Refresher:
    """Sets D1's entry again every millisecond with the same credit and
    epoch, as parqd resends it each epoch but faster, on a socket of its
    own, while the sender's packets charge the entry."""

    def __init__(self, env, credit, epoch):
        self.stop = threading.Event()
        self.sets = 0
        self.errors = []

        def run():
            with genl(env) as g:
                while not self.stop.is_set():
                    r = g.set(D1, credit=credit, lease=60 * SEC, epoch=epoch)
                    if r.error:
                        self.errors.append(r.errname)
                    self.sets += 1
                    time.sleep(0.001)
        self.thread = threading.Thread(target=run)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join(10)


def _window(read):
    """read() after the sender's first second and again 4 s later."""
    time.sleep(1.0)
    first = read()
    time.sleep(4.0)
    return first, read()


def t_credit_rate(env, refresh=False):
    """Bytes are read from the local class's counter (what parq sent, L2
    lengths, as credits count them) by netlink, with the time taken before
    and after each read, so the bound holds whatever the clocks' jitter.
    With @refresh, the entry is set again every millisecond meanwhile: a
    set with the same epoch keeps what was used, and loses no charge made
    while it runs."""
    topo = env.topo
    qdisc_setup(env)
    credit, epoch = 4000, 10 * MS		# 3.2 Mbit/s of wire bytes
    with Rtnl(topo.a) as nl:
        idx = nl.ifindex(topo.dev_a())

        def local_bytes():
            t = time.monotonic()
            b = next(c["bytes"] for c in nl.classes(idx)
                     if c["handle"] == "1:2")
            return t, b, time.monotonic()

        with genl(env) as g:
            ok(g.delete(), "flush")
            ok(g.set(D1, credit=credit, lease=60 * SEC, epoch=epoch),
               "credit for D1")
            tx = Sender(env, [D1], burst=10, period=0.003)  # several x that
            again = Refresher(env, credit, epoch) if refresh else None
            try:
                (ta, b0, tb), (tc_, b1, td) = _window(local_bytes)
            finally:
                tx.close()
                if again:
                    again.close()
            if again:
                diag(f"the entry was set {again.sets} times meanwhile")
                check(not again.errors, f"sets refused: {again.errors[:3]}")
            ok(g.delete(), "flush")
    got = b1 - b0
    per_s = SEC / epoch
    bound = ((td - ta) * per_s + 2) * credit
    floor = (tc_ - tb) * per_s * credit
    offered = tx.sent[D1] * (PAYLOAD + UDP_OVERHEAD) / (td - ta + 1.0)
    diag(f"D1 under {credit} B per {epoch // MS} ms: "
         f"{got * 8 / (td - ta) / 1e6:.2f} Mbit/s, {got / floor:.3f} of the "
         f"credit (offered {offered * 8 / 1e6:.1f} Mbit/s)")
    check(offered > 2 * credit * per_s,
          f"offered {offered * 8 / 1e6:.1f} Mbit/s: under twice the credit, "
          "so the credit was not what limited the rate")
    check(xs(env)["credit_waits"] > 0, "credit_waits not counted")
    check(got <= bound, f"D1 got {got} B: more than (epochs + 2) x {credit} "
          f"= {bound:.0f}")
    check(got >= 0.5 * floor,
          f"D1 got {got} B, under half its credit of {floor:.0f} B: the "
          "flow did not resume each epoch")
    tc(topo.a, "qdisc", "del", "dev", topo.dev_a(), "root")


# The multi-queue link of t_credit_across_mq: A's end, B's, B's address.
MQ_A, MQ_B, MQ_D = "crmq0", "crmq1", "10.79.0.2"
MQ_QUEUES = 2


class PinnedSender:
    """A thread per CPU, each pinned to its CPU, sending datagrams to
    @dst from a socket of its own, as fast as its socket takes them: with
    XPS mapping CPU i to TX queue i, each queue gets one thread's."""

    def __init__(self, env, dst, cpus):
        self.dst, self.stop = dst, threading.Event()
        self.sent = [0] * len(cpus)
        self.threads = [threading.Thread(target=self._run, args=(i, c),
                                         daemon=True)
                        for i, c in enumerate(cpus)]
        self.socks = []
        for _ in cpus:
            sk = udp_socket(env.a)
            resv.big_sndbuf(sk)
            sk.setblocking(False)
            self.socks.append(sk)
        for t in self.threads:
            t.start()

    def _run(self, i, cpu):
        os.sched_setaffinity(0, {cpu})  # this thread only
        data = bytes(PAYLOAD)
        while not self.stop.is_set():
            for _ in range(10):
                try:
                    self.socks[i].sendto(data, (self.dst, PORT))
                    self.sent[i] += 1
                except BlockingIOError:
                    pass
            time.sleep(0.003)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)
        for sk in self.socks:
            sk.close()


def t_credit_across_mq(env):
    """mq with a parq child per TX queue, local traffic to one destination
    from both queues at once: the destination's credit bounds the sum of
    what the children send, as it bounds one qdisc's.  The credit table is
    the namespace's, charged by every parq qdisc in it."""
    cpus = sorted(os.sched_getaffinity(0))[:MQ_QUEUES]
    if len(cpus) < MQ_QUEUES:
        raise Skip(f"needs {MQ_QUEUES} CPUs to fill {MQ_QUEUES} queues")
    a, b = env.topo.a, env.topo.b
    a.run(["ip", "link", "add", MQ_A, "numtxqueues", str(MQ_QUEUES),
           "numrxqueues", str(MQ_QUEUES), "type", "veth", "peer", "name",
           MQ_B, "numtxqueues", str(MQ_QUEUES), "numrxqueues",
           str(MQ_QUEUES), "netns", b.name])
    ktap.defer(a.run, ["ip", "link", "del", MQ_A], check=False)
    a.run(["ip", "addr", "add", "10.79.0.1/24", "dev", MQ_A])
    b.run(["ip", "addr", "add", f"{MQ_D}/24", "dev", MQ_B])
    for ns, dev in ((a, MQ_A), (b, MQ_B)):
        ns.run(["ip", "link", "set", dev, "up"])
    mac_b = json.loads(b.run(["ip", "-j", "link", "show", MQ_B]).stdout)[0][
        "address"]
    a.run(["ip", "neigh", "replace", MQ_D, "lladdr", mac_b, "dev", MQ_A,
           "nud", "permanent"])
    for q, cpu in enumerate(cpus):
        a.run(["sh", "-c", f"echo {1 << cpu:x} > /sys/class/net/{MQ_A}/"
               f"queues/tx-{q}/xps_cpus"])
    tc(a, "qdisc", "add", "dev", MQ_A, "root", "handle", "1:", "mq")
    for q in range(1, MQ_QUEUES + 1):
        tc(a, "qdisc", "add", "dev", MQ_A, "parent", f"1:{q:x}", "handle",
           f"{q + 1:x}:", "parq")
    credit, epoch = 4000, 10 * MS		# 3.2 Mbit/s of wire bytes
    with Rtnl(a) as nl:
        idx = nl.ifindex(MQ_A)

        def local_bytes():
            """Each child's local class's bytes, read between two clock
            readings."""
            t = time.monotonic()
            got = [c["bytes"] for c in nl.classes(idx)
                   if c.get("class") == "parq" and c["handle"].endswith(":2")]
            return t, got, time.monotonic()

        with genl(env) as g:
            ok(g.delete(), "flush")
            ok(g.set(MQ_D, credit=credit, lease=60 * SEC, epoch=epoch),
               "credit for the destination")
            tx = PinnedSender(env, MQ_D, cpus)
            try:
                (ta, b0, tb), (tc_, b1, td) = _window(local_bytes)
            finally:
                tx.close()
            ok(g.delete(), "flush")
    per_queue = [y - x for x, y in zip(b0, b1)]
    got = sum(per_queue)
    per_s = SEC / epoch
    bound = ((td - ta) * per_s + 2) * credit
    floor = (tc_ - tb) * per_s * credit
    diag(f"under {credit} B per {epoch // MS} ms: the children sent "
         f"{per_queue} B, {got * 8 / (td - ta) / 1e6:.2f} Mbit/s, "
         f"{got / floor:.3f} of the credit; datagrams offered per thread "
         f"{tx.sent}")
    check_eq(len(per_queue), MQ_QUEUES, "parq children's local classes")
    # Each thread alone offers more than twice the credit, and each queue
    # carries a quarter or more: credits per child would let each send
    # the credit, twice the bound in all.
    offered = [n * (PAYLOAD + UDP_OVERHEAD) / (td - ta + 1.0)
               for n in tx.sent]
    check(min(offered) > 2 * credit * per_s, f"a thread offered "
          f"{min(offered) * 8 / 1e6:.1f} Mbit/s: under twice the credit")
    check(min(per_queue) >= 0.25 * got, f"the queues sent {per_queue}: "
          "the traffic did not cross both children")
    check(got <= bound, f"the children sent {got} B together: more than "
          f"(epochs + 2) x {credit} = {bound:.0f}")
    check(got >= 0.5 * floor, f"the children sent {got} B, under half the "
          f"credit of {floor:.0f} B")


def setup(env):
    """B's second address D2 (A knows its MAC)."""
    topo = env.topo
    topo.b.run(["ip", "addr", "add", f"{D2}/24", "dev", topo.dev_b()])
    topo.a.run(["ip", "neigh", "replace", D2, "lladdr", topo.mac_b(), "dev",
                topo.dev_a(), "nud", "permanent"])


def main():
    suite = ktap.Suite("parq_credit")
    suite.case("family resolves and autoloads sch_parq", t_family_autoload)
    suite.case("set/get/dump/delete, IPv4 and IPv6", t_round_trip)
    suite.case("refused requests change nothing", t_refusals)
    suite.case("reads and writes need CAP_NET_ADMIN", t_admin_perm)
    suite.case("tables are per namespace", t_netns)
    suite.case("leases expire and are swept", t_lease)
    suite.case(f"{uapi.PARQ_CREDIT_ENTRIES_MAX} entries, then full",
               t_full, timeout=600)
    suite.case("rmmod with entries in two namespaces", t_rmmod_with_entries)
    suite.case("credit 0 holds one destination, not another; lease ends it",
               t_stop_and_lease, speed="a sender in Python keeps D1's queue "
               "full and the lease's end is timed to 0.5 s")
    suite.case("deleting the entry releases the destination",
               t_delete_releases)
    suite.case("parallel traffic is not held by credits", t_parallel_not_held)
    suite.case("a credit holds a destination to credit per epoch",
               t_credit_rate, speed="a sender in Python offers twice the "
               "credit's rate")
    suite.case("set again every ms with the same epoch, it still holds",
               lambda env: t_credit_rate(env, refresh=True),
               speed="a sender in Python offers twice the credit's rate")
    suite.case("under mq, one credit holds the children together",
               t_credit_across_mq, speed="senders in Python offer more "
               "than the credit's rate")
    suite.case("a waiting local class takes no threshold turn",
               t_no_lost_turns, speed="the parallel class's share of 8 "
               "Mbit/s is measured")
    return lab.run(suite, "cr", setup=setup)


if __name__ == "__main__":
    sys.exit(main())
