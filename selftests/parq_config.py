#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq configuration: autoload, defaults, every parameter, change, replace,
delete, the fixed classes, help; and rejected input, through tc and through
raw netlink, which must leave the running configuration, the queued packets
and every counter exactly as they were.

Topology: namespaces A and B joined by one veth pair; parq is the root qdisc
of A's veth.  For the rejected-input cases parq runs with "rate 8bit"
(1 byte/s): the first packet leaves at once and arms the shaper, the next
ones stay queued for minutes, so a change that touched the queues or the
counters would show.
"""
import re
import sys

from parqlab import ktap, lab, module, params, uapi
from parqlab import rtnl as nl
from parqlab import tc as tclib
from parqlab.ktap import Skip, check, check_eq, defer, diag
from parqlab.netns import run
from parqlab.tc import tc
from parqlab.traffic import TOS_EF, udp_burst

DISCARD_PORT = 9

# As tc -j prints them, from the parameter table.
DEFAULTS = params.json_defaults()
KNOWN_KEYS = set(DEFAULTS)

# A configuration where no value is a default, so that a reset would show.
BASE_ARGS = ["threshold", "7", "unit", "packets", "rate", "8bit",
             "overhead", "4", "limit", "500", "flow-limit", "50",
             "dscp-parallel", "AF41,EF", "default", "local",
             "dscp-mark", "AF41", "burst", "1500"]
BASE_OPTS = {
    "threshold": 7, "unit": "packets", "rate": 1, "overhead": 4,
    "split_gso": "auto", "limit": 500, "flow_limit": 50,
    "dscp_parallel": ["AF41", "EF"], "default": "local", "dscp_mark": "AF41",
    "burst": 1500,
}


def options(env):
    q = tclib.parq_qdisc(env.a, env.dev, stats=False)
    check(q is not None, f"no parq qdisc on {env.dev}")
    return q.get("options", {})


def check_options(env, want):
    got = options(env)
    for k, v in want.items():
        check_eq(got.get(k, "<missing>"), v, f"option {k}")
    extra = set(got) - KNOWN_KEYS
    if extra:
        diag(f"note: options this test does not know: {sorted(extra)}")
    return got


def effective(env):
    """(effective_linkrate, effective_split_gso): what auto resolves to."""
    q = tclib.parq_qdisc(env.a, env.dev)
    return q.get("effective_linkrate"), q.get("effective_split_gso")


def link_speed(env):
    """The veth's speed in bytes/s as ethtool reports it, 0 if none."""
    r = env.a.run(["ethtool", env.dev], check=False)
    m = re.search(r"Speed: (\d+)Mb/s", r.stdout)
    return int(m.group(1)) * 1000000 // 8 if m else 0


def del_root(env, ns=None, dev=None):
    tc(ns or env.a, "qdisc", "del", "dev", dev or env.dev, "root",
       check=False)


def add_parq(env, *args, verb="add"):
    tc(env.a, "qdisc", verb, "dev", env.dev, "root", "handle", "1:", "parq",
       *args)


def loaded_check():
    if not module.loaded():
        module.ensure_loaded()


# --- configuration --------------------------------------------------------

def t_autoload(env):
    if not module.installed():
        raise Skip("module not installed")
    if module.loaded():
        users = module.refcnt()
        if users:
            raise Skip(f"sch_parq is in use ({users} qdiscs), cannot unload")
        r = module.rmmod()
        check(r.returncode == 0, f"rmmod sch_parq: {r.stderr.strip()}")
    check(not module.loaded(), "sch_parq still loaded after rmmod")
    del_root(env)
    add_parq(env)
    lsmod = run(["lsmod"]).stdout.split("\n")
    check(any(line.split()[:1] == ["sch_parq"] for line in lsmod),
          "tc qdisc add ... parq did not load sch_parq (lsmod)")
    diag(f"autoloaded {module.installed_path()}")
    del_root(env)


