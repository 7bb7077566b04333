"""Measurement scenarios shared by the selftests, the demo and experiments.

sender_side(): a parallel job's 64-byte TCP ping-pong (sockperf) from
namespace A to B, optionally against a local job's bulk TCP transfer
(iperf3) on the same link, through a scheduler installed on A's veth.  The
parallel stream is recognised by its server port (a u32 filter for the
classful schedulers) and carries DSCP EF.
"""
import time

from . import tc as tclib
from . import traffic

RATE = "100mbit"
PING_PORT = 11111
BULK_PORT = 5201


def _htb(ns, dev):
    """100 Mbit/s htb shaper with one class 1:1 to put a child under."""
    tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
             "default", "1")
    tclib.tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid",
             "1:1", "htb", "rate", RATE, "ceil", RATE)


def _ping_filter(ns, dev, parent, flowid):
    tclib.tc(ns, "filter", "add", "dev", dev, "parent", parent, "protocol",
             "ip", "prio", "1", "u32", "match", "ip", "dport",
             str(PING_PORT), "0xffff", "flowid", flowid)


def install_pfifo(ns, dev):
    """A traditional interface: one FIFO (pfifo, limit = txqueuelen)."""
    _htb(ns, dev)
    tclib.tc(ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle",
             "10:", "pfifo")


def install_prio(ns, dev):
    """prio with the parallel stream in band 0, under the same shaper."""
    _htb(ns, dev)
    tclib.tc(ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle",
             "10:", "prio")
    _ping_filter(ns, dev, "10:", "10:1")


def install_parq(ns, dev, *params):
    """parq with its own 100 Mbit/s shaper; EF marks the parallel stream,
    the u32 filter classifies it too (either would do)."""
    tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq",
             "rate", RATE, *params)
    _ping_filter(ns, dev, "1:", "1:1")


SCHEDULERS = {
    "pfifo": install_pfifo,
    "prio": install_prio,
    "parq": install_parq,
}


def clear(ns, dev):
    tclib.tc(ns, "qdisc", "del", "dev", dev, "root", check=False)


def sender_side(topo, install, seconds=10, bulk=True, bulk_streams=4,
                warmup=2):
    """Install a scheduler on A's veth with @install(ns, dev), run the
    ping-pong for @seconds (with the bulk transfer if @bulk) and return
    {"latency": parse_sockperf() dict (usec), "local_bps": bulk bits/s or
    None}.  The scheduler is removed afterwards."""
    a, b, dev = topo.a, topo.b, topo.dev_a()
    clear(a, dev)
    install(a, dev)
    ping_srv = traffic.SockperfServer(b, topo.ip_b(), PING_PORT)
    bulk_srv = bulk_cli = None
    try:
        if bulk:
            bulk_srv = traffic.Iperf3Server(b, topo.ip_b(), BULK_PORT)
            bulk_cli = traffic.Iperf3Client(
                a, topo.ip_b(), BULK_PORT, seconds + warmup + 1,
                parallel=bulk_streams)
            time.sleep(warmup)
        lat = traffic.sockperf_pingpong(
            a, topo.ip_b(), PING_PORT, seconds,
            extra=["--tos", str(traffic.TOS_EF)])
        local = traffic.iperf3_bps(bulk_cli.result()) if bulk_cli else None
        return {"latency": lat, "local_bps": local}
    finally:
        if bulk_cli:
            bulk_cli.stop()
        if bulk_srv:
            bulk_srv.stop()
        ping_srv.stop()
        clear(a, dev)
