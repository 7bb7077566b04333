// SPDX-License-Identifier: GPL-2.0

#include "netlink/nl_exchange.h"

#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace parq::parqd {

std::string ExtackMessage(const nlmsgerr* e) {
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(
      reinterpret_cast<const char*>(e) - NLMSG_HDRLEN);
  if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS))
    return {};
  size_t off = NLMSG_HDRLEN + sizeof(nlmsgerr);
  if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
    off += e->msg.nlmsg_len - NLMSG_HDRLEN;
  const char* base = reinterpret_cast<const char*>(hdr);
  while (off + NLA_HDRLEN <= hdr->nlmsg_len) {
    nlattr a;
    std::memcpy(&a, base + off, sizeof(a));
    if (a.nla_len < NLA_HDRLEN || off + a.nla_len > hdr->nlmsg_len)
      break;
    if ((a.nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      std::string s(base + off + NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
      if (auto z = s.find('\0'); z != std::string::npos)
        s.resize(z);
      return s;
    }
    off += NLA_ALIGN(a.nla_len);
  }
  return {};
}

Result<nl_sock*, KernelError> OpenNetlink(int protocol) {
  nl_sock* sk = nl_socket_alloc();
  if (!sk)
    return Err{KernelError{ENOMEM, "cannot allocate a netlink socket"}};
  if (int r = nl_connect(sk, protocol); r < 0) {
    nl_socket_free(sk);
    return Err{KernelError{
        EIO, std::string("cannot open a netlink socket: ") + nl_geterror(r)}};
  }
  const int one = 1;
  // Best effort: without them errors still carry their errno.
  setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
             sizeof(one));
  setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one,
             sizeof(one));
  return sk;
}

namespace {

struct Exchange {
  NlOutcome* outcome;
  const std::function<void(nl_msg*)>* answer;
};

int OnError(sockaddr_nl*, nlmsgerr* e, void* arg) {
  NlOutcome* o = static_cast<Exchange*>(arg)->outcome;
  o->error = -e->error;
  o->message = ExtackMessage(e);
  o->done = true;
  return NL_STOP;
}

int OnAck(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->outcome->done = true;
  return NL_STOP;
}

// The end of a dump: its payload is the errno of a dump that failed
// midway, which is not to be read as complete.
int OnDone(nl_msg* msg, void* arg) {
  NlOutcome* o = static_cast<Exchange*>(arg)->outcome;
  const nlmsghdr* h = nlmsg_hdr(msg);
  int error = 0;
  if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(error)))
    std::memcpy(&error, nlmsg_data(h), sizeof(error));
  if (error < 0 && !o->error)
    o->error = -error;
  o->done = true;
  return NL_STOP;
}

int OnValid(nl_msg* msg, void* arg) {
  (*static_cast<Exchange*>(arg)->answer)(msg);
  return NL_OK;
}

}  // namespace

void SetNlDeadline(nl_sock* sk) {
  const timeval deadline{kNlDeadlineSeconds, 0};
  setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &deadline,
             sizeof(deadline));
}

std::optional<KernelError> NlExchange(
    nl_sock* sk, nl_msg* msg, NlOutcome* outcome,
    const std::function<void(nl_msg*)>& answer, const std::string& peer) {
  const int sent = nl_send_auto(sk, msg);
  nlmsg_free(msg);
  if (sent < 0)
    return KernelError{EIO, "sending to " + peer + ": " + nl_geterror(sent)};
  nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
  if (!cb)
    return KernelError{ENOMEM, "cannot allocate netlink callbacks"};
  Exchange x{outcome, &answer};
  nl_cb_err(cb, NL_CB_CUSTOM, OnError, &x);
  nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, OnAck, &x);
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, OnValid, &x);
  nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, OnDone, &x);
  std::optional<KernelError> err;
  while (!outcome->done) {
    // A refusal ends the reading with its error, already in `outcome`;
    // a dump the kernel marked interrupted ends it whole but is not.
    const int r = nl_recvmsgs(sk, cb);
    if (outcome->done && r != -NLE_DUMP_INTR)
      break;
    if (r == -NLE_AGAIN) {
      err =
          KernelError{ETIMEDOUT, "no answer from " + peer + " within " +
                                     std::to_string(kNlDeadlineSeconds) + " s"};
      break;
    }
    if (r < 0) {
      err = KernelError{EIO, "reading from " + peer + ": " + nl_geterror(r)};
      break;
    }
  }
  nl_cb_put(cb);
  return err;
}

}  // namespace parq::parqd
