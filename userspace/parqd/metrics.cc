// SPDX-License-Identifier: GPL-2.0

#include "metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace parq::parqd {

namespace {

void Header(std::string& out, const char* name, const char* type,
            const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void Sample(std::string& out, const char* name, uint64_t value,
            const char* label = nullptr, std::string_view label_value = {}) {
  out += name;
  if (label) {
    out += '{';
    out += label;
    out += "=\"";
    out += label_value;  // our own snake_case names: nothing to escape
    out += "\"}";
  }
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

void Metric(std::string& out, const char* name, const char* type,
            const char* help, uint64_t value) {
  Header(out, name, type, help);
  Sample(out, name, value);
}

}  // namespace

std::string RenderPrometheus(const Counters& c, size_t credit_entries) {
  std::string out;
  Metric(out, "parqd_messages_received_total", "counter",
         "Credit messages received.", c.received);
  Metric(out, "parqd_messages_accepted_total", "counter",
         "Credit messages that passed every check and were applied.",
         c.accepted);
  Metric(out, "parqd_grants_applied_total", "counter",
         "Accepted GRANT messages.", c.grants);
  Metric(out, "parqd_releases_applied_total", "counter",
         "Accepted RELEASE messages.", c.releases);

  const char* dropped = "parqd_messages_dropped_total";
  Header(out, dropped, "counter",
         "Credit messages dropped without effect, by reason.");
  for (size_t i = 0; i < kDropReasonCount; i++)
    Sample(out, dropped, c.dropped[i], "reason",
           Name(static_cast<DropReason>(i)));

  const char* malformed = "parqd_messages_malformed_total";
  Header(out, malformed, "counter",
         "Credit messages dropped as malformed, by decoding error.");
  for (size_t i = 0; i < wire::kWireErrorCount; i++) {
    const auto e = static_cast<wire::WireError>(i);
    if (e == wire::WireError::kBadMac || e == wire::WireError::kCryptoFailure)
      continue;  // their own drop reasons
    Sample(out, malformed, c.malformed[i], "error", wire::Name(e));
  }

  Metric(out, "parqd_credit_expired_total", "counter",
         "Credit entries removed because their lease ended.", c.expired);
  Metric(out, "parqd_credit_entries", "gauge",
         "Destinations currently holding a credit entry.", credit_entries);
  return out;
}

std::optional<std::string> WriteFileAtomically(const std::string& path,
                                               const std::string& text) {
  std::vector<char> tmp(path.begin(), path.end());
  const char suffix[] = ".tmp.XXXXXX";
  tmp.insert(tmp.end(), suffix, suffix + sizeof(suffix));  // with the NUL
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0)
    return "cannot create a temporary file next to " + path + ": " +
           std::strerror(errno);
  const std::string tmp_path(tmp.data());
  std::string error;
  size_t done = 0;
  while (error.empty() && done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      error = "cannot write " + tmp_path + ": " + std::strerror(errno);
    else
      done += static_cast<size_t>(n);
  }
  // mkostemp creates 0600; metrics are for anyone to read.
  if (error.empty() && fchmod(fd, 0644) != 0)
    error = "cannot chmod " + tmp_path + ": " + std::strerror(errno);
  if (error.empty() && fsync(fd) != 0)
    error = "cannot fsync " + tmp_path + ": " + std::strerror(errno);
  if (close(fd) != 0 && error.empty())
    error = "cannot close " + tmp_path + ": " + std::strerror(errno);
  if (error.empty() && rename(tmp_path.c_str(), path.c_str()) != 0)
    error = "cannot rename " + tmp_path + " to " + path + ": " +
            std::strerror(errno);
  if (!error.empty()) {
    unlink(tmp_path.c_str());
    return error;
  }
  return std::nullopt;
}

}  // namespace parq::parqd
