#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq counters: every packet is counted once, in the class it was
classified to, with its L2 length; drops are counted by reason.

Namespace A sends exactly K UDP datagrams of a known size per class to
namespace B through parq, the root qdisc of A's veth.  Nothing else crosses
that link (IPv6 off, permanent neighbour entries), so the class counters of
a fresh qdisc must equal what was sent, to the packet and the byte:
  - DSCP: EF and CS5 parallel, anything else (CS6 and CS7 too) the default
    class
  - SO_PRIORITY <handle>:<minor>, which wins over DSCP
  - tc filters on the qdisc: u32, flower, matchall, classic BPF
  - a filter naming a class that does not exist (1:7): the packet goes to
    the default class and xstats unknown_class counts it.  The kernel
    cannot refuse such a filter when it is added: in 6.1 a classful qdisc
    only learns the classid through bind_tcf(), which cannot fail.
Then the limits, with the shaper at 1 byte/s so that nothing leaves:
local packets are evicted for parallel ones, and a parallel packet is
dropped only when no local packet is left (or its flow is at flow-limit).
"""
import json
import re
import sys

from parqlab import ktap, lab, uapi
from parqlab import tc as tclib
from parqlab.ktap import check, check_eq, diag
from parqlab.tc import tc
from parqlab.traffic import UDP_OVERHEAD, send_udp, udp_socket

K = 20			# packets per class and kind of traffic
TOS_EF, TOS_CS5, TOS_CS6, TOS_CS7 = 46 << 2, 40 << 2, 48 << 2, 56 << 2
TOS_AF41 = 34 << 2
PAR, LOC = "1:1", "1:2"

# Classic BPF, run on the packet from its Ethernet header (egress):
#   ldh [12]; jne #0x800 -> no; ldb [23]; jne #17 -> no;
#   ldh [36] (UDP dport, IHL 5); jne #PORT -> no; ret #-1 (use classid);
#   no: ret #0 (no match)
BPF_UDP_DPORT = ("8,40 0 0 12,21 0 5 2048,48 0 0 23,21 0 3 17,"
                 "40 0 0 36,21 0 1 {port},6 0 0 4294967295,6 0 0 0")


SOJOURN = ("parallel_sojourn", "local_sojourn")


def xstats_keys():
    """The names tc -j gives the fields of struct tc_parq_xstats (the
    sojourn buckets, arrays, as each class's _pkts, _mean and _hist)."""
    return (["xstats_version" if n == "version" else n
             for n, _ in uapi.XSTATS_FIELDS if not n.startswith("pad")] +
            [f"{c}_{k}" for c in SOJOURN for k in ("pkts", "mean", "hist")])


def xstats(q):
    """The parq xstats fields of a tc -s -j qdisc dict."""
    return {k: q[k] for k in xstats_keys() if k in q}


def fresh(env, *args):
    """A new parq root qdisc (all counters zero) with @args."""
    a, dev = env.a, env.dev
    tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq", *args)
    q = tclib.parq_qdisc(a, dev)
    check_eq((q["packets"], q["bytes"], q["drops"], q["qlen"]), (0, 0, 0, 0),
             "counters of the new qdisc")


def wait_empty(env, timeout=5.0):
    return ktap.poll(lambda: tclib.parq_qdisc(env.a, env.dev),
                     lambda q: q["qlen"] == 0, timeout, 0.1)


def send(env, spec):
    """@spec: [(count, payload, tos, priority, port)]; each line from its own
    socket.  Returns the L2 lengths sent, line by line."""
    a, topo = env.a, env.topo
    out = []
    for count, payload, tos, prio, port in spec:
        with udp_socket(a, tos=tos, priority=prio) as s:
            out.append(send_udp(s, topo.ip_b(), port, payload, count))
    return out


def run_and_check(env, spec, xs_want=None):
    """@spec: [(count, payload, tos, priority, port, where)], where is PAR,
    LOC or "drop" (dropped by a filter).  Checks every counter."""
    want = {PAR: [0, 0], LOC: [0, 0]}
    filtered = 0
    for (count, payload, tos, prio, port, where), l2 in zip(
            spec, send(env, [line[:5] for line in spec])):
        if where == "drop":
            filtered += count
        else:
            want[where][0] += count
            want[where][1] += count * l2
    q = wait_empty(env)
    cls = tclib.class_stats(env.a, env.dev)
    for cid in (PAR, LOC):
        got = cls[cid]
        diag(f"class {cid}: {got['packets']} packets {got['bytes']} bytes "
             f"drops {got['drops']} (want {want[cid][0]}/{want[cid][1]})")
        check_eq((got["packets"], got["bytes"]), tuple(want[cid]),
                 f"class {cid} (packets, bytes)")
        check_eq((got["drops"], got["qlen"], got["backlog"]), (0, 0, 0),
                 f"class {cid} (drops, qlen, backlog)")
    check_eq((q["packets"], q["bytes"]),
             (want[PAR][0] + want[LOC][0], want[PAR][1] + want[LOC][1]),
             "qdisc (packets, bytes)")
    check_eq(q["drops"], filtered, "qdisc drops")
    xs = xstats(q)
    want_xs = {"unknown_class": 0, "drop_filter": filtered}
    want_xs.update(xs_want or {})
    for k, v in want_xs.items():
        check_eq(xs.get(k), v, f"xstats {k}")
    return q


# --- classification --------------------------------------------------------

def t_dscp(env):
    fresh(env)
    run_and_check(env, [
        (K, 300, TOS_EF, None, 9, PAR),
        (5, 301, TOS_CS5, None, 9, PAR),
        (5, 302, TOS_CS6, None, 9, LOC),
        (5, 303, TOS_CS7, None, 9, LOC),
        (K, 100, None, None, 9, LOC),
        (5, 101, TOS_AF41, None, 9, LOC),
    ])
    # Another DSCP set and the other default class.
    fresh(env, "dscp-parallel", "AF41", "default", "parallel")
    run_and_check(env, [
        (K, 300, TOS_AF41, None, 9, PAR),
        (K, 100, None, None, 9, PAR),
        (5, 200, TOS_EF, None, 9, PAR),
    ])
    fresh(env, "dscp-parallel", "none")
    run_and_check(env, [(K, 300, TOS_EF, None, 9, LOC)])


def t_priority(env):
    fresh(env)
    run_and_check(env, [
        (K, 300, None, 0x10001, 9, PAR),
        (K, 100, TOS_EF, 0x10002, 9, LOC),  # priority beats DSCP
        (5, 200, TOS_EF, 0x20001, 9, PAR),  # other major: DSCP decides
        (5, 201, None, 0x20001, 9, LOC),
        (5, 202, TOS_EF, 0x10005, 9, LOC),  # minor 5: the default class
    ], xs_want={"unknown_class": 5})


def t_priority_handle0(env):
    """A parq of handle 0, such as the children mq makes with
    default_qdisc parq, has no classids to address: SO_PRIORITY, which any
    user may set from 0 to 6, must not pick its class there (priority 1
    would be parallel, 2 local); DSCP and the default class decide."""
    a = env.a
    path = "/proc/sys/net/core/default_qdisc"
    with open(path) as f:
        old = f.read().strip()
    dev = "pq0"
    # A veth of 4 tx queues whose peer, up without an address, takes what
    # is sent to 10.99.0.2 (a permanent neighbour entry) and drops it.
    a.run(["ip", "link", "add", dev, "numtxqueues", "4", "type", "veth",
           "peer", "name", dev + "p"])
    try:
        with open(path, "w") as f:
            f.write("parq")
        tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "mq")
        for d in (dev, dev + "p"):  # nothing but the test's packets
            a.sysctl(f"net.ipv6.conf.{d}.disable_ipv6", 1, missing_ok=True)
        a.run(["ip", "addr", "add", "10.99.0.1/24", "dev", dev])
        a.run(["ip", "link", "set", dev + "p", "up"])
        a.run(["ip", "link", "set", dev, "up"])
        a.run(["ip", "neigh", "replace", "10.99.0.2", "lladdr",
               "02:00:00:00:99:02", "dev", dev, "nud", "permanent"])
        kids = [q for q in tclib.qdiscs(a, dev) if q.get("kind") == "parq"]
        check_eq(len(kids), 4, "parq children of mq")
        check_eq({q["handle"] for q in kids}, {"0:"}, "their handles")
        for count, tos, prio in ((K, None, 1), (5, TOS_EF, 2),
                                 (5, None, 6)):
            with udp_socket(a, tos=tos, priority=prio) as s:
                send_udp(s, "10.99.0.2", 9, 100, count)

        def totals():
            kids = [q for q in tclib.qdiscs(a, dev) if q.get("kind") == "parq"]
            return (sum(sum(q["parallel_sojourn_hist"]) for q in kids),
                    sum(sum(q["local_sojourn_hist"]) for q in kids))
        got = ktap.poll(totals, lambda t: sum(t) >= K + 10, 5.0, 0.1)
        diag(f"parallel, local packets: {got}")
        check_eq(got, (5, K + 5),
                 "priority 1 is local, EF with priority 2 parallel")
    finally:
        with open(path, "w") as f:
            f.write(old)
        a.run(["ip", "link", "del", dev], check=False)


