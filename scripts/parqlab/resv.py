"""Reserved flows (classes <handle>:16 and up): class option and xstats
parsing, tc -batch, packets sent straight into a class, slab accounting.

    from parqlab import resv
    resv.minor(0x16)                       # "16": tc minors are hexadecimal
    cls = resv.classes(ns, dev)            # {"1:16": {..., "xs": {...}}}
    secs, p = resv.tc_batch(ns, lines)     # tc -batch, timed
    resv.send_to_class(ns, ip, port, payload, count, 0x16)

Reserved class xstats (struct tc_parq_class_xstats) are decoded from the raw
TCA_STATS_APP bytes of the rtnetlink class dump, with the layout read from
kmod/include/uapi/linux/parq.h.
"""
import functools
import os
import re
import socket
import struct
import tempfile
import time

from . import uapi
from . import tc as tclib
from .netns import run
from .traffic import UDP_OVERHEAD, udp_socket

RESV_MIN = uapi.PARQ_RESV_MINOR_MIN
RESV_MAX = 0xFFFF		# minors are 16 bits: at most 65514 classes
SO_SNDBUFFORCE = 32

_CTYPES = {"__u8": "B", "__u16": "H", "__u32": "I", "__u64": "Q",
           "__s32": "i", "__s64": "q"}
_SIZES = {f: struct.calcsize("=" + f) for f in _CTYPES.values()}


def formatted_errors(release=None):
    """Does the running kernel carry parq's numbers in its refusals?
    Formatted extack messages came in Linux 6.2; older kernels give a
    plain text (kmod/parq_compat.h, PARQ_SET_ERR_FMT)."""
    m = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
    return (int(m.group(1)), int(m.group(2))) >= (6, 2)


def refusal(req, free, cap):
    """The kernel's text refusing a reservation of @req bit/s with @free
    of @cap bit/s reservable free."""
    if formatted_errors():
        return f"parq: {req} bit/s refused: {free} free of {cap}"
    return ("parq: reservation refused: more than is free of the "
            "reservable bandwidth")


def below_reserved(cap, reserved):
    """The kernel's text refusing a qdisc change that would bring the
    reservable bandwidth to @cap bit/s, below the @reserved bit/s."""
    if formatted_errors():
        return f"parq: {cap} bit/s reservable is below the {reserved} reserved"
    return ("parq: the reservable bandwidth (linkrate x reservable) would "
            "fall below what is already reserved")


def minor(m):
    """tc's spelling of minor @m (hexadecimal, no 0x)."""
    return f"{m:x}"


def classid(m, major=1):
    return f"{major:x}:{m:x}"


@functools.lru_cache(maxsize=None)
def struct_layout(name):
    """[(field, struct format char, offset)] and size of struct @name in
    parq.h, with natural alignment (as the C compiler lays it out)."""
    src = re.sub(r"/\*.*?\*/", " ", open(uapi.HEADER).read(), flags=re.S)
    m = re.search(r"struct\s+" + name + r"\s*\{(.*?)\}", src, flags=re.S)
    if not m:
        raise KeyError(f"struct {name} not in {uapi.HEADER}")
    out, off, align = [], 0, 1  # -> a tuple: cached
    for ctype, field in re.findall(r"(__[us]\d+)\s+(\w+)\s*;", m.group(1)):
        fmt = _CTYPES[ctype]
        size = struct.calcsize("=" + fmt)
        off = (off + size - 1) // size * size
        out.append((field, fmt, off))
        off += size
        align = max(align, size)
    return tuple(out), (off + align - 1) // align * align


def decode(name, raw):
    """Struct @name decoded from @raw (fields past its end are absent)."""
    layout, _ = struct_layout(name)
    out = {}
    for field, fmt, off in layout:
        if off + _SIZES[fmt] <= len(raw):
            out[field], = struct.unpack_from("=" + fmt, raw, off)
    return out


def classes(ns, dev):
    """tclib.classes() with the reserved classes' xstats decoded into "xs"
    (tc_parq_class_xstats fields)."""
    out = tclib.classes(ns, dev)
    for c in out.values():
        raw = c.get("xstats")
        if raw and len(raw) >= 4 and \
                struct.unpack_from("=I", raw)[0] & uapi.PARQ_XSTATS_CLASS:
            c["xs"] = decode("tc_parq_class_xstats", raw)
    return out


