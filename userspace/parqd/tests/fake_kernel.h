// SPDX-License-Identifier: GPL-2.0
//
// A KernelCreditTable and a KernelMonitor that record requests and answer
// as told.

#ifndef PARQD_TESTS_FAKE_KERNEL_H
#define PARQD_TESTS_FAKE_KERNEL_H

#include <deque>
#include <vector>

#include "netlink/kernel.h"

namespace parq::parqd::test {

class FakeKernel : public KernelCreditTable {
 public:
  std::optional<KernelError> Apply(const CreditRequest& r) override {
    requests.push_back(r);
    if (errors.empty())
      return std::nullopt;
    auto e = errors.front();
    errors.pop_front();
    return e;
  }
  Result<std::vector<KernelEntry>, KernelError> Dump() override {
    if (dump_error)
      return Err{*dump_error};
    return entries;
  }

  std::vector<CreditRequest> requests;
  std::deque<std::optional<KernelError>> errors;  // next answers of Apply
  std::vector<KernelEntry> entries;
  std::optional<KernelError> dump_error;
};

// What Enable() set, the samples and events to answer.
class FakeMonitor : public KernelMonitor {
 public:
  std::optional<KernelError> Enable(const MonitorSettings& s) override {
    enabled = true;
    hold = s.hold_ns;
    mask = s.dscp_mask;
    counted = s.peers;
    report_local = s.report_local;
    min_bytes = s.min_bytes;
    return enable_error;
  }
  std::optional<KernelError> Disable() override {
    enabled = false;
    return std::nullopt;
  }
  Result<std::vector<PeerSample>, KernelError> Peers() override {
    ++dumps;
    if (peers_error)
      return Err{*peers_error};
    return peers;
  }
  Result<MonitorState, KernelError> State() override {
    if (state_error)
      return Err{*state_error};
    MonitorState s = state;
    s.enabled = enabled;
    s.hold_ns = hold;
    s.report_local = report_local;
    return s;
  }
  int event_fd() const override { return -1; }
  Result<std::vector<MonitorEvent>, KernelError> ReadEvents() override {
    if (events_error)
      return Err{*events_error};
    auto out = events;
    events.clear();
    return out;
  }

  bool enabled = false;
  uint64_t hold = 0;
  std::optional<uint64_t> mask;
  std::vector<Address> counted;  // the peer set Enable passed
  bool report_local = false;
  uint32_t min_bytes = 0;
  std::optional<KernelError> enable_error, peers_error, events_error,
      state_error;
  MonitorState state;  // State() but enabled and hold
  std::vector<PeerSample> peers;
  std::vector<MonitorEvent> events;
  int dumps = 0;
};

}  // namespace parq::parqd::test

#endif
