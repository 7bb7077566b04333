// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of key.cc: lengths, the hex file format, and the
// file checks with their messages.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proto/key.h"
#include "test_util.h"

namespace {

using parq::parqd::Key;

std::vector<uint8_t> Seq(size_t n, uint8_t first = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++)
    v[i] = static_cast<uint8_t>(first + i);
  return v;
}

class KeyFile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  void TearDown() override { ASSERT_TRUE(tmp_.Remove()); }
  std::string Write(const std::string& content, mode_t mode = 0600) {
    std::string path = dir_ + "/key";
    unlink(path.c_str());
    std::ofstream(path, std::ios::binary) << content;
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }
  parq::parqd::test::TempDir tmp_{"parqd_key_test"};
  const std::string dir_ = tmp_.path();
};

std::string Raw(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

TEST(KeyBytes, MinimumAndMaximumLength) {
  EXPECT_TRUE(Key::FromBytes(Seq(32)).ok());
  EXPECT_TRUE(Key::FromBytes(Seq(1024)).ok());
  auto r = Key::FromBytes(Seq(31));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("31 bytes"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("at least 32"), std::string::npos) << r.error();
  EXPECT_FALSE(Key::FromBytes(Seq(1025)).ok());
  EXPECT_FALSE(Key::FromBytes({}).ok());
}

TEST(KeyBytes, KeepsTheBytes) {
  const auto v = Seq(40, 3);
  auto k = Key::FromBytes(v);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(
      std::vector<uint8_t>(k.value().bytes().begin(), k.value().bytes().end()),
      v);
}

TEST_F(KeyFile, HexWithNewline) {
  std::string hex;
  for (int i = 0; i < 32; i++)
    hex += "0123456789abcdef"[i % 16], hex += "0123456789ABCDEF"[(i * 7) % 16];
  auto k = Key::FromFile(Write(hex + "\n"));
  ASSERT_TRUE(k.ok()) << k.error();
  ASSERT_EQ(k.value().bytes().size(), 32u);
  EXPECT_EQ(k.value().bytes()[0], 0x00);
  EXPECT_EQ(k.value().bytes()[1], 0x17);
  EXPECT_EQ(k.value().bytes()[31], (15 << 4) | ((31 * 7) % 16));
}

TEST_F(KeyFile, HexWithoutNewlineAndWithCrLf) {
  const std::string hex(64, 'a');
  for (const std::string& tail :
       {std::string(), std::string("\r\n"), std::string("  \n\n")}) {
    auto k = Key::FromFile(Write(hex + tail));
    ASSERT_TRUE(k.ok()) << k.error();
    EXPECT_EQ(k.value().bytes().size(), 32u);
    EXPECT_EQ(k.value().bytes()[5], 0xaa);
  }
}

TEST_F(KeyFile, HexTooShort) {
  auto k = Key::FromFile(Write(std::string(62, '1') + "\n"));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("31 bytes"), std::string::npos) << k.error();
  EXPECT_NE(k.error().find(dir_ + "/key"), std::string::npos) << k.error();
}

TEST_F(KeyFile, HexOddDigits) {
  auto k = Key::FromFile(Write(std::string(65, 'f')));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("odd number of hex digits"), std::string::npos)
      << k.error();
}

// Text that is not hex is refused, not taken as the raw bytes of a key: a
// typo in a hex key (here a 'g') would otherwise make a different key that
// no other host holds.
TEST_F(KeyFile, NotHexIsRefused) {
  std::string typo(64, 'a');
  typo[17] = 'g';
  for (const std::string& text : {typo + "\n", Raw(Seq(48, 0xf0)),
                                  Raw(Seq(16, 0x80)), std::string(40, 'z')}) {
    auto k = Key::FromFile(Write(text));
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_NE(k.error().find("is not hex"), std::string::npos) << k.error();
    EXPECT_NE(k.error().find("openssl rand -hex 32"), std::string::npos)
        << k.error();
  }
}

TEST_F(KeyFile, EmptyAndWhiteSpaceOnly) {
  EXPECT_FALSE(Key::FromFile(Write("")).ok());
  EXPECT_FALSE(Key::FromFile(Write("\n")).ok());
}

// A world-readable key file (0644 as a careless umask leaves it) is
// refused, whatever its owner and group, and so is one that others can
// write or that its group can change.
TEST_F(KeyFile, AccessForOthersOrGroupWriteIsRefused) {
  for (mode_t mode : {0644, 0604, 0602, 0601, 0660, 0620, 0610}) {
    auto k = Key::FromFile(Write(std::string(64, 'a'), mode));
    ASSERT_FALSE(k.ok()) << std::oct << mode;
    char text[8];
    std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(k.error().find(std::string("its mode ") + text),
              std::string::npos)
        << k.error();
    EXPECT_NE(k.error().find("chmod 0640"), std::string::npos) << k.error();
  }
  EXPECT_TRUE(Key::FromFile(Write(std::string(64, 'a'), 0400)).ok());
  EXPECT_TRUE(Key::FromFile(Write(std::string(64, 'a'), 0600)).ok());
}

