// SPDX-License-Identifier: GPL-2.0

#include "proto/key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>

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
// nullopt when it is anything else (no key: NotHex() says why); an error for
// hex with an odd number of digits.
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

// Why `text`, which ParseHex() found not to be hex, is no key.  Names the
// first byte that is not a hex digit by its position only: the text is
// secret.
std::string NotHex(std::span<const uint8_t> text) {
  const auto bad = std::find_if(text.begin(), text.end(), [](uint8_t c) {
    return HexValue(c) < 0 && !IsSpace(c);
  });
  if (bad == text.end())
    return "it holds no key; write the key as hex digits (make one with: "
           "openssl rand -hex 32)";
  return "it is not hex: byte " + std::to_string(bad - text.begin() + 1) +
         " is not a hex digit; a key file holds the key as hex digits, "
         "nothing else (make one with: openssl rand -hex 32)";
}

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

// The SHA-256 states after (key XOR ipad) and (key XOR opad), RFC 2104.
struct Key::Pads {
  static constexpr size_t kBlock = 64;  // SHA-256's block size

  Pads() = default;
  Pads(const Pads&) = delete;
  Pads& operator=(const Pads&) = delete;
  ~Pads() {
    EVP_MD_CTX_free(inner);  // wipes the state
    EVP_MD_CTX_free(outer);
  }

  // Null when the crypto library failed.
  static std::shared_ptr<const Pads> Make(std::span<const uint8_t> key) {
    std::array<uint8_t, kBlock> block{};
    unsigned int n = 0;
    if (key.size() > kBlock) {  // a long key is hashed first
      if (!EVP_Digest(key.data(), key.size(), block.data(), &n, EVP_sha256(),
                      nullptr))
        return nullptr;
    } else {
      std::copy(key.begin(), key.end(), block.begin());
    }
    auto p = std::make_shared<Pads>();
    p->inner = EVP_MD_CTX_new();
    p->outer = EVP_MD_CTX_new();
    std::array<uint8_t, kBlock> pad{};
    bool ok = p->inner && p->outer;
    for (auto [ctx, x] : {std::pair{p->inner, uint8_t{0x36}},
                          std::pair{p->outer, uint8_t{0x5c}}}) {
      for (size_t i = 0; i < kBlock; ++i)
        pad[i] = block[i] ^ x;
      ok = ok && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) &&
           EVP_DigestUpdate(ctx, pad.data(), pad.size());
    }
    OPENSSL_cleanse(block.data(), block.size());
    OPENSSL_cleanse(pad.data(), pad.size());
    return ok ? p : nullptr;
  }

  EVP_MD_CTX* inner = nullptr;
  EVP_MD_CTX* outer = nullptr;
};

Key::Key(std::vector<uint8_t> bytes)
    : bytes_(std::move(bytes)), pads_(Pads::Make(bytes_)) {}

bool Key::Hmac(std::span<const uint8_t> data,
               std::span<uint8_t, 32> mac) const {
  if (!pads_)
    return false;
  // One working state per thread, reused: copying a pad into it is the
  // whole cost of the key.
  thread_local const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> work(
      EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::array<uint8_t, 32> inner{};
  unsigned int n = 0;
  unsigned int m = 0;
  const bool ok =
      work && EVP_MD_CTX_copy_ex(work.get(), pads_->inner) &&
      EVP_DigestUpdate(work.get(), data.data(), data.size()) &&
      EVP_DigestFinal_ex(work.get(), inner.data(), &n) && n == inner.size() &&
      EVP_MD_CTX_copy_ex(work.get(), pads_->outer) &&
      EVP_DigestUpdate(work.get(), inner.data(), inner.size()) &&
      EVP_DigestFinal_ex(work.get(), mac.data(), &m) && m == mac.size();
  OPENSSL_cleanse(inner.data(), inner.size());
  return ok;
}

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

namespace {

// The mode of `st` in octal, as chmod takes it.
std::string Mode(const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o",
                static_cast<unsigned>(st.st_mode & 07777));
  return mode;
}

}  // namespace

