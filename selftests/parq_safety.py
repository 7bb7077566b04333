#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""sch_parq's kernel defects of issue 16, each with a case that failed
before its fix (the random races are in parq_stress):

  - lowering `limit` under a backlog frees the packets it evicts: the
    sending socket's write memory drains to 0 (they leaked: rtnl_kfree_skbs
    with no tail frees nothing);
  - split GSO corrects the parent's backlog when one segment of a packet
    got in, not only two or more: under prio, prio's backlog is 0 once
    parq has drained;
  - a VLAN-tagged local packet with its tag in the data (reorder_hdr off)
    meets its destination's credit (the lookup read skb->protocol, 802.1Q);
  - under mq, each child admits reservations against its share of the link
    speed, not the whole of it;
  - the parq family needs CAP_NET_ADMIN over the namespace for reads and
    the events group too, and root in a user namespace that owns its
    network namespace manages that namespace's tables.
Afterwards the kernel log must hold no warning.
"""
import fcntl
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "scripts"))
from parqlab import ktap, lab  # noqa: E402
from parqlab import tc as tclib  # noqa: E402
from parqlab.genl import ParqGenl  # noqa: E402
from parqlab.ktap import check, check_eq, diag  # noqa: E402
from parqlab.tc import tc  # noqa: E402
from parqlab.traffic import Iperf3Client, Iperf3Server  # noqa: E402

SEC = 10**9
MS = 10**6
SIOCOUTQ = 0x5411		# TIOCOUTQ: a UDP socket's unfreed write memory
SO_SNDBUFFORCE = 32
SCRIPTS = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                       "scripts")
topo = None
kwatch = None


def dev():
    return topo.dev_a()


def root(*spec):
    tc(topo.a, "qdisc", "del", "dev", dev(), "root", check=False)
    tc(topo.a, "qdisc", "add", "dev", dev(), "root", *spec)


def outq(sk):
    return struct.unpack("i", fcntl.ioctl(sk.fileno(), SIOCOUTQ,
                                          b"\0" * 4))[0]


def wait_for(cond, secs):
    deadline = time.monotonic() + secs
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.05)
    return cond()


def t_limit_frees():
    root("handle", "1:", "parq", "rate", "1mbit", "limit", "2000",
         "flow-limit", "2000")
    sk = topo.a.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sk.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
        sk.setblocking(False)
        sent = 0
        for _ in range(1000):
            try:
                sk.sendto(bytes(1000), (topo.ip_b(), 9))
                sent += 1
            except BlockingIOError:
                break
        q = tclib.parq_qdisc(topo.a, dev())
        diag(f"sent {sent}, parq holds {q['qlen']} packets; "
             f"socket write memory {outq(sk)} bytes")
        check(q["qlen"] > 500, f"parq holds only {q['qlen']} packets")
        tc(topo.a, "qdisc", "change", "dev", dev(), "root", "handle", "1:",
           "parq", "limit", "10", "flow-limit", "10")
        q = tclib.parq_qdisc(topo.a, dev())
        check(q["qlen"] <= 10, f"{q['qlen']} packets held after limit 10")
        tc(topo.a, "qdisc", "del", "dev", dev(), "root")
        drained = wait_for(lambda: outq(sk) == 0, 3.0)
        diag(f"socket write memory after the delete: {outq(sk)} bytes")
        check(drained, f"{outq(sk)} bytes of the socket's packets were "
              "never freed")
    finally:
        sk.close()


def t_split_gso_backlog():
    tc(topo.a, "qdisc", "del", "dev", dev(), "root", check=False)
    tc(topo.a, "qdisc", "add", "dev", dev(), "root", "handle", "1:", "prio",
       "bands", "2", "priomap", *["0"] * 16)
    # flow-limit 2: most GSO packets find room for one segment or none.
    tc(topo.a, "qdisc", "add", "dev", dev(), "parent", "1:1", "handle",
       "10:", "parq", "rate", "20mbit", "flow-limit", "2")
    srv = Iperf3Server(topo.b, topo.ip_b(), 5201)
    try:
        Iperf3Client(topo.a, topo.ip_b(), 5201, 3).result(timeout=30)
    finally:
        srv.stop()
    q = tclib.parq_qdisc(topo.a, dev())
    segs = q.get("xstats", q).get("gso_segments", 0)
    diag(f"parq: {q['packets']} packets sent, {q['drops']} dropped, "
         f"{segs} segments of split GSO packets")
    check(segs > 0, "no GSO packet was split")

    def settled():
        p = tclib.root_qdisc(topo.a, dev())
        return p["qlen"] == 0 and p["backlog"] == 0
    wait_for(settled, 3.0)
    p = tclib.root_qdisc(topo.a, dev())
    diag(f"prio after the drain: qlen {p['qlen']}, backlog {p['backlog']}")
    check_eq((p["qlen"], p["backlog"]), (0, 0),
             "prio's qlen and backlog once parq is empty")


VLAN_A, VLAN_B = "10.95.0.1", "10.95.0.2"


def t_vlan_credit():
    a, b = topo.a, topo.b
    # Without VLAN offload the tag goes into the packet's data, and with
    # reorder_hdr off skb->protocol is 802.1Q when the packet meets parq.
    a.run(["ethtool", "-K", dev(), "txvlan", "off"])
    a.run(["ip", "link", "add", "link", dev(), "name", "va", "type", "vlan",
           "id", "5", "reorder_hdr", "off"])
    b.run(["ip", "link", "add", "link", topo.dev_b(), "name", "vb", "type",
           "vlan", "id", "5"])
    for ns, d, ip in ((a, "va", VLAN_A), (b, "vb", VLAN_B)):
        ns.run(["ip", "addr", "add", ip + "/24", "dev", d])
        ns.run(["ip", "link", "set", d, "up"])
    a.run(["ip", "neigh", "replace", VLAN_B, "lladdr", topo.mac_b(), "dev",
           "va", "nud", "permanent"])
    root("handle", "1:", "parq")
    sk = a.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with ParqGenl(a) as g:
            check_eq(g.set(VLAN_B, credit=0, lease_ns=60 * SEC).error, 0,
                     "credit 0 for B's VLAN address")
            for _ in range(20):
                sk.sendto(bytes(200), (VLAN_B, 9))
            time.sleep(0.2)
            e = g.get(VLAN_B)
            q = tclib.parq_qdisc(a, dev())
            diag(f"credit entry: passed {e['passed']}, held {e['held']}; "
                 f"parq holds {q['qlen']} packets")
            check(e["held"] > 0, "no tagged packet met the credit")
            check_eq(q["qlen"], 20, "tagged packets held by credit 0")
            check_eq(g.delete().error, 0, "flush")
    finally:
        sk.close()
        a.run(["ip", "link", "del", "va"], check=False)
        a.run(["ethtool", "-K", dev(), "txvlan", "on"], check=False)
        b.run(["ip", "link", "del", "vb"], check=False)
        tc(a, "qdisc", "del", "dev", dev(), "root", check=False)


def t_mq_admission():
    a = topo.a
    a.run(["ip", "link", "add", "mq0", "numtxqueues", "2", "numrxqueues",
           "2", "type", "veth", "peer", "name", "mq1", "numtxqueues", "2",
           "numrxqueues", "2"])
    try:
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
        check("admission" in r.stderr or "reserv" in r.stderr,
              f"refusal without a clear message: {r.stderr.strip()!r}")
        cls = tclib.classes(a, "mq0")
        check("20:16" not in cls, "the refused class exists")
    finally:
        a.run(["ip", "link", "del", "mq0"], check=False)


# Run in a child user namespace: prints one word per request.
USERNS = r"""
import sys
sys.path.insert(0, sys.argv[1])
from parqlab.genl import ParqGenl, GenlError
g = ParqGenl()
def word(f):
    try:
        r = f()
        return r.errname if hasattr(r, "errname") and r.error else "OK"
    except GenlError as e:
        return e.res.errname
    except OSError as e:
        import errno
        return errno.errorcode.get(e.errno, str(e.errno))
