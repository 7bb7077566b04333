// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of parq_rr, the deficit round robin over the backlogged
// parallel flows, in the order of parq_core.c: init, add, select, charge,
// remove, then long runs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "parq_core.h"

namespace {

// The ring as a list of node pointers from head, checked for consistency:
// no cycle, the last node is the tail and ends the list, count == active.
std::vector<parq_rr_node*> Ring(const parq_rr& rr) {
  std::vector<parq_rr_node*> out;
  for (parq_rr_node* n = rr.head; n; n = n->next) {
    out.push_back(n);
    if (out.size() > rr.active + 1) {
      ADD_FAILURE() << "ring longer than active=" << rr.active << " (cycle?)";
      return out;
    }
  }
  EXPECT_EQ(out.size(), rr.active);
  if (out.empty()) {
    EXPECT_EQ(rr.head, nullptr);
    EXPECT_EQ(rr.tail, nullptr);
  } else {
    EXPECT_EQ(rr.tail, out.back());
    EXPECT_EQ(rr.tail->next, nullptr);
  }
  return out;
}

// Flows as the kernel keeps them: a node in the ring while the flow has
// packets, joined on the first packet, left when the last one is sent.
class Flows {
 public:
  Flows(std::size_t n, uint32_t quantum) : nodes_(n), q_(n), saturate_(n) {
    parq_rr_init(&rr_, quantum);
  }

  parq_rr& rr() { return rr_; }
  parq_rr_node* node(std::size_t i) { return &nodes_[i]; }
  std::deque<uint32_t>& queue(std::size_t i) { return q_[i]; }

  void Enqueue(std::size_t i, uint32_t len) {
    if (q_[i].empty())
      parq_rr_add(&rr_, &nodes_[i]);
    q_[i].push_back(len);
  }
  // Flow @i always has packets of @len bytes.
  void Saturate(std::size_t i, uint32_t len) {
    saturate_[i] = len;
    if (q_[i].empty())
      Enqueue(i, len);
  }

  struct Sent {
    std::size_t flow;
    uint32_t len;
  };

  std::optional<Sent> Dequeue() {
    parq_rr_node* n = parq_rr_select(&rr_);
    if (!n)
      return std::nullopt;
    if (n < nodes_.data() || n >= nodes_.data() + nodes_.size()) {
      ADD_FAILURE() << "select returned a foreign node";
      return std::nullopt;
    }
    const std::size_t i = static_cast<std::size_t>(n - nodes_.data());
    if (q_[i].empty()) {
      ADD_FAILURE() << "select returned idle flow " << i;
      return std::nullopt;
    }
    const uint32_t len = q_[i].front();
    q_[i].pop_front();
    if (q_[i].empty() && saturate_[i])
      q_[i].push_back(saturate_[i]);
    parq_rr_charge(&rr_, len, q_[i].empty());
    return Sent{i, len};
  }

 private:
  parq_rr rr_{};
  std::vector<parq_rr_node> nodes_;
  std::vector<std::deque<uint32_t>> q_;
  std::vector<uint32_t> saturate_;
};

// ---------------------------------------------------------------- init

TEST(ParqRrInit, EmptyRing) {
  parq_rr rr;
  rr.head = rr.tail = reinterpret_cast<parq_rr_node*>(0x1);
  rr.active = 7;
  parq_rr_init(&rr, 1514);
  EXPECT_EQ(rr.head, nullptr);
  EXPECT_EQ(rr.tail, nullptr);
  EXPECT_EQ(rr.active, 0u);
  EXPECT_EQ(rr.quantum, 1514u);
}

// A device of MTU 0 and no link header gives psched_mtu() == 0: a ring
// whose rounds add nothing would never select a node in debt.
TEST(ParqRrInit, QuantumHasAFloor) {
  parq_rr rr;
  parq_rr_init(&rr, 0);
  EXPECT_EQ(rr.quantum, static_cast<uint32_t>(PARQ_QUANTUM_MIN));
  parq_rr_set_quantum(&rr, 14);
  EXPECT_EQ(rr.quantum, static_cast<uint32_t>(PARQ_QUANTUM_MIN));
  parq_rr_set_quantum(&rr, 9014);
  EXPECT_EQ(rr.quantum, 9014u);

  parq_rr_init(&rr, 0);
  parq_rr_node a;
  parq_rr_add(&rr, &a);
  parq_rr_charge(&rr, 65536, false);  // a 64 KiB GSO packet
  EXPECT_EQ(parq_rr_select(&rr), &a);
  EXPECT_GT(a.deficit, 0);
}

// The MTU of the device changed: the next rounds add the new quantum.
TEST(ParqRrSetQuantum, NextRoundsAddTheNewQuantum) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  a.deficit = 0;
  b.deficit = 0;
  parq_rr_set_quantum(&rr, 9014);
  EXPECT_EQ(parq_rr_select(&rr), &a);
  EXPECT_EQ(a.deficit, 9014);
}

