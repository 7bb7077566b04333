// SPDX-License-Identifier: GPL-2.0
//
// parq-corebench: Google Benchmark of the scheduling core's per-packet
// operations (ops.h).  One iteration is one packet, so the reported time is
// ns per packet (items_per_second: packets per second).  Figures only; it
// asserts nothing.  Documentation/benchmarks.md says what each one measures.
//
//   parq-corebench [--benchmark_min_time=0.2] [--benchmark_filter=Rr]

#include <benchmark/benchmark.h>

#include <cstdint>

#include "ops.h"

namespace parq::corebench {
namespace {

template <typename Op>
void RunPackets(benchmark::State& state, Op& op) {
  for (auto _ : state)
    op.Packet();
  state.SetItemsProcessed(state.iterations());
}

void BmPolicyDecideSent(benchmark::State& state) {
  PolicyDecideSent op;
  RunPackets(state, op);
}
BENCHMARK(BmPolicyDecideSent);

void BmPolicyDecideSentSojourn(benchmark::State& state) {
  PolicyDecideSentSojourn op;
  RunPackets(state, op);
}
BENCHMARK(BmPolicyDecideSentSojourn);

void BmThreshPickCharge(benchmark::State& state) {
  ThreshPickCharge op;
  RunPackets(state, op);
}
BENCHMARK(BmThreshPickCharge);

void BmRrSelectCharge(benchmark::State& state) {
  RrSelectCharge op(static_cast<std::size_t>(state.range(0)));
  RunPackets(state, op);
  state.counters["flows"] = static_cast<double>(op.active());
}
BENCHMARK(BmRrSelectCharge)->ArgName("flows")->Arg(1)->Arg(1000)->Arg(100000);

void BmShaperCharge(benchmark::State& state) {
  ShaperCharge op;
  RunPackets(state, op);
}
BENCHMARK(BmShaperCharge);

void BmResvDispatchRate(benchmark::State& state) {
  ResvDispatch op(ResvDispatch::kRate);
  RunPackets(state, op);
}
BENCHMARK(BmResvDispatchRate);

void BmResvDispatchIdt(benchmark::State& state) {
  ResvDispatch op(ResvDispatch::kIdt);
  RunPackets(state, op);
}
BENCHMARK(BmResvDispatchIdt);

void BmResvBefore(benchmark::State& state) {
  ResvBefore op;
  RunPackets(state, op);
}
BENCHMARK(BmResvBefore);

// A user-space model (std::set), not the kernel's rb-tree: see ops.h.
void BmResvOrderedModel(benchmark::State& state) {
  ResvOrderedModel op(static_cast<std::size_t>(state.range(0)));
  RunPackets(state, op);
}
BENCHMARK(BmResvOrderedModel)->ArgName("flows")->Arg(1)->Arg(1000)->Arg(65514);

void BmCreditTake(benchmark::State& state) {
  CreditTake op;
  RunPackets(state, op);
}
BENCHMARK(BmCreditTake);

void BmCreditTakeCmpxchg(benchmark::State& state) {
  CreditTakeCmpxchg op;
  RunPackets(state, op);
}
BENCHMARK(BmCreditTakeCmpxchg);

void BmCreditWait(benchmark::State& state) {
  CreditWait op;
  RunPackets(state, op);
}
BENCHMARK(BmCreditWait);

}  // namespace
}  // namespace parq::corebench

BENCHMARK_MAIN();
