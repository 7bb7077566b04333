// SPDX-License-Identifier: GPL-2.0
//
// The seed inputs of fuzz_wire: valid messages of every kind in every
// mode, and a receive-path session (grant, duplicate, restatement, release).

#ifndef PARQD_FUZZ_SEEDS_H
#define PARQD_FUZZ_SEEDS_H

#include <cstdint>
#include <vector>

namespace parq::parqd::fuzz {

std::vector<std::vector<uint8_t>> Seeds();

}  // namespace parq::parqd::fuzz

#endif
