// SPDX-License-Identifier: GPL-2.0

#include "jobs/nft.h"

#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <nftables/libnftables.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

namespace parq::parqd {

namespace {

struct CtxFree {
  void operator()(nft_ctx* c) const { nft_ctx_free(c); }
};

// libnftables exits the process when it cannot open its netlink socket
// (a kernel without nf_tables, or none that may be loaded): ask first.
std::optional<std::string> NfnetlinkProblem() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0)
    return std::string("this kernel offers no nftables (netfilter netlink: ") +
           std::strerror(errno) + ")";
  close(fd);
  return std::nullopt;
}

// libnftables' first context sets up shared state without a lock.
std::mutex nft_lock;

}  // namespace

Result<ProgramOutput, std::string> RunNft(const std::vector<std::string>& args,
                                          const std::string& input,
                                          const NftProbe& probe) {
  bool as_json = false;
  bool from_input = false;
  std::string command;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    if (command.empty() && a == "-j") {
      as_json = true;
    } else if (command.empty() && a == "-f" && i + 1 < args.size() &&
               args[i + 1] == "-") {
      from_input = true;
      i++;
    } else if (command.empty() && !a.empty() && a[0] == '-') {
      return Err{"nft option " + a + " is not supported here"};
    } else {
      command += (command.empty() ? "" : " ") + a;
    }
  }
  if (from_input == !command.empty())
    return Err{std::string("nft needs either -f - or a command")};
  if (auto e = (probe ? probe : NfnetlinkProblem)())
    return Err{*e};

  const std::lock_guard<std::mutex> hold(nft_lock);
  std::unique_ptr<nft_ctx, CtxFree> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx)
    return Err{std::string("cannot make an nftables context")};
  if (as_json)
    nft_ctx_output_set_flags(ctx.get(), NFT_CTX_OUTPUT_JSON);
  if (nft_ctx_buffer_output(ctx.get()) || nft_ctx_buffer_error(ctx.get()))
    return Err{std::string("cannot buffer nftables' output")};

  ProgramOutput o;
  const std::string& text = from_input ? input : command;
  o.status = nft_run_cmd_from_buffer(ctx.get(), text.c_str()) ? 1 : 0;
  if (const char* s = nft_ctx_get_output_buffer(ctx.get()))
    o.out = s;
  if (const char* s = nft_ctx_get_error_buffer(ctx.get()))
    o.err = s;
  return o;
}

std::string ErrorText(const ProgramOutput& o) {
  std::string s = o.err;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

Result<ProgramOutput, std::string> RunCommand(
    const std::vector<std::string>& argv, const std::string& input) {
  if (argv.empty() || argv[0] != "nft")
    return Err{"parqd runs no program (asked for " +
               (argv.empty() ? std::string("nothing") : argv[0]) +
               "): nft only, through libnftables"};
  return RunNft({argv.begin() + 1, argv.end()}, input);
}

}  // namespace parq::parqd
