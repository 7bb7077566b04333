// SPDX-License-Identifier: GPL-2.0
//
// The admission role's etcd lease, renewed on a thread of its own with an
// etcd client of its own.  The admission thread answers requests one after
// the other, each with user lookups, etcd calls and tc runs; were the
// renewal among them, one user's requests could hold it back until every
// reservation on the host is demoted.  The agent (admission_agent.h)
// grants the lease and hands it over with Keep(); the keeper renews it
// every TTL / 4 and reports each answered renewal in state(), from which
// the agent decides, as before, when to demote.

#ifndef PARQD_ADMISSION_LEASE_KEEPER_H
#define PARQD_ADMISSION_LEASE_KEEPER_H

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "admission/etcd.h"

namespace parq::parqd {

class LeaseKeeper {
 public:
  // What the keeper knows of the lease it renews.
  struct State {
    int64_t lease = 0;        // 0: none
    uint64_t renewed_ns = 0;  // when the last renewal etcd answered was sent
    bool expired = false;     // etcd answered that the lease is gone
    std::string error;        // the last renewal's failure; "" once answered
    uint64_t errors = 0;      // renewals etcd did not answer, in all
  };

  // Starts the thread.  `etcd`: the keeper's alone (it must outlive the
  // keeper); `clock`: monotonic nanoseconds, the agent's.
  LeaseKeeper(EtcdClient& etcd, int64_t ttl_s, EtcdClient::Clock clock);
  // Stops the thread (a renewal in flight ends by its deadline, or at
  // once with a client whose transport aborts).
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Renews `lease`, granted (or last renewed) at `renewed_ns`, from now on:
  // first at `renewed_ns` + TTL / 4.  Every renewal ends by 3/4 of the TTL
  // after the last answered one, when the agent demotes.
  void Keep(int64_t lease, uint64_t renewed_ns);
  // Stops renewing (a demotion, a stop).
  void Drop();
  State state() const;

 private:
  void Run();

  EtcdClient& etcd_;
  const uint64_t ttl_ns_;
  const EtcdClient::Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  State state_;
  uint64_t next_ns_ = 0;  // the next renewal
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace parq::parqd

#endif
