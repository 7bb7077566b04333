// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of key.cc: lengths, the hex and raw file formats, and the
// file checks with their messages.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "key.h"
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

TEST_F(KeyFile, Raw) {
  const auto v = Seq(48, 0xf0);  // wraps, contains non-hex bytes
  auto k = Key::FromFile(Write(Raw(v)));
  ASSERT_TRUE(k.ok()) << k.error();
  EXPECT_EQ(
      std::vector<uint8_t>(k.value().bytes().begin(), k.value().bytes().end()),
      v);
}

TEST_F(KeyFile, RawKeepsTrailingNewlineByte) {
  // Raw keys are taken as they are, trailing white space included.
  auto v = Seq(31, 0x80);
  v.push_back('\n');
  auto k = Key::FromFile(Write(Raw(v)));
  ASSERT_TRUE(k.ok()) << k.error();
  EXPECT_EQ(k.value().bytes().size(), 32u);
}

TEST_F(KeyFile, RawTooShort) {
  auto k = Key::FromFile(Write(Raw(Seq(16, 0x80))));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("16 bytes"), std::string::npos) << k.error();
}

TEST_F(KeyFile, EmptyAndWhiteSpaceOnly) {
  EXPECT_FALSE(Key::FromFile(Write("")).ok());
  EXPECT_FALSE(Key::FromFile(Write("\n")).ok());
}

TEST_F(KeyFile, ReadableByOthersIsRefused) {
  for (mode_t mode : {0644, 0640, 0604, 0602, 0660}) {
    auto k = Key::FromFile(Write(std::string(64, 'a'), mode));
    ASSERT_FALSE(k.ok()) << std::oct << mode;
    EXPECT_NE(k.error().find("chmod 600"), std::string::npos) << k.error();
  }
  EXPECT_TRUE(Key::FromFile(Write(std::string(64, 'a'), 0400)).ok());
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

}  // namespace
