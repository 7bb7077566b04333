// SPDX-License-Identifier: GPL-2.0
//
// The per-packet operations of the scheduling core (kmod/core/parq_core.c),
// each as a small object: the constructor sets up fixed inputs, Packet()
// calls that part of the core for one packet as sch_parq's dequeue calls it
// (PolicyDecideSent: the dequeue's policy itself, parq_policy.c).  The Google
// Benchmark binary (corebench.cc) and the instruction counter (percall.cc) run
// the very same Packet(), so ns/packet and instructions/packet describe one
// piece of code.
//
// Inputs are fixed (no clock, no random state except a seeded shuffle at
// setup), so that every run executes the same instructions.  Every packet is
// a full Ethernet frame of kLen = 1514 bytes, the quantum psched_mtu() gives
// on a 1500-byte MTU.

#ifndef COREBENCH_OPS_H
#define COREBENCH_OPS_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "parq_core.h"
#include "parq_policy.h"

namespace parq::corebench {

inline constexpr uint32_t kLen = 1514;

// Make the compiler believe @v is used (and memory may have changed), so
// that nothing computed for a packet is optimised away.  The core's
// functions are in another translation unit and are called in any case.
template <typename T>
inline void Keep(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

// The dequeue's policy for one packet: parq_sched_decide with both
// classes backlogged (no reserved class, no credit wait, shaper off),
// then parq_sched_sent.  Threshold 4, unit bytes: four of five packets are
// parallel, one is local (a threshold turn).
class PolicyDecideSent {
 public:
  PolicyDecideSent() { parq_sched_init(&s_, 4, PARQ_UNIT_BYTES); }
  void Packet() {
    const parq_view v{UINT64_MAX, UINT64_MAX, true, true, false};
    const parq_decision d = parq_sched_decide(&s_, &v, now_);
    parq_sched_sent(&s_, &d, now_, kLen, 1);
    Keep(d);
  }

 private:
  parq_sched s_{};
  uint64_t now_ = 1000000000ULL;
};

// PolicyDecideSent with the sojourn times (parq_policy.h): the packet's
// time in the qdisc (its enqueue stamp taken from the dequeue's clock, as
// parq_sojourn() does) counted in its class's sum and bucket.  The
// difference to PolicyDecideSent is what the timestamps cost the dequeue;
// the enqueue's side is one store of the clock it reads.  The times cycle
// through 64 fixed values that fall into every bucket.
class PolicyDecideSentSojourn {
 public:
  PolicyDecideSentSojourn() {
    parq_sched_init(&s_, 4, PARQ_UNIT_BYTES);
    for (std::size_t i = 0; i < kTimes; i++)
      enqueued_[i] = now_ - (uint64_t{1000} << (i % 26));
  }
  void Packet() {
    const parq_view v{UINT64_MAX, UINT64_MAX, true, true, false};
    const parq_decision d = parq_sched_decide(&s_, &v, now_);
    parq_sched_sent(&s_, &d, now_, kLen, 1);
    if (parq_sojourn_counted(&d)) {
      const uint64_t in = enqueued_[next_++ % kTimes];
      parq_sched_sojourn(&s_, &d, now_ > in ? now_ - in : 0);
    }
    Keep(d);
  }

 private:
  static constexpr std::size_t kTimes = 64;
  parq_sched s_{};
  uint64_t now_ = 1000000000000ULL;
  uint64_t enqueued_[kTimes] = {};
  std::size_t next_ = 0;
};

// THRESHOLD_send alone, the primitive under PolicyDecideSent: pick, then
// the charge of the packet sent, with both classes backlogged, threshold
// 4, unit bytes.
class ThreshPickCharge {
 public:
  ThreshPickCharge() { parq_thresh_init(&t_, 4, PARQ_UNIT_BYTES); }
  void Packet() {
    const parq_pick pick = parq_thresh_pick(&t_, true, true);
    parq_thresh_charge(&t_, pick, kLen, true);
    Keep(pick);
  }

 private:
  parq_thresh t_{};
};

// Deficit round robin over @flows backlogged flows that stay backlogged:
// select, then charge one full frame.  With quantum == kLen every packet
// uses up its flow's deficit, so the next select rotates exactly once: the
// cost per packet is one select with one rotation plus one charge.
//
// Each flow is a 64-byte, cache-line aligned object with the ring node
// first (the kernel's struct parq_flow is 40 bytes, parq_lflow about 100),
// and the flows join the ring in a shuffled order (fixed seed), so that
// consecutive ring members are not neighbours in memory: at 100 000 flows
// (6.4 MB) the walk misses the cache as a kernel ring of slab objects would,
// instead of streaming through an array.
class RrSelectCharge {
 public:
  explicit RrSelectCharge(std::size_t flows) : flows_(flows) {
    parq_rr_init(&rr_, kLen);
    std::vector<std::size_t> order(flows);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 rng(5);
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order)
      parq_rr_add(&rr_, &flows_[i].rr);
  }
  void Packet() {
    parq_rr_node* n = parq_rr_select(&rr_);
    Keep(n);
    parq_rr_charge(&rr_, kLen, false);
  }
  uint32_t active() const { return rr_.active; }

 private:
  struct alignas(64) Flow {
    parq_rr_node rr;
  };
  std::vector<Flow> flows_;
  parq_rr rr_{};
};

// The shaper at 10 Gbit/s: each packet leaves when it is due (now ==
// t_next) and is charged, one 64-bit division with remainder carry.
class ShaperCharge {
 public:
  ShaperCharge() {
    parq_shaper_set(&s_, 1250000000ULL, 0, 0, PARQ_CATCHUP_NS, 0);
  }
  void Packet() {
    const uint64_t now = s_.t_next;
    Keep(parq_shaper_ready(&s_, now));
    parq_shaper_charge(&s_, now, kLen);
  }