// ---------------------------------------------------------------- add

TEST(ParqRrAdd, JoinsAtTailWithAQuantum) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b, c;
  a.deficit = b.deficit = c.deficit = -999;
  a.next = b.next = c.next = &a;  // stale pointers must not survive

  parq_rr_add(&rr, &a);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&a}));
  parq_rr_add(&rr, &b);
  parq_rr_add(&rr, &c);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&a, &b, &c}));
  EXPECT_EQ(rr.head, &a);
  EXPECT_EQ(rr.tail, &c);
  for (parq_rr_node* n : {&a, &b, &c})
    EXPECT_EQ(n->deficit, 1514);
}

// ---------------------------------------------------------------- select

TEST(ParqRrSelect, EmptyRingReturnsNull) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  EXPECT_EQ(parq_rr_select(&rr), nullptr);
  Ring(rr);
}

TEST(ParqRrSelect, HeadInCreditIsKept) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  a.deficit = 1;
  EXPECT_EQ(parq_rr_select(&rr), &a);
  EXPECT_EQ(a.deficit, 1);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&a, &b}));
}

TEST(ParqRrSelect, RotatesPastNodesOutOfDeficit) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b, c;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  parq_rr_add(&rr, &c);
  a.deficit = -100;
  b.deficit = 0;
  c.deficit = 5;
  EXPECT_EQ(parq_rr_select(&rr), &c);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&c, &a, &b}));
  EXPECT_EQ(a.deficit, 1414);
  EXPECT_EQ(b.deficit, 1514);
  EXPECT_EQ(c.deficit, 5);
}

TEST(ParqRrSelect, EveryVisitAddsAQuantum) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  a.deficit = -2000;
  b.deficit = -10;
  // a: -486, b: 1504, a: 1028 -> b is the first head in credit.
  EXPECT_EQ(parq_rr_select(&rr), &b);
  EXPECT_EQ(a.deficit, 1028);
  EXPECT_EQ(b.deficit, 1504);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&b, &a}));
}

// A packet much larger than the quantum: select still terminates.
TEST(ParqRrSelect, HugePacketSmallQuantumTerminates) {
  for (uint32_t quantum : {1u, 64u, 1514u}) {
    Flows f(1, quantum);
    f.Saturate(0, 65536);
    for (int i = 0; i < 200; i++) {
      std::optional<Flows::Sent> s = f.Dequeue();
      ASSERT_TRUE(s);
      EXPECT_EQ(s->flow, 0u);
      EXPECT_EQ(s->len, 65536u);
    }
    Ring(f.rr());
  }
  // Several such flows: every one gets served, in turn.
  Flows f(3, 1514);
  for (std::size_t i = 0; i < 3; i++)
    f.Saturate(i, 65536);
  for (int round = 0; round < 100; round++) {
    for (std::size_t i = 0; i < 3; i++) {
      std::optional<Flows::Sent> s = f.Dequeue();
      ASSERT_TRUE(s);
      EXPECT_EQ(s->flow, i) << round;
    }
  }
}

// A flow alone in the ring is topped up like any other: it carries no more
// than one packet of debt into the next round when another flow joins.
TEST(ParqRrSelect, LoneFlowBuildsNoDebt) {
  constexpr uint32_t kQuantum = 1514;
  Flows f(2, kQuantum);
  f.Saturate(0, 65536);
  for (int i = 0; i < 1000; i++)
    ASSERT_EQ(f.Dequeue()->flow, 0u);
  EXPECT_GT(f.node(0)->deficit, -65536);

  f.Saturate(1, 1500);
  uint64_t waited = 0;  // bytes of flow 1 before flow 0 goes again
  for (;;) {
    std::optional<Flows::Sent> s = f.Dequeue();
    ASSERT_TRUE(s);
    if (s->flow == 0)
      break;
    waited += s->len;
    ASSERT_LE(waited, uint64_t{65536} + kQuantum + 1500);
  }
}

