// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of wire.cc: the byte layout, round trips, every decode error,
// every authentication failure, and Encode's validation.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proto/wire.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Bytes;
using parq::parqd::test::Grant;
using parq::parqd::test::MakeKey;
using parq::parqd::test::Recipient;
using parq::parqd::test::Release;
using parq::parqd::test::Resign;
using parq::parqd::test::TestKey;
using wire::WireError;

wire::Message Sample() {
  auto m = Grant(0x0102030405060708, 0x1112131415161718, 0x2122232425262728,
                 0x3132333435363738, {A("192.0.2.1"), A("2001:db8::1")});
  m.key_id = 0x41424344;
  return m;
}

WireError DecodeError(const std::vector<uint8_t>& d) {
  auto r = wire::Decode(d, TestKey(), Recipient());
  EXPECT_FALSE(r.ok());
  return r.ok() ? WireError::kCryptoFailure : r.error();
}

// ---- ComputeMac --------------------------------------------------------

TEST(Mac, MatchesRfc4231TestCase6) {
  // HMAC-SHA-256 with a key longer than the block size.
  const std::vector<uint8_t> key(131, 0xaa);
  const std::string data =
      "Test Using Larger Than Block-Size Key - Hash Key First";
  auto mac = wire::ComputeMac(
      Key::FromBytes(key).value(),
      std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  ASSERT_TRUE(mac.ok());
  const wire::Mac want = {0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f,
                          0x0d, 0x8a, 0x26, 0xaa, 0xcb, 0xf5, 0xb7, 0x7f,
                          0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28, 0xc5, 0x14,
                          0x05, 0x46, 0x04, 0x0f, 0x0e, 0xe3, 0x7f, 0x54};
  EXPECT_EQ(mac.value(), want);
}

// ---- Layout ------------------------------------------------------------

TEST(Layout, SizesAreAsDocumented) {
  EXPECT_EQ(wire::kMinMessageBytes, 116u);
  EXPECT_EQ(wire::kMaxMessageBytes, 416u);
  EXPECT_EQ(Bytes(Sample()).size(), 64u + 2 * 20 + 32);
}

TEST(Layout, FieldsAreBigEndianAtTheirOffsets) {
  const auto d = Bytes(Sample());
  const std::vector<uint8_t> header = {
      'P',  'R',  'Q',  'D',  2,    1,    0,    2,     // magic .. count
      1,    2,    3,    4,    5,    6,    7,    8,     // sender
      0x41, 0x42, 0x43, 0x44,                          // key id
      0x00, 0x00, 0x27, 0x10,                          // epoch 10000 us
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // time
      0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,  // sequence
      0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,  // credit
      0x00, 0x03,                                      // lease 3
      0,    0,    0,    0,    0,    0,    0,    0,     // reserved
      0,    0,    0,    0,    0,    0};
  EXPECT_EQ(std::vector<uint8_t>(d.begin(), d.begin() + 64), header);
  const std::vector<uint8_t> v4 = {4, 0, 0, 0, 192, 0, 2, 1, 0, 0,
                                   0, 0, 0, 0, 0,   0, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(d.begin() + 64, d.begin() + 84), v4);
  const std::vector<uint8_t> v6 = {6, 0, 0, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 0,
                                   0, 0, 0, 0, 0,    0,    0,    0,    0, 1};
  EXPECT_EQ(std::vector<uint8_t>(d.begin() + 84, d.begin() + 104), v6);
  // The MAC covers the message and then the recipient, 198.51.100.7, as an
  // address entry.
  std::vector<uint8_t> covered(d.begin(), d.begin() + 104);
  const std::vector<uint8_t> recipient = {4, 0, 0, 0, 198, 51, 100, 7, 0, 0,
                                          0, 0, 0, 0, 0,   0,  0,   0, 0, 0};
  covered.insert(covered.end(), recipient.begin(), recipient.end());
  auto mac = wire::ComputeMac(TestKey(), covered);
  EXPECT_EQ(std::vector<uint8_t>(d.begin() + 104, d.end()),
            std::vector<uint8_t>(mac.value().begin(), mac.value().end()));
}

// Documentation/parqd-protocol.md's header table: every field's offset and
// size, the version, and where the address entries and the MAC start.
TEST(Layout, ProtocolDocumentMatchesTheCode) {
  std::ifstream in(PARQ_DOC_DIR "/parqd-protocol.md");
  ASSERT_TRUE(in) << PARQ_DOC_DIR "/parqd-protocol.md";
  const std::string doc((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  const size_t start = doc.find("### Header\n");
  ASSERT_NE(start, std::string::npos);
  const size_t end = doc.find("\n###", start + 1);
  std::istringstream table(doc.substr(start, end - start));
  // field -> {offset, size, rules}
  std::map<std::string, std::tuple<size_t, size_t, std::string>> rows;
  for (std::string line; std::getline(table, line);) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, '|');) {
      const size_t b = cell.find_first_not_of(' ');
      const size_t e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() == 5 && !cells[1].empty() &&
        std::isdigit(static_cast<unsigned char>(cells[1][0])) != 0)
      rows[cells[3]] = {std::stoul(cells[1]), std::stoul(cells[2]), cells[4]};
  }
  const std::map<std::string, std::pair<size_t, size_t>> want = {
      {"magic", {wire::kOffMagic, 4}},
      {"version", {wire::kOffVersion, 1}},
      {"type", {wire::kOffType, 1}},
      {"flags", {wire::kOffFlags, 1}},
      {"count", {wire::kOffCount, 1}},
      {"sender", {wire::kOffSender, 8}},
      {"key id", {wire::kOffKeyId, 4}},
      {"epoch length", {wire::kOffEpochUs, 4}},
      {"time", {wire::kOffTime, 8}},
      {"sequence", {wire::kOffSeq, 8}},
      {"credit", {wire::kOffCredit, 8}},
      {"lease", {wire::kOffLease, 2}},
      {"reserved",
       {wire::kOffReserved, wire::kHeaderBytes - wire::kOffReserved}},
  };
  EXPECT_EQ(rows.size(), want.size());
  for (const auto& [field, at] : want) {
    ASSERT_TRUE(rows.count(field)) << field;
    EXPECT_EQ(std::get<0>(rows[field]), at.first) << field;
    EXPECT_EQ(std::get<1>(rows[field]), at.second) << field;
  }
  EXPECT_EQ(std::get<2>(rows["version"]), std::to_string(wire::kVersion));
  const std::string entries =
      "### Address entry (" + std::to_string(wire::kAddressBytes) +
      " bytes each, from offset " + std::to_string(wire::kHeaderBytes) + ")";
  EXPECT_NE(doc.find(entries), std::string::npos) << entries;
  const std::string mac = "### MAC (" + std::to_string(wire::kMacBytes) +
                          " bytes, at offset " +
                          std::to_string(wire::kHeaderBytes) + " + " +
                          std::to_string(wire::kAddressBytes) + " × count)";
  EXPECT_NE(doc.find(mac), std::string::npos) << mac;
}

