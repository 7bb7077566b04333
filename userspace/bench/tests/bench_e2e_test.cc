// SPDX-License-Identifier: GPL-2.0
//
// End to end on loopback: a server and a client, and 3-rank collectives, in
// threads of this process; and the real binary as subprocesses.  The
// assertions are on message counts and the presence and consistency of the
// JSON fields, never on how fast anything was.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>

#include "options.h"
#include "roles.h"
#include "timing.h"

using namespace parqbench;

namespace {

// A port that was free a moment ago (bound to 0 and closed).
uint16_t FreePort(int type) {
  Fd s(socket(AF_INET, type, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(0, bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  return LocalPort(s.get()).value();
}

Config Parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "parq-bench");
  ParseResult r = ParseCommandLine(args);
  EXPECT_TRUE(r.config) << r.err;
  return r.config ? *r.config : Config{};
}

// The fields every run report has, with sane values.
void ExpectRunReport(const json& j, const char* pattern,
                     const char* transport) {
  EXPECT_EQ(j["tool"], "parq-bench");
  EXPECT_EQ(j["mode"], "run");
  EXPECT_EQ(j["pattern"], pattern);
  EXPECT_EQ(j["transport"], transport);
  for (const char* k :
       {"peers", "size", "timeout_ms", "role", "sent", "received", "lost",
        "late", "unexpected", "completion_ns", "latency_of", "latency_ns"})
    EXPECT_TRUE(j.contains(k)) << k << " missing in " << j.dump();
  if (j["role"] != "member") {
    for (const char* k : {"count", "interval_us", "arrivals", "seed"})
      EXPECT_TRUE(j.contains(k)) << k << " missing in " << j.dump();
  }
  EXPECT_EQ(j["unexpected"], 0) << j.dump();
}

// A measured latency summary: count samples, ordered, positive.
void ExpectLatency(const json& j, uint64_t count) {
  const json& l = j["latency_ns"];
  ASSERT_TRUE(l.is_object()) << j.dump();
  EXPECT_EQ(l["count"], count);
  uint64_t min = l["min"], p50 = l["p50"], p99 = l["p99"], p999 = l["p999"],
           max = l["max"];
  double mean = l["mean"];
  EXPECT_GT(min, 0u);
  EXPECT_LE(min, p50);
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, p999);
  EXPECT_LE(p999, max);
  EXPECT_GE(mean, double(min));
  EXPECT_LE(mean, double(max));
  // The whole exchange takes at least as long as its slowest part.
  EXPECT_GE(j["completion_ns"].get<uint64_t>(), max);
}

// The report of a role that must succeed; its error fails the test.
json Report(const Result<json, std::string>& r) {
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : json();
}

struct ServerThread {
  explicit ServerThread(const char* transport)
      : server(Server::Open(
                   Parsed({"serve", "--listen", "127.0.0.1:0", transport}))
                   .value()) {
    port = server.port().value();
    result =
        std::async(std::launch::async, [this] { return server.run(stop); });
  }
  json finish() {
    stop = true;
    return Report(result.get());
  }
  Server server;
  uint16_t port;
  std::atomic<bool> stop{false};
  std::future<Result<json, std::string>> result;
};

std::string Loopback(uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

// Runs one collective with 3 ranks in 3 threads; returns their reports.
std::vector<json> ThreeRanks(const char* pattern, const char* transport,
                             uint64_t count,
                             std::vector<std::string> extra = {},
                             const char* root_size = "200") {
  int type = std::string(transport) == "--udp" ? SOCK_DGRAM : SOCK_STREAM;
  std::string peers = Loopback(FreePort(type)) + "," +
                      Loopback(FreePort(type)) + "," + Loopback(FreePort(type));
  std::vector<std::future<Result<json, std::string>>> f;
  // Members first, the root last: ranks may start in any order, but
  // this also checks that members wait for the root.
  for (int r : {2, 1, 0}) {
    std::vector<std::string> args{"run",
                                  "--pattern",
                                  pattern,
                                  "--peers",
                                  peers,
                                  "--rank",
                                  std::to_string(r),
                                  "--count",
                                  std::to_string(count),
                                  "--size",
                                  r ? "200" : root_size,
                                  transport,
                                  "--timeout",
                                  "20000",
                                  "--idle-timeout",
                                  "30"};
    args.insert(args.end(), extra.begin(), extra.end());
    Config c = Parsed(args);
    f.push_back(std::async(std::launch::async, [c] { return RunPattern(c); }));
  }
  std::vector<json> out(3);
  // The root first: when something fails, its error says the most.
  out[0] = Report(f[2].get());
  out[1] = Report(f[1].get());
  out[2] = Report(f[0].get());
  return out;
}

}  // namespace

TEST(EndToEnd, OneToOneTcpPingPong) {
  ServerThread s("--tcp");
  json j = Report(RunPattern(Parsed({"run", "--peers", Loopback(s.port),
                                     "--count", "50", "--size", "1000"})));
  ExpectRunReport(j, "one-to-one", "tcp");
  EXPECT_EQ(j["role"], "client");
  EXPECT_EQ(j["sent"], 50);
  EXPECT_EQ(j["received"], 50);
  EXPECT_EQ(j["lost"], 0);
  EXPECT_EQ(j["latency_of"], "message round trip");
  ExpectLatency(j, 50);
  // start_ns: the first message's CLOCK_MONOTONIC time, as NowNs().
  const uint64_t start = j["start_ns"], now = NowNs();
  EXPECT_GT(start, 0u);
  EXPECT_LE(start + j["completion_ns"].get<uint64_t>(), now);
  json sj = s.finish();
  EXPECT_EQ(sj["mode"], "serve");
  EXPECT_EQ(sj["data_messages"], 50);
  EXPECT_EQ(sj["bytes_received"], 50 * 1000);
  EXPECT_EQ(sj["connections"], 1);
  EXPECT_EQ(sj["errors"], 0);
}

TEST(EndToEnd, OneToOneTcpOpenLoopExponential) {
  ServerThread s("--tcp");
  json j = Report(RunPattern(Parsed(
      {"run", "--peers", Loopback(s.port), "--count", "40", "--interval", "500",
       "--exp", "--seed", "1", "--tos", "0xb8", "--priority", "1:1"})));
  ExpectRunReport(j, "one-to-one", "tcp");
  EXPECT_EQ(j["arrivals"], "exponential");
  EXPECT_EQ(j["seed"], 1);
  EXPECT_EQ(j["received"], 40);
  ExpectLatency(j, 40);
  EXPECT_EQ(s.finish()["data_messages"], 40);
}

TEST(EndToEnd, OneToOneUdp) {
  ServerThread s("--udp");
  // A generous timeout: on loopback nothing is lost unless a reply
  // takes 10 s, so lost == 0 does not depend on the machine's load.
  json j = Report(
      RunPattern(Parsed({"run", "--udp", "--peers", Loopback(s.port), "--count",
                         "30", "--size", "500", "--timeout", "10000"})));
  ExpectRunReport(j, "one-to-one", "udp");
  EXPECT_EQ(j["sent"], 30);
  EXPECT_EQ(j["received"], 30);
  EXPECT_EQ(j["lost"], 0);
  ExpectLatency(j, 30);
  json sj = s.finish();
  EXPECT_EQ(sj["data_messages"], 30);
  EXPECT_EQ(sj["bytes_received"], 30 * 500);
}

TEST(EndToEnd, OneToOneUdpCountsLoss) {
  // Nobody listens: every message is lost after --timeout, and the
  // report says so rather than hanging or failing.
  uint16_t port = FreePort(SOCK_DGRAM);
  json j = Report(
      RunPattern(Parsed({"run", "--udp", "--peers", Loopback(port), "--count",
                         "3", "--interval", "1000", "--timeout", "50"})));
  ExpectRunReport(j, "one-to-one", "udp");
  EXPECT_EQ(j["sent"], 3);
  EXPECT_EQ(j["received"], 0);
  EXPECT_EQ(j["lost"], 3);
  EXPECT_EQ(j["latency_ns"]["count"], 0);
  EXPECT_TRUE(j["latency_ns"]["p99"].is_null());
}

TEST(EndToEnd, OneToOneTcpNoServerIsAnError) {
  uint16_t port = FreePort(SOCK_STREAM);
  Config c = Parsed({"run", "--peers", Loopback(port), "--count", "1",
                     "--connect-timeout", "200"});
  const auto r = RunPattern(c);
  ASSERT_FALSE(r.ok()) << "no error";
  EXPECT_NE(r.error().find(Loopback(port)), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("listening"), std::string::npos) << r.error();
}

// A server cannot listen where another one does: Open() says where and why.
TEST(EndToEnd, ServeOnABoundAddressIsAnError) {
  ServerThread s("--tcp");
  const auto second =
      Server::Open(Parsed({"serve", "--listen", Loopback(s.port), "--tcp"}));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error(), "bind " + Loopback(s.port) +
                                " (TCP): " + std::strerror(EADDRINUSE));
  s.finish();
}

