// SPDX-License-Identifier: GPL-2.0
// The command line: what is accepted, and that every error says what was
// wrong and exits 2.
#include <gtest/gtest.h>

#include "options.h"

using namespace parqbench;

namespace {

ParseResult Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "parq-bench");
  return ParseCommandLine(args);
}

// An error: exit code 2, nothing to run, and err mentions every needle.
void ExpectError(const std::vector<std::string>& args,
                 const std::vector<std::string>& needles) {
  ParseResult r = Parse(args);
  std::string cmd;
  for (const auto& a : args)
    cmd += a + " ";
  EXPECT_FALSE(r.config) << cmd;
  EXPECT_EQ(r.exit_code, 2) << cmd;
  for (const auto& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos)
        << cmd << ": '" << n << "' not in: " << r.err;
}

}  // namespace

TEST(Options, OneToOneDefaults) {
  ParseResult r = Parse({"run", "--peers", "127.0.0.1:5000"});
  ASSERT_TRUE(r.config) << r.err;
  const Config& c = *r.config;
  EXPECT_EQ(c.role, Role::kRun);
  EXPECT_EQ(c.pattern, Pattern::kOneToOne);
  EXPECT_EQ(c.transport, Transport::kTcp);
  EXPECT_EQ(c.size, 64u);
  EXPECT_EQ(c.count, 1000u);
  EXPECT_EQ(c.interval_us, 0u);
  EXPECT_FALSE(c.exponential);
  EXPECT_EQ(c.effective_timeout_ms(), 10000u);
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].text, "127.0.0.1:5000");
}

TEST(Options, CollectiveWithEverything) {
  ParseResult r = Parse({"run",
                         "--pattern",
                         "all-to-all",
                         "--peers",
                         "10.0.0.1:1,10.0.0.2:2,[fd00::3]:3",
                         "--rank",
                         "2",
                         "--size",
                         "1024",
                         "--count",
                         "50",
                         "--interval",
                         "200",
                         "--exp",
                         "--seed",
                         "9",
                         "--udp",
                         "--timeout",
                         "250",
                         "--tos",
                         "0xb8",
                         "--priority",
                         "1:1"});
  ASSERT_TRUE(r.config) << r.err;
  const Config& c = *r.config;
  EXPECT_EQ(c.pattern, Pattern::kAllToAll);
  EXPECT_EQ(c.peers.size(), 3u);
  EXPECT_EQ(c.peers[2].family(), AF_INET6);
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.size, 1024u);
  EXPECT_EQ(c.count, 50u);
  EXPECT_EQ(c.interval_us, 200u);
  EXPECT_TRUE(c.exponential);
  EXPECT_EQ(c.seed, 9u);
  EXPECT_EQ(c.transport, Transport::kUdp);
  EXPECT_EQ(c.effective_timeout_ms(), 250u);
  EXPECT_EQ(c.sock.tos, 0xb8);
  EXPECT_EQ(c.sock.priority, 0x10001);
}

TEST(Options, ServeAndBulk) {
  ParseResult s = Parse({"serve", "--listen", "0.0.0.0:5001", "--udp"});
  ASSERT_TRUE(s.config) << s.err;
  EXPECT_EQ(s.config->role, Role::kServe);
  EXPECT_EQ(s.config->transport, Transport::kUdp);
  ParseResult b = Parse(
      {"bulk", "--to", "10.0.0.2:5001", "--size", "65536", "--seconds", "2.5"});
  ASSERT_TRUE(b.config) << b.err;
  EXPECT_EQ(b.config->role, Role::kBulk);
  EXPECT_EQ(b.config->size, 65536u);
  EXPECT_DOUBLE_EQ(b.config->seconds, 2.5);
  EXPECT_EQ(b.config->progress_ms, 0u);
  ParseResult pr =
      Parse({"bulk", "--to", "10.0.0.2:5001", "--progress-ms", "10"});
  ASSERT_TRUE(pr.config) << pr.err;
  EXPECT_EQ(pr.config->progress_ms, 10u);
}

