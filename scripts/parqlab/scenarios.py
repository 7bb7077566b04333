"""The schedulers the selftests, the demo and the experiments compare.

Installers (install_pfifo, _prio, _ets, _fq_codel, _cake, _fq,
_fq_small_weights, _parq, all of them in ALL_SCHEDULERS, the two fq only on
a kernel whose fq has priority bands; and install_htb_parq): a 100 Mbit/s
bottleneck on a device, the parallel stream in a class or band of its own
where the scheduler has them, recognised by its server port (PING_PORT, a
u32 filter) or by DSCP EF.
"""
import os
import re
import struct

from . import rtnl
from . import tc as tclib
from . import traffic

RATE = "100mbit"
PING_PORT = 11111
BULK_PORT = 5201


def _under_shaper(ns, dev, rate):
    """Where a baseline goes: under an htb shaper of @rate with one class
    1:1 (the argv "parent 1:1"), or at the root when @rate is None."""
    if rate is None:
        return ["root"]
    tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
             "default", "1")
    tclib.tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid",
             "1:1", "htb", "rate", rate, "ceil", rate)
    return ["parent", "1:1"]


def _baseline(ns, dev, rate, *qdisc):
    tclib.tc(ns, "qdisc", "add", "dev", dev, *_under_shaper(ns, dev, rate),
             "handle", "10:", *qdisc)


# The parallel stream's matches: its server port, and DSCP EF (for the
# collectives of the experiments, whose ports vary).
_PING_MATCHES = (("dport", str(PING_PORT), "0xffff"),
                 ("tos", hex(traffic.TOS_EF), "0xfc"))


def _ping_filter(ns, dev, parent, flowid):
    """The parallel stream's filters, to class @flowid."""
    for match in _PING_MATCHES:
        tclib.tc(ns, "filter", "add", "dev", dev, "parent", parent,
                 "protocol", "ip", "prio", "1", "u32", "match", "ip",
                 *match, "flowid", flowid)


# Every installer puts its scheduler on @dev behind a @rate bottleneck, or
# with rate=None on the bare device (the receiving-side experiments, where
# the bottleneck is a switch port).

def install_pfifo(ns, dev, rate=RATE):
    """A traditional interface: one FIFO (pfifo, limit = txqueuelen)."""
    _baseline(ns, dev, rate, "pfifo")


def install_prio(ns, dev, rate=RATE):
    """prio with the parallel stream in band 0."""
    _baseline(ns, dev, rate, "prio")
    _ping_filter(ns, dev, "10:", "10:1")


def install_ets(ns, dev, rate=RATE):
    """ets with two bands, the parallel stream's strict, the rest (the
    default priomap's band) sharing the other."""
    _baseline(ns, dev, rate, "ets", "strict", "1", "quanta", "1514")
    _ping_filter(ns, dev, "10:", "10:1")


def install_fq_codel(ns, dev, rate=RATE):
    """fq_codel: flow queues and CoDel AQM, no classes."""
    _baseline(ns, dev, rate, "fq_codel")


# cake's tins under diffserv4, as a packet's priority (cake's handle, then
# the tin: `action skbedit priority 10:4`) names them and `tc -s qdisc`
# lists them: Bulk, Best Effort, Video, Voice.
CAKE_VOICE = "4"


def install_cake(ns, dev, rate=RATE):
    """cake, diffserv4, with its own shaper at @rate (a Linux user's
    likeliest choice instead of parq: its shaper splits GSO, and EF goes
    to its Voice tin, which may take up to a quarter of the rate before it
    yields); with @rate None, unlimited.  The parallel stream carries EF:
    no filter."""
    shaper = ["unlimited"] if rate is None else ["bandwidth", rate]
    tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "10:",
             "cake", *shaper, "diffserv4")


# fq's priority bands (Linux 6.7): three, served by weighted round robin,
# 9:3:1 by default, the band a packet's priority's (its lowest four bits)
# under fq's default priomap, where TC_PRIO_INTERACTIVE (6) is band 0 and
# best effort (0) band 1.
FQ_BANDS_SINCE = (6, 7)
FQ_HIGH_PRIORITY = "0:6"
# fq with its best-effort bands' weights at fq's least (below).
FQ_SMALL = "fq+small weights"
# The devices whose clsact install_fq added, as (namespace, device).
_FQ_CLSACT = set()


def fq_has_bands(release=None):
    """True when the kernel (@release, by default the running one) has
    fq's priority bands."""
    m = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= FQ_BANDS_SINCE