// ---- Round trips -------------------------------------------------------

TEST(RoundTrip, Grant) {
  const auto m = Sample();
  auto r = wire::Decode(Bytes(m), TestKey(), Recipient());
  ASSERT_TRUE(r.ok()) << wire::Name(r.error());
  EXPECT_EQ(r.value(), m);
}

TEST(RoundTrip, Release) {
  const auto m = Release(7, 8, 9, {A("fd00::7")});
  auto r = wire::Decode(Bytes(m), TestKey(), Recipient());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), m);
}

TEST(RoundTrip, ExtremeValues) {
  auto m = Grant(UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                 {A("255.255.255.255")});
  m.epoch_us = wire::kMaxEpochUs;
  m.lease = UINT16_MAX;
  auto r = wire::Decode(Bytes(m), TestKey(), Recipient());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), m);

  m = Grant(0, 0, 1, 0, {A("0.0.0.0")});  // credit 0: stop
  m.epoch_us = wire::kMinEpochUs;
  m.lease = 1;
  r = wire::Decode(Bytes(m), TestKey(), Recipient());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), m);
}

TEST(RoundTrip, MaximumAddressCount) {
  std::vector<Address> to;
  for (uint8_t i = 0; i < wire::kMaxAddresses; i++)
    to.push_back(i % 2 ? Address::V4({10, 0, 0, i})
                       : Address::V6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                      0, 0, i}));
  const auto m = Grant(1, 2, 3, 4, to);
  const auto d = Bytes(m);
  EXPECT_EQ(d.size(), wire::kMaxMessageBytes);
  auto r = wire::Decode(d, TestKey(), Recipient());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), m);
}