TEST(Options, Timer) {
  ParseResult d = Parse({"timer"});
  ASSERT_TRUE(d.config) << d.err;
  EXPECT_EQ(d.config->role, Role::kTimer);
  EXPECT_EQ(d.config->count, 1000u);
  EXPECT_EQ(d.config->interval_us, 200u);
  EXPECT_EQ(d.config->slack_ns, 10000u);
  EXPECT_FALSE(d.config->realtime);
  ParseResult t = Parse({"timer", "--count", "50", "--interval", "100",
                         "--slack", "1", "--realtime"});
  ASSERT_TRUE(t.config) << t.err;
  EXPECT_EQ(t.config->count, 50u);
  EXPECT_EQ(t.config->interval_us, 100u);
  EXPECT_EQ(t.config->slack_ns, 1u);
  EXPECT_TRUE(t.config->realtime);
  ExpectError({"timer", "--interval", "0"}, {"--interval"});
  ExpectError({"timer", "--count", "0"}, {"--count"});
  ExpectError({"timer", "--slack", "0"}, {"--slack"});
  ExpectError({"timer", "--peers", "1.2.3.4:1"}, {"--peers"});
  ParseResult h = Parse({"timer", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  for (const char* k : {"lateness_ns", "overruns", "--realtime", "watchdog"})
    EXPECT_NE(h.out.find(k), std::string::npos) << k;
}

TEST(Options, HelpExitsZeroAndDocumentsTheFigures) {
  ParseResult r = Parse({"run", "--help"});
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--pattern", "--peers", "--rank", "--size", "--count", "--interval",
        "--exp", "--seed", "--timeout", "--connect-timeout", "--idle-timeout",
        "--tcp", "--udp", "--tos", "--priority", "latency_ns", "completion_ns",
        "nearest-rank"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  ParseResult top = Parse({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* sub : {"serve", "run", "bulk", "timer"})
    EXPECT_NE(top.out.find(sub), std::string::npos) << sub;
}

TEST(Options, Errors) {
  ExpectError({}, {"subcommand"});
  ExpectError({"frobnicate"}, {"frobnicate", "timer"});
  ExpectError({"run"}, {"--peers"});
  ExpectError({"run", "--peers", "127.0.0.1"},
              {"127.0.0.1", "no port", "ADDR:PORT"});
  ExpectError({"run", "--peers", "localhost:5"}, {"localhost", "numeric"});
  ExpectError({"run", "--peers", "1.2.3.4:70000"}, {"70000"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--pattern", "ring"}, {"ring"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--size", "8"}, {"--size", "8"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--size", "abc"},
              {"--size", "abc"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--count", "0"}, {"--count"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--tcp", "--udp"},
              {"--tcp", "--udp"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--udp", "--size", "70000"},
              {"--size 70000", "UDP", "--tcp"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--exp"},
              {"--exp", "--interval"});
  ExpectError({"run", "--peers", "1.2.3.4:1,1.2.3.4:2"},
              {"one-to-one", "one peer"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--rank", "1"},
              {"--rank", "one-to-one"});
  ExpectError(
      {"run", "--pattern", "barrier", "--peers", "1.2.3.4:1", "--rank", "0"},
      {"at least 2"});
  ExpectError({"run", "--pattern", "barrier", "--peers", "1.2.3.4:1,1.2.3.4:2"},
              {"needs --rank", "0 for the root"});
  ExpectError({"run", "--pattern", "barrier", "--peers", "1.2.3.4:1,1.2.3.4:2",
               "--rank", "2"},
              {"--rank 2", "0..1"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--tos", "256"}, {"--tos"});
  ExpectError({"run", "--peers", "1.2.3.4:1", "--priority", "1:x"},
              {"--priority", "1:x", "classid"});
  ExpectError({"serve"}, {"--listen"});
  ExpectError({"serve", "--listen", "nowhere"}, {"nowhere"});
  ExpectError({"bulk", "--to", "1.2.3.4:1", "--seconds", "0"}, {"--seconds"});
  ExpectError({"bulk", "--to", "1.2.3.4:1", "--udp"}, {"--udp"});
  ExpectError({"bulk", "--to", "1.2.3.4:1", "--progress-ms", "60001"},
              {"--progress-ms"});
  ExpectError({"bulk", "--to", "1.2.3.4:1", "--progress-ms", "-1"},
              {"--progress-ms"});
}

TEST(Options, Priority) {
  EXPECT_EQ(ParsePriority("1:1"), 0x10001);
  EXPECT_EQ(ParsePriority("1:10"), 0x10010);
  EXPECT_EQ(ParsePriority("6"), 6);
  EXPECT_EQ(ParsePriority("0x10002"), 0x10002);
  EXPECT_FALSE(ParsePriority(""));
  EXPECT_FALSE(ParsePriority("-1"));
  EXPECT_FALSE(ParsePriority("1:"));
  EXPECT_FALSE(ParsePriority("10000:1"));
  EXPECT_FALSE(ParsePriority("0x100000000"));
}
