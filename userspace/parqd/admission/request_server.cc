// SPDX-License-Identifier: GPL-2.0

#include "admission/request_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "admission/admission_client.h"

namespace parq::parqd {

namespace {

constexpr size_t kMaxConns = 64;
constexpr uint64_t kConnWaitNs = 2'000'000'000;
constexpr uint64_t kNsPerToken = 1'000'000'000 / kRequestsPerSec;
constexpr uint64_t kFullBucketNs = kRequestBurst * kNsPerToken;
// Users with a bucket kept: past it, the full ones are forgotten.
constexpr size_t kMaxBuckets = 1024;

// Sends `reply` on `fd` if it fits, else an error reply that says so.
void Reply(int fd, const std::string& reply) {
  if (send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
      errno == EMSGSIZE) {
    const std::string e =
        ErrorReply("parqd's reply of " + std::to_string(reply.size()) +
                   " bytes is too long for the socket");
    (void)send(fd, e.data(), e.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

}  // namespace

std::string ErrorReply(const std::string& why) {
  return nlohmann::json{{"ok", false}, {"error", why}}.dump();
}

Result<Request, std::string> ParseRequest(std::string_view text) {
  nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return Err{ErrorReply("the request is not a JSON object")};
  const auto op = body.find("op");
  if (op == body.end() || !op->is_string())
    return Err{ErrorReply("the request has no \"op\"")};
  std::string name = op->get<std::string>();
  return Request{std::move(body), std::move(name)};
}

Result<RequestServer, std::string> RequestServer::Open(const std::string& path,
                                                       mode_t mode,
                                                       std::string_view what) {
  sockaddr_un a;
  if (!UnixSockaddr(path, &a))
    return Err{std::string(what) + " \"" + path + "\": give a path of 1 to " +
               std::to_string(sizeof(a.sun_path) - 1) + " characters"};
  const int fd =
      socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Err{"socket(AF_UNIX): " + std::string(std::strerror(errno))};
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path.c_str());  // a stale socket of an earlier parqd
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      chmod(path.c_str(), mode) != 0 || listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return Err{std::string(what) + " " + path + ": " + why};
  }
  return RequestServer(fd, path);
}

RequestServer::RequestServer(RequestServer&& o) noexcept
    : fd_(o.fd_), path_(std::move(o.path_)), conns_(std::move(o.conns_)) {
  o.fd_ = -1;
  o.conns_.clear();
}

RequestServer::~RequestServer() {
  for (const Conn& c : conns_)
    close(c.fd);
  if (fd_ >= 0) {
    close(fd_);
    unlink(path_.c_str());
  }
}

std::vector<int> RequestServer::fds() const {
  std::vector<int> out = {fd_};
  for (const Conn& c : conns_)
    out.push_back(c.fd);
  return out;
}

size_t RequestServer::ConnsOf(uid_t uid) const {
  return static_cast<size_t>(
      std::count_if(conns_.begin(), conns_.end(),
                    [uid](const Conn& c) { return c.who.uid == uid; }));
}

void RequestServer::Accept(uint64_t now) {
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
    // Root (the Slurm epilogs, an operator) has no share to keep to and
    // is never the one to give up a connection.
    const bool root = cred.uid == 0;
    const size_t mine = ConnsOf(cred.uid);
    if (!root && mine >= kMaxConnsPerUid) {
      Reply(c, ErrorReply("refused: uid " + std::to_string(cred.uid) + " has " +
                          std::to_string(mine) +
                          " requests waiting already, the most one user may "
                          "have; wait for their answers"));
      close(c);
      continue;
    }
    if (conns_.size() >= kMaxConns) {
      // Full: the user with the most waiting gives up their oldest, unless
      // that is no more than this one's.
      std::map<uid_t, size_t> count;
      for (const Conn& k : conns_)
        if (k.who.uid != 0)
          count[k.who.uid]++;
      const auto most = std::max_element(
          count.begin(), count.end(),
          [](const auto& a, const auto& b) { return a.second < b.second; });
      if (most == count.end() || (!root && most->second <= mine + 1)) {
        Reply(c,
              ErrorReply("refused: parqd has " + std::to_string(conns_.size()) +
                         " requests waiting from as many users; try again "
                         "in a second"));
        close(c);
        continue;
      }
      const auto victim =
          std::find_if(conns_.begin(), conns_.end(),
                       [&](const Conn& k) { return k.who.uid == most->first; });
      Reply(victim->fd,
            ErrorReply("refused: parqd has " + std::to_string(conns_.size()) +
                       " requests waiting, and uid " +
                       std::to_string(most->first) +
                       " the most of them; this one waited longest"));
      close(victim->fd);
      conns_.erase(victim);
    }
    conns_.push_back({c, {cred.uid, cred.gid, cred.pid}, now});
  }
}

bool RequestServer::MayAsk(uid_t uid, uint64_t now) {
  if (uid == 0)
    return true;
  if (buckets_.size() >= kMaxBuckets && !buckets_.contains(uid))
    std::erase_if(buckets_, [now](const auto& b) {
      return now - b.second.at_ns + b.second.tokens_ns >= kFullBucketNs;
    });
  auto [it, fresh] = buckets_.try_emplace(uid, Bucket{kFullBucketNs, now});
  Bucket& b = it->second;
  if (!fresh) {
    b.tokens_ns = std::min(kFullBucketNs, b.tokens_ns + (now - b.at_ns));
    b.at_ns = now;
  }
  if (b.tokens_ns < kNsPerToken)
    return false;
  b.tokens_ns -= kNsPerToken;
  return true;
}

void RequestServer::Serve(const RequestHandler& handle, uint64_t now) {
  Accept(now);
  std::vector<char> buf(kAdmissionMessageMax);
  std::vector<uid_t> answered;  // one request per user per call
  for (auto it = conns_.begin(); it != conns_.end();) {
    const uid_t uid = it->who.uid;
    if (std::find(answered.begin(), answered.end(), uid) != answered.end()) {
      ++it;
      continue;
    }
    const ssize_t n = recv(it->fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
        now - it->since_ns < kConnWaitNs) {
      ++it;
      continue;
    }
    if (n > 0) {
      if (!MayAsk(uid, now)) {
        Reply(it->fd,
              ErrorReply("refused: too many requests from uid " +
                         std::to_string(uid) + ": at most " +
                         std::to_string(kRequestBurst) + " at once and " +
                         std::to_string(kRequestsPerSec) +
                         " a second; try again in a second"));
      } else {
        answered.push_back(uid);
        Reply(it->fd, handle(it->who, std::string_view(
                                          buf.data(), static_cast<size_t>(n))));
      }
    }
    close(it->fd);
    it = conns_.erase(it);
  }
}

}  // namespace parq::parqd
