// SPDX-License-Identifier: GPL-2.0
//
// libparq (parq.h): the C interface to parqd's admission socket, over the
// same client as parqctl's (admission_client.h).  Nothing throws out of
// it: each entry point turns a failure into a status and a sentence.

#include "parq.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_client.h"

using nlohmann::json;
using parq::parqd::AdmissionCall;
using parq::parqd::AdmissionError;
using parq::parqd::UnixSockaddr;

struct parq_ctx {
  std::string socket;
  int timeout_ms = PARQ_DEFAULT_TIMEOUT_MS;
  std::string error;
};

namespace {

int Fail(parq_ctx* p, int status, std::string why) {
  p->error = std::move(why);
  return status;
}

// Copies `j[key]`, a string, into `dst` of `size` bytes; false if it is
// missing, not a string, too long or holds a NUL.
bool CopyString(const json& j, const char* key, char* dst, size_t size) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    return false;
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() >= size || s.find('\0') != std::string::npos)
    return false;
  std::memcpy(dst, s.c_str(), s.size() + 1);
  return true;
}

// `j` (a reservation as parqd writes it) into `out`, or why not.
bool ReadReservation(const json& j, parq_reservation* out) {
  parq_reservation r{};
  if (!j.is_object() || !CopyString(j, "id", r.id, sizeof(r.id)) ||
      !CopyString(j, "from", r.from, sizeof(r.from)) ||
      !CopyString(j, "to", r.to, sizeof(r.to)) ||
      !CopyString(j, "match", r.match, sizeof(r.match)) ||
      !CopyString(j, "owner", r.owner, sizeof(r.owner)))
    return false;
  const auto rate = j.find("rate_bps");
  if (rate == j.end() || !rate->is_number_unsigned())
    return false;
  r.rate_bps = rate->get<uint64_t>();
  if (out)
    *out = r;
  return true;
}

// Asks parqd; on PARQ_OK `reply` holds an answer with "ok": true.
int Ask(parq_ctx* p, const json& request, json* reply) {
  // Text that JSON cannot carry (not UTF-8) throws here, before parqd is
  // asked: an invalid argument (Guard()).
  (void)request.dump();
  auto r = AdmissionCall(p->socket, request, p->timeout_ms);
  if (!r.ok())
    return Fail(p,
                r.error().kind == AdmissionError::kBadReply
                    ? PARQ_ERR_REPLY
                    : PARQ_ERR_UNREACHABLE,
                r.error().why);
  *reply = std::move(r.value());
  const auto ok = reply->find("ok");
  if (ok == reply->end() || !ok->is_boolean())
    return Fail(p, PARQ_ERR_REPLY, "parqd's answer has no \"ok\"");
  if (!ok->get<bool>()) {
    const auto why = reply->find("error");
    return Fail(p, PARQ_ERR_DENIED,
                why != reply->end() && why->is_string()
                    ? why->get<std::string>()
                    : "parqd refused without a reason");
  }
  p->error.clear();
  return PARQ_OK;
}

// A request whose answer is one reservation.
int AskOne(parq_ctx* p, const json& request, parq_reservation* out) {
  json reply;
  const int rc = Ask(p, request, &reply);
  if (rc != PARQ_OK)
    return rc;
  const auto it = reply.find("reservation");
  if (it == reply.end() || !ReadReservation(*it, out))
    return Fail(p, PARQ_ERR_REPLY,
                "parqd's answer holds no reservation this library reads");
  return PARQ_OK;
}

// Catches what the standard library may throw (allocation) so that it
// never crosses into C.
template <typename F>
int Guard(parq_ctx* p, F f) {
  if (!p)
    return PARQ_ERR_INVALID;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    p->error = "out of memory";
    return PARQ_ERR_NOMEM;
  } catch (const json::type_error&) {  // a string that JSON cannot carry
    p->error = "a host, match or id that is not UTF-8 text";
    return PARQ_ERR_INVALID;
  } catch (const std::exception& e) {
    p->error = std::string("libparq: ") + e.what();
    return PARQ_ERR_REPLY;
  }
}

bool Empty(const char* s) {
  return !s || !*s;
}

}  // namespace

