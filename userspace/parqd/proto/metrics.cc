// SPDX-License-Identifier: GPL-2.0

#include "proto/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace parq::parqd {

void PromText::Family(std::string_view name, std::string_view type,
                      std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PromText::Key(std::string_view name, std::string_view label,
                   std::string_view label_value) {
  out_ += name;
  if (!label.empty()) {
    out_ += '{';
    out_ += label;
    out_ += "=\"";
    out_ += label_value;
    out_ += "\"}";
  }
  out_ += ' ';
}

void PromText::Sample(std::string_view name, uint64_t value,
                      std::string_view label, std::string_view label_value) {
  Key(name, label, label_value);
  out_ += std::to_string(value);
  out_ += '\n';
}

void PromText::SampleRatio(std::string_view name, double value,
                           std::string_view label,
                           std::string_view label_value) {
  Key(name, label, label_value);
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g\n", value);
  out_ += text;
}

void PromText::Counter(std::string_view name, std::string_view help,
                       uint64_t value) {
  Family(name, "counter", help);
  Sample(name, value);
}

void PromText::Gauge(std::string_view name, std::string_view help,
                     uint64_t value) {
  Family(name, "gauge", help);
  Sample(name, value);
}

void RenderInbox(PromText& out, const Counters& c, size_t credit_entries) {
  out.Counter("parqd_messages_received_total", "Credit messages received.",
              c.received);
  out.Counter("parqd_messages_accepted_total",
              "Credit messages that passed every check and were applied.",
              c.accepted);
  out.Counter("parqd_grants_applied_total", "Accepted GRANT messages.",
              c.grants);
  out.Counter("parqd_releases_applied_total", "Accepted RELEASE messages.",
              c.releases);

  const char* dropped = "parqd_messages_dropped_total";
  out.Family(dropped, "counter",
             "Credit messages dropped without effect, by reason.");
  for (size_t i = 0; i < kDropReasonCount; i++)
    out.Sample(dropped, c.dropped[i], "reason",
               Name(static_cast<DropReason>(i)));

  const char* malformed = "parqd_messages_malformed_total";
  out.Family(malformed, "counter",
             "Credit messages dropped as malformed, by decoding error.");
  for (size_t i = 0; i < wire::kWireErrorCount; i++) {
    const auto e = static_cast<wire::WireError>(i);
    if (e == wire::WireError::kBadMac || e == wire::WireError::kCryptoFailure)
      continue;  // their own drop reasons
    out.Sample(malformed, c.malformed[i], "error", wire::Name(e));
  }

  out.Counter("parqd_credit_expired_total",
              "Credit entries removed because their lease ended.", c.expired);
  out.Counter("parqd_replay_windows_forgotten_total",
              "Peers' replay windows forgotten because every message in "
              "them had become older than max-clock-skew.",
              c.forgotten);
  out.Gauge("parqd_credit_entries",
            "Destinations currently holding a credit entry.", credit_entries);
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
