"""Hand-built rtnetlink tc requests, bypassing tc and its plugin, to feed the
kernel malformed or out-of-range attributes.

    with Rtnl(ns) as nl:
        opts = nest(TCA_OPTIONS, nla_u32(uapi.TCA_PARQ_THRESHOLD, 0))
        res = nl.qdisc(ifindex, opts, create=False)   # tc qdisc change
        res.error, res.msg                            # -errno, extack text

Requests carry NLM_F_ACK; the socket has NETLINK_EXT_ACK and NETLINK_CAP_ACK
set, so the answer is an nlmsgerr with the error and the kernel's extended
ack message (if any).

Its own encoder rather than pyroute2's: the tests need what a library's
typed encoder will not produce (an attribute whose length lies, options
without the nested flag), and the harness then needs no package beyond
Python's own.
"""
import errno as _errno
import os
import socket
import struct

from .netns import entered

NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_CAP_ACK = 10
NETLINK_EXT_ACK = 11

NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1
NLMSGERR_ATTR_OFFS = 2

RTM_NEWQDISC = 36
RTM_NEWTCLASS = 40
RTM_DELTCLASS = 41
RTM_GETQDISC = 38
RTM_GETTCLASS = 42
NLM_F_DUMP = 0x300
NLMSG_DONE = 3

TCA_STATS2 = 7
TCA_STATS_BASIC = 1
TCA_STATS_QUEUE = 3
TCA_STATS_APP = 4
TCA_STATS_PKT64 = 8

TCA_KIND = 1
TCA_OPTIONS = 2
NLA_F_NESTED = 0x8000
TC_H_ROOT = 0xFFFFFFFF


def _align(n):
    return (n + 3) & ~3


def nla(atype, payload=b"", length=None):
    """One attribute; @length overrides nla_len (for malformed ones).  The
    attribute is padded to 4 bytes after its real payload."""
    n = 4 + len(payload) if length is None else length
    raw = struct.pack("=HH", n, atype) + payload
    return raw + b"\0" * (_align(len(raw)) - len(raw))


def nla_u8(atype, v):
    return nla(atype, struct.pack("=B", v))


def nla_u32(atype, v):
    return nla(atype, struct.pack("=I", v))


def nla_s32(atype, v):
    return nla(atype, struct.pack("=i", v))


def nla_u64(atype, v):
    return nla(atype, struct.pack("=Q", v))


def nla_str(atype, s):
    return nla(atype, s.encode() + b"\0")


def nest(atype, *attrs, nested_flag=True):
    return nla(atype | (NLA_F_NESTED if nested_flag else 0), b"".join(attrs))


def tcmsg(ifindex, handle, parent):
    return struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, handle,
                       parent, 0)


class Result:
    def __init__(self, error, msg, offset, replies=()):
        self.error = error		# 0 or -errno
        self.msg = msg			# extack message or None
        self.offset = offset		# NLMSGERR_ATTR_OFFS or None
        self.replies = list(replies)  # payloads answered before the ack

    @property
    def errname(self):
        return _errno.errorcode.get(-self.error, str(self.error)) \
            if self.error else "OK"

    def __repr__(self):
        return f"<{self.errname} msg={self.msg!r} offs={self.offset}>"


