// SPDX-License-Identifier: GPL-2.0
//
// Reserved classes on the interface's root parq qdisc, for their owner's
// traffic alone (Documentation/admission.md).  A filter on the
// destination and ports would let any local user who sends there ride
// the class, so the owner is matched where the socket is known, in
// nftables, and tc matches the mark nftables sets: for class MINOR
// reserved by user UID,
//
//   nft: table inet parq {
//          chain resv_MINOR {        # one per reservation
//            type filter hook output priority mangle; policy accept;
//            meta skuid UID ip|ip6 daddr ADDRESS [udp|tcp dport N sport N]
//                meta mark set meta mark & 0xffff | MINOR << 16
//          }                         # (one rule per address)
//        }
//   tc class add dev DEV parent H: classid H:MINOR parq rate RATE
//   tc filter add dev DEV parent H: protocol all prio MINOR
//       handle MARK/0xffff0000 fw classid H:MINOR
//
// parq owns the mark's upper 16 bits (kReservedMarkMask) and leaves the
// lower ones to others.  The class and filter are made over rtnetlink
// (tc_link.h) and the chain by libnftables (nft.h): no program is run.
// `tc -s class show`, `tc filter show` and `nft list table inet parq`
// show what parqd did; removal deletes the chain, the filter of priority
// MINOR, then the class.

#ifndef PARQD_ADMISSION_RESERVED_CLASSES_H
#define PARQD_ADMISSION_RESERVED_CLASSES_H

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "admission/admission_agent.h"
#include "jobs/nft.h"
#include "netlink/tc_link.h"

namespace parq::parqd {

// The bits of the packet mark that parq owns, and class `minor`'s value.
inline constexpr uint32_t kReservedMarkMask = 0xffff0000;
inline constexpr uint32_t ReservedMark(uint32_t minor) {
  return minor << 16;
}

// A reservation's rate in bits/s as its class's rate in bytes/s (as tc
// reads "RATEbit"; 1 at least).
uint64_t ClassBytes(uint64_t bps);

// The nft script (`nft -f -`, one transaction) that marks the packets of
// user `owner`'s sockets that `match` toward any of `to` for class
// `minor`, and the one that removes it.
std::string ReservedNftScript(uint32_t minor, uint32_t owner,
                              const Match& match,
                              const std::vector<Address>& to);
std::string ReservedNftChain(uint32_t minor);

class TcReservedClasses : public ReservedClasses {
 public:
  // Runs nft and returns what it printed (RunCommand(), libnftables in
  // this process, unless a test gives its own).
  using Run = std::function<Result<ProgramOutput, std::string>(
      const std::vector<std::string>& argv, const std::string& input)>;

  // On device `dev`, through `tc` (RtnlTcLink(dev) but in tests).
  TcReservedClasses(std::string dev, Run run, std::unique_ptr<TcLink> tc);

  std::optional<std::string> Install(uint32_t minor, uint64_t rate,
                                     const Match& match,
                                     const std::vector<Address>& to,
                                     uint32_t owner) override;
  std::optional<std::string> SetRate(uint32_t minor, uint64_t rate) override;
  std::optional<std::string> Remove(uint32_t minor) override;
  // Classes by classid, filters by the classid they send to, not by what
  // they match.
  Result<std::vector<uint32_t>, std::string> Installed() override;
  // Also by the table inet parq: a chain resv_MINOR with no rule that
  // marks is as good as none.
  Result<Parts, std::string> InstalledParts() override;

 private:
  // The agent's minors that have a class, and a filter, on the qdisc of
  // handle `h`; with `uses`, what each of those classes carried, from the
  // same dump.
  std::optional<std::string> Scan(uint32_t h, std::set<uint32_t>* classes,
                                  std::set<uint32_t>* filters,
                                  std::map<uint32_t, Use>* uses = nullptr);
  // The agent's minors whose chain marks packets.
  std::optional<std::string> Chains(std::set<uint32_t>* marking);
  // Sets `handle` to the root qdisc's (0x10000 for "1:"), or says why
  // there is no parq there.
  std::optional<std::string> Handle(uint32_t* handle);
  // Remove() on the qdisc of handle `h`, already looked up.
  std::optional<std::string> RemoveFrom(uint32_t h, uint32_t minor);
  // nft -f - with `script`; its error text.
  std::optional<std::string> Nft(const std::string& script);
  // Deletes class `minor`'s chain; none is not an error.
  std::optional<std::string> DelChain(uint32_t minor);

  std::string dev_;
  Run run_;
  std::unique_ptr<TcLink> tc_;
};

}  // namespace parq::parqd

#endif
