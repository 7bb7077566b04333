"""The "parq" generic netlink family (receiver-side credit table), spoken
by hand so that tests can also send what a correct client never would.

    with ParqGenl(ns) as g:
        g.set("10.0.0.2", credit=1500, lease_ns=10**9)    # -> Result
        g.dump()            # [{"addr": "10.0.0.2", "credit": 1500, ...}]
        g.get("10.0.0.2")   # one entry dict, or raises GenlError
        g.delete("10.0.0.2"); g.delete()                  # one, or all
        g.mon_set(enabled=1, size=16); g.mon_get(); g.peers()
        g.subscribe(); g.events(timeout=1.0)   # monitor reports

Attribute numbers and limits come from the UAPI header (parqlab.uapi).
"""
import ipaddress
import socket
import struct
import time

from . import uapi
from .rtnl import (NLM_F_DUMP, Netlink, nla, nla_u32, nla_u64, nla_str,
                   parse_attrs)

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
CTRL_ATTR_MCAST_GROUPS = 7
CTRL_ATTR_MCAST_GRP_NAME = 1
CTRL_ATTR_MCAST_GRP_ID = 2
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1


class GenlError(OSError):
    def __init__(self, res, what):
        super().__init__(-res.error, f"{what}: {res.errname}: {res.msg}")
        self.res = res


def genlhdr(cmd, version=1):
    return struct.pack("=BBH", cmd, version, 0)


def addr_attr(addr):
    """PARQ_A_ADDR4 or PARQ_A_ADDR6 for an address string."""
    ip = ipaddress.ip_address(addr)
    if ip.version == 4:
        return nla(uapi.PARQ_A_ADDR4, ip.packed)
    return nla(uapi.PARQ_A_ADDR6, ip.packed)


# (key in the dicts, attribute, struct format) of every answer's fields
FIELDS = (("credit", "PARQ_A_CREDIT", "=I"),
          ("epoch_ns", "PARQ_A_EPOCH", "=Q"),
          ("lease_ns", "PARQ_A_LEASE", "=Q"),
          ("used", "PARQ_A_USED", "=I"),
          ("passed", "PARQ_A_PASSED", "=Q"),
          ("held", "PARQ_A_HELD", "=Q"),
          ("enabled", "PARQ_A_MON_ENABLED", "=B"),
          ("size", "PARQ_A_MON_SIZE", "=I"),
          ("dscp", "PARQ_A_MON_DSCP", "=Q"),
          ("hold_ns", "PARQ_A_MON_HOLD", "=Q"),
          ("sources", "PARQ_A_MON_SOURCES", "=I"),
          ("active", "PARQ_A_MON_ACTIVE", "=B"),
          ("evicted", "PARQ_A_MON_EVICTED", "=Q"),
          ("events", "PARQ_A_MON_EVENTS", "=Q"),
          ("par_packets", "PARQ_A_PAR_PACKETS", "=Q"),
          ("par_bytes", "PARQ_A_PAR_BYTES", "=Q"),
          ("par_age_ns", "PARQ_A_PAR_AGE", "=Q"),
          ("loc_packets", "PARQ_A_LOC_PACKETS", "=Q"),
          ("loc_bytes", "PARQ_A_LOC_BYTES", "=Q"),
          ("loc_age_ns", "PARQ_A_LOC_AGE", "=Q"),
          ("uncounted", "PARQ_A_MON_UNCOUNTED", "=Q"),
          ("npeers", "PARQ_A_MON_NPEERS", "=I"),
          ("foreign", "PARQ_A_MON_FOREIGN", "=Q"),
          ("report_local", "PARQ_A_MON_REPORT_LOCAL", "=B"),
          ("local_events", "PARQ_A_MON_LOCAL_EVENTS", "=Q"))

NLA_F_NESTED = 1 << 15


def parse_entry(payload):
    """A dict of the attributes of one answer of the family (the payload
    after nlmsghdr): "cmd", "addr" and the FIELDS present."""
    a = parse_attrs(payload[4:])
    e = {"cmd": payload[0]}
    if uapi.PARQ_A_ADDR4 in a:
        e["addr"] = str(ipaddress.IPv4Address(a[uapi.PARQ_A_ADDR4]))
    if uapi.PARQ_A_ADDR6 in a:
        e["addr"] = str(ipaddress.IPv6Address(a[uapi.PARQ_A_ADDR6]))
    for key, attr, fmt in FIELDS:
        t = getattr(uapi, attr)
        if t in a:
            e[key], = struct.unpack(fmt, a[t])
    return e