print(word(lambda: g.set("10.77.0.9", credit=1, lease_ns=10**9)))
print(word(lambda: g.dump()))
print(word(lambda: g.mon_get()))
print(word(lambda: g.subscribe()))
"""


def t_permissions():
    with ParqGenl(topo.a) as g:
        check_eq(g.delete().error, 0, "flush")
    # Root of a user namespace that does not own A's network namespace.
    p = topo.a.run(["unshare", "--user", "--map-root-user",
                    "/usr/bin/python3", "-c", USERNS, SCRIPTS], check=False)
    check(p.returncode == 0, f"client in a user namespace: {p.stderr}")
    diag(f"another user namespace's root in A: {p.stdout.split()}")
    check_eq(p.stdout.split(), ["EPERM"] * 4,
             "set, dump, monitor get, join events")
    with ParqGenl(topo.a) as g:
        check_eq(g.dump(), [], "A's table after the refused set")
    # Root of a user namespace that owns a fresh network namespace.
    p = topo.a.run(["unshare", "--user", "--map-root-user", "--net",
                    "/usr/bin/python3", "-c", USERNS, SCRIPTS], check=False)
    check(p.returncode == 0, f"client in its own namespaces: {p.stderr}")
    diag(f"container root in its own namespace: {p.stdout.split()}")
    check_eq(p.stdout.split(), ["OK"] * 4,
             "set, dump, monitor get, join events")


def t_kmsg():
    kwatch.assert_clean()


def setup(t, k):
    global topo, kwatch
    topo, kwatch = t, k
    for ns in (topo.a, topo.b):
        ns.run(["ethtool", "-K", topo.dev_a() if ns is topo.a else
                topo.dev_b(), "tso", "on", "gso", "on"], check=False)


def main():
    suite = ktap.Suite("parq_safety")
    suite.case("lowering limit frees the packets it evicts", t_limit_frees)
    suite.case("split GSO keeps the parent's backlog exact",
               t_split_gso_backlog)
    suite.case("VLAN-tagged local traffic meets its credit", t_vlan_credit)
    suite.case("mq: children share the link speed", t_mq_admission)
    suite.case("the parq family needs CAP_NET_ADMIN over the namespace",
               t_permissions)
    suite.case("kernel log clean", t_kmsg)
    return lab.run(suite, "saf", tools=("iperf3", "unshare", "ethtool"),
                   setup=setup)


if __name__ == "__main__":
    sys.exit(main())