def filter_add(env, *args):
    tc(env.a, "filter", "add", "dev", env.dev, "parent", "1:", *args)


def t_u32(env):
    fresh(env)
    filter_add(env, "protocol", "ip", "prio", "1", "u32", "match", "ip",
                    "dport", "5001", "0xffff", "flowid", PAR)
    filter_add(env, "protocol", "ip", "prio", "2", "u32", "match", "ip",
                    "dport", "5002", "0xffff", "flowid", LOC)
    filter_add(env, "protocol", "ip", "prio", "3", "u32", "match", "ip",
                    "dport", "5009", "0xffff", "action", "drop")
    run_and_check(env, [
        (K, 300, None, None, 5001, PAR),
        (K, 100, TOS_EF, None, 5002, LOC),
        (5, 200, TOS_EF, None, 5003, PAR),  # no match: DSCP
        (5, 201, None, None, 5003, LOC),
        (7, 202, TOS_EF, None, 5009, "drop"),
    ])


def t_flower(env):
    fresh(env)
    filter_add(env, "protocol", "ip", "prio", "1", "flower", "ip_proto", "udp",
                    "dst_port", "5001", "classid", PAR)
    filter_add(env, "protocol", "ip", "prio", "2", "flower", "ip_proto", "udp",
                    "dst_port", "5002", "classid", LOC)
    run_and_check(env, [
        (K, 300, None, None, 5001, PAR),
        (K, 100, TOS_EF, None, 5002, LOC),
        (5, 200, TOS_EF, None, 5003, PAR),
        (5, 201, None, None, 5003, LOC),
    ])


