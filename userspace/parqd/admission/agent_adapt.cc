// SPDX-License-Identifier: GPL-2.0
//
// Reservations that adapt to what they carry (admission_agent.h,
// Documentation/admission.md "Reservations that adapt"): at each check the
// agent reads each class's bytes and the time it was held back by its
// rate, and with [admission] adapt on it shrinks a reservation that has
// left most of its rate unused for adapt-after toward what it sent plus a
// margin, and grows one that has been choked as long, as far as admission
// finds room on its path.

#include <algorithm>
#include <cstdint>
#include <string>

#include "admission/admission_agent.h"

namespace parq::parqd {

namespace {

// A check counts as over-allocated when the reservation sent at most half
// its rate and was seldom held back by it, and as choked when its class
// was held back by its rate for at least half of it.
constexpr double kOverUnused = 0.5;
constexpr double kOverChokedBelow = 0.1;
constexpr double kChoked = 0.5;
// A shrink smaller than a quarter of the rate is not worth a transaction;
// a choked reservation asks at most twice its rate at a time.
constexpr uint64_t kShrinkAtMostNum = 3, kShrinkAtMostDen = 4;
constexpr uint64_t kGrowFactor = 2;

// `a` * `num` / `den`, rounded up, without overflow for rates in bits/s.
uint64_t Scale(uint64_t a, uint64_t num, uint64_t den) {
  const unsigned __int128 v =
      (static_cast<unsigned __int128>(a) * num + den - 1) / den;
  return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v);
}

}  // namespace

void AdmissionAgent::Measure(
    uint64_t now, const std::map<uint32_t, ReservedClasses::Use>& uses) {
  for (auto& [id, h] : held_) {
    const auto it = uses.find(h.minor);
    // No class (being installed again), the first look, or a class
    // installed again (its counters restart): measured from now on, and
    // nothing decided on what was measured before.
    const bool fresh = it == uses.end() || h.seen_ns == 0 || now <= h.seen_ns ||
                       it->second.bytes < h.seen.bytes ||
                       it->second.throttled_ns < h.seen.throttled_ns;
    if (fresh) {
      h.over_since = h.choked_since = 0;
      h.peak_bps = 0;
      h.seen_ns = it == uses.end() ? 0 : now;
      if (it != uses.end())
        h.seen = it->second;
      else
        h.use.reset();
      continue;
    }
    const ReservedClasses::Use& u = it->second;
    const uint64_t dt = now - h.seen_ns;
    ReservationUse m;
    m.window_ns = dt;
    m.choked = std::min(
        1.0, static_cast<double>(u.throttled_ns - h.seen.throttled_ns) /
                 static_cast<double>(dt));
    const double bps = static_cast<double>(u.bytes - h.seen.bytes) * 8e9 /
                       static_cast<double>(dt);
    m.sent_bps = static_cast<uint64_t>(bps);
    m.unused = h.r.rate && bps < static_cast<double>(h.r.rate)
                   ? 1.0 - bps / static_cast<double>(h.r.rate)
                   : 0.0;
    // A run of over-allocated, or choked, checks began where the first of
    // them did.
    const bool over = m.unused >= kOverUnused && m.choked < kOverChokedBelow;
    const bool choked = m.choked >= kChoked;
    if (!over) {
      h.over_since = 0;
    } else if (!h.over_since) {
      h.over_since = h.seen_ns;
      h.peak_bps = 0;
    }
    if (!choked)
      h.choked_since = 0;
    else if (!h.choked_since)
      h.choked_since = h.seen_ns;
    h.peak_bps = std::max(h.peak_bps, m.sent_bps);
    h.use = m;
    h.seen = u;
    h.seen_ns = now;
  }
}

