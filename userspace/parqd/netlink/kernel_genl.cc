// SPDX-License-Identifier: GPL-2.0
//
// KernelCreditTable and KernelMonitor over libnl-genl-3, with the
// kernel's extended-ack messages (nl_exchange.h).

#include <linux/netlink.h>
#include <linux/parq.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <cstring>

#include "netlink/kernel.h"
#include "netlink/nl_exchange.h"

namespace parq::parqd {

std::string KernelError::Text() const {
  std::string errno_text = std::strerror(error);
  if (message.empty())
    return errno_text;
  return message + " (" + errno_text + ")";
}

namespace {

struct Reply {
  NlOutcome outcome;
  std::vector<KernelEntry> entries;
  std::vector<PeerSample> peers;
  std::optional<MonitorState> monitor;
};

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
  if (tb[PARQ_A_CREDIT])
    e.credit = nla_get_u32(tb[PARQ_A_CREDIT]);
  if (tb[PARQ_A_EPOCH])
    e.epoch_ns = nla_get_u64(tb[PARQ_A_EPOCH]);
  if (tb[PARQ_A_LEASE])
    e.lease_ns = nla_get_u64(tb[PARQ_A_LEASE]);
  if (tb[PARQ_A_USED])
    e.used = nla_get_u32(tb[PARQ_A_USED]);
  if (tb[PARQ_A_PASSED])
    e.passed = nla_get_u64(tb[PARQ_A_PASSED]);
  if (tb[PARQ_A_HELD])
    e.held = nla_get_u64(tb[PARQ_A_HELD]);
  r->entries.push_back(e);
  return NL_OK;
}

KernelError FromLibnl(int nlerr, const std::string& what) {
  return KernelError{EIO, what + ": " + nl_geterror(nlerr)};
}

std::optional<Address> AddressOf(nlattr** tb) {
  if (tb[PARQ_A_ADDR4] && nla_len(tb[PARQ_A_ADDR4]) == 4) {
    std::array<uint8_t, 4> b;
    std::memcpy(b.data(), nla_data(tb[PARQ_A_ADDR4]), 4);
    return Address::V4(b);
  }
  if (tb[PARQ_A_ADDR6] && nla_len(tb[PARQ_A_ADDR6]) == 16) {
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), nla_data(tb[PARQ_A_ADDR6]), 16);
    return Address::V6(b);
  }
  return std::nullopt;
}

uint64_t U64(nlattr** tb, int a) {
  return tb[a] && nla_len(tb[a]) == 8 ? nla_get_u64(tb[a]) : 0;
}

std::optional<uint64_t> OptU64(nlattr** tb, int a) {
  if (tb[a] && nla_len(tb[a]) == 8)
    return nla_get_u64(tb[a]);
  return std::nullopt;
}

int OnPeer(nl_msg* msg, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  nlattr* tb[PARQ_A_MAX + 1] = {};
  if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, PARQ_A_MAX, nullptr) < 0)
    return NL_SKIP;
  auto a = AddressOf(tb);
  if (!a)
    return NL_SKIP;
  PeerSample p;
  p.address = *a;
  p.par_packets = U64(tb, PARQ_A_PAR_PACKETS);
  p.par_bytes = U64(tb, PARQ_A_PAR_BYTES);
  p.par_age_ns = OptU64(tb, PARQ_A_PAR_AGE);
  p.loc_packets = U64(tb, PARQ_A_LOC_PACKETS);
  p.loc_bytes = U64(tb, PARQ_A_LOC_BYTES);
  p.loc_age_ns = OptU64(tb, PARQ_A_LOC_AGE);
  r->peers.push_back(p);
  return NL_OK;
}

uint32_t U32(nlattr** tb, int a) {
  return tb[a] && nla_len(tb[a]) == 4 ? nla_get_u32(tb[a]) : 0;
}

bool U8(nlattr** tb, int a) {
  return tb[a] && nla_len(tb[a]) == 1 && nla_get_u8(tb[a]) != 0;
}

