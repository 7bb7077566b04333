// SPDX-License-Identifier: GPL-2.0
//
// One netlink request and its answers over libnl, for the parq family
// (kernel_genl.cc) and for tc's objects over rtnetlink (tc_link.cc).
// Sockets are opened with extended acks (NETLINK_EXT_ACK, and
// NETLINK_CAP_ACK so that an error does not echo the request), and a
// refusal carries the kernel's message from the error's TLVs.

#ifndef PARQD_NETLINK_NL_EXCHANGE_H
#define PARQD_NETLINK_NL_EXCHANGE_H

#include <linux/netlink.h>

#include <functional>
#include <optional>
#include <string>

#include "base/result.h"
#include "netlink/kernel.h"

struct nl_msg;
struct nl_sock;

namespace parq::parqd {

// How a request ended: its errno (0 for success) and the kernel's
// message.
struct NlOutcome {
  bool done = false;
  int error = 0;  // positive errno
  std::string message;
};

// The NLMSGERR_ATTR_MSG of an error that carries TLVs, or "".
std::string ExtackMessage(const nlmsgerr* e);

// A socket of `protocol` (NETLINK_ROUTE, NETLINK_GENERIC), connected and
// with extended acks asked for; nl_socket_free() it.
Result<nl_sock*, KernelError> OpenNetlink(int protocol);

// A deadline on each read of `sk`: a request with no answer within it
// fails (ETIMEDOUT).  For a socket of one request only: a late answer
// would be read as the next request's.
inline constexpr int kNlDeadlineSeconds = 10;
void SetNlDeadline(nl_sock* sk);

// Sends `msg` (consumed) on `sk` and reads until its ack, its error or
// the end of its dump, giving every answer to `answer`; a dump that ended
// with an error, or that the kernel marked interrupted, is an error.  The
// returned error is the socket's (`peer` names the other side in it); the
// kernel's refusal is in `outcome`.
std::optional<KernelError> NlExchange(
    nl_sock* sk, nl_msg* msg, NlOutcome* outcome,
    const std::function<void(nl_msg*)>& answer, const std::string& peer);

// Turns an outcome with an error into a KernelError.
inline std::optional<KernelError> Refusal(const NlOutcome& o) {
  if (!o.error)
    return std::nullopt;
  return KernelError{o.error, o.message};
}

}  // namespace parq::parqd

#endif
