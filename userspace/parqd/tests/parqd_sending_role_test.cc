// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of sending_role.cc: from a verified message to the kernel's credit
// requests, and that nothing reaches the kernel for a dropped message.

#include <gtest/gtest.h>

#include <linux/parq.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "credit/sending_role.h"
#include "daemon/daemon.h"
#include "fake_kernel.h"
#include "prom_check.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Bytes;
using parq::parqd::test::FakeKernel;
using parq::parqd::test::MakeKey;
using parq::parqd::test::PromDocumented;
using parq::parqd::test::PromFamilies;
using parq::parqd::test::PromWellFormed;
using parq::parqd::test::Recipient;
using parq::parqd::test::TempDir;
using parq::parqd::test::TestKeys;

constexpr uint64_t kMs = 1'000'000;
// CLOCK_REALTIME in the tests: this host's parqd started at 0, and
// messages are stamped, and received, kStamped ns after that.
constexpr uint64_t kStamped = 2'000'000'000;

wire::Message Grant(uint64_t sender, uint64_t at, uint64_t seq, uint64_t credit,
                    std::vector<Address> to) {
  return parq::parqd::test::Grant(sender, kStamped + at, seq, credit,
                                  std::move(to));
}
wire::Message Release(uint64_t sender, uint64_t at, uint64_t seq,
                      std::vector<Address> to) {
  return parq::parqd::test::Release(sender, kStamped + at, seq, std::move(to));
}

CreditRequest Set(const char* a, uint32_t credit, uint64_t epoch,
                  uint64_t lease) {
  CreditRequest r;
  r.op = CreditRequest::Op::kSet;
  r.address = A(a);
  r.credit = credit;
  r.epoch_ns = epoch;
  r.lease_ns = lease;
  return r;
}

CreditRequest Del(const char* a) {
  CreditRequest r;
  r.op = CreditRequest::Op::kDel;
  r.address = A(a);
  return r;
}

TEST(ToRequestsTest, GrantSetsEveryAddress) {
  // Grant(): epoch 10 ms, lease 3 epochs.
  const auto m = Grant(1, 5, 1, 1500, {A("10.0.0.1"), A("fd00::1")});
  EXPECT_EQ(ToRequests(m), (std::vector<CreditRequest>{
                               Set("10.0.0.1", 1500, 10 * kMs, 30 * kMs),
                               Set("fd00::1", 1500, 10 * kMs, 30 * kMs)}));
}

TEST(ToRequestsTest, ReleaseDeletesEveryAddress) {
  const auto m = Release(1, 5, 2, {A("10.0.0.1"), A("fd00::1")});
  EXPECT_EQ(ToRequests(m),
            (std::vector<CreditRequest>{Del("10.0.0.1"), Del("fd00::1")}));
}

TEST(ToRequestsTest, CreditZeroAndClampedToU32) {
  auto m = Grant(1, 5, 1, 0, {A("10.0.0.1")});
  EXPECT_EQ(ToRequests(m)[0].credit, 0u);
  m.credit = uint64_t{1} << 40;
  EXPECT_EQ(ToRequests(m)[0].credit, PARQ_CREDIT_MAX);
  m.credit = PARQ_CREDIT_MAX;
  EXPECT_EQ(ToRequests(m)[0].credit, PARQ_CREDIT_MAX);
}

