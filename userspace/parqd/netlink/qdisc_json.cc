// SPDX-License-Identifier: GPL-2.0

#include "netlink/qdisc_json.h"

#include <linux/netlink.h>
#include <linux/parq.h>
#include <linux/pkt_sched.h>
#include <netlink/attr.h>
#include <parq/params.h>
#include <parq/xstats.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace parq::parqd {

namespace {

using nlohmann::json;

// A row of PARQ_PARAMS, as far as reading a dump needs it.
struct ParamRow {
  int attr;
  const char* keyword;
  parq_param_type type;
  parq_param_syntax syntax;
  long long min;
  const char* word;
  unsigned long long word_value;
  std::vector<const char*> names;
};

#define PARQ_NAMES(...)      \
  std::vector<const char*> { \
    __VA_ARGS__              \
  }
#define PARQ_NO_NAMES \
  std::vector<const char*> {}
#define PARQ_READ_ROW(attr, field, kw, type, syn, meta, min, max, dflt, word, \
                      wval, names, msg)                                       \
  ParamRow{attr,                                                              \
           kw,                                                                \
           type,                                                              \
           syn,                                                               \
           static_cast<long long>(min),                                       \
           word,                                                              \
           static_cast<unsigned long long>(wval),                             \
           names},

const std::vector<ParamRow>& Params() {
  static const std::vector<ParamRow> rows = {PARQ_PARAMS(PARQ_READ_ROW)};
  return rows;
}

#undef PARQ_READ_ROW
#undef PARQ_NO_NAMES
#undef PARQ_NAMES

struct DscpName {
  const char* name;
  unsigned dscp;
};

#define PARQ_DSCP_ROW(name, dscp) DscpName{name, dscp},
constexpr std::array kDscpNames = {PARQ_DSCP_NAMES(PARQ_DSCP_ROW)};
#undef PARQ_DSCP_ROW

json Dscp(unsigned d) {
  for (const DscpName& n : kDscpNames)
    if (n.dscp == d)
      return n.name;
  return d;
}

// The value as tc -j shows it: its DSCPs, its word, its name, or the
// number; nothing for a mode this reader does not know (as tc).
std::optional<json> Value(const ParamRow& r, uint64_t raw, int64_t value) {
  if (r.syntax == PARQ_SYN_DSCP_SET) {
    json set = json::array();
    for (unsigned d = 0; d < 64; d++)
      if (raw & (1ULL << d))
        set.push_back(Dscp(d));
    return set;
  }
  if (r.word && raw == r.word_value)
    return r.word;
  const bool named =
      value >= r.min && static_cast<uint64_t>(value - r.min) < r.names.size();
  if (r.syntax == PARQ_SYN_FLAG && !named)
    return std::nullopt;
  if ((r.syntax == PARQ_SYN_NAMES || r.syntax == PARQ_SYN_FLAG) && named)
    return r.names[value - r.min];
  if (r.syntax == PARQ_SYN_DSCP)
    return Dscp(static_cast<unsigned>(raw));
  if (r.type == PARQ_S32)
    return value;
  return raw;
}

std::string Key(const char* keyword) {
  std::string k = keyword;
  for (char& c : k)
    if (c == '-')
      c = '_';
  return k;
}

// The rows of PARQ_XSTATS as data, checked against the struct.
constexpr auto kXstats =
    std::to_array<parq_xs_field>({PARQ_XSTATS(PARQ_XS_FIELD)});
static_assert(0 PARQ_XSTATS(PARQ_XS_SIZE) == sizeof(tc_parq_xstats),
              "PARQ_XSTATS must list every field of struct tc_parq_xstats");
constexpr bool Contiguous() {
  unsigned end = 0;
  for (const parq_xs_field& f : kXstats) {
    if (f.offset != end)
      return false;
    end = f.offset + f.size;
  }
  return end == sizeof(tc_parq_xstats);
}
static_assert(Contiguous(), "PARQ_XSTATS must follow the struct's order");

template <typename T>
T At(const std::vector<uint8_t>& b, size_t off) {
  T v{};
  std::memcpy(&v, b.data() + off, sizeof(v));
  return v;
}

}  // namespace

