// SPDX-License-Identifier: GPL-2.0

#include "daemon/status.h"

#include <cstddef>
#include <string>

#include "admission/request_server.h"
#include "base/address.h"
#include "proto/wire.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

const char* TypeName(wire::Type t) {
  return t == wire::Type::kGrant ? "grant" : "release";
}

uint64_t Age(uint64_t now, uint64_t at) {
  return now > at ? now - at : 0;
}

json PeerJson(const StatusSources& s, const PeerStatus& p, uint64_t now) {
  json addresses = json::array();
  for (const Address& a : p.addresses)
    addresses.push_back(a.ToString());
  json dropped = json::object();
  for (size_t r = 0; r < kDropReasonCount; ++r)
    if (static_cast<DropReason>(r) != DropReason::kUnknownPeer)
      dropped[std::string(Name(static_cast<DropReason>(r)))] = p.dropped[r];
  json held = json::array();
  for (const auto& [a, e] : p.held)
    held.push_back({{"address", a.ToString()},
                    {"credit", e.credit},
                    {"epoch_ns", e.epoch_ns},
                    {"expires_in_ns", Age(e.expires, now)}});
  json last = nullptr;
  if (p.last)
    last = {{"type", TypeName(p.last->type)},
            {"sequence", p.last->sequence},
            {"time_ns", p.last->time_ns},
            {"age_ns", Age(now, p.last->at)}};
  json granted = nullptr;
  json sent = nullptr;
  if (s.role) {
    granted = s.role->granted().contains(p.id);
    if (auto it = s.role->sent().find(p.id); it != s.role->sent().end())
      sent = {{"type", TypeName(it->second.type)},
              {"sequence", it->second.sequence},
              {"credit", it->second.credit},
              {"age_ns", Age(now, it->second.at)}};
  }
  auto name = s.names.find(p.id);
  return {{"id", p.id},
          {"name", name == s.names.end() ? json(nullptr) : json(name->second)},
          {"addresses", addresses},
          {"accepted", p.accepted},
          {"last_accepted", last},
          {"dropped", dropped},
          {"held", held},
          {"granted", granted},
          {"last_sent", sent}};
}

}  // namespace

json PeersJson(const StatusSources& s, uint64_t now) {
  json peers = json::array();
  if (s.inbox)
    for (const PeerStatus& p : s.inbox->Peers(now))
      peers.push_back(PeerJson(s, p, now));
  return {{"ok", true},
          {"node", s.node_id},
          {"receiver", s.role != nullptr},
          {"peers", peers}};
}

std::string HandleStatusRequest(const StatusSources& s,
                                std::string_view request, uint64_t now) {
  auto r = ParseRequest(request);
  if (!r.ok())
    return r.error();
  if (r.value().op == "peers")
    return PeersJson(s, now).dump();
  return ErrorReply("unknown op \"" + r.value().op +
                    "\"; the status socket answers \"peers\"");
}

}  // namespace parq::parqd