def t_matchall(env):
    fresh(env)
    filter_add(env, "prio", "1", "matchall", "classid", PAR)
    run_and_check(env, [(K, 300, None, None, 5001, PAR),
                        (K, 100, TOS_EF, None, 5002, PAR)])
    fresh(env)
    filter_add(env, "prio", "1", "matchall", "classid", LOC)
    run_and_check(env, [(K, 300, None, None, 5001, LOC),
                        (K, 100, TOS_EF, None, 5002, LOC)])


def t_bpf(env):
    fresh(env)
    filter_add(env, "protocol", "ip", "prio", "1", "bpf", "bytecode",
                    BPF_UDP_DPORT.format(port=5001), "classid", PAR)
    filter_add(env, "protocol", "ip", "prio", "2", "bpf", "bytecode",
                    BPF_UDP_DPORT.format(port=5002), "classid", LOC)
    run_and_check(env, [
        (K, 300, None, None, 5001, PAR),
        (K, 100, TOS_EF, None, 5002, LOC),
        (5, 200, TOS_EF, None, 5003, PAR),
        (5, 201, None, None, 5003, LOC),
    ])


def t_unknown_class(env):
    # Accepted by the kernel (see the header), counted at classification.
    fresh(env)
    filter_add(env, "protocol", "ip", "prio", "1", "u32", "match", "ip",
                    "dport", "5007", "0xffff", "flowid", "1:7")
    run_and_check(env, [
        (K, 300, TOS_EF, None, 5007, LOC),  # the filter's verdict, not DSCP
        (5, 100, None, None, 5001, LOC),
    ], xs_want={"unknown_class": K})
    fresh(env, "default", "parallel")
    filter_add(env, "protocol", "ip", "prio", "1", "u32", "match", "ip",
                    "dport", "5007", "0xffff", "flowid", "1:7")
    run_and_check(env, [(K, 300, None, None, 5007, PAR)],
                  xs_want={"unknown_class": K})


