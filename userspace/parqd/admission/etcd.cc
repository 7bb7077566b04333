// SPDX-License-Identifier: GPL-2.0

#include "admission/etcd.h"

#include <curl/curl.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "proto/key.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

constexpr std::string_view kB64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8) |
                       uint32_t{static_cast<uint8_t>(in[i + 2])};
    for (int s = 18; s >= 0; s -= 6)
      out += kB64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t{static_cast<uint8_t>(in[i])} << 16;
    if (i + 1 < in.size())
      v |= uint32_t{static_cast<uint8_t>(in[i + 1])} << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Decodes standard base64 (what the gateway sends); false on other text.
bool Unbase64(std::string_view in, std::string& out) {
  out.clear();
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=')
      break;
    const size_t d = kB64.find(c);
    if (d == std::string_view::npos)
      return false;
    v = (v << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return true;
}

// The gateway writes int64 fields as strings and leaves out zeros.  A
// field that is not wholly a number reads as absent (0), as one of another
// type does: "12abc" is not 12.
int64_t Int(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end())
    return 0;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    const char* const end = s.data() + s.size();
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), end, v);
    return r.ec == std::errc() && r.ptr == end ? v : 0;
  }
  return it->is_number_integer() ? it->get<int64_t>() : 0;
}

// j[key] when j is an object that has it, else null: never throws, where
// value() throws on a member of another type than its default's.
const json& Field(const json& j, const char* key) {
  static const json none;
  if (!j.is_object())
    return none;
  const auto it = j.find(key);
  return it == j.end() ? none : *it;
}

// j[key] when it is a string, else `otherwise`.
std::string Text(const json& j, const char* key, const char* otherwise) {
  const json& f = Field(j, key);
  return f.is_string() ? f.get<std::string>() : otherwise;
}

std::string Str(const json& j, const char* key) {
  const auto it = j.find(key);
  std::string out;
  if (it != j.end() && it->is_string())
    Unbase64(it->get<std::string>(), out);
  return out;
}

const char* TargetName(EtcdCompare::Target t) {
  switch (t) {
    case EtcdCompare::Target::kCreateRevision:
      return "CREATE";
    case EtcdCompare::Target::kVersion:
      return "VERSION";
    case EtcdCompare::Target::kModRevision:
      break;
  }
  return "MOD";
}

const char* TargetField(EtcdCompare::Target t) {
  switch (t) {
    case EtcdCompare::Target::kCreateRevision:
      return "create_revision";
    case EtcdCompare::Target::kVersion:
      return "version";
    case EtcdCompare::Target::kModRevision:
      break;
  }
  return "mod_revision";
}

const char* OpName(EtcdCompare::Op o) {
  switch (o) {
    case EtcdCompare::Op::kGreater:
      return "GREATER";
    case EtcdCompare::Op::kLess:
      return "LESS";
    case EtcdCompare::Op::kNotEqual:
      return "NOT_EQUAL";
    case EtcdCompare::Op::kEqual:
      break;
  }
  return "EQUAL";
}

json OpJson(const EtcdOp& op) {
  if (op.kind == EtcdOp::Kind::kDelete) {
    json d = {{"key", Base64(op.key)}};
    if (!op.range_end.empty())
      d["range_end"] = Base64(op.range_end);
    return {{"request_delete_range", d}};
  }
  json p = {{"key", Base64(op.key)}, {"value", Base64(op.value)}};
  if (op.lease)
    p["lease"] = std::to_string(op.lease);
  return {{"request_put", p}};
}

// The most of an answer (CurlPost) or of one watch line (CurlStream) that
// is kept: past it the call fails, whatever etcd (or what answers in its
// place) sends.  parq's answers are a few hundred bytes per key.
constexpr size_t kEtcdMaxAnswerBytes = size_t{16} << 20;  // 16 MiB

// An answer, up to kEtcdMaxAnswerBytes.
struct BoundedText {
  std::string text;
  bool over = false;  // it was longer: the transfer was aborted
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  auto* b = static_cast<BoundedText*>(out);
  if (size * n > kEtcdMaxAnswerBytes - b->text.size()) {
    b->over = true;
    return 0;  // aborts the transfer
  }
  b->text.append(data, size * n);
  return size * n;
}

std::string Mib(size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

std::string EtcdPrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      c++;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints,
                       std::chrono::milliseconds timeout, Post post)
    : endpoints_(std::move(endpoints)),
      timeout_(timeout),
      post_(std::move(post)) {}

