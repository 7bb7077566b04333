#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq receive monitor: what arrives at a host, per source, and reports of
parallel traffic starting and stopping: the kernel's part of the
receiving side, which parqd's receiving role reads.

Namespace A is the receiving host with the monitor on; B sends to it from
its address B1 (10.77.0.2), a second address B2 (10.77.0.3), over IPv6
(fd00:77::2 to fd00:77::1), and from spoofed sources through a raw socket.
  - defaults, and refused configurations (policy ranges, CAP_NET_ADMIN)
    that change nothing;
  - exact counts per source and class: packets and IP bytes, parallel by
    DSCP (EF and CS5 by default), IPv4 and IPv6; a new DSCP set re-sorts;
  - the table is bounded: 100 spoofed sources into a table of 16 fill it,
    and the other 84 find no source idle for 2 s to replace: nothing is
    evicted and their packets count as uncounted; 2 s later, 2 new sources
    replace the 2 seen longest ago;
  - one "started" report when a parallel stream begins and one "stopped"
    report a hold after it ends, not one per packet;
  - with min-bytes, a trickle of parallel packets below it per hold
    neither starts parallel traffic nor keeps a burst's going (summed in
    mon-below instead); with min-bytes 0 the same trickle starts it;
  - the sending host's qdisc with dscp-mark EF: what it classifies
    parallel (by SO_PRIORITY, over IPv4 and IPv6) the monitor counts as
    parallel, what it classifies local (EF marked) as local; ECN bits
    survive the re-marking (the datagram's TOS read at A);
  - a peer set (what parqd passes): only its sources are counted, others'
    packets are summed as foreign, start no report and take no place in
    the table, whatever their DSCP; setting it drops the sources outside
    it; duplicates count once; a malformed or oversized set is refused
    and changes nothing; an empty set counts every source again;
  - parqctl monitor (--json and text) says what the kernel says;
  - disabling forgets everything and counts nothing more; another
    namespace's monitor is untouched; rmmod with the monitor on; a clean
    kernel log.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

from parqlab import ktap, lab, module, uapi
from parqlab.genl import NLA_F_NESTED, NLM_F_DUMP, ParqGenl, addr_attr
from parqlab.ktap import check, check_eq, diag
from parqlab.rtnl import nla, nla_u32, nla_u64
from parqlab.tc import tc
from parqlab.traffic import TOS_EF

MS = 1000000
PARQCTL = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                       os.environ.get("PARQ_USERSPACE_BUILD",
                                      "build/userspace"), "parqd", "parqctl")
A1, B1, B2 = "10.77.0.1", "10.77.0.2", "10.77.0.3"
A6, B6 = "fd00:77::1", "fd00:77::2"
PORT = 7001
PAYLOAD = 100
TOS_AF11 = 10 << 2
TOS_CS1 = 8 << 2


def genl(env, ns=None):
    return ParqGenl(ns if ns is not None else env.a)


def ok(res, what):
    check(res.error == 0, f"{what}: {res}")


def send(env, src, n, tos=0, dst=A1, family=socket.AF_INET, prio=None,
         port=PORT):
    """@n datagrams of PAYLOAD bytes from B's address @src to A (with
    SO_PRIORITY @prio if given: after IP_TOS, which sets the priority
    too)."""
    with env.topo.b.socket(family, socket.SOCK_DGRAM) as sk:
        if family == socket.AF_INET:
            sk.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        else:
            sk.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, tos)
        if prio is not None:
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, prio)
        sk.bind((src, 0))
        for _ in range(n):
            sk.sendto(bytes(PAYLOAD), (dst, port))


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def send_spoofed(env, sources, tos=0):
    """One UDP datagram to A from each of @sources (IPv4, raw socket)."""
    with env.topo.b.socket(socket.AF_INET, socket.SOCK_RAW,
                           socket.IPPROTO_RAW) as sk:
        for src in sources:
            udp = struct.pack("!HHHH", 40000, PORT, 8 + PAYLOAD, 0) + \
                bytes(PAYLOAD)
            hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 0,
                              0, 64, socket.IPPROTO_UDP, 0,
                              socket.inet_aton(src), socket.inet_aton(A1))
            hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
            sk.sendto(hdr + udp, (A1, 0))


def settle():
    time.sleep(0.3)