def t_defaults(env):
    a, dev = env.a, env.dev
    loaded_check()
    del_root(env)
    add_parq(env)
    check_options(env, DEFAULTS)
    # linkrate auto, no rate: admission control divides the link speed;
    # split-gso auto, no shaper: off.
    check_eq(effective(env), (link_speed(env), 0),
             "effective (linkrate, split-gso): the link speed, off")
    q = tclib.parq_qdisc(a, dev, stats=False)
    check_eq(q.get("handle"), "1:", "handle")
    check(q.get("root") is True, "parq is not the root qdisc")


def t_every_parameter(env):
    a, dev = env.a, env.dev
    del_root(env)
    add_parq(env, "threshold", "9", "unit", "packets", "rate", "123mbit",
             "overhead", "-4", "no-split-gso", "limit", "777",
             "flow-limit", "77", "dscp-parallel", "AF41,EF,7",
             "default", "parallel", "linkrate", "1gbit", "reservable", "50",
             "dscp-mark", "7", "burst", "0")
    check_options(env, {"threshold": 9, "unit": "packets",
                        "rate": 123000000 // 8, "overhead": -4,
                        "split_gso": "off", "limit": 777, "flow_limit": 77,
                        "dscp_parallel": [7, "AF41", "EF"],
                        "default": "parallel", "linkrate": 10**9 // 8,
                        "reservable": 50, "dscp_mark": 7, "burst": 0})
    del_root(env)
    # linkrate auto with a rate: admission control divides the rate.
    add_parq(env, "threshold", "inf", "rate", "10gbit", "split-gso",
             "dscp-parallel", "none", "overhead", "256")
    check_options(env, dict(DEFAULTS, threshold="inf", rate=10**10 // 8,
                            split_gso="on", dscp_parallel=[], overhead=256))
    check_eq(effective(env), (10**10 // 8, 1),
             "effective (linkrate, split-gso): the rate, on")
    # split-gso follows the shaper unless forced: on with a rate ...
    del_root(env)
    add_parq(env, "rate", "1gbit")
    check_options(env, dict(DEFAULTS, rate=10**9 // 8))
    check_eq(effective(env), (10**9 // 8, 2),
             "effective (linkrate, split-gso: local only) with rate 1gbit")
    # ... and back off when the shaper is turned off.
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "rate", "unlimited")
    check_options(env, DEFAULTS)
    check_eq(effective(env), (link_speed(env), 0),
             "effective (linkrate, split-gso) without a shaper")
    # Forced on and back to auto.
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "split-gso")
    check_eq((options(env)["split_gso"], effective(env)[1]), ("on", 1),
             "split-gso forced on")
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "split-gso", "auto")
    check_eq((options(env)["split_gso"], effective(env)[1]), ("auto", 0),
             "split-gso auto again")


# Configurations whose dumps must parse back unchanged; together they give
# every parameter a value other than its default, "auto" included.
ROUND_TRIP = [
    [],
    BASE_ARGS,
    ["threshold", "9", "unit", "packets", "rate", "123mbit", "overhead", "-4",
     "no-split-gso", "limit", "777", "flow-limit", "77", "dscp-parallel",
     "AF41,EF,7", "default", "parallel", "linkrate", "1gbit", "reservable",
     "50", "dscp-mark", "7", "burst", "0"],
    ["threshold", "inf", "rate", "10gbit", "split-gso", "dscp-parallel",
     "none", "overhead", "256", "reservable", "1", "burst", "16777216"],
    ["split-gso", "auto", "linkrate", "auto", "rate", "1mbit"],
]


def qdisc_text(ns, dev):
    """The parameters tc qdisc show prints for the parq root of @dev."""
    out = tc(ns, "qdisc", "show", "dev", dev, "root").stdout
    m = re.search(r"qdisc parq \S+ root refcnt \d+ (.*)", out)
    check(m is not None, f"no parq root in {out!r}")
    return m.group(1).split()


def t_round_trip(env):
    """tc qdisc show's output, fed back to tc qdisc change (and to tc
    qdisc add on a fresh qdisc), is accepted and changes nothing, for every
    parameter, auto values included, also on a device with no link speed
    (where linkrate auto resolves to nothing)."""
    a = env.a
    keys = sorted(p.key for p in params.TABLE.values())
    covered = set()
    a.run(["ip", "link", "add", "parqrt0", "type", "dummy"])
    defer(a.run, ["ip", "link", "del", "parqrt0"], check=False)
    defer(del_root, env, dev="parqrt0")
    a.run(["ip", "link", "set", "parqrt0", "up"])
    for dev in (env.dev, "parqrt0"):
        for args in ROUND_TRIP:
            del_root(env, dev=dev)
            tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:",
               "parq", *args)
            before = tclib.parq_qdisc(a, dev, stats=False)["options"]
            words = qdisc_text(a, dev)
            what = f"{dev}: {' '.join(args) or 'defaults'}"
            r = tc(a, "qdisc", "change", "dev", dev, "root", "parq",
                   *words, check=False)
            check(r.returncode == 0, f"{what}: tc qdisc change "
                  f"{' '.join(words)}: {r.stderr.strip()}")
            check_eq(tclib.parq_qdisc(a, dev, stats=False)["options"],
                     before, f"{what}: options after the change")
            check_eq(qdisc_text(a, dev), words,
                     f"{what}: tc qdisc show after the change")
            del_root(env, dev=dev)
            tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:",
               "parq", *words)
            check_eq(tclib.parq_qdisc(a, dev, stats=False)["options"],
                     before, f"{what}: options of a new qdisc")
            for k in keys:
                if k in before and before[k] != DEFAULTS.get(k):
                    covered.add(k)
            diag(f"{what}: {' '.join(words)}")
    check_eq(sorted(set(keys) - covered), [],
             "parameters no configuration set to a value other than "
             "its default")


