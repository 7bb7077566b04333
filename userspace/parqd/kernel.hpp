// SPDX-License-Identifier: GPL-2.0
//
// The kernel's credit table (the "parq" generic netlink family,
// Documentation/netlink/specs/parq.yaml) behind a small interface, so that
// what parqd and parqctl ask of it can be tested without a kernel.
// GenlCreditTable (kernel_genl.cpp) is the libnl implementation.

#ifndef PARQD_KERNEL_HPP
#define PARQD_KERNEL_HPP

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "address.hpp"
#include "result.hpp"

namespace parq::parqd {

// One request of the family.
struct CreditRequest {
  enum class Op : uint8_t { kSet, kDel };
  Op op = Op::kSet;
  std::optional<Address> address;  // kDel without one: every entry
  uint32_t credit = 0;             // kSet: bytes per epoch
  std::optional<uint64_t> epoch_ns;  // kSet: none = the kernel's default
  uint64_t lease_ns = 0;           // kSet

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

}  // namespace parq::parqd

#endif
