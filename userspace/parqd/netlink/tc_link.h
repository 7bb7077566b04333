// SPDX-License-Identifier: GPL-2.0
//
// A device's qdiscs, classes and filters over rtnetlink, as tc(8) sees
// them, for what parqd installs (reserved_classes.h) and what parqctl
// reads; behind an interface so that both are tested without a kernel.
// Each call opens its own socket: callers may be on any thread.

#ifndef PARQD_NETLINK_TC_LINK_H
#define PARQD_NETLINK_TC_LINK_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "netlink/kernel.h"

struct nl_msg;
struct nlmsghdr;

namespace parq::parqd {

// What tc -s prints of every qdisc and class.
struct TcStats {
  uint64_t bytes = 0;
  uint64_t packets = 0;
  uint32_t drops = 0;
  uint32_t overlimits = 0;
  uint32_t requeues = 0;
  uint32_t backlog = 0;  // bytes
  uint32_t qlen = 0;     // packets

  bool operator==(const TcStats&) const = default;
};

// A qdisc, class or filter as the kernel lists it.
struct TcObject {
  uint32_t handle = 0;  // qdisc handle, classid, or filter handle
  uint32_t parent = 0;
  uint32_t prio = 0;  // filters
  std::string kind;
  // Filters of the kinds that name one (fw, u32, flower, basic,
  // matchall, route): the class they send packets to.
  std::optional<uint32_t> classid;
  // Qdiscs and classes: TCA_OPTIONS' attributes as the kernel sent them,
  // the statistics (TCA_STATS2) and the kind's own statistics
  // (TCA_STATS_APP), raw.
  std::vector<uint8_t> options{};
  std::optional<TcStats> stats{};
  std::vector<uint8_t> xstats{};

  bool operator==(const TcObject&) const = default;
};

class TcLink {
 public:
  virtual ~TcLink() = default;
  // The device's qdiscs, its classes, and the filters attached to
  // `parent`.
  virtual Result<std::vector<TcObject>, KernelError> Qdiscs() = 0;
  virtual Result<std::vector<TcObject>, KernelError> Classes() = 0;
  virtual Result<std::vector<TcObject>, KernelError> Filters(
      uint32_t parent) = 0;
  // Adds (`create`) or changes parq class `classid` of the qdisc
  // `parent`, at `rate` bytes/s.
  virtual std::optional<KernelError> SetParqClass(uint32_t parent,
                                                  uint32_t classid,
                                                  uint64_t rate,
                                                  bool create) = 0;
  virtual std::optional<KernelError> DelClass(uint32_t classid) = 0;
  // A fw filter of priority `prio` on `parent`: packets whose mark &
  // `mask` is `mark` go to `classid`.
  virtual std::optional<KernelError> AddFwFilter(uint32_t parent, uint32_t prio,
                                                 uint32_t mark, uint32_t mask,
                                                 uint32_t classid) = 0;
  // Every filter of priority `prio` on `parent`.
  virtual std::optional<KernelError> DelFilters(uint32_t parent,
                                                uint32_t prio) = 0;
};

// Over rtnetlink, on device `dev` (looked up by name at each call).
std::unique_ptr<TcLink> RtnlTcLink(std::string dev);

// "1:", "1:1000", "root": as tc prints a handle.
std::string TcHandleText(uint32_t handle);

// `dev` as a word of a shell command line for a message that suggests one:
// as it is when it is plain, else in single quotes ("'eth$(x)'").
std::string ShellWord(const std::string& dev);

// The requests RtnlTcLink sends, and how it reads an answer; for tests.
nl_msg* ParqClassRequest(int ifindex, uint32_t parent, uint32_t classid,
                         uint64_t rate, bool create);
nl_msg* FwFilterRequest(int ifindex, uint32_t parent, uint32_t prio,
                        uint32_t mark, uint32_t mask, uint32_t classid);
std::optional<TcObject> ParseTcObject(const nlmsghdr* h);

}  // namespace parq::parqd

#endif