def t_ops_locked(env):
    """parq on a device whose operations take its instance lock (dummy
    since 6.15): tc holds that lock around the qdisc's and the class's init
    and change, and the link speed is read under it, not by taking it again
    (since 7.2 __ethtool_get_link_ksettings() does, and never returns, with
    RTNL held): tc's qdisc and class commands, and mq making its children
    with default_qdisc parq.  Before 6.15 the same on a plain device."""
    a, dev = env.a, "parqol0"
    a.run(["ip", "link", "add", dev, "numtxqueues", "4", "txqueuelen",
           "1000", "type", "dummy"])
    defer(a.run, ["ip", "link", "del", dev], check=False)
    defer(del_root, env, dev=dev)
    a.run(["ip", "link", "set", dev, "up"])
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq")
    check_eq(tclib.parq_qdisc(a, dev)["effective_linkrate"], 0,
             "effective linkrate of a device without a link speed")
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "threshold",
       "9")
    r = tc(a, "class", "add", "dev", dev, "parent", "1:", "classid",
           "1:16", "parq", "rate", "1mbit", check=False)
    check(r.returncode != 0 and "no link rate known" in r.stderr,
          f"a reservation without a link rate: {r.stderr.strip()}")
    del_root(env, dev=dev)
    tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "mq")
    for i in range(1, 5):
        tc(a, "qdisc", "add", "dev", dev, "parent", f"1:{i:x}",
           "handle", f"{i + 1:x}:", "parq")
    check_eq(len([q for q in tclib.qdiscs(a, dev)
                  if q.get("kind") == "parq"]), 4,
             "parq children of mq")
    # Children that mq's own init makes, with default_qdisc parq.
    del_root(env, dev=dev)
    path = "/proc/sys/net/core/default_qdisc"
    with open(path) as f:
        old = f.read().strip()
    try:
        with open(path, "w") as f:
            f.write("parq")
        tc(a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "mq")
    finally:
        with open(path, "w") as f:
            f.write(old)
    kids = [q for q in tclib.qdiscs(a, dev) if q.get("kind") == "parq"]
    check_eq(len(kids), 4, "default parq children of mq")


