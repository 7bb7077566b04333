// SPDX-License-Identifier: GPL-2.0
//
// parq-core-percall: run N packets through one per-packet operation of the
// scheduling core (ops.h), with fixed inputs, and nothing else.  Made to be
// counted by callgrind: scripts/bench/core-instructions runs it with N and
// 2N packets and takes (Ir(2N) - Ir(N)) / N, so that start-up and set-up
// cancel out.  It prints nothing when it runs packets (printing N would
// cost a number of instructions that depends on N).
//
//   parq-core-percall --list          the operations, one per line
//   parq-core-percall --sanitized     "yes" or "no": built with ASan?
//   parq-core-percall OPERATION N     run N packets

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <system_error>

#include "ops.h"

namespace parq::corebench {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

template <typename Op>
void Run(Op& op, uint64_t packets) {
  for (uint64_t i = 0; i < packets; i++)
    op.Packet();
}

struct Case {
  const char* name;
  std::function<void(uint64_t)> run;
};

// Same names as the Google Benchmark cases, without "BM_".
const Case kCases[] = {
    {"PolicyDecideSent",
     [](uint64_t n) {
       PolicyDecideSent op;
       Run(op, n);
     }},
    {"PolicyDecideSentSojourn",
     [](uint64_t n) {
       PolicyDecideSentSojourn op;
       Run(op, n);
     }},
    {"ThreshPickCharge",
     [](uint64_t n) {
       ThreshPickCharge op;
       Run(op, n);
     }},
    {"RrSelectCharge/flows:1",
     [](uint64_t n) {
       RrSelectCharge op(1);
       Run(op, n);
     }},
    {"RrSelectCharge/flows:1000",
     [](uint64_t n) {
       RrSelectCharge op(1000);
       Run(op, n);
     }},
    {"RrSelectCharge/flows:100000",
     [](uint64_t n) {
       RrSelectCharge op(100000);
       Run(op, n);
     }},
    {"ShaperCharge",
     [](uint64_t n) {
       ShaperCharge op;
       Run(op, n);
     }},
    {"ResvDispatchRate",
     [](uint64_t n) {
       ResvDispatch op(ResvDispatch::kRate);
       Run(op, n);
     }},
    {"ResvDispatchIdt",
     [](uint64_t n) {
       ResvDispatch op(ResvDispatch::kIdt);
       Run(op, n);
     }},
    {"ResvBefore",
     [](uint64_t n) {
       ResvBefore op;
       Run(op, n);
     }},
    {"ResvOrderedModel/flows:1",
     [](uint64_t n) {
       ResvOrderedModel op(1);
       Run(op, n);
     }},
    {"ResvOrderedModel/flows:1000",
     [](uint64_t n) {
       ResvOrderedModel op(1000);
       Run(op, n);
     }},
    {"ResvOrderedModel/flows:65514",
     [](uint64_t n) {
       ResvOrderedModel op(65514);
       Run(op, n);
     }},
    {"CreditTake",
     [](uint64_t n) {
       CreditTake op;
       Run(op, n);
     }},
    {"CreditTakeCmpxchg",
     [](uint64_t n) {
       CreditTakeCmpxchg op;
       Run(op, n);
     }},
    {"CreditWait",
     [](uint64_t n) {
       CreditWait op;
       Run(op, n);
     }},
};

int Usage() {
  std::fprintf(stderr,
               "usage: parq-core-percall OPERATION N   (N packets, N >= 1)\n"
               "       parq-core-percall --list | --sanitized\n");
  return 2;
}

int Main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Case& c : kCases)
      std::printf("%s\n", c.name);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--sanitized") == 0) {
    std::printf("%s\n", kSanitized ? "yes" : "no");
    return 0;
  }
  if (argc != 3)
    return Usage();
  const std::string_view name = argv[1];
  const std::string_view count = argv[2];
  uint64_t packets = 0;
  const auto [end, ec] =
      std::from_chars(count.data(), count.data() + count.size(), packets);
  if (ec != std::errc() || end != count.data() + count.size() || packets == 0) {
    std::fprintf(stderr,
                 "parq-core-percall: N must be a positive integer, not '%s'\n",
                 argv[2]);
    return Usage();
  }
  for (const Case& c : kCases) {
    if (name == c.name) {
      c.run(packets);
      return 0;
    }
  }
  std::fprintf(stderr, "parq-core-percall: no operation '%s' (see --list)\n",
               argv[1]);
  return 2;
}

}  // namespace
}  // namespace parq::corebench

int main(int argc, char** argv) {
  return parq::corebench::Main(argc, argv);
}