def t_defaults(env):
    with genl(env) as g:
        m = g.mon_get()
    check_eq((m["mon_enabled"], m["mon_size"], m["mon_dscp"], m["mon_hold"],
              m["mon_sources"], m["mon_active"], m["mon_report_local"],
              m["mon_min_bytes"]),
             (0, uapi.PARQ_MON_SIZE_DEFAULT, uapi.PARQ_DSCP_DEFAULT,
              uapi.PARQ_MON_HOLD_DEFAULT, 0, 0, 0, 0), "monitor defaults")


UNPRIV = r"""
from parqlab.genl import ParqGenl, GenlError
g = ParqGenl()
print(g.mon_set(mon_enabled=1).errname)
try:
    g.mon_get()
    print("read")
except GenlError as e:
    print(e.res.errname)
"""


def t_refusals(env):
    topo = env.topo
    bad = [
        ("size 0", [nla_u32(uapi.PARQ_A_MON_SIZE, 0)]),
        ("size above maximum",
         [nla_u32(uapi.PARQ_A_MON_SIZE, uapi.PARQ_MON_SIZE_MAX + 1)]),
        ("hold below minimum",
         [nla_u64(uapi.PARQ_A_MON_HOLD, uapi.PARQ_MON_HOLD_MIN - 1)]),
        ("hold above maximum",
         [nla_u64(uapi.PARQ_A_MON_HOLD, uapi.PARQ_MON_HOLD_MAX + 1)]),
        ("enabled 2", [nla(uapi.PARQ_A_MON_ENABLED, b"\x02")]),
        ("read-only sources", [nla_u32(uapi.PARQ_A_MON_SOURCES, 1)]),
        ("report-local 2", [nla(uapi.PARQ_A_MON_REPORT_LOCAL, b"\x02")]),
        ("read-only local-events",
         [nla_u64(uapi.PARQ_A_MON_LOCAL_EVENTS, 1)]),
        ("size with a valid enable",
         [nla(uapi.PARQ_A_MON_ENABLED, b"\x01"),
          nla_u32(uapi.PARQ_A_MON_SIZE, 0)]),
    ]
    with genl(env) as g:
        before = g.mon_get()
        for name, attrs in bad:
            r = g.cmd(uapi.PARQ_CMD_MON_SET, *attrs)
            check(r.errname in ("EINVAL", "ERANGE") and r.msg,
                  f"{name}: {r}")
            diag(f"{name}: {r.errname} {r.msg!r}")
            check_eq(g.mon_get(), before, f"monitor after the refused {name}")
        # The reads take no attribute, and refuse one on every kernel
        # (without a policy of their own, 5.10's genl core ignores it).
        for name, cmd, flags in (
                ("mon-get", uapi.PARQ_CMD_MON_GET, 0),
                ("peer-get dump", uapi.PARQ_CMD_PEER_GET, NLM_F_DUMP)):
            r = g.cmd(cmd, nla_u32(uapi.PARQ_A_MON_SIZE, 16), flags=flags)
            check_eq(r.errname, "EINVAL", f"{name} with an attribute: {r}")
            r = g.cmd(cmd, nla(uapi.PARQ_A_PAD, bytes(8)), flags=flags)
            check_eq(r.errname, "EINVAL", f"{name} with a pad: {r}")
        check_eq(g.mon_get(), before, "monitor after the refused reads")
    scripts = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                           "scripts")
    p = topo.a.run(["setpriv", "--reuid=65534", "--regid=65534",
                    "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                    "env", f"PYTHONPATH={scripts}",
                    "/usr/bin/python3", "-c", UNPRIV], check=False)
    check(p.returncode == 0, f"unprivileged client: {p.stderr.strip()}")
    check_eq(p.stdout.split(), ["EPERM", "EPERM"],
             "unprivileged enable, read")
    with genl(env) as g:
        check_eq(g.mon_get(), before, "monitor after the unprivileged enable")


