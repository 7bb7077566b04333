// SPDX-License-Identifier: GPL-2.0

#include "netlink/tc_link.h"

#include <arpa/inet.h>
#include <linux/gen_stats.h>
#include <linux/if_ether.h>
#include <linux/parq.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "netlink/nl_exchange.h"

namespace parq::parqd {

std::string TcHandleText(uint32_t handle) {
  if (handle == TC_H_ROOT)
    return "root";
  char b[24];
  if (TC_H_MIN(handle))
    std::snprintf(b, sizeof(b), "%x:%x", TC_H_MAJ(handle) >> 16,
                  TC_H_MIN(handle));
  else
    std::snprintf(b, sizeof(b), "%x:", TC_H_MAJ(handle) >> 16);
  return b;
}

std::string ShellWord(const std::string& dev) {
  const bool plain =
      !dev.empty() && dev.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789._-@%+=,") == std::string::npos;
  if (plain)
    return dev;
  std::string q = "'";
  for (char c : dev)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

// The filter kinds whose options' attribute 1 is the class they send to
// (TCA_FW_CLASSID, TCA_U32_CLASSID, TCA_FLOWER_CLASSID, ...).
constexpr std::array<std::string_view, 6> kClassidFirst = {
    "fw", "u32", "flower", "basic", "matchall", "route"};
static_assert(TCA_FW_CLASSID == 1 && TCA_U32_CLASSID == 1 &&
              TCA_FLOWER_CLASSID == 1 && TCA_BASIC_CLASSID == 1 &&
              TCA_MATCHALL_CLASSID == 1 && TCA_ROUTE4_CLASSID == 1);

// A message of `type` with its tcmsg, or nullptr.
nl_msg* TcMessage(int type, int flags, int ifindex, uint32_t parent,
                  uint32_t handle, uint32_t info) {
  nl_msg* msg = nlmsg_alloc_simple(type, flags);
  if (!msg)
    return nullptr;
  tcmsg t{};
  t.tcm_family = AF_UNSPEC;
  t.tcm_ifindex = ifindex;
  t.tcm_parent = parent;
  t.tcm_handle = handle;
  t.tcm_info = info;
  if (nlmsg_append(msg, &t, sizeof(t), NLMSG_ALIGNTO) < 0) {
    nlmsg_free(msg);
    return nullptr;
  }
  return msg;
}

// TCA_KIND `kind` and TCA_OPTIONS holding what `put` adds, or false.
template <typename Put>
bool PutKindAndOptions(nl_msg* msg, const char* kind, Put put) {
  if (nla_put_string(msg, TCA_KIND, kind) < 0)
    return false;
  nlattr* opts = nla_nest_start(msg, TCA_OPTIONS | NLA_F_NESTED);
  return opts && put() && nla_nest_end(msg, opts) == 0;
}

nl_msg* Built(nl_msg* msg, bool ok) {
  if (msg && !ok) {
    nlmsg_free(msg);
    return nullptr;
  }
  return msg;
}

// TCA_STATS2's basic and queue statistics and the kind's own.
void ReadStats(nlattr* stats2, TcObject* o) {
  nlattr* sb[TCA_STATS_MAX + 1] = {};
  if (nla_parse_nested(sb, TCA_STATS_MAX, stats2, nullptr) < 0)
    return;
  TcStats s;
  if (sb[TCA_STATS_BASIC]) {
    gnet_stats_basic b{};
    std::memcpy(&b, nla_data(sb[TCA_STATS_BASIC]),
                std::min<size_t>(sizeof(b), nla_len(sb[TCA_STATS_BASIC])));
    s.bytes = b.bytes;
    s.packets = b.packets;
  }
  // Past 2^32 packets the kernel adds the whole count.
  if (sb[TCA_STATS_PKT64] && nla_len(sb[TCA_STATS_PKT64]) == 8)
    s.packets = nla_get_u64(sb[TCA_STATS_PKT64]);
  if (sb[TCA_STATS_QUEUE]) {
    gnet_stats_queue q{};
    std::memcpy(&q, nla_data(sb[TCA_STATS_QUEUE]),
                std::min<size_t>(sizeof(q), nla_len(sb[TCA_STATS_QUEUE])));
    s.drops = q.drops;
    s.overlimits = q.overlimits;
    s.requeues = q.requeues;
    s.backlog = q.backlog;
    s.qlen = q.qlen;
  }
  o->stats = s;
  if (sb[TCA_STATS_APP]) {
    const auto* p = static_cast<const uint8_t*>(nla_data(sb[TCA_STATS_APP]));
    o->xstats.assign(p, p + nla_len(sb[TCA_STATS_APP]));
  }
}

}  // namespace

nl_msg* ParqClassRequest(int ifindex, uint32_t parent, uint32_t classid,
                         uint64_t rate, bool create) {
  nl_msg* msg = TcMessage(
      RTM_NEWTCLASS,
      NLM_F_REQUEST | NLM_F_ACK | (create ? NLM_F_CREATE | NLM_F_EXCL : 0),
      ifindex, parent, classid, 0);
  return Built(msg, msg && PutKindAndOptions(msg, "parq", [&] {
                      return nla_put_u64(msg, TCA_PARQ_CLASS_RATE, rate) == 0;
                    }));
}

nl_msg* FwFilterRequest(int ifindex, uint32_t parent, uint32_t prio,
                        uint32_t mark, uint32_t mask, uint32_t classid) {
  nl_msg* msg = TcMessage(
      RTM_NEWTFILTER, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
      ifindex, parent, mark, TC_H_MAKE(prio << 16, htons(ETH_P_ALL)));
  return Built(msg, msg && PutKindAndOptions(msg, "fw", [&] {
                      return nla_put_u32(msg, TCA_FW_CLASSID, classid) == 0 &&
                             nla_put_u32(msg, TCA_FW_MASK, mask) == 0;
                    }));
}

std::optional<TcObject> ParseTcObject(const nlmsghdr* h) {
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg)))
    return std::nullopt;
  auto* hdr = const_cast<nlmsghdr*>(h);
  const auto* t = static_cast<const tcmsg*>(nlmsg_data(hdr));
  TcObject o;
  o.handle = t->tcm_handle;
  o.parent = t->tcm_parent;
  nlattr* tb[TCA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0 ||
      !tb[TCA_KIND])
    return std::nullopt;
  const size_t n = nla_len(tb[TCA_KIND]);
  o.kind.assign(static_cast<const char*>(nla_data(tb[TCA_KIND])),
                strnlen(static_cast<const char*>(nla_data(tb[TCA_KIND])), n));
  const bool filter =
      h->nlmsg_type == RTM_NEWTFILTER || h->nlmsg_type == RTM_DELTFILTER;
  if (!filter) {
    if (tb[TCA_OPTIONS]) {
      const auto* p = static_cast<const uint8_t*>(nla_data(tb[TCA_OPTIONS]));
      o.options.assign(p, p + nla_len(tb[TCA_OPTIONS]));
    }
    if (tb[TCA_STATS2])
      ReadStats(tb[TCA_STATS2], &o);
    return o;
  }
  o.prio = TC_H_MAJ(t->tcm_info) >> 16;
  bool names_class = false;
  for (std::string_view k : kClassidFirst)
    names_class |= o.kind == k;
  if (names_class && tb[TCA_OPTIONS]) {
    nlattr* ob[2] = {};
    if (nla_parse_nested(ob, 1, tb[TCA_OPTIONS], nullptr) == 0 && ob[1] &&
        nla_len(ob[1]) == 4)
      o.classid = nla_get_u32(ob[1]);
  }
  return o;
}