// Collective ranks wait for each other only as long as --connect-timeout:
// a root whose members never come says which ones are missing.
TEST(EndToEnd, CollectiveRootAloneIsAnError) {
  const std::string peers =
      Loopback(FreePort(SOCK_DGRAM)) + "," + Loopback(FreePort(SOCK_DGRAM));
  const auto r =
      RunPattern(Parsed({"run", "--udp", "--pattern", "barrier", "--peers",
                         peers, "--rank", "0", "--connect-timeout", "100"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not ready within --connect-timeout 100 ms"),
            std::string::npos)
      << r.error();
}

TEST(EndToEnd, BarrierTcp3Ranks) {
  auto r = ThreeRanks("barrier", "--tcp", 20);
  ExpectRunReport(r[0], "barrier", "tcp");
  EXPECT_EQ(r[0]["role"], "root");
  EXPECT_EQ(r[0]["ranks"], 3);
  EXPECT_EQ(r[0]["sent"], 2 * 20);      // a message to each rank per iteration
  EXPECT_EQ(r[0]["received"], 2 * 20);  // and one back from each
  EXPECT_EQ(r[0]["lost"], 0);
  EXPECT_EQ(r[0]["latency_of"], "iteration");
  ExpectLatency(r[0], 20);
  for (int i : {1, 2}) {
    ExpectRunReport(r[i], "barrier", "tcp");
    EXPECT_EQ(r[i]["role"], "member");
    EXPECT_EQ(r[i]["rank"], i);
    EXPECT_EQ(r[i]["sent"], 20);
    EXPECT_EQ(r[i]["received"], 20);
    EXPECT_TRUE(r[i]["latency_ns"].is_null());
  }
}

TEST(EndToEnd, BarrierUdp3Ranks) {
  auto r = ThreeRanks("barrier", "--udp", 20, {"--interval", "200"});
  ExpectRunReport(r[0], "barrier", "udp");
  EXPECT_EQ(r[0]["sent"], 40);
  EXPECT_EQ(r[0]["received"], 40);
  EXPECT_EQ(r[0]["lost"], 0);
  ExpectLatency(r[0], 20);
  for (int i : {1, 2})
    EXPECT_EQ(r[i]["sent"], 20);
}

TEST(EndToEnd, BarrierUdpRanksWithDifferentSizes) {
  // The root sends 5000-byte messages, the members answer with 200:
  // every rank receives datagrams larger than the ones it sends.
  auto r = ThreeRanks("barrier", "--udp", 10, {}, "5000");
  EXPECT_EQ(r[0]["size"], 5000);
  EXPECT_EQ(r[0]["received"], 20);
  EXPECT_EQ(r[0]["lost"], 0);
  EXPECT_EQ(r[0]["unexpected"], 0);
  for (int i : {1, 2}) {
    EXPECT_EQ(r[i]["received"], 10);
    EXPECT_EQ(r[i]["unexpected"], 0);
  }
}

TEST(EndToEnd, ManyToOneTcp3Ranks) {
  auto r = ThreeRanks("many-to-one", "--tcp", 15);
  ExpectRunReport(r[0], "many-to-one", "tcp");
  EXPECT_EQ(r[0]["sent"], 2 * 15);
  EXPECT_EQ(r[0]["received"], 2 * 15);
  ExpectLatency(r[0], 15);
  for (int i : {1, 2}) {
    EXPECT_EQ(r[i]["sent"], 15);
    EXPECT_EQ(r[i]["received"], 15);
  }
}

TEST(EndToEnd, AllToAllTcp3Ranks) {
  auto r = ThreeRanks("all-to-all", "--tcp", 10);
  ExpectRunReport(r[0], "all-to-all", "tcp");
  // Root: a start and a data message to each other rank; a data message
  // and a done from each.
  EXPECT_EQ(r[0]["sent"], 10 * 2 * 2);
  EXPECT_EQ(r[0]["received"], 10 * 2 * 2);
  ExpectLatency(r[0], 10);
  for (int i : {1, 2}) {
    ExpectRunReport(r[i], "all-to-all", "tcp");
    // Member: data to the 2 others and a done; start and data from
    // the 2 others.
    EXPECT_EQ(r[i]["sent"], 10 * 3);
    EXPECT_EQ(r[i]["received"], 10 * 3);
  }
}

TEST(EndToEnd, AllToAllUdp3Ranks) {
  auto r = ThreeRanks("all-to-all", "--udp", 10,
                      {"--interval", "500", "--exp", "--seed", "3"});
  ExpectRunReport(r[0], "all-to-all", "udp");
  EXPECT_EQ(r[0]["sent"], 40);
  EXPECT_EQ(r[0]["received"], 40);
  EXPECT_EQ(r[0]["lost"], 0);
  ExpectLatency(r[0], 10);
  for (int i : {1, 2})
    EXPECT_EQ(r[i]["sent"], 30);
}

TEST(EndToEnd, BulkTcp) {
  ServerThread s("--tcp");
  json j = Report(RunBulk(Parsed({"bulk", "--to", Loopback(s.port), "--size",
                                  "8192", "--seconds", "0.2"})));
  EXPECT_EQ(j["mode"], "bulk");
  uint64_t bytes = j["bytes"], messages = j["messages"];
  EXPECT_GT(messages, 0u);
  EXPECT_EQ(bytes, messages * 8192);  // whole messages only
  EXPECT_GE(j["seconds"].get<double>(), 0.2);
  EXPECT_GT(j["bytes_per_second"].get<double>(), 0);
  json sj = s.finish();
  EXPECT_EQ(sj["bulk_messages"], messages);
  EXPECT_EQ(sj["bytes_received"], bytes);  // the server read every byte
}

TEST(EndToEnd, BulkTcpProgress) {
  ServerThread s("--tcp");
  std::vector<json> samples;
  const uint64_t before = NowNs();
  json j =
      Report(RunBulk(Parsed({"bulk", "--to", Loopback(s.port), "--size", "8192",
                             "--seconds", "0.3", "--progress-ms", "20"}),
                     [&](const json& x) { samples.push_back(x); }));
  // One sample about every 20 ms of the 0.3 s: at least half of the 15 on
  // a loaded machine; in order; what is acknowledged only grows, and
  // never passes what was sent.
  ASSERT_GE(samples.size(), 8u);
  EXPECT_LE(samples.size(), 16u);
  uint64_t t = before, acked = 0;
  for (const json& x : samples) {
    EXPECT_GE(x["t_ns"].get<uint64_t>(), t) << x.dump();
    EXPECT_GE(x["bytes_acked"].get<uint64_t>(), acked) << x.dump();
    t = x["t_ns"];
    acked = x["bytes_acked"];
  }
  EXPECT_LE(acked, j["bytes"].get<uint64_t>());
  EXPECT_GT(acked, 0u);
  s.finish();
}

TEST(EndToEnd, BulkTcpNoProgressByDefault) {
  ServerThread s("--tcp");
  int calls = 0;
  Report(
      RunBulk(Parsed({"bulk", "--to", Loopback(s.port), "--seconds", "0.05"}),
              [&](const json&) { calls++; }));
  EXPECT_EQ(calls, 0);
  s.finish();
}

// --- the binary ------------------------------------------------------------

namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

// with_stderr: the child's stderr goes into the same pipe as its stdout.
Child Spawn(const std::vector<std::string>& args, bool with_stderr = false) {
  int p[2];
  EXPECT_EQ(0, pipe(p));
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(p[1], 1);
    if (with_stderr)
      dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(p[1]);
  c.out = fdopen(p[0], "r");
  return c;
}

// Waits for the child; returns its stdout and exit status.
std::pair<std::string, int> Reap(Child& c) {
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), c.out)) > 0)
    s.append(buf, n);
  fclose(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  return {s, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

}  // namespace

TEST(Binary, ServeRunAndStop) {
  const std::string bin = PARQ_BENCH_BINARY;
  const std::string a = Loopback(FreePort(SOCK_STREAM));
  Child serve = Spawn({bin, "serve", "--listen", a});
  Child run = Spawn({bin, "run", "--peers", a, "--count", "25",
                     "--connect-timeout", "20000"});
  auto [rout, rcode] = Reap(run);
  kill(serve.pid, SIGTERM);
  auto [sout, scode] = Reap(serve);

  ASSERT_EQ(rcode, 0) << rout;
  json j = json::parse(rout);
  ExpectRunReport(j, "one-to-one", "tcp");
  EXPECT_EQ(j["received"], 25);
  ExpectLatency(j, 25);

  ASSERT_EQ(scode, 0) << sout;
  json sj = json::parse(sout);
  EXPECT_EQ(sj["data_messages"], 25);
}

// Every deadline is slept to (clock_nanosleep never returns early), so the
// run takes at least count x interval, and every sample is a lateness.
TEST(Timer, CountsEveryWakeUp) {
  Config c = Parsed({"timer", "--count", "50", "--interval", "100"});
  json j = Report(RunTimer(c));
  EXPECT_EQ(j["tool"], "parq-bench");
  EXPECT_EQ(j["mode"], "timer");
  EXPECT_EQ(j["count"], 50);
  EXPECT_EQ(j["interval_us"], 100);
  EXPECT_EQ(j["slack_ns"], 10000);
  EXPECT_EQ(j["realtime"], false);
  EXPECT_GE(j["elapsed_ns"].get<uint64_t>(), 50u * 100000u);
  EXPECT_LE(j["overruns"].get<uint64_t>(), 50u);
  const json& l = j["lateness_ns"];
  EXPECT_EQ(l["count"], 50);
  EXPECT_LE(l["min"].get<uint64_t>(), l["p50"].get<uint64_t>());
  EXPECT_LE(l["p50"].get<uint64_t>(), l["p99"].get<uint64_t>());
  EXPECT_LE(l["p99"].get<uint64_t>(), l["max"].get<uint64_t>());
}

// --realtime either runs under SCHED_FIFO or says what it lacks.
TEST(Timer, RealtimeRunsOrSaysWhy) {
  Config c = Parsed({"timer", "--count", "5", "--realtime"});
  const auto r = RunTimer(c);
  if (r.ok()) {
    EXPECT_EQ(r.value()["realtime"], true);
    EXPECT_EQ(r.value()["lateness_ns"]["count"], 5);
  } else {
    EXPECT_NE(r.error().find("CAP_SYS_NICE"), std::string::npos) << r.error();
  }
}

TEST(Binary, Timer) {
  Child c =
      Spawn({PARQ_BENCH_BINARY, "timer", "--count", "20", "--interval", "50"});
  auto [out, code] = Reap(c);
  ASSERT_EQ(code, 0) << out;
  json j = json::parse(out);
  EXPECT_EQ(j["mode"], "timer");
  EXPECT_EQ(j["lateness_ns"]["count"], 20);
}

// An error of the role: its message on stderr, nothing on stdout, exit 1.
TEST(Binary, ServeOnABoundAddressExits1) {
  Fd taken(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(0, bind(taken.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  const std::string addr = Loopback(LocalPort(taken.get()).value());

  Child quiet = Spawn({PARQ_BENCH_BINARY, "serve", "--listen", addr});
  auto [out, code] = Reap(quiet);
  EXPECT_EQ(code, 1);
  EXPECT_TRUE(out.empty()) << out;

  Child loud = Spawn({PARQ_BENCH_BINARY, "serve", "--listen", addr}, true);
  auto [both, code2] = Reap(loud);
  EXPECT_EQ(code2, 1);
  EXPECT_EQ(both, "parq-bench serve: bind " + addr +
                      " (TCP): " + std::strerror(EADDRINUSE) + "\n");
}

TEST(Binary, UsageErrorExits2) {
  Child c = Spawn({PARQ_BENCH_BINARY, "run", "--peers", "127.0.0.1"});
  auto [out, code] = Reap(c);
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(out.empty());  // errors go to stderr, stdout stays JSON-only
}
