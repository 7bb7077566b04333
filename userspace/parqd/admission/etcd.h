// SPDX-License-Identifier: GPL-2.0
//
// A client of etcd's v3 API (etcd 3.4, Debian's etcd-server) through its
// gRPC gateway: JSON over HTTP/1.1 with libcurl, keys and values base64,
// 64-bit integers as strings.  Chosen over gRPC because Debian ships no
// etcd C++ client, libcurl and nlohmann-json are already parq's, and the
// calls admission needs (range, transactions with compares over key
// ranges, leases) are unary; a lease is kept alive by one keepalive call
// per period rather than a stream.
//
// Every call tries the endpoints in turn, starting with the last one
// that answered, and fails only when none answers; an error is a
// sentence naming what failed ("etcd: no endpoint answered
// (http://10.0.0.1:2379: Couldn't connect to server; ...)").

#ifndef PARQD_ADMISSION_ETCD_H
#define PARQD_ADMISSION_ETCD_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace parq::parqd {

struct EtcdKv {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct EtcdRange {
  int64_t revision = 0;  // the store's revision when it was read
  std::vector<EtcdKv> kvs;
};

// The end of the key range of every key that starts with `prefix`.
std::string EtcdPrefixEnd(std::string_view prefix);

// One comparison of a transaction, over `key` or, with `range_end`, over
// every key in [key, range_end) (etcd compares each; an empty range
// compares as revision 0).
struct EtcdCompare {
  enum class Target : uint8_t { kModRevision, kCreateRevision, kVersion };
  enum class Op : uint8_t { kEqual, kGreater, kLess, kNotEqual };
  std::string key, range_end;
  Target target = Target::kModRevision;
  Op op = Op::kEqual;
  int64_t number = 0;
};

// A put (with `lease` when not 0) or a delete of `key` (or the range).
struct EtcdOp {
  enum class Kind : uint8_t { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key, value, range_end;
  int64_t lease = 0;
};

struct EtcdTxn {
  bool succeeded = false;
  int64_t revision = 0;
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_s = 0;  // granted; on keepalive, what is left (0: expired)
};

// A response's body (Result needs value and error types to differ).
struct EtcdBody {
  std::string text;
};

class EtcdClient {
 public:
  // POSTs `body` to `url`; the response's body, or an error sentence.
  using Post = std::function<Result<EtcdBody, std::string>(
      const std::string& url, const std::string& body,
      std::chrono::milliseconds timeout)>;

  // `endpoints`: "http://HOST:PORT" or "https://HOST:PORT", at least
  // one.  `post`: the transport (CurlPost() unless a test gives its own).
  EtcdClient(std::vector<std::string> endpoints,
             std::chrono::milliseconds timeout, Post post);

  Result<EtcdRange, std::string> Range(std::string_view key,
                                       std::string_view range_end = {});
  // The store's revision after the put.
  Result<int64_t, std::string> Put(std::string_view key, std::string_view value,
                                   int64_t lease = 0);
  Result<EtcdTxn, std::string> Txn(const std::vector<EtcdCompare>& compare,
                                   const std::vector<EtcdOp>& success,
                                   const std::vector<EtcdOp>& failure = {});
  // Calls end by `deadline_ns` of `clock` (monotonic nanoseconds): each
  // endpoint's timeout is cut to the time left, and no endpoint is tried
  // once it has passed.  The admission role sets it to the moment it
  // must demote, so that no call outlasts a lease etcd may let go.
  using Clock = std::function<uint64_t()>;
  void set_deadline(uint64_t deadline_ns, Clock clock) {
    deadline_ns_ = deadline_ns;
    clock_ = std::move(clock);
  }
  void clear_deadline() { deadline_ns_ = 0; }

  Result<EtcdLease, std::string> LeaseGrant(int64_t ttl_s);
  Result<EtcdLease, std::string> LeaseKeepAlive(int64_t id);
  // Not an error when the lease is already gone.
  Result<EtcdLease, std::string> LeaseRevoke(int64_t id);

  const std::string& last_endpoint() const { return endpoints_[current_]; }

 private:
  // The response of the first endpoint that answers, as JSON text; an
  // answer that carries an error is returned as the error.
  Result<EtcdBody, std::string> Call(const std::string& path,
                                     const std::string& body);

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds timeout_;
  Post post_;
  size_t current_ = 0;
  uint64_t deadline_ns_ = 0;  // none
  Clock clock_;
};

// TLS toward etcd (https:// endpoints): PEM files, as etcdctl's --cacert,
// --cert and --key.  An empty `ca_file` trusts the system's authorities;
// `cert_file` and `key_file` (together) authenticate the client to a
// member started with --client-cert-auth.
struct EtcdTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;