# --- statistics output ----------------------------------------------------

def t_xstats_json(env):
    a, dev = env.a, env.dev
    fresh(env)
    filter_add(env, "protocol", "ip", "prio", "1", "u32", "match", "ip",
                    "dport", "5007", "0xffff", "flowid", "1:7")
    send(env, [(3, 100, None, None, 5007)])
    wait_empty(env)
    raw = tc(a, "-s", "-j", "qdisc", "show", "dev", dev).stdout
    try:
        qs = json.loads(raw)
    except json.JSONDecodeError as e:
        raise AssertionError(f"tc -s -j qdisc show: invalid JSON: {e}")
    q = [x for x in qs if x.get("kind") == "parq"][0]
    xs = xstats(q)
    check_eq(sorted(xs), sorted(xstats_keys()),
             "xstats keys in tc -s -j qdisc show")
    check_eq(xs["xstats_version"], uapi.PARQ_XSTATS_VERSION,
             "xstats_version")
    check_eq(xs["unknown_class"], 3, "unknown_class")
    # The text output names the same fields with the same values; the
    # sojourn times print as NAME_pkts N NAME_mean TIME NAME_hist H.
    text = tc(a, "-s", "qdisc", "show", "dev", dev).stdout
    for c in SOJOURN:
        m = re.search(rf"{c}_pkts (\d+) {c}_mean (\S+) {c}_hist (\S+)", text)
        check(m, f"{c} in tc -s qdisc show")
        pkts = int(m.group(1))
        check_eq(pkts, sum(xs[f"{c}_hist"]), f"{c}_pkts (text) against the "
                 f"JSON buckets")
        check_eq(xs[f"{c}_pkts"], pkts, f"{c}_pkts (JSON)")
        check_eq(xs[f"{c}_mean"], xs[f"{c}_sum"] // pkts if pkts else 0,
                 f"{c}_mean (JSON)")
        check_eq(sum(int(b.split(":")[1]) for b in m.group(3).split(",")
                     if b != "-"), pkts, f"{c}_hist (text): its packets")
        text = text.replace(m.group(0), "")
        for k in ("pkts", "mean", "hist", "sum"):
            del xs[f"{c}_{k}"]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if "xstats_version" in line)
    # Counters print as numbers, rates (resv_*_rate, resv_capacity) as tc
    # rates, which JSON gives in bytes/s.
    text_xs = {}
    for k, num, unit in re.findall(r"([a-z_]+) (\d+)((?:[KMGT]i?)?bit)?\b",
                                   " ".join(lines[start:])):
        if unit:
            scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                     "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3,
                     "Ti": 1024**4}[unit[:-3]]
            text_xs[k] = int(int(num) * scale / 8)
        else:
            text_xs[k] = int(num)
    check_eq(text_xs, xs, "xstats in text vs JSON")
    diag("xstats: " + " ".join(f"{k}={v}" for k, v in xs.items()))
    # tc 6.1 has no JSON output for "class show" (it prints text even with
    # -j); if this tc does, it must be valid JSON too.
    raw = tc(a, "-s", "-j", "class", "show", "dev", dev).stdout
    if raw.lstrip().startswith("["):
        json.loads(raw)
        diag("tc -s -j class show: valid JSON")
    else:
        diag("tc -s -j class show: text (this tc has no JSON for classes)")
        cls = tclib.classes_text(a, dev)
        check_eq(sorted(cls), [PAR, LOC], "classes in tc -s class show")
        check_eq(cls[LOC]["packets"], 3, "class 1:2 packets (text)")


