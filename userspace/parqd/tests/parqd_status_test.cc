// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of status.cc (parqd's status socket: the "peers" reply),
// request_server.cc with admission_client.cc's SocketCall (one request,
// one reply of any size, through a real Unix socket) and ctl.cc's
// FormatPeers (parqctl peers).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_client.h"
#include "admission/request_server.h"
#include "ctl/ctl.h"
#include "daemon/status.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using nlohmann::json;
using parq::parqd::test::A;
using parq::parqd::test::Bytes;
using parq::parqd::test::MakeKey;
using parq::parqd::test::Recipient;
using parq::parqd::test::TestKeys;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'800'000'000'000'000'000ULL;

class StatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Inbox::Create(
        TestKeys(),
        {PeerConfig{2, {A("10.0.0.2")}}, PeerConfig{3, {A("10.0.0.3")}}},
        {500 * kMs, kT0 - 1000 * kMs});
    ASSERT_TRUE(r.ok()) << r.error();
    rx_.emplace(std::move(r.value()));
    src_ = {1, {{2, "n2"}}, &*rx_, nullptr};
  }

  std::optional<Inbox> rx_;
  StatusSources src_;
};

TEST_F(StatusTest, PeersWithoutTheReceivingRole) {
  const auto g = parq::parqd::test::Grant(2, kT0, 9, 1500, {A("10.0.0.2")});
  ASSERT_TRUE(rx_->Receive(Bytes(g), A("10.0.0.2"), Recipient(), 10 * kMs, kT0)
                  .accepted);
  rx_->Receive(Bytes(g, MakeKey(7)), A("10.0.0.2"), Recipient(), 11 * kMs, kT0);

  const json j = PeersJson(src_, 12 * kMs);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["node"], 1);
  EXPECT_EQ(j["receiver"], false);
  ASSERT_EQ(j["peers"].size(), 2u);
  const json& p = j["peers"][0];
  EXPECT_EQ(p["id"], 2);
  EXPECT_EQ(p["name"], "n2");
  EXPECT_EQ(p["addresses"], json::array({"10.0.0.2"}));
  EXPECT_EQ(p["accepted"], 1);
  EXPECT_EQ(p["last_accepted"]["type"], "grant");
  EXPECT_EQ(p["last_accepted"]["sequence"], 9);
  EXPECT_EQ(p["last_accepted"]["time_ns"], kT0);
  EXPECT_EQ(p["last_accepted"]["age_ns"], 2 * kMs);
  EXPECT_EQ(p["dropped"]["bad_mac"], 1);
  EXPECT_EQ(p["dropped"]["duplicate"], 0);
  // Every reason that can name a configured peer, zeros included.
  EXPECT_EQ(p["dropped"].size(), kDropReasonCount - 1);
  EXPECT_FALSE(p["dropped"].contains("unknown_peer"));
  ASSERT_EQ(p["held"].size(), 1u);
  EXPECT_EQ(p["held"][0]["address"], "10.0.0.2");
  EXPECT_EQ(p["held"][0]["credit"], 1500);
  EXPECT_TRUE(p["granted"].is_null());
  EXPECT_TRUE(p["last_sent"].is_null());
  const json& q = j["peers"][1];
  EXPECT_EQ(q["id"], 3);
  EXPECT_TRUE(q["name"].is_null());
  EXPECT_TRUE(q["last_accepted"].is_null());
  EXPECT_TRUE(q["held"].empty());
}

TEST_F(StatusTest, BadRequestsGetAnError) {
  for (const char* req : {"", "[1]", "{\"op\": 3}", "{}", "{\"op\": \"x\"}"}) {
    const json r = json::parse(HandleStatusRequest(src_, req, 0));
    EXPECT_EQ(r["ok"], false) << req;
    EXPECT_TRUE(r["error"].is_string()) << req;
  }
  EXPECT_EQ(
      json::parse(HandleStatusRequest(src_, R"({"op":"peers"})", 0))["ok"],
      true);
}

TEST_F(StatusTest, FormatPeersAsText) {
  const auto g = parq::parqd::test::Grant(2, kT0, 9, 1500, {A("10.0.0.2")});
  ASSERT_TRUE(rx_->Receive(Bytes(g), A("10.0.0.2"), Recipient(), 10 * kMs, kT0)
                  .accepted);
  rx_->Receive(Bytes(g, MakeKey(7)), A("10.0.0.2"), Recipient(), 11 * kMs, kT0);
  const json j = PeersJson(src_, 12 * kMs);
  auto t = FormatPeers(j, false);
  ASSERT_TRUE(t.ok()) << t.error();
  const std::string& text = t.value().text;
  EXPECT_NE(text.find("node 1: 2 peer(s), receiving role off"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grant 2ms ago"), std::string::npos) << text;
  EXPECT_NE(text.find("1500 B/"), std::string::npos) << text;
  EXPECT_NE(text.find("bad_mac 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("GRANTED"), std::string::npos) << text;  // no role
  auto js = FormatPeers(j, true);
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(json::parse(js.value().text), j);
  EXPECT_FALSE(FormatPeers(json{{"ok", true}}, false).ok());
}

// A reply larger than the 64 KiB a request may have gets through whole.
TEST(RequestServer, OneRequestOneReplyOfAnySize) {
  const std::string path =
      testing::TempDir() + "status-" + std::to_string(getpid()) + ".sock";
  auto s = RequestServer::Open(path, 0660, "status socket");
  ASSERT_TRUE(s.ok()) << s.error();
  const std::string big(200'000, 'x');
  std::string asked;
  const RequestHandler handle = [&](const Asker& who, std::string_view req) {
    asked = std::string(req);
    EXPECT_EQ(who.uid, getuid());
    return json{{"ok", true}, {"big", big}}.dump();
  };
  auto reply = std::async(std::launch::async, [&] {
    return SocketCall(path, {{"op", "peers"}}, 5000, {"status socket", "?"});
  });
  for (int i = 0; i < 5000 && reply.wait_for(std::chrono::milliseconds(1)) !=
                                  std::future_status::ready;
       ++i)
    s.value().Serve(handle, 0);
  auto r = reply.get();
  ASSERT_TRUE(r.ok()) << r.error().why;
  EXPECT_EQ(json::parse(asked), (json{{"op", "peers"}}));
  EXPECT_EQ(r.value()["big"].get<std::string>().size(), big.size());

  auto none = SocketCall(path + ".none", {{"op", "peers"}}, 100,
                         {"status socket", "is parqd running?"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().why.find("cannot reach parqd's status socket"),
            std::string::npos)
      << none.error().why;
  EXPECT_NE(none.error().why.find("is parqd running?"), std::string::npos);
}

}  // namespace