namespace {

class RtnlTc final : public TcLink {
 public:
  explicit RtnlTc(std::string dev) : dev_(std::move(dev)) {}

  Result<std::vector<TcObject>, KernelError> Qdiscs() override {
    return Dump(RTM_GETQDISC, 0);
  }
  Result<std::vector<TcObject>, KernelError> Classes() override {
    return Dump(RTM_GETTCLASS, 0);
  }
  Result<std::vector<TcObject>, KernelError> Filters(uint32_t parent) override {
    return Dump(RTM_GETTFILTER, parent);
  }

  std::optional<KernelError> SetParqClass(uint32_t parent, uint32_t classid,
                                          uint64_t rate, bool create) override {
    const int i = Index();
    if (i < 0)
      return NoDevice();
    return Ask(ParqClassRequest(i, parent, classid, rate, create), i,
               std::string("class ") + (create ? "add " : "change ") +
                   TcHandleText(classid));
  }

  std::optional<KernelError> DelClass(uint32_t classid) override {
    const int i = Index();
    if (i < 0)
      return NoDevice();
    return Ask(
        TcMessage(RTM_DELTCLASS, NLM_F_REQUEST | NLM_F_ACK, i, 0, classid, 0),
        i, "class del " + TcHandleText(classid));
  }

  std::optional<KernelError> AddFwFilter(uint32_t parent, uint32_t prio,
                                         uint32_t mark, uint32_t mask,
                                         uint32_t classid) override {
    const int i = Index();
    if (i < 0)
      return NoDevice();
    return Ask(FwFilterRequest(i, parent, prio, mark, mask, classid), i,
               "filter add prio " + std::to_string(prio));
  }

