"""A generic netlink client driven by a YNL spec (Documentation/netlink/
specs/*.yaml): the family's attributes, their numbers and types, its
operations and multicast groups all come from the spec, so a request is
a dict of attribute names and an answer is a dict of the same names.

    spec = Spec.load("parq")
    with YnlFamily(spec, ns) as f:
        f.do("credit-set", {"addr4": "10.0.0.2", "credit": 1500,
                            "lease": 10**9})            # -> Result
        f.dump("credit-get")     # [{"addr4": "10.0.0.2", "credit": ...}]
        f.subscribe("events"); f.events(timeout=1.0)

Names in the dicts are the spec's with "-" as "_" (mon-hold: "mon_hold").
Integers are native-endian unless the spec says big-endian; an attribute
with the display hint ipv4 or ipv6 takes and gives an address string; a
multi-attr attribute is a list; a nest is a dict (or a list of dicts).
The client checks only what it must to encode (a known name, a value of
the right kind): the kernel's checks are what the tests test, so a value
out of the spec's range is sent as it is.  Hand-built messages
(parqlab.rtnl) remain for what the spec cannot describe: wrong types,
lengths and nesting.
"""
import ipaddress
import socket
import struct
import time

import yaml

from . import repo_path
from .rtnl import Netlink, nla, parse_attrs

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
NLA_F_NESTED = 1 << 15
NLA_TYPE_MASK = 0x3fff		# without NLA_F_NESTED and NLA_F_NET_BYTEORDER
NLM_F_DUMP = 0x300

# struct formats of the scalar types, without the byte order
_SCALARS = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q",
            "s8": "b", "s16": "h", "s32": "i", "s64": "q"}


def pyname(name):
    """The dict key of a spec name: mon-hold -> mon_hold."""
    return name.replace("-", "_")


def genlhdr(cmd, version=1):
    return struct.pack("=BBH", cmd, version, 0)


class Attr:
    """One attribute of a set: its number and how to encode and decode it."""

    def __init__(self, a, value, sets):
        self.name = a["name"]
        self.key = pyname(self.name)
        self.value = value
        self.type = a["type"]
        self.multi = bool(a.get("multi-attr"))
        self.hint = a.get("display-hint")
        order = ">" if a.get("byte-order") == "big-endian" else "="
        self.fmt = order + _SCALARS[self.type] if self.type in _SCALARS \
            else None
        self.nested = a.get("nested-attributes")
        self._sets = sets

    def encode(self, v):
        """The attribute (or, multi-attr, the attributes) holding @v."""
        if self.multi:
            return b"".join(self._one(x) for x in v)
        return self._one(v)

    def _one(self, v):
        if self.type == "nest":
            return nla(self.value | NLA_F_NESTED,
                       self._sets[self.nested].encode(v))
        if self.hint in ("ipv4", "ipv6") and isinstance(v, str):
            v = ipaddress.ip_address(v).packed
            if self.fmt:
                v, = struct.unpack(">I", v)
        if self.fmt:
            return nla(self.value, struct.pack(self.fmt, v))
        if self.type == "string":
            return nla(self.value, v.encode() + b"\0")
        if self.type in ("binary", "pad"):
            return nla(self.value, bytes(v))
        raise TypeError(f"attribute {self.name}: type {self.type} has no "
                        "encoding here")

    def decode(self, raw):
        if self.type == "nest":
            return self._sets[self.nested].decode(raw)
        if self.fmt:
            v, = struct.unpack(self.fmt, raw[:struct.calcsize(self.fmt)])
            if self.hint == "ipv4":
                return str(ipaddress.IPv4Address(v))
            return v
        if self.type == "string":
            return raw.split(b"\0", 1)[0].decode()
        if self.hint == "ipv6" and len(raw) == 16:
            return str(ipaddress.IPv6Address(raw))
        return bytes(raw)


class AttrSet:
    """An attribute set; a subset-of set takes its parent's numbers and
    types."""

    def __init__(self, aset, sets):
        self.name = aset["name"]
        self.by_name = {}
        parent = aset.get("subset-of")
        value = 0
        for a in aset["attributes"]:
            if parent:
                base = sets.raw[parent]
                full = dict(next(x for x in base["attributes"]
                                 if x["name"] == a["name"]))
                full.update(a)
                value = sets[parent].by_name[a["name"]].value
            else:
                full = a
                value = a.get("value", value + 1)
            self.by_name[a["name"]] = Attr(full, value, sets)
        self.by_key = {x.key: x for x in self.by_name.values()}
        self.by_value = {x.value: x for x in self.by_name.values()}

    def attr(self, key):
        try:
            return self.by_key[pyname(key)]
        except KeyError:
            raise KeyError(f"attribute set {self.name} has no attribute "
                           f"{key!r}") from None

    def encode(self, values):
        """The attributes of dict @values, in its order (None: left out)."""
        return b"".join(self.attr(k).encode(v) for k, v in values.items()
                        if v is not None)

    def decode(self, payload):
        """A dict of the attributes in @payload; unknown numbers are kept
        under their number."""
        out = {}
        for num, raw in _attrs(payload):
            a = self.by_value.get(num & NLA_TYPE_MASK)
            if a is None:
                out[num] = raw
            elif a.multi:
                out.setdefault(a.key, []).append(a.decode(raw))
            else:
                out[a.key] = a.decode(raw)
        return out


