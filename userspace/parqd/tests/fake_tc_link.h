// SPDX-License-Identifier: GPL-2.0
//
// A TcLink that keeps a device's qdiscs, classes and filters in memory,
// logs each change as a line ("class add 1:1000 rate 125000", "filter
// del 1: prio 4096") and refuses the change that `refuse` names; and an
// nft runner that records what it is asked.

#ifndef PARQD_TESTS_FAKE_TC_LINK_H
#define PARQD_TESTS_FAKE_TC_LINK_H

#include <linux/pkt_sched.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "admission/reserved_classes.h"
#include "netlink/tc_link.h"

namespace parq::parqd::test {

class FakeTcLink : public TcLink {
 public:
  std::vector<TcObject> qdiscs, classes, filters;
  std::vector<std::string> log;
  // A change whose log line starts with this is refused with `refusal`.
  std::string refuse;
  KernelError refusal{EINVAL, "refused"};
  // Every listing fails with this.
  std::optional<KernelError> broken;
  // Classes() called.
  uint64_t class_dumps = 0;

  // A root parq of handle `h`.
  static FakeTcLink WithRoot(const std::string& kind, uint32_t h) {
    FakeTcLink l;
    l.qdiscs.push_back({h, TC_H_ROOT, 0, kind, std::nullopt});
    return l;
  }

  Result<std::vector<TcObject>, KernelError> Qdiscs() override {
    return List(qdiscs);
  }
  Result<std::vector<TcObject>, KernelError> Classes() override {
    class_dumps++;
    return List(classes);
  }
  Result<std::vector<TcObject>, KernelError> Filters(uint32_t) override {
    return List(filters);
  }
  std::optional<KernelError> SetParqClass(uint32_t parent, uint32_t classid,
                                          uint64_t rate, bool create) override {
    if (auto e = Log(std::string("class ") + (create ? "add " : "change ") +
                     TcHandleText(classid) + " rate " + std::to_string(rate)))
      return e;
    for (TcObject& c : classes)
      if (c.handle == classid) {
        if (create)
          return KernelError{EEXIST, "exists"};
        return std::nullopt;
      }
    if (!create)
      return KernelError{ENOENT, "no such class"};
    classes.push_back({classid, parent, 0, "parq", std::nullopt});
    return std::nullopt;
  }
  std::optional<KernelError> DelClass(uint32_t classid) override {
    if (auto e = Log("class del " + TcHandleText(classid)))
      return e;
    return Erase(classes,
                 [&](const TcObject& c) { return c.handle == classid; });
  }
  std::optional<KernelError> AddFwFilter(uint32_t parent, uint32_t prio,
                                         uint32_t mark, uint32_t mask,
                                         uint32_t classid) override {
    if (auto e = Log("filter add " + TcHandleText(parent) + " prio " +
                     std::to_string(prio) + " fw " + Hex(mark) + "/" +
                     Hex(mask) + " classid " + TcHandleText(classid)))
      return e;
    filters.push_back({mark, parent, prio, "fw", classid});
    return std::nullopt;
  }
  std::optional<KernelError> DelFilters(uint32_t parent,
                                        uint32_t prio) override {
    if (auto e = Log("filter del " + TcHandleText(parent) + " prio " +
                     std::to_string(prio)))
      return e;
    return Erase(filters, [&](const TcObject& f) { return f.prio == prio; });
  }

 private:
  static std::string Hex(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof(b), "0x%x", v);
    return b;
  }
  Result<std::vector<TcObject>, KernelError> List(
      const std::vector<TcObject>& v) {
    if (broken)
      return Err{*broken};
    return v;
  }
  std::optional<KernelError> Log(const std::string& line) {
    log.push_back(line);
    if (!refuse.empty() && line.starts_with(refuse))
      return refusal;
    return std::nullopt;
  }
  template <typename Pred>
  static std::optional<KernelError> Erase(std::vector<TcObject>& v, Pred pred) {
    const auto n = std::erase_if(v, pred);
    if (!n)
      return KernelError{ENOENT, "no such object"};
    return std::nullopt;
  }
};

// An nft runner for TcReservedClasses that records each command in `ran`
// and answers `answer`.
inline TcReservedClasses::Run RecordingNft(
    std::vector<std::vector<std::string>>& ran,
    const ProgramOutput& answer = {0, "", ""}) {
  return
      [&ran, answer](const std::vector<std::string>& argv,
                     const std::string&) -> Result<ProgramOutput, std::string> {
        ran.push_back(argv);
        return answer;
      };
}

}  // namespace parq::parqd::test

#endif