// Mode 0640 is how the unit's parqd (user parqd) reads a root-owned file:
// its group may read it when the group is the process's own (or root's),
// not any other.
TEST_F(KeyFile, GroupMayReadOnlyWhenItIsTheProcesssOrRoots) {
  const std::string path = Write(std::string(64, 'a'), 0640);
  ASSERT_EQ(chown(path.c_str(), geteuid(), getegid()), 0);
  auto k = Key::FromFile(path);
  EXPECT_TRUE(k.ok()) << k.error();
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to give a file to another group";
  ASSERT_EQ(chown(path.c_str(), 0, 65534), 0);
  k = Key::FromFile(path);
  ASSERT_FALSE(k.ok()) << "a key file readable by gid 65534 was accepted";
  EXPECT_NE(k.error().find("gid 65534, read it"), std::string::npos)
      << k.error();
  EXPECT_NE(k.error().find("chgrp"), std::string::npos) << k.error();
}

// A file that another user owns is refused even with mode 0600: that user
// can read and rewrite the key.  Needs root to give a file away.
TEST_F(KeyFile, OwnedByAnotherUserIsRefused) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to chown a file";
  const std::string path = Write(std::string(64, 'a'));
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  auto k = Key::FromFile(path);
  ASSERT_FALSE(k.ok()) << "a key file owned by uid 65534 was accepted";
  EXPECT_NE(k.error().find("owned by uid 65534"), std::string::npos)
      << k.error();
  EXPECT_NE(k.error().find("chown"), std::string::npos) << k.error();
  const std::string pairs = dir_ + "/pairs";
  std::ofstream(pairs) << "1 2 " << std::string(64, 'a') << "\n";
  ASSERT_EQ(chmod(pairs.c_str(), 0600), 0);
  ASSERT_EQ(chown(pairs.c_str(), 65534, 65534), 0);
  auto p = parq::parqd::PairKeysFromFile(pairs);
  ASSERT_FALSE(p.ok()) << "a pair keys file owned by uid 65534 was accepted";
  EXPECT_NE(p.error().find("owned by uid 65534"), std::string::npos)
      << p.error();
}

TEST_F(KeyFile, MissingFile) {
  auto k = Key::FromFile(dir_ + "/nope");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("cannot open"), std::string::npos) << k.error();
  EXPECT_NE(k.error().find("No such file"), std::string::npos) << k.error();
}

TEST_F(KeyFile, DirectoryIsRefused) {
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  auto k = Key::FromFile(dir_);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("not a regular file"), std::string::npos)
      << k.error();
}

TEST_F(KeyFile, TooLarge) {
  auto k = Key::FromFile(Write(std::string(5000, 'a')));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("at most"), std::string::npos) << k.error();
}

// ---- Pair keys ---------------------------------------------------------

using parq::parqd::DerivePairKey;
using parq::parqd::KeyRing;
using parq::parqd::PairKeysFromFile;
using parq::parqd::PairKeysText;

std::string Hex(std::span<const uint8_t> b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t c : b) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

const Key& Secret() {
  static const Key k = Key::FromBytes(Seq(32)).value();
  return k;
}

// HMAC-SHA-256(00 01 .. 1f, "parq pair key v1" 00 | id | min | max), by
// Python's hmac module.
TEST(PairKey, KnownAnswer) {
  EXPECT_EQ(Hex(DerivePairKey(Secret(), 1, 1, 2).value().bytes()),
            "f3a2f14078c3c6daaf262124f771b242935b8bbe35c17673f88adce991774b8a");
  EXPECT_EQ(Hex(DerivePairKey(Secret(), 2, 2, 1).value().bytes()),
            "d3b45a5d4941c11b7945a22ef52afb81e942cf155eaa12c4b0b2301bd78542dd");
}

TEST(PairKey, SymmetricAndDistinct) {
  const auto k12 = Hex(DerivePairKey(Secret(), 1, 1, 2).value().bytes());
  EXPECT_EQ(Hex(DerivePairKey(Secret(), 1, 2, 1).value().bytes()), k12);
  EXPECT_NE(Hex(DerivePairKey(Secret(), 1, 1, 3).value().bytes()), k12);
  EXPECT_NE(Hex(DerivePairKey(Secret(), 2, 1, 2).value().bytes()), k12);
  const Key other = Key::FromBytes(Seq(32, 1)).value();
  EXPECT_NE(Hex(DerivePairKey(other, 1, 1, 2).value().bytes()), k12);
}

TEST_F(KeyFile, PairKeysRoundTrip) {
  auto text = PairKeysText(Secret(), 4, 7, {1, 2, 3});
  ASSERT_TRUE(text.ok()) << text.error();
  auto keys = PairKeysFromFile(Write(text.value().text));
  ASSERT_TRUE(keys.ok()) << keys.error();
  EXPECT_EQ(keys.value().size(), 3u);
  auto ring = KeyRing::CreatePairs(std::move(keys.value()), 4);
  ASSERT_TRUE(ring.ok()) << ring.error();
  for (uint64_t p : {1, 2, 3}) {
    const Key* k = ring.value().Find(4, p);
    ASSERT_TRUE(k) << p;
    EXPECT_EQ(Hex(k->bytes()),
              Hex(DerivePairKey(Secret(), 4, p, 7).value().bytes()));
  }
  EXPECT_FALSE(ring.value().Find(4, 9));
  EXPECT_FALSE(ring.value().Find(1, 1));
  EXPECT_EQ(ring.value().MissingSendKeys({1, 9, 3}), std::vector<uint64_t>{9});
}