TEST(ToRequestsTest, LeaseIsEpochsTimesEpochClampedToTheKernelsMax) {
  auto m = Grant(1, 5, 1, 100, {A("10.0.0.1")});
  m.epoch_us = 100;  // the wire's minimum
  m.lease = 1;
  EXPECT_EQ(ToRequests(m)[0].lease_ns, 100'000u);
  EXPECT_EQ(*ToRequests(m)[0].epoch_ns, 100'000u);
  m.epoch_us = 1'000'000;  // 1 s
  m.lease = 65535;         // 18 h > PARQ_LEASE_MAX
  EXPECT_EQ(ToRequests(m)[0].lease_ns, PARQ_LEASE_MAX);
}

TEST(ToRequestsTest, EpochBeyondTheKernelsMaxKeepsTheRate) {
  auto m = Grant(1, 5, 1, 60'000, {A("10.0.0.1")});
  m.epoch_us = 60'000'000;  // 60 s, the wire's maximum
  m.lease = 3;
  const CreditRequest r = ToRequests(m)[0];
  EXPECT_EQ(*r.epoch_ns, PARQ_EPOCH_MAX);  // 10 s
  EXPECT_EQ(r.credit, 10'000u);            // 60000 per 60 s = 10000 per 10 s
  EXPECT_EQ(r.lease_ns, 180 * 1'000'000'000ull);  // 3 x 60 s, unscaled
  m.credit = 5;                                   // rounds down
  EXPECT_EQ(ToRequests(m)[0].credit, 0u);
}

class SenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Inbox::Create(TestKeys(),
                           {PeerConfig{1, {A("10.0.0.1"), A("fd00::1")}}},
                           {500 * kMs, 0});
    ASSERT_TRUE(r.ok()) << r.error();
    sender_.emplace(std::move(r.value()), kernel_,
                    [this](const std::string& l) { log_.push_back(l); });
  }

  Outcome Rx(const std::vector<uint8_t>& d, const char* from = "10.0.0.1",
             uint64_t now = 1000) {
    return sender_->Handle(d, A(from), Recipient(), now, kStamped + now);
  }

  FakeKernel kernel_;
  std::optional<SendingRole> sender_;
  std::vector<std::string> log_;
};

TEST_F(SenderTest, AcceptedGrantAndReleaseReachTheKernel) {
  EXPECT_TRUE(Rx(Bytes(Grant(1, 5, 1, 3000, {A("10.0.0.1")}))).accepted);
  EXPECT_TRUE(Rx(Bytes(Release(1, 5, 2, {A("10.0.0.1")}))).accepted);
  EXPECT_EQ(kernel_.requests,
            (std::vector<CreditRequest>{
                Set("10.0.0.1", 3000, 10 * kMs, 30 * kMs), Del("10.0.0.1")}));
  EXPECT_EQ(sender_->kernel_counters().set_requests, 1u);
  EXPECT_EQ(sender_->kernel_counters().del_requests, 1u);
  EXPECT_TRUE(log_.empty());
}

TEST_F(SenderTest, DroppedMessagesReachNothing) {
  const auto good = Bytes(Grant(1, 5, 1, 3000, {A("10.0.0.1")}));
  EXPECT_FALSE(Rx(Bytes(Grant(1, 5, 1, 3000, {A("10.0.0.1")}), MakeKey(9)))
                   .accepted);  // forged
  EXPECT_FALSE(
      Rx(Bytes(Grant(2, 5, 1, 3000, {A("10.0.0.1")}))).accepted);  // unknown
  EXPECT_FALSE(Rx(good, "10.0.0.9").accepted);             // wrong source
  EXPECT_FALSE(Rx(std::vector<uint8_t>(10, 0)).accepted);  // malformed
  EXPECT_TRUE(kernel_.requests.empty());
  EXPECT_TRUE(Rx(good).accepted);
  EXPECT_FALSE(Rx(good).accepted);  // replayed
  EXPECT_FALSE(
      Rx(Bytes(Grant(1, 0, 2, 1, {A("10.0.0.1")})), "10.0.0.1", 600 * kMs)
          .accepted);  // stamped 600 ms before it arrived
  EXPECT_EQ(kernel_.requests.size(), 1u);
  const Counters& c = sender_->inbox().counters();
  EXPECT_EQ(c.received, 7u);
  EXPECT_EQ(c.accepted, 1u);
  EXPECT_EQ(c.drop(DropReason::kBadMac), 1u);
  EXPECT_EQ(c.drop(DropReason::kUnknownPeer), 1u);
  EXPECT_EQ(c.drop(DropReason::kWrongSource), 1u);
  EXPECT_EQ(c.drop(DropReason::kMalformed), 1u);
  EXPECT_EQ(c.drop(DropReason::kDuplicate), 1u);
  EXPECT_EQ(c.drop(DropReason::kTimeBehind), 1u);
}

TEST_F(SenderTest, KernelErrorsAreCountedAndLogged) {
  kernel_.errors.push_back(KernelError{ERANGE, "parq: epoch out of range"});
  EXPECT_TRUE(Rx(Bytes(Grant(1, 5, 1, 3000, {A("10.0.0.1")}))).accepted);
  EXPECT_EQ(sender_->kernel_counters().set_errors, 1u);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_EQ(log_[0],
            "parqd: the kernel refused PARQ_CMD_CREDIT_SET for 10.0.0.1 "
            "(peer 1): parq: epoch out of range (Numerical result out of "
            "range)");
  // A RELEASE of an entry that already expired is fine.
  kernel_.errors.push_back(KernelError{ENOENT, "parq: no credit entry"});
  EXPECT_TRUE(Rx(Bytes(Release(1, 5, 2, {A("10.0.0.1")}))).accepted);
  EXPECT_EQ(sender_->kernel_counters().del_errors, 0u);
  kernel_.errors.push_back(KernelError{EPERM, ""});
  EXPECT_TRUE(Rx(Bytes(Release(1, 5, 3, {A("10.0.0.1")}))).accepted);
  EXPECT_EQ(sender_->kernel_counters().del_errors, 1u);
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(SenderTest, KernelErrorLogIsRateLimited) {
  for (uint64_t i = 1; i <= 30; i++) {
    kernel_.errors.push_back(KernelError{EPERM, ""});
    EXPECT_TRUE(
        Rx(Bytes(Grant(1, 5, i, 1, {A("10.0.0.1")})), "10.0.0.1", 1000 + i)
            .accepted);
  }
  EXPECT_EQ(sender_->kernel_counters().set_errors, 30u);
  EXPECT_EQ(log_.size(), Inbox::kLogBurst);
}

TEST_F(SenderTest, MetricsIncludeKernelCounters) {
  kernel_.errors.push_back(KernelError{EPERM, ""});
  EXPECT_TRUE(Rx(Bytes(Grant(1, 5, 1, 3000, {A("10.0.0.1")}))).accepted);
  PromText text;
  sender_->Metrics(text);
  const std::string& m = text.text();
  EXPECT_TRUE(PromWellFormed(m));
  for (const std::string& f : PromFamilies(m))
    EXPECT_TRUE(PromDocumented(f)) << f << " is not in Documentation/";
  EXPECT_NE(m.find("parqd_messages_accepted_total 1\n"), std::string::npos)
      << m;
  EXPECT_NE(m.find("parqd_kernel_requests_total{cmd=\"credit_set\"} 1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("parqd_kernel_errors_total{cmd=\"credit_set\"} 1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("parqd_kernel_errors_total{cmd=\"credit_del\"} 0\n"),
            std::string::npos)
      << m;
}

// ---- Key files under the unit -------------------------------------------

// The key `k` as a key file holds it.
std::string Hex(const Key& k) {
  std::string out;
  char b[3];
  for (uint8_t c : k.bytes()) {
    std::snprintf(b, sizeof(b), "%02x", c);
    out += b;
  }
  return out + "\n";
}

// A host's /etc/parq: parqd.toml naming key-file "cluster.key" beside it,
// and that key file.  A systemd credential directory as LoadCredential=
// leaves it, holding a copy of the key as it was at start: systemd 252
// (Debian 12) makes the copy when the service starts and does not refresh
// it on reload.  $CREDENTIALS_DIRECTORY names it, as under such a unit.
class KeyFileUnderTheUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(etc_.path().empty());
    ASSERT_FALSE(creds_.path().empty());
    config_ = etc_.path() + "/parqd.toml";
    key_ = etc_.path() + "/cluster.key";
    std::ofstream(config_) << "interface = \"eth0\"\nnode-id = 1\n"
                              "key-file = \"cluster.key\"\n"
                              "[[peer]]\nid = 2\naddresses = [\"10.0.0.2\"]\n";
    WriteKey(key_, MakeKey(1), 0600);
    WriteKey(creds_.path() + "/cluster.key", MakeKey(1), 0400);
    setenv("CREDENTIALS_DIRECTORY", creds_.path().c_str(), 1);
  }
  void TearDown() override { unsetenv("CREDENTIALS_DIRECTORY"); }

  static void WriteKey(const std::string& path, const Key& k, mode_t mode) {
    unlink(path.c_str());
    std::ofstream(path) << Hex(k);
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }

  // The configuration and its keys, as parqd loads them at start.
  Result<KeyRing, std::string> Load() {
    auto c = LoadConfig(config_);
    if (!c.ok())
      return Err{c.error()};
    return LoadKeys(c.value());
  }

  TempDir etc_{"parqd_etc"};
  TempDir creds_{"parqd_credentials"};
  std::string config_;
  std::string key_;
};

// The key file that matters is the one an operator wrote: made world-
// readable, it is refused at start, with its own path and the fix in the
// message, whatever credential copy of it systemd made.
TEST_F(KeyFileUnderTheUnit, AWorldReadableKeyFileIsRefused) {
  ASSERT_EQ(chmod(key_.c_str(), 0644), 0);
  auto keys = Load();
  ASSERT_FALSE(keys.ok()) << "a world-readable " << key_ << " was accepted";
  EXPECT_NE(keys.error().find("key file " + key_ +
                              ": its mode 0644 lets "
                              "others access it; run: chmod 0640 " +
                              key_),
            std::string::npos)
      << keys.error();
}

// A key rotated on disk, then SIGHUP (systemctl reload parqd): the
// messages under the new key are accepted from then on, those under the
// old one are not.
TEST_F(KeyFileUnderTheUnit, ARotatedKeyTakesEffectAtTheReload) {
  auto c = LoadConfig(config_);
  ASSERT_TRUE(c.ok()) << c.error();
  auto keys = LoadKeys(c.value());
  ASSERT_TRUE(keys.ok()) << keys.error();
  auto in =
      Inbox::Create(std::move(keys.value()), c.value().peers, {500 * kMs, 0});
  ASSERT_TRUE(in.ok()) << in.error();
  FakeKernel kernel;
  SendingRole sender(std::move(in.value()), kernel);
  auto rx = [&](uint64_t seq, const Key& k) {
    return sender.Handle(Bytes(Grant(2, 0, seq, 100, {A("10.0.0.2")}), k),
                         A("10.0.0.2"), Recipient(), 1000, kStamped + 1000);
  };
  ASSERT_TRUE(rx(1, MakeKey(1)).accepted);

  WriteKey(key_, MakeKey(2), 0600);
  const Config running = Reload(
      c.value(), [this] { return LoadConfig(config_); }, sender, nullptr);
  EXPECT_EQ(running.key_file, key_);
  const Outcome fresh = rx(2, MakeKey(2));
  EXPECT_TRUE(fresh.accepted)
      << "the rotated key was not in effect after the reload: "
      << Name(fresh.reason);
  EXPECT_EQ(rx(3, MakeKey(1)).reason, DropReason::kBadMac);
}

}  // namespace