// ---------------------------------------------------------------- charge

TEST(ParqRrCharge, SpendsDeficitOfHead) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  ASSERT_EQ(parq_rr_select(&rr), &a);
  parq_rr_charge(&rr, 1000, false);
  EXPECT_EQ(a.deficit, 514);
  EXPECT_EQ(b.deficit, 1514);
  EXPECT_EQ(parq_rr_select(&rr), &a);  // still in credit: a again
  parq_rr_charge(&rr, 65536, false);
  EXPECT_EQ(a.deficit, 514 - 65536);
  EXPECT_EQ(parq_rr_select(&rr), &b);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&b, &a}));
}

TEST(ParqRrCharge, EmptiedFlowLeavesTheRing) {
  parq_rr rr;
  parq_rr_init(&rr, 1514);
  parq_rr_node a, b;
  parq_rr_add(&rr, &a);
  parq_rr_add(&rr, &b);
  ASSERT_EQ(parq_rr_select(&rr), &a);
  parq_rr_charge(&rr, 64, true);
  EXPECT_EQ(a.next, nullptr);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{&b}));
  ASSERT_EQ(parq_rr_select(&rr), &b);
  parq_rr_charge(&rr, 64, true);
  EXPECT_EQ(Ring(rr), (std::vector<parq_rr_node*>{}));
  EXPECT_EQ(parq_rr_select(&rr), nullptr);
}

// A flow that runs dry leaves the ring and comes back at the tail, behind
// the flows that stayed backlogged, with a fresh quantum.
TEST(ParqRrCharge, IdleFlowRejoinsAtTail) {
  Flows f(3, 1514);
  f.Enqueue(0, 1500);
  f.Saturate(1, 1500);
  f.Saturate(2, 1500);
  std::optional<Flows::Sent> s = f.Dequeue();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->flow, 0u);
  EXPECT_EQ(Ring(f.rr()), (std::vector<parq_rr_node*>{f.node(1), f.node(2)}));
  EXPECT_EQ(f.node(0)->next, nullptr);

  f.Enqueue(0, 9000);
  EXPECT_EQ(Ring(f.rr()),
            (std::vector<parq_rr_node*>{f.node(1), f.node(2), f.node(0)}));
  EXPECT_EQ(f.node(0)->deficit, 1514);
  // 1 and 2 each send one 1500 B packet (deficit 14), then one more that
  // takes them below zero, before 0 is served.
  std::vector<std::size_t> order;
  order.reserve(5);
  for (int i = 0; i < 5; i++)
    order.push_back(f.Dequeue()->flow);
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 1, 2, 2, 0}));
  EXPECT_EQ(Ring(f.rr()), (std::vector<parq_rr_node*>{f.node(1), f.node(2)}));
}

// ---------------------------------------------------------------- remove

class ParqRrRemove : public ::testing::Test {
 protected:
  void SetUp() override {
    parq_rr_init(&rr_, 1514);
    for (parq_rr_node& n : n_)
      parq_rr_add(&rr_, &n);
  }
  std::vector<parq_rr_node*> All() { return {&n_[0], &n_[1], &n_[2], &n_[3]}; }
  parq_rr rr_{};
  parq_rr_node n_[4];
};

TEST_F(ParqRrRemove, Head) {
  parq_rr_remove(&rr_, &n_[0]);
  EXPECT_EQ(n_[0].next, nullptr);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[1], &n_[2], &n_[3]}));
  EXPECT_EQ(parq_rr_select(&rr_), &n_[1]);
}

TEST_F(ParqRrRemove, Middle) {
  parq_rr_remove(&rr_, &n_[2]);
  EXPECT_EQ(n_[2].next, nullptr);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[0], &n_[1], &n_[3]}));
}

TEST_F(ParqRrRemove, TailThenAddLinksAfterNewTail) {
  parq_rr_remove(&rr_, &n_[3]);
  EXPECT_EQ(rr_.tail, &n_[2]);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[0], &n_[1], &n_[2]}));
  parq_rr_add(&rr_, &n_[3]);
  EXPECT_EQ(Ring(rr_), All());
}