def t_counts(env):
    with genl(env) as g:
        ok(g.mon_set(mon_enabled=1, mon_size=1024,
                     mon_dscp=uapi.PARQ_DSCP_DEFAULT),
           "enable")
        send(env, B1, 10, TOS_EF)
        send(env, B1, 5, TOS_AF11)
        send(env, B2, 20, 0)
        settle()
        p = g.peers()
        m = g.mon_get()
    ip4 = 20 + 8 + PAYLOAD
    diag(f"peers: {p}")
    check_eq(sorted(p), [B1, B2], "sources")
    b1, b2 = p[B1], p[B2]
    check_eq((b1["par_packets"], b1["par_bytes"], b1["loc_packets"],
              b1["loc_bytes"]), (10, 10 * ip4, 5, 5 * ip4), f"{B1} counts")
    check_eq((b2["par_packets"], b2["loc_packets"], b2["loc_bytes"]),
             (0, 20, 20 * ip4), f"{B2} counts")
    check("par_age" not in b2, f"{B2} has a parallel age: {b2}")
    check(0 < b1["par_age"] < 5 * 10**9, f"{B1} par age {b1}")
    check_eq((m["mon_enabled"], m["mon_sources"]), (1, 2), "enabled, sources")
    # parqctl monitor says the same as the kernel (no traffic since).
    if not os.access(PARQCTL, os.X_OK):
        return diag(f"parqctl monitor not checked: {PARQCTL} not built")
    r = env.a.run([PARQCTL, "monitor", "--json"], check=False)
    check_eq(r.returncode, 0, f"parqctl monitor --json: {r.stderr}")
    j = json.loads(r.stdout)
    check_eq((j["enabled"], j["sources"], j["size"], j["hold_ns"], j["dscp"]),
             (True, 2, 1024, m["mon_hold"], ["cs5", "ef"]),
             "parqctl monitor: state")
    t = {e["addr"]: e for e in j["table"]}
    check_eq({a: (e["par_packets"], e["par_bytes"], e["loc_packets"],
                  e["loc_bytes"], e["par_age_ns"] is None)
              for a, e in t.items()},
             {a: (v["par_packets"], v["par_bytes"], v["loc_packets"],
                  v["loc_bytes"], "par_age" not in v)
              for a, v in p.items()}, "parqctl monitor: the table")
    r = env.a.run([PARQCTL, "monitor"], check=False)
    diag(*r.stdout.splitlines())
    check(r.returncode == 0 and "monitor: enabled" in r.stdout and
          B1 in r.stdout, f"parqctl monitor (text): {r.stdout!r}")


def t_ipv6(env):
    with genl(env) as g:
        send(env, B6, 7, TOS_EF, dst=A6, family=socket.AF_INET6)
        send(env, B6, 3, 0, dst=A6, family=socket.AF_INET6)
        settle()
        p = g.peers()
    ip6 = 40 + 8 + PAYLOAD
    check(B6 in p, f"no IPv6 source: {sorted(p)}")
    check_eq((p[B6]["par_packets"], p[B6]["par_bytes"], p[B6]["loc_packets"],
              p[B6]["loc_bytes"]), (7, 7 * ip6, 3, 3 * ip6), f"{B6} counts")


def t_dscp(env):
    with genl(env) as g:
        ok(g.mon_set(mon_dscp=uapi.PARQ_DSCP_BIT(8)), "dscp CS1 only")
        before = g.peers()[B1]
        send(env, B1, 4, TOS_EF)
        send(env, B1, 6, TOS_CS1)
        settle()
        after = g.peers()[B1]
        ok(g.mon_set(mon_dscp=uapi.PARQ_DSCP_DEFAULT), "dscp back")
    check_eq((after["par_packets"] - before["par_packets"],
              after["loc_packets"] - before["loc_packets"]), (6, 4),
             "parallel (CS1), local (EF) under dscp CS1")