void AdmissionAgent::Adapt(uint64_t now) {
  const AdaptConfig& a = config_.adapt;
  // Round robin from where the last check stopped, at most
  // kAdaptPerCheck transactions: a user's many reservations cannot make a
  // check outlast the lease.
  std::vector<std::pair<const std::string*, Held*>> order;
  for (auto& [id, h] : held_)
    order.emplace_back(&id, &h);
  if (order.empty())
    return;
  const size_t first = adapt_next_ % order.size();
  std::rotate(order.begin(), order.begin() + static_cast<ptrdiff_t>(first),
              order.end());
  size_t budget = kAdaptPerCheck, looked = 0;
  // Shrinks first, so that growth sees every capacity freed at this check.
  for (auto [idp, hp] : order) {
    if (!budget)
      break;
    Held& h = *hp;
    const std::string& id = *idp;
    if (!h.over_since || now - h.over_since < a.after_ns)
      continue;
    const uint64_t rate = h.r.rate;
    const uint64_t floor =
        h.min ? h.min
              : std::max<uint64_t>(1, Scale(h.asked, a.floor_percent, 100));
    const uint64_t want =
        std::max(floor, Scale(h.peak_bps, 100 + a.margin_percent, 100));
    if (want <= Scale(rate, kShrinkAtMostNum, kShrinkAtMostDen)) {
      budget--;
      auto r = SetRate(h.who, h, want, true);
      if (r.ok()) {
        counters_.shrunk++;
        log_(kInfo, "admission: " + id + " shrunk to " + FormatRate(want) +
                        ": it sent at most " + FormatRate(h.peak_bps) +
                        " of its " + FormatRate(rate) + " for " +
                        std::to_string((now - h.over_since) / 1'000'000'000) +
                        " s");
      } else {
        log_(kWarn, "admission: cannot shrink " + id + ": " + r.error());
      }
    }
    h.over_since = 0;
    h.peak_bps = 0;
  }
  for (auto [idp, hp] : order) {
    if (!budget)
      break;
    looked++;
    Held& h = *hp;
    const std::string& id = *idp;
    const uint64_t rate = h.r.rate;
    const uint64_t ceiling = h.max ? h.max : h.asked;
    if (!h.choked_since || now - h.choked_since < a.after_ns || rate >= ceiling)
      continue;
    // As much as admission finds room for, up to twice the rate: the
    // whole step, else half of it, else a quarter.
    const uint64_t step = std::min(ceiling, Scale(rate, kGrowFactor, 1));
    std::string why;
    for (uint64_t want = step; want > rate && budget;
         want = rate + (want - rate) / 2) {
      budget--;
      auto r = SetRate(h.who, h, want, true);
      if (r.ok()) {
        counters_.grown++;
        log_(kInfo, "admission: " + id + " grown from " + FormatRate(rate) +
                        " to " + FormatRate(want) +
                        ": its class was held back by its rate for " +
                        std::to_string((now - h.choked_since) / 1'000'000'000) +
                        " s");
        why.clear();
        break;
      }
      why = r.error();
      if (want - rate < rate / 4 + 1)
        break;
    }
    if (!why.empty() && why != h.grow_refused)
      log_(kInfo, "admission: " + id + " is choked at " + FormatRate(rate) +
                      " and cannot grow: " + why);
    h.grow_refused = why;
    // Refused or not, the next try comes after adapt-after more.
    h.choked_since = 0;
  }
  adapt_next_ = first + looked;
}

std::vector<HeldReservation> AdmissionAgent::Holdings() const {
  std::vector<HeldReservation> out;
  for (const auto& [id, h] : held_)
    out.push_back(HeldReservation{h.r, h.asked, h.min, h.max, h.use});
  return out;
}

void AdmissionAgent::UseMetrics(PromText& out) const {
  struct Share {
    const char* name;
    const char* help;
    double ReservationUse::*of;
  };
  for (const Share& f :
       {Share{"parqd_admission_reservation_choked_ratio",
              "The share of the last check's 5 s in which a reservation's "
              "class was held back by its rate: it was sent more than that.",
              &ReservationUse::choked},
        Share{"parqd_admission_reservation_unused_ratio",
              "The share of a reservation's rate it did not send over the "
              "last check's 5 s.",
              &ReservationUse::unused}}) {
    out.Family(f.name, "gauge", f.help);
    for (const auto& [id, h] : held_)
      if (h.use)
        out.SampleRatio(f.name, (*h.use).*f.of, "id", id);
  }
  const char* rate = "parqd_admission_reservation_rate_bps";
  out.Family(rate, "gauge",
             "A reservation's rate now, in bits/s (the adaptation may have "
             "changed it from the rate asked).");
  for (const auto& [id, h] : held_)
    out.Sample(rate, h.r.rate, "id", id);
}

}  // namespace parq::parqd