def t_change_subset(env):
    a, dev = env.a, env.dev
    del_root(env)
    add_parq(env, *BASE_ARGS)
    check_options(env, BASE_OPTS)
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "threshold", "3",
       "limit", "900")
    check_options(env, dict(BASE_OPTS, threshold=3, limit=900))
    tc(a, "qdisc", "change", "dev", dev, "root", "parq", "unit", "bytes",
       "default", "parallel", "dscp-parallel", "CS1")
    check_options(env, dict(BASE_OPTS, threshold=3, limit=900, unit="bytes",
                            default="parallel", dscp_parallel=["CS1"]))
    # An empty change changes nothing.
    tc(a, "qdisc", "change", "dev", dev, "root", "parq")
    check_options(env, dict(BASE_OPTS, threshold=3, limit=900, unit="bytes",
                            default="parallel", dscp_parallel=["CS1"]))


def t_replace(env):
    a, dev = env.a, env.dev
    del_root(env)
    # replace creates when there is nothing ...
    add_parq(env, "threshold", "5", verb="replace")
    check_options(env, dict(DEFAULTS, threshold=5))
    # ... on a parq qdisc it changes only what is given (as for fq) ...
    add_parq(env, "limit", "2000", verb="replace")
    check_options(env, dict(DEFAULTS, threshold=5, limit=2000))
    # ... and another kind replaces parq altogether (without a handle: the
    # kernel refuses a kind change of handle 1: as "Invalid qdisc name").
    tc(a, "qdisc", "replace", "dev", dev, "root", "pfifo")
    check_eq(tclib.root_qdisc(a, dev)["kind"], "pfifo", "root kind")
    check(tclib.parq_qdisc(a, dev) is None, "parq left after replace")
    add_parq(env, verb="replace")
    check_options(env, DEFAULTS)


def t_delete(env):
    a, dev = env.a, env.dev
    del_root(env)
    add_parq(env)
    tc(a, "qdisc", "del", "dev", dev, "root")
    check(tclib.parq_qdisc(a, dev) is None, "parq still there after del")
    r = tc(a, "qdisc", "del", "dev", dev, "root", check=False)
    check(r.returncode != 0, "deleting a missing root qdisc succeeded")


def t_classes(env):
    a, dev = env.a, env.dev
    del_root(env)
    add_parq(env)
    cls = tclib.classes(a, dev, stats=False)
    check_eq(sorted(cls), ["1:1", "1:2"], "classes")
    for cid in cls:
        check_eq(cls[cid].get("class"), "parq", f"class {cid} kind")
        check(cls[cid].get("root") is True, f"class {cid} is not at root")


def t_help(env):
    a, dev = env.a, env.dev
    del_root(env)
    r = tc(a, "qdisc", "add", "dev", dev, "root", "parq", "help",
           check=False)
    check(r.returncode != 0, "tc ... parq help exited 0")
    text = r.stderr + r.stdout
    check("Usage" in text, f"no usage text: {text!r}")
    for kw in ("threshold", "unit", "rate", "overhead", "split-gso",
               "limit", "flow-limit", "dscp-parallel", "default"):
        check(kw in text, f"usage does not mention {kw}")
    check(tclib.parq_qdisc(a, dev) is None, "help created a qdisc")


# --- rejected input: nothing changes -------------------------------------

def queued_fixture(env):
    """Fresh parq (BASE_ARGS, 1 byte/s) with packets of both classes queued.
    Returns the snapshot of everything."""
    a, dev, topo = env.a, env.dev, env.topo
    loaded_check()
    del_root(env)
    add_parq(env, *BASE_ARGS)
    ip = topo.ip_b()
    # The first packet leaves at once and closes the shaper for 242 s.
    udp_burst(a, ip, DISCARD_PORT, 200, 1)
    udp_burst(a, ip, DISCARD_PORT, 200, 3)
    udp_burst(a, ip, DISCARD_PORT, 100, 4, tos=TOS_EF)
    snap = tclib.snapshot(a, dev)
    cls = snap["classes"]
    check_eq((cls["1:1"]["qlen"], cls["1:2"]["qlen"]), (4, 3),
             "queued packets (parallel, local)")
    return snap


def check_unchanged(env, before, what):
    after = tclib.snapshot(env.a, env.dev)
    d = tclib.diff(before, after)
    check(not d, f"{what} changed the qdisc: " + "; ".join(d[:8]))


