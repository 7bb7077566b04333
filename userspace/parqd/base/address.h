// SPDX-License-Identifier: GPL-2.0
//
// An IPv4 or IPv6 address, family-tagged, in network byte order.  The key of
// the credit table and the identity check of a peer's source address.

#ifndef PARQD_BASE_ADDRESS_H
#define PARQD_BASE_ADDRESS_H

#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parq::parqd {

// Values are the wire's family tags (Documentation/parqd-protocol.md).
enum class Family : uint8_t { kIPv4 = 4, kIPv6 = 6 };

struct Address {
  Family family = Family::kIPv4;
  // IPv4 uses bytes[0..3]; the rest stays zero so that equal addresses
  // compare equal.
  std::array<uint8_t, 16> bytes{};

  static Address V4(const std::array<uint8_t, 4>& b);
  static Address V6(const std::array<uint8_t, 16>& b);
  // "192.0.2.1" or "2001:db8::1"; nullopt if it is neither.
  static std::optional<Address> Parse(std::string_view text);

  std::string ToString() const;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads it
  auto operator<=>(const Address&) const = default;
};

// The address of a socket address: a datagram's source, an interface's
// address; an IPv4-mapped IPv6 address (a socket bound to "::") becomes
// the IPv4 address.  Nothing for a family other than AF_INET and AF_INET6.
std::optional<Address> FromSockaddr(const sockaddr& sa);

}  // namespace parq::parqd

#endif
