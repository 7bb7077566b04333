// SPDX-License-Identifier: GPL-2.0
//
// etcd members (Debian's etcd-server; a test fails, not skips, without it)
// on 127.0.0.1 in temporary directories: one for a whole test program and
// the fixture of tests that use it (each test its own key prefix), a
// cluster of three for tests of failures, and certificates for TLS.

#ifndef PARQD_TESTS_ETCD_SERVER_H
#define PARQD_TESTS_ETCD_SERVER_H

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>

#include <fcntl.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "admission/etcd.h"

extern char** environ;

namespace parq::parqd::etcd_test {

using namespace std::chrono_literals;

// A free TCP port on 127.0.0.1 (bound and released), never one this
// program was given before: the kernel may hand the same released port to
// two calls in a row, and a member whose client and peer URLs share a port
// cannot start.
inline int FreePort() {
  static std::set<int> given;
  for (int tries = 0; tries < 100; tries++) {
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
    if (!ok)
      return 0;
    if (given.insert(ntohs(a.sin_port)).second)
      return ntohs(a.sin_port);
  }
  return 0;
}

// PEM files made with openssl(1) in `dir`: a CA, etcd's certificate for
// 127.0.0.1 and a client's, each signed by the CA, and a second CA that
// signed neither.
struct TestPki {
  std::filesystem::path dir;
  std::string Path(const char* name) const { return (dir / name).string(); }
  EtcdTls Client() const {
    return {Path("ca.pem"), Path("client.pem"), Path("client-key.pem")};
  }

  bool Make(std::string& why) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "san.cnf") << "subjectAltName=IP:127.0.0.1\n";
    const std::string d = dir.string();
    const std::string key =
        "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 ";
    const std::string script =
        "set -e; cd '" + d + "'; exec >/dev/null 2>openssl.log; " +
        "openssl req -x509 " + key +
        "-keyout ca-key.pem -out ca.pem -subj /CN=parq-test-ca; " +
        "openssl req -x509 " + key +
        "-keyout other-ca-key.pem -out other-ca.pem -subj /CN=other-ca; " +
        "for n in server client; do openssl req " + key +
        "-keyout $n-key.pem -out $n.csr -subj /CN=$n; "
        "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca-key.pem "
        "-CAcreateserial -days 2 -extfile san.cnf -out $n.pem; done";
    if (std::system(script.c_str()) != 0) {
      std::ifstream in(dir / "openssl.log");
      std::ostringstream log;
      log << in.rdbuf();
      why = "openssl could not make the test certificates: " + log.str();
      return false;
    }
    return true;
  }
};