Result<std::vector<uint8_t>, std::string> ReadSecretFile(
    const std::string& what, const std::string& path, size_t max) {
  const std::string where = what + " " + path + ": ";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 && errno == EACCES)
    return Err{where + Errno("cannot open it") + "; parqd runs as uid " +
               std::to_string(geteuid()) + ", gid " +
               std::to_string(getegid()) +
               ": let its group read the file: chown root:" +
               std::to_string(getegid()) + " " + path + "; chmod 0640 " + path};
  if (fd < 0)
    return Err{where + Errno("cannot open it")};
  std::vector<uint8_t> text;
  std::string error;
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    error = Errno("cannot stat it");
  } else if (!S_ISREG(st.st_mode)) {
    error = "it is not a regular file";
  } else if (st.st_uid != geteuid() && st.st_uid != 0) {
    error = "it is owned by uid " + std::to_string(st.st_uid) +
            ", who can read and change it; it must be owned by this " +
            "process's uid (" + std::to_string(geteuid()) +
            ") or root; run: chown " + std::to_string(geteuid()) + " " + path;
  } else if (st.st_mode & S_IRWXO) {
    error = "its mode " + Mode(st) +
            " lets others access it; run: chmod 0640 " + path +
            " (or chmod 0600)";
  } else if (st.st_mode & (S_IWGRP | S_IXGRP)) {
    error = "its mode " + Mode(st) + " lets its group (gid " +
            std::to_string(st.st_gid) + ") change it; run: chmod 0640 " + path +
            " (or chmod 0600)";
  } else if ((st.st_mode & S_IRGRP) && st.st_gid != getegid() &&
             st.st_gid != 0) {
    error = "its mode " + Mode(st) + " lets its group, gid " +
            std::to_string(st.st_gid) +
            ", read it, and that is neither this process's group (gid " +
            std::to_string(getegid()) + ") nor root's; run: chgrp " +
            std::to_string(getegid()) + " " + path + " (or chmod 0600)";
  } else if (st.st_size > static_cast<off_t>(max)) {
    error = "it is " + std::to_string(st.st_size) + " bytes long; a " + what +
            " holds at most " + std::to_string(max);
  } else {
    text.resize(max + 1);
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
    if (error.empty() && got > max)
      error = "it grew past " + std::to_string(max) + " bytes while being read";
  }
  close(fd);
  if (!error.empty()) {
    if (!text.empty())
      OPENSSL_cleanse(text.data(), text.size());
    return Err{where + error};
  }
  return text;
}

Result<Key, std::string> Key::FromFile(const std::string& path) {
  auto read = ReadSecretFile("key file", path, kMaxFileBytes);
  if (!read.ok())
    return Err{read.error()};
  std::vector<uint8_t>& text = read.value();
  std::optional<Result<Key, std::string>> key;
  std::string error;
  auto hex = ParseHex(text);
  if (!hex.ok())
    error = hex.error();
  else if (hex.value())
    key.emplace(FromBytes(*hex.value()));
  else
    error = NotHex(text);
  if (hex.ok() && hex.value())
    OPENSSL_cleanse(hex.value()->data(), hex.value()->size());
  if (!text.empty())
    OPENSSL_cleanse(text.data(), text.size());
  const std::string where = "key file " + path + ": ";
  if (!error.empty())
    return Err{where + error};
  if (!key->ok())
    return Err{where + key->error()};
  return std::move(*key);
}

namespace {

// Keys files: a line for each pair and id; far more than a cluster needs.
constexpr size_t kMaxKeysFileBytes = 4 << 20;

Result<std::monostate, std::string> CheckIds(const KeyRing::PairKeys& keys,
                                             uint32_t send_id) {
  if (keys.empty())
    return Err{std::string("no key")};
  bool send_held = false;
  for (const auto& [idp, key] : keys) {
    if (idp.first == 0)
      return Err{std::string("key id 0: key ids start at 1")};
    send_held |= idp.first == send_id;
  }
  if (!send_held)
    return Err{"the send key id " + std::to_string(send_id) +
               " is not one of the keys held"};
  return std::monostate{};
}

template <typename T>
void PutBE(std::vector<uint8_t>& out, T v) {
  for (size_t i = 0; i < sizeof(T); i++)
    out.push_back(static_cast<uint8_t>(v >> (8 * (sizeof(T) - 1 - i))));
}

// A whole decimal number of at most `max`, or nullopt.
std::optional<uint64_t> Decimal(std::string_view s, uint64_t max) {
  if (s.empty() || s.size() > 20)
    return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max)
    return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace

Result<KeyRing, std::string> KeyRing::Create(std::map<uint32_t, Key> keys,
                                             uint32_t send_id) {
  PairKeys pairs;
  while (!keys.empty()) {
    auto node = keys.extract(keys.begin());
    pairs.emplace(std::pair{node.key(), kAnyPeer}, std::move(node.mapped()));
  }
  if (auto r = CheckIds(pairs, send_id); !r.ok())
    return Err{r.error()};
  return KeyRing(std::move(pairs), send_id);
}

Result<KeyRing, std::string> KeyRing::Cluster(uint32_t id, Key key) {
  std::map<uint32_t, Key> keys;
  keys.emplace(id, std::move(key));
  return Create(std::move(keys), id);
}

Result<KeyRing, std::string> KeyRing::CreatePairs(PairKeys keys,
                                                  uint32_t send_id) {
  for (const auto& [idp, key] : keys)
    if (idp.second == kAnyPeer)
      return Err{"peer " + std::to_string(idp.second) +
                 " is not a node id (0..2^63-1)"};
  if (auto r = CheckIds(keys, send_id); !r.ok())
    return Err{r.error()};
  return KeyRing(std::move(keys), send_id);
}

const Key* KeyRing::Find(uint32_t id, uint64_t peer) const {
  if (auto it = keys_.find({id, peer}); it != keys_.end())
    return &it->second;
  if (auto it = keys_.find({id, kAnyPeer}); it != keys_.end())
    return &it->second;
  return nullptr;
}

std::vector<uint64_t> KeyRing::MissingSendKeys(
    const std::vector<uint64_t>& peers) const {
  std::vector<uint64_t> missing;
  for (uint64_t p : peers)
    if (!SendKey(p))
      missing.push_back(p);
  return missing;
}

Result<Key, std::string> DerivePairKey(const Key& secret, uint32_t id,
                                       uint64_t a, uint64_t b) {
  static constexpr std::string_view kLabel = "parq pair key v1";
  std::vector<uint8_t> msg(kLabel.begin(), kLabel.end());
  msg.push_back(0);
  PutBE<uint32_t>(msg, id);
  PutBE<uint64_t>(msg, std::min(a, b));
  PutBE<uint64_t>(msg, std::max(a, b));
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  const auto k = secret.bytes();
  if (!HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), msg.data(),
            msg.size(), out.data(), &len) ||
      len != out.size())
    return Err{
        std::string("cannot compute HMAC-SHA-256: the crypto library "
                    "failed")};
  auto key = Key::FromBytes(out);
  OPENSSL_cleanse(out.data(), out.size());
  return key;
}