int OnMonitor(nl_msg* msg, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  nlattr* tb[PARQ_A_MAX + 1] = {};
  if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, PARQ_A_MAX, nullptr) < 0)
    return NL_SKIP;
  MonitorState s;
  s.enabled = U8(tb, PARQ_A_MON_ENABLED);
  s.size = U32(tb, PARQ_A_MON_SIZE);
  s.dscp_mask = U64(tb, PARQ_A_MON_DSCP);
  s.hold_ns = U64(tb, PARQ_A_MON_HOLD);
  s.sources = U32(tb, PARQ_A_MON_SOURCES);
  s.active = U8(tb, PARQ_A_MON_ACTIVE);
  s.evicted = U64(tb, PARQ_A_MON_EVICTED);
  s.events = U64(tb, PARQ_A_MON_EVENTS);
  s.uncounted = U64(tb, PARQ_A_MON_UNCOUNTED);
  s.peers = U32(tb, PARQ_A_MON_NPEERS);
  s.foreign = U64(tb, PARQ_A_MON_FOREIGN);
  s.report_local = U8(tb, PARQ_A_MON_REPORT_LOCAL);
  s.local_events = U64(tb, PARQ_A_MON_LOCAL_EVENTS);
  s.min_bytes = U32(tb, PARQ_A_MON_MIN_BYTES);
  s.below = U64(tb, PARQ_A_MON_BELOW);
  r->monitor = s;
  return NL_OK;
}

// Sends `msg` (consumed) on `sk` and reads until the ack, error or dump
// end; `valid` gets every answer.
std::optional<KernelError> Exchange(nl_sock* sk, nl_msg* msg, Reply* reply,
                                    nl_recvmsg_msg_cb_t valid) {
  return NlExchange(
      sk, msg, &reply->outcome, [&](nl_msg* m) { valid(m, reply); },
      "the parq family");
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
    bool ok = genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_ACK,
                          cmd, PARQ_GENL_VERSION) != nullptr;
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
    return Refusal(reply.outcome);
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
    if (auto e = Refusal(reply.outcome))
      return Err{*e};
    return std::move(reply.entries);
  }

 private:
  std::optional<KernelError> Exchange(nl_msg* msg, Reply* reply) {
    return parqd::Exchange(sk_, msg, reply, OnValid);
  }

  nl_sock* sk_;
  int family_;
};

}  // namespace

namespace {

constexpr const char* kNoEventsGroup =
    "the parq family has no \"" PARQ_GENL_MCGRP_EVENTS
    "\" group on this kernel (it has none without "
    "GENL_MCAST_CAP_NET_ADMIN: Linux 6.6, or Debian's 6.1): the receive "
    "monitor's reports cannot be read";

// A generic netlink socket with extended acks and the parq family's id.
Result<std::pair<nl_sock*, int>, KernelError> OpenFamily() {
  auto opened = OpenNetlink(NETLINK_GENERIC);
  if (!opened.ok())
    return Err{opened.error()};
  nl_sock* sk = opened.value();
  const int family = genl_ctrl_resolve(sk, PARQ_GENL_NAME);
  if (family < 0) {
    nl_socket_free(sk);
    return Err{KernelError{
        ENOENT, "the kernel has no \"" PARQ_GENL_NAME
                "\" generic netlink family: load the module (modprobe "
                "sch_parq) or install it (make install)"}};
  }
  return std::pair<nl_sock*, int>(sk, family);
}

class GenlMonitor final : public KernelMonitor {
 public:
  GenlMonitor(nl_sock* sk, int family, nl_sock* ev)
      : sk_(sk), family_(family), ev_(ev) {}
  ~GenlMonitor() override {
    nl_socket_free(sk_);
    if (ev_)
      nl_socket_free(ev_);
  }
  GenlMonitor(const GenlMonitor&) = delete;
  GenlMonitor& operator=(const GenlMonitor&) = delete;

  std::optional<KernelError> Enable(const MonitorSettings& s) override {
    return Set(true, &s);
  }
  std::optional<KernelError> Disable() override { return Set(false, nullptr); }

