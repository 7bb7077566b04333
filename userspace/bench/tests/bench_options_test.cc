// SPDX-License-Identifier: GPL-2.0
// The command line: what is accepted, and that every error says what was
// wrong and exits 2.
#include <gtest/gtest.h>

#include "options.h"

using namespace parqbench;

namespace {

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "parq-bench");
  return parse_command_line(args);
}

// An error: exit code 2, nothing to run, and err mentions every needle.
void expect_error(const std::vector<std::string>& args,
                  const std::vector<std::string>& needles) {
  ParseResult r = parse(args);
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
  ParseResult r = parse({"run", "--peers", "127.0.0.1:5000"});
  ASSERT_TRUE(r.config) << r.err;
  const Config& c = *r.config;
  EXPECT_EQ(c.role, Role::Run);
  EXPECT_EQ(c.pattern, Pattern::OneToOne);
  EXPECT_EQ(c.transport, Transport::Tcp);
  EXPECT_EQ(c.size, 64u);
  EXPECT_EQ(c.count, 1000u);
  EXPECT_EQ(c.interval_us, 0u);
  EXPECT_FALSE(c.exponential);
  EXPECT_EQ(c.effective_timeout_ms(), 10000u);
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].text, "127.0.0.1:5000");
}

TEST(Options, CollectiveWithEverything) {
  ParseResult r = parse({"run",
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
  EXPECT_EQ(c.pattern, Pattern::AllToAll);
  EXPECT_EQ(c.peers.size(), 3u);
  EXPECT_EQ(c.peers[2].family(), AF_INET6);
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.size, 1024u);
  EXPECT_EQ(c.count, 50u);
  EXPECT_EQ(c.interval_us, 200u);
  EXPECT_TRUE(c.exponential);
  EXPECT_EQ(c.seed, 9u);
  EXPECT_EQ(c.transport, Transport::Udp);
  EXPECT_EQ(c.effective_timeout_ms(), 250u);
  EXPECT_EQ(c.sock.tos, 0xb8);
  EXPECT_EQ(c.sock.priority, 0x10001);
}

TEST(Options, ServeAndBulk) {
  ParseResult s = parse({"serve", "--listen", "0.0.0.0:5001", "--udp"});
  ASSERT_TRUE(s.config) << s.err;
  EXPECT_EQ(s.config->role, Role::Serve);
  EXPECT_EQ(s.config->transport, Transport::Udp);
  ParseResult b = parse(
      {"bulk", "--to", "10.0.0.2:5001", "--size", "65536", "--seconds", "2.5"});
  ASSERT_TRUE(b.config) << b.err;
  EXPECT_EQ(b.config->role, Role::Bulk);
  EXPECT_EQ(b.config->size, 65536u);
  EXPECT_DOUBLE_EQ(b.config->seconds, 2.5);
}

TEST(Options, HelpExitsZeroAndDocumentsTheFigures) {
  ParseResult r = parse({"run", "--help"});
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--pattern", "--peers", "--rank", "--size", "--count", "--interval",
        "--exp", "--seed", "--timeout", "--connect-timeout", "--idle-timeout",
        "--tcp", "--udp", "--tos", "--priority", "latency_ns", "completion_ns",
        "nearest-rank"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  ParseResult top = parse({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* sub : {"serve", "run", "bulk"})
    EXPECT_NE(top.out.find(sub), std::string::npos) << sub;
}

TEST(Options, Errors) {
  expect_error({}, {"subcommand"});
  expect_error({"frobnicate"}, {"frobnicate"});
  expect_error({"run"}, {"--peers"});
  expect_error({"run", "--peers", "127.0.0.1"},
               {"127.0.0.1", "no port", "ADDR:PORT"});
  expect_error({"run", "--peers", "localhost:5"}, {"localhost", "numeric"});
  expect_error({"run", "--peers", "1.2.3.4:70000"}, {"70000"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--pattern", "ring"}, {"ring"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--size", "8"}, {"--size", "8"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--size", "abc"},
               {"--size", "abc"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--count", "0"}, {"--count"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--tcp", "--udp"},
               {"--tcp", "--udp"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--udp", "--size", "70000"},
               {"--size 70000", "UDP", "--tcp"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--exp"},
               {"--exp", "--interval"});
  expect_error({"run", "--peers", "1.2.3.4:1,1.2.3.4:2"},
               {"one-to-one", "one peer"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--rank", "1"},
               {"--rank", "one-to-one"});
  expect_error(
      {"run", "--pattern", "barrier", "--peers", "1.2.3.4:1", "--rank", "0"},
      {"at least 2"});
  expect_error(
      {"run", "--pattern", "barrier", "--peers", "1.2.3.4:1,1.2.3.4:2"},
      {"needs --rank", "0 for the root"});
  expect_error({"run", "--pattern", "barrier", "--peers", "1.2.3.4:1,1.2.3.4:2",
                "--rank", "2"},
               {"--rank 2", "0..1"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--tos", "256"}, {"--tos"});
  expect_error({"run", "--peers", "1.2.3.4:1", "--priority", "1:x"},
               {"--priority", "1:x", "classid"});
  expect_error({"serve"}, {"--listen"});
  expect_error({"serve", "--listen", "nowhere"}, {"nowhere"});
  expect_error({"bulk", "--to", "1.2.3.4:1", "--seconds", "0"}, {"--seconds"});
  expect_error({"bulk", "--to", "1.2.3.4:1", "--udp"}, {"--udp"});
}

TEST(Options, Priority) {
  EXPECT_EQ(parse_priority("1:1"), 0x10001);
  EXPECT_EQ(parse_priority("1:10"), 0x10010);
  EXPECT_EQ(parse_priority("6"), 6);
  EXPECT_EQ(parse_priority("0x10002"), 0x10002);
  EXPECT_FALSE(parse_priority(""));
  EXPECT_FALSE(parse_priority("-1"));
  EXPECT_FALSE(parse_priority("1:"));
  EXPECT_FALSE(parse_priority("10000:1"));
  EXPECT_FALSE(parse_priority("0x100000000"));
}
