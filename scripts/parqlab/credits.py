"""parqd credit messages, built byte by byte from
Documentation/parqd-protocol.md (version 2), independently of the C++
encoder, so that a selftest checks parqd against the document.

    key = bytes.fromhex(open(path).read().strip())
    msg = grant(key, sender=2, time_ns=time.time_ns(), seq=1, credit=3000,
                addrs=["10.77.0.2"], epoch_us=10000, lease=3,
                to="10.77.0.1")
    rel = release(key, sender=2, time_ns=time.time_ns(), seq=2,
                  addrs=["10.77.0.2"], to="10.77.0.1")

`to` is the recipient: the address the message is sent to.  The MAC
covers it, so a message made for one address fails at any other.

encode() takes every field, so tests can also build what parqd must
refuse (flags, reserved bytes, bad lengths) and sign it.
"""
import hashlib
import hmac
import ipaddress
import struct

MAGIC = 0x50525144			# "PRQD"
VERSION = 2
GRANT = 1
RELEASE = 2
# magic, version, type, flags, count, sender, key id, epoch length,
# time, sequence, credit, lease, 14 reserved bytes
HEADER = struct.Struct(">IBBBBQIIQQQH14s")  # 64 bytes
MAC_BYTES = 32


def address_entry(addr):
    """The 20-byte entry: family, 3 reserved zero bytes, 16 address bytes
    (IPv4: 4 bytes then 12 zero bytes)."""
    ip = ipaddress.ip_address(addr)
    family = 4 if ip.version == 4 else 6
    return bytes([family, 0, 0, 0]) + ip.packed.ljust(16, b"\0")


def mac(key, body, to):
    """HMAC-SHA-256 of the message before its MAC, then the recipient `to`
    as an address entry (not sent)."""
    return hmac.new(key, body + address_entry(to), hashlib.sha256).digest()


def encode(key, mtype, sender, time_ns, seq, credit, epoch_us, lease, addrs,
           *, to, key_id=1, version=VERSION, flags=0, reserved=bytes(14),
           magic=MAGIC, count=None):
    body = HEADER.pack(magic, version, mtype, flags,
                       len(addrs) if count is None else count,
                       sender, key_id, epoch_us, time_ns, seq, credit, lease,
                       reserved)
    body += b"".join(address_entry(a) for a in addrs)
    assert HEADER.size == 64
    return body + mac(key, body, to)


def grant(key, sender, time_ns, seq, credit, addrs, epoch_us=1000, lease=3,
          key_id=1, *, to):
    return encode(key, GRANT, sender, time_ns, seq, credit, epoch_us, lease,
                  addrs, to=to, key_id=key_id)


def release(key, sender, time_ns, seq, addrs, epoch_us=1000, key_id=1, *,
            to):
    return encode(key, RELEASE, sender, time_ns, seq, 0, epoch_us, 0, addrs,
                  to=to, key_id=key_id)


__all__ = ["encode", "grant", "release", "address_entry", "mac", "GRANT",
           "RELEASE", "MAGIC", "VERSION"]