def t_sojourn(env):
    """Sojourn times: every packet sent is timed once, in its class, and
    under the threshold rule local packets wait longer than parallel ones.
    The shaper first runs at 8 bit/s: one parallel packet leaves at once
    and then nothing for 128 s, so that the whole burst queues however
    slowly this host sends it (under the debug kernel one send can take
    longer than a packet's time at 1 Mbit/s, and a burst sent into a
    running shaper did not queue); a change to 1 Mbit/s then releases
    it, four parallel packets to one local while both wait."""
    a, dev = env.a, env.dev
    fresh(env, "rate", "8bit", "burst", "0", "threshold", "4", "unit",
          "packets")
    send(env, [(1, 100, TOS_EF, None, 9), (12, 100, None, None, 9),
               (12, 100, TOS_EF, None, 9)])
    check_eq(tclib.parq_qdisc(a, dev)["qlen"], 24,
             "packets held by the shaper")
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "rate", "1mbit")
    q = wait_empty(env)
    check_eq(q["qlen"], 0, "packets left after the release")
    cls = tclib.class_stats(a, dev)
    xs = xstats(q)
    for c, cid, n in zip(SOJOURN, (PAR, LOC), (13, 12)):
        diag(f"{c}: {xs[f'{c}_pkts']} packets, mean "
             f"{xs[f'{c}_mean'] / 1000:.0f} us, buckets {xs[f'{c}_hist']}")
        check_eq(sum(xs[f"{c}_hist"]), cls[cid]["packets"],
                 f"{c} buckets' packets against class {cid}'s")
        check_eq(xs[f"{c}_pkts"], n, f"{c}_pkts")
    # Every held packet waited from its send to the release, the local ones
    # (sent first) a little longer; then the threshold rule sends the
    # parallel ones first.  The first parallel packet did not wait.
    check(xs["local_sojourn_mean"] > xs["parallel_sojourn_mean"],
          f"local mean {xs['local_sojourn_mean']} ns not above parallel's "
          f"{xs['parallel_sojourn_mean']} ns")


# --- limits ---------------------------------------------------------------

def qstate(env):
    q = tclib.parq_qdisc(env.a, env.dev)
    cls = tclib.class_stats(env.a, env.dev)
    return q, cls


def t_limit_evicts_local(env):
    for attempt in range(1, 4):
        # Shaper at 1 byte/s: the primer leaves at once, then nothing for
        # 242 s.  limit 20, flow-limit 20: only the limit can bite.
        fresh(env, "limit", "20", "flow-limit", "20", "rate", "8bit",
              "burst", "0")
        send(env, [(1, 200, None, None, 9)])
        send(env, [(15, 100, None, None, 9)])
        q, cls = qstate(env)
        check_eq((cls[LOC]["packets"], cls[LOC]["qlen"]), (1, 15),
                 "local (sent, queued) after the primer and 15 more")
        send(env, [(10, 100, TOS_EF, None, 9)])
        q, cls = qstate(env)
        xs = xstats(q)
        diag(f"after 10 parallel: local queued {cls[LOC]['qlen']} dropped "
             f"{cls[LOC]['drops']}, parallel queued {cls[PAR]['qlen']} "
             f"dropped {cls[PAR]['drops']}, drop_local_evicted "
             f"{xs['drop_local_evicted']}")
        check_eq((cls[LOC]["qlen"], cls[LOC]["drops"]), (10, 5),
                 "local (queued, dropped)")
        check_eq((cls[PAR]["qlen"], cls[PAR]["drops"]), (10, 0),
                 "parallel (queued, dropped)")
        check_eq(xs["drop_local_evicted"], 5, "drop_local_evicted")
        check_eq((q["qlen"], q["backlog"], q["drops"]),
                 (20, 20 * (100 + UDP_OVERHEAD), 5),
                 "qdisc (qlen, backlog, drops)")
        # A second parallel flow: 10 more evict the last local packets,
        # then with no local packet left, parallel ones are dropped.
        send(env, [(12, 100, TOS_EF, None, 9)])
        q, cls = qstate(env)
        xs = xstats(q)
        if xs["flows_active"] != 2:
            diag(f"attempt {attempt}: both sockets hashed to one flow "
                 f"bucket (flows_active {xs['flows_active']}), again")
            continue
        diag(f"after 12 more parallel: local queued {cls[LOC]['qlen']} "
             f"dropped {cls[LOC]['drops']}, parallel queued "
             f"{cls[PAR]['qlen']} dropped {cls[PAR]['drops']}, "
             f"drop_local_evicted {xs['drop_local_evicted']}, "
             f"drop_parallel_full {xs['drop_parallel_full']}")
        check_eq((cls[LOC]["qlen"], cls[LOC]["drops"]), (0, 15),
                 "local (queued, dropped)")
        check_eq((cls[PAR]["qlen"], cls[PAR]["drops"]), (20, 2),
                 "parallel (queued, dropped)")
        check_eq((xs["drop_local_evicted"], xs["drop_parallel_full"],
                  xs["drop_local_full"], xs["drop_flow_limit"]),
                 (15, 2, 0, 0),
                 "xstats (local_evicted, parallel_full, local_full, "
                 "flow_limit)")
        # Now the qdisc is full of parallel packets: a local one is refused.
        send(env, [(3, 100, None, None, 9)])
        q, cls = qstate(env)
        xs = xstats(q)
        check_eq((cls[LOC]["qlen"], cls[LOC]["drops"], xs["drop_local_full"]),
                 (0, 18, 3), "local refused when full (queued, dropped, "
                 "drop_local_full)")
        check_eq(q["drops"], 20, "qdisc drops")
        return
    raise AssertionError("flow hash collisions in 3 attempts")