  Result<std::vector<PeerSample>, KernelError> Peers() override {
    nl_msg* msg = nlmsg_alloc();
    if (!msg)
      return Err{KernelError{ENOMEM, "cannot allocate a netlink message"}};
    if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_DUMP,
                     PARQ_CMD_PEER_GET, PARQ_GENL_VERSION)) {
      nlmsg_free(msg);
      return Err{KernelError{EMSGSIZE, "cannot build the netlink request"}};
    }
    Reply reply;
    if (auto err = Exchange(sk_, msg, &reply, OnPeer))
      return Err{*err};
    if (auto e = Refusal(reply.outcome))
      return Err{*e};
    return std::move(reply.peers);
  }

  Result<MonitorState, KernelError> State() override {
    nl_msg* msg = nlmsg_alloc();
    if (!msg)
      return Err{KernelError{ENOMEM, "cannot allocate a netlink message"}};
    if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_ACK,
                     PARQ_CMD_MON_GET, PARQ_GENL_VERSION)) {
      nlmsg_free(msg);
      return Err{KernelError{EMSGSIZE, "cannot build the netlink request"}};
    }
    Reply reply;
    if (auto err = Exchange(sk_, msg, &reply, OnMonitor))
      return Err{*err};
    if (auto e = Refusal(reply.outcome))
      return Err{*e};
    if (!reply.monitor)
      return Err{KernelError{EPROTO, "the kernel sent no monitor state"}};
    return *reply.monitor;
  }

  int event_fd() const override { return ev_ ? nl_socket_get_fd(ev_) : -1; }

  Result<std::vector<MonitorEvent>, KernelError> ReadEvents() override {
    if (!ev_)
      return Err{KernelError{ENOENT, kNoEventsGroup}};
    std::vector<MonitorEvent> out;
    nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
    if (!cb)
      return Err{KernelError{ENOMEM, "cannot allocate netlink callbacks"}};
    nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, OnEvent, &out);
    nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, NoSeqCheck, nullptr);
    std::optional<KernelError> err;
    for (;;) {
      const int r = nl_recvmsgs(ev_, cb);
      if (r >= 0)
        continue;
      if (r != -NLE_AGAIN)
        err = FromLibnl(r, "reading the parq family's events");
      break;
    }
    nl_cb_put(cb);
    if (err)
      return Err{*err};
    return out;
  }

 private:
  static int NoSeqCheck(nl_msg*, void*) { return NL_OK; }

  static int OnEvent(nl_msg* msg, void* arg) {
    auto* out = static_cast<std::vector<MonitorEvent>*>(arg);
    const nlmsghdr* h = nlmsg_hdr(msg);
    const auto* g = static_cast<const genlmsghdr*>(nlmsg_data(h));
    if (g->cmd != PARQ_CMD_MON_EVENT && g->cmd != PARQ_CMD_MON_LOCAL)
      return NL_SKIP;
    nlattr* tb[PARQ_A_MAX + 1] = {};
    if (genlmsg_parse(const_cast<nlmsghdr*>(h), 0, tb, PARQ_A_MAX, nullptr) < 0)
      return NL_SKIP;
    using Kind = MonitorEvent::Kind;
    if (g->cmd == PARQ_CMD_MON_LOCAL) {
      if (auto a = AddressOf(tb))
        out->push_back({Kind::kLocal, a});
      return NL_OK;
    }
    if (!tb[PARQ_A_MON_ACTIVE])
      return NL_SKIP;
    out->push_back(
        {nla_get_u8(tb[PARQ_A_MON_ACTIVE]) ? Kind::kStart : Kind::kStop,
         AddressOf(tb)});
    return NL_OK;
  }

  // With `s`, enable with its settings; without, disable.
  std::optional<KernelError> Set(bool enabled, const MonitorSettings* s) {
    // A page for the header and the settings, and room for every peer
    // (an IPv6 address takes 20 bytes as an attribute).
    const size_t peers = s ? s->peers.size() : 0;
    nl_msg* msg = nlmsg_alloc_size(4096 + 20 * peers);
    if (!msg)
      return KernelError{ENOMEM, "cannot allocate a netlink message"};
    bool ok = genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_ACK,
                          PARQ_CMD_MON_SET, PARQ_GENL_VERSION) != nullptr &&
              nla_put_u8(msg, PARQ_A_MON_ENABLED, enabled ? 1 : 0) == 0;
    if (ok && s)
      ok = nla_put_u64(msg, PARQ_A_MON_HOLD, s->hold_ns) == 0 &&
           (!s->dscp_mask ||
            nla_put_u64(msg, PARQ_A_MON_DSCP, *s->dscp_mask) == 0) &&
           nla_put_u8(msg, PARQ_A_MON_REPORT_LOCAL, s->report_local) == 0 &&
           nla_put_u32(msg, PARQ_A_MON_MIN_BYTES, s->min_bytes) == 0 &&
           PutPeers(msg, s->peers);
    if (!ok) {
      nlmsg_free(msg);
      return KernelError{EMSGSIZE, "cannot build the netlink request"};
    }
    Reply reply;
    if (auto err = Exchange(sk_, msg, &reply, OnValid))
      return err;
    return Refusal(reply.outcome);
  }

  // PARQ_A_MON_PEERS, always: an empty set counts every source again.
  static bool PutPeers(nl_msg* msg, const std::vector<Address>& peers) {
    nlattr* nest = nla_nest_start(msg, PARQ_A_MON_PEERS | NLA_F_NESTED);
    if (!nest)
      return false;
    for (const Address& a : peers)
      if (nla_put(msg, a.family == Family::kIPv4 ? PARQ_A_ADDR4 : PARQ_A_ADDR6,
                  a.family == Family::kIPv4 ? 4 : 16, a.bytes.data()) != 0)
        return false;
    return nla_nest_end(msg, nest) == 0;
  }

  nl_sock* sk_;
  int family_;
  nl_sock* ev_;
};

}  // namespace