TEST(RoundTrip, EncodeIsDeterministic) {
  EXPECT_EQ(Bytes(Sample()), Bytes(Sample()));
}

// ---- Framing errors, before the MAC ------------------------------------

TEST(DecodeFraming, EmptyAndShort) {
  EXPECT_EQ(DecodeError({}), WireError::kShort);
  auto d = Bytes(Grant(1, 1, 1, 1, {A("10.0.0.1")}));
  ASSERT_EQ(d.size(), wire::kMinMessageBytes);
  d.pop_back();
  EXPECT_EQ(DecodeError(d), WireError::kShort);
}

TEST(DecodeFraming, BadMagic) {
  auto d = Bytes(Sample());
  d[3] ^= 1;
  EXPECT_EQ(DecodeError(d), WireError::kBadMagic);
}

TEST(DecodeFraming, BadVersion) {
  for (uint8_t v : {0, 1, 3, 255}) {
    auto d = Bytes(Sample());
    d[wire::kOffVersion] = v;
    Resign(d);
    EXPECT_EQ(DecodeError(d), WireError::kBadVersion) << int{v};
  }
}

TEST(DecodeFraming, BadAddressCount) {
  for (uint8_t n : {0, 17, 255}) {
    auto d = Bytes(Sample());
    d[wire::kOffCount] = n;
    EXPECT_EQ(DecodeError(d), WireError::kBadAddressCount) << int{n};
  }
}

TEST(DecodeFraming, LengthShorterThanCountNeeds) {
  auto d = Bytes(Sample());  // 2 addresses
  d[wire::kOffCount] = 3;
  EXPECT_EQ(DecodeError(d), WireError::kBadLength);
}

TEST(DecodeFraming, TrailingBytes) {
  auto d = Bytes(Sample());
  d.push_back(0);
  EXPECT_EQ(DecodeError(d), WireError::kTrailingBytes);
  d = Bytes(Sample());
  d[wire::kOffCount] = 1;  // one address and 20 bytes too many
  EXPECT_EQ(DecodeError(d), WireError::kTrailingBytes);
}

// ---- Authentication ----------------------------------------------------

TEST(DecodeAuth, WrongKey) {
  const auto d = Bytes(Sample(), MakeKey(99));
  EXPECT_EQ(DecodeError(d), WireError::kBadMac);
}

TEST(DecodeAuth, KeyDifferingInItsLastByte) {
  std::vector<uint8_t> k(32, 5);
  const auto d = Bytes(Sample(), Key::FromBytes(k).value());
  k.back() ^= 1;
  EXPECT_FALSE(wire::Decode(d, Key::FromBytes(k).value(), Recipient()).ok());
}

TEST(DecodeAuth, LongerKeyWithSamePrefix) {
  const auto d = Bytes(Sample(), MakeKey(1, 32));
  auto r = wire::Decode(d, MakeKey(1, 33), Recipient());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kBadMac);
}

TEST(DecodeAuth, EveryFlippedBitIsRejected) {
  const auto good = Bytes(Sample());
  for (size_t i = 0; i < good.size(); i++) {
    for (int bit = 0; bit < 8; bit++) {
      auto d = good;
      d[i] ^= static_cast<uint8_t>(1 << bit);
      auto r = wire::Decode(d, TestKey(), Recipient());
      ASSERT_FALSE(r.ok()) << "byte " << i << " bit " << bit;
      // Outside the framing fields, only the MAC can catch it.
      const bool framing = i < 8 && i != wire::kOffType && i != wire::kOffFlags;
      if (!framing) {
        EXPECT_EQ(r.error(), WireError::kBadMac) << "byte " << i;
      }
    }
  }
}

