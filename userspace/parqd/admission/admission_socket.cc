// SPDX-License-Identifier: GPL-2.0

#include "admission/admission_socket.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "admission/topology.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

// A rate as a tc rate string or a number of bits/s; `key` names it.
Result<uint64_t, std::string> RateOf(const json& j, const char* key = "rate") {
  if (j.is_number_unsigned())
    return j.get<uint64_t>();
  if (j.is_string())
    return ParseRate(j.get<std::string>());
  return Err{"\"" + std::string(key) +
             "\" must be a rate such as \"100mbit\" or bits/s as a number"};
}

// A reservation as this host holds it: ReservationJson() with the rate
// asked, the bounds of its adaptation, and what it carried at the last
// check.
json HeldJson(const HeldReservation& h) {
  json j = ReservationJson(h.r);
  j["asked_bps"] = h.asked;
  if (h.min)
    j["min_bps"] = h.min;
  if (h.max)
    j["max_bps"] = h.max;
  if (h.use)
    j["use"] = json{{"window_ns", h.use->window_ns},
                    {"choked", h.use->choked},
                    {"unused", h.use->unused},
                    {"sent_bps", h.use->sent_bps}};
  return j;
}

std::string StringOf(const json& req, const char* key) {
  const auto it = req.find(key);
  return it != req.end() && it->is_string() ? it->get<std::string>() : "";
}

// A job admitted as a whole, as the socket answers it.
json JobJson(const JobReservation& j) {
  return json{{"job", j.name},      {"leader", j.leader}, {"hosts", j.hosts},
              {"rate_bps", j.rate}, {"match", j.match},   {"owner", j.owner},
              {"joined", j.joined}, {"flows", j.flows()}, {"lease", j.lease}};
}

// Why a process of Slurm job `slurm` ("": none) may not name a job
// admitted as a whole `name`: its jobs are the job's id, or the id, a dot
// and more (OfSlurmJob()).
std::optional<std::string> NameProblemFor(const std::string& name,
                                          const std::string& slurm) {
  if (auto e = JobNameProblem(name))
    return e;
  if (slurm.empty()) {
    // A Slurm job's id and its N.NAME are its processes' (and root's).
    const std::string first = name.substr(0, name.find('.'));
    if (first.find_first_not_of("0123456789") == std::string::npos)
      return "job names of digits (and digits.NAME) are Slurm jobs': name "
             "the job otherwise outside Slurm";
    return std::nullopt;
  }
  if (OfSlurmJob(name, slurm))
    return std::nullopt;
  return "the asking process runs in Slurm job " + slurm +
         ": its jobs are named " + slurm + " or " + slurm + ".NAME";
}

