// SPDX-License-Identifier: GPL-2.0
//
// Reserved classes on the interface's root parq qdisc, made with tc, as
// an operator would make them (Documentation/admission.md): for class
// MINOR,
//
//   tc class add dev DEV parent H: classid H:MINOR parq rate RATE
//   tc filter add dev DEV parent H: protocol ip|ipv6 prio MINOR flower
//       dst_ip ADDRESS [ip_proto udp|tcp [dst_port N] [src_port N]]
//       classid H:MINOR                          (one per address)
//
// so that `tc -s class show` and `tc filter show` show what parqd did, and
// removal deletes the filters of priority MINOR, then the class.

#ifndef PARQD_RESERVED_CLASSES_H
#define PARQD_RESERVED_CLASSES_H

#include <functional>
#include <string>
#include <vector>

#include "admission_agent.h"
#include "subprocess.h"

namespace parq::parqd {

// The tc commands of Install(), one per line, for `tc -batch -`.
// `handle`: the qdisc's, e.g. "1:".
std::string InstallBatch(const std::string& dev, const std::string& handle,
                         uint32_t minor, uint64_t rate, const Match& match,
                         const std::vector<Address>& to);

class TcReservedClasses : public ReservedClasses {
 public:
  // Runs a program and returns what it printed (RunProgram() unless a
  // test gives its own).
  using Run = std::function<Result<ProgramOutput, std::string>(
      const std::vector<std::string>& argv, const std::string& input)>;

  TcReservedClasses(std::string dev, Run run);

  std::optional<std::string> Install(uint32_t minor, uint64_t rate,
                                     const Match& match,
                                     const std::vector<Address>& to) override;
  std::optional<std::string> SetRate(uint32_t minor, uint64_t rate) override;
  std::optional<std::string> Remove(uint32_t minor) override;

 private:
  // Sets `handle` to the root qdisc's ("1:"), or says why there is no
  // parq there.
  std::optional<std::string> Handle(std::string* handle);
  // Remove() on the qdisc of handle `h`, already looked up.
  std::optional<std::string> RemoveFrom(const std::string& h, uint32_t minor);
  // Runs tc with `args` (and `input` for -batch); its error text.
  std::optional<std::string> Tc(const std::vector<std::string>& args,
                                const std::string& input = "");

  std::string dev_;
  Run run_;
};

}  // namespace parq::parqd

#endif
