// SPDX-License-Identifier: GPL-2.0
//
// The kernel's credit table (the "parq" generic netlink family,
// Documentation/netlink/specs/parq.yaml) behind a small interface, so that
// what parqd and parqctl ask of it can be tested without a kernel.
// GenlCreditTable (kernel_genl.cc) is the libnl implementation.

#ifndef PARQD_NETLINK_KERNEL_H
#define PARQD_NETLINK_KERNEL_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/address.h"
#include "base/result.h"

namespace parq::parqd {

// One request of the family.
struct CreditRequest {
  enum class Op : uint8_t { kSet, kDel };
  Op op = Op::kSet;
  std::optional<Address> address;    // kDel without one: every entry
  uint32_t credit = 0;               // kSet: bytes per epoch
  std::optional<uint64_t> epoch_ns;  // kSet: none = the kernel's default
  uint64_t lease_ns = 0;             // kSet

  bool operator==(const CreditRequest&) const = default;
};

// A refused request: errno and the kernel's extended-ack message, if any.
struct KernelError {
  int error = 0;        // positive errno
  std::string message;  // extack text; may be empty

  // "parq: no credit entry for that address (No such file or directory)"
  std::string Text() const;
};

// An entry as the kernel reports it.
struct KernelEntry {
  Address address;
  uint32_t credit = 0;
  uint64_t epoch_ns = 0;
  uint64_t lease_ns = 0;  // what is left
  uint32_t used = 0;
  uint64_t passed = 0;
  uint64_t held = 0;
};

class KernelCreditTable {
 public:
  virtual ~KernelCreditTable() = default;
  virtual std::optional<KernelError> Apply(const CreditRequest& r) = 0;
  virtual Result<std::vector<KernelEntry>, KernelError> Dump() = 0;
};

// The family in this process's network namespace.  Fails when the family
// is unknown (sch_parq not loaded and not loadable) with a message that
// says so.
Result<std::unique_ptr<KernelCreditTable>, KernelError> OpenGenlCreditTable();

// --- The receive monitor (the receiving role) ---

// One source host of the monitor's table (PARQ_CMD_PEER_GET).
struct PeerSample {
  Address address;
  uint64_t par_packets = 0;
  uint64_t par_bytes = 0;
  std::optional<uint64_t> par_age_ns;  // none: no parallel packet yet
  uint64_t loc_packets = 0;
  uint64_t loc_bytes = 0;
  std::optional<uint64_t> loc_age_ns;  // none: no local packet yet
};

// The monitor's configuration and counters (PARQ_CMD_MON_GET).
struct MonitorState {
  bool enabled = false;
  uint32_t size = 0;          // source hosts kept at most
  uint64_t dscp_mask = 0;     // DSCPs of parallel traffic (PARQ_DSCP_BIT)
  uint64_t hold_ns = 0;       // without parallel traffic: stopped
  uint32_t sources = 0;       // source hosts in the table now
  bool active = false;        // parallel traffic is arriving
  uint64_t evicted = 0;       // sources evicted to make room
  uint64_t events = 0;        // start and stop reports sent
  uint64_t uncounted = 0;     // packets of new sources that found it full
  uint32_t peers = 0;         // addresses in the peer set; 0: all counted
  uint64_t foreign = 0;       // packets from outside the peer set
  bool report_local = false;  // local senders are reported (kLocal)
  uint64_t local_events = 0;  // local-sender reports sent
  uint32_t min_bytes = 0;     // parallel bytes in a hold before it counts
  uint64_t below = 0;         // parallel packets under min_bytes

  bool operator==(const MonitorState&) const = default;
};

// A report of the family's "events" group.
struct MonitorEvent {
  enum class Kind : uint8_t {
    kStop,   // parallel traffic stopped arriving (PARQ_CMD_MON_EVENT 0)
    kStart,  // parallel traffic started arriving (PARQ_CMD_MON_EVENT 1)
    kLocal,  // while it arrives, a source sent local traffic, its first in
             // a hold (PARQ_CMD_MON_LOCAL; with MonitorSettings::report_local)
  };
  Kind kind = Kind::kStop;
  // kStart: the first packet's source; kLocal: the local sender.
  std::optional<Address> source;

  bool operator==(const MonitorEvent&) const = default;
};

// What the receiving role asks of the kernel's monitor.
struct MonitorSettings {
  uint64_t hold_ns = 0;
  std::optional<uint64_t> dscp_mask;  // parallel DSCPs; none: the kernel's
  std::vector<Address> peers;         // the only sources counted; none: all
  bool report_local = false;          // report local senders (kLocal)
  // Parallel bytes that must arrive within one hold before parallel
  // traffic counts as arriving (PARQ_A_MON_MIN_BYTES); 0: every packet.
  uint32_t min_bytes = 0;

  bool operator==(const MonitorSettings&) const = default;
};

class KernelMonitor {
 public:
  virtual ~KernelMonitor() = default;
  // PARQ_CMD_MON_SET enabled=1 with the settings (the peer set replaces
  // the kernel's: at most PARQ_MON_PEERS_MAX addresses).
  virtual std::optional<KernelError> Enable(const MonitorSettings& s) = 0;
  virtual std::optional<KernelError> Disable() = 0;
  virtual Result<std::vector<PeerSample>, KernelError> Peers() = 0;
  virtual Result<MonitorState, KernelError> State() = 0;
  // A descriptor that polls readable when events are queued; -1 if none.
  virtual int event_fd() const = 0;
  // The events queued now, without blocking.  An error (ENOBUFS: the
  // socket overflowed and events were lost) means the caller must find the
  // state from Peers().
  virtual Result<std::vector<MonitorEvent>, KernelError> ReadEvents() = 0;
};

// The monitor of this process's network namespace, subscribed to the
// family's "events" group.
Result<std::unique_ptr<KernelMonitor>, KernelError> OpenGenlMonitor();

}  // namespace parq::parqd

#endif