TEST_F(ParqRrRemove, OnlyNode) {
  parq_rr_remove(&rr_, &n_[0]);
  parq_rr_remove(&rr_, &n_[1]);
  parq_rr_remove(&rr_, &n_[2]);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[3]}));
  parq_rr_remove(&rr_, &n_[3]);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{}));
  EXPECT_EQ(parq_rr_select(&rr_), nullptr);
  parq_rr_add(&rr_, &n_[2]);
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[2]}));
}

TEST_F(ParqRrRemove, NodeNotInRingIsNoOp) {
  parq_rr_node stray{};
  parq_rr_remove(&rr_, &stray);
  EXPECT_EQ(Ring(rr_), All());
  parq_rr_remove(&rr_, &n_[1]);
  parq_rr_remove(&rr_, &n_[1]);  // twice
  EXPECT_EQ(Ring(rr_), (std::vector<parq_rr_node*>{&n_[0], &n_[2], &n_[3]}));
}

TEST_F(ParqRrRemove, EveryOrderKeepsRingConsistent) {
  std::vector<int> order = {0, 1, 2, 3};
  do {
    parq_rr_init(&rr_, 1514);
    for (parq_rr_node& n : n_)
      parq_rr_add(&rr_, &n);
    std::vector<parq_rr_node*> want = All();
    for (int i : order) {
      parq_rr_remove(&rr_, &n_[i]);
      want.erase(std::find(want.begin(), want.end(), &n_[i]));
      EXPECT_EQ(Ring(rr_), want);
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

// ---------------------------------------------------------------- long runs

// Flows of 64, 1500 and 9000 B packets, all backlogged: at every point of
// the run their byte counts differ by at most one quantum plus one packet.
TEST(ParqRrFairness, EqualBytesWhateverThePacketSize) {
  const std::vector<uint32_t> sizes = {64, 1500, 9000};
  for (uint32_t quantum : {300u, 1514u, 9000u, 30000u}) {
    Flows f(sizes.size(), quantum);
    for (std::size_t i = 0; i < sizes.size(); i++)
      f.Saturate(i, sizes[i]);
    std::vector<uint64_t> bytes(sizes.size());
    uint64_t worst = 0;
    for (uint64_t total = 0; total < (uint64_t{64} << 20);) {
      std::optional<Flows::Sent> s = f.Dequeue();
      ASSERT_TRUE(s);
      bytes[s->flow] += s->len;
      total += s->len;
      auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
      worst = std::max(worst, *hi - *lo);
    }
    EXPECT_LE(worst, uint64_t{quantum} + 9000) << "quantum " << quantum;
    auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
    EXPECT_LE(*hi - *lo, uint64_t{quantum} + 9000) << "quantum " << quantum;
    Ring(f.rr());
  }
}

// Random arrivals, flows going idle and coming back, purges: the ring stays
// consistent with the set of flows that have packets.
TEST(ParqRrFairness, RandomChurnKeepsRingConsistent) {
  constexpr std::size_t kFlows = 8;
  Flows f(kFlows, 1514);
  std::mt19937_64 rng(99);
  const std::vector<uint32_t> sizes = {64, 1500, 9000, 65536};
  for (int step = 0; step < 200000; step++) {
    const uint64_t r = rng() % 100;
    const std::size_t i = rng() % kFlows;
    if (r < 45) {
      f.Enqueue(i, sizes[rng() % sizes.size()]);
    } else if (r < 47) {
      if (!f.queue(i).empty()) {  // purge the flow
        parq_rr_remove(&f.rr(), f.node(i));
        f.queue(i).clear();
      }
    } else {
      f.Dequeue();
    }
    if (step % 64 == 0) {
      std::vector<parq_rr_node*> ring = Ring(f.rr());
      std::size_t busy = 0;
      for (std::size_t k = 0; k < kFlows; k++) {
        const bool in =
            std::find(ring.begin(), ring.end(), f.node(k)) != ring.end();
        EXPECT_EQ(in, !f.queue(k).empty()) << "flow " << k << " step " << step;
        busy += !f.queue(k).empty();
      }
      ASSERT_EQ(busy, f.rr().active);
    }
  }
  while (f.Dequeue()) {
  }
  EXPECT_EQ(Ring(f.rr()), (std::vector<parq_rr_node*>{}));
  for (std::size_t k = 0; k < kFlows; k++)
    EXPECT_TRUE(f.queue(k).empty());
}

}  // namespace