// A message decodes at the address it was made for only: not at another
// address, nor at an address of the other family with the same bytes.
TEST(DecodeAuth, AnotherRecipientIsRejected) {
  const auto d = Bytes(Sample(), TestKey(), A("192.0.2.7"));
  EXPECT_TRUE(wire::Decode(d, TestKey(), A("192.0.2.7")).ok());
  for (const char* other : {"192.0.2.8", "::ffff:192.0.2.7",
                            "c000:207::", "2001:db8::7", "0.0.0.0"}) {
    auto r = wire::Decode(d, TestKey(), A(other));
    ASSERT_FALSE(r.ok()) << other;
    EXPECT_EQ(r.error(), WireError::kBadMac) << other;
  }
}

TEST(DecodeAuth, TruncatedMac) {
  auto d = Bytes(Sample());
  for (size_t cut = 1; cut <= wire::kMacBytes; cut++) {
    std::vector<uint8_t> t(d.begin(), d.end() - static_cast<ptrdiff_t>(cut));
    // Below the smallest message size it is merely short.
    EXPECT_EQ(DecodeError(t), t.size() < wire::kMinMessageBytes
                                  ? WireError::kShort
                                  : WireError::kBadLength)
        << cut;
  }
}

TEST(DecodeAuth, ZeroMac) {
  auto d = Bytes(Sample());
  std::fill(d.end() - wire::kMacBytes, d.end(), 0);
  EXPECT_EQ(DecodeError(d), WireError::kBadMac);
}

TEST(DecodeAuth, MacFromAnotherMessage) {
  auto d = Bytes(Sample());
  auto other = Sample();
  other.sequence++;
  const auto o = Bytes(other);
  std::copy(o.end() - wire::kMacBytes, o.end(), d.end() - wire::kMacBytes);
  EXPECT_EQ(DecodeError(d), WireError::kBadMac);
}

// ---- Field errors, after the MAC ---------------------------------------

struct FieldCase {
  const char* name;
  size_t offset;
  uint8_t value;
  WireError want;
};

class DecodeField : public ::testing::TestWithParam<FieldCase> {};

TEST_P(DecodeField, IsRejected) {
  const FieldCase& c = GetParam();
  auto d = Bytes(Sample());
  d[c.offset] = c.value;
  EXPECT_EQ(DecodeError(d), WireError::kBadMac) << "unsigned";
  Resign(d);
  EXPECT_EQ(DecodeError(d), c.want);
}

constexpr size_t kAddr0 = wire::kHeaderBytes;
constexpr size_t kAddr1 = wire::kHeaderBytes + wire::kAddressBytes;

INSTANTIATE_TEST_SUITE_P(
    AllFields, DecodeField,
    ::testing::Values(
        FieldCase{"type0", wire::kOffType, 0, WireError::kBadType},
        FieldCase{"type3", wire::kOffType, 3, WireError::kBadType},
        FieldCase{"flags", wire::kOffFlags, 0x80, WireError::kBadFlags},
        FieldCase{"reserved_hi", wire::kOffReserved, 1,
                  WireError::kBadReserved},
        FieldCase{"reserved_lo", wire::kOffReserved + 1, 1,
                  WireError::kBadReserved},
        FieldCase{"reserved_last", wire::kHeaderBytes - 1, 0x80,
                  WireError::kBadReserved},
        FieldCase{"family0", kAddr0, 0, WireError::kBadAddressFamily},
        FieldCase{"family2", kAddr0, 2, WireError::kBadAddressFamily},
        FieldCase{"family10", kAddr1, 10, WireError::kBadAddressFamily},
        FieldCase{"addr_reserved", kAddr0 + 2, 1, WireError::kBadReserved},
        FieldCase{"v4_padding", kAddr0 + 8, 1, WireError::kBadAddress},
        FieldCase{"v4_padding_last", kAddr0 + 19, 1, WireError::kBadAddress}),
    [](const auto& info) { return std::string(info.param.name); });