Result<EtcdBody, std::string> EtcdClient::Call(const std::string& path,
                                               const std::string& body) {
  std::string tried;
  for (size_t n = 0; n < endpoints_.size(); n++) {
    const size_t i = (current_ + n) % endpoints_.size();
    std::chrono::milliseconds timeout = timeout_;
    if (deadline_ns_ != 0) {
      const uint64_t now = clock_();
      if (now >= deadline_ns_) {
        tried += (tried.empty() ? "" : "; ") +
                 std::string("no time left before the deadline");
        break;
      }
      timeout =
          std::min(timeout, std::chrono::milliseconds(static_cast<int64_t>(
                                (deadline_ns_ - now + 999'999) / 1'000'000)));
    }
    auto r = post_(endpoints_[i] + path, body, timeout);
    if (!r.ok()) {
      tried += (tried.empty() ? "" : "; ") + endpoints_[i] + ": " + r.error();
      continue;
    }
    current_ = i;
    const json j = json::parse(r.value().text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Err{"etcd " + endpoints_[i] + path + ": the answer is not JSON"};
    if (j.contains("error")) {
      const auto m = j.find("message");
      const std::string what = m != j.end() && m->is_string()
                                   ? m->get<std::string>()
                                   : j["error"].dump();
      // gRPC's UNAVAILABLE (no leader, this member lost quorum) and
      // DEADLINE_EXCEEDED: another member may do better.
      const int64_t code = Int(j, "code");
      if (code == 14 || code == 4) {
        tried += (tried.empty() ? "" : "; ") + endpoints_[i] + ": " + what;
        continue;
      }
      return Err{"etcd " + endpoints_[i] + path + ": " + what};
    }
    return r;
  }
  return Err{"etcd: no endpoint answered (" + tried + ")"};
}

Result<EtcdRange, std::string> EtcdClient::Range(std::string_view key,
                                                 std::string_view range_end) {
  json req = {{"key", Base64(key)}};
  if (!range_end.empty())
    req["range_end"] = Base64(range_end);
  auto r = Call("/v3/kv/range", req.dump());
  if (!r.ok())
    return Err{r.error()};
  const json j = json::parse(r.value().text, nullptr, false);
  EtcdRange out;
  out.revision = Int(Field(j, "header"), "revision");
  const json& kvs = Field(j, "kvs");
  if (!kvs.is_null() && !kvs.is_array())
    return Err{
        std::string("etcd /v3/kv/range: the answer is not of the "
                    "expected shape ('kvs' is not a list)")};
  for (const json& kv : kvs)
    out.kvs.push_back(
        EtcdKv{Str(kv, "key"), Str(kv, "value"), Int(kv, "create_revision"),
               Int(kv, "mod_revision"), Int(kv, "version"), Int(kv, "lease")});
  return out;
}

Result<int64_t, std::string> EtcdClient::Put(std::string_view key,
                                             std::string_view value,
                                             int64_t lease) {
  EtcdOp op{
      EtcdOp::Kind::kPut, std::string(key), std::string(value), {}, lease};
  auto r = Call("/v3/kv/put", OpJson(op)["request_put"].dump());
  if (!r.ok())
    return Err{r.error()};
  return Int(Field(json::parse(r.value().text, nullptr, false), "header"),
             "revision");
}

Result<EtcdTxn, std::string> EtcdClient::Txn(
    const std::vector<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
    const std::vector<EtcdOp>& failure) {
  json req = {{"compare", json::array()},
              {"success", json::array()},
              {"failure", json::array()}};
  for (const EtcdCompare& c : compare) {
    json cj = {{"key", Base64(c.key)},
               {"target", TargetName(c.target)},
               {"result", OpName(c.op)},
               {TargetField(c.target), std::to_string(c.number)}};
    if (!c.range_end.empty())
      cj["range_end"] = Base64(c.range_end);
    req["compare"].push_back(cj);
  }
  for (const EtcdOp& op : success)
    req["success"].push_back(OpJson(op));
  for (const EtcdOp& op : failure)
    req["failure"].push_back(OpJson(op));
  auto r = Call("/v3/kv/txn", req.dump());
  if (!r.ok())
    return Err{r.error()};
  const json j = json::parse(r.value().text, nullptr, false);
  const json& succeeded = Field(j, "succeeded");
  if (!succeeded.is_null() && !succeeded.is_boolean())
    return Err{
        "etcd /v3/kv/txn: the answer is not of the expected shape "
        "('succeeded' is not a boolean)"};
  return EtcdTxn{succeeded.is_boolean() && succeeded.get<bool>(),
                 Int(Field(j, "header"), "revision")};
}

Result<EtcdLease, std::string> EtcdClient::LeaseGrant(int64_t ttl_s) {
  auto r = Call("/v3/lease/grant", json{{"TTL", ttl_s}}.dump());
  if (!r.ok())
    return Err{r.error()};
  const json j = json::parse(r.value().text, nullptr, false);
  return EtcdLease{Int(j, "ID"), Int(j, "TTL")};
}

Result<EtcdLease, std::string> EtcdClient::LeaseKeepAlive(int64_t id) {
  auto r = Call("/v3/lease/keepalive", json{{"ID", std::to_string(id)}}.dump());
  if (!r.ok())
    return Err{r.error()};
  const json j = json::parse(r.value().text, nullptr, false);
  return EtcdLease{id, Int(Field(j, "result"), "TTL")};
}

Result<EtcdLease, std::string> EtcdClient::LeaseRevoke(int64_t id) {
  auto r = Call("/v3/lease/revoke", json{{"ID", std::to_string(id)}}.dump());
  if (!r.ok() && r.error().find("lease not found") == std::string::npos)
    return Err{r.error()};
  return EtcdLease{id, 0};
}

EtcdTlsProblem CheckEtcdTls(const EtcdTls& tls,
                            const std::vector<std::string>& endpoints) {
  if (tls.cert_file.empty() != tls.key_file.empty())
    return {EtcdTlsProblem::kUnpaired, {}};
  if (tls != EtcdTls{})
    for (const std::string& e : endpoints)
      if (e.rfind("https://", 0) != 0)
        return {EtcdTlsProblem::kPlainEndpoint, e};
  return {};
}

std::optional<std::string> EtcdKeyFileProblem(const std::string& path,
                                              const std::string& what) {
  // Checked as the credit keys are; libcurl reads the file itself later.
  constexpr size_t kMaxKeyBytes = 1 << 20;
  auto read = ReadSecretFile(what, path, kMaxKeyBytes);
  if (!read.ok())
    return read.error();
  OPENSSL_cleanse(read.value().data(), read.value().size());
  return std::nullopt;
}

std::optional<std::string> EtcdAuthProblem(const EtcdAuth& auth) {
  if (auth.user.empty() != auth.password_file.empty())
    return std::string(
        "etcd-user and etcd-password-file go together: the user parq is "
        "to etcd and the file of its password");
  if (auth.user.empty())
    return std::nullopt;
  for (const unsigned char c : auth.user)
    if (c < 0x21 || c == 0x7f)
      return "etcd-user \"" + auth.user +
             "\" holds a space or a control character: give the name of "
             "the etcd user (etcdctl user list)";
  if (auth.password_file.front() != '/')
    return "etcd-password-file \"" + auth.password_file +
           "\" must be an absolute path";
  return std::nullopt;
}

namespace {

// A POST of JSON to `url`, over TLS with `tls`'s files for https://: what
// CurlPost and CurlStream share.  `body` must outlive the transfer.
class CurlJsonPost {
 public:
  // `token`: etcd's authentication token, or "" for none.
  CurlJsonPost(const std::string& url, const std::string& body,
               const EtcdTls& tls, const std::string& token = {})
      : c_(curl_easy_init()) {
    if (!c_)
      return;
    headers_ = curl_slist_append(nullptr, "Content-Type: application/json");
    if (!token.empty())
      headers_ =
          curl_slist_append(headers_, ("Authorization: " + token).c_str());
    curl_easy_setopt(c_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(c_, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c_, CURLOPT_ERRORBUFFER, error_.data());
    if (!tls.ca_file.empty())
      curl_easy_setopt(c_, CURLOPT_CAINFO, tls.ca_file.c_str());
    if (!tls.cert_file.empty()) {
      curl_easy_setopt(c_, CURLOPT_SSLCERT, tls.cert_file.c_str());
      curl_easy_setopt(c_, CURLOPT_SSLKEY, tls.key_file.c_str());
    }
  }
  ~CurlJsonPost() {
    curl_slist_free_all(headers_);
    if (c_)
      curl_easy_cleanup(c_);
  }
  CurlJsonPost(const CurlJsonPost&) = delete;
  CurlJsonPost& operator=(const CurlJsonPost&) = delete;

  CURL* get() const { return c_; }
  long status() const {
    long status = 0;
    curl_easy_getinfo(c_, CURLINFO_RESPONSE_CODE, &status);
    return status;
  }
  // What went wrong, after curl_easy_perform() returned `rc`.
  std::string Error(CURLcode rc) const {
    return error_[0] ? error_.data() : curl_easy_strerror(rc);
  }

 private:
  CURL* c_;
  curl_slist* headers_ = nullptr;
  std::array<char, CURL_ERROR_SIZE> error_{};
};

void CurlInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct StreamState {
  std::string pending;  // a line not yet complete, kEtcdMaxAnswerBytes at most
  const std::function<bool(std::string_view)>* on_line;
  const std::function<bool()>* keep_going;
  bool stopped = false;
  bool too_long = false;  // a line grew past kEtcdMaxAnswerBytes
};

size_t StreamWrite(char* data, size_t size, size_t n, void* p) {
  auto* st = static_cast<StreamState*>(p);
  st->pending.append(data, size * n);
  size_t start = 0;
  for (size_t nl; (nl = st->pending.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    if (!(*st->on_line)(
            std::string_view(st->pending).substr(start, nl - start))) {
      st->stopped = true;
      return 0;  // aborts the transfer
    }
  }
  st->pending.erase(0, start);
  if (st->pending.size() > kEtcdMaxAnswerBytes) {
    st->too_long = true;
    return 0;  // aborts the transfer
  }
  return size * n;
}

int AbortProgress(void* p, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(p)->load() ? 1 : 0;
}

int StreamProgress(void* p, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<StreamState*>(p);
  if ((*st->keep_going)())
    return 0;
  st->stopped = true;
  return 1;
}

}  // namespace

namespace {

// One POST of `body` to `url` (CurlPost's transfer), with `token`.
Result<EtcdBody, std::string> PostOnce(const std::string& url,
                                       const std::string& body,
                                       std::chrono::milliseconds timeout,
                                       const EtcdTls& tls,
                                       const std::atomic<bool>* abort,
                                       const std::string& token) {
  CurlJsonPost post(url, body, tls, token);
  if (!post.get())
    return Err{std::string("curl_easy_init failed")};
  BoundedText answer;
  curl_easy_setopt(post.get(), CURLOPT_TIMEOUT_MS,
                   static_cast<long>(timeout.count()));
  curl_easy_setopt(post.get(), CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(post.get(), CURLOPT_WRITEDATA, &answer);
  if (abort) {
    curl_easy_setopt(post.get(), CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(post.get(), CURLOPT_XFERINFOFUNCTION, &AbortProgress);
    // libcurl's type for it is void*; AbortProgress only reads.
    curl_easy_setopt(post.get(), CURLOPT_XFERINFODATA,
                     const_cast<std::atomic<bool>*>(abort));
  }
  const CURLcode rc = curl_easy_perform(post.get());
  if (rc == CURLE_ABORTED_BY_CALLBACK)
    return Err{std::string("stopped")};
  if (answer.over)
    return Err{"the answer is larger than " + Mib(kEtcdMaxAnswerBytes) +
               "; refused"};
  std::string& out = answer.text;
  if (rc != CURLE_OK)
    return Err{post.Error(rc)};
  // The gateway answers errors with a JSON body too: Call() reads it.
  const long status = post.status();
  if (status != 200 && out.find("\"error\"") == std::string::npos)
    return Err{"HTTP status " + std::to_string(status)};
  return EtcdBody{std::move(out)};
}

// gRPC's UNAUTHENTICATED in an answer: etcd does not know the token (it
// expired, or the member restarted and forgot it).
bool Unauthenticated(std::string_view answer) {
  if (answer.find("invalid auth token") != std::string_view::npos)
    return true;
  const json j = json::parse(answer, nullptr, false);
  return j.is_object() && Int(j, "code") == 16;
}

// The token of `auth`'s user, shared by the calls of one transport: got
// from the first endpoint asked, kept while etcd accepts it.
struct EtcdToken {
  std::string text;
};

class EtcdTokens {
 public:
  EtcdTokens(EtcdAuth auth, EtcdTls tls)
      : auth_(std::move(auth)), tls_(std::move(tls)) {}

  bool needed() const { return !auth_.user.empty(); }

  // The token, authenticating at the endpoint of `url` if none is held.
  Result<EtcdToken, std::string> Get(const std::string& url,
                                     std::chrono::milliseconds timeout,
                                     const std::atomic<bool>* abort) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!token_.empty())
        return EtcdToken{token_};
    }
    auto password = ReadSecretFile("admission.etcd-password-file",
                                   auth_.password_file, kMaxPasswordBytes);
    if (!password.ok())
      return Err{password.error()};
    // The first line, a word as etcdctl reads it (user add
    // --interactive=false): a space or a control character in it is a
    // mistake, said without showing the password.
    std::vector<uint8_t>& raw = password.value();
    const auto eol = std::find(raw.begin(), raw.end(), uint8_t{'\n'});
    bool word = eol != raw.begin();
    for (auto it = raw.begin(); it != eol; ++it)
      word &= (*it > 0x20 && *it != 0x7f) || (*it == '\r' && it + 1 == eol);
    std::string body =
        R"({"name":)" + json(auth_.user).dump() + R"(,"password":")";
    for (auto it = raw.begin(); it != eol && *it != '\r'; ++it) {
      if (*it == '"' || *it == '\\')
        body += '\\';
      body += static_cast<char>(*it);
    }
    body += "\"}";
    OPENSSL_cleanse(raw.data(), raw.size());
    if (!word) {
      OPENSSL_cleanse(body.data(), body.size());
      return Err{"admission.etcd-password-file " + auth_.password_file +
                 ": its first line must be the password, one word without "
                 "spaces"};
    }
    const size_t api = url.find("/v3/");
    auto r = PostOnce(url.substr(0, api) + "/v3/auth/authenticate", body,
                      timeout, tls_, abort, {});
    OPENSSL_cleanse(body.data(), body.size());
    if (!r.ok())
      return Err{r.error()};
    const json j = json::parse(r.value().text, nullptr, false);
    const json& t = Field(j, "token");
    if (!t.is_string() || t.get<std::string>().empty()) {
      const json& m = Field(j, "message");
      return Err{"authenticating as " + auth_.user + ": " +
                 (m.is_string() ? m.get<std::string>()
                                : std::string("no token in the answer"))};
    }
    std::lock_guard<std::mutex> lock(mu_);
    token_ = t.get<std::string>();
    return EtcdToken{token_};
  }

  // `token` was refused: the next Get() authenticates again.
  void Forget(const std::string& token) {
    std::lock_guard<std::mutex> lock(mu_);
    if (token_ == token)
      token_.clear();
  }

 private:
  static constexpr size_t kMaxPasswordBytes = 4096;
  const EtcdAuth auth_;
  const EtcdTls tls_;
  std::mutex mu_;
  std::string token_;
};

}  // namespace

EtcdClient::Post CurlPost(EtcdTls tls, const std::atomic<bool>* abort,
                          EtcdAuth auth) {
  CurlInit();
  auto tokens = std::make_shared<EtcdTokens>(std::move(auth), tls);
  return
      [tls = std::move(tls), abort, tokens](
          const std::string& url, const std::string& body,
          std::chrono::milliseconds timeout) -> Result<EtcdBody, std::string> {
        if (!tokens->needed())
          return PostOnce(url, body, timeout, tls, abort, {});
        // A token etcd no longer knows is asked for again, once.
        for (int attempt = 0;; attempt++) {
          auto token = tokens->Get(url, timeout, abort);
          if (!token.ok())
            return Err{token.error()};
          auto r = PostOnce(url, body, timeout, tls, abort, token.value().text);
          if (attempt == 0 && r.ok() && Unauthenticated(r.value().text)) {
            tokens->Forget(token.value().text);
            continue;
          }
          return r;
        }
      };
}

EtcdStream CurlStream(EtcdTls tls, EtcdAuth auth) {
  CurlInit();
  auto tokens = std::make_shared<EtcdTokens>(std::move(auth), tls);
  return [tls = std::move(tls), tokens](
             const std::string& url, const std::string& body,
             std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds duration,
             const std::function<bool(std::string_view)>& on_line,
             const std::function<bool()>& keep_going)
             -> Result<EtcdStreamEnd, std::string> {
    std::string token;
    if (tokens->needed()) {
      auto t = tokens->Get(url, connect_timeout, nullptr);
      if (!t.ok())
        return Err{t.error()};
      token = std::move(t).value().text;
    }
    // A refused token is forgotten, so that the caller's next watch
    // authenticates again.
    const std::function<bool(std::string_view)> line =
        [&](std::string_view text) {
          if (!token.empty() && Unauthenticated(text))
            tokens->Forget(token);
          return on_line(text);
        };
    CurlJsonPost post(url, body, tls, token);
    if (!post.get())
      return Err{std::string("curl_easy_init failed")};
    StreamState st{{}, &line, &keep_going};
    CURL* c = post.get();
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(duration.count()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &StreamWrite);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &StreamProgress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &st);
    const CURLcode rc = curl_easy_perform(c);
    if (st.too_long)
      return Err{"a watch line longer than " + Mib(kEtcdMaxAnswerBytes) +
                 "; refused"};
    // The duration's end is how a healthy stream ends; so is a stop.
    if (st.stopped || rc == CURLE_OK ||
        (rc == CURLE_OPERATION_TIMEDOUT && post.status() == 200))
      return EtcdStreamEnd{};
    return Err{post.Error(rc)};
  };
}

EtcdWatchEnd EtcdWatch(const std::vector<std::string>& endpoints,
                       const EtcdStream& stream, std::string_view key,
                       std::string_view range_end, int64_t start_revision,
                       std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds duration,
                       const std::function<void(const std::vector<EtcdEvent>&,
                                                int64_t)>& on_events,
                       const std::function<bool()>& keep_going) {
  json create = {{"key", Base64(key)},
                 {"start_revision", std::to_string(start_revision)}};
  if (!range_end.empty())
    create["range_end"] = Base64(range_end);
  const std::string body = json{{"create_request", create}}.dump();
  EtcdWatchEnd end{EtcdWatchEnd::kStopped, start_revision, {}};
  std::string tried;
  for (const std::string& endpoint : endpoints) {
    bool answered = false;
    std::string broken;
    auto line = [&](std::string_view text) {
      answered = true;
      const json j = json::parse(text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        broken = "a line that is not JSON";
        return false;
      }
      if (j.contains("error")) {
        broken = j["error"].dump();
        return false;
      }
      const json& r = Field(j, "result");
      const json& canceled = Field(r, "canceled");
      const json& list = Field(r, "events");
      if ((!r.is_null() && !r.is_object()) ||
          (!canceled.is_null() && !canceled.is_boolean()) ||
          (!list.is_null() && !list.is_array()) ||
          !std::all_of(list.begin(), list.end(), [](const json& e) {
            return e.is_object() &&
                   (Field(e, "kv").is_object() || Field(e, "kv").is_null()) &&
                   (Field(e, "type").is_string() || Field(e, "type").is_null());
          })) {
        broken = "a line not of the expected shape";
        return false;
      }
      if (Int(r, "compact_revision") > 0) {
        end.kind = EtcdWatchEnd::kCompacted;
        end.next_revision = Int(r, "compact_revision");
        return false;
      }
      if (canceled.is_boolean() && canceled.get<bool>()) {
        broken = "the watch was canceled: " + Text(r, "cancel_reason", "");
        return false;
      }
      const int64_t revision = Int(Field(r, "header"), "revision");
      std::vector<EtcdEvent> events;
      for (const json& e : list) {
        const json& kv = Field(e, "kv");
        events.push_back(
            {Text(e, "type", "PUT") == "DELETE",
             EtcdKv{Str(kv, "key"), Str(kv, "value"),
                    Int(kv, "create_revision"), Int(kv, "mod_revision"),
                    Int(kv, "version"), Int(kv, "lease")}});
      }
      if (!events.empty()) {
        end.next_revision = events.back().kv.mod_revision + 1;
        on_events(events, revision);
      }
      return true;
    };
    auto r = stream(endpoint + "/v3/watch", body, connect_timeout, duration,
                    line, keep_going);
    if (end.kind == EtcdWatchEnd::kCompacted)
      return end;
    if (r.ok() && broken.empty() && answered)
      return end;
    tried += (tried.empty() ? "" : "; ") + endpoint + ": " +
             (!broken.empty() ? broken
              : r.ok()        ? std::string("the stream ended unanswered")
                              : r.error());
    if (answered)  // it answered, then broke: the caller decides when again
      break;
  }
  end.kind = EtcdWatchEnd::kFailed;
  end.why = "etcd watch: " + tried;
  return end;
}

}  // namespace parq::parqd
