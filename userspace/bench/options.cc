// SPDX-License-Identifier: GPL-2.0
#include "options.h"

#include <CLI/CLI.hpp>

#include <map>
#include <random>
#include <sstream>
#include <utility>

#include "parqd/base/cli_parse.h"

namespace parqbench {

const char* PatternName(Pattern p) {
  switch (p) {
    case Pattern::kOneToOne:
      return "one-to-one";
    case Pattern::kBarrier:
      return "barrier";
    case Pattern::kManyToOne:
      return "many-to-one";
    case Pattern::kAllToAll:
      return "all-to-all";
  }
  return "?";
}

const char* TransportName(Transport t) {
  return t == Transport::kUdp ? "udp" : "tcp";
}

std::optional<int64_t> ParsePriority(const std::string& s) {
  auto num = [](const std::string& t, int base) -> std::optional<uint64_t> {
    if (t.empty() || t.size() > 16 || t[0] == '-' || t[0] == '+')
      return std::nullopt;
    char* end = nullptr;
    unsigned long long v = std::strtoull(t.c_str(), &end, base);
    if (*end != '\0')
      return std::nullopt;
    return v;
  };
  auto colon = s.find(':');
  if (colon == std::string::npos) {
    auto v = num(s, 0);
    if (!v || *v > 0xffffffffu)
      return std::nullopt;
    return int64_t(*v);
  }
  auto maj = num(s.substr(0, colon), 16), min = num(s.substr(colon + 1), 16);
  if (!maj || !min || *maj > 0xffff || *min > 0xffff)
    return std::nullopt;
  return int64_t(*maj << 16 | *min);
}

namespace {

const char* k_run_footer =
    R"(Patterns (rank 0 is the root; every rank of a collective runs `run` with the
same --peers list and its own --rank):
  one-to-one   a client and a `parq-bench serve`: --peers SERVER.  Message i
               (--size bytes) is sent, the server echoes a 32-byte reply.
  barrier      one-to-all then all-to-one: the root sends --size bytes to
               every rank, each answers with --size bytes.
  many-to-one  the root sends a 32-byte start to every rank, each sends
               --size bytes to the root.
  all-to-all   the root sends a 32-byte start to every rank, every rank
               (root included) sends --size bytes to every other rank; a rank
               that has sent and received all of them sends the root a
               32-byte done.

What the figures measure (CLOCK_MONOTONIC, ns):
  one-to-one   latency_ns: per message, from handing it to the socket to
               reading the server's reply (round trip).  completion_ns: from
               the first send to the last reply (or, UDP, the last loss).
  collectives  latency_ns: per iteration, at the root, from sending the first
               message of the iteration to receiving the last one that
               completes it.  completion_ns: from the start of the first
               iteration to the end of the last.  Other ranks report counts.
Percentiles are nearest-rank (the k-th smallest sample, k = ceil(p/100 n)):
every figure reported was measured, none is interpolated.

--count, --interval, --exp, --seed and --timeout are the root's; the other
ranks follow it.  --size is what each rank sends.

Arrivals: with --interval 0 the next message (iteration) starts when the
previous one is complete.  One-to-one with --interval > 0 is open loop:
messages start on a schedule of gaps (constant, or exponential with --exp)
whether or not replies came back.  Collectives never overlap iterations: an
iteration starts at its scheduled time or when the previous one ends,
whichever is later.
Loss (UDP): a message (iteration) without its reply (all its messages) within
--timeout counts in "lost" and not in the latency.  TCP: no data moving for
--timeout is an error.)";

}  // namespace

ParseResult ParseCommandLine(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args)
    argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return ParseCommandLine(int(args.size()), argv.data());
}

