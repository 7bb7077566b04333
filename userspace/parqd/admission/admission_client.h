// SPDX-License-Identifier: GPL-2.0
//
// The client's side of parqd's Unix sockets (request_server.h has the
// server): one JSON request, one JSON reply.  The admission socket
// (admission_socket.h has its protocol) is asked by parqctl and by libparq,
// which applications link; so this depends on nothing but the C library
// and nlohmann-json.  The status socket (status.h) is asked by parqctl.

#ifndef PARQD_ADMISSION_ADMISSION_CLIENT_H
#define PARQD_ADMISSION_ADMISSION_CLIENT_H

#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace parq::parqd {

inline constexpr const char* kDefaultAdmissionSocket =
    "/run/parqd/admission.sock";
inline constexpr size_t kAdmissionMessageMax = 65536;

// `path` as a Unix socket address (the admission and the status socket);
// false if it is empty or too long.
bool UnixSockaddr(const std::string& path, sockaddr_un* a);

// Why a call got no answer to read: no parqd there or no answer in time
// (kUnreachable), or an answer that is not a JSON object (kBadReply).
struct AdmissionError {
  enum Kind : uint8_t { kUnreachable, kBadReply } kind = kUnreachable;
  std::string why;  // a sentence
};

// How a call's errors name the socket ("admission socket") and what to
// check when nothing answers there.
struct SocketNames {
  const char* what;
  const char* hint;
};

// One request to the socket at `path` and its reply, a JSON object of any
// size.  The wait for it lasts `timeout_ms`; signals do not cut it short.
Result<nlohmann::json, AdmissionError> SocketCall(const std::string& path,
                                                  const nlohmann::json& request,
                                                  int timeout_ms,
                                                  const SocketNames& names);

// SocketCall() to parqd's admission socket.
Result<nlohmann::json, AdmissionError> AdmissionCall(
    const std::string& path, const nlohmann::json& request,
    int timeout_ms = 30000);

}  // namespace parq::parqd

#endif
