// SPDX-License-Identifier: GPL-2.0
//
// One etcd member (Debian's etcd-server; a test fails, not skips, without
// it) in a temporary directory for a whole test program, and the fixture
// of tests that use it: each test its own key prefix.

#ifndef PARQD_TESTS_ETCD_SERVER_H
#define PARQD_TESTS_ETCD_SERVER_H

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <fcntl.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcd.h"

extern char** environ;

namespace parq::parqd::etcd_test {

using namespace std::chrono_literals;

// A free TCP port on 127.0.0.1 (bound and released).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = fd >= 0 &&
                  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0)
    close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

// One etcd member in a temporary directory, for the whole test program.
class EtcdServer {
 public:
  bool Start(std::string& why) {
    const char* bin = "/usr/bin/etcd";
    if (access(bin, X_OK) != 0) {
      why =
          "no /usr/bin/etcd: apt-get install etcd-server (or "
          "scripts/install-deps check)";
      return false;
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("parqd-etcd-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string client = "http://127.0.0.1:" + std::to_string(FreePort());
    const std::string peer = "http://127.0.0.1:" + std::to_string(FreePort());
    endpoint_ = client;
    std::vector<std::string> args = {
        bin,
        "--name=t",
        "--data-dir=" + (dir_ / "data").string(),
        "--listen-client-urls=" + client,
        "--advertise-client-urls=" + client,
        "--listen-peer-urls=" + peer,
        "--initial-advertise-peer-urls=" + peer,
        "--initial-cluster=t=" + peer,
        "--logger=zap",
        "--log-outputs=" + (dir_ / "etcd.log").string()};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawn(&pid_, bin, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      why = "cannot start etcd";
      return false;
    }
    EtcdClient c({endpoint_}, 500ms, CurlPost());
    for (int i = 0; i < 200; i++) {
      if (c.Range("probe").ok())
        return true;
      std::this_thread::sleep_for(50ms);
    }
    why = "etcd did not answer within 10 s; its log:\n" + Log();
    return false;
  }

  ~EtcdServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string Log() const {
    std::ifstream in(dir_ / "etcd.log");
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

 public:
 private:
  pid_t pid_ = 0;
  std::filesystem::path dir_;
  std::string endpoint_;
};

inline EtcdServer* server = nullptr;
inline std::string server_error;

class EtcdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!server && server_error.empty()) {
      server = new EtcdServer;
      if (!server->Start(server_error)) {
        delete server;
        server = nullptr;
      }
    }
  }
  void SetUp() override {
    ASSERT_NE(server, nullptr) << server_error;
    // Each test its own prefix: the store outlives the tests.
    prefix_ = std::string("/t/") +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() +
              "/";
  }
  EtcdClient Client() {
    return EtcdClient({server->endpoint()}, 5s, CurlPost());
  }

  std::string prefix_;
};

}  // namespace parq::parqd::etcd_test

#endif
