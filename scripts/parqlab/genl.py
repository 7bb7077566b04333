"""The "parq" generic netlink family (the credit table and the receive
monitor), through the spec-driven client parqlab.ynl: attribute names,
numbers and types come from Documentation/netlink/specs/parq.yaml (which
scripts/check-genl-spec checks against the UAPI header).

    with ParqGenl(ns) as g:
        g.set("10.0.0.2", credit=1500, lease=10**9)          # -> Result
        g.dump()            # [{"addr": "10.0.0.2", "credit": 1500, ...}]
        g.get("10.0.0.2")   # one entry dict, or raises GenlError
        g.delete("10.0.0.2"); g.delete()                     # one, or all
        g.mon_set(mon_enabled=1, mon_size=16); g.mon_get(); g.peers()
        g.subscribe(); g.events(timeout=1.0)   # monitor reports

The dicts' keys are the spec's attribute names with "_" for "-"
(mon-hold: "mon_hold"), plus "addr" (addr4 or addr6, whichever is there)
and "cmd"/"op" (the message's command).  g.cmd() and addr_attr() build
requests by hand, for the tests that send what the spec does not allow.
"""
import ipaddress

from . import ktap
from .ynl import NLA_F_NESTED, NLM_F_DUMP, GenlError, Spec, YnlFamily, genlhdr

SPEC = Spec.load("parq")
ATTRS = SPEC.sets["credit"]


def _kind(addr):
    """The attribute an address string goes in: "addr4" or "addr6"."""
    return "addr4" if ipaddress.ip_address(addr).version == 4 else "addr6"


def addr_attr(addr):
    """The addr4 or addr6 attribute of an address string, encoded."""
    return ATTRS.attr(_kind(addr)).encode(addr)


def _addrs(addrs):
    """{"addr4": [...], "addr6": [...]} of a list of address strings."""
    out = {}
    for a in addrs:
        out.setdefault(_kind(a), []).append(a)
    return out


def _one_addr(addr):
    return {_kind(addr): addr}


def entry(e):
    """@e (a decoded message) with "addr" added from addr4 or addr6."""
    a = e.get("addr4", e.get("addr6"))
    if a is not None:
        e["addr"] = a
    return e


class ParqGenl(YnlFamily):
    """A generic netlink socket bound to the parq family in @ns."""

    def __init__(self, ns=None):
        super().__init__(SPEC, ns)

    def cmd(self, cmd, *attrs, flags=0):
        """A hand-built request: command number @cmd, attributes @attrs
        (encoded); returns the Result."""
        return self.raw(cmd, b"".join(attrs), flags)

    def set(self, addr, credit, lease, epoch=None):
        return self.do("credit-set", {**_one_addr(addr), "credit": credit,
                                      "lease": lease, "epoch": epoch})

    def delete(self, addr=None):
        return self.do("credit-del",
                       _one_addr(addr) if addr is not None else {})

    def get(self, addr):
        return entry(self.do_get("credit-get", _one_addr(addr)))

    def dump(self):
        """Every entry of the namespace's table, as dicts."""
        return [entry(e) for e in super().dump("credit-get")]

    # --- the receive monitor ---

    def mon_set(self, **attrs):
        """mon-set with the attributes given (spec names); mon_peers is a
        list of address strings (the peer set; [] counts every source
        again)."""
        if attrs.get("mon_peers") is not None:
            attrs["mon_peers"] = _addrs(attrs["mon_peers"])
        return self.do("mon-set", attrs)

    def mon_get(self):
        return self.do_get("mon-get")

    def peers(self):
        """{source address: dict} of the monitor's table."""
        return {e["addr"]: e for e in map(entry, super().dump("peer-get"))}

    def subscribe(self, group="events"):
        if group not in self.groups:
            # The family registers its events group only where joining it
            # needs CAP_NET_ADMIN (GENL_MCAST_CAP_NET_ADMIN): not on 5.10.
            raise ktap.Skip(f"the parq family has no {group!r} group on this "
                            "kernel: it lacks GENL_MCAST_CAP_NET_ADMIN "
                            "(Documentation/kernels.md)")
        super().subscribe(group)

    def events(self, timeout):
        return [entry(e) for e in super().events(timeout)]


__all__ = ["ParqGenl", "GenlError", "SPEC", "addr_attr", "entry", "genlhdr",
           "NLA_F_NESTED", "NLM_F_DUMP"]
