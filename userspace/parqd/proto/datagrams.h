// SPDX-License-Identifier: GPL-2.0
//
// A UDP socket's datagrams in batches.  Reading: Drain() takes up to
// kBatch datagrams per recvmmsg() call and at most `max` per call of its
// own, so that a flood at the port costs one system call per kBatch
// datagrams and cannot keep the caller from its timers: the caller returns
// to its poll loop, services what is due, and drains again.  Sending:
// SendBatch() sends the messages of one decision (every GRANT of an epoch)
// with one sendmmsg() call.
//
// Each datagram read comes with its destination address, which the credit
// message's MAC covers (wire.h): the socket must have been set up by
// ReceiveDestinations() first, else the handler hears none.

#ifndef PARQD_PROTO_DATAGRAMS_H
#define PARQD_PROTO_DATAGRAMS_H

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/address.h"
#include "base/result.h"

namespace parq::parqd {

class DatagramReader {
 public:
  static constexpr size_t kBatch = 32;
  // Longer than any credit message (wire::kMaxMessageBytes): a longer
  // datagram arrives cut to this length and fails the decoder's framing.
  static constexpr size_t kMaxBytes = 2048;

  // `to`: the datagram's destination address (an IPv4-mapped IPv6
  // address as IPv4), none when the kernel did not say.
  using Handler = std::function<void(std::span<const uint8_t> bytes,
                                     const sockaddr_storage& from,
                                     const std::optional<Address>& to)>;

  DatagramReader();
  DatagramReader(const DatagramReader&) = delete;
  DatagramReader& operator=(const DatagramReader&) = delete;

  // Hands each datagram queued on the non-blocking socket `fd` to `h`, in
  // order, until the queue is empty or `max` were read; returns how many
  // were read, or errno when recvmmsg() failed before any (EAGAIN is an
  // empty queue, not an error).
  Result<size_t, int> Drain(int fd, size_t max, const Handler& h);

 private:
  std::array<std::array<uint8_t, kMaxBytes>, kBatch> bufs_{};
  std::array<sockaddr_storage, kBatch> from_{};
  // Room for one IP_PKTINFO or IPV6_PKTINFO message and then some.
  static constexpr size_t kControlBytes = 128;
  struct alignas(cmsghdr) Control {
    std::array<uint8_t, kControlBytes> bytes;
  };
  std::array<Control, kBatch> control_{};
  std::array<iovec, kBatch> iov_{};
  std::array<mmsghdr, kBatch> msgs_{};
};

// Asks the kernel to tell, with each datagram read from the UDP socket
// `fd` (AF_INET or AF_INET6), its destination address: IP_PKTINFO, and
// IPV6_RECVPKTINFO on an IPv6 socket.  errno on failure.
Result<std::monostate, int> ReceiveDestinations(int fd);

// What `fd` sends carries DSCP `dscp` (0..63): IPv4's TOS and, on an IPv6
// socket, the traffic class as well (an IPv6 socket sends IPv4 too).  The
// errno of the first setsockopt() that failed.
Result<std::monostate, int> MarkDscp(int fd, uint8_t dscp);

// What `fd` sends has priority TC_PRIO_CONTROL (7), which sch_parq serves
// ahead of data.  The kernel allows it with CAP_NET_ADMIN (or
// CAP_NET_RAW) only: EPERM without.
Result<std::monostate, int> MarkControlPriority(int fd);

// One datagram for SendBatch().
struct OutDatagram {
  sockaddr_storage to{};
  socklen_t to_len = 0;  // 0: no address; not sent
  std::span<const uint8_t> bytes;
};

// Sends `out` on the socket `fd` without blocking, in order, with one
// sendmmsg() call per kMaxBatch datagrams (more only when one is refused:
// it is skipped and the rest go on).  Returns whether each was sent whole.
std::vector<bool> SendBatch(int fd, std::span<const OutDatagram> out);

// The most datagrams one sendmmsg() call takes (the kernel's UIO_MAXIOV).
inline constexpr size_t kMaxSendBatch = 1024;

}  // namespace parq::parqd

#endif
