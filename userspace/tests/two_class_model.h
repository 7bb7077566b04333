// SPDX-License-Identifier: GPL-2.0
//
// A small model of sch_parq's two classes for the unit tests: each class is
// a FIFO of packet lengths, and Dequeue() asks the core's policy
// (kmod/core/parq_policy.c) what to send, as the kernel's dequeue does:
//
//   d = parq_sched_decide(s, <what is queued>, now);
//   <take the head packet of the class d names>
//   parq_sched_sent(s, &d, now, len, 1);
//
// The model holds no scheduling logic of its own: it keeps the queues.

#ifndef TESTS_TWO_CLASS_MODEL_H
#define TESTS_TWO_CLASS_MODEL_H

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "parq_core.h"
#include "parq_policy.h"

namespace parq::model {

enum class Class { kParallel = 0, kLocal = 1 };

inline Class Other(Class c) {
  return c == Class::kParallel ? Class::kLocal : Class::kParallel;
}

inline char Letter(Class c) {
  return c == Class::kParallel ? 'P' : 'L';
}

// One dequeued packet.
struct Sent {
  Class cls;
  uint32_t len;
  bool other_backlogged;  // the other class had packets at pick time
};

// Packet length generators for saturated sources.
using LenGen = std::function<uint32_t()>;

inline LenGen Fixed(uint32_t len) {
  return [len] { return len; };
}

// Cycles through @lens.
inline LenGen Cycle(std::vector<uint32_t> lens) {
  return [lens = std::move(lens), i = std::size_t{0}]() mutable {
    uint32_t len = lens[i];
    i = (i + 1) % lens.size();
    return len;
  };
}

// Uniform choice among @lens, deterministic for a given @seed.
inline LenGen RandomOf(std::vector<uint32_t> lens, uint64_t seed) {
  return [lens = std::move(lens), rng = std::mt19937_64(seed)]() mutable {
    return lens[rng() % lens.size()];
  };
}

class TwoClass {
 public:
  TwoClass(uint32_t threshold, uint8_t unit) {
    parq_sched_init(&sched_, threshold, unit);
  }

  parq_thresh& thresh() { return sched_.thresh; }
  const parq_thresh& thresh() const { return sched_.thresh; }
  const parq_sched& sched() const { return sched_; }

  std::deque<uint32_t>& queue(Class c) { return q_[Idx(c)]; }
  bool backlogged(Class c) const { return !q_[Idx(c)].empty(); }

  void Enqueue(Class c, uint32_t len) { q_[Idx(c)].push_back(len); }

  // A saturated class: whenever its queue is empty before a pick, one
  // packet of gen() bytes is queued, so it is always backlogged.
  void Saturate(Class c, LenGen gen) { src_[Idx(c)] = std::move(gen); }
  void Unsaturate(Class c) { src_[Idx(c)] = nullptr; }
  // Drops whatever the class has queued (and stops its source).
  void Drain(Class c) {
    Unsaturate(c);
    q_[Idx(c)].clear();
  }

  // One dequeue of the qdisc; nullopt when the pick is NONE.
  std::optional<Sent> Dequeue() {
    for (Class c : {Class::kParallel, Class::kLocal})
      if (src_[Idx(c)] && q_[Idx(c)].empty())
        Enqueue(c, src_[Idx(c)]());

    const bool pb = backlogged(Class::kParallel);
    const bool lb = backlogged(Class::kLocal);
    const parq_view v{UINT64_MAX, UINT64_MAX, pb, lb, false};
    const parq_decision d = parq_sched_decide(&sched_, &v, 0);
    if (d.act == PARQ_ACT_NONE) {
      if (pb || lb)
        ADD_FAILURE() << "NONE with a class backlogged";
      return std::nullopt;
    }
    if (d.act != PARQ_ACT_PARALLEL && d.act != PARQ_ACT_LOCAL) {
      ADD_FAILURE() << "decided " << static_cast<int>(d.act);
      return std::nullopt;
    }
    const Class c =
        d.act == PARQ_ACT_PARALLEL ? Class::kParallel : Class::kLocal;
    if (!backlogged(c)) {
      ADD_FAILURE() << "picked the empty class " << Letter(c);
      return std::nullopt;
    }
    std::deque<uint32_t>& q = q_[Idx(c)];
    const uint32_t len = q.front();
    q.pop_front();
    const bool other = c == Class::kParallel ? lb : pb;
    if (d.other != other)
      ADD_FAILURE() << "other " << d.other;
    parq_sched_sent(&sched_, &d, 0, len, 1);

    bytes_[Idx(c)] += len;
    packets_[Idx(c)]++;
    return Sent{c, len, other};
  }

  uint64_t bytes(Class c) const { return bytes_[Idx(c)]; }
  uint64_t packets(Class c) const { return packets_[Idx(c)]; }
  void ResetCounters() {
    bytes_ = {};
    packets_ = {};
  }

 private:
  static std::size_t Idx(Class c) { return static_cast<std::size_t>(c); }

  parq_sched sched_{};
  std::array<std::deque<uint32_t>, 2> q_;
  std::array<LenGen, 2> src_;
  std::array<uint64_t, 2> bytes_{};
  std::array<uint64_t, 2> packets_{};
};

}  // namespace parq::model

#endif  // TESTS_TWO_CLASS_MODEL_H
