// SPDX-License-Identifier: GPL-2.0
//
// DSCP values by name, as nft, tc-parq(8) and parqd's configuration spell
// them ("cs0".."cs7", "af11".."af43", "ef", any case, or
// 0..PARQ_DSCP_MAX).

#ifndef PARQD_BASE_DSCP_H
#define PARQD_BASE_DSCP_H

#include <cstdint>
#include <optional>
#include <string>

namespace parq::parqd {

// nft's name of a DSCP value where it has one ("ef", "cs5"), else the
// number.
std::string DscpName(uint8_t dscp);
// "EF", "cs5", "af41" or 0..PARQ_DSCP_MAX; nullopt for anything else.
std::optional<uint8_t> ParseDscp(const std::string& text);

}  // namespace parq::parqd

#endif  // PARQD_BASE_DSCP_H