def reject_case(args, names, cmd=("qdisc", "change")):
    def fn(env):
        before = queued_fixture(env)
        argv = list(cmd) + ["dev", env.dev, "root", "parq"] + list(args)
        r = tc(env.a, *argv, check=False)
        msg = (r.stderr + r.stdout).strip()
        diag(f"tc {' '.join(argv)} -> exit {r.returncode}: "
             f"{msg.splitlines()[0] if msg else ''}")
        check(r.returncode != 0, f"tc {' '.join(argv)} succeeded")
        check(any(n in msg for n in names),
              f"error message does not name {names}: {msg!r}")
        check_unchanged(env, before, f"rejected 'tc {' '.join(argv)}'")
    return fn


def reject_tc(argv, names, msg_since=None):
    """A rejected tc command other than qdisc change; "@" in @argv stands
    for the device.  @msg_since: (major, minor) of the first kernel that
    gives the operation an extack; on older ones the refusal is checked
    and the case is skipped for its message."""
    def fn(env):
        ns, dev = env.a, env.dev
        args = [dev if a == "@" else a for a in argv]
        before = queued_fixture(env)
        r = tc(ns, *args, check=False)
        msg = (r.stderr + r.stdout).strip()
        diag(f"tc {' '.join(args)} -> exit {r.returncode}: "
             f"{msg.splitlines()[0] if msg else ''}")
        check(r.returncode != 0, f"tc {' '.join(args)} succeeded")
        check_unchanged(env, before, f"rejected 'tc {' '.join(args)}'")
        check(not tclib.filters(ns, dev), "a filter was added")
        if msg_since and ktap.kernel_older(*msg_since):
            raise Skip("refused, but this kernel gives the operation no "
                       "extack before %d.%d: no message to check" % msg_since)
        check(any(n in msg for n in names),
              f"error message does not say {names}: {msg!r}")
    return fn


# --- raw netlink ----------------------------------------------------------

T = uapi


def opts(*attrs, nested_flag=True):
    return nl.nest(nl.TCA_OPTIONS, *attrs, nested_flag=nested_flag)


def truncated_opts():
    # TCA_OPTIONS holds 6 bytes: an attribute header claiming 8 bytes
    # (TCA_PARQ_THRESHOLD, u32) followed by only 2 bytes of payload.
    inner = nl.nla(T.TCA_PARQ_THRESHOLD, b"\x01\x00", length=8)[:6]
    return nl.nla(nl.TCA_OPTIONS | nl.NLA_F_NESTED, inner)


RAW_CASES = [
    # name, TCA_OPTIONS bytes, word the extack message must contain
    # (None: a structural error, any message)
    ("threshold 0",
     opts(nl.nla_u32(T.TCA_PARQ_THRESHOLD, 0)), "threshold"),
    ("threshold INF+1",
     opts(nl.nla_u32(T.TCA_PARQ_THRESHOLD, T.PARQ_THRESHOLD_INF + 1)),
     "threshold"),
    ("rate 0", opts(nl.nla_u64(T.TCA_PARQ_RATE, 0)), "rate"),
    ("rate UNLIMITED+1",
     opts(nl.nla_u64(T.TCA_PARQ_RATE, T.PARQ_RATE_UNLIMITED + 1)), "rate"),
    ("unit 7", opts(nl.nla_u8(T.TCA_PARQ_UNIT, 7)), "unit"),
    ("default class 3", opts(nl.nla_u8(T.TCA_PARQ_DEFAULT_CLASS, 3)),
     "default"),
    ("dscp-mark 65", opts(nl.nla_u8(T.TCA_PARQ_DSCP_MARK,
                                    T.PARQ_DSCP_MARK_OFF + 1)), "dscp-mark"),
    ("burst MAX+1", opts(nl.nla_u32(T.TCA_PARQ_BURST, T.PARQ_BURST_MAX + 1)),
     "burst"),
    ("threshold with 8-byte payload",
     opts(nl.nla_u64(T.TCA_PARQ_THRESHOLD, 4)), "threshold"),
    ("threshold with 2-byte payload",
     opts(nl.nla(T.TCA_PARQ_THRESHOLD, b"\x04\x00")), "threshold"),
    ("unknown attribute TCA_PARQ_MAX+1",
     opts(nl.nla_u32(T.TCA_PARQ_MAX + 1, 1)), None),
    ("TCA_OPTIONS without NLA_F_NESTED",
     opts(nl.nla_u32(T.TCA_PARQ_THRESHOLD, 5), nested_flag=False), None),
    ("truncated nested attribute", truncated_opts(), None),
]

