// SPDX-License-Identifier: GPL-2.0

#include "address.h"

#include <arpa/inet.h>

#include <algorithm>

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

}  // namespace parq::parqd