// The ops on jobs admitted as a whole; nullopt when `op` is not one.
std::optional<std::string> HandleJobRequest(
    AdmissionAgent& agent, const Requester& who, const std::string& op,
    const json& req, const std::optional<std::string>& process_job) {
  const bool whole =
      (op == "reserve" && req.contains("hosts")) || op == "join" ||
      op == "leave" || op == "job" ||
      (op == "change" && !req.contains("id") && req.contains("job"));
  if (!whole)
    return std::nullopt;
  const std::string name = StringOf(req, "job");
  if (name.empty())
    return ErrorReply("\"" + op + "\" needs \"job\": the job's name");
  if (op == "job") {
    auto j = agent.ShowJob(name);
    if (!j.ok())
      return ErrorReply(j.error());
    return json{{"ok", true}, {"job", JobJson(j.value())}}.dump();
  }
  if (op == "leave") {
    auto left = agent.LeaveJob(who, name);
    if (!left.ok())
      return ErrorReply(left.error());
    return json{{"ok", true}, {"left", left.value()}}.dump();
  }
  if (!process_job && who.uid != 0)
    return ErrorReply(
        "cannot tell which Slurm job the asking process runs in: its "
        "/proc/PID/cgroup cannot be read (did it end before its answer?)");
  const std::string slurm = process_job.value_or("");
  if (auto e = NameProblemFor(name, slurm); e && who.uid != 0)
    return ErrorReply(*e);
  if (op == "join") {
    const std::string leader = StringOf(req, "leader");
    if (leader.empty())
      return ErrorReply("\"join\" needs \"leader\": the job's leader host");
    uint64_t max_rate = 0;
    if (req.contains("rate")) {
      auto rate = RateOf(req["rate"]);
      if (!rate.ok())
        return ErrorReply(rate.error());
      max_rate = rate.value();
    }
    auto m = agent.JoinJob(who, name, leader, max_rate, slurm);
    if (!m.ok())
      return ErrorReply(m.error());
    return json{{"ok", true},
                {"joined", {{"job", name}, {"leader", m.value().leader}}}}
        .dump();
  }
  if (!req.contains("rate"))
    return ErrorReply("\"" + op + "\" needs \"rate\"");
  auto rate = RateOf(req["rate"]);
  if (!rate.ok())
    return ErrorReply(rate.error());
  Result<JobReservation, std::string> j = Err{std::string()};
  if (op == "change") {
    j = agent.ChangeJob(who, name, rate.value());
  } else {
    const json& hosts = req["hosts"];
    std::vector<std::string> list;
    if (hosts.is_array())
      for (const json& h : hosts)
        if (h.is_string())
          list.push_back(h.get<std::string>());
    if (!hosts.is_array() || list.size() != hosts.size())
      return ErrorReply("\"hosts\" must be an array of host names");
    j = agent.ReserveJob(who, name, list, rate.value(), StringOf(req, "match"));
  }
  if (!j.ok())
    return ErrorReply(j.error());
  return json{{"ok", true}, {"job", JobJson(j.value())}}.dump();
}

}  // namespace

json ReservationJson(const Reservation& r) {
  return json{
      {"id", r.id},         {"from", r.from},   {"to", r.to},
      {"rate_bps", r.rate}, {"match", r.match}, {"owner", r.owner},
      {"job", r.job},       {"lease", r.lease}, {"resources", r.resources}};
}

