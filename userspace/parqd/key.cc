// SPDX-License-Identifier: GPL-2.0

#include "key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

namespace parq::parqd {

namespace {

// Larger than any key in hex with trailing white space.
constexpr size_t kMaxFileBytes = 4 * Key::kMaxBytes;

int HexValue(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The key when `text` is hex digits followed by nothing but white space;
// nullopt when it is anything else (then it is a raw key); an error for hex
// with an odd number of digits.
Result<std::optional<std::vector<uint8_t>>, std::string> ParseHex(
    std::span<const uint8_t> text) {
  size_t end = text.size();
  while (end > 0 && IsSpace(text[end - 1]))
    end--;
  if (end == 0)
    return std::optional<std::vector<uint8_t>>{};
  for (size_t i = 0; i < end; i++)
    if (HexValue(text[i]) < 0)
      return std::optional<std::vector<uint8_t>>{};
  if (end % 2)
    return Err{std::string("it holds an odd number of hex digits (") +
               std::to_string(end) + ")"};
  std::vector<uint8_t> key(end / 2);
  for (size_t i = 0; i < key.size(); i++)
    key[i] = static_cast<uint8_t>(HexValue(text[2 * i]) << 4 |
                                  HexValue(text[2 * i + 1]));
  return std::optional<std::vector<uint8_t>>(std::move(key));
}

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

Key::~Key() {
  if (!bytes_.empty())
    OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

Result<Key, std::string> Key::FromBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() < kMinBytes)
    return Err{"the key is " + std::to_string(bytes.size()) +
               " bytes long; it needs at least " + std::to_string(kMinBytes) +
               " (make one with: openssl rand -hex 32)"};
  if (bytes.size() > kMaxBytes)
    return Err{"the key is " + std::to_string(bytes.size()) +
               " bytes long; at most " + std::to_string(kMaxBytes) +
               " are allowed"};
  return Key(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

Result<Key, std::string> Key::FromFile(const std::string& path) {
  const std::string where = "key file " + path + ": ";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return Err{where + Errno("cannot open it")};
  std::vector<uint8_t> text;
  std::string error;
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    error = Errno("cannot stat it");
  } else if (!S_ISREG(st.st_mode)) {
    error = "it is not a regular file";
  } else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    error = std::string("its mode ") + mode +
            " lets group or others access it; run: chmod 600 " + path;
  } else if (st.st_size > static_cast<off_t>(kMaxFileBytes)) {
    error = "it is " + std::to_string(st.st_size) +
            " bytes long; a key file holds at most " +
            std::to_string(kMaxFileBytes);
  } else {
    text.resize(kMaxFileBytes + 1);
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        error = Errno("cannot read it");
        break;
      }
      if (n == 0)
        break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (error.empty() && got > kMaxFileBytes)
      error = "it grew past " + std::to_string(kMaxFileBytes) +
              " bytes while being read";
  }
  close(fd);

  std::optional<Result<Key, std::string>> key;
  if (error.empty()) {
    auto hex = ParseHex(text);
    if (!hex.ok())
      error = hex.error();
    else if (hex.value())
      key.emplace(FromBytes(*hex.value()));
    else
      key.emplace(FromBytes(text));
    if (hex.ok() && hex.value())
      OPENSSL_cleanse(hex.value()->data(), hex.value()->size());
  }
  if (!text.empty())
    OPENSSL_cleanse(text.data(), text.size());
  if (!error.empty())
    return Err{where + error};
  if (!key->ok())
    return Err{where + key->error()};
  return std::move(*key);
}

Result<KeyRing, std::string> KeyRing::Create(std::map<uint32_t, Key> keys,
                                             uint32_t send_id) {
  if (keys.empty())
    return Err{std::string("no key")};
  if (keys.begin()->first == 0)
    return Err{std::string("key id 0: key ids start at 1")};
  if (!keys.contains(send_id))
    return Err{"the send key id " + std::to_string(send_id) +
               " is not one of the keys held"};
  return KeyRing(std::move(keys), send_id);
}

const Key* KeyRing::Find(uint32_t id) const {
  auto it = keys_.find(id);
  return it == keys_.end() ? nullptr : &it->second;
}

}  // namespace parq::parqd
