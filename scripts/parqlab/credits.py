"""parqd credit messages, built byte by byte from
Documentation/parqd-protocol.md (version 1), independently of the C++
encoder, so that a selftest checks parqd against the document.

    key = bytes.fromhex(open(path).read().strip())
    msg = grant(key, sender=2, epoch=10, seq=1, credit=3000,
                addrs=["10.77.0.2"], epoch_us=10000, lease=3)
    rel = release(key, sender=2, epoch=10, seq=2, addrs=["10.77.0.2"])

encode() takes every field, so tests can also build what parqd must
refuse (flags, reserved bytes, bad lengths) and sign it.
"""
import hashlib
import hmac
import ipaddress
import struct

MAGIC = 0x50525144			# "PRQD"
VERSION = 1
GRANT = 1
RELEASE = 2
HEADER = struct.Struct(">IBBBBQQQQIHH")	# 48 bytes
MAC_BYTES = 32


def address_entry(addr):
    """The 20-byte entry: family, 3 reserved zero bytes, 16 address bytes
    (IPv4: 4 bytes then 12 zero bytes)."""
    ip = ipaddress.ip_address(addr)
    family = 4 if ip.version == 4 else 6
    return bytes([family, 0, 0, 0]) + ip.packed.ljust(16, b"\0")


def mac(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


def encode(key, mtype, sender, epoch, seq, credit, epoch_us, lease, addrs,
           version=VERSION, flags=0, reserved=0, magic=MAGIC, count=None):
    body = HEADER.pack(magic, version, mtype, flags,
                       len(addrs) if count is None else count,
                       sender, epoch, seq, credit, epoch_us, lease, reserved)
    body += b"".join(address_entry(a) for a in addrs)
    assert HEADER.size == 48
    return body + mac(key, body)


def grant(key, sender, epoch, seq, credit, addrs, epoch_us=1000, lease=3):
    return encode(key, GRANT, sender, epoch, seq, credit, epoch_us, lease,
                  addrs)


def release(key, sender, epoch, seq, addrs, epoch_us=1000):
    return encode(key, RELEASE, sender, epoch, seq, 0, epoch_us, 0, addrs)


__all__ = ["encode", "grant", "release", "address_entry", "mac", "GRANT",
           "RELEASE", "MAGIC", "VERSION"]