std::vector<uint8_t> Resigned(const wire::Message& valid,
                              void (*edit)(std::vector<uint8_t>&)) {
  auto d = Bytes(valid);
  edit(d);
  Resign(d);
  return d;
}

TEST(DecodeFields, SequenceZero) {
  auto d = Resigned(
      Sample(), [](auto& d) { std::fill_n(d.begin() + wire::kOffSeq, 8, 0); });
  EXPECT_EQ(DecodeError(d), WireError::kBadSequence);
}

TEST(DecodeFields, KeyIdZero) {
  auto d = Resigned(Sample(), [](auto& d) {
    std::fill_n(d.begin() + wire::kOffKeyId, 4, 0);
  });
  EXPECT_EQ(DecodeError(d), WireError::kBadKeyId);
}

TEST(Peek, ReadsSenderAndKeyIdOfAnUnauthenticatedMessage) {
  auto d = Bytes(Sample());
  d.back() ^= 1;  // the MAC is not checked
  auto h = wire::Peek(d);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.value().sender, 0x0102030405060708u);
  EXPECT_EQ(h.value().key_id, 0x41424344u);
  d.pop_back();
  EXPECT_EQ(wire::Peek(d).error(), WireError::kBadLength);
}

TEST(DecodeFields, EpochLengthBounds) {
  for (uint32_t us :
       {0u, wire::kMinEpochUs - 1, wire::kMaxEpochUs + 1, UINT32_MAX}) {
    auto d = Bytes(Sample());
    for (int i = 0; i < 4; i++)
      d[wire::kOffEpochUs + i] = static_cast<uint8_t>(us >> (24 - 8 * i));
    Resign(d);
    EXPECT_EQ(DecodeError(d), WireError::kBadEpochLength) << us;
  }
}

TEST(DecodeFields, GrantWithoutLease) {
  auto d = Resigned(Sample(), [](auto& d) {
    d[wire::kOffLease] = 0;
    d[wire::kOffLease + 1] = 0;
  });
  EXPECT_EQ(DecodeError(d), WireError::kBadLease);
}

TEST(DecodeFields, ReleaseWithLeaseOrCredit) {
  const auto rel = Release(1, 2, 3, {A("10.0.0.1")});
  auto d = Resigned(rel, [](auto& d) { d[wire::kOffLease + 1] = 1; });
  EXPECT_EQ(DecodeError(d), WireError::kBadLease);
  d = Resigned(rel, [](auto& d) { d[wire::kOffCredit + 7] = 1; });
  EXPECT_EQ(DecodeError(d), WireError::kBadCredit);
}

TEST(DecodeFields, DuplicateAddress) {
  auto d = Bytes(Grant(1, 2, 3, 4, {A("10.0.0.1"), A("10.0.0.2")}));
  d[kAddr1 + 7] = 1;  // 10.0.0.2 -> 10.0.0.1
  Resign(d);
  EXPECT_EQ(DecodeError(d), WireError::kDuplicateAddress);
}

TEST(DecodeFields, SameBytesInOtherFamiliesAreDistinct) {
  // ::a00:1 and 10.0.0.1 differ; the decoder must not call them duplicates.
  auto m = Grant(1, 2, 3, 4, {A("10.0.0.1"), A("::a00:1")});
  auto r = wire::Decode(Bytes(m), TestKey(), Recipient());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), m);
}

// ---- Encode validation -------------------------------------------------

WireError EncodeError(const wire::Message& m) {
  auto r = wire::Encode(m, TestKey(), Recipient());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(wire::Validate(m).ok(), r.ok());
  return r.ok() ? WireError::kCryptoFailure : r.error();
}

