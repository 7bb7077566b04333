// SPDX-License-Identifier: GPL-2.0
//
// Tests of the server's side of parqd's Unix sockets (request_server.cc)
// against users who flood it: each asker is a child process that takes
// another uid (the test runs as root), so that SO_PEERCRED tells them
// apart as it does on a shared host.  One user's connections and requests
// beyond their share are refused for that user alone; the others keep
// being answered.

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_client.h"
#include "admission/request_server.h"

namespace {

using namespace parq::parqd;
using nlohmann::json;

// A local user: a child process running as `uid`, which opens
// connections to the socket at `path` and sends on them as the test tells
// it, over a pipe, one command at a time.
class User {
 public:
  User(uid_t uid, const std::string& path) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
      return;
    pid_ = fork();
    if (pid_ == 0) {
      close(to[1]);
      close(from[0]);
      if (setgid(uid) != 0 || setuid(uid) != 0)
        _exit(3);
      Serve(to[0], from[1], path);
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~User() {
    if (pid_ > 0) {
      close(to_);
      close(from_);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  User(const User&) = delete;
  User& operator=(const User&) = delete;

  bool started() const { return pid_ > 0; }

  // Opens `n` more connections (without blocking: a full backlog refuses
  // one); how many it opened.
  int Connect(int n) { return std::stoi(Ask("connect " + std::to_string(n))); }
  // Sends `request` on connection `i` (0: the first opened); "sent" or why
  // not.
  std::string Send(int i, const std::string& request) {
    return Ask("send " + std::to_string(i) + " " + request);
  }
  // The reply on connection `i` within a second, or "closed" (closed
  // unanswered), or "none" (no answer yet).
  std::string Reply(int i) { return Ask("reply " + std::to_string(i)); }

 private:
  std::string Ask(const std::string& command) {
    const std::string line = command + "\n";
    if (write(to_, line.data(), line.size()) !=
        static_cast<ssize_t>(line.size()))
      return "the user is gone";
    return ReadLine(from_);
  }

  static std::string ReadLine(int fd) {
    std::string s;
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n')
      s += c;
    return s;
  }

  static void Serve(int in, int out, const std::string& path) {
    std::vector<int> conns;
    sockaddr_un a;
    if (!UnixSockaddr(path, &a))
      return;
    for (;;) {
      const std::string cmd = ReadLine(in);
      if (cmd.empty())
        return;
      std::string answer;
      if (cmd.rfind("connect ", 0) == 0) {
        int opened = 0;
        for (int k = std::stoi(cmd.substr(8)); k > 0; k--) {
          const int fd =
              socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
          if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
            close(fd);
            continue;
          }
          conns.push_back(fd);
          opened++;
        }
        answer = std::to_string(opened);
      } else if (cmd.rfind("send ", 0) == 0) {
        const size_t sp = cmd.find(' ', 5);
        const size_t i = std::stoul(cmd.substr(5, sp - 5));
        const std::string req = cmd.substr(sp + 1);
        answer = i < conns.size() &&
                         send(conns[i], req.data(), req.size(), MSG_NOSIGNAL) ==
                             static_cast<ssize_t>(req.size())
                     ? "sent"
                     : std::string("not sent: ") + std::strerror(errno);
      } else if (cmd.rfind("reply ", 0) == 0) {
        const size_t i = std::stoul(cmd.substr(6));
        answer = "none";
        if (i < conns.size()) {
          pollfd p{conns[i], POLLIN, 0};
          if (poll(&p, 1, 1000) == 1) {
            char buf[4096];
            const ssize_t n = recv(conns[i], buf, sizeof(buf), 0);
            answer = n > 0 ? std::string(buf, static_cast<size_t>(n))
                           : std::string("closed");
          }
        }
      }
      answer += "\n";
      if (write(out, answer.data(), answer.size()) < 0)
        return;
    }
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

// Answers with the asker's uid.
std::string Echo(const Asker& who, std::string_view) {
  return json{{"ok", true}, {"uid", who.uid}}.dump();
}

class RequestServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root, to ask as other users";
    path_ = "/tmp/parqd-rs-" + std::to_string(getpid()) + ".sock";
    auto s = RequestServer::Open(path_, 0666, "test socket");
    ASSERT_TRUE(s.ok()) << s.error();
    server_.emplace(std::move(s.value()));
  }

  void Serve() { server_->Serve(Echo, now_); }

  std::string path_;
  std::optional<RequestServer> server_;
  uint64_t now_ = 1'000'000'000'000;  // no connection times out
};

constexpr uid_t kAlice = 60001, kBob = 60002;

// Alice opens connection after connection and asks nothing on them; Bob,
// who connected first, then asks.  His request is answered: Alice's flood
// takes Alice's share of the waiting connections, not Bob's.
TEST_F(RequestServerTest, OneUsersConnectionsDoNotPushOutAnothers) {
  User bob(kBob, path_), alice(kAlice, path_);
  ASSERT_TRUE(bob.started() && alice.started());
  ASSERT_EQ(bob.Connect(1), 1);
  Serve();
  int opened = 0;
  for (int round = 0; round < 20; round++) {
    opened += alice.Connect(10);
    Serve();
  }
  EXPECT_GE(opened, 100);
  ASSERT_EQ(bob.Send(0, R"({"op":"who"})"), "sent");
  Serve();
  const std::string reply = bob.Reply(0);
  ASSERT_NE(reply, "closed") << "Bob's connection was closed unanswered";
  EXPECT_EQ(json::parse(reply, nullptr, false),
            (json{{"ok", true}, {"uid", kBob}}))
      << reply;
  // Alice's connections beyond her share were refused with a reason.
  const std::string refused = alice.Reply(opened - 1);
  ASSERT_NE(refused, "none");
  const json r = json::parse(refused, nullptr, false);
  ASSERT_TRUE(r.is_object()) << refused;
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("uid 60001"), std::string::npos)
      << refused;
}

// Root's requests (the Slurm epilogs of a job array, all ending at once)
// are neither capped per user nor given up to make room for a flood.
TEST_F(RequestServerTest, RootIsNeitherCappedNorPushedOut) {
  User root(0, path_), alice(kAlice, path_);
  ASSERT_TRUE(root.started() && alice.started());
  constexpr int kEpilogs = 2 * static_cast<int>(kMaxConnsPerUid);
  ASSERT_EQ(root.Connect(kEpilogs), kEpilogs);
  Serve();
  for (int round = 0; round < 20; round++) {
    alice.Connect(10);
    Serve();
  }
  for (int i = 0; i < kEpilogs; i++) {
    ASSERT_EQ(root.Send(i, R"({"op":"who"})"), "sent");
    Serve();
    const std::string reply = root.Reply(i);
    EXPECT_EQ(json::parse(reply, nullptr, false),
              (json{{"ok", true}, {"uid", 0}}))
        << "root's request " << i << ": " << reply;
  }
}

// Alice asks as fast as she can: past her burst she is refused, with the
// reason; Bob is answered all along.
TEST_F(RequestServerTest, OneUsersRequestsAreRateLimitedForThemAlone) {
  User bob(kBob, path_), alice(kAlice, path_);
  ASSERT_TRUE(bob.started() && alice.started());
  int answered = 0, refused = 0;
  for (int i = 0; i < 100; i++) {
    ASSERT_EQ(alice.Connect(1), 1);
    ASSERT_EQ(alice.Send(i, R"({"op":"who"})"), "sent");
    Serve();
    const json r = json::parse(alice.Reply(i), nullptr, false);
    ASSERT_TRUE(r.is_object());
    if (r["ok"].get<bool>()) {
      answered++;
    } else {
      refused++;
      EXPECT_NE(r["error"].get<std::string>().find("too many requests"),
                std::string::npos)
          << r.dump();
    }
  }
  EXPECT_EQ(answered, static_cast<int>(kRequestBurst));
  EXPECT_EQ(refused, 100 - static_cast<int>(kRequestBurst));
  ASSERT_EQ(bob.Connect(1), 1);
  ASSERT_EQ(bob.Send(0, R"({"op":"who"})"), "sent");
  Serve();
  EXPECT_EQ(json::parse(bob.Reply(0), nullptr, false),
            (json{{"ok", true}, {"uid", kBob}}));
  // Time refills Alice's bucket.
  now_ += 1'000'000'000;
  ASSERT_EQ(alice.Connect(1), 1);
  ASSERT_EQ(alice.Send(100, R"({"op":"who"})"), "sent");
  Serve();
  EXPECT_EQ(json::parse(alice.Reply(100), nullptr, false),
            (json{{"ok", true}, {"uid", kAlice}}));
}

}  // namespace