_TYPE_RANGE = {"u8": (0, 2**8 - 1), "u32": (0, 2**32 - 1),
               "s32": (-2**31, 2**31 - 1), "u64": (0, 2**64 - 1)}
_ENCODE = {"u8": nl.nla_u8, "u32": nl.nla_u32, "s32": nl.nla_s32,
           "u64": nl.nla_u64}


def table_cases():
    """Each parameter just outside what its row accepts, refused with its
    row's message: the module's policy and messages are the table's."""
    cases = []
    for p in params.TABLE.values():
        tmin, tmax = _TYPE_RANGE[p.type]
        for v in (p.accept_min - 1, p.accept_max + 1):
            if tmin <= v <= tmax:
                cases.append((f"{p.keyword} {v} (table)",
                              opts(_ENCODE[p.type](p.attr, v)), p.message))
    return cases


RAW_CASES += table_cases()


def raw_case(name, options, word):
    def fn(env):
        topo = env.topo
        before = queued_fixture(env)
        with nl.Rtnl(env.a) as sock:
            res = sock.qdisc(sock.ifindex(env.dev), options, create=False)
        diag(f"change: {res.errname} extack={res.msg!r}")
        check(res.error < 0, f"raw change with {name} was accepted")
        check(res.errname in ("EINVAL", "ERANGE"),
              f"unexpected error {res.errname}")
        if word is not None:
            check(res.msg and word in res.msg,
                  f"extack message does not name {word}: {res.msg!r}")
        elif res.msg is not None:
            check(res.msg.strip() != "", "empty extack message")
        check_unchanged(env, before, f"rejected raw change ({name})")

        # The same attributes when creating: refused, nothing created.
        bdev = topo.dev_b()
        before_b = tclib.qdiscs(topo.b, bdev)
        with nl.Rtnl(topo.b) as sock:
            res = sock.qdisc(sock.ifindex(bdev), options, create=True)
        diag(f"create: {res.errname} extack={res.msg!r}")
        check(res.error < 0, f"raw create with {name} was accepted")
        if word is not None:
            check(res.msg and word in res.msg,
                  f"extack message does not name {word}: {res.msg!r}")
        check_eq(tclib.qdiscs(topo.b, bdev), before_b,
                 f"qdiscs of {bdev} after the rejected create")
    return fn


def t_raw_valid(env):
    """The hand-built messages are right: the same encoding with a valid
    value is accepted (so the rejections above are about the values)."""
    a, dev = env.a, env.dev
    loaded_check()
    del_root(env)
    add_parq(env)
    with nl.Rtnl(a) as sock:
        res = sock.qdisc(sock.ifindex(dev), opts(
            nl.nla_u32(T.TCA_PARQ_THRESHOLD, 11),
            nl.nla_u8(T.TCA_PARQ_UNIT, T.PARQ_UNIT_PACKETS),
            nl.nla_u64(T.TCA_PARQ_RATE, 12500000),
            nl.nla_s32(T.TCA_PARQ_OVERHEAD, -64),
            nl.nla_u32(T.TCA_PARQ_LIMIT, 600),
            nl.nla_u32(T.TCA_PARQ_FLOW_LIMIT, 60),
            nl.nla_u64(T.TCA_PARQ_DSCP_PARALLEL, 1 << 46),
            nl.nla_u8(T.TCA_PARQ_DEFAULT_CLASS, T.PARQ_CLASS_PARALLEL)))
    check_eq(res.error, 0, f"valid raw change refused ({res.msg})")
    check_options(env, {"threshold": 11, "unit": "packets", "rate": 12500000,
                        "overhead": -64, "split_gso": "auto", "limit": 600,
                        "flow_limit": 60, "dscp_parallel": ["EF"],
                        "default": "parallel"})
    with nl.Rtnl(a) as sock:
        res = sock.qdisc(sock.ifindex(dev), opts(
            nl.nla_u32(T.TCA_PARQ_THRESHOLD, T.PARQ_THRESHOLD_INF),
            nl.nla_u64(T.TCA_PARQ_RATE, T.PARQ_RATE_UNLIMITED)))
    check_eq(res.error, 0, f"raw change to inf/unlimited refused "
             f"({res.msg})")
    check_options(env, {"threshold": "inf", "rate": "unlimited",
                        "split_gso": "auto"})
    check_eq(effective(env)[1], 0, "effective split-gso without a shaper")


