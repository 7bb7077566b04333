// SPDX-License-Identifier: GPL-2.0

#include "admission_socket.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "topology.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

constexpr size_t kMaxConns = 64;
constexpr uint64_t kConnWaitNs = 2'000'000'000;

json Error(const std::string& why) {
  return json{{"ok", false}, {"error", why}};
}

// A rate as a tc rate string or a number of bits/s.
Result<uint64_t, std::string> RateOf(const json& j) {
  if (j.is_number_unsigned())
    return j.get<uint64_t>();
  if (j.is_string())
    return ParseRate(j.get<std::string>());
  return Err{std::string(
      "\"rate\" must be a rate such as \"100mbit\" or bits/s as a number")};
}

std::string StringOf(const json& req, const char* key) {
  const auto it = req.find(key);
  return it != req.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

json ReservationJson(const Reservation& r) {
  return json{{"id", r.id},       {"from", r.from},
              {"to", r.to},       {"rate_bps", r.rate},
              {"match", r.match}, {"owner", r.owner},
              {"lease", r.lease}, {"resources", r.resources}};
}

std::string HandleAdmissionRequest(AdmissionAgent& agent, const Requester& who,
                                   std::string_view request,
                                   const IncomingReservations* incoming) {
  const json req = json::parse(request, nullptr, false);
  if (req.is_discarded() || !req.is_object())
    return Error("the request is not a JSON object").dump();
  const std::string op = StringOf(req, "op");
  Result<Reservation, std::string> r = Err{std::string()};
  if (op == "list") {
    json all = json::array();
    for (const Reservation& x : agent.List())
      all.push_back(ReservationJson(x));
    return json{{"ok", true}, {"reservations", all}}.dump();
  } else if (op == "incoming") {
    if (!incoming)
      return Error(
                 "this parqd does not watch the reservations toward its "
                 "host")
          .dump();
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
      return Error("\"" + op + "\" needs \"rate\"").dump();
    auto rate = RateOf(req["rate"]);
    if (!rate.ok())
      return Error(rate.error()).dump();
    if (op == "reserve") {
      const std::string to = StringOf(req, "to");
      if (to.empty())
        return Error("\"reserve\" needs \"to\": the destination host").dump();
      r = agent.Reserve(who, to, rate.value(), StringOf(req, "match"));
    } else {
      const std::string id = StringOf(req, "id");
      if (id.empty())
        return Error("\"change\" needs \"id\"").dump();
      r = agent.Change(who, id, rate.value());
    }
  } else if (op == "release") {
    const std::string id = StringOf(req, "id");
    if (id.empty())
      return Error("\"release\" needs \"id\"").dump();
    r = agent.Release(who, id);
  } else {
    return Error("unknown \"op\" \"" + op +
                 "\"; the ops are reserve, change, release, list and incoming")
        .dump();
  }
  if (!r.ok())
    return Error(r.error()).dump();
  return json{{"ok", true}, {"reservation", ReservationJson(r.value())}}.dump();
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
  sockaddr_un a;
  if (!AdmissionSockaddr(path, &a))
    return Err{"admission socket \"" + path + "\": give a path of 1 to " +
               std::to_string(sizeof(a.sun_path) - 1) + " characters"};
  const int fd =
      socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Err{"socket(AF_UNIX): " + std::string(std::strerror(errno))};
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path.c_str());  // a stale socket of an earlier parqd
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      chmod(path.c_str(), 0666) != 0 || listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return Err{"admission socket " + path + ": " + why};
  }
  return AdmissionServer(fd, path);
}

AdmissionServer::AdmissionServer(AdmissionServer&& o) noexcept
    : fd_(o.fd_),
      path_(std::move(o.path_)),
      conns_(std::move(o.conns_)),
      incoming_(o.incoming_) {
  o.fd_ = -1;
  o.conns_.clear();
}

AdmissionServer::~AdmissionServer() {
  for (const Conn& c : conns_)
    close(c.fd);
  if (fd_ >= 0) {
    close(fd_);
    unlink(path_.c_str());
  }
}

std::vector<int> AdmissionServer::fds() const {
  std::vector<int> out = {fd_};
  for (const Conn& c : conns_)
    out.push_back(c.fd);
  return out;
}

void AdmissionServer::Serve(AdmissionAgent& agent, uint64_t now) {
  for (;;) {
    const int c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0)
      break;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      close(c);
      continue;
    }
    if (conns_.size() >= kMaxConns) {  // the longest waiting goes
      close(conns_.front().fd);
      conns_.erase(conns_.begin());
    }
    conns_.push_back({c, cred.uid, cred.gid, now});
  }
  std::vector<char> buf(kAdmissionMessageMax);
  for (auto it = conns_.begin(); it != conns_.end();) {
    const ssize_t n = recv(it->fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
        now - it->since_ns < kConnWaitNs) {
      ++it;
      continue;
    }
    if (n > 0) {
      const std::string reply = HandleAdmissionRequest(
          agent, RequesterOf(it->uid, it->gid),
          std::string_view(buf.data(), static_cast<size_t>(n)), incoming_);
      (void)send(it->fd, reply.data(), reply.size(),
                 MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    close(it->fd);
    it = conns_.erase(it);
  }
}

}  // namespace parq::parqd
