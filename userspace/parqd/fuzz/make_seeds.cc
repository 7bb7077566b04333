// SPDX-License-Identifier: GPL-2.0
//
// fuzz_wire_seeds DIR: writes the seed corpus of fuzz_wire into DIR.

#include <cstdio>
#include <string>

#include "seeds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const auto seeds = parq::parqd::fuzz::Seeds();
  for (size_t i = 0; i < seeds.size(); i++) {
    const std::string path =
        std::string(argv[1]) + "/seed-" + std::to_string(i);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f ||
        std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) !=
            seeds[i].size() ||
        std::fclose(f) != 0) {
      std::perror(path.c_str());
      return 1;
    }
  }
  return 0;
}
