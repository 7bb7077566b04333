#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""sch_parq's kernel safety: memory, accounting, permissions and isolation
that no functional test sees (the random races are in parq_stress).

  - lowering `limit` under a backlog frees the packets it evicts: the
    sending socket's write memory drains to 0 (an evicted packet that is
    not freed keeps its socket's memory charged for ever);
  - a sender that spreads local packets over 10^5 distinct
    destinations: every packet is queued (one queue each), all
    leave when the shaper opens, a second round meets the queues the
    first left empty (kept idle, or freed as stale on the way), a
    lowered limit and the delete free the rest, and no slab cache keeps
    the queues (or packets) afterwards;
  - split GSO corrects the parent's backlog when one segment of a packet
    got in, not only two or more: under prio, prio's backlog is 0 once
    parq has drained;
  - a VLAN-tagged local packet with its tag in the data (reorder_hdr off)
    meets its destination's credit: the lookup reads the network header
    behind the tags, not skb->protocol, which is 802.1Q there;
  - under mq, each child admits reservations against its share of the link
    speed, not the whole of it, so that the children together cannot
    admit more than the link; under htb, the whole of it;
  - under parents that peek before they dequeue (tbf over cbs), every
    packet leaves and none stays behind;
  - the parq family needs CAP_NET_ADMIN over the namespace for reads and
    the events group too (the tables tell which hosts talk to which), and
    root in a user namespace that owns its network namespace manages that
    namespace's tables;
  - the tables' entries are charged to the caller's memory cgroup: credit
    entries to whoever sets them, the monitor's sources (added in softirq,
    where there is no caller) to whoever enabled the monitor (skipped on
    5.10, which cannot charge them);
  - a formatted error (admission control) is read back intact while
    another namespace fails requests as fast as it can: each namespace has
    its own ring of texts.
