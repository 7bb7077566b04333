// SPDX-License-Identifier: GPL-2.0
//
// KernelCreditTable over libnl-genl-3.  Extended acks are switched on
// (NETLINK_EXT_ACK, with NETLINK_CAP_ACK so errors do not echo the
// request) and the kernel's message is read from the error's TLVs.

#include <linux/netlink.h>
#include <linux/parq.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <cstring>

#include "kernel.hpp"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace parq::parqd {

std::string KernelError::Text() const {
  const std::string errno_text = std::strerror(error);
  if (message.empty())
    return errno_text;
  return message + " (" + errno_text + ")";
}

namespace {

struct Reply {
  bool done = false;
  int error = 0;
  std::string message;
  std::vector<KernelEntry> entries;
};

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

int OnError(sockaddr_nl*, nlmsgerr* e, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  r->error = -e->error;
  r->message = ExtackMessage(e);
  r->done = true;
  return NL_STOP;
}

int OnAck(nl_msg*, void* arg) {
  static_cast<Reply*>(arg)->done = true;
  return NL_STOP;
}

int OnValid(nl_msg* msg, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  nlattr* tb[PARQ_A_MAX + 1] = {};
  if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, PARQ_A_MAX, nullptr) < 0)
    return NL_SKIP;
  KernelEntry e;
  if (tb[PARQ_A_ADDR4] && nla_len(tb[PARQ_A_ADDR4]) == 4) {
    std::array<uint8_t, 4> b;
    std::memcpy(b.data(), nla_data(tb[PARQ_A_ADDR4]), 4);
    e.address = Address::V4(b);
  } else if (tb[PARQ_A_ADDR6] && nla_len(tb[PARQ_A_ADDR6]) == 16) {
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), nla_data(tb[PARQ_A_ADDR6]), 16);
    e.address = Address::V6(b);
  } else {
    return NL_SKIP;
  }
  if (tb[PARQ_A_CREDIT]) e.credit = nla_get_u32(tb[PARQ_A_CREDIT]);
  if (tb[PARQ_A_EPOCH]) e.epoch_ns = nla_get_u64(tb[PARQ_A_EPOCH]);
  if (tb[PARQ_A_LEASE]) e.lease_ns = nla_get_u64(tb[PARQ_A_LEASE]);
  if (tb[PARQ_A_USED]) e.used = nla_get_u32(tb[PARQ_A_USED]);
  if (tb[PARQ_A_PASSED]) e.passed = nla_get_u64(tb[PARQ_A_PASSED]);
  if (tb[PARQ_A_HELD]) e.held = nla_get_u64(tb[PARQ_A_HELD]);
  r->entries.push_back(e);
  return NL_OK;
}

int OnFinish(nl_msg*, void* arg) {
  static_cast<Reply*>(arg)->done = true;
  return NL_STOP;
}

KernelError FromLibnl(int nlerr, const std::string& what) {
  return KernelError{EIO, what + ": " + nl_geterror(nlerr)};
}

class GenlCreditTable final : public KernelCreditTable {
 public:
  GenlCreditTable(nl_sock* sk, int family) : sk_(sk), family_(family) {}
  ~GenlCreditTable() override { nl_socket_free(sk_); }
  GenlCreditTable(const GenlCreditTable&) = delete;
  GenlCreditTable& operator=(const GenlCreditTable&) = delete;

  std::optional<KernelError> Apply(const CreditRequest& r) override {
    nl_msg* msg = nlmsg_alloc();
    if (!msg)
      return KernelError{ENOMEM, "cannot allocate a netlink message"};
    const uint8_t cmd = r.op == CreditRequest::Op::kSet ? PARQ_CMD_CREDIT_SET
                                                        : PARQ_CMD_CREDIT_DEL;
    bool ok = genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0,
                          NLM_F_ACK, cmd, PARQ_GENL_VERSION) != nullptr;
    if (ok && r.address) {
      if (r.address->family == Family::kIPv4)
        ok = nla_put(msg, PARQ_A_ADDR4, 4, r.address->bytes.data()) == 0;
      else
        ok = nla_put(msg, PARQ_A_ADDR6, 16, r.address->bytes.data()) == 0;
    }
    if (ok && r.op == CreditRequest::Op::kSet) {
      ok = nla_put_u32(msg, PARQ_A_CREDIT, r.credit) == 0 &&
           nla_put_u64(msg, PARQ_A_LEASE, r.lease_ns) == 0 &&
           (!r.epoch_ns || nla_put_u64(msg, PARQ_A_EPOCH, *r.epoch_ns) == 0);
    }
    if (!ok) {
      nlmsg_free(msg);
      return KernelError{EMSGSIZE, "cannot build the netlink request"};
    }
    Reply reply;
    auto err = Exchange(msg, &reply);
    if (err)
      return err;
    if (reply.error)
      return KernelError{reply.error, reply.message};
    return std::nullopt;
  }

  Result<std::vector<KernelEntry>, KernelError> Dump() override {
    nl_msg* msg = nlmsg_alloc();
    if (!msg)
      return Err{KernelError{ENOMEM, "cannot allocate a netlink message"}};
    if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_DUMP,
                     PARQ_CMD_CREDIT_GET, PARQ_GENL_VERSION)) {
      nlmsg_free(msg);
      return Err{KernelError{EMSGSIZE, "cannot build the netlink request"}};
    }
    Reply reply;
    if (auto err = Exchange(msg, &reply))
      return Err{*err};
    if (reply.error)
      return Err{KernelError{reply.error, reply.message}};
    return std::move(reply.entries);
  }

 private:
  // Sends `msg` (consumed) and reads until the ack, error or dump end.
  std::optional<KernelError> Exchange(nl_msg* msg, Reply* reply) {
    const int sent = nl_send_auto(sk_, msg);
    nlmsg_free(msg);
    if (sent < 0)
      return FromLibnl(sent, "sending to the parq family");
    nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
    if (!cb)
      return KernelError{ENOMEM, "cannot allocate netlink callbacks"};
    nl_cb_err(cb, NL_CB_CUSTOM, OnError, reply);
    nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, OnAck, reply);
    nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, OnValid, reply);
    nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, OnFinish, reply);
    std::optional<KernelError> err;
    while (!reply->done) {
      const int r = nl_recvmsgs(sk_, cb);
      if (r < 0 && !reply->done) {
        err = FromLibnl(r, "reading from the parq family");
        break;
      }
    }
    nl_cb_put(cb);
    return err;
  }

  nl_sock* sk_;
  int family_;
};

}  // namespace

Result<std::unique_ptr<KernelCreditTable>, KernelError>
OpenGenlCreditTable() {
  nl_sock* sk = nl_socket_alloc();
  if (!sk)
    return Err{KernelError{ENOMEM, "cannot allocate a netlink socket"}};
  if (int r = genl_connect(sk); r < 0) {
    nl_socket_free(sk);
    return Err{FromLibnl(r, "cannot open a generic netlink socket")};
  }
  const int one = 1;
  // Best effort: without them errors still carry their errno.
  setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
             sizeof(one));
  setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one,
             sizeof(one));
  const int family = genl_ctrl_resolve(sk, PARQ_GENL_NAME);
  if (family < 0) {
    nl_socket_free(sk);
    return Err{KernelError{
        ENOENT, "the kernel has no \"" PARQ_GENL_NAME
                "\" generic netlink family: load the module (modprobe "
                "sch_parq) or install it (make install)"}};
  }
  return std::unique_ptr<KernelCreditTable>(
      std::make_unique<GenlCreditTable>(sk, family));
}

}  // namespace parq::parqd