extern "C" {

parq_ctx* parq_open(const char* socket_path) {
  try {
    const char* env = std::getenv("PARQ_ADMISSION_SOCKET");
    std::string path = socket_path   ? socket_path
                       : !Empty(env) ? env
                                     : PARQ_DEFAULT_SOCKET;
    sockaddr_un a;
    if (!UnixSockaddr(path, &a))
      return nullptr;
    parq_ctx* p = new parq_ctx;
    p->socket = std::move(path);
    return p;
  } catch (...) {
    return nullptr;
  }
}

void parq_close(parq_ctx* p) {
  delete p;
}

int parq_set_timeout(parq_ctx* p, int ms) {
  return Guard(p, [&]() -> int {
    if (ms <= 0)
      return Fail(p, PARQ_ERR_INVALID, "the timeout must be above 0 ms");
    p->timeout_ms = ms;
    p->error.clear();
    return PARQ_OK;
  });
}

const char* parq_error(const parq_ctx* p) {
  return p ? p->error.c_str() : "no parq handle (NULL)";
}

const char* parq_status_name(int status) {
  switch (status) {
    case PARQ_OK:
      return "PARQ_OK";
    case PARQ_ERR_INVALID:
      return "PARQ_ERR_INVALID";
    case PARQ_ERR_UNREACHABLE:
      return "PARQ_ERR_UNREACHABLE";
    case PARQ_ERR_DENIED:
      return "PARQ_ERR_DENIED";
    case PARQ_ERR_REPLY:
      return "PARQ_ERR_REPLY";
    case PARQ_ERR_NOMEM:
      return "PARQ_ERR_NOMEM";
    case PARQ_ERR_RANGE:
      return "PARQ_ERR_RANGE";
    default:
      return "unknown parq status";
  }
}

int parq_reserve(parq_ctx* p, const char* to, uint64_t rate_bps,
                 const char* match, parq_reservation* out) {
  return parq_reserve_adaptive(p, to, rate_bps, 0, 0, match, out);
}

int parq_reserve_adaptive(parq_ctx* p, const char* to, uint64_t rate_bps,
                          uint64_t min_bps, uint64_t max_bps, const char* match,
                          parq_reservation* out) {
  return Guard(p, [&]() -> int {
    if (Empty(to))
      return Fail(p, PARQ_ERR_INVALID, "no destination host");
    if (rate_bps == 0)
      return Fail(p, PARQ_ERR_INVALID, "a rate of 0 reserves nothing");
    if (min_bps > rate_bps || (max_bps && max_bps < rate_bps))
      return Fail(p, PARQ_ERR_INVALID,
                  "the minimum and maximum rates must hold the rate asked");
    json req = {{"op", "reserve"},
                {"to", to},
                {"rate", rate_bps},
                {"match", match ? match : ""}};
    if (min_bps)
      req["min_rate"] = min_bps;
    if (max_bps)
      req["max_rate"] = max_bps;
    // Inside a Slurm job, the reservation ends with the job.
    if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job)
      req["job"] = job;
    return AskOne(p, req, out);
  });
}

int parq_change(parq_ctx* p, const char* id, uint64_t rate_bps,
                parq_reservation* out) {
  return Guard(p, [&]() -> int {
    if (Empty(id))
      return Fail(p, PARQ_ERR_INVALID, "no reservation id");
    if (rate_bps == 0)
      return Fail(p, PARQ_ERR_INVALID,
                  "a rate of 0 reserves nothing: release the reservation");
    return AskOne(p, {{"op", "change"}, {"id", id}, {"rate", rate_bps}}, out);
  });
}

int parq_release(parq_ctx* p, const char* id) {
  return Guard(p, [&]() -> int {
    if (Empty(id))
      return Fail(p, PARQ_ERR_INVALID, "no reservation id");
    return AskOne(p, {{"op", "release"}, {"id", id}}, nullptr);
  });
}

namespace {

// This host's reservations as parqd lists them.
int ListAll(parq_ctx* p, std::vector<parq_reservation>* all) {
  json reply;
  const int rc = Ask(p, {{"op", "list"}}, &reply);
  if (rc != PARQ_OK)
    return rc;
  const auto it = reply.find("reservations");
  if (it == reply.end() || !it->is_array())
    return Fail(p, PARQ_ERR_REPLY, "parqd's answer holds no list");
  for (const json& j : *it) {
    parq_reservation r;
    if (!ReadReservation(j, &r))
      return Fail(p, PARQ_ERR_REPLY,
                  "parqd's list holds a reservation this library cannot read");
    all->push_back(r);
  }
  return PARQ_OK;
}

}  // namespace

int parq_query(parq_ctx* p, const char* id, parq_reservation* out) {
  return Guard(p, [&]() -> int {
    if (Empty(id) || !out)
      return Fail(p, PARQ_ERR_INVALID, "give a reservation id and a result");
    std::vector<parq_reservation> all;
    const int rc = ListAll(p, &all);
    if (rc != PARQ_OK)
      return rc;
    for (const parq_reservation& r : all) {
      if (std::strcmp(r.id, id) == 0) {
        *out = r;
        return PARQ_OK;
      }
    }
    return Fail(p, PARQ_ERR_DENIED,
                std::string("no reservation ") + id + " on this host");
  });
}