def t_flow_limit(env):
    for attempt in range(1, 4):
        fresh(env, "limit", "100", "flow-limit", "5", "rate", "8bit",
              "burst", "0")
        send(env, [(1, 200, None, None, 9)])
        send(env, [(8, 100, TOS_EF, None, 9)])		# one flow: 3 over
        q, cls = qstate(env)
        xs = xstats(q)
        check_eq((cls[PAR]["qlen"], cls[PAR]["drops"], xs["drop_flow_limit"]),
                 (5, 3, 3), "parallel (queued, dropped, drop_flow_limit)")
        send(env, [(3, 100, TOS_EF, None, 9)])		# another flow
        q, cls = qstate(env)
        xs = xstats(q)
        if xs["flows_active"] != 2:
            diag(f"attempt {attempt}: both sockets hashed to one flow "
                 f"bucket, again")
            continue
        check_eq((cls[PAR]["qlen"], cls[PAR]["drops"], xs["drop_flow_limit"]),
                 (8, 3, 3), "second flow not limited by the first")
        check_eq((xs["drop_parallel_full"], xs["drop_local_evicted"],
                  cls[LOC]["drops"]), (0, 0, 0), "other drops")
        diag(f"flow-limit 5: 8 packets of one flow -> 5 queued, "
             f"drop_flow_limit {xs['drop_flow_limit']}; a second flow "
             f"queued 3")
        return
    raise AssertionError("flow hash collisions in 3 attempts")


def del_root(env):
    tc(env.a, "qdisc", "del", "dev", env.dev, "root", check=False)


def main():
    suite = ktap.Suite("parq_counters")
    suite.case("DSCP classification", t_dscp)
    suite.case("SO_PRIORITY classification", t_priority)
    suite.case("SO_PRIORITY picks no class at handle 0", t_priority_handle0)
    suite.case("u32 filters", t_u32)
    suite.case("flower filters", t_flower)
    suite.case("matchall filters", t_matchall)
    suite.case("bpf filters", t_bpf)
    suite.case("filter to class 1:7 counts unknown_class", t_unknown_class)
    suite.case("xstats in tc -s -j and text", t_xstats_json)
    suite.case("sojourn times by class", t_sojourn)
    suite.case("limit evicts local before parallel", t_limit_evicts_local)
    suite.case("flow-limit drops", t_flow_limit)
    return lab.run(suite, "cnt", before_kmsg=del_root)


if __name__ == "__main__":
    sys.exit(main())