def t_mark(env):
    topo = env.topo
    par, loc = 0x10001, 0x10002		# SO_PRIORITY of 1:1 and 1:2
    dev = topo.dev_b()
    tc(topo.b, "qdisc", "replace", "dev", dev, "root", "handle", "1:",
       "parq", "dscp-mark", "EF")
    tos_at_a = topo.a.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        tos_at_a.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        tos_at_a.bind((A1, PORT + 1))
        with genl(env) as g:
            ok(g.mon_set(mon_enabled=1, mon_dscp=uapi.PARQ_DSCP_DEFAULT),
               "monitor on, the default DSCP set")
            before = g.peers()
            send(env, B1, 6, 0, prio=par)  # parallel: leaves EF
            send(env, B1, 4, TOS_EF, prio=loc)  # local: leaves CS0
            send(env, B1, 3, TOS_EF)		# parallel by DSCP: EF
            send(env, B1, 2, TOS_AF11)		# local, not parallel: AF11
            send(env, B6, 5, 0, dst=A6, family=socket.AF_INET6, prio=par)
            send(env, B6, 2, TOS_EF, dst=A6, family=socket.AF_INET6,
                 prio=loc)
            for tos in (0x01, 0x02):		# ECT(1), ECT(0)
                send(env, B1, 1, tos, prio=par, port=PORT + 1)
            send(env, B1, 1, TOS_EF | 0x03, prio=loc, port=PORT + 1)  # CE
            settle()
            after = g.peers()
        tos_at_a.settimeout(2)
        got = []
        for _ in range(3):
            _, anc, _, _ = tos_at_a.recvmsg(PAYLOAD, 64)
            got += [c[2][0] for c in anc
                    if c[:2] == (socket.IPPROTO_IP, socket.IP_TOS)]
    finally:
        tos_at_a.close()
        tc(topo.b, "qdisc", "del", "dev", dev, "root", check=False)

    def delta(src, k):
        return after[src][k] - before.get(src, {}).get(k, 0)
    check_eq((delta(B1, "par_packets"), delta(B1, "loc_packets")), (11, 7),
             f"{B1}: parallel (6 and 2 by priority, 3 by EF), local (4 and "
             "1 EF by priority, 2 AF11)")
    check_eq((delta(B6, "par_packets"), delta(B6, "loc_packets")), (5, 2),
             f"{B6}: parallel by priority, local by priority")
    check_eq(got, [TOS_EF | 0x01, TOS_EF | 0x02, 0x03],
             "TOS at A of ECT(1) and ECT(0) parallel, CE local")


def t_bounded(env):
    spoofed = [f"10.88.{i // 250}.{i % 250 + 1}" for i in range(102)]
    with genl(env) as g:
        ok(g.mon_set(mon_enabled=0), "disable (forget)")
        ok(g.mon_set(mon_enabled=1, mon_size=16), "enable, size 16")
        m0 = g.mon_get()
        send_spoofed(env, spoofed[:100])
        settle()
        p = g.peers()
        m = g.mon_get()
        diag(f"{len(p)} sources kept, {m['mon_evicted'] - m0['mon_evicted']} "
             f"evicted, {m['mon_uncounted'] - m0['mon_uncounted']} "
             "packets uncounted")
        check_eq((m["mon_sources"], len(p)), (16, 16), "sources kept")
        check_eq(m["mon_evicted"] - m0["mon_evicted"], 0, "evictions")
        check_eq(m["mon_uncounted"] - m0["mon_uncounted"], 84,
                 "uncounted packets")
        check_eq(sorted(p), sorted(spoofed[:16]), "the first 16 are kept")
        # Idle for 2 s now: two new sources replace the two oldest (the
        # budget, 16 / (4 x CPUs) a second per CPU, is at least one each
        # on the CPU that receives them, so they go one a second).
        time.sleep(2.2)
        send_spoofed(env, spoofed[100:101])
        time.sleep(1.1)
        send_spoofed(env, spoofed[101:102])
        settle()
        p = g.peers()
        m2 = g.mon_get()
    check_eq(m2["mon_evicted"] - m["mon_evicted"], 2,
             "evictions of idle sources")
    check_eq(sorted(p), sorted(spoofed[2:16] + spoofed[100:]),
             "the two seen longest ago made room")


def t_events(env):
    hold = 50 * MS
    with genl(env) as g, genl(env) as listener:
        ok(g.mon_set(mon_enabled=1, mon_size=1024, mon_hold=hold),
           "hold 50 ms")
        listener.subscribe()
        sk = env.topo.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sk.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_EF)
        sk.bind((B1, 0))
        t_start = time.monotonic()
        try:
            while time.monotonic() - t_start < 0.6:  # a packet every 5 ms
                sk.sendto(bytes(PAYLOAD), (A1, PORT))
                t_last = time.monotonic()
                time.sleep(0.005)
        finally:
            sk.close()
        ev = listener.events(1.0)
        ok(g.mon_set(mon_hold=uapi.PARQ_MON_HOLD_DEFAULT), "hold back")
    diag("events: " + str([(e["mon_active"], e.get("addr"),
                            round(e["t"] - t_start, 3)) for e in ev]))
    check_eq([(e["cmd"], e["mon_active"]) for e in ev],
             [(uapi.PARQ_CMD_MON_EVENT, 1), (uapi.PARQ_CMD_MON_EVENT, 0)],
             "one start and one stop")
    check_eq(ev[0].get("addr"), B1, "the source that started it")
    gap = ev[1]["t"] - t_last
    diag(f"stop reported {gap * 1e3:.0f} ms after the last parallel packet "
         f"(hold {hold // MS} ms)")
    check(gap >= hold / 1e9 - 0.005, f"stop reported {gap:.3f}s after the "
          "last packet: before the hold")
    check(gap <= hold / 1e9 + 0.5, f"stop reported {gap:.3f}s after the "
          "last packet")


