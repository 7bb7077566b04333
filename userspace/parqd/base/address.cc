// SPDX-License-Identifier: GPL-2.0

#include "base/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace parq::parqd {

Address Address::V4(const std::array<uint8_t, 4>& b) {
  Address a;
  a.family = Family::kIPv4;
  std::copy(b.begin(), b.end(), a.bytes.begin());
  return a;
}

Address Address::V6(const std::array<uint8_t, 16>& b) {
  Address a;
  a.family = Family::kIPv6;
  a.bytes = b;
  return a;
}

std::optional<Address> Address::Parse(std::string_view text) {
  // inet_pton needs a terminated string; addresses are short.
  if (text.size() >= INET6_ADDRSTRLEN)
    return std::nullopt;
  const std::string s(text);
  std::array<uint8_t, 4> v4{};
  if (inet_pton(AF_INET, s.c_str(), v4.data()) == 1)
    return V4(v4);
  std::array<uint8_t, 16> v6{};
  if (inet_pton(AF_INET6, s.c_str(), v6.data()) == 1)
    return V6(v6);
  return std::nullopt;
}

std::string Address::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  const int af = family == Family::kIPv4 ? AF_INET : AF_INET6;
  if (!inet_ntop(af, bytes.data(), buf, sizeof(buf)))
    return "?";
  return buf;
}

std::optional<Address> FromSockaddr(const sockaddr& sa) {
  if (sa.sa_family == AF_INET) {
    const auto& sin = reinterpret_cast<const sockaddr_in&>(sa);
    std::array<uint8_t, 4> b;
    std::memcpy(b.data(), &sin.sin_addr, 4);
    return Address::V4(b);
  }
  if (sa.sa_family == AF_INET6) {
    const auto& sin6 = reinterpret_cast<const sockaddr_in6&>(sa);
    const uint8_t* p = sin6.sin6_addr.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr))
      return Address::V4({p[12], p[13], p[14], p[15]});
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), p, 16);
    return Address::V6(b);
  }
  return std::nullopt;
}

}  // namespace parq::parqd