class Netlink:
    """A netlink socket of protocol @proto in namespace @ns (Netns or
    None): requests with acks and extended acks, and dumps."""

    def __init__(self, proto, ns=None):
        self.ns = ns
        if ns is not None:
            with entered(ns.name):
                self.sock = self._open(proto)
        else:
            self.sock = self._open(proto)
        self.seq = 1000

    @staticmethod
    def _open(proto):
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
        s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        s.settimeout(10)
        s.bind((0, 0))
        return s

    def ifindex(self, dev):
        if self.ns is None:
            return socket.if_nametoindex(dev)
        with entered(self.ns.name):
            return socket.if_nametoindex(dev)

    def request(self, msgtype, flags, body):
        """Send one request with NLM_F_REQUEST|NLM_F_ACK; return Result,
        with the payloads of any answer that came before the ack."""
        self.seq += 1
        hdr = struct.pack("=IHHII", 16 + len(body), msgtype,
                          flags | NLM_F_REQUEST | NLM_F_ACK, self.seq, 0)
        self.sock.send(hdr + body)
        replies = []
        while True:
            data = self.sock.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, mtype, mflags, seq, _ = struct.unpack_from(
                    "=IHHII", data, off)
                if length < 16:
                    raise RuntimeError("bad netlink message length")
                if seq == self.seq:
                    if mtype == NLMSG_ERROR:
                        res = self._parse_err(data[off:off + length], mflags)
                        res.replies = replies
                        return res
                    replies.append(data[off + 16:off + length])
                off += _align(length)

    @staticmethod
    def _parse_err(msg, flags):
        error, = struct.unpack_from("=i", msg, 16)
        # nlmsgerr: error + the request's header (capped: no payload).
        pos = 16 + 4 + 16
        text = offset = None
        if flags & NLM_F_ACK_TLVS:
            while pos + 4 <= len(msg):
                alen, atype = struct.unpack_from("=HH", msg, pos)
                if alen < 4:
                    break
                payload = msg[pos + 4:pos + alen]
                if atype == NLMSGERR_ATTR_MSG:
                    text = payload.split(b"\0", 1)[0].decode(errors="replace")
                elif atype == NLMSGERR_ATTR_OFFS and len(payload) >= 4:
                    offset, = struct.unpack_from("=I", payload)
                pos += _align(alen)
        return Result(error, text, offset)

    def dump(self, msgtype, body):
        """A dump request; returns the payloads (after nlmsghdr) of the
        answers.  Raises OSError on a netlink error."""
        self.seq += 1
        hdr = struct.pack("=IHHII", 16 + len(body), msgtype,
                          NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0)
        self.sock.send(hdr + body)
        out = []
        while True:
            data = self.sock.recv(1 << 20)
            off = 0
            while off + 16 <= len(data):
                length, mtype, _, seq, _ = struct.unpack_from(
                    "=IHHII", data, off)
                if length < 16:
                    raise RuntimeError("bad netlink message length")
                payload = data[off + 16:off + length]
                off += _align(length)
                if seq != self.seq:
                    continue
                if mtype == NLMSG_DONE:
                    return out
                if mtype == NLMSG_ERROR:
                    err, = struct.unpack_from("=i", payload)
                    if err:
                        raise OSError(-err, os.strerror(-err))
                    continue
                out.append(payload)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Rtnl(Netlink):
    """A NETLINK_ROUTE socket in namespace @ns (Netns or None)."""

    def __init__(self, ns=None):
        super().__init__(NETLINK_ROUTE, ns)

    def classes(self, ifindex):
        """Classes of @ifindex with exact statistics, as dicts keyed like
        tc -j -s qdisc output: kind in "class", "handle" ("1:1"), "parent"
        or "root", bytes, packets, drops, overlimits, requeues, backlog,
        qlen, and "xstats" (raw bytes) if the qdisc sends class xstats."""
        return self._tc_dump(RTM_GETTCLASS, ifindex, "class")

    def qdiscs(self, ifindex):
        """Qdiscs of @ifindex, as classes() gives classes, the kind in
        "kind", the qdisc's own "xstats" (raw bytes), if it has any, and
        its TCA_OPTIONS' payload in "options" (raw bytes)."""
        return [q for q in self._tc_dump(RTM_GETQDISC, ifindex, "kind")
                if q["ifindex"] == ifindex]

    def _tc_dump(self, msgtype, ifindex, kind_key):
        out = []
        for msg in self.dump(msgtype, tcmsg(ifindex, 0, 0)):
            _, index, handle, parent, _ = struct.unpack_from("=BxxxiIII",
                                                             msg)
            c = {"ifindex": index, "handle": tc_handle(handle)}
            if parent == TC_H_ROOT:
                c["root"] = True
            else:
                c["parent"] = tc_handle(parent)
            attrs = parse_attrs(msg[20:])
            if TCA_KIND in attrs:
                c[kind_key] = attrs[TCA_KIND].split(b"\0", 1)[0].decode()
            if TCA_OPTIONS in attrs:
                c["options"] = attrs[TCA_OPTIONS]
            if TCA_STATS2 in attrs:
                c.update(parse_stats2(attrs[TCA_STATS2]))
            out.append(c)
        return out

    def qdisc(self, ifindex, options, kind="parq", handle=0x10000,
              parent=TC_H_ROOT, create=False):
        """RTM_NEWQDISC: create (NLM_F_CREATE|NLM_F_EXCL, like tc qdisc add)
        or change (no flags, like tc qdisc change).  @options: the raw
        TCA_OPTIONS attribute (or b"" for none)."""
        flags = NLM_F_CREATE | NLM_F_EXCL if create else 0
        body = tcmsg(ifindex, handle, parent) + nla_str(TCA_KIND, kind) + \
            options
        return self.request(RTM_NEWQDISC, flags, body)


def parse_attrs(data):
    """{type: payload} of a run of attributes (the last of a type wins)."""
    out = {}
    pos = 0
    while pos + 4 <= len(data):
        alen, atype = struct.unpack_from("=HH", data, pos)
        if alen < 4:
            break
        out[atype & ~NLA_F_NESTED] = data[pos + 4:pos + alen]
        pos += _align(alen)
    return out


def parse_stats2(data):
    a = parse_attrs(data)
    st = {}
    if TCA_STATS_BASIC in a:
        st["bytes"], st["packets"] = struct.unpack_from("=QI",
                                                        a[TCA_STATS_BASIC])
    if TCA_STATS_PKT64 in a:
        st["packets"], = struct.unpack_from("=Q", a[TCA_STATS_PKT64])
    if TCA_STATS_QUEUE in a:
        (st["qlen"], st["backlog"], st["drops"], st["requeues"],
         st["overlimits"]) = struct.unpack_from("=IIIII",
                                                a[TCA_STATS_QUEUE])
    if TCA_STATS_APP in a:
        st["xstats"] = a[TCA_STATS_APP]
    return st


def tc_handle(h):
    """tc's spelling of a handle: 1:1, 1:, root."""
    if h == TC_H_ROOT:
        return "root"
    maj, mnr = h >> 16, h & 0xFFFF
    return f"{maj:x}:{mnr:x}" if mnr else f"{maj:x}:"


def strerror(err):
    return os.strerror(-err) if err else "OK"