def trickle(env, sk, seconds, every, poll=None):
    """Parallel packets from @sk every @every s (at least: a late wake-up
    only lowers the rate) for @seconds; @poll(t) is called after each."""
    t0 = time.monotonic()
    while (t := time.monotonic() - t0) < seconds:
        sk.sendto(bytes(PAYLOAD), (A1, PORT))
        if poll:
            poll(t)
        time.sleep(every)


def t_min_bytes(env):
    """A trickle of parallel packets below min-bytes per hold (10 ms apart,
    at most 5 x 128 IP bytes in a 50 ms hold, against 2 000) neither starts
    parallel traffic nor keeps a burst's from stopping; with min-bytes 0
    the same trickle does both, which is the attack."""
    hold, need = 50 * MS, 2000
    with genl(env) as g, genl(env) as listener:
        ok(g.mon_set(mon_enabled=1, mon_size=1024, mon_hold=hold,
                     mon_min_bytes=need), "hold 50 ms, min-bytes 2000")
        check_eq(g.mon_get()["mon_min_bytes"], need, "min-bytes in MON_GET")
        listener.subscribe()
        time.sleep(0.3)		# any stop report of earlier cases is out
        listener.events(0.1)
        sk = env.topo.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sk.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_EF)
        sk.bind((B1, 0))
        try:
            m0 = g.mon_get()
            trickle(env, sk, 0.6, 0.010)
            settle()
            m = g.mon_get()
            ev = listener.events(0.2)
            diag(f"trickle alone: {m['mon_below'] - m0['mon_below']} "
                 f"packets below, reports {[e['mon_active'] for e in ev]}")
            check_eq(ev, [], "reports for a trickle below min-bytes")
            check(m["mon_below"] - m0["mon_below"] >= 10,
                  "trickle packets not summed in mon-below")

            # A burst above min-bytes starts it; the trickle after it must
            # not keep it going: inactive within two holds and a margin.
            active = []
            for _ in range(40):
                sk.sendto(bytes(PAYLOAD), (A1, PORT))
            trickle(env, sk, 0.8, 0.010,
                    lambda t: active.append((t, g.mon_get()["mon_active"])))
            late = [a for t, a in active if t >= 0.4]
            ev = listener.events(0.3)
            diag("burst then trickle: reports "
                 f"{[e['mon_active'] for e in ev]}, "
                 f"active after 0.4 s in {sum(late)} of {len(late)} reads")
            check_eq([e["mon_active"] for e in ev], [1, 0],
                     "a burst starts parallel traffic, which stops during "
                     "the trickle")
            check(late and not any(late),
                  "the trickle kept parallel traffic going")

            # The same trickle with min-bytes 0: every packet counts.
            ok(g.mon_set(mon_min_bytes=0), "min-bytes 0")
            trickle(env, sk, 0.6, 0.010)
            ev = listener.events(0.3)
            check_eq([e["mon_active"] for e in ev][:1], [1],
                     "with min-bytes 0 the trickle starts parallel traffic")
        finally:
            sk.close()
            ok(g.mon_set(mon_hold=uapi.PARQ_MON_HOLD_DEFAULT,
                         mon_min_bytes=0), "hold and min-bytes back")