TEST_F(KeyFile, PairKeysFileErrorsNameTheLine) {
  const std::string k = Hex(Seq(32));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "holds no key"},
      {"# only a comment\n\n", "holds no key"},
      {"1 2\n", "line 1: expected KEY-ID PEER-NODE-ID HEX-KEY, found 2"},
      {"# c\n1 2 " + k + " extra\n", "line 2: expected"},
      {"0 2 " + k + "\n", "line 1: the key id must be a number from 1"},
      {"4294967296 2 " + k + "\n", "the key id must be"},
      {"1 -2 " + k + "\n", "line 1: the peer must be a node id"},
      {"1 9223372036854775808 " + k + "\n", "the peer must be"},
      {"1 2 xyz\n", "line 1: the key must be hex digits"},
      {"1 2 abc\n", "odd number of hex digits"},
      {"1 2 abcd\n", "needs at least 32"},
      {"1 2 " + k + "\n1 2 " + k + "\n", "line 2: key 1 of peer 2 is given"},
  };
  for (const auto& [content, want] : cases) {
    auto r = PairKeysFromFile(Write(content));
    ASSERT_FALSE(r.ok()) << content;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
    EXPECT_EQ(r.error().rfind("keys file ", 0), 0u) << r.error();
  }
  auto r = PairKeysFromFile(Write("1 2 " + k + "\n", 0644));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("chmod 0640"), std::string::npos) << r.error();
  EXPECT_TRUE(
      PairKeysFromFile(Write("\t1\t2 " + k + "  # a comment\r\n")).ok());
}

TEST(PairKeyRing, ClusterAndPairKeysAreFoundAndChecked) {
  std::map<uint32_t, Key> cluster;
  cluster.emplace(1, Secret());
  auto ring = KeyRing::Create(std::move(cluster), 1);
  ASSERT_TRUE(ring.ok());
  EXPECT_TRUE(ring.value().Find(1, 12345));  // any peer
  EXPECT_TRUE(ring.value().MissingSendKeys({1, 2}).empty());
  EXPECT_EQ(KeyRing::CreatePairs({}, 1).error(), "no key");
  KeyRing::PairKeys zero;
  zero.emplace(std::pair{0u, uint64_t{2}}, Secret());
  EXPECT_EQ(KeyRing::CreatePairs(std::move(zero), 1).error(),
            "key id 0: key ids start at 1");
  KeyRing::PairKeys one;
  one.emplace(std::pair{1u, uint64_t{2}}, Secret());
  EXPECT_EQ(KeyRing::CreatePairs(std::move(one), 2).error(),
            "the send key id 2 is not one of the keys held");
}

TEST(PairKeyText, RefusesItself) {
  EXPECT_EQ(PairKeysText(Secret(), 1, 7, {1, 7}).error(),
            "peer 7 is this node");
  EXPECT_EQ(PairKeysText(Secret(), 0, 7, {1}).error(), "key ids start at 1");
}

// Key::Hmac (the pads computed once) against OpenSSL's one-shot HMAC(),
// for keys shorter than, as long as and longer than SHA-256's block (the
// long ones hashed first), messages from empty to several blocks, and a
// copy of the key.
TEST(KeyHmac, MatchesOneShotHmac) {
  for (size_t klen : {32, 63, 64, 65, 200, 1024}) {
    std::vector<uint8_t> kb(klen);
    for (size_t i = 0; i < klen; ++i)
      kb[i] = static_cast<uint8_t>(i * 31 + klen);
    const Key key = Key::FromBytes(kb).value();
    // A copy shares the pads.
    // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
    const Key copy = key;
    for (size_t dlen : {0, 1, 55, 56, 64, 119, 1000}) {
      std::vector<uint8_t> d(dlen);
      for (size_t i = 0; i < dlen; ++i)
        d[i] = static_cast<uint8_t>(i ^ 0xa5);
      std::array<uint8_t, 32> want{};
      unsigned int n = 0;
      ASSERT_TRUE(HMAC(EVP_sha256(), kb.data(), static_cast<int>(kb.size()),
                       d.data(), d.size(), want.data(), &n));
      std::array<uint8_t, 32> got{};
      ASSERT_TRUE(key.Hmac(d, got)) << klen << " " << dlen;
      EXPECT_EQ(got, want) << "key " << klen << " bytes, data " << dlen;
      std::array<uint8_t, 32> again{};
      ASSERT_TRUE(copy.Hmac(d, again));
      EXPECT_EQ(again, want);
    }
  }
}

}  // namespace
