// SPDX-License-Identifier: GPL-2.0

#include "proto/wire.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <array>

namespace parq::parqd::wire {

namespace {

// Offsets inside an address entry.
constexpr size_t kOffFamily = 0;
constexpr size_t kOffAddrReserved = 1;  // 3 bytes
constexpr size_t kOffAddr = 4;          // 16 bytes

template <typename T>
void Put(std::vector<uint8_t>& out, size_t off, T v) {
  for (size_t i = 0; i < sizeof(T); i++)
    out[off + i] = static_cast<uint8_t>(v >> (8 * (sizeof(T) - 1 - i)));
}

template <typename T>
T Get(std::span<const uint8_t> in, size_t off) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); i++)
    v = static_cast<T>(v << 8 | in[off + i]);
  return v;
}

bool AllZero(std::span<const uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t c) { return c == 0; });
}

constexpr size_t MessageBytes(size_t count) {
  return kHeaderBytes + count * kAddressBytes + kMacBytes;
}

Result<std::monostate, WireError> Ok() {
  return std::monostate{};
}

Result<std::monostate, WireError> ValidateAddress(const Address& a) {
  if (a.family != Family::kIPv4 && a.family != Family::kIPv6)
    return Err{WireError::kBadAddressFamily};
  if (a.family == Family::kIPv4 &&
      !AllZero(std::span<const uint8_t>(a.bytes).subspan(4)))
    return Err{WireError::kBadAddress};
  return Ok();
}

// The rules on the fields, shared by Validate() and Decode().
Result<std::monostate, WireError> ValidateFields(const Message& m) {
  if (m.type != Type::kGrant && m.type != Type::kRelease)
    return Err{WireError::kBadType};
  if (m.sequence == 0)
    return Err{WireError::kBadSequence};
  if (m.key_id == 0)
    return Err{WireError::kBadKeyId};
  if (m.epoch_us < kMinEpochUs || m.epoch_us > kMaxEpochUs)
    return Err{WireError::kBadEpochLength};
  if (m.type == Type::kGrant && m.lease == 0)
    return Err{WireError::kBadLease};
  if (m.type == Type::kRelease && m.lease != 0)
    return Err{WireError::kBadLease};
  if (m.type == Type::kRelease && m.credit != 0)
    return Err{WireError::kBadCredit};
  for (size_t i = 0; i < m.addresses.size(); i++) {
    if (auto r = ValidateAddress(m.addresses[i]); !r.ok())
      return r;
    for (size_t j = 0; j < i; j++)
      if (m.addresses[j] == m.addresses[i])
        return Err{WireError::kDuplicateAddress};
  }
  return Ok();
}

Result<Address, WireError> DecodeAddress(std::span<const uint8_t> e) {
  const uint8_t family = e[kOffFamily];
  if (family != static_cast<uint8_t>(Family::kIPv4) &&
      family != static_cast<uint8_t>(Family::kIPv6))
    return Err{WireError::kBadAddressFamily};
  if (!AllZero(e.subspan(kOffAddrReserved, 3)))
    return Err{WireError::kBadReserved};
  Address a;
  a.family = static_cast<Family>(family);
  std::copy_n(e.begin() + kOffAddr, a.bytes.size(), a.bytes.begin());
  return a;
}

}  // namespace

std::string_view Name(WireError e) {
  switch (e) {
    case WireError::kShort:
      return "short";
    case WireError::kBadMagic:
      return "bad_magic";
    case WireError::kBadVersion:
      return "bad_version";
    case WireError::kBadAddressCount:
      return "bad_address_count";
    case WireError::kBadLength:
      return "bad_length";
    case WireError::kTrailingBytes:
      return "trailing_bytes";
    case WireError::kBadMac:
      return "bad_mac";
    case WireError::kBadType:
      return "bad_type";
    case WireError::kBadFlags:
      return "bad_flags";
    case WireError::kBadReserved:
      return "bad_reserved";
    case WireError::kBadSequence:
      return "bad_sequence";
    case WireError::kBadKeyId:
      return "bad_key_id";
    case WireError::kBadEpochLength:
      return "bad_epoch_length";
    case WireError::kBadLease:
      return "bad_lease";
    case WireError::kBadCredit:
      return "bad_credit";
    case WireError::kBadAddressFamily:
      return "bad_address_family";
    case WireError::kBadAddress:
      return "bad_address";
    case WireError::kDuplicateAddress:
      return "duplicate_address";
    case WireError::kCryptoFailure:
      return "crypto_failure";
  }
  return "unknown";
}

Result<Mac, WireError> ComputeMac(const Key& key,
                                  std::span<const uint8_t> data) {
  Mac mac{};
  if (!key.Hmac(data, mac))
    return Err{WireError::kCryptoFailure};
  return mac;
}

Result<Mac, WireError> MessageMac(const Key& key, std::span<const uint8_t> body,
                                  const Address& recipient) {
  // The body and the recipient's entry in one buffer: a message is at most
  // kMaxMessageBytes long.
  std::array<uint8_t, kMaxMessageBytes - kMacBytes + kAddressBytes> covered{};
  if (body.size() > covered.size() - kAddressBytes)
    return Err{WireError::kBadLength};
  std::copy(body.begin(), body.end(), covered.begin());
  uint8_t* entry = covered.data() + body.size();
  entry[kOffFamily] = static_cast<uint8_t>(recipient.family);
  std::copy(recipient.bytes.begin(), recipient.bytes.end(), entry + kOffAddr);
  return ComputeMac(key, std::span<const uint8_t>(covered).first(
                             body.size() + kAddressBytes));
}