ParseResult ParseCommandLine(int argc, const char* const* argv) {
  ParseResult res;
  Config c;
  std::ostringstream out, err;

  CLI::App app{
      "parq-bench: message-level load for parq experiments.  Results are JSON "
      "on stdout.",
      "parq-bench"};
  app.require_subcommand(1, 1);
  app.footer(
      "Run `parq-bench SUBCOMMAND --help` for the options of each; "
      "Documentation/parq-bench.md has the details.");

  std::string listen, to, priority, pattern_s;
  std::vector<std::string> peers;
  bool tcp = false, udp = false;
  uint64_t seed = 0;

  const std::map<std::string, Pattern> patterns{
      {"one-to-one", Pattern::kOneToOne},
      {"barrier", Pattern::kBarrier},
      {"many-to-one", Pattern::kManyToOne},
      {"all-to-all", Pattern::kAllToAll},
  };

  auto marking = [&](CLI::App* sub) {
    sub->add_option(
           "--tos", c.sock.tos,
           "IP_TOS (IPv6: traffic class) of the sockets, e.g. 0xb8 (DSCP EF, "
           "parallel under parq's default dscp-parallel)")
        ->check(CLI::Range(0, 255));
    sub->add_option(
        "--priority", priority,
        "SO_PRIORITY of the sockets: a tc classid such as 1:1 (parq's parallel "
        "class) or a number");
  };
  auto transport = [&](CLI::App* sub) {
    auto* t = sub->add_flag(
        "--tcp", tcp, "TCP, one connection per pair, TCP_NODELAY (default)");
    auto* u = sub->add_flag("--udp", udp, "UDP, one datagram per message");
    t->excludes(u);
  };

  auto* serve = app.add_subcommand("serve",
                                   "Echo server for one-to-one runs and sink "
                                   "for bulk streams; runs until SIGINT or "
                                   "SIGTERM, then prints a JSON summary.");
  serve
      ->add_option("--listen", listen,
                   "ADDR:PORT to listen on ([ADDR]:PORT for IPv6)")
      ->required();
  transport(serve);
  marking(serve);

  auto* run = app.add_subcommand(
      "run", "Send messages in a communication pattern and report latencies.");
  run->add_option("--pattern", pattern_s,
                  "one-to-one, barrier, many-to-one or all-to-all")
      ->check(
          CLI::IsMember({"one-to-one", "barrier", "many-to-one", "all-to-all"}))
      ->default_str("one-to-one");
  run->add_option("--peers", peers,
                  "one-to-one: the server's ADDR:PORT; collectives: ADDR:PORT "
                  "of every rank in "
                  "rank order (each rank listens on its own)")
      ->delimiter(',')
      ->required();
  run->add_option("--rank", c.rank,
                  "this process's rank in --peers (collectives); 0 is the root")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--size", c.size,
                  "bytes per message, the 32-byte header included (TCP: up to "
                  "64 MiB, UDP: up to "
                  "65507)")
      ->check(CLI::Range(kHeaderSize, kMaxTcpSize))
      ->capture_default_str();
  run->add_option("--count", c.count,
                  "messages (one-to-one) or iterations (collectives)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 32))
      ->capture_default_str();
  run->add_option("--interval", c.interval_us,
                  "mean gap between message (iteration) starts in "
                  "microseconds; 0: back to back")
      ->check(CLI::Range(uint64_t(0), uint64_t(3600) * 1000000))
      ->capture_default_str();
  run->add_flag("--exp", c.exponential,
                "exponential gaps with mean --interval (Poisson arrivals)");
  run->add_option(
      "--seed", seed,
      "seed of the exponential gaps (default: random, reported in the JSON)");
  run->add_option("--timeout", c.timeout_ms,
                  "ms: UDP, a message or iteration unanswered this long is "
                  "lost (default 1000); "
                  "TCP, no data moving this long is an error (default 10000)")
      ->check(CLI::Range(1u, 3600000u));
  run->add_option("--connect-timeout", c.connect_timeout_ms,
                  "ms to wait for the peers to be up (connections, UDP hellos)")
      ->check(CLI::Range(1u, 3600000u))
      ->capture_default_str();
  run->add_option(
         "--idle-timeout", c.idle_timeout_s,
         "s a non-root rank waits for the root's next message before giving up")
      ->check(CLI::Range(1u, 86400u))
      ->capture_default_str();
  transport(run);
  marking(run);
  run->footer(k_run_footer);

  auto* bulk = app.add_subcommand(
      "bulk",
      "A local job's bulk stream: --size-byte messages back to back over TCP "
      "to a "
      "`parq-bench serve`; reports bytes/s (iperf3 remains the reference).");
  bulk->add_option("--to", to, "the server's ADDR:PORT")->required();
  bulk->add_option("--size", c.size,
                   "bytes per message, the 32-byte header included")
      ->check(CLI::Range(kHeaderSize, kMaxTcpSize))
      ->capture_default_str();
  bulk->add_option("--seconds", c.seconds, "how long to send")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  bulk->add_option("--progress-ms", c.progress_ms,
                   "every so many ms, one line on stdout before the summary: "
                   "{\"t_ns\": CLOCK_MONOTONIC, \"bytes_acked\": bytes the "
                   "server has acknowledged} (0: none)")
      ->check(CLI::Range(0u, 60000u))
      ->capture_default_str();
  bulk->add_option("--connect-timeout", c.connect_timeout_ms,
                   "ms to wait for the server")
      ->check(CLI::Range(1u, 3600000u))
      ->capture_default_str();
  bulk->add_option("--timeout", c.timeout_ms,
                   "ms to wait, after the last message, for the server to have "
                   "read everything "
                   "(default 10000)")
      ->check(CLI::Range(1u, 3600000u));
  marking(bulk);
  bulk->footer(
      "bytes_per_second = bytes / seconds, where seconds runs from the "
      "connection "
      "to the server's close after it has read every byte (so no byte still in "
      "a "
      "socket buffer is counted).");

  auto* timer = app.add_subcommand(
      "timer",
      "How late this host's timers fire: --count sleeps to absolute "
      "deadlines --interval apart, and how long after each one the thread "
      "ran again (lateness_ns).");
  uint64_t timer_count = 1000, timer_interval = 200;
  timer->add_option("--count", timer_count, "wake-ups to measure")
      ->check(CLI::Range(uint64_t(1), uint64_t(10000000)))
      ->capture_default_str();
  timer
      ->add_option("--interval", timer_interval,
                   "microseconds between deadlines")
      ->check(CLI::Range(uint64_t(1), uint64_t(1000000)))
      ->capture_default_str();
  timer
      ->add_option("--slack", c.slack_ns,
                   "ns of timer slack (PR_SET_TIMERSLACK); parq arms its "
                   "shaper's watchdog with 10 us")
      ->check(CLI::Range(uint64_t(1), uint64_t(1000000000)))
      ->capture_default_str();
  timer->add_flag("--realtime", c.realtime,
                  "run under SCHED_FIFO (priority 1), ahead of every "
                  "ordinary task, so that the figure is the timer's and a "
                  "context switch's, not the scheduler's queue (needs "
                  "CAP_SYS_NICE)");
  timer->footer(
      "lateness_ns: per wake-up, CLOCK_MONOTONIC after the deadline "
      "(nearest-rank percentiles).  A wake-up past the next deadline too "
      "counts in overruns, and the schedule restarts from it.  The figure "
      "is the hrtimer's lateness plus a wake-up and a context switch: an "
      "upper estimate of how late parq's shaper watchdog fires.");

  // CLI11 would say only "A subcommand is required".
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && first != "serve" && first != "run" &&
      first != "bulk" && first != "timer") {
    res.exit_code = 2;
    res.err = std::string("parq-bench: unknown subcommand '") + argv[1] +
              "'; use serve, run, bulk or timer\nRun with --help for more "
              "information.\n";
    return res;
  }
  // Every CLI11 error becomes exit code 2 (a usage error), with CLI11's
  // message and where to look.
  if (auto code = parq::parqd::ParseCli(app, argc, argv, out, err)) {
    res.exit_code = *code == 0 ? 0 : 2;
    res.out = out.str();
    res.err = err.str();
    return res;
  }

  auto fail = [&](const std::string& sub, const std::string& msg) {
    res.exit_code = 2;
    res.err = "parq-bench " + sub + ": " + msg +
              "\nRun with --help for more information.\n";
    return res;
  };

  c.transport = udp ? Transport::kUdp : Transport::kTcp;
  if (!priority.empty()) {
    auto p = ParsePriority(priority);
    if (!p)
      return fail(
          app.get_subcommands().front()->get_name(),
          "--priority '" + priority +
              "' is neither a classid MAJ:MIN (hex, e.g. 1:1) nor a number");
    c.sock.priority = *p;
  }
  c.seed = seed;
  if (!run->count("--seed"))
    c.seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();

  const std::string sub = app.get_subcommands().front()->get_name();
  if (*serve) {
    c.role = Role::kServe;
    c.listen = listen;
    if (auto a = ParseAddr(listen); !a.ok())
      return fail(sub, a.error());
  } else if (*bulk) {
    c.role = Role::kBulk;
    auto a = ParseAddr(to);
    if (!a.ok())
      return fail(sub, a.error());
    c.to = std::move(a).value();
  } else if (*timer) {
    c.role = Role::kTimer;
    c.count = timer_count;
    c.interval_us = timer_interval;
  } else {
    c.role = Role::kRun;
    if (!pattern_s.empty())
      c.pattern = patterns.at(pattern_s);  // CLI11 checked it is a key
    for (const auto& p : peers) {
      auto a = ParseAddr(p);
      if (!a.ok())
        return fail(sub, a.error());
      c.peers.push_back(std::move(a).value());
    }
  }

  if (c.role == Role::kRun) {
    if (c.transport == Transport::kUdp && c.size > kMaxUdpSize)
      return fail("run", "--size " + std::to_string(c.size) +
                             " is above the largest UDP datagram (" +
                             std::to_string(kMaxUdpSize) +
                             "); use --tcp or a smaller --size");
    if (c.exponential && c.interval_us == 0)
      return fail("run", "--exp needs a mean: give --interval in microseconds");
    if (c.pattern == Pattern::kOneToOne) {
      if (c.peers.size() != 1)
        return fail("run",
                    "--pattern one-to-one takes one peer (the server), got " +
                        std::to_string(c.peers.size()));
      if (run->count("--rank") && c.rank != 0)
        return fail("run",
                    "--rank is for collective patterns; one-to-one has none");
    } else {
      if (c.peers.size() < 2)
        return fail("run",
                    std::string("--pattern ") + PatternName(c.pattern) +
                        " needs the addresses of at least 2 ranks in --peers");
      if (c.peers.size() > 65535)
        return fail("run", "at most 65535 ranks");
      if (!run->count("--rank"))
        return fail("run", std::string("--pattern ") + PatternName(c.pattern) +
                               " needs --rank (0 for the root, 1.." +
                               std::to_string(c.peers.size() - 1) +
                               " for the others)");
      if (size_t(c.rank) >= c.peers.size())
        return fail("run", "--rank " + std::to_string(c.rank) +
                               " is not in 0.." +
                               std::to_string(c.peers.size() - 1) +
                               " (one rank per --peers entry)");
    }
  }

  res.config = c;
  return res;
}

}  // namespace parqbench
