// SPDX-License-Identifier: GPL-2.0

#include "admission/lease_keeper.h"

#include <algorithm>
#include <chrono>

namespace parq::parqd {

namespace {

constexpr uint64_t kSecNs = 1'000'000'000;
constexpr uint64_t kRetryNs = kSecNs;  // after a renewal etcd did not answer

}  // namespace

LeaseKeeper::LeaseKeeper(EtcdClient& etcd, int64_t ttl_s,
                         EtcdClient::Clock clock)
    : etcd_(etcd),
      ttl_ns_(static_cast<uint64_t>(ttl_s) * kSecNs),
      clock_(std::move(clock)),
      thread_([this] { Run(); }) {}

LeaseKeeper::~LeaseKeeper() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LeaseKeeper::Keep(int64_t lease, uint64_t renewed_ns) {
  {
    const std::lock_guard lock(mu_);
    state_.lease = lease;
    state_.renewed_ns = renewed_ns;
    state_.expired = false;
    state_.error.clear();
    next_ns_ = renewed_ns + ttl_ns_ / 4;
  }
  wake_.notify_all();
}

void LeaseKeeper::Drop() {
  const std::lock_guard lock(mu_);
  state_.lease = 0;
}

LeaseKeeper::State LeaseKeeper::state() const {
  const std::lock_guard lock(mu_);
  return state_;
}

void LeaseKeeper::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stop_)
      return;
    const uint64_t now = clock_();
    if (state_.lease == 0 || state_.expired || now < next_ns_) {
      const uint64_t wait =
          state_.lease == 0 || state_.expired ? kSecNs : next_ns_ - now;
      wake_.wait_for(lock, std::chrono::nanoseconds(std::min(wait, kSecNs)));
      continue;
    }
    const int64_t lease = state_.lease;
    // No renewal outlasts the moment the agent demotes.
    etcd_.set_deadline(state_.renewed_ns + ttl_ns_ / 4 * 3, clock_);
    lock.unlock();
    auto k = etcd_.LeaseKeepAlive(lease);
    lock.lock();
    if (state_.lease != lease)  // dropped, or another lease, meanwhile
      continue;
    if (k.ok() && k.value().ttl_s > 0) {
      state_.renewed_ns = now;
      state_.error.clear();
      next_ns_ = now + ttl_ns_ / 4;
    } else if (k.ok()) {
      state_.expired = true;
    } else {
      state_.errors++;
      state_.error = k.error();
      next_ns_ = now + std::min(kRetryNs, ttl_ns_ / 4);
    }
  }
}

}  // namespace parq::parqd