def local_reports_during_burst(env, g, listener):
    """B2 sends local packets before a parallel burst from B1 (not
    reported: no parallel traffic), then twice during it, the first more
    than a hold after its last (reported if asked), the second 50 ms later
    (not reported: within a hold).  The events and the MON_GET before and
    after."""
    m0 = g.mon_get()
    send(env, B2, 2, 0)
    sk = env.topo.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sk.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_EF)
    sk.bind((B1, 0))
    t_start = time.monotonic()
    local_at = [0.4, 0.45]
    try:
        while (t := time.monotonic() - t_start) < 0.8:
            sk.sendto(bytes(PAYLOAD), (A1, PORT))
            if local_at and t >= local_at[0]:
                send(env, B2, 1, 0)
                local_at.pop(0)
            time.sleep(0.005)
    finally:
        sk.close()
    ev = listener.events(1.0)
    return ev, m0, g.mon_get()


def t_local_reports(env):
    hold = 200 * MS
    with genl(env) as g, genl(env) as listener:
        ok(g.mon_set(mon_enabled=1, mon_size=1024, mon_hold=hold,
                     mon_report_local=1),
           "hold 200 ms, report local senders")
        listener.subscribe()
        time.sleep(0.3)		# any stop report of earlier cases is out
        listener.events(0.1)
        ev, m0, m = local_reports_during_burst(env, g, listener)
        diag("reported: " + str([(e["cmd"], e.get("mon_active"),
                                  e.get("addr")) for e in ev]))
        check_eq(m["mon_report_local"], 1, "report-local in MON_GET")
        check_eq([(e["cmd"], e.get("mon_active"), e.get("addr")) for e in ev],
                 [(uapi.PARQ_CMD_MON_EVENT, 1, B1),
                  (uapi.PARQ_CMD_MON_LOCAL, None, B2),
                  (uapi.PARQ_CMD_MON_EVENT, 0, None)],
                 "start, B2's first local packet in a hold, stop")
        check_eq(m["mon_local_events"] - m0["mon_local_events"], 1,
                 "local reports counted")
        ok(g.mon_set(mon_report_local=0), "report-local off")
        time.sleep(0.3)
        ev, m0, m = local_reports_during_burst(env, g, listener)
        check_eq([(e["cmd"], e.get("mon_active")) for e in ev],
                 [(uapi.PARQ_CMD_MON_EVENT, 1), (uapi.PARQ_CMD_MON_EVENT, 0)],
                 "with report-local off: a start and a stop only")
        check_eq(m["mon_local_events"], m0["mon_local_events"],
                 "local reports counted with report-local off")
        ok(g.mon_set(mon_hold=uapi.PARQ_MON_HOLD_DEFAULT), "hold back")