def install_fq(ns, dev, rate=RATE):
    """fq with its three priority bands (Linux 6.7 and later), the
    parallel stream in the high band.  fq takes no filters: a u32 filter
    on clsact's egress, which runs before the root qdisc, gives the
    parallel stream's packets priority 6 (a user of iproute2 6.7 or later
    could map EF's own priority with fq's priomap instead; Debian 12's tc
    cannot)."""
    if not fq_has_bands():
        raise RuntimeError(f"fq on {os.uname().release} has no priority "
                           f"bands (Linux {FQ_BANDS_SINCE[0]}."
                           f"{FQ_BANDS_SINCE[1]} and later)")
    _baseline(ns, dev, rate, "fq")
    tclib.tc(ns, "qdisc", "add", "dev", dev, "clsact")
    _FQ_CLSACT.add((ns, dev))
    for match in _PING_MATCHES:
        tclib.tc(ns, "filter", "add", "dev", dev, "egress", "protocol", "ip",
                 "prio", "1", "u32", "match", "ip", *match, "action",
                 "skbedit", "priority", FQ_HIGH_PRIORITY)


# fq's band weights: bytes a band may send per turn of fq's weighted round
# robin.  The defaults (589824, 196608, 65536: 9:3:1) let best effort send
# 196608 bytes per turn, 15.7 ms at 100 Mbit/s, while a packet of band 0
# waits.  FQ_SMALL_WEIGHTS keep band 0 three times band 1's weight, and the
# best-effort bands at the least fq takes (FQ_MIN_WEIGHT, 16384 bytes:
# 1.3 ms at 100 Mbit/s).  Debian 12's tc cannot set them: raw netlink does
# (TCA_FQ_WEIGHTS, three s32).
FQ_MIN_WEIGHT = 16384
FQ_SMALL_WEIGHTS = (3 * FQ_MIN_WEIGHT, FQ_MIN_WEIGHT, FQ_MIN_WEIGHT)
TCA_FQ_WEIGHTS = 17
FQ_HANDLE = 0x100000		# "10:", _baseline's
HTB_CLASS = 0x10001		# "1:1", _under_shaper's


def fq_weights_option(weights):
    """TCA_OPTIONS for fq with TCA_FQ_WEIGHTS @weights, the rest
    unchanged."""
    return rtnl.nest(rtnl.TCA_OPTIONS, rtnl.nla(
        TCA_FQ_WEIGHTS, struct.pack("=3i", *weights)))


def install_fq_small_weights(ns, dev, rate=RATE):
    """fq as install_fq, its best-effort bands' weights at fq's least
    (FQ_SMALL_WEIGHTS) instead of its defaults, so that band 0 waits for
    about one 16 KiB turn of them (and the packet that crosses it: fq
    serves a band while its credit is above 0)."""
    install_fq(ns, dev, rate)
    parent = rtnl.TC_H_ROOT if rate is None else HTB_CLASS
    with rtnl.Rtnl(ns) as sock:
        res = sock.qdisc(sock.ifindex(dev),
                         fq_weights_option(FQ_SMALL_WEIGHTS), kind="fq",
                         handle=FQ_HANDLE, parent=parent)
    if res.error:
        raise RuntimeError(f"fq weights {FQ_SMALL_WEIGHTS} on {dev}: "
                           f"{res.errname} {res.msg or ''}".strip())


def install_parq(ns, dev, rate=RATE, extra=()):
    """parq with its own shaper; EF marks the parallel stream, the u32
    filter classifies it too (either would do).  With @rate None: no
    shaper, but GSO packets split all the same, so that a sender held to
    a credit sends MTU-sized packets, not 64 KB bursts (5 ms of a 100
    Mbit/s switch port each; as selftests/parq_receiver.py does).  @extra:
    more of parq's tc arguments (e.g. ("no-split-gso",))."""
    shaper = ["split-gso"] if rate is None else ["rate", rate]
    tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq",
             *shaper, *extra)
    _ping_filter(ns, dev, "1:", "1:1")


def install_htb_parq(ns, dev, rate=RATE, extra=()):
    """parq without a shaper of its own under the baselines' htb: parq's
    classes, htb's shaping (a GSO packet leaves whole as soon as htb has
    tokens, and the class pays the debt afterwards; with @extra
    ("split-gso",), parq hands htb frames).  Not in ALL_SCHEDULERS:
    scripts/experiments/shaper.py compares it with parq's own shaper."""
    _baseline(ns, dev, rate, "parq", *extra)
    _ping_filter(ns, dev, "10:", "10:1")


# The experiments' baselines, then parq (Documentation/experiments.md);
# fq with its bands where the kernel has them.
ALL_SCHEDULERS = {
    "pfifo": install_pfifo,
    "prio": install_prio,
    "ets": install_ets,
    "fq_codel": install_fq_codel,
    "cake": install_cake,
    **({"fq": install_fq, FQ_SMALL: install_fq_small_weights}
       if fq_has_bands() else {}),
    "parq": install_parq,
}


def clear(ns, dev):
    tclib.tc(ns, "qdisc", "del", "dev", dev, "root", check=False)
    if (ns, dev) in _FQ_CLSACT:
        _FQ_CLSACT.discard((ns, dev))
        tclib.tc(ns, "qdisc", "del", "dev", dev, "clsact", check=False)