Afterwards the kernel log must hold no warning.
"""
import fcntl
import ipaddress
import mmap
import os
import socket
import struct
import sys
import time

from parqlab import ktap, lab, resv, rtnl, uapi
from parqlab import tc as tclib
from parqlab.genl import ParqGenl
from parqlab.ktap import check, check_eq, diag
from parqlab.tc import tc
from parqlab.traffic import (Iperf3Client, Iperf3Server,
                             send_udp, udp_socket)

SEC = 10**9
MS = 10**6
SIOCOUTQ = 0x5411		# TIOCOUTQ: a UDP socket's unfreed write memory
SO_SNDBUFFORCE = 32
SCRIPTS = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                       "scripts")


def root(env, *spec):
    tc(env.a, "qdisc", "del", "dev", env.dev, "root", check=False)
    tc(env.a, "qdisc", "add", "dev", env.dev, "root", *spec)


def outq(sk):
    return struct.unpack("i", fcntl.ioctl(sk.fileno(), SIOCOUTQ,
                                          b"\0" * 4))[0]


def t_limit_frees(env):
    a, dev, topo = env.a, env.dev, env.topo
    # At 8 bit/s the shaper sends the first packet and holds every other one
    # for hours, however slowly this CPU sends them (at 1 Mbit/s a debug
    # kernel under TCG sends them over seconds, and parq would let most of
    # them go before the limit is lowered).
    root(env, "handle", "1:", "parq", "rate", "8bit", "burst", "0",
         "limit", "2000", "flow-limit", "2000")
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ktap.defer(sk.close)
    sk.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
    sk.setblocking(False)
    sent = 0
    for _ in range(1000):
        try:
            sk.sendto(bytes(1000), (topo.ip_b(), 9))
            sent += 1
        except BlockingIOError:
            break
    q = tclib.parq_qdisc(a, dev)
    diag(f"sent {sent}, parq holds {q['qlen']} packets; "
         f"socket write memory {outq(sk)} bytes")
    check(q["qlen"] > 500, f"parq holds only {q['qlen']} packets")
    tc(a, "qdisc", "change", "dev", dev, "root", "handle", "1:",
       "parq", "limit", "10", "flow-limit", "10")
    q = tclib.parq_qdisc(a, dev)
    check(q["qlen"] <= 10, f"{q['qlen']} packets held after limit 10")
    tc(a, "qdisc", "del", "dev", dev, "root")
    drained = ktap.poll(lambda: outq(sk), lambda n: n == 0, 3.0) == 0
    diag(f"socket write memory after the delete: {outq(sk)} bytes")
    check(drained, f"{outq(sk)} bytes of the socket's packets were "
          "never freed")


MANY_DSTS = 100000
MANY_NET = "10.128.0.0/14"  # routed to B, which drops what is not its own
MANY_BASE = int(ipaddress.IPv4Network(MANY_NET).network_address)


def many_dst(i):
    """The @i-th address of MANY_NET."""
    return socket.inet_ntoa(struct.pack(">I", MANY_BASE + i))


def fill_dsts(env, sk, dsts):
    """One 64-byte packet to each of @dsts behind a shaper that holds them
    (the one packet it lets through goes first, to B itself)."""
    a, dev, topo = env.a, env.dev, env.topo
    tc(a, "qdisc", "change", "dev", dev, "root", "handle", "1:", "parq",
       "rate", "8bit", "burst", "0")
    sk.sendto(bytes(64), (topo.ip_b(), 9))
    ktap.poll(lambda: tclib.parq_qdisc(a, dev)["qlen"], lambda n: n == 0,
              5.0)
    sent = tclib.parq_qdisc(a, dev)["packets"]
    data, blocked = bytes(64), 0
    for d in dsts:
        try:
            sk.sendto(data, (d, 9))
        except BlockingIOError:
            blocked += 1
    q = tclib.parq_qdisc(a, dev)
    # At 1 byte/s the shaper lets one packet go every 92 s: a slow kernel
    # (debug, TCG) sees a few leave during the fill.
    left = q["packets"] - sent
    diag(f"{len(dsts)} destinations: parq holds {q['qlen']} packets "
         f"({left} left meanwhile), local_flows {q['local_flows']}, drops "
         f"{q['drops']} (nomem {q['drop_local_nomem']}), {blocked} sends "
         "blocked")
    check_eq(blocked, 0, "sends that blocked")
    check_eq(q["drops"], 0, "drops")
    check_eq(q["qlen"] + left, len(dsts), "packets queued or sent")
    check_eq(q["local_flows"], q["qlen"], "destinations with packets")
    return sent


def t_many_destinations(env):
    a, dev, topo = env.a, env.dev, env.topo
    a.run(["ip", "route", "replace", MANY_NET, "via", topo.ip_b()])
    dsts = [many_dst(i) for i in range(MANY_DSTS)]
    resv.shrink_slabs()
    before = resv.slab_active()
    root(env, "handle", "1:", "parq", "rate", "8bit", "burst", "0", "limit",
         str(2 * MANY_DSTS), "flow-limit", "10")
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sk.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 1 << 30)
        sk.setblocking(False)
        # The second round finds the queues the first round emptied.
        for rnd in (1, 2):
            sent = fill_dsts(env, sk, dsts)
            tc(a, "qdisc", "change", "dev", dev, "root", "handle", "1:",
               "parq", "rate", "unlimited")
            q = ktap.poll(lambda: tclib.parq_qdisc(a, dev),
                          lambda q: q["qlen"] == 0, 120.0)
            diag(f"round {rnd}: {q['packets'] - sent} packets sent, "
                 f"{q['qlen']} left, local_flows {q['local_flows']}, "
                 f"backlog {q['backlog']}")
            check_eq(q["packets"] - sent, MANY_DSTS, "packets sent")
            check_eq(q["local_flows"], 0, "destinations with packets")
            check_eq(q["backlog"], 0, "backlog")
        fill_dsts(env, sk, dsts)
        tc(a, "qdisc", "change", "dev", dev, "root", "handle", "1:",
           "parq", "limit", "1000", "flow-limit", "10")
        q = tclib.parq_qdisc(a, dev)
        diag(f"limit 1000: {q['qlen']} packets, local_flows "
             f"{q['local_flows']}")
        check_eq(q["qlen"], 1000, "packets held after limit 1000")
        check_eq(q["local_flows"], 1000, "destinations after limit 1000")
        check_eq(q["drop_local_nomem"], 0, "drops for want of memory")
        tc(a, "qdisc", "del", "dev", dev, "root")
        freed = ktap.poll(lambda: outq(sk), lambda n: n == 0, 5.0) == 0
        check(freed, f"{outq(sk)} bytes of the socket's packets were "
              "never freed")
    finally:
        sk.close()
        a.run(["ip", "route", "del", MANY_NET], check=False)
    resv.shrink_slabs()
    grown = resv.grown_caches(before, resv.slab_active(), MANY_DSTS // 4)
    diag(f"slab caches grown by {MANY_DSTS // 4} objects or more after the "
         f"delete: {grown}")
    check_eq(grown, [], "slab caches that kept the queues")


def t_split_gso_backlog(env):
    a, dev, topo = env.a, env.dev, env.topo
    tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio",
       "bands", "2", "priomap", *["0"] * 16)
    # flow-limit 2: most GSO packets find room for one segment or none.
    tc(a, "qdisc", "add", "dev", dev, "parent", "1:1", "handle",
       "10:", "parq", "rate", "20mbit", "flow-limit", "2")
    srv = Iperf3Server(topo.b, topo.ip_b(), 5201)
    try:
        Iperf3Client(a, topo.ip_b(), 5201, 3).result(timeout=30)
    finally:
        srv.stop()
    q = tclib.parq_qdisc(a, dev)
    segs = q.get("xstats", q).get("gso_segments", 0)
    diag(f"parq: {q['packets']} packets sent, {q['drops']} dropped, "
         f"{segs} segments of split GSO packets")
    check(segs > 0, "no GSO packet was split")

    p = ktap.poll(lambda: tclib.root_qdisc(a, dev),
                  lambda p: p["qlen"] == 0 and p["backlog"] == 0, 3.0)
    diag(f"prio after the drain: qlen {p['qlen']}, backlog {p['backlog']}")
    check_eq((p["qlen"], p["backlog"]), (0, 0),
             "prio's qlen and backlog once parq is empty")


VLAN_A, VLAN_B = "10.95.0.1", "10.95.0.2"


def t_vlan_credit(env):
    dev, topo = env.dev, env.topo
    a, b = env.a, topo.b
    # Without VLAN offload the tag goes into the packet's data, and with
    # reorder_hdr off skb->protocol is 802.1Q when the packet meets parq.
    a.run(["ethtool", "-K", dev, "txvlan", "off"])
    a.run(["ip", "link", "add", "link", dev, "name", "va", "type", "vlan",
           "id", "5", "reorder_hdr", "off"])
    b.run(["ip", "link", "add", "link", topo.dev_b(), "name", "vb", "type",
           "vlan", "id", "5"])
    for ns, d, ip in ((a, "va", VLAN_A), (b, "vb", VLAN_B)):
        ns.run(["ip", "addr", "add", ip + "/24", "dev", d])
        ns.run(["ip", "link", "set", d, "up"])
    a.run(["ip", "neigh", "replace", VLAN_B, "lladdr", topo.mac_b(), "dev",
           "va", "nud", "permanent"])
    root(env, "handle", "1:", "parq")
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def undo():
        sk.close()
        a.run(["ip", "link", "del", "va"], check=False)
        a.run(["ethtool", "-K", dev, "txvlan", "on"], check=False)
        b.run(["ip", "link", "del", "vb"], check=False)
        tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    ktap.defer(undo)
    with ParqGenl(a) as g:
        check_eq(g.set(VLAN_B, credit=0, lease=60 * SEC).error, 0,
                 "credit 0 for B's VLAN address")
        for _ in range(20):
            sk.sendto(bytes(200), (VLAN_B, 9))
        time.sleep(0.2)
        e = g.get(VLAN_B)
        q = tclib.parq_qdisc(a, dev)
        diag(f"credit entry: passed {e['passed']}, held {e['held']}; "
             f"parq holds {q['qlen']} packets")
        check(e["held"] > 0, "no tagged packet met the credit")
        check_eq(q["qlen"], 20, "tagged packets held by credit 0")
        check_eq(g.delete().error, 0, "flush")


def t_mq_admission(env):
    a = env.a
    a.run(["ip", "link", "add", "mq0", "numtxqueues", "2", "numrxqueues",
           "2", "type", "veth", "peer", "name", "mq1", "numtxqueues", "2",
           "numrxqueues", "2"])
    ktap.defer(a.run, ["ip", "link", "del", "mq0"], check=False)
    a.run(["ip", "link", "set", "mq0", "up"])
    a.run(["ip", "link", "set", "mq1", "up"])
    tc(a, "qdisc", "add", "dev", "mq0", "root", "handle", "1:", "mq")
    for i in (1, 2):
        tc(a, "qdisc", "add", "dev", "mq0", "parent", f"1:{i}",
           "handle", f"{i}0:", "parq", "reservable", "90")
    # veth says 10 Gbit/s: each of the 2 queues' parq may reserve 90 %
    # of 5 Gbit/s, so 4 Gbit/s fits and 5 Gbit/s does not.
    tc(a, "class", "add", "dev", "mq0", "parent", "10:", "classid",
       "10:16", "parq", "rate", "4gbit")
    r = tc(a, "class", "add", "dev", "mq0", "parent", "20:", "classid",
           "20:16", "parq", "rate", "5gbit", check=False)
    diag(f"5 Gbit/s in the second child: exit {r.returncode}: "
         f"{r.stderr.strip()}")
    check(r.returncode != 0, "a child of mq admitted 5 Gbit/s of a "
          "10 Gbit/s link shared by 2 queues")
    check(any(w in r.stderr for w in ("admission", "reserv", "refused")),
          f"refusal without a clear message: {r.stderr.strip()!r}")
    cls = tclib.classes(a, "mq0")
    check("20:16" not in cls, "the refused class exists")
    # htb has an attach operation too (since 5.13), but one tree sends
    # the whole link: its parq may reserve 90 % of 10 Gbit/s.
    tc(a, "qdisc", "del", "dev", "mq0", "root")
    tc(a, "qdisc", "add", "dev", "mq0", "root", "handle", "1:", "htb",
       "default", "1")
    tc(a, "class", "add", "dev", "mq0", "parent", "1:", "classid", "1:1",
       "htb", "rate", "10gbit")
    tc(a, "qdisc", "add", "dev", "mq0", "parent", "1:1", "handle", "2:",
       "parq", "reservable", "90")
    r = tc(a, "class", "add", "dev", "mq0", "parent", "2:", "classid",
           "2:16", "parq", "rate", "8gbit", check=False)
    check(r.returncode == 0, f"under htb, 8 Gbit/s of a 10 Gbit/s link "
          f"was refused: {r.stderr.strip()!r}")


def t_peek_then_dequeue(env):
    """tbf over cbs over parq, a sparse flow: the parents peek before they
    dequeue (qdisc_peek_dequeued takes a packet ahead).  Every packet
    leaves, none is left behind (qlen 0), and no warning.  (No qdisc of
    6.1 or 6.12 calls a child's dequeue after peeking it other than through
    qdisc_dequeue_peeked(); parq also serves one that would.)"""
    a, dev, topo = env.a, env.dev, env.topo
    tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    ktap.defer(tc, a, "qdisc", "del", "dev", dev, "root", check=False)
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
       "rate", "20mbit", "burst", "3000", "latency", "200ms")
    r = tc(a, "qdisc", "add", "dev", dev, "parent", "1:1", "handle",
           "2:", "cbs", "idleslope", "20000", "sendslope", "-980000",
           "hicredit", "30", "locredit", "-1470", check=False)
    if r.returncode and "kind is unknown" in r.stderr:
        raise ktap.Skip("this kernel has no cbs qdisc "
                        "(CONFIG_NET_SCH_CBS)")
    check(r.returncode == 0, f"tc qdisc add ... cbs: {r.stderr.strip()}")
    tc(a, "qdisc", "add", "dev", dev, "parent", "2:1", "handle", "3:",
       "parq")
    n = 200
    with udp_socket(a) as s:
        send_udp(s, topo.ip_b(), 9, 1000, n, gap=0.001)
    q = ktap.poll(lambda: tclib.parq_qdisc(a, dev),
                  lambda q: q["qlen"] == 0 and q["packets"] >= n, 10.0)
    diag(f"parq: {q['packets']} packets sent, qlen {q['qlen']}, "
         f"drops {q['drops']}")
    check_eq((q["packets"], q["qlen"], q["drops"]), (n, 0, 0),
             "parq (packets, qlen, drops)")


# Run in a child user namespace: prints one word per request.
USERNS = r"""
from parqlab.genl import ParqGenl, GenlError
from parqlab.ktap import Skip
g = ParqGenl()
def word(f):
    try:
        r = f()
        return r.errname if hasattr(r, "errname") and r.error else "OK"
    except GenlError as e:
        return e.res.errname
    except Skip:
        return "NOGROUP"
    except OSError as e:
        import errno
        return errno.errorcode.get(e.errno, str(e.errno))
