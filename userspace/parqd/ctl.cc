// SPDX-License-Identifier: GPL-2.0

#include "ctl.h"

#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config.h"
#include "subprocess.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

int Fail(const CtlArgs& a, std::ostream& out, std::ostream& err,
         const std::string& what, int error) {
  if (a.json) {
    json j = {{"ok", false}, {"error", what}};
    if (error)
      j["errno"] = error;
    out << j.dump() << "\n";
  } else {
    err << "parqctl: " << what << "\n";
  }
  return 1;
}

int Ok(const CtlArgs& a, std::ostream& out) {
  if (a.json)
    out << json{{"ok", true}}.dump() << "\n";
  return 0;
}

// Runs argv, returns its standard output, or an error message.
Result<Output, std::string> Capture(const std::vector<std::string>& argv) {
  auto r = RunProgram(argv);
  if (!r.ok())
    return Err{r.error() + " (install iproute2)"};
  if (r.value().status != 0) {
    const std::string msg = ErrorText(r.value());
    return Err{argv[0] + " failed (exit status " +
               std::to_string(r.value().status) + ")" +
               (msg.empty() ? "" : ": " + msg)};
  }
  return Output{r.value().out};
}

void Flatten(const json& j, const std::string& prefix, std::ostream& o) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      Flatten(v, prefix.empty() ? k : prefix + "." + k, o);
  } else {
    o << "  " << std::left << std::setw(28) << prefix << " "
      << (j.is_string() ? j.get<std::string>() : j.dump()) << "\n";
  }
}

// For people: exact when short ("2ms"), else three decimals ("8.774s").
std::string Human(uint64_t ns) {
  std::string exact = FormatDuration(ns);
  if (exact.size() <= 7)
    return exact;
  char buf[32];
  if (ns >= 1'000'000'000)
    std::snprintf(buf, sizeof(buf), "%.3fs", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000)
    std::snprintf(buf, sizeof(buf), "%.3fms", static_cast<double>(ns) / 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.3fus", static_cast<double>(ns) / 1e3);
  return buf;
}

}  // namespace

std::string FormatEntries(const std::vector<KernelEntry>& entries,
                          bool as_json) {
  if (as_json) {
    json arr = json::array();
    for (const KernelEntry& e : entries)
      arr.push_back({{"addr", e.address.ToString()},
                     {"credit", e.credit},
                     {"epoch_ns", e.epoch_ns},
                     {"lease_ns", e.lease_ns},
                     {"used", e.used},
                     {"passed", e.passed},
                     {"held", e.held}});
    return arr.dump() + "\n";
  }
  std::ostringstream o;
  o << std::left << std::setw(40) << "ADDRESS" << std::right << std::setw(11)
    << "CREDIT" << std::setw(11) << "EPOCH" << std::setw(12) << "LEASE-LEFT"
    << std::setw(11) << "USED" << std::setw(12) << "PASSED" << std::setw(12)
    << "HELD"
    << "\n";
  for (const KernelEntry& e : entries)
    o << std::left << std::setw(40) << e.address.ToString() << std::right
      << std::setw(11) << e.credit << std::setw(11) << Human(e.epoch_ns)
      << std::setw(12) << Human(e.lease_ns) << std::setw(11) << e.used
      << std::setw(12) << e.passed << std::setw(12) << e.held << "\n";
  return o.str();
}

Result<Output, std::string> FormatQdisc(const std::string& tc_json,
                                        const std::string& dev, bool as_json) {
  const json all = json::parse(tc_json, nullptr, /*allow_exceptions=*/false);
  if (all.is_discarded() || !all.is_array())
    return Err{std::string("tc printed something that is not a JSON array")};
  json parq = json::array();
  for (const json& q : all)
    if (q.is_object() && q.value("kind", "") == "parq") {
      json s = q;
      s["dev"] = dev;
      parq.push_back(std::move(s));
    }
  if (parq.empty())
    return Err{"no parq qdisc on " + dev + " (add one: tc qdisc add dev " +
               dev + " root handle 1: parq)"};
  if (as_json)
    return Output{parq.dump() + "\n"};
  std::ostringstream o;
  for (const json& q : parq) {
    o << "parq " << q.value("handle", "?") << " dev " << dev
      << (q.contains("root") ? " root" : " parent " + q.value("parent", "?"))
      << "\n";
    json rest = q;
    for (const char* k : {"kind", "handle", "dev", "root", "parent"})
      rest.erase(k);
    Flatten(rest, "", o);
  }
  return Output{o.str()};
}

int RunCtl(const CtlArgs& a, const KernelOpener& open, std::ostream& out,
           std::ostream& err, const JobEnv& jobs) {
  switch (a.cmd) {
    case CtlArgs::Cmd::kJobAdd:
      return JobAdd(jobs, a.job_path, a.policy, a.json, out, err);
    case CtlArgs::Cmd::kJobDel:
      return JobDel(jobs, a.job_path, a.json, out, err);
    case CtlArgs::Cmd::kJobList:
      return JobList(jobs, a.json, out, err);
    case CtlArgs::Cmd::kJobSweep:
      return JobSweep(jobs, a.json, out, err);
    case CtlArgs::Cmd::kJobPolicy:
      return JobPolicySet(jobs, a.policy, a.json, out, err);
    default:
      break;
  }
  if (a.cmd == CtlArgs::Cmd::kQdiscShow) {
    auto text = Capture({"tc", "-s", "-j", "qdisc", "show", "dev", a.dev});
    if (!text.ok())
      return Fail(a, out, err, text.error(), 0);
    auto f = FormatQdisc(text.value().text, a.dev, a.json);
    if (!f.ok())
      return Fail(a, out, err, f.error(), 0);
    out << f.value().text;
    return 0;
  }

  auto k = open();
  if (!k.ok())
    return Fail(a, out, err, k.error().Text(), k.error().error);
  KernelCreditTable& kernel = *k.value();

  switch (a.cmd) {
    case CtlArgs::Cmd::kCreditShow: {
      auto d = kernel.Dump();
      if (!d.ok())
        return Fail(a, out, err, "credit show: " + d.error().Text(),
                    d.error().error);
      out << FormatEntries(d.value(), a.json);
      return 0;
    }
    case CtlArgs::Cmd::kCreditSet: {
      CreditRequest r;
      r.op = CreditRequest::Op::kSet;
      r.address = a.address;
      r.credit = a.credit;
      r.epoch_ns = a.epoch_ns;
      r.lease_ns = a.lease_ns;
      if (auto e = kernel.Apply(r))
        return Fail(a, out, err,
                    "credit set " + a.address->ToString() + ": " + e->Text(),
                    e->error);
      return Ok(a, out);
    }
    case CtlArgs::Cmd::kCreditClear: {
      CreditRequest r;
      r.op = CreditRequest::Op::kDel;
      r.address = a.address;
      if (auto e = kernel.Apply(r))
        return Fail(a, out, err,
                    "credit clear" +
                        (a.address ? " " + a.address->ToString() : "") + ": " +
                        e->Text(),
                    e->error);
      return Ok(a, out);
    }
    default:
      break;
  }
  return 1;
}

}  // namespace parq::parqd
