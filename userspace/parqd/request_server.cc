// SPDX-License-Identifier: GPL-2.0

#include "request_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "admission_client.h"

namespace parq::parqd {

namespace {

constexpr size_t kMaxConns = 64;
constexpr uint64_t kConnWaitNs = 2'000'000'000;

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

void RequestServer::Serve(const RequestHandler& handle, uint64_t now) {
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
    conns_.push_back({c, {cred.uid, cred.gid, cred.pid}, now});
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
      const std::string reply =
          handle(it->who, std::string_view(buf.data(), static_cast<size_t>(n)));
      if (send(it->fd, reply.data(), reply.size(),
               MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
          errno == EMSGSIZE) {
        const std::string e =
            ErrorReply("parqd's reply of " + std::to_string(reply.size()) +
                       " bytes is too long for the socket");
        (void)send(it->fd, e.data(), e.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      }
    }
    close(it->fd);
    it = conns_.erase(it);
  }
}

}  // namespace parq::parqd
