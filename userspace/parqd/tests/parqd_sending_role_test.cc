// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of sending_role.cc: from a verified message to the kernel's credit
// requests, and that nothing reaches the kernel for a dropped message.

#include <gtest/gtest.h>

#include <linux/parq.h>

#include <cerrno>
#include <string>
#include <vector>

#include "fake_kernel.h"
#include "prom_check.h"
#include "sending_role.h"
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

}  // namespace
