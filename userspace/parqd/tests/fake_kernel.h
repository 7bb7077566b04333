// SPDX-License-Identifier: GPL-2.0
//
// A KernelCreditTable that records requests and answers as told.

#ifndef PARQD_TESTS_FAKE_KERNEL_H
#define PARQD_TESTS_FAKE_KERNEL_H

#include <deque>
#include <vector>

#include "kernel.h"

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

}  // namespace parq::parqd::test

#endif
