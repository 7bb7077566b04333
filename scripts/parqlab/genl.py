"""The "parq" generic netlink family (the credit table and the receive
monitor), through the kernel's own YNL library (YnlFamily, from
tools/net/ynl/lib of linux-source-6.12; parqlab.kernel_ynl finds it):
attribute names, numbers and types come from
Documentation/netlink/specs/parq.yaml, validated once per process against
the kernel's schema of its protocol (the UAPI header and the module's
policies are made from the same spec: scripts/ynl-regen).

    with ParqGenl(ns) as g:
        g.set("10.0.0.2", credit=1500, lease=10**9)          # -> Result
        g.dump()            # [{"addr": "10.0.0.2", "credit": 1500, ...}]
        g.get("10.0.0.2")   # one entry dict, or raises GenlError
        g.delete("10.0.0.2"); g.delete()                     # one, or all
        g.mon_set(mon_enabled=1, mon_size=16); g.mon_get(); g.peers()
        g.subscribe(); g.events(timeout=1.0)   # monitor reports

The kernel's library takes and gives the spec's names (mon-hold); here the
keyword arguments and the dicts' keys have "_" for "-" (mon_hold), and
the dicts have "addr" too (addr4 or addr6, whichever is there); an event
also has "cmd" and "op" (its command's number and name) and "t".  A
request the kernel refuses is a Result (parqlab.rtnl: error, errname,
msg) from set, delete and mon_set, and GenlError from get, dump, mon_get
and peers.  g.cmd() and addr_attr() build requests by hand (parqlab.rtnl),
for the tests that send what the spec does not allow.
"""
import copy
import ipaddress
import select
import socket
import struct
import threading
import time

from . import kernel_ynl, ktap, repo_path
from .netns import entered
from .rtnl import NLA_F_NESTED, NLM_F_DUMP, Netlink, Result, nla, parse_attrs

lib = kernel_ynl.load()
NlError = lib.NlError

SPEC_PATH = str(repo_path("Documentation", "netlink", "specs", "parq.yaml"))
SPEC = lib.SpecFamily(SPEC_PATH, kernel_ynl.schema(SPEC_PATH))
ATTRS = SPEC.attr_sets["credit"]

NL = lib.Netlink			# the kernel library's netlink constants


def genlhdr(cmd, version=1):
    return struct.pack("=BBH", cmd, version, 0)


class GenlError(OSError):
    """A request the kernel refused: errno, and res (a Result)."""

    def __init__(self, res, what):
        super().__init__(-res.error, f"{what}: {res.errname}: {res.msg}")
        self.res = res


def _refused(e):
    """The Result of the kernel library's NlError @e."""
    ext = e.nl_msg.extack or {}
    return Result(e.nl_msg.error, ext.get("msg"), ext.get("bad-attr-offs"))


def _kind(addr):
    """The attribute an address string goes in: "addr4" or "addr6"."""
    return "addr4" if ipaddress.ip_address(addr).version == 4 else "addr6"


def _addr_value(addr):
    """What the kernel library encodes for an address string: addr4 is a
    (big-endian) u32, addr6 16 bytes."""
    a = ipaddress.ip_address(addr)
    return int(a) if a.version == 4 else a.packed


def addr_attr(addr):
    """The addr4 or addr6 attribute of an address string, encoded by hand
    (both hold the address in network byte order)."""
    return nla(ATTRS[_kind(addr)].value, ipaddress.ip_address(addr).packed)


def _addrs(addrs):
    """{"addr4": [...], "addr6": [...]} of a list of address strings."""
    out = {}
    for a in addrs:
        out.setdefault(_kind(a), []).append(_addr_value(a))
    return out


def _one_addr(addr):
    return {_kind(addr): _addr_value(addr)}


def _request(attrs):
    """The kernel library's request dict of keyword arguments @attrs:
    spec names, None left out."""
    return {k.replace("_", "-"): v for k, v in attrs.items()
            if v is not None}


def entry(e):
    """A decoded message of the kernel library with "_" for "-" in its
    keys, and "addr" added from addr4 or addr6."""
    out = {k.replace("-", "_"): v for k, v in e.items() if k != "pad"}
    a = out.get("addr4", out.get("addr6"))
    if a is not None:
        out["addr"] = a
    return out