def main():
    suite = ktap.Suite("parq_config")
    suite.case("autoload", t_autoload)
    suite.case("defaults", t_defaults)
    suite.case("every parameter", t_every_parameter)
    suite.case("tc qdisc show parses back unchanged, every parameter",
               t_round_trip)
    suite.case("a device whose operations are locked", t_ops_locked)
    suite.case("change a subset", t_change_subset)
    suite.case("replace", t_replace)
    suite.case("delete", t_delete)
    suite.case("class show lists 1:1 and 1:2", t_classes)
    suite.case("help prints usage", t_help)
    rejects = [
        (["threshold", "0"], ["threshold"]),
        (["threshold", "70000"], ["threshold"]),
        (["threshold", "-1"], ["threshold"]),
        (["unit", "foo"], ["unit"]),
        (["rate", "0"], ["rate"]),
        (["rate", "10000Tbit"], ["rate"]),
        (["limit", "0"], ["limit"]),
        (["flow-limit", "0"], ["flow-limit"]),
        (["flow-limit", "501"], ["flow-limit"]),  # > limit 500
        (["limit", "49"], ["flow-limit"]),		# < flow-limit 50
        (["dscp-parallel", "FOO"], ["dscp-parallel"]),
        (["overhead", "1000"], ["overhead"]),
        (["reservable", "0"], ["reservable"]),
        (["reservable", "101"], ["reservable"]),
        (["dscp-mark", "64"], ["dscp-mark"]),
        (["dscp-mark", "CS5,EF"], ["dscp-mark"]),
        (["burst", "16777217"], ["burst"]),
        (["burst", "-1"], ["burst"]),
        (["frobnicate", "3"], ["frobnicate"]),
    ]
    for args, names in rejects:
        suite.case(f"reject {' '.join(args)}", reject_case(args, names))
    fixed = ["fixed", "cannot"]
    suite.case("reject class add 1:3 parq", reject_tc(
        ["class", "add", "dev", "@", "parent", "1:", "classid", "1:3",
         "parq"], fixed))
    suite.case("reject class add 1:3 (kernel)", reject_tc(
        ["class", "add", "dev", "@", "parent", "1:", "classid", "1:3"],
        fixed))
    suite.case("reject class change 1:1 parq", reject_tc(
        ["class", "change", "dev", "@", "parent", "1:", "classid", "1:1",
         "parq"], fixed))
    suite.case("reject class change 1:1 (kernel)", reject_tc(
        ["class", "change", "dev", "@", "parent", "1:", "classid", "1:1"],
        fixed))
    suite.case("reject class del 1:1", reject_tc(
        ["class", "del", "dev", "@", "classid", "1:1"], fixed,
        msg_since=(5, 19)))
    suite.case("reject filter on class 1:1", reject_tc(
        ["filter", "add", "dev", "@", "parent", "1:1", "protocol", "ip",
         "prio", "1", "u32", "match", "ip", "dport", "9", "0xffff",
         "flowid", "1:1"], ["attach filters to the qdisc"]))
    suite.case("raw netlink: valid encoding accepted", t_raw_valid)
    for name, options_, word in RAW_CASES:
        suite.case(f"raw netlink reject {name}",
                   raw_case(name, options_, word))

    return lab.run(suite, "cfg", tools=("tc", "ip", "ss"), load_module=False)


if __name__ == "__main__":
    sys.exit(main())
