// SPDX-License-Identifier: GPL-2.0

#include "proto/datagrams.h"

#include <linux/pkt_sched.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace parq::parqd {

namespace {

// The destination address of a datagram received with `h`, from its
// IP_PKTINFO or IPV6_PKTINFO control message.
std::optional<Address> Destination(msghdr& h) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in_pktinfo))) {
      in_pktinfo info{};
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_addr = info.ipi_addr;
      return FromSockaddr(reinterpret_cast<const sockaddr&>(sin));
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in6_pktinfo))) {
      in6_pktinfo info{};
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      sockaddr_in6 sin6{};
      sin6.sin6_family = AF_INET6;
      sin6.sin6_addr = info.ipi6_addr;
      return FromSockaddr(reinterpret_cast<const sockaddr&>(sin6));
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::monostate, int> ReceiveDestinations(int fd) {
  int family = 0;
  socklen_t len = sizeof(family);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) != 0)
    return Err{errno};
  const int one = 1;
  // An IPv6 socket reports IPv4 datagrams' destinations as IPv4-mapped
  // addresses in IPV6_PKTINFO.
  const int rc =
      family == AF_INET6
          ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
          : setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  if (rc != 0)
    return Err{errno};
  return std::monostate{};
}

Result<std::monostate, int> MarkDscp(int fd, uint8_t dscp) {
  int family = 0;
  socklen_t len = sizeof(family);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) != 0)
    return Err{errno};
  const int tos = (dscp & 0x3f) << 2;  // the ECN bits stay 0
  if (family == AF_INET6 &&
      setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)) != 0)
    return Err{errno};
  // On an IPv6 socket, IP_TOS marks what it sends to IPv4-mapped
  // addresses.
  if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) != 0)
    return Err{errno};
  return std::monostate{};
}

Result<std::monostate, int> MarkControlPriority(int fd) {
  const int prio = TC_PRIO_CONTROL;
  if (setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)) != 0)
    return Err{errno};
  return std::monostate{};
}

DatagramReader::DatagramReader() {
  for (size_t i = 0; i < kBatch; i++) {
    iov_[i] = {bufs_[i].data(), kMaxBytes};
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
}

Result<size_t, int> DatagramReader::Drain(int fd, size_t max,
                                          const Handler& h) {
  size_t total = 0;
  while (total < max) {
    const size_t want = std::min(kBatch, max - total);
    for (size_t i = 0; i < want; i++) {
      msgs_[i].msg_hdr.msg_name = &from_[i];
      msgs_[i].msg_hdr.msg_namelen = sizeof(from_[i]);
      msgs_[i].msg_hdr.msg_control = control_[i].bytes.data();
      msgs_[i].msg_hdr.msg_controllen = kControlBytes;
      msgs_[i].msg_hdr.msg_flags = 0;
      msgs_[i].msg_len = 0;
    }
    const int n = recvmmsg(fd, msgs_.data(), static_cast<unsigned>(want),
                           MSG_DONTWAIT, nullptr);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || total > 0)
        return total;
      return Err{errno};
    }
    for (int i = 0; i < n; i++)
      h(std::span<const uint8_t>(bufs_[i].data(), msgs_[i].msg_len), from_[i],
        Destination(msgs_[i].msg_hdr));
    total += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < want)
      break;  // the queue is empty
  }
  return total;
}

std::vector<bool> SendBatch(int fd, std::span<const OutDatagram> out) {
  std::vector<bool> sent(out.size(), false);
  std::vector<iovec> iov(out.size());
  std::vector<mmsghdr> msgs(out.size());
  for (size_t i = 0; i < out.size(); i++) {
    // sendmmsg() does not write through these pointers.
    iov[i] = {const_cast<uint8_t*>(out[i].bytes.data()), out[i].bytes.size()};
    msghdr& h = msgs[i].msg_hdr;
    h.msg_name = const_cast<sockaddr_storage*>(&out[i].to);
    h.msg_namelen = out[i].to_len;
    h.msg_iov = &iov[i];
    h.msg_iovlen = 1;
  }
  size_t i = 0;
  while (i < out.size()) {
    if (out[i].to_len == 0) {
      i++;
      continue;
    }
    // Up to the next datagram without an address, kMaxSendBatch at most.
    size_t end = i;
    while (end < out.size() && out[end].to_len != 0 && end - i < kMaxSendBatch)
      end++;
    const int n =
        sendmmsg(fd, &msgs[i], static_cast<unsigned>(end - i), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      i++;  // this one was refused; the rest may still go
      continue;
    }
    for (size_t k = i; k < i + static_cast<size_t>(n); k++)
      sent[k] = msgs[k].msg_len == out[k].bytes.size();
    i += static_cast<size_t>(n);
  }
  return sent;
}

}  // namespace parq::parqd
