// SPDX-License-Identifier: GPL-2.0
//
// fuzz_wire_regress [FILE...]: runs the fuzz target, without libFuzzer, on
// the built-in seeds and on FILEs (e.g. crash reproducers), so that the
// harness's invariants are checked by ctest with any compiler.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "seeds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t n = 0;
  for (const auto& s : parq::parqd::fuzz::Seeds()) {
    LLVMFuzzerTestOneInput(s.data(), s.size());
    // Every prefix as well: truncations of valid input in every mode.
    for (size_t len = 0; len < s.size(); len++)
      LLVMFuzzerTestOneInput(s.data(), len);
    n++;
  }
  for (int i = 1; i < argc; i++) {
    std::ifstream f(argv[i], std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    std::vector<uint8_t> d((std::istreambuf_iterator<char>(f)),
                           std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(d.data(), d.size());
    n++;
  }
  std::printf("fuzz_wire_regress: %zu inputs passed\n", n);
  return 0;
}