  std::optional<KernelError> DelFilters(uint32_t parent,
                                        uint32_t prio) override {
    const int i = Index();
    if (i < 0)
      return NoDevice();
    return Ask(TcMessage(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK, i, parent,
                         0, TC_H_MAKE(prio << 16, 0)),
               i, "filter del prio " + std::to_string(prio));
  }

 private:
  int Index() const {
    const unsigned i = if_nametoindex(dev_.c_str());
    return i ? static_cast<int>(i) : -1;
  }

  KernelError NoDevice() const {
    return KernelError{ENODEV, "no device " + dev_};
  }

  // Sends `msg` about device `ifindex` and reads its answers into `out`
  // (when given); `what` prefixes an error.
  std::optional<KernelError> Exchange(nl_msg* msg, int ifindex,
                                      const std::string& what,
                                      std::vector<TcObject>* out) {
    if (!msg)
      return KernelError{ENOMEM, what + ": cannot build a netlink request"};
    auto sk = OpenNetlink(NETLINK_ROUTE);
    if (!sk.ok()) {
      nlmsg_free(msg);
      return sk.error();
    }
    SetNlDeadline(sk.value());
    NlOutcome outcome;
    auto err = NlExchange(
        sk.value(), msg, &outcome,
        [&](nl_msg* m) {
          if (!out)
            return;
          const nlmsghdr* h = nlmsg_hdr(m);
          if (h->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg)) ||
              static_cast<const tcmsg*>(nlmsg_data(h))->tcm_ifindex != ifindex)
            return;
          if (auto o = ParseTcObject(h))
            out->push_back(std::move(*o));
        },
        "rtnetlink");
    nl_socket_free(sk.value());
    if (!err)
      err = Refusal(outcome);
    if (err)
      err->message =
          what + ": " + (err->message.empty() ? "refused" : err->message);
    return err;
  }

  std::optional<KernelError> Ask(nl_msg* msg, int ifindex,
                                 const std::string& what) {
    return Exchange(msg, ifindex, what + " dev " + dev_, nullptr);
  }

  Result<std::vector<TcObject>, KernelError> Dump(int type, uint32_t parent) {
    const int i = Index();
    if (i < 0)
      return Err{NoDevice()};
    std::vector<TcObject> out;
    if (auto e = Exchange(
            TcMessage(type, NLM_F_REQUEST | NLM_F_DUMP, i, parent, 0, 0), i,
            "listing tc objects on " + dev_, &out))
      return Err{*e};
    return out;
  }

  std::string dev_;
};

}  // namespace

std::unique_ptr<TcLink> RtnlTcLink(std::string dev) {
  return std::make_unique<RtnlTc>(std::move(dev));
}

}  // namespace parq::parqd