 private:
  parq_shaper s_{};
};

// One reserved flow dispatched on time, packet after packet: in rate mode
// (100 Mbit/s: a division with remainder carry) or idt mode (10 us).
class ResvDispatch {
 public:
  enum Mode { kRate, kIdt };
  explicit ResvDispatch(Mode mode) {
    r_.classid = 0x10010;
    if (mode == kRate)
      parq_resv_set(&r_, 12500000ULL, 0);
    else
      parq_resv_set(&r_, 0, 10000);
  }
  void Packet() { parq_resv_dispatch(&r_, r_.ndt, kLen); }

 private:
  parq_resv r_{};
};

// The ordering predicate of the backlog rb-tree on two flows with the same
// NDT: the longer path, decided by the classid.
class ResvBefore {
 public:
  ResvBefore() {
    a_.ndt = b_.ndt = 1000000;
    a_.classid = 0x10010;
    b_.classid = 0x10011;
  }
  void Packet() { Keep(parq_resv_before(&a_, &b_)); }

 private:
  parq_resv a_{}, b_{};
};

// A USER-SPACE MODEL of the reserved dispatch with its ordering step, not
// the kernel's code: the kernel keeps backlogged reserved flows in its own
// rb-tree (rb_add_cached / rb_first_cached, ordered by parq_resv_before),
// which cannot be linked here.  The model uses libstdc++'s std::set, also a
// red-black tree that caches its leftmost node, with parq_resv_before as
// the order: per packet the first flow is unlinked (extract), dispatched
// with the real parq_resv_dispatch, and linked again (insert of the same
// node, no allocation) -- the work of parq_dequeue's
// parq_resv_first / parq_resv_dispatch / parq_resv_requeue.  @flows equal
// reservations share 10 Gbit/s, so the flows take turns by classid and
// every re-insertion goes to the right end of the tree, as in
// scripts/bench/resv-dequeue.  The figures show how the cost grows with the
// number of flows; they are not the kernel's figures.
class ResvOrderedModel {
 public:
  explicit ResvOrderedModel(std::size_t flows) : flows_(flows) {
    const uint64_t rate = 1250000000ULL / flows;
    for (std::size_t i = 0; i < flows; i++) {
      flows_[i].classid = 0x10010 + static_cast<uint32_t>(i);
      parq_resv_set(&flows_[i], rate, 0);
      tree_.insert(&flows_[i]);
    }
  }
  void Packet() {
    auto node = tree_.extract(tree_.begin());
    parq_resv* r = node.value();
    now_ = std::max(now_, r->ndt);
    parq_resv_dispatch(r, now_, kLen);
    tree_.insert(std::move(node));
  }

 private:
  struct Before {
    bool operator()(const parq_resv* a, const parq_resv* b) const {
      return parq_resv_before(a, b);
    }
  };
  std::vector<parq_resv> flows_;
  std::set<parq_resv*, Before> tree_;
  uint64_t now_ = 0;
};

// Receiver-side credit, 2 MB per 1 ms epoch; a packet every 1 us, so each
// epoch passes 1000 packets (1.514 MB) and the next one starts from zero.
// The pass path of parq_credit_take with the usage word stored plainly (no
// compare-and-exchange): the core's arithmetic alone.
class CreditTake {
 public:
  void Packet() {
    uint64_t next;
    now_ += 1000;
    if (parq_credit_take(&cfg_, state_, now_, kLen, &next))
      state_ = next;
    Keep(state_);
  }

 protected:
  parq_credit_cfg cfg_{1000000000ULL, 1000000ULL, 2000000};
  uint64_t now_ = 1000000000ULL;
  uint64_t state_ = 0;
};

// The same, charged as the kernel's parq_credit_charge does: a load, then
// parq_credit_take and a compare-and-exchange until it succeeds (here it
// always succeeds first time: one thread, no contention).  The kernel's RCU
// lookup of the destination's entry is not included.
class CreditTakeCmpxchg : public CreditTake {
 public:
  void Packet() {
    uint64_t old = word_.load(std::memory_order_relaxed);
    uint64_t next;
    now_ += 1000;
    do {
      if (!parq_credit_take(&cfg_, old, now_, kLen, &next))
        break;
    } while (!word_.compare_exchange_weak(old, next));
    Keep(next);
  }

 private:
  std::atomic<uint64_t> word_{0};
};

// The wait path: the epoch's credit (1000 bytes) is used up, the take is
// refused and parq_credit_next gives the time the destination may send.
class CreditWait {
 public:
  void Packet() {
    uint64_t next = 0;
    if (!parq_credit_take(&cfg_, state_, now_, kLen, &next))
      next = parq_credit_next(&cfg_, now_);
    Keep(next);
  }

 private:
  parq_credit_cfg cfg_{1000000000ULL, 1000000ULL, 1000};
  uint64_t now_ = 1000000000ULL + 3500000ULL;  // in epoch 3
  uint64_t state_ = (uint64_t{3} << 32) | kLen;
};

}  // namespace parq::corebench

#endif  // COREBENCH_OPS_H