Result<std::unique_ptr<KernelCreditTable>, KernelError> OpenGenlCreditTable() {
  auto f = OpenFamily();
  if (!f.ok())
    return Err{f.error()};
  auto [sk, family] = f.value();
  return std::unique_ptr<KernelCreditTable>(
      std::make_unique<GenlCreditTable>(sk, family));
}

Result<std::unique_ptr<KernelMonitor>, KernelError> OpenGenlMonitor() {
  auto f = OpenFamily();
  if (!f.ok())
    return Err{f.error()};
  auto [sk, family] = f.value();
  nl_sock* ev = nl_socket_alloc();
  if (!ev) {
    nl_socket_free(sk);
    return Err{KernelError{ENOMEM, "cannot allocate a netlink socket"}};
  }
  int r = genl_connect(ev);
  const int grp =
      r < 0 ? r
            : genl_ctrl_resolve_grp(sk, PARQ_GENL_NAME, PARQ_GENL_MCGRP_EVENTS);
  if (r >= 0 && grp >= 0)
    r = nl_socket_add_membership(ev, grp);
  if (r >= 0)
    r = nl_socket_set_nonblocking(ev);
  if (r >= 0 && grp < 0 && grp != -NLE_OBJ_NOTFOUND)
    r = grp;  // the lookup failed: not the same as no group
  if (r >= 0 && grp < 0) {
    // No events group (a kernel without GENL_MCAST_CAP_NET_ADMIN, where
    // anyone could read them): the state can be read and set, no event
    // comes.
    nl_socket_free(ev);
    return std::unique_ptr<KernelMonitor>(
        std::make_unique<GenlMonitor>(sk, family, nullptr));
  }
  if (r < 0) {
    nl_socket_free(sk);
    nl_socket_free(ev);
    return Err{FromLibnl(r, "cannot subscribe to the parq family's events")};
  }
  nl_socket_disable_seq_check(ev);
  // Room for bursts of reports; an overflow is detected (ENOBUFS).
  nl_socket_set_buffer_size(ev, 1 << 20, 0);
  return std::unique_ptr<KernelMonitor>(
      std::make_unique<GenlMonitor>(sk, family, ev));
}

}  // namespace parq::parqd