class ParqGenl(Netlink):
    """A generic netlink socket bound to the parq family in @ns."""

    def __init__(self, ns=None):
        super().__init__(NETLINK_GENERIC, ns)
        self.family = self.resolve(uapi.PARQ_GENL_NAME)

    def resolve(self, name):
        """The family id of @name (the kernel may load the module for it)."""
        res = self.request(GENL_ID_CTRL, 0,
                           genlhdr(CTRL_CMD_GETFAMILY) +
                           nla_str(CTRL_ATTR_FAMILY_NAME, name))
        if res.error or not res.replies:
            raise GenlError(res, f"genl family {name}")
        a = parse_attrs(res.replies[0][4:])
        fid, = struct.unpack("=H", a[CTRL_ATTR_FAMILY_ID][:2])
        self.groups = {}
        for grp in parse_attrs(a.get(CTRL_ATTR_MCAST_GROUPS, b"")).values():
            g = parse_attrs(grp)
            gname = g[CTRL_ATTR_MCAST_GRP_NAME].split(b"\0", 1)[0].decode()
            self.groups[gname], = struct.unpack("=I",
                                                g[CTRL_ATTR_MCAST_GRP_ID])
        return fid

    def cmd(self, cmd, *attrs, flags=0):
        """One request of the family; returns the Result (error 0 or
        -errno, extack message, replies)."""
        return self.request(self.family, flags,
                            genlhdr(cmd) + b"".join(attrs))

    def set(self, addr, credit, lease_ns, epoch_ns=None):
        attrs = [addr_attr(addr), nla_u32(uapi.PARQ_A_CREDIT, credit),
                 nla_u64(uapi.PARQ_A_LEASE, lease_ns)]
        if epoch_ns is not None:
            attrs.append(nla_u64(uapi.PARQ_A_EPOCH, epoch_ns))
        return self.cmd(uapi.PARQ_CMD_CREDIT_SET, *attrs)

    def delete(self, addr=None):
        attrs = [addr_attr(addr)] if addr is not None else []
        return self.cmd(uapi.PARQ_CMD_CREDIT_DEL, *attrs)

    def get(self, addr):
        res = self.cmd(uapi.PARQ_CMD_CREDIT_GET, addr_attr(addr))
        if res.error:
            raise GenlError(res, f"credit get {addr}")
        return parse_entry(res.replies[0])

    def dump(self):
        """Every entry of the namespace's table, as dicts."""
        return [parse_entry(p) for p in
                self.dump_raw(genlhdr(uapi.PARQ_CMD_CREDIT_GET))]

    def dump_raw(self, body):
        return super().dump(self.family, body)

    # --- the receive monitor ---

    def mon_set(self, enabled=None, size=None, dscp=None, hold_ns=None,
                peers=None, report_local=None):
        """PARQ_CMD_MON_SET; @peers: a list of address strings (the peer
        set; [] counts every source again)."""
        attrs = []
        if enabled is not None:
            attrs.append(nla(uapi.PARQ_A_MON_ENABLED,
                             struct.pack("=B", enabled)))
        if size is not None:
            attrs.append(nla_u32(uapi.PARQ_A_MON_SIZE, size))
        if dscp is not None:
            attrs.append(nla_u64(uapi.PARQ_A_MON_DSCP, dscp))
        if hold_ns is not None:
            attrs.append(nla_u64(uapi.PARQ_A_MON_HOLD, hold_ns))
        if report_local is not None:
            attrs.append(nla(uapi.PARQ_A_MON_REPORT_LOCAL,
                             struct.pack("=B", report_local)))
        if peers is not None:
            attrs.append(nla(uapi.PARQ_A_MON_PEERS | NLA_F_NESTED,
                             b"".join(addr_attr(a) for a in peers)))
        return self.cmd(uapi.PARQ_CMD_MON_SET, *attrs)

    def mon_get(self):
        res = self.cmd(uapi.PARQ_CMD_MON_GET)
        if res.error:
            raise GenlError(res, "monitor get")
        return parse_entry(res.replies[0])

    def peers(self):
        """{source address: dict} of the monitor's table."""
        return {e["addr"]: e for e in
                (parse_entry(p) for p in
                 self.dump_raw(genlhdr(uapi.PARQ_CMD_PEER_GET)))}

    def subscribe(self, group=uapi.PARQ_GENL_MCGRP_EVENTS):
        """Receive the family's @group on this socket (use a socket of its
        own: requests and events would mix)."""
        self.sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
                             self.groups[group])

    def events(self, timeout):
        """The event dicts that arrive within @timeout seconds."""
        out = []
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            off = 0
            while off + 16 <= len(data):
                length, mtype, _, _, _ = struct.unpack_from("=IHHII", data,
                                                            off)
                if length < 16:
                    break
                if mtype == self.family:
                    e = parse_entry(data[off + 16:off + length])
                    e["t"] = time.monotonic()
                    out.append(e)
                off += (length + 3) & ~3
        self.sock.settimeout(10)
        return out


def family_known(ns=None):
    """Whether the parq family resolves in @ns (loads the module if it can)."""
    try:
        with ParqGenl(ns):
            return True
    except (GenlError, socket.timeout):
        return False


__all__ = ["ParqGenl", "GenlError", "addr_attr", "parse_entry", "genlhdr",
           "family_known", "NLM_F_DUMP"]