def _attrs(payload):
    """(type, payload) of each attribute, repeated ones included (parse_attrs
    keeps only the last)."""
    off = 0
    while off + 4 <= len(payload):
        length, atype = struct.unpack_from("=HH", payload, off)
        if length < 4:
            break
        yield atype, payload[off + 4:off + length]
        off += (length + 3) & ~3


class _Sets(dict):
    def __init__(self, raw):
        super().__init__()
        self.raw = {s["name"]: s for s in raw}
        for s in raw:		# parents first: a subset names an earlier set
            self[s["name"]] = AttrSet(s, self)


class Op:
    def __init__(self, op, value, sets):
        self.name = op["name"]
        self.value = value
        self.attrs = sets[op["attribute-set"]]
        self.mcgrp = op.get("mcgrp")


class Spec:
    """A YNL spec, read once: its sets, operations (by name and by number),
    constants and multicast groups."""

    def __init__(self, doc):
        self.name = doc["name"]
        self.consts = {d["name"]: d["value"]
                       for d in doc.get("definitions", [])
                       if d["type"] == "const"}
        self.sets = _Sets(doc["attribute-sets"])
        self.ops = {}
        value = 0
        for op in doc["operations"]["list"]:
            value = op.get("value", value + 1)
            self.ops[op["name"]] = Op(op, value, self.sets)
        self.by_cmd = {op.value: op for op in self.ops.values()}
        self.groups = [g["name"] for g in
                       doc.get("mcast-groups", {}).get("list", [])]

    @classmethod
    def load(cls, family):
        path = repo_path("Documentation", "netlink", "specs", f"{family}.yaml")
        with open(path) as f:
            return cls(yaml.safe_load(f))

    def op(self, name):
        try:
            return self.ops[name]
        except KeyError:
            raise KeyError(f"family {self.name} has no operation "
                           f"{name!r}") from None

    def decode(self, payload):
        """The dict of one message of the family (the payload after
        nlmsghdr), with "cmd" (the genl command's number) and "op" (its
        name in the spec)."""
        op = self.by_cmd.get(payload[0])
        e = op.attrs.decode(payload[4:]) if op else {}
        e["cmd"] = payload[0]
        e["op"] = op.name if op else None
        return e


class GenlError(OSError):
    def __init__(self, res, what):
        super().__init__(-res.error, f"{what}: {res.errname}: {res.msg}")
        self.res = res


class YnlFamily(Netlink):
    """A generic netlink socket bound to @spec's family in @ns."""

    def __init__(self, spec, ns=None):
        super().__init__(NETLINK_GENERIC, ns)
        self.spec = spec
        self.family = self._resolve(spec.name)

    def _resolve(self, name):
        """The family id of @name (the kernel may load its module), and
        its multicast groups' ids."""
        res = self.request(GENL_ID_CTRL, 0,
                           genlhdr(CTRL_CMD_GETFAMILY) +
                           nla(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
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

    def raw(self, cmd, body=b"", flags=0):
        """A request of the family with a hand-built attribute @body;
        returns the Result."""
        return self.request(self.family, flags, genlhdr(cmd) + body)

    def do(self, op, attrs=None):
        """Operation @op's do request with the dict @attrs; returns the
        Result (error 0 or -errno, extack message, replies)."""
        o = self.spec.op(op)
        return self.raw(o.value, o.attrs.encode(attrs or {}))

    def do_get(self, op, attrs=None):
        """@op's do request, and its one reply as a dict; GenlError if
        the kernel refused it."""
        res = self.do(op, attrs)
        if res.error or not res.replies:
            raise GenlError(res, op)
        return self.spec.decode(res.replies[0])

    def dump(self, op, attrs=None):
        """@op's dump, as a list of dicts."""
        o = self.spec.op(op)
        return [self.spec.decode(p) for p in
                super().dump(self.family, genlhdr(o.value) +
                             o.attrs.encode(attrs or {}))]

    def subscribe(self, group):
        """Receive @group on this socket (a socket of its own: requests
        and events would mix)."""
        self.sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
                             self.groups[group])

    def events(self, timeout):
        """The event dicts that arrive within @timeout seconds, each with
        "t", the monotonic time it was read."""
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
                    e = self.spec.decode(data[off + 16:off + length])
                    e["t"] = time.monotonic()
                    out.append(e)
                off += (length + 3) & ~3
        self.sock.settimeout(10)
        return out


__all__ = ["Spec", "YnlFamily", "GenlError", "genlhdr", "pyname",
           "NLA_F_NESTED", "NLM_F_DUMP"]