print(word(lambda: g.set("10.77.0.9", credit=1, lease=10**9)))
print(word(lambda: g.dump()))
print(word(lambda: g.mon_get()))
print(word(lambda: g.subscribe()))
"""


def t_permissions(env):
    """Without the events group (5.10) the three requests are judged and
    the case is skipped for joining the group."""
    a = env.a
    with ParqGenl(a) as g:
        check_eq(g.delete().error, 0, "flush")
        events = "events" in g.groups
    join = [] if events else ["NOGROUP"]
    # Root of a user namespace that does not own A's network namespace.
    p = a.run(["unshare", "--user", "--map-root-user",
               "env", f"PYTHONPATH={SCRIPTS}",
               "/usr/bin/python3", "-c", USERNS], check=False)
    check(p.returncode == 0, f"client in a user namespace: {p.stderr}")
    diag(f"another user namespace's root in A: {p.stdout.split()}")
    check_eq(p.stdout.split(), ["EPERM"] * (4 - len(join)) + join,
             "set, dump, monitor get, join events")
    with ParqGenl(a) as g:
        check_eq(g.dump(), [], "A's table after the refused set")
    # Root of a user namespace that owns a fresh network namespace.
    p = a.run(["unshare", "--user", "--map-root-user", "--net",
               "env", f"PYTHONPATH={SCRIPTS}",
               "/usr/bin/python3", "-c", USERNS], check=False)
    check(p.returncode == 0, f"client in its own namespaces: {p.stderr}")
    diag(f"container root in its own namespace: {p.stdout.split()}")
    check_eq(p.stdout.split(), ["OK"] * (4 - len(join)) + join,
             "set, dump, monitor get, join events")
    if not events:
        raise ktap.Skip("the parq family has no events group on this kernel "
                        "(no GENL_MCAST_CAP_NET_ADMIN): joining it is not "
                        "checked")


CGROOT = "/sys/fs/cgroup"
CG = CGROOT + "/parq-saf"


def slab(cg):
    """The memory cgroup's unreclaimable slab, bytes, after the periodic
    statistics flush (every 2 s) has caught up."""
    time.sleep(2.5)
    with open(cg + "/memory.stat") as f:
        for line in f:
            k, v = line.split()
            if k == "slab_unreclaimable":
                return int(v)
    raise AssertionError("no slab_unreclaimable in memory.stat")


def flushed_slab(cg):
    """slab(@cg) with the memory cgroup's per-CPU counts flushed first:
    since 6.8 a read of memory.stat flushes them only once enough pages
    have changed (MEMCG_CHARGE_BATCH per CPU), else at the periodic flush,
    which waits for the same.  So 8 MiB are charged to @cg and freed."""
    with InCgroup(cg):
        m = mmap.mmap(-1, 8 << 20)
        for off in range(0, len(m), mmap.PAGESIZE):
            m[off] = 1
        m.close()
    return slab(cg)


class InCgroup:
    """This process inside @cg for the with block."""

    def __init__(self, cg):
        self.cg = cg

    def __enter__(self):
        with open(self.cg + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    def __exit__(self, *exc):
        with open(CGROOT + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        return False


def spoof(ns, dst, sources):
    """One UDP packet to @dst from each of @sources (raw IPv4 from @ns)."""
    with ns.socket(socket.AF_INET, socket.SOCK_RAW,
                   socket.IPPROTO_RAW) as sk:
        d = socket.inet_aton(dst)
        for src in sources:
            udp = struct.pack("!HHHH", 9, 9, 8, 0)
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0,
                             socket.inet_aton(src), d)
            sk.sendto(ip + udp, (dst, 0))


CG_CREDITS = 16384
CG_SOURCES = 8000


def memcg_setup():
    with open(CGROOT + "/cgroup.controllers") as f:
        check("memory" in f.read().split(), "the memory controller exists")
    with open(CGROOT + "/cgroup.subtree_control", "w") as f:
        f.write("+memory")
    if not os.path.isdir(CG):
        os.mkdir(CG)


def t_memcg(env):
    a = env.a
    memcg_setup()
    with ParqGenl(a) as g:
        check_eq(g.delete().error, 0, "flush")
        check_eq(g.mon_set(mon_enabled=0).error, 0, "monitor off")
        before = slab(CG)
        with InCgroup(CG):
            for i in range(CG_CREDITS):
                res = g.set(f"10.{80 + i // 65536}.{i // 256 % 256}.{i % 256}",
                            credit=1000, lease=60 * SEC)
                if res.error:
                    check_eq(res.error, 0, f"credit {i}")
        after = slab(CG)
        diag(f"{CG_CREDITS} credit entries: the cgroup's slab grew by "
             f"{after - before} bytes")
        check(after - before >= CG_CREDITS * 64,
              f"credit entries charged: {after - before} bytes for "
              f"{CG_CREDITS} entries")
        check_eq(g.delete().error, 0, "flush")


def t_memcg_sources(env):
    a, topo = env.a, env.topo
    if ktap.kernel_older(6, 1):
        raise ktap.Skip("this kernel does not export int_active_memcg to "
                        "modules: the monitor's sources, added in softirq, "
                        "are not charged (Documentation/kernels.md)")
    memcg_setup()
    with ParqGenl(a) as g:
        check_eq(g.mon_set(mon_enabled=0).error, 0, "monitor off")
        with InCgroup(CG):
            check_eq(g.mon_set(mon_enabled=1,
                               mon_size=2 * CG_SOURCES).error, 0,
                     "monitor on, from inside the cgroup")
        before = slab(CG)
        spoof(topo.b, topo.ip_a(),
              (f"10.97.{i // 250}.{i % 250 + 1}" for i in range(CG_SOURCES)))
        n = len(g.peers())
        after = slab(CG)
        diag(f"{n} monitored sources: the cgroup's slab grew by "
             f"{after - before} bytes")
        check(n >= CG_SOURCES * 9 // 10, f"{n} of {CG_SOURCES} sources seen")
        check(after - before >= n * 64,
              f"monitor sources charged: {after - before} bytes for {n}")
        check_eq(g.mon_set(mon_enabled=0).error, 0, "monitor off")


def memcg_local_setup(env):
    """For the local queues' charge: skipped where it is not made, the
    memory controller on, MANY_NET routed to B."""
    if ktap.kernel_older(6, 1):
        raise ktap.Skip("this kernel does not export int_active_memcg to "
                        "modules: queues made in softirq are not charged "
                        "(Documentation/kernels.md)")
    memcg_setup()
    env.a.run(["ip", "route", "replace", MANY_NET, "via", env.topo.ip_b()])


CG_LOCAL = 8000
CG_OVER = 30000		# 3.8 MB of queues, against 1 MiB of room


def t_memcg_local(env):
    """The local destinations' queues, made in softirq as packets come, are
    charged to the memory cgroup of whoever made the qdisc: a user who owns
    a namespace cannot hold millions of them outside its limit."""
    a, dev = env.a, env.dev
    memcg_local_setup(env)
    dsts = [many_dst(i) for i in range(CG_LOCAL)]
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def undo():
        sk.close()
        a.run(["ip", "route", "del", MANY_NET], check=False)
    ktap.defer(undo)
    with InCgroup(CG):
        root(env, "handle", "1:", "parq", "rate", "8bit", "burst", "0",
             "limit", str(CG_LOCAL + CG_OVER))
    sk.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 1 << 30)
    sk.setblocking(False)
    before = slab(CG)
    fill_dsts(env, sk, dsts)
    after = slab(CG)
    q = tclib.parq_qdisc(a, dev)
    diag(f"{q['local_flows']} local destinations: the qdisc maker's "
         f"cgroup's slab grew by {after - before} bytes")
    check(q["local_flows"] >= CG_LOCAL * 9 // 10,
          f"{q['local_flows']} of {CG_LOCAL} destinations queued")
    check(after - before >= q["local_flows"] * 64,
          f"local queues charged: {after - before} bytes for "
          f"{q['local_flows']}")
    # The limit holds: past memory.max a new queue is refused (a drop
    # for want of memory), not charged beyond it.
    with open(CG + "/memory.current") as f:
        cur = int(f.read())
    with open(CG + "/memory.max", "w") as f:
        f.write(str(cur + (1 << 20)))
    try:
        for i in range(CG_LOCAL, CG_LOCAL + CG_OVER):
            sk.sendto(bytes(64), (many_dst(i), 9))
        q = tclib.parq_qdisc(a, dev)
        with open(CG + "/memory.current") as f:
            now = int(f.read())
    finally:
        with open(CG + "/memory.max", "w") as f:
            f.write("max")
    diag(f"{CG_OVER} more destinations with memory.max 1 MiB above: "
         f"local_flows {q['local_flows']}, drop_local_nomem "
         f"{q['drop_local_nomem']}, memory.current {now - cur} bytes "
         "above")
    check(q["drop_local_nomem"] > 0,
          f"no queue refused past memory.max ({q['local_flows']} "
          "destinations queued)")
    check(now - cur <= 1 << 20, f"charged {now - cur} bytes past "
          "memory.max")
    tc(a, "qdisc", "del", "dev", dev, "root")


CG_IDLE_LIMIT = 1024
CG_IDLE = CG_IDLE_LIMIT // 2		# kept idle, all of them
CG_IDLE_MORE = 4 * CG_IDLE_LIMIT  # within the age, so the limit frees
CG_IDLE_AGE = 3.0			# PARQ_LOCAL_IDLE_AGE
CG_IDLE_RESIZED = 64 * CG_IDLE_LIMIT  # limit / 8 trees: 8192, not 1024


def t_memcg_idle(env):
    """A local queue that empties is kept, idle, for its destination's
    next packet, but no more of them than the limit, and a change of the
    limit that resizes the table frees them all: measured by what they
    cost the qdisc maker's memory cgroup.  Without a shaper every packet
    leaves at once, and its destination's queue goes idle; the second
    round sends to four times the limit in new destinations, well within
    the age after which a lookup frees a stale queue (3 s), so that the
    limit is what frees them."""
    a, dev = env.a, env.dev
    memcg_local_setup(env)
    first = [many_dst(i) for i in range(CG_IDLE)]
    second = [many_dst(CG_IDLE + i) for i in range(CG_IDLE_MORE)]
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send_each(dsts):
        t0 = time.monotonic()
        for d in dsts:
            sk.sendto(bytes(64), (d, 9))
        took = time.monotonic() - t0
        q = tclib.parq_qdisc(a, dev)
        check_eq(q["local_flows"], 0, "destinations with packets")
        check_eq(q["drops"], 0, "drops")
        return took

    def undo():
        sk.close()
        a.run(["ip", "route", "del", MANY_NET], check=False)
    ktap.defer(undo)
    with InCgroup(CG):
        root(env, "handle", "1:", "parq", "limit", str(CG_IDLE_LIMIT),
             "flow-limit", "10")
    sk.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 1 << 30)
    # B's address resolved first: packets that wait for it wait in
    # the neighbour table, not in parq, and past its queue are lost.
    a.run(["ping", "-c", "1", "-W", "5", env.topo.ip_b()], check=False)
    s0 = flushed_slab(CG)
    send_each(first)
    s1 = flushed_slab(CG)
    each = (s1 - s0) / CG_IDLE
    diag(f"{CG_IDLE} destinations sent to, their queues emptied: "
         f"{s1 - s0} bytes still charged ({each:.0f} a queue)")
    check(s1 - s0 >= CG_IDLE * 64,
          f"emptied queues kept idle: {s1 - s0} bytes for {CG_IDLE}")
    took = send_each(second)
    s2 = flushed_slab(CG)
    bound = (CG_IDLE_LIMIT + 1) * each * 1.25
    diag(f"{CG_IDLE_MORE} more in {took:.2f} s: {s2 - s0} bytes "
         f"charged, at most {bound:.0f} for {CG_IDLE_LIMIT} idle queues")
    # Sends that outlast the idle age let ageing free the first queues
    # before the last are made: the bound is then not judged.
    judged = took <= CG_IDLE_AGE * 0.8
    if judged:
        check(s2 - s0 <= bound, f"{s2 - s0} bytes of idle queues for "
              f"{CG_IDLE + CG_IDLE_MORE} destinations with limit "
              f"{CG_IDLE_LIMIT}")
    tc(a, "qdisc", "change", "dev", dev, "root", "handle", "1:", "parq",
       "limit", str(CG_IDLE_RESIZED))
    # A quarter: the memory cgroup's per-CPU batches (a page each) are
    # small against it.
    s3 = flushed_slab(CG)
    diag(f"limit {CG_IDLE_RESIZED}: {s3 - s0} bytes charged")
    check(s3 - s0 <= (s2 - s0) / 4,
          f"{s3 - s0} bytes still charged after the table was resized, "
          f"of {s2 - s0}")
    tc(a, "qdisc", "del", "dev", dev, "root")
    if not judged:
        raise ktap.Skip(f"the bound: {CG_IDLE_MORE} sends took "
                        f"{took:.1f} s, and the first queues aged out "
                        "before the last were made (the rest passed)")


ERR_HAMMER = r"""
import sys
from parqlab import rtnl, uapi
nl = rtnl.Rtnl()
ifindex = nl.ifindex(sys.argv[1])
body = (rtnl.tcmsg(ifindex, 0x10000 | int(sys.argv[2]), 0x10000) +
        rtnl.nla_str(rtnl.TCA_KIND, "parq") +
        rtnl.nest(rtnl.TCA_OPTIONS,
                  rtnl.nla_u64(uapi.TCA_PARQ_CLASS_RATE, 10**9)))