json ParqOptionsJson(const std::vector<uint8_t>& options) {
  json out = json::object();
  // libnl's parser, as for the rest of the dump: it stops at an attribute
  // that runs past the end.
  std::vector<uint8_t> copy = options;
  nlattr* tb[TCA_PARQ_MAX + 1] = {};
  if (nla_parse(tb, TCA_PARQ_MAX, reinterpret_cast<nlattr*>(copy.data()),
                static_cast<int>(copy.size()), nullptr) < 0)
    return out;
  for (const ParamRow& r : Params()) {
    nlattr* a = tb[r.attr];
    if (!a)
      continue;
    const int len = nla_len(a);
    uint64_t raw = 0;
    int64_t value = 0;
    if (r.type == PARQ_U8 && len >= 1) {
      raw = value = nla_get_u8(a);
    } else if (r.type == PARQ_U32 && len >= 4) {
      raw = value = nla_get_u32(a);
    } else if (r.type == PARQ_S32 && len >= 4) {
      raw = nla_get_u32(a);
      value = static_cast<int32_t>(nla_get_u32(a));
    } else if (r.type == PARQ_U64 && len >= 8) {
      raw = nla_get_u64(a);
      value = static_cast<int64_t>(raw);
    } else {
      continue;
    }
    if (auto v = Value(r, raw, value))
      out[Key(r.keyword)] = *v;
  }
  return out;
}

json ParqXstatsJson(const std::vector<uint8_t>& xs) {
  json out = json::object();
  // A reserved class's statistics, or too short for the version.
  if (xs.size() < sizeof(uint32_t) || (At<uint32_t>(xs, 0) & PARQ_XSTATS_CLASS))
    return out;
  const size_t hist_end = parq_xs_hist_end(kXstats.data(), kXstats.size());
  for (const parq_xs_field& f : kXstats) {
    if (f.offset + f.size > xs.size() ||
        (f.kind == PARQ_XS_HIST && hist_end > xs.size()))
      break;
    const std::string name = f.name;
    switch (f.kind) {
      case PARQ_XS_VERSION:
        out["xstats_version"] = At<uint32_t>(xs, f.offset);
        break;
      case PARQ_XS_U32:
        out[name] = At<uint32_t>(xs, f.offset);
        break;
      case PARQ_XS_U64:
      case PARQ_XS_RATE:
        out[name] = At<uint64_t>(xs, f.offset);
        break;
      case PARQ_XS_HIST: {
        const parq_xs_field* s =
            parq_xs_sum_of(kXstats.data(), kXstats.size(), f.name);
        const uint64_t sum = s ? At<uint64_t>(xs, s->offset) : 0;
        json hist = json::array();
        uint64_t pkts = 0;
        for (size_t b = 0; b < PARQ_SOJOURN_BUCKETS; b++) {
          const uint64_t n = At<uint64_t>(xs, f.offset + 8 * b);
          pkts += n;
          hist.push_back(n);
        }
        out[name + "_pkts"] = pkts;
        out[name + "_sum"] = sum;
        out[name + "_mean"] = pkts ? sum / pkts : 0;
        out[name + "_hist"] = hist;
        break;
      }
      case PARQ_XS_SUM:
      case PARQ_XS_PAD:
        break;
    }
  }
  return out;
}

json QdiscJson(const TcObject& q) {
  json j = {{"kind", q.kind}, {"handle", TcHandleText(q.handle)}};
  if (q.parent == TC_H_ROOT)
    j["root"] = true;
  else
    j["parent"] = TcHandleText(q.parent);
  j["options"] = q.kind == "parq" ? ParqOptionsJson(q.options) : json::object();
  if (q.stats) {
    j["bytes"] = q.stats->bytes;
    j["packets"] = q.stats->packets;
    j["drops"] = q.stats->drops;
    j["overlimits"] = q.stats->overlimits;
    j["requeues"] = q.stats->requeues;
    j["backlog"] = q.stats->backlog;
    j["qlen"] = q.stats->qlen;
  }
  if (q.kind == "parq" && !q.xstats.empty())
    j["xstats"] = ParqXstatsJson(q.xstats);
  return j;
}

}  // namespace parq::parqd
