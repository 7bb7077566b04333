// SPDX-License-Identifier: GPL-2.0

#include "credit/sending_role.h"

#include <linux/parq.h>

#include <algorithm>
#include <cerrno>

#include "base/satmath.h"
#include "proto/metrics.h"

namespace parq::parqd {

std::vector<CreditRequest> ToRequests(const wire::Message& m) {
  std::vector<CreditRequest> out;
  out.reserve(m.addresses.size());
  uint64_t epoch = m.epoch_ns();
  uint64_t credit = m.credit;
  const uint64_t lease =
      std::min<uint64_t>(SatMul(m.lease, epoch), PARQ_LEASE_MAX);
  if (epoch > PARQ_EPOCH_MAX) {
    credit = static_cast<uint64_t>(static_cast<unsigned __int128>(credit) *
                                   PARQ_EPOCH_MAX / epoch);
    epoch = PARQ_EPOCH_MAX;
  }
  for (const Address& a : m.addresses) {
    CreditRequest r;
    r.address = a;
    if (m.type == wire::Type::kGrant) {
      r.op = CreditRequest::Op::kSet;
      r.credit =
          static_cast<uint32_t>(std::min<uint64_t>(credit, PARQ_CREDIT_MAX));
      r.epoch_ns = epoch;
      r.lease_ns = lease;
    } else {
      r.op = CreditRequest::Op::kDel;
    }
    out.push_back(r);
  }
  return out;
}

SendingRole::SendingRole(Inbox rx, KernelCreditTable& kernel, LogSink log)
    : rx_(std::move(rx)), kernel_(kernel), log_(std::move(log)) {}

Outcome SendingRole::Handle(std::span<const uint8_t> bytes, const Address& from,
                            const Address& to, uint64_t now,
                            uint64_t realtime) {
  Outcome o = rx_.Receive(bytes, from, to, now, realtime);
  if (!o.accepted || !o.message)
    return o;
  for (const CreditRequest& r : ToRequests(*o.message)) {
    const bool set = r.op == CreditRequest::Op::kSet;
    (set ? kc_.set_requests : kc_.del_requests)++;
    auto err = kernel_.Apply(r);
    if (!err || (!set && err->error == ENOENT))
      continue;
    (set ? kc_.set_errors : kc_.del_errors)++;
    uint64_t suppressed = 0;
    if (log_ && log_limit_.Allow(now, &suppressed)) {
      std::string line = std::string("parqd: the kernel refused ") +
                         (set ? "PARQ_CMD_CREDIT_SET" : "PARQ_CMD_CREDIT_DEL") +
                         " for " + r.address->ToString() + " (peer " +
                         std::to_string(o.message->sender) +
                         "): " + err->Text();
      if (suppressed)
        line += "; " + std::to_string(suppressed) + " similar lines suppressed";
      log_(line);
    }
  }
  return o;
}

size_t SendingRole::Expire(uint64_t now) {
  return rx_.Expire(now).size();
}

void SendingRole::Metrics(PromText& out) const {
  RenderInbox(out, rx_.counters(), rx_.table().size());
  const char* requests = "parqd_kernel_requests_total";
  out.Family(requests, "counter",
             "Requests sent to the kernel's credit table, by command.");
  out.Sample(requests, kc_.set_requests, "cmd", "credit_set");
  out.Sample(requests, kc_.del_requests, "cmd", "credit_del");
  const char* errors = "parqd_kernel_errors_total";
  out.Family(errors, "counter",
             "Requests the kernel refused, by command (a delete of an "
             "absent entry is not counted).");
  out.Sample(errors, kc_.set_errors, "cmd", "credit_set");
  out.Sample(errors, kc_.del_errors, "cmd", "credit_del");
}

}  // namespace parq::parqd
