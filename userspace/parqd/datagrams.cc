// SPDX-License-Identifier: GPL-2.0

#include "datagrams.h"

#include <algorithm>
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