while True:
    nl.request(rtnl.RTM_NEWTCLASS, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, body)
"""
ERR_SECS = 8


def t_err_ring(env):
    """A's refusals carry A's numbers while B, in two processes, fails
    requests as fast as it can: a text kept anywhere but in the request's
    own acknowledgement could be B's.  (Before Linux 6.2 the text is
    plain, the same for both.)"""
    a, dev, topo = env.a, env.dev, env.topo
    for ns, d, rate in ((a, dev, "100mbit"),
                        (topo.b, topo.dev_b(), "300mbit")):
        tc(ns, "qdisc", "del", "dev", d, "root", check=False)
        tc(ns, "qdisc", "add", "dev", d, "root", "handle", "1:", "parq",
           "linkrate", rate)
    hammers = [topo.b.popen(["env", f"PYTHONPATH={SCRIPTS}", "python3", "-c",
                             ERR_HAMMER, topo.dev_b(), str(0x30 + i)])
               for i in range(2)]
    want = resv.refusal(95000000, 90000000, 90000000)
    tries = bad = 0
    try:
        time.sleep(1)
        with rtnl.Rtnl(a) as nl:
            ifindex = nl.ifindex(dev)
            body = (rtnl.tcmsg(ifindex, 0x10030, 0x10000) +
                    rtnl.nla_str(rtnl.TCA_KIND, "parq") +
                    rtnl.nest(rtnl.TCA_OPTIONS,
                              rtnl.nla_u64(uapi.TCA_PARQ_CLASS_RATE,
                                           95 * 10**6 // 8)))
            end = time.monotonic() + ERR_SECS
            while time.monotonic() < end:
                res = nl.request(rtnl.RTM_NEWTCLASS,
                                 rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, body)
                tries += 1
                if want not in (res.msg or ""):
                    bad += 1
                    if bad <= 3:
                        diag(f"A's error {res.error}: {res.msg!r}")
    finally:
        for h in hammers:
            h.kill()
            h.wait(10)
    for h in hammers:
        check("Traceback" not in h.stderr.read(),
              "B's requests ran until killed")
    diag(f"{tries} refusals in A, {bad} garbled or foreign")
    check(tries >= 100, f"{tries} refusals in A")
    check_eq(bad, 0, f"garbled or foreign texts in {tries} refusals")


def setup(env):
    topo = env.topo
    for ns in (topo.a, topo.b):
        ns.run(["ethtool", "-K", topo.dev_a() if ns is topo.a else
                topo.dev_b(), "tso", "on", "gso", "on"], check=False)


def main():
    suite = ktap.Suite("parq_safety")
    suite.case("lowering limit frees the packets it evicts", t_limit_frees)
    suite.case("10^5 local destinations queue, drain and free",
               t_many_destinations, timeout=600)
    suite.case("split GSO keeps the parent's backlog exact",
               t_split_gso_backlog)
    suite.case("VLAN-tagged local traffic meets its credit", t_vlan_credit)
    suite.case("mq: children share the link speed", t_mq_admission)
    suite.case("parents that peek (tbf over cbs): nothing stays behind",
               t_peek_then_dequeue)
    suite.case("the parq family needs CAP_NET_ADMIN over the namespace",
               t_permissions)
    suite.case("credit entries are charged to the caller's memory cgroup",
               t_memcg)
    suite.case("the monitor's sources are charged to the memory cgroup of "
               "whoever enabled it", t_memcg_sources)
    suite.case("local destinations' queues are charged to the memory cgroup "
               "of whoever made the qdisc, and its limit holds",
               t_memcg_local)
    suite.case("idle local queues are bounded by the limit and freed on "
               "resize", t_memcg_idle)
    suite.case("error texts are per request", t_err_ring)
    return lab.run(suite, "saf",
                   tools=("iperf3", "unshare", "ethtool", "ping"),
                   setup=setup)


if __name__ == "__main__":
    sys.exit(main())