std::string HandleAdmissionRequest(
    AdmissionAgent& agent, const Requester& who, std::string_view request,
    const IncomingReservations* incoming,
    const std::optional<std::string>& process_job) {
  auto parsed = ParseRequest(request);
  if (!parsed.ok())
    return parsed.error();
  const json& req = parsed.value().body;
  const std::string& op = parsed.value().op;
  if (auto reply = HandleJobRequest(agent, who, op, req, process_job))
    return *reply;
  Result<Reservation, std::string> r = Err{std::string()};
  if (op == "list") {
    json all = json::array();
    for (const HeldReservation& x : agent.Holdings())
      all.push_back(HeldJson(x));
    return json{{"ok", true}, {"reservations", all}}.dump();
  } else if (op == "incoming") {
    if (!incoming)
      return ErrorReply(
          "this parqd does not watch the reservations toward its "
          "host");
    const IncomingReservations::View v = incoming->Snapshot();
    json all = json::array();
    for (const Reservation& x : v.reservations)
      all.push_back(ReservationJson(x));
    json reply = {{"ok", true}, {"reservations", all}, {"synced", v.synced}};
    if (!v.synced)
      reply["sync_error"] = v.error;
    return reply.dump();
  } else if (op == "reserve" || op == "change") {
    if (!req.contains("rate"))
      return ErrorReply("\"" + op + "\" needs \"rate\"");
    auto rate = RateOf(req["rate"]);
    if (!rate.ok())
      return ErrorReply(rate.error());
    if (op == "reserve") {
      const std::string to = StringOf(req, "to");
      if (to.empty())
        return ErrorReply("\"reserve\" needs \"to\": the destination host");
      std::string job = StringOf(req, "job");
      if (!process_job && who.uid != 0)
        return ErrorReply(
            "cannot tell which Slurm job the asking process runs in: its "
            "/proc/PID/cgroup cannot be read (did it end before its "
            "answer?)");
      if (auto e = RequestJob(process_job.value_or(""), &job))
        return ErrorReply(*e);
      RateBounds bounds;
      for (auto [key, to_set] : {std::pair{"min_rate", &bounds.min},
                                 std::pair{"max_rate", &bounds.max}}) {
        if (!req.contains(key))
          continue;
        auto b = RateOf(req[key], key);
        if (!b.ok())
          return ErrorReply(b.error());
        *to_set = b.value();
      }
      r = agent.Reserve(who, to, rate.value(), StringOf(req, "match"), job,
                        bounds);
    } else {
      const std::string id = StringOf(req, "id");
      if (id.empty())
        return ErrorReply("\"change\" needs \"id\"");
      r = agent.Change(who, id, rate.value());
    }
  } else if (op == "release") {
    const std::string id = StringOf(req, "id");
    const std::string job = StringOf(req, "job");
    if (id.empty() && !job.empty()) {
      auto gone = agent.ReleaseJob(who, job);
      if (!gone.ok())
        return ErrorReply(gone.error());
      json all = json::array();
      for (const Reservation& x : gone.value())
        all.push_back(ReservationJson(x));
      return json{{"ok", true}, {"reservations", all}}.dump();
    }
    if (id.empty())
      return ErrorReply(
          "\"release\" needs \"id\", or \"job\" for a job's reservations");
    r = agent.Release(who, id);
  } else {
    return ErrorReply(
        "unknown \"op\" \"" + op +
        "\"; the ops are reserve, change, release, list, incoming, join, "
        "leave and job");
  }
  if (!r.ok())
    return ErrorReply(r.error());
  return json{{"ok", true}, {"reservation", ReservationJson(r.value())}}.dump();
}

std::optional<std::string> SlurmJobOfPid(pid_t pid) {
  if (pid <= 0)
    return std::nullopt;
  std::ifstream f("/proc/" + std::to_string(pid) + "/cgroup");
  if (!f)
    return std::nullopt;
  const std::string text{std::istreambuf_iterator<char>(f),
                         std::istreambuf_iterator<char>()};
  if (f.bad() || text.empty())
    return std::nullopt;
  return SlurmJobOf(text);
}

Requester RequesterOf(uid_t uid, gid_t gid) {
  Requester who;
  who.uid = uid;
  who.user = std::to_string(uid);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found)
    return who;
  who.user = pw.pw_name;
  int n = 64;
  std::vector<gid_t> gids(n);
  if (getgrouplist(pw.pw_name, gid, gids.data(), &n) < 0) {
    gids.resize(n);
    if (getgrouplist(pw.pw_name, gid, gids.data(), &n) < 0)
      n = 0;
  }
  gids.resize(n);
  std::vector<char> gbuf(16384);
  for (gid_t g : gids) {
    group gr{};
    group* gf = nullptr;
    if (getgrgid_r(g, &gr, gbuf.data(), gbuf.size(), &gf) == 0 && gf)
      who.groups.emplace_back(gr.gr_name);
  }
  return who;
}

Result<AdmissionServer, std::string> AdmissionServer::Open(
    const std::string& path) {
  auto s = RequestServer::Open(path, 0666, "admission socket");
  if (!s.ok())
    return Err{s.error()};
  return AdmissionServer(std::move(s.value()));
}

void AdmissionServer::Serve(AdmissionAgent& agent, uint64_t now) {
  server_.Serve(
      [this, &agent](const Asker& who, std::string_view request) {
        return HandleAdmissionRequest(agent, RequesterOf(who.uid, who.gid),
                                      request, incoming_,
                                      SlurmJobOfPid(who.pid));
      },
      now);
}

}  // namespace parq::parqd