Result<KeyRing::PairKeys, std::string> PairKeysFromFile(
    const std::string& path) {
  auto read = ReadSecretFile("keys file", path, kMaxKeysFileBytes);
  if (!read.ok())
    return Err{read.error()};
  std::vector<uint8_t>& text = read.value();
  KeyRing::PairKeys keys;
  std::string error;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size() && error.empty()) {
    size_t end = pos;
    while (end < text.size() && text[end] != '\n')
      end++;
    line_no++;
    // Fields separated by spaces or tabs.
    std::vector<std::string_view> fields;
    const std::string_view line(
        reinterpret_cast<const char*>(text.data()) + pos, end - pos);
    size_t f = 0;
    while (f < line.size()) {
      while (f < line.size() &&
             (line[f] == ' ' || line[f] == '\t' || line[f] == '\r'))
        f++;
      if (f == line.size() || line[f] == '#')
        break;
      size_t g = f;
      while (g < line.size() && line[g] != ' ' && line[g] != '\t' &&
             line[g] != '\r')
        g++;
      fields.push_back(line.substr(f, g - f));
      f = g;
    }
    pos = end + 1;
    if (fields.empty())
      continue;
    const std::string at = "line " + std::to_string(line_no) + ": ";
    if (fields.size() != 3) {
      error = at + "expected KEY-ID PEER-NODE-ID HEX-KEY, found " +
              std::to_string(fields.size()) + " field(s)";
      break;
    }
    const auto id = Decimal(fields[0], UINT32_MAX);
    const auto peer = Decimal(fields[1], INT64_MAX);
    if (!id || *id == 0) {
      error = at + "the key id must be a number from 1 to 4294967295";
      break;
    }
    if (!peer) {
      error = at + "the peer must be a node id from 0 to 2^63-1";
      break;
    }
    auto hex = ParseHex(std::span(
        reinterpret_cast<const uint8_t*>(fields[2].data()), fields[2].size()));
    if (!hex.ok() || !hex.value()) {
      error = at + "the key must be hex digits" +
              (hex.ok() ? std::string() : " (" + hex.error() + ")");
      break;
    }
    auto key = Key::FromBytes(*hex.value());
    OPENSSL_cleanse(hex.value()->data(), hex.value()->size());
    if (!key.ok()) {
      error = at + key.error();
      break;
    }
    if (!keys.emplace(std::pair{static_cast<uint32_t>(*id), *peer},
                      std::move(key.value()))
             .second) {
      error = at + "key " + std::to_string(*id) + " of peer " +
              std::to_string(*peer) + " is given twice";
      break;
    }
  }
  OPENSSL_cleanse(text.data(), text.size());
  if (error.empty() && keys.empty())
    error = "it holds no key";
  if (!error.empty())
    return Err{"keys file " + path + ": " + error};
  return keys;
}

Result<PairKeysFileText, std::string> PairKeysText(
    const Key& secret, uint32_t id, uint64_t self,
    const std::vector<uint64_t>& peers) {
  if (id == 0)
    return Err{std::string("key ids start at 1")};
  std::string out = "# parq pair keys of node " + std::to_string(self) +
                    ", id " + std::to_string(id) +
                    " (parqctl key derive): KEY-ID PEER-NODE-ID HEX-KEY\n";
  static constexpr char kHex[] = "0123456789abcdef";
  for (uint64_t p : peers) {
    if (p == self)
      return Err{"peer " + std::to_string(p) + " is this node"};
    auto k = DerivePairKey(secret, id, self, p);
    if (!k.ok())
      return Err{k.error()};
    out += std::to_string(id) + " " + std::to_string(p) + " ";
    for (uint8_t b : k.value().bytes()) {
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
    out += "\n";
  }
  return PairKeysFileText{std::move(out)};
}

}  // namespace parq::parqd