def _resolve(nl, name):
    """The family id of @name, asked on the generic netlink socket @nl
    (which lets the kernel load the module, unlike the kernel library's
    dump of the families), and its multicast groups' ids."""
    res = nl.request(NL.GENL_ID_CTRL, 0, genlhdr(NL.CTRL_CMD_GETFAMILY) +
                     nla(NL.CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
    if res.error or not res.replies:
        raise GenlError(res, f"genl family {name}")
    a = parse_attrs(res.replies[0][4:])
    fid, = struct.unpack("=H", a[NL.CTRL_ATTR_FAMILY_ID][:2])
    groups = {}
    for grp in parse_attrs(a.get(NL.CTRL_ATTR_MCAST_GROUPS, b"")).values():
        g = parse_attrs(grp)
        gname = g[NL.CTRL_ATTR_MCAST_GRP_NAME].split(b"\0", 1)[0]
        groups[gname.decode()], = struct.unpack(
            "=I", g[NL.CTRL_ATTR_MCAST_GRP_ID])
    return fid, groups


def _merge_subsets(family):
    """Give @family's subsets (attribute sets with subset-of) their own
    keys: the kernel's library (6.12) takes a subset's attributes from its
    parent set as they are there, so the peer set's addr4 and addr6 would
    not be multi-attr, and a peer list could not be encoded."""
    for aset in family.attr_sets.values():
        if aset.subset_of is None:
            continue
        parent = family.attr_sets[aset.subset_of]
        for elem in aset.yaml["attributes"]:
            real = parent[elem["name"]]
            a = lib.SpecAttr(family, aset, {**real.yaml, **elem}, real.value)
            aset.attrs[a.name] = a
            aset.attrs_by_val[a.value] = a


# The kernel library looks the families up once per process, by a dump of
# every family, and keeps their ids in a module global; unloading and
# loading sch_parq may change parq's.  Each ParqGenl looks the family up
# itself (_resolve(), which also lets the kernel load the module) and gives
# the library those ids, under this lock, so that the library never dumps.
_ynl_lock = threading.Lock()
_template = None


def _ynl_family(fid, groups):
    """A YnlFamily of the parq spec for family id @fid and multicast
    groups @groups (as _resolve() found them), with a socket of its own in
    this thread's namespace.  YnlFamily() parses the spec, which takes
    longer under QEMU than the tests may wait between two reads
    (parq_receiver polls L's table every 20 ms with a new ParqGenl): the
    spec is parsed once, and each family is a copy of that first one with
    its own socket, notification queue and protocol object (the family's
    ids), all the state a YnlFamily keeps (but its shortcuts per
    operation, family.credit_get(): use do() and dump())."""
    global _template
    with _ynl_lock:
        lib.ynl.genl_family_name_to_id = {
            SPEC.name: {"id": fid, "mcast": groups}}
        if _template is None:
            # The spec was validated when this module was imported.
            _template = lib.YnlFamily(SPEC_PATH, "", process_unknown=True)
            _template.sock.close()
            _merge_subsets(_template)
        family = copy.copy(_template)
        family.nlproto = lib.ynl.GenlProtocol(SPEC.name)
    family.async_msg_queue = []
    family.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                family.nlproto.proto_num)
    try:
        for opt in (NL.NETLINK_CAP_ACK, NL.NETLINK_EXT_ACK,
                    NL.NETLINK_GET_STRICT_CHK):
            family.sock.setsockopt(NL.SOL_NETLINK, opt, 1)
    except BaseException:
        family.sock.close()
        raise
    return family


class ParqGenl:
    """The parq family in @ns (a Netns, or None for this thread's
    namespace): the kernel library's YnlFamily, its socket created in @ns
    (sock), and a socket of parqlab.rtnl's for hand-built requests."""

    def __init__(self, ns=None):
        self.ns = ns
        self.raw = Netlink(NL.NETLINK_GENERIC, ns)
        try:
            self.family, self.groups = _resolve(self.raw, SPEC.name)
            if ns is None:
                self.ynl = _ynl_family(self.family, self.groups)
            else:
                with entered(ns.name):
                    self.ynl = _ynl_family(self.family, self.groups)
        except BaseException:
            self.raw.close()
            raise
        self.sock = self.ynl.sock

    def close(self):
        self.ynl.sock.close()
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def cmd(self, cmd, *attrs, flags=0):
        """A hand-built request: command number @cmd, attributes @attrs
        (encoded); returns the Result."""
        return self.raw.request(self.family, flags,
                                genlhdr(cmd) + b"".join(attrs))

    def do(self, op, attrs=None):
        """Operation @op's do request with the dict @attrs (spec names);
        returns the Result (error 0 or -errno, extack message)."""
        try:
            self.ynl.do(op, attrs or {})
        except NlError as e:
            return _refused(e)
        return Result(0, None, None)

    def do_get(self, op, attrs=None):
        """@op's do request, and its one reply as a dict; GenlError if the
        kernel refused it."""
        try:
            return entry(self.ynl.do(op, attrs or {}) or {})
        except NlError as e:
            raise GenlError(_refused(e), op) from None

    def dump_op(self, op):
        """@op's dump, as a list of dicts; GenlError if refused."""
        try:
            return [entry(e) for e in self.ynl.dump(op, {})]
        except NlError as e:
            raise GenlError(_refused(e), op) from None

    # --- the credit table ---

    def set(self, addr, credit, lease, epoch=None):
        return self.do("credit-set", {**_one_addr(addr), **_request(
            {"credit": credit, "lease": lease, "epoch": epoch})})

    def delete(self, addr=None):
        return self.do("credit-del",
                       _one_addr(addr) if addr is not None else {})

    def get(self, addr):
        return self.do_get("credit-get", _one_addr(addr))

    def dump(self):
        """Every entry of the namespace's table, as dicts."""
        return self.dump_op("credit-get")

    # --- the receive monitor ---

    def mon_set(self, **attrs):
        """mon-set with the attributes given (spec names, "_" for "-");
        mon_peers is a list of address strings (the peer set; [] counts
        every source again)."""
        if attrs.get("mon_peers") is not None:
            attrs["mon_peers"] = _addrs(attrs["mon_peers"])
        return self.do("mon-set", _request(attrs))

    def mon_get(self):
        return self.do_get("mon-get")

    def peers(self):
        """{source address: dict} of the monitor's table."""
        return {e["addr"]: e for e in self.dump_op("peer-get")}

    def subscribe(self, group="events"):
        """Receive @group on this socket (use one of its own: requests and
        events would mix)."""
        if group not in self.groups:
            # The family registers its events group only where joining it
            # needs CAP_NET_ADMIN (GENL_MCAST_CAP_NET_ADMIN): not on 5.10.
            raise ktap.Skip(f"the parq family has no {group!r} group on this "
                            "kernel: it lacks GENL_MCAST_CAP_NET_ADMIN "
                            "(Documentation/kernels.md)")
        if self.sock.getsockname()[0] == 0:
            self.ynl.ntf_subscribe(group)
        else:
            # ntf_subscribe() binds the socket first, which netlink
            # refuses (EINVAL) once a request has bound it.
            self.sock.setsockopt(NL.SOL_NETLINK, NL.NETLINK_ADD_MEMBERSHIP,
                                 self.groups[group])

    def events(self, timeout):
        """The event dicts that arrive within @timeout seconds, each with
        "t", the monotonic time it was read (events that came while a
        request waited for its answer first)."""
        out = []
        end = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            q = self.ynl.async_msg_queue
            while q:
                out.append(self._event(q.pop(0), now))
            left = end - now
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return out
            self.ynl.check_ntf()

    @staticmethod
    def _event(ntf, t):
        e = entry(ntf["msg"])
        e.update(cmd=SPEC.msgs[ntf["name"]].rsp_value, op=ntf["name"], t=t)
        return e


__all__ = ["ParqGenl", "GenlError", "NlError", "SPEC", "addr_attr", "entry",
           "genlhdr", "NLA_F_NESTED", "NLM_F_DUMP"]