def qdisc(ns, dev):
    """The parq qdisc of @dev from tc -s -j (options, counters, xstats)."""
    q = tclib.parq_qdisc(ns, dev)
    if q is None:
        raise AssertionError(f"no parq qdisc on {dev}")
    return q


def wait_qlen(ns, dev, want=0, timeout=10.0):
    """Wait until the parq qdisc of @dev holds @want packets; returns the
    qdisc dict (the caller checks qlen: on timeout it is what it was)."""
    deadline = time.monotonic() + timeout
    while True:
        q = qdisc(ns, dev)
        if q["qlen"] == want or time.monotonic() > deadline:
            return q
        time.sleep(0.05)


# --- tc -batch ---------------------------------------------------------------

def tc_batch(ns, lines, timeout=600, force=False):
    """Run tc -batch with @lines (strings, one tc command each) in @ns;
    returns (seconds, CompletedProcess).  Raises tclib.TcError if tc
    failed.  The batch file is written before the clock starts."""
    fd, path = tempfile.mkstemp(prefix="parq-batch-", suffix=".tc")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")
        argv = ["tc"] + (["-force"] if force else []) + ["-batch", path]
        full = ns.argv(argv) if ns is not None else argv
        t0 = time.monotonic()
        p = run(full, timeout=timeout, check=False, env=os.environ.copy())
        secs = time.monotonic() - t0
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise tclib.TcError(argv, p)
    return secs, p


def class_add_lines(dev, minors, spec, major=1, verb="add"):
    """tc -batch lines adding (or with @verb changing) classes @minors of
    @dev; @spec: the parq class parameters, e.g. "rate 1mbit"."""
    return [f"class {verb} dev {dev} parent {major:x}: classid "
            f"{major:x}:{m:x} parq {spec}" for m in minors]


def class_del_lines(dev, minors, major=1):
    return [f"class del dev {dev} classid {major:x}:{m:x}" for m in minors]


# --- packets into a class ------------------------------------------------

def prio_of(m, major=1):
    """skb->priority that parq classifies into class major:m."""
    return (major << 16) | m


def send_to_class(ns, dst, port, payload, count, m, major=1, sock=None):
    """Send @count UDP datagrams of @payload bytes with SO_PRIORITY naming
    class major:@m; returns the L2 length of one."""
    s = sock or udp_socket(ns, priority=prio_of(m, major))
    try:
        if sock is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY,
                         prio_of(m, major))
        data = bytes(payload)
        for _ in range(count):
            s.sendto(data, (dst, port))
    finally:
        if sock is None:
            s.close()
    return payload + UDP_OVERHEAD


def big_sndbuf(sock, size=1 << 28):
    """Let @sock hold many queued packets (root: SO_SNDBUFFORCE)."""
    sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, size)


# --- memory ------------------------------------------------------------

def shrink_slabs():
    """Ask SLUB to release the empty and per-cpu partial slabs of every
    cache (so that active object counts mean objects in use)."""
    base = "/sys/kernel/slab"
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(base, name, "shrink")
        try:
            with open(path, "w") as f:
                f.write("1")
        except OSError:
            pass


def slab_active():
    """{cache: active objects} from /proc/slabinfo."""
    out = {}
    with open("/proc/slabinfo") as f:
        for line in f.readlines()[2:]:
            fields = line.split()
            out[fields[0]] = int(fields[1])
    return out


def meminfo():
    """{key: bytes} from /proc/meminfo."""
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, val = line.split(":", 1)
            parts = val.split()
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


# A debug kernel's own records of other objects, freed later by its
# workers (object debugging, kmemleak): never a cache parq allocates from.
DEBUG_CACHES = ("debug_objects_cache", "kmemleak_object",
                "kmemleak_scan_area")


def grown_caches(before, after, at_least):
    """Caches whose active objects grew by @at_least or more, biggest
    growth first: [(cache, growth)].  A debug kernel's bookkeeping caches
    (DEBUG_CACHES) are left out."""
    out = [(k, after.get(k, 0) - v) for k, v in before.items()
           if k not in DEBUG_CACHES]
    return sorted([x for x in out if x[1] >= at_least], key=lambda x: -x[1])