  bool operator==(const EtcdTls&) const = default;
};

// Who parq is to an etcd with authentication on (etcdctl's --user): a
// user and the file that holds its password (one line), read at each
// authentication and checked as a key file is (EtcdKeyFileProblem), so a
// password rotated in the file takes effect at the next token.  The
// gateway takes no client certificate's name as a user, hence a
// password; the token it returns goes with every call ("Authorization:")
// and is asked for again when etcd no longer knows it.  Empty user: none.
struct EtcdAuth {
  std::string user;
  std::string password_file;

  bool operator==(const EtcdAuth&) const = default;
};

// What is wrong with `auth`: a user without a password file or the
// other way round, or a user name etcd could not hold; nullopt when
// nothing is.
std::optional<std::string> EtcdAuthProblem(const EtcdAuth& auth);

// What is wrong with using `tls` toward `endpoints`, for the caller to
// name in its own terms: a certificate without its key (or a key without
// its certificate), or files given with an endpoint that is not https://
// (`plain`).  Nothing wrong: kNone.
struct EtcdTlsProblem {
  enum Kind : uint8_t { kNone, kUnpaired, kPlainEndpoint } kind = kNone;
  std::string plain;
};
EtcdTlsProblem CheckEtcdTls(const EtcdTls& tls,
                            const std::vector<std::string>& endpoints);

// What is wrong with the client key file at `path`, as with parqd's own
// keys (key.h): it must be a regular file owned by this process's user or
// root, that others cannot access and its group can at most read (0600,
// or 0640 root:parqd); nullopt when nothing is.  The sentence names the
// file and the command that fixes it.
// `what` names the file in the sentence (a password file is checked the
// same way).
std::optional<std::string> EtcdKeyFileProblem(
    const std::string& path,
    const std::string& what = "admission.etcd-key-file");

// libcurl's POST of application/json, with a total timeout; over TLS for
// https:// URLs, with `tls`'s files; as `auth`'s user when it names one.
// With `abort`, a call in flight gives up within about a second of *abort
// becoming true (parqd's stop, which must not wait out etcd-timeout), with
// the error "stopped".
EtcdClient::Post CurlPost(EtcdTls tls = {},
                          const std::atomic<bool>* abort = nullptr,
                          EtcdAuth auth = {});

// A watch's transport: POSTs `body` to `url` and hands each line of the
// streamed answer to `on_line`, until `on_line` or `keep_going` (asked at
// least once a second) returns false, `duration` passes, or the stream
// ends; an error if no answer could be had within `connect_timeout`.
struct EtcdStreamEnd {};
using EtcdStream = std::function<Result<EtcdStreamEnd, std::string>(
    const std::string& url, const std::string& body,
    std::chrono::milliseconds connect_timeout,
    std::chrono::milliseconds duration,
    const std::function<bool(std::string_view line)>& on_line,
    const std::function<bool()>& keep_going)>;
EtcdStream CurlStream(EtcdTls tls = {}, EtcdAuth auth = {});

// One change seen by a watch.
struct EtcdEvent {
  bool deleted = false;
  EtcdKv kv;  // a delete carries the key and its mod_revision only
};

// How a watch ended: stopped (by the caller, or `duration` passed; go on
// from `next_revision`), compacted (the revisions from `next_revision` on
// are gone: list again), or failed (no endpoint answered: `why`).
struct EtcdWatchEnd {
  enum Kind : uint8_t { kStopped, kCompacted, kFailed } kind = kStopped;
  int64_t next_revision = 0;
  std::string why;
};

// Watches [key, range_end) from `start_revision` through etcd's gRPC
// gateway (/v3/watch), on the first of `endpoints` that answers, handing
// each batch of events and the store's revision after it to `on_events`
// (in revision order), until `keep_going` returns false, `duration`
// passes, the stream breaks or the revisions are compacted.  The
// list-then-watch loop around it is the caller's (IncomingReservations).
EtcdWatchEnd EtcdWatch(const std::vector<std::string>& endpoints,
                       const EtcdStream& stream, std::string_view key,
                       std::string_view range_end, int64_t start_revision,
                       std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds duration,
                       const std::function<void(const std::vector<EtcdEvent>&,
                                                int64_t revision)>& on_events,
                       const std::function<bool()>& keep_going);

}  // namespace parq::parqd

#endif