def t_peers(env):
    peers_nla = uapi.PARQ_A_MON_PEERS | NLA_F_NESTED
    many = b"".join(addr_attr(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")
                    for i in range(uapi.PARQ_MON_PEERS_MAX + 1))
    bad = [
        ("more than PARQ_MON_PEERS_MAX", [nla(peers_nla, many)], "E2BIG"),
        ("a credit inside", [nla(peers_nla, nla_u32(uapi.PARQ_A_CREDIT, 1))],
         "EINVAL"),
        ("a 3-byte IPv4 address",
         [nla(peers_nla, nla(uapi.PARQ_A_ADDR4, b"abc"))], "EINVAL"),
        ("not flagged nested", [nla(uapi.PARQ_A_MON_PEERS, addr_attr(B1))],
         "EINVAL"),
    ]
    with genl(env) as g, genl(env) as listener:
        try:
            ok(g.mon_set(mon_enabled=1, mon_size=1024, mon_hold=50 * MS),
               "enable")
            send(env, B2, 3, 0)
            settle()
            check(B2 in g.peers(), "B2 counted before the peer set")
            ok(g.mon_set(mon_peers=[B1, B6, B1]), "peers B1, B6 (B1 twice)")
            m0 = g.mon_get()
            check_eq(m0["mon_npeers"], 2, "peers in the set")
            check(set(g.peers()) <= {B1, B6},
                  f"sources outside the set stayed: {sorted(g.peers())}")
            for name, attrs, err in bad:
                r = g.cmd(uapi.PARQ_CMD_MON_SET, *attrs)
                diag(f"{name}: {r.errname} {r.msg!r}")
                check(r.errname == err, f"{name}: {r}")
                check_eq(g.mon_get(), m0, f"monitor after the refused {name}")
            listener.subscribe()
            time.sleep(0.2)		# any stop report of earlier cases is out
            listener.events(0.1)
            send(env, B2, 20, TOS_EF)
            settle()
            m = g.mon_get()
            ev = listener.events(0.3)
            check_eq(m["mon_foreign"] - m0["mon_foreign"], 20,
                     "foreign packets")
            check(B2 not in g.peers(), "B2 (not a peer) is in the table")
            check_eq(ev, [], "reports for a host outside the peer set")
            b1 = g.peers().get(B1, {}).get("par_packets", 0)
            send(env, B1, 10, TOS_EF)
            settle()
            ev = listener.events(0.3)
            check_eq(g.peers()[B1]["par_packets"] - b1, 10, "a peer's packets")
            check_eq([(e["mon_active"], e.get("addr")) for e in ev][:1],
                     [(1, B1)], "a peer starts parallel traffic")
            ok(g.mon_set(mon_peers=[]), "an empty set")
            check_eq(g.mon_get()["mon_npeers"], 0, "peers after the empty set")
            send(env, B2, 4, 0)
            settle()
            check_eq(g.peers()[B2]["loc_packets"], 4, "B2 counted again")
            ok(g.mon_set(mon_hold=uapi.PARQ_MON_HOLD_DEFAULT), "hold back")
        finally:
            # Left to every source even when a part is skipped.
            g.mon_set(mon_peers=[])


def t_turnover(env):
    """Thousands of sources: shrinking the table, a new peer set and a
    disable drop them in batches, with the lock let go between batches;
    sources keep arriving meanwhile, and every count agrees at the end."""
    spoofed = [f"10.86.{i // 250}.{i % 250 + 1}" for i in range(3000)]
    fresh = [f"10.87.{i // 250}.{i % 250 + 1}" for i in range(2000)]
    with genl(env) as g:
        ok(g.mon_set(mon_enabled=0), "disable (forget)")
        ok(g.mon_set(mon_enabled=1, mon_size=4096, mon_peers=[]),
           "enable, size 4096, every source")
        # New sources are admitted at size / (4 s x CPUs) a second per CPU.
        deadline = time.monotonic() + 30
        while g.mon_get()["mon_sources"] < len(spoofed):
            check(time.monotonic() < deadline,
                  f"{g.mon_get()['mon_sources']} of {len(spoofed)} sources "
                  "counted after 30 s")
            send_spoofed(env, spoofed)
        m0 = g.mon_get()
        diag(f"{m0['mon_sources']} sources counted")

        stop = threading.Event()

        def arrive():
            while not stop.is_set():
                send_spoofed(env, fresh[:200])
                send_spoofed(env, spoofed[:200])

        t = threading.Thread(target=arrive, daemon=True)
        t.start()
        try:
            ok(g.mon_set(mon_size=100), "size 100")
            m = g.mon_get()
            check(m["mon_sources"] <= 100,
                  f"{m['mon_sources']} sources in a table of 100")
            check(m["mon_evicted"] - m0["mon_evicted"] >= len(spoofed) - 100,
                  f"{m['mon_evicted'] - m0['mon_evicted']} evicted")
            ok(g.mon_set(mon_size=4096), "size 4096")
            deadline = time.monotonic() + 30
            while g.mon_get()["mon_sources"] < 1000:
                check(time.monotonic() < deadline, "the table did not refill")
                send_spoofed(env, spoofed)
            keep = spoofed[::60]
            ok(g.mon_set(mon_peers=keep), f"a peer set of {len(keep)}")
            p = g.peers()
            check(set(p) <= set(keep),
                  f"{len(set(p) - set(keep))} sources outside the peer set")
            ok(g.mon_set(mon_enabled=0), "disable under arrivals")
            m = g.mon_get()
            check_eq((m["mon_sources"], len(g.peers())), (0, 0),
                     "sources after disable")
        finally:
            stop.set()
            t.join()
        settle()
        m = g.mon_get()
        check_eq((m["mon_sources"], len(g.peers())), (0, 0),
                 "sources after the arrivals stopped")
        ok(g.mon_set(mon_enabled=1, mon_size=uapi.PARQ_MON_SIZE_DEFAULT,
                     mon_peers=[]), "defaults back")


def t_disable_and_netns(env):
    with genl(env) as g, genl(env, env.topo.b) as gb:
        ok(g.mon_set(mon_enabled=0), "disable")
        m = g.mon_get()
        check_eq((m["mon_enabled"], m["mon_sources"], m["mon_active"]),
                 (0, 0, 0), "after disable")
        send(env, B1, 5, TOS_EF)
        settle()
        check_eq(g.peers(), {}, "sources counted while disabled")
        ok(g.mon_set(mon_enabled=1), "enable")
        check_eq(gb.mon_get()["mon_enabled"], 0, "B's monitor")
        send(env, B1, 2, TOS_EF)
        settle()
        check_eq(g.peers()[B1]["par_packets"], 2, "counts after re-enable")
        check_eq(gb.peers(), {}, "B's table")


def t_rmmod(env):
    with genl(env) as g:
        ok(g.mon_set(mon_enabled=1), "enable")
    send(env, B1, 3, TOS_EF)
    r = module.rmmod()
    check(r.returncode == 0, f"rmmod with the monitor on: {r.stderr.strip()}")
    module.ensure_loaded()
    send(env, B1, 3, TOS_EF)  # no hook left behind
    with genl(env) as g:
        m = g.mon_get()
        check_eq((m["mon_enabled"], m["mon_sources"]), (0, 0),
                 "monitor of a fresh module")


def setup(env, sinks):
    """B2 on B; IPv6 between A and B; sockets in A that take the datagrams
    (no ICMP back), into @sinks, which main() closes last."""
    topo = env.topo
    topo.b.run(["ip", "addr", "add", f"{B2}/24", "dev", topo.dev_b()])
    for ns in (topo.a, topo.b):
        for key in ("net.ipv6.conf.all.disable_ipv6",
                    "net.ipv6.conf.default.disable_ipv6"):
            ns.sysctl(key, "0")
        ns.sysctl("net.ipv4.conf.all.rp_filter", "0")
    for ns, dev in ((topo.a, topo.dev_a()), (topo.b, topo.dev_b())):
        ns.sysctl(f"net.ipv6.conf.{dev}.disable_ipv6", "0")
        ns.sysctl(f"net.ipv4.conf.{dev}.rp_filter", "0")
    topo.a.run(["ip", "addr", "add", f"{A6}/64", "dev", topo.dev_a(),
                "nodad"])
    topo.b.run(["ip", "addr", "add", f"{B6}/64", "dev", topo.dev_b(),
                "nodad"])
    topo.a.run(["ip", "-6", "neigh", "replace", B6, "lladdr", topo.mac_b(),
                "dev", topo.dev_a(), "nud", "permanent"])
    topo.b.run(["ip", "-6", "neigh", "replace", A6, "lladdr", topo.mac_a(),
                "dev", topo.dev_b(), "nud", "permanent"])
    topo.a.run(["ip", "neigh", "replace", B2, "lladdr", topo.mac_b(), "dev",
                topo.dev_a(), "nud", "permanent"])
    for fam, addr in ((socket.AF_INET, A1), (socket.AF_INET6, A6)):
        sk = topo.a.socket(fam, socket.SOCK_DGRAM)
        sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        sk.bind((addr, PORT))
        sinks.append(sk)


def main():
    suite = ktap.Suite("parq_monitor")
    suite.case("defaults", t_defaults)
    suite.case("refused configurations change nothing", t_refusals)
    suite.case("exact counts per source and class (IPv4)", t_counts)
    suite.case("exact counts over IPv6", t_ipv6)
    suite.case("a new DSCP set re-sorts the traffic", t_dscp)
    suite.case("the sender's dscp-mark decides what the receiver counts",
               t_mark)
    suite.case("100 spoofed sources, table of 16: only idle sources make room",
               t_bounded)
    suite.case("one start and one stop report per parallel stream",
               t_events)
    suite.case("a parallel trickle below min-bytes neither starts nor holds "
               "parallel traffic", t_min_bytes)
    suite.case("local senders reported during parallel traffic, if asked",
               t_local_reports)
    suite.case("a peer set: only peers are counted", t_peers)
    suite.case("thousands of sources: shrink, peer set, disable under "
               "arrivals", t_turnover, timeout=180)
    suite.case("disable forgets; other namespaces untouched",
               t_disable_and_netns)
    suite.case("rmmod with the monitor on", t_rmmod)
    sinks = []
    try:
        return lab.run(suite, "mon", setup=lambda env: setup(env, sinks))
    finally:
        for sk in sinks:
            sk.close()


if __name__ == "__main__":
    sys.exit(main())
