// SPDX-License-Identifier: GPL-2.0
//
// DSCP values by name, as nft, tc-parq(8) and parqd's configuration spell
// them ("cs0".."cs7", "af11".."af43", "ef", any case, or 0..63), and sets
// of them as the kernel's masks (bit n: DSCP n, PARQ_DSCP_BIT).

#ifndef PARQD_DSCP_H
#define PARQD_DSCP_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parq::parqd {

// nft's name of a DSCP value where it has one ("ef", "cs5"), else the
// number.
std::string DscpName(uint8_t dscp);
// "EF", "cs5", "af41" or 0..63; nullopt for anything else.
std::optional<uint8_t> ParseDscp(const std::string& text);
// The mask of a set of DSCPs (each 0..63), and back, in ascending order.
uint64_t DscpMask(const std::vector<uint8_t>& dscps);
std::vector<uint8_t> DscpList(uint64_t mask);

}  // namespace parq::parqd

#endif  // PARQD_DSCP_H