// etcd members on 127.0.0.1, each in a directory of its own under one
// temporary directory: one for the whole test program (`server`), or a
// cluster of three for a test of failures.  With `pki` they serve https://
// and ask clients for a certificate that pki's CA signed.
class EtcdServer {
 public:
  bool Start(std::string& why, int members = 1, const TestPki* pki = nullptr) {
    if (access(kBin, X_OK) != 0) {
      why =
          "no /usr/bin/etcd: apt-get install etcd-server (or "
          "scripts/install-deps check)";
      return false;
    }
    pki_ = pki;
    static int started = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("parqd-etcd-test-" + std::to_string(getpid()) + "-" +
            std::to_string(started++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::string cluster;
    for (int i = 0; i < members; i++) {
      Member m;
      m.name = "m" + std::to_string(i);
      m.client = (pki ? "https" : "http") + std::string("://127.0.0.1:") +
                 std::to_string(FreePort());
      m.peer = "http://127.0.0.1:" + std::to_string(FreePort());
      cluster += (i ? "," : "") + m.name + "=" + m.peer;
      members_.push_back(m);
    }
    cluster_ = cluster;
    for (size_t i = 0; i < members_.size(); i++)
      if (!Spawn(i, why))
        return false;
    return WaitForAll(why);
  }

  ~EtcdServer() {
    for (size_t i = 0; i < members_.size(); i++)
      Stop(i, SIGTERM);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Member i's client URL; endpoint(): the first member's.
  const std::string& endpoint(size_t i = 0) const { return members_[i].client; }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const Member& m : members_)
      out.push_back(m.client);
    return out;
  }

  // Stops member i with `sig` (SIGKILL: as a crash).
  void Stop(size_t i, int sig) {
    if (members_[i].pid > 0) {
      kill(members_[i].pid, sig);
      waitpid(members_[i].pid, nullptr, 0);
      members_[i].pid = 0;
    }
  }
  // Starts member i again on its data; true once the cluster answers
  // through every running member.
  bool Restart(size_t i, std::string& why) {
    return Spawn(i, why) && WaitForAll(why);
  }

 private:
  static constexpr const char* kBin = "/usr/bin/etcd";
  struct Member {
    std::string name, client, peer;
    pid_t pid = 0;
  };

  bool Spawn(size_t i, std::string& why) {
    const Member& m = members_[i];
    const std::filesystem::path d = dir_ / m.name;
    std::vector<std::string> args = {kBin,
                                     "--name=" + m.name,
                                     "--data-dir=" + (d / "data").string(),
                                     "--listen-client-urls=" + m.client,
                                     "--advertise-client-urls=" + m.client,
                                     "--listen-peer-urls=" + m.peer,
                                     "--initial-advertise-peer-urls=" + m.peer,
                                     "--initial-cluster=" + cluster_,
                                     "--pre-vote",
                                     "--logger=zap",
                                     "--log-outputs=" + (d.string() + ".log")};
    if (pki_) {
      args.push_back("--cert-file=" + pki_->Path("server.pem"));
      args.push_back("--key-file=" + pki_->Path("server-key.pem"));
      args.push_back("--trusted-ca-file=" + pki_->Path("ca.pem"));
      args.push_back("--client-cert-auth");
    }
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    // fork and exec rather than posix_spawn, for PR_SET_PDEATHSIG: a member
    // dies with the test program however that ends (a failed assertion in
    // a fixture, a sanitizer's abort, ctest's timeout), where a destructor
    // would not run.  Only async-signal-safe calls between the two.  The
    // signal comes when the forking thread ends: members are started from
    // the test's main thread.
    const pid_t parent = getpid();
    const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    const pid_t pid = fork();
    if (pid == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
      if (null_fd >= 0) {
        dup2(null_fd, 1);
        dup2(null_fd, 2);
      }
      execve(kBin, argv.data(), environ);
      _exit(127);
    }
    if (null_fd >= 0)
      close(null_fd);
    if (pid < 0) {
      members_[i].pid = 0;
      why = "cannot start etcd: fork failed";
      return false;
    }
    members_[i].pid = pid;
    return true;
  }

  // Every running member answers a read (a member without a leader
  // does not): 10 s at most.
  bool WaitForAll(std::string& why) {
    for (size_t i = 0; i < members_.size(); i++) {
      if (members_[i].pid == 0)
        continue;
      EtcdClient c({members_[i].client}, 500ms,
                   CurlPost(pki_ ? pki_->Client() : EtcdTls{}));
      bool up = false;
      for (int n = 0; n < 200 && !up; n++) {
        up = c.Range("probe").ok();
        if (!up)
          std::this_thread::sleep_for(50ms);
      }
      if (!up) {
        why = "etcd member " + members_[i].name +
              " did not answer within 10 s; its log:\n" + Log(i);
        return false;
      }
    }
    return true;
  }

  std::string Log(size_t i) const {
    std::ifstream in(dir_ / (members_[i].name + ".log"));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  const TestPki* pki_ = nullptr;
  std::filesystem::path dir_;
  std::string cluster_;
  std::vector<Member> members_;
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
      } else {
        // Stopped, and its directory removed, when the program exits.
        std::atexit([] {
          delete server;
          server = nullptr;
        });
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