Result<std::monostate, WireError> Validate(const Message& m) {
  if (m.addresses.empty() || m.addresses.size() > kMaxAddresses)
    return Err{WireError::kBadAddressCount};
  return ValidateFields(m);
}

Result<std::vector<uint8_t>, WireError> Encode(const Message& m, const Key& key,
                                               const Address& recipient) {
  if (auto r = Validate(m); !r.ok())
    return Err{r.error()};
  if (auto r = ValidateAddress(recipient); !r.ok())
    return Err{r.error()};
  std::vector<uint8_t> out(MessageBytes(m.addresses.size()), 0);
  Put<uint32_t>(out, kOffMagic, kMagic);
  out[kOffVersion] = kVersion;
  out[kOffType] = static_cast<uint8_t>(m.type);
  out[kOffFlags] = 0;
  out[kOffCount] = static_cast<uint8_t>(m.addresses.size());
  Put<uint64_t>(out, kOffSender, m.sender);
  Put<uint32_t>(out, kOffKeyId, m.key_id);
  Put<uint32_t>(out, kOffEpochUs, m.epoch_us);
  Put<uint64_t>(out, kOffTime, m.time_ns);
  Put<uint64_t>(out, kOffSeq, m.sequence);
  Put<uint64_t>(out, kOffCredit, m.credit);
  Put<uint16_t>(out, kOffLease, m.lease);
  for (size_t i = 0; i < m.addresses.size(); i++) {
    const size_t off = kHeaderBytes + i * kAddressBytes;
    out[off + kOffFamily] = static_cast<uint8_t>(m.addresses[i].family);
    std::copy(m.addresses[i].bytes.begin(), m.addresses[i].bytes.end(),
              out.begin() + static_cast<ptrdiff_t>(off + kOffAddr));
  }
  const size_t mac_off = out.size() - kMacBytes;
  auto mac =
      MessageMac(key, std::span<const uint8_t>(out).first(mac_off), recipient);
  if (!mac.ok())
    return Err{mac.error()};
  std::copy(mac.value().begin(), mac.value().end(),
            out.begin() + static_cast<ptrdiff_t>(mac_off));
  return out;
}

Result<Header, WireError> Peek(std::span<const uint8_t> in) {
  if (in.size() < kMinMessageBytes)
    return Err{WireError::kShort};
  if (Get<uint32_t>(in, kOffMagic) != kMagic)
    return Err{WireError::kBadMagic};
  if (in[kOffVersion] != kVersion)
    return Err{WireError::kBadVersion};
  const size_t count = in[kOffCount];
  if (count == 0 || count > kMaxAddresses)
    return Err{WireError::kBadAddressCount};
  const size_t need = MessageBytes(count);
  if (in.size() < need)
    return Err{WireError::kBadLength};
  if (in.size() > need)
    return Err{WireError::kTrailingBytes};
  return Header{Get<uint64_t>(in, kOffSender), Get<uint32_t>(in, kOffKeyId)};
}

Result<Message, WireError> Decode(std::span<const uint8_t> in, const Key& key,
                                  const Address& recipient) {
  if (auto h = Peek(in); !h.ok())
    return Err{h.error()};
  const size_t count = in[kOffCount];
  const size_t need = MessageBytes(count);

  // Authentication: nothing below is read from an unauthenticated message.
  const size_t mac_off = need - kMacBytes;
  auto mac = MessageMac(key, in.first(mac_off), recipient);
  if (!mac.ok())
    return Err{mac.error()};
  if (CRYPTO_memcmp(mac.value().data(), in.data() + mac_off, kMacBytes) != 0)
    return Err{WireError::kBadMac};

  // Fields.
  const uint8_t type = in[kOffType];
  if (type != static_cast<uint8_t>(Type::kGrant) &&
      type != static_cast<uint8_t>(Type::kRelease))
    return Err{WireError::kBadType};
  if (in[kOffFlags] != 0)
    return Err{WireError::kBadFlags};
  if (!AllZero(in.subspan(kOffReserved, kHeaderBytes - kOffReserved)))
    return Err{WireError::kBadReserved};
  Message m;
  m.type = static_cast<Type>(type);
  m.sender = Get<uint64_t>(in, kOffSender);
  m.key_id = Get<uint32_t>(in, kOffKeyId);
  m.epoch_us = Get<uint32_t>(in, kOffEpochUs);
  m.time_ns = Get<uint64_t>(in, kOffTime);
  m.sequence = Get<uint64_t>(in, kOffSeq);
  m.credit = Get<uint64_t>(in, kOffCredit);
  m.lease = Get<uint16_t>(in, kOffLease);
  m.addresses.reserve(count);
  for (size_t i = 0; i < count; i++) {
    auto a = DecodeAddress(
        in.subspan(kHeaderBytes + i * kAddressBytes, kAddressBytes));
    if (!a.ok())
      return Err{a.error()};
    m.addresses.push_back(a.value());
  }
  if (auto r = ValidateFields(m); !r.ok())
    return Err{r.error()};
  return m;
}

}  // namespace parq::parqd::wire
