// SPDX-License-Identifier: GPL-2.0

#include "datagrams.h"

#include <cerrno>

namespace parq::parqd {

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
      h(std::span<const uint8_t>(bufs_[i].data(), msgs_[i].msg_len), from_[i]);
    total += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < want)
      break;  // the queue is empty
  }
  return total;
}

}  // namespace parq::parqd
