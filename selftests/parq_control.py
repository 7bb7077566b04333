#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq's control queue: network control goes ahead of the host's backlog.

Namespace A sends to namespace B through parq, the root qdisc of A's veth,
shaped to 80 kbit/s (10 000 bytes/s) with dscp-mark on.  A backlog of
bulk datagrams takes seconds to leave; then:
  - a datagram from a socket of SO_PRIORITY 7 (TC_PRIO_CONTROL, which
    needs CAP_NET_ADMIN or CAP_NET_RAW) and DSCP CS6, as parqd's credit
    messages go,
    reaches B while nearly all of the backlog is still queued, with its
    CS6 kept, counted in control_sent (tc -s -j and the text output);
  - a datagram from a socket of priority 6 and DSCP CS6 (IP_TOS needs no
    privilege) is not control: it waits behind the backlog, reaches B
    only after it, and leaves with CS0 (dscp-mark re-marks a local packet
    of a network control DSCP).
Nothing else crosses that link (IPv6 off, permanent neighbour entries).
"""
import select
import socket
import sys
import time

from parqlab import ktap, lab
from parqlab import tc as tclib
from parqlab.ktap import check, check_eq, diag
from parqlab.tc import tc
from parqlab.traffic import send_udp, udp_socket

RATE = "80kbit"  # 10 000 bytes/s: a 1000-byte datagram every ~0.1 s
BULK = 30  # datagrams of backlog: about 3 s at RATE
PAYLOAD = 1000
TOS_CS6 = 48 << 2
PRIO_CONTROL = 7  # TC_PRIO_CONTROL
PRIO_INTERACTIVE = 6  # the highest an unprivileged socket may set
PORT_BULK, PORT_PROBE = 9, 5001


def fresh(env, *args):
    """A new parq root qdisc (all counters zero) with @args."""
    a, dev = env.a, env.dev
    tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq", *args)
    q = tclib.parq_qdisc(a, dev)
    check_eq((q["packets"], q["qlen"], q.get("control_sent")), (0, 0, 0),
             "counters of the new qdisc")


def receiver(env, port):
    """A UDP socket in B on @port that reports each datagram's TOS."""
    s = env.topo.b.socket()
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind((env.topo.ip_b(), port))
    return s


def recv_tos(s, timeout):
    """The TOS byte of the next datagram on @s, or None if none came
    within @timeout seconds."""
    r, _, _ = select.select([s], [], [], timeout)
    if not r:
        return None
    _, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(4))
    for level, kind, data in anc:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            return data[0]
    raise AssertionError("datagram without its TOS")


def backlog(env):
    """Queue BULK local datagrams behind the shaper; returns the qdisc."""
    with udp_socket(env.a) as s:
        send_udp(s, env.topo.ip_b(), PORT_BULK, PAYLOAD, BULK)
    q = tclib.parq_qdisc(env.a, env.dev)
    diag(f"backlog: {q['qlen']} packets queued of {BULK}")
    check(q["qlen"] >= BULK - 5, f"backlog of {q['qlen']} packets, "
          f"want at least {BULK - 5} (is the shaper at {RATE}?)")
    return q


def t_control_first(env):
    a, dev = env.a, env.dev
    fresh(env, "rate", RATE, "dscp-mark", "cs5")
    with receiver(env, PORT_PROBE) as r:
        backlog(env)
        t0 = time.monotonic()
        with udp_socket(a, tos=TOS_CS6, priority=PRIO_CONTROL) as s:
            send_udp(s, env.topo.ip_b(), PORT_PROBE, 100, 1)
        tos = recv_tos(r, 5.0 * ktap.slowdown())
        took = time.monotonic() - t0
        q = tclib.parq_qdisc(a, dev)
    diag(f"control datagram received after {took * 1000:.0f} ms, "
         f"{q['qlen']} bulk packets still queued")
    check(tos is not None, "the control datagram never reached B")
    check_eq(tos, TOS_CS6, "its TOS (CS6 kept)")
    # The backlog drains at ~10 packets/s: had it waited behind it, at
    # most a few would be left.
    check(q["qlen"] >= BULK - 10,
          f"{q['qlen']} bulk packets queued when it arrived: it waited "
          "behind the backlog")
    check_eq((q["control_sent"], q["drop_control"]), (1, 0),
             "xstats (control_sent, drop_control)")
    text = tc(a, "-s", "qdisc", "show", "dev", dev).stdout
    check("control_sent 1 drop_control 0" in text,
          f"tc -s prints the control counters: {text}")


def t_unprivileged_not_first(env):
    a, dev = env.a, env.dev
    fresh(env, "rate", RATE, "dscp-mark", "cs5")
    with receiver(env, PORT_PROBE) as r:
        backlog(env)
        with udp_socket(a, tos=TOS_CS6, priority=PRIO_INTERACTIVE) as s:
            send_udp(s, env.topo.ip_b(), PORT_PROBE, 100, 1)
        # Behind about 3 s of backlog: not there after 1 s, whatever the
        # CPU's speed (a slower one only delays it more).
        tos = recv_tos(r, 1.0)
        check(tos is None, "a datagram of priority 6 went ahead of the "
              "backlog")
        q = ktap.poll(lambda: tclib.parq_qdisc(a, dev),
                      lambda q: q["qlen"] == 0, 10.0, 0.1)
        check_eq(q["qlen"], 0, "queued once the backlog has drained")
        tos = recv_tos(r, 2.0)
    check(tos is not None, "the datagram of priority 6 never reached B")
    check_eq(tos, 0, "its TOS (CS6 re-marked CS0 by dscp-mark)")
    check_eq((q["control_sent"], q["drop_control"]), (0, 0),
             "xstats (control_sent, drop_control)")
    check_eq(q["packets"], BULK + 1, "packets sent")


def del_root(env):
    tc(env.a, "qdisc", "del", "dev", env.dev, "root", check=False)


def main():
    suite = ktap.Suite("parq_control")
    suite.case("priority 7 leaves before the backlog, CS6 kept",
               t_control_first)
    suite.case("priority 6 with CS6 waits behind it, re-marked CS0",
               t_unprivileged_not_first)
    return lab.run(suite, "ctl", before_kmsg=del_root)


if __name__ == "__main__":
    sys.exit(main())
