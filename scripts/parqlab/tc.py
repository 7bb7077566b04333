"""tc(8) helpers: run tc in a namespace with the repository's q_parq.so
(parqlab sets TC_LIB_DIR), parse tc -j output, snapshot configuration and
counters.

    r = tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq")
    q = parq_qdisc(ns, dev)               # dict from tc -s -j qdisc show
    cls = classes(ns, dev)                # {"1:1": {...}, "1:2": {...}}
"""
import json
import os
import re

from . import uapi
from .netns import run
from .rtnl import Rtnl


class TcError(RuntimeError):
    def __init__(self, argv, proc):
        self.proc = proc
        super().__init__(f"tc {' '.join(argv)}: exit {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()}")


def tc(ns, *args, check=True, timeout=30):
    """Run 'tc ARGS' in namespace @ns (a Netns or None for the current
    one).  Returns the CompletedProcess; raises TcError if @check and tc
    failed."""
    argv = [str(a) for a in args]
    full = ["tc"] + argv
    if ns is not None:
        full = ns.argv(full)
    p = run(full, timeout=timeout, check=False, env=os.environ.copy())
    if check and p.returncode != 0:
        raise TcError(argv, p)
    return p


def tc_json(ns, *args, timeout=30):
    """tc -j ARGS parsed; raises ValueError if the output is not JSON."""
    p = tc(ns, "-j", *args, timeout=timeout)
    try:
        return json.loads(p.stdout or "[]")
    except json.JSONDecodeError as e:
        raise ValueError(f"tc -j {' '.join(map(str, args))}: invalid JSON "
                         f"({e}): {p.stdout[:400]!r}") from None


def qdiscs(ns, dev, stats=True):
    args = (["-s"] if stats else []) + ["qdisc", "show", "dev", dev]
    return tc_json(ns, *args)


def root_qdisc(ns, dev, stats=True):
    for q in qdiscs(ns, dev, stats):
        if q.get("root"):
            return q
    return None


def parq_qdisc(ns, dev, stats=True):
    """The parq qdisc of @dev (dict), or None."""
    for q in qdiscs(ns, dev, stats):
        if q.get("kind") == "parq":
            return q
    return None


def sojourn(before, after, cls="parallel"):
    """The sojourn times in parq of class @cls ("parallel" or "local")
    between two readings of parq_qdisc(): (packets, mean ns, p99 bound
    ns), the bound being that of the power-of-two bucket that holds the
    99th percentile (None in the last bucket, which has none; 0 packets:
    (0, 0, 0))."""
    key = f"{cls}_sojourn"
    hist = [a - b for a, b in zip(after[f"{key}_hist"],
                                  before[f"{key}_hist"])]
    pkts = sum(hist)
    if not pkts:
        return 0, 0, 0
    mean = (after[f"{key}_sum"] - before[f"{key}_sum"]) / pkts
    seen, want = 0, 0.99 * pkts
    for b, n in enumerate(hist):
        seen += n
        if seen >= want:
            break
    last = b == uapi.PARQ_SOJOURN_BUCKETS - 1
    return pkts, mean, None if last else 1 << (uapi.PARQ_SOJOURN_SHIFT +
                                               b + 1)


def with_sojourn(ns, dev, run, cls="parallel"):
    """run()'s value, and sojourn() of class @cls in the parq qdisc of
    @dev over the call (None when @dev has no parq)."""
    before = parq_qdisc(ns, dev)
    value = run()
    if before is None:
        return value, None
    return value, sojourn(before, parq_qdisc(ns, dev), cls)


def classes(ns, dev, stats=True):
    """{classid: class dict} with exact counters.  tc 6.1 has no JSON
    output for "class show" and rounds the backlog in its text, so the
    classes are dumped over rtnetlink; the keys are those of
    tc -s -j qdisc show (bytes, packets, drops, overlimits, requeues,
    backlog, qlen) plus "class" (the kind) and "handle"."""
    with Rtnl(ns) as nl:
        out = {c["handle"]: c for c in nl.classes(nl.ifindex(dev))}
    if not stats:
        for c in out.values():
            for k in STAT_KEYS + ("xstats",):
                c.pop(k, None)
    return out


STAT_KEYS = ("bytes", "packets", "drops", "overlimits", "requeues",
             "backlog", "qlen")


def class_stats(ns, dev):
    """{classid: {bytes, packets, drops, qlen, backlog, ...}} (numbers)."""
    return {cid: {k: c[k] for k in STAT_KEYS if k in c}
            for cid, c in classes(ns, dev).items()}


_CLASS_LINE = re.compile(r"^class (\S+) (\S+) (root|parent \S+)")
_SENT = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), "
                   r"overlimits (\d+) requeues (\d+)\)")


def classes_text(ns, dev, stats=True):
    """tc [-s] class show, parsed: {classid: {"class", "root"/"parent",
    and with stats bytes, packets, drops, overlimits, requeues}}."""
    args = (["-s"] if stats else []) + ["class", "show", "dev", dev]
    out = {}
    cur = None
    for line in tc(ns, *args).stdout.splitlines():
        m = _CLASS_LINE.match(line)
        if m:
            cur = {"class": m.group(1)}
            if m.group(3) == "root":
                cur["root"] = True
            else:
                cur["parent"] = m.group(3).split()[1]
            out[m.group(2)] = cur
            continue
        m = _SENT.search(line)
        if m and cur is not None:
            for k, v in zip(("bytes", "packets", "drops", "overlimits",
                             "requeues"), m.groups()):
                cur[k] = int(v)
    return out


def snapshot(ns, dev):
    """Everything observable about the qdisc tree of @dev: qdisc list with
    options and statistics, class list with statistics."""
    return {"qdiscs": qdiscs(ns, dev, stats=True),
            "classes": classes(ns, dev, stats=True)}


def diff(a, b, path=""):
    """List of 'path: a != b' strings for differing leaves."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            out += diff(a.get(k, "<missing>"), b.get(k, "<missing>"),
                        f"{path}.{k}" if path else str(k))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
    elif a != b:
        out.append(f"{path}: {a!r} != {b!r}")
    return out


def filters(ns, dev, parent="1:"):
    return tc_json(ns, "filter", "show", "dev", dev, "parent", parent)
