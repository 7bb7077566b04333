// SPDX-License-Identifier: GPL-2.0
//
// The server's side of parqd's Unix sockets (admission_client.h has the
// client's): a listening socket of type SOCK_SEQPACKET, one request per
// connection and one reply, served from an event loop without blocking.
// The admission socket (admission_socket.h) and the status socket
// (status.h) are two of them, each with its own handler.

#ifndef PARQD_ADMISSION_REQUEST_SERVER_H
#define PARQD_ADMISSION_REQUEST_SERVER_H

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace parq::parqd {

// The reply that refuses a request: {"ok": false, "error": why}, the one
// error shape of every socket a RequestServer serves.
std::string ErrorReply(const std::string& why);

// A request of those sockets: a JSON object naming its "op".
struct Request {
  nlohmann::json body;  // the whole object
  std::string op;       // its "op"
};

// `text` as a Request, or the ErrorReply() that refuses it: not a JSON
// object, or without a string "op".
Result<Request, std::string> ParseRequest(std::string_view text);

// Who asked: the connection's SO_PEERCRED.
struct Asker {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;  // when it connected (the admission role reads its job)
};

// What one user (uid) may ask of a socket: at most kMaxConnsPerUid
// connections waiting at once (a connection beyond them is refused), and
// kRequestBurst requests at once, then kRequestsPerSec a second (a
// request beyond them is refused).  root is not limited, and none of its
// connections is given up to make room for another user's.
inline constexpr size_t kMaxConnsPerUid = 8;
inline constexpr uint32_t kRequestBurst = 20;
inline constexpr uint32_t kRequestsPerSec = 10;

// The reply to one request.
using RequestHandler =
    std::function<std::string(const Asker& who, std::string_view request)>;

class RequestServer {
 public:
  // Binds `path` (replacing a stale socket; its directory must exist),
  // gives it `mode` and listens.  Errors name the socket as `what`.
  static Result<RequestServer, std::string> Open(const std::string& path,
                                                 mode_t mode,
                                                 std::string_view what);
  RequestServer(RequestServer&& o) noexcept;
  RequestServer& operator=(RequestServer&&) = delete;
  RequestServer(const RequestServer&) = delete;
  ~RequestServer();

  // The descriptors to poll for input: the listener, then connections.
  std::vector<int> fds() const;
  // Accepts, answers what has arrived through `handle`, and closes
  // connections that asked or that waited longer than 2 s.  `now_ns`:
  // monotonic.  A reply too long for the socket's send buffer is sent as
  // an error reply instead.  Each user's share (kMaxConnsPerUid,
  // kRequestBurst, kRequestsPerSec) is enforced here: what goes beyond it
  // is refused with an error reply that says so, and each call answers at
  // most one request per user, so that one user's slow requests delay
  // another's by one request at most.
  void Serve(const RequestHandler& handle, uint64_t now_ns);
  // Whether connections wait for an answer or for their 2 s to pass: the
  // caller's loop must call Serve() now and then, not only on input.
  bool waiting() const { return !conns_.empty(); }

 private:
  struct Conn {
    int fd;
    Asker who;
    uint64_t since_ns;
  };
  // A user's requests: a token bucket of kRequestBurst, refilled at
  // kRequestsPerSec.
  struct Bucket {
    uint64_t tokens_ns;  // tokens, in ns of refill (1 token: 1 s / rate)
    uint64_t at_ns;      // when it was last refilled
  };
  RequestServer(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  void Accept(uint64_t now_ns);
  // Whether `uid` may have a request answered at `now_ns` (takes a token).
  bool MayAsk(uid_t uid, uint64_t now_ns);
  size_t ConnsOf(uid_t uid) const;

  int fd_ = -1;
  std::string path_;
  std::vector<Conn> conns_;
  std::map<uid_t, Bucket> buckets_;
};

}  // namespace parq::parqd

#endif
