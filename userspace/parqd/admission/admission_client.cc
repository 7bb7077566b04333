// SPDX-License-Identifier: GPL-2.0

#include "admission/admission_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace parq::parqd {

using nlohmann::json;

bool UnixSockaddr(const std::string& path, sockaddr_un* a) {
  if (path.empty() || path.size() >= sizeof(a->sun_path))
    return false;
  *a = {};
  a->sun_family = AF_UNIX;
  std::memcpy(a->sun_path, path.data(), path.size());
  return true;
}

Result<json, AdmissionError> SocketCall(const std::string& path,
                                        const json& request, int timeout_ms,
                                        const SocketNames& names) {
  auto unreachable = [](std::string why) {
    return Err{AdmissionError{AdmissionError::kUnreachable, std::move(why)}};
  };
  const std::string what = names.what;
  sockaddr_un a;
  if (!UnixSockaddr(path, &a))
    return unreachable(what + " \"" + path + "\": not a socket path");
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return unreachable("socket(AF_UNIX): " + std::string(std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return unreachable("cannot reach parqd's " + what + " " + path + ": " +
                       std::strerror(errno) + " (" + names.hint + ")");
  const std::string text = request.dump();
  ssize_t sent;
  do {
    sent = send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(text.size()))
    return unreachable("cannot send to " + path + ": " + std::strerror(errno));
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - Clock::now());
    pollfd p{fd, POLLIN, 0};
    const int ready =
        left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready > 0)
      break;
    if (ready < 0 && errno == EINTR)
      continue;
    return unreachable("parqd did not answer within " +
                       std::to_string(timeout_ms) + " ms on " + path);
  }
  // The reply is one packet: its length first, then the packet.
  ssize_t n;
  do {
    n = recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  std::vector<char> buf(n > 0 ? static_cast<size_t>(n) : 1);
  do {
    n = recv(fd, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0)
    return unreachable("parqd closed " + path + " without an answer");
  json reply = json::parse(std::string_view(buf.data(), static_cast<size_t>(n)),
                           nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return Err{AdmissionError{AdmissionError::kBadReply,
                              "parqd's answer on " + path + " is not JSON"}};
  return reply;
}

Result<json, AdmissionError> AdmissionCall(const std::string& path,
                                           const json& request,
                                           int timeout_ms) {
  return SocketCall(
      path, request, timeout_ms,
      {"admission socket", "is parqd running with an [admission] section?"});
}

}  // namespace parq::parqd