int parq_list(parq_ctx* p, parq_reservation* out, size_t max, size_t* count) {
  return Guard(p, [&]() -> int {
    if (!count || (max > 0 && !out))
      return Fail(p, PARQ_ERR_INVALID, "give an array and a count");
    std::vector<parq_reservation> all;
    const int rc = ListAll(p, &all);
    if (rc != PARQ_OK)
      return rc;
    *count = all.size();
    if (all.size() > max)
      return Fail(p, PARQ_ERR_RANGE,
                  std::to_string(all.size()) + " reservations, room for " +
                      std::to_string(max));
    if (!all.empty())
      std::memcpy(out, all.data(), all.size() * sizeof(all[0]));
    return PARQ_OK;
  });
}

namespace {

// `j` (a job as parqd writes it) into `out`, or why not.
bool ReadJob(const json& j, parq_job* out) {
  parq_job r{};
  if (!j.is_object() || !CopyString(j, "job", r.name, sizeof(r.name)) ||
      !CopyString(j, "leader", r.leader, sizeof(r.leader)) ||
      !CopyString(j, "owner", r.owner, sizeof(r.owner)))
    return false;
  const auto rate = j.find("rate_bps");
  const auto flows = j.find("flows");
  const auto hosts = j.find("hosts");
  const auto joined = j.find("joined");
  if (rate == j.end() || !rate->is_number_unsigned() || flows == j.end() ||
      !flows->is_number_unsigned() || hosts == j.end() || !hosts->is_array() ||
      joined == j.end() || !joined->is_array() || hosts->size() > UINT32_MAX ||
      joined->size() > hosts->size())
    return false;
  r.rate_bps = rate->get<uint64_t>();
  r.flows = flows->get<uint64_t>();
  r.hosts = static_cast<uint32_t>(hosts->size());
  r.joined = static_cast<uint32_t>(joined->size());
  if (out)
    *out = r;
  return true;
}

// A request whose answer is one job.
int AskJob(parq_ctx* p, const json& request, parq_job* out) {
  json reply;
  const int rc = Ask(p, request, &reply);
  if (rc != PARQ_OK)
    return rc;
  const auto it = reply.find("job");
  if (it == reply.end() || !ReadJob(*it, out))
    return Fail(p, PARQ_ERR_REPLY,
                "parqd's answer holds no job this library reads");
  return PARQ_OK;
}

}  // namespace

int parq_job_join(parq_ctx* p, const char* name, const char* leader,
                  uint64_t max_rate_bps) {
  return Guard(p, [&]() -> int {
    if (Empty(name) || Empty(leader))
      return Fail(p, PARQ_ERR_INVALID, "give the job's name and its leader");
    json req = {{"op", "join"}, {"job", name}, {"leader", leader}};
    if (max_rate_bps)
      req["rate"] = max_rate_bps;
    json reply;
    return Ask(p, req, &reply);
  });
}

int parq_job_reserve(parq_ctx* p, const char* name, const char* const* hosts,
                     size_t n, uint64_t rate_bps, const char* match,
                     parq_job* out) {
  return Guard(p, [&]() -> int {
    if (Empty(name))
      return Fail(p, PARQ_ERR_INVALID, "no job name");
    if (n < 2 || !hosts)
      return Fail(p, PARQ_ERR_INVALID,
                  "a job needs two hosts or more: it has no flows otherwise");
    if (rate_bps == 0)
      return Fail(p, PARQ_ERR_INVALID, "a rate of 0 reserves nothing");
    json list = json::array();
    for (size_t i = 0; i < n; i++) {
      if (Empty(hosts[i]))
        return Fail(p, PARQ_ERR_INVALID,
                    "host " + std::to_string(i) + " of the job has no name");
      list.push_back(hosts[i]);
    }
    return AskJob(p,
                  {{"op", "reserve"},
                   {"job", name},
                   {"hosts", list},
                   {"rate", rate_bps},
                   {"match", match ? match : ""}},
                  out);
  });
}

int parq_job_change(parq_ctx* p, const char* name, uint64_t rate_bps,
                    parq_job* out) {
  return Guard(p, [&]() -> int {
    if (Empty(name))
      return Fail(p, PARQ_ERR_INVALID, "no job name");
    if (rate_bps == 0)
      return Fail(p, PARQ_ERR_INVALID,
                  "a rate of 0 reserves nothing: release the job");
    return AskJob(p, {{"op", "change"}, {"job", name}, {"rate", rate_bps}},
                  out);
  });
}

int parq_job_query(parq_ctx* p, const char* name, parq_job* out) {
  return Guard(p, [&]() -> int {
    if (Empty(name))
      return Fail(p, PARQ_ERR_INVALID, "no job name");
    return AskJob(p, {{"op", "job"}, {"job", name}}, out);
  });
}

int parq_job_release(parq_ctx* p, const char* name) {
  return Guard(p, [&]() -> int {
    if (Empty(name))
      return Fail(p, PARQ_ERR_INVALID, "no job name");
    json reply;
    return Ask(p, {{"op", "release"}, {"job", name}}, &reply);
  });
}

}  // extern "C"