TEST(Encode, RefusesWhatDecodeWouldRefuse) {
  auto m = Sample();
  m.addresses.clear();
  EXPECT_EQ(EncodeError(m), WireError::kBadAddressCount);
  m = Sample();
  m.addresses.resize(wire::kMaxAddresses + 1);
  EXPECT_EQ(EncodeError(m), WireError::kBadAddressCount);
  m = Sample();
  m.type = static_cast<wire::Type>(9);
  EXPECT_EQ(EncodeError(m), WireError::kBadType);
  m = Sample();
  m.sequence = 0;
  EXPECT_EQ(EncodeError(m), WireError::kBadSequence);
  m = Sample();
  m.key_id = 0;
  EXPECT_EQ(EncodeError(m), WireError::kBadKeyId);
  m = Sample();
  m.epoch_us = 99;
  EXPECT_EQ(EncodeError(m), WireError::kBadEpochLength);
  m = Sample();
  m.lease = 0;
  EXPECT_EQ(EncodeError(m), WireError::kBadLease);
  m = Release(1, 2, 3, {A("10.0.0.1")});
  m.credit = 1;
  EXPECT_EQ(EncodeError(m), WireError::kBadCredit);
  m = Sample();
  m.addresses[0].family = static_cast<Family>(5);
  EXPECT_EQ(EncodeError(m), WireError::kBadAddressFamily);
  m = Sample();
  m.addresses[0].bytes[15] = 1;  // IPv4 with padding
  EXPECT_EQ(EncodeError(m), WireError::kBadAddress);
  m = Sample();
  m.addresses.push_back(m.addresses[0]);
  EXPECT_EQ(EncodeError(m), WireError::kDuplicateAddress);
}

TEST(Names, AreUniqueAndSnakeCase) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < wire::kWireErrorCount; i++) {
    const auto n = wire::Name(static_cast<WireError>(i));
    EXPECT_TRUE(seen.insert(n).second) << n;
    EXPECT_EQ(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"),
              std::string_view::npos)
        << n;
  }
}

// ---- scripts/parqlab/credits.py ----------------------------------------

// The hex of `bytes`.
std::string Hex(std::span<const uint8_t> bytes) {
  std::string out;
  char b[3];
  for (uint8_t c : bytes) {
    std::snprintf(b, sizeof(b), "%02x", c);
    out += b;
  }
  return out;
}

// The selftests build their messages with scripts/parqlab/credits.py, which
// follows Documentation/parqd-protocol.md on its own: it must make the same
// bytes as Encode(), MAC and recipient included, for both families.
TEST(PythonEncoder, MakesTheSameBytes) {
  if (std::system("python3 -c '' 2>/dev/null") != 0)
    GTEST_SKIP() << "no python3";
  const std::string script =
      "import sys; sys.path.insert(0, '" PARQ_DOC_DIR
      "/../scripts'); from parqlab import credits as c; "
      "k = bytes(range(1, 33)); "
      "print(c.grant(k, 0x0102030405060708, 0x1112131415161718, "
      "0x2122232425262728, 0x3132333435363738, ['192.0.2.1', '2001:db8::1'], "
      "epoch_us=10000, lease=3, key_id=0x41424344, to='198.51.100.7').hex()); "
      "print(c.release(k, 7, 1800000000000000000, 9, ['10.0.0.7'], "
      "epoch_us=60000000, key_id=2, to='2001:db8::99').hex())";
  FILE* p = popen(("python3 -c \"" + script + "\"").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p))
    out += buf;
  ASSERT_EQ(pclose(p), 0) << out;

  std::vector<uint8_t> kb(32);
  for (size_t i = 0; i < kb.size(); i++)
    kb[i] = static_cast<uint8_t>(i + 1);
  const Key k = Key::FromBytes(kb).value();
  wire::Message g = Sample();
  wire::Message r = Release(7, 1'800'000'000'000'000'000, 9, {A("10.0.0.7")});
  r.epoch_us = 60'000'000;
  r.key_id = 2;
  const std::string want = Hex(Bytes(g, k, A("198.51.100.7"))) + "\n" +
                           Hex(Bytes(r, k, A("2001:db8::99"))) + "\n";
  EXPECT_EQ(out, want);
}

}  // namespace
