// SPDX-License-Identifier: GPL-2.0
//
// parq-nlfuzz: random and mutated netlink messages at sch_parq, each
// followed by a check that the configuration is unchanged (the kernel
// refused the message) or validly changed (it took it).
//
// It creates a parq qdisc (handle 1:) on --dev with options it knows, then
// sends --iterations messages of three kinds: a change of the qdisc's
// options, a reserved class add/change/delete, and a command of the "parq"
// generic netlink family.  Each message is built from the UAPI header's
// attributes with values at and around their bounds, then maybe mutated:
// wrong lengths and types, attributes repeated, dropped, nested too deep or
// not nested, unknown types and flags, bytes flipped, the message cut
// short.  After each message it reads that kind's state back:
//
//   refused   the state must be exactly what it was;
//   accepted  every value must be in its UAPI range, the values the message
//             set must read back, and the reserved classes must fit the
//             capacity the qdisc reports.
//
// Every 256 messages all three kinds of state are checked.  Classes at
// random minors are few (kStrayClasses): past that, one of them is deleted
// instead of a random class message, since each class message dumps them
// all.  Every kProgressEvery messages a line gives the time so far and the
// sizes of the class and credit tables.  It exits 1 at
// the first violation, printing the message and both states, 2 on a usage
// or set-up error, 0 otherwise, after a summary line.  Runs as root in a
// throw-away network namespace (selftests/parq_nlfuzz.py).

#include <linux/gen_stats.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/parq.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <parq/params.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "parq-nlfuzz: %s\n", what.c_str());
  std::exit(2);
}

// --- netlink messages as trees of attributes -----------------------------

struct Attr {
  uint16_t type = 0;       // with NLA_F_* flags
  Bytes data;              // the payload, for a leaf
  std::vector<Attr> nest;  // the children, for a nest
  bool is_nest = false;
};

template <typename T>
Attr Leaf(uint16_t type, T v) {
  Attr a;
  a.type = type;
  a.data.resize(sizeof(T));
  std::memcpy(a.data.data(), &v, sizeof(T));
  return a;
}

Attr StrAttr(uint16_t type, std::string_view s, bool nul = true) {
  Attr a;
  a.type = type;
  a.data.assign(s.begin(), s.end());
  if (nul)
    a.data.push_back(0);
  return a;
}

void PutAttrs(Bytes& out, const std::vector<Attr>& attrs);

void PutAttr(Bytes& out, const Attr& a) {
  size_t at = out.size();
  out.resize(at + NLA_HDRLEN);
  if (a.is_nest)
    PutAttrs(out, a.nest);
  else
    out.insert(out.end(), a.data.begin(), a.data.end());
  nlattr hdr{};
  hdr.nla_len = static_cast<uint16_t>(out.size() - at);
  hdr.nla_type = a.type;
  std::memcpy(out.data() + at, &hdr, sizeof(hdr));
  out.resize(NLA_ALIGN(out.size()));
}

void PutAttrs(Bytes& out, const std::vector<Attr>& attrs) {
  for (const auto& a : attrs)
    PutAttr(out, a);
}

// Leaf attributes of a payload, as the kernel's parser sees them: type
// (flags masked off) to payload, the last one of a type winning.  Only
// called on payloads the kernel accepted.
std::map<uint16_t, Bytes> Parse(const uint8_t* p, size_t len) {
  std::map<uint16_t, Bytes> out;
  while (len >= NLA_HDRLEN) {
    nlattr hdr;
    std::memcpy(&hdr, p, sizeof(hdr));
    if (hdr.nla_len < NLA_HDRLEN || hdr.nla_len > len)
      break;
    out[hdr.nla_type & NLA_TYPE_MASK] = Bytes(p + NLA_HDRLEN, p + hdr.nla_len);
    size_t step = NLA_ALIGN(hdr.nla_len);
    if (step >= len)
      break;
    p += step;
    len -= step;
  }
  return out;
}

std::map<uint16_t, Bytes> Parse(const Bytes& b) {
  return Parse(b.data(), b.size());
}

template <typename T>
std::optional<T> Get(const std::map<uint16_t, Bytes>& m, uint16_t type) {
  auto it = m.find(type);
  if (it == m.end() || it->second.size() != sizeof(T))
    return std::nullopt;
  T v;
  std::memcpy(&v, it->second.data(), sizeof(T));
  return v;
}

std::string Hex(const Bytes& b) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < b.size(); i++) {
    std::snprintf(buf, sizeof(buf), "%02x", b[i]);
    s += buf;
    if (i % 4 == 3)
      s += ' ';
  }
  return s;
}

// --- a netlink socket ------------------------------------------------------

class Socket {
 public:
  explicit Socket(int proto) {
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
    if (fd_ < 0)
      Die(std::string("netlink socket: ") + std::strerror(errno));
    int one = 1;
    setsockopt(fd_, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    // An error ack carries the request's header, not the whole request:
    // a request can be larger than the receive buffer (a peer set of
    // 4 097 addresses copied by mutations can pass 128 KiB), and its
    // echo would arrive cut.
    setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    int big = 1 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  }
  ~Socket() { close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Sends header + payload (nlmsg_len set here, seq assigned).  Returns
  // the request's sequence number.
  uint32_t send(nlmsghdr hdr, const Bytes& payload) {
    hdr.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size());
    hdr.nlmsg_seq = ++seq_;
    Bytes msg(NLMSG_HDRLEN);
    std::memcpy(msg.data(), &hdr, sizeof(hdr));
    msg.insert(msg.end(), payload.begin(), payload.end());
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    if (sendto(fd_, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&sa),
               sizeof(sa)) < 0)
      Die(std::string("sendto: ") + std::strerror(errno));
    return seq_;
  }

  // The replies to request @seq until its ack, error or NLMSG_DONE.
  // Returns the error (0, -errno); data messages go to @out.
  int replies(uint32_t seq, std::vector<Bytes>* out, std::string* msg) {
    for (;;) {
      pollfd pfd{fd_, POLLIN, 0};
      int n = poll(&pfd, 1, 10000);
      if (n <= 0)
        Die("no reply from the kernel within 10 s");
      ssize_t len = recv(fd_, buf_.data(), buf_.size(), MSG_TRUNC);
      if (len < 0) {
        if (errno == ENOBUFS)
          Die("netlink receive buffer overrun");
        Die(std::string("recv: ") + std::strerror(errno));
      }
      if (static_cast<size_t>(len) > buf_.size())
        Die("a reply of " + std::to_string(len) + " bytes, larger than the " +
            std::to_string(buf_.size()) + "-byte buffer");
      const uint8_t* p = buf_.data();
      size_t left = static_cast<size_t>(len);
      while (left >= NLMSG_HDRLEN) {
        nlmsghdr h;
        std::memcpy(&h, p, sizeof(h));
        if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > left)
          Die("malformed reply from the kernel");
        bool mine = h.nlmsg_seq == seq;
        if (mine && h.nlmsg_type == NLMSG_ERROR) {
          nlmsgerr e;
          std::memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
          if (msg)
            *msg = ext_ack_msg(p, h);
          return e.error;
        }
        if (mine && h.nlmsg_type == NLMSG_DONE)
          return 0;
        if (mine && out)
          out->emplace_back(p + NLMSG_HDRLEN, p + h.nlmsg_len);
        size_t step = NLMSG_ALIGN(h.nlmsg_len);
        if (step >= left)
          break;
        p += step;
        left -= step;
      }
    }
  }

 private:
  static std::string ext_ack_msg(const uint8_t* p, const nlmsghdr& h) {
    if (!(h.nlmsg_flags & NLM_F_ACK_TLVS))
      return "";
    nlmsgerr e;
    std::memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
    size_t off = NLMSG_HDRLEN + sizeof(e);
    if (!(h.nlmsg_flags & NLM_F_CAPPED) && e.error)
      off += e.msg.nlmsg_len - NLMSG_HDRLEN;
    if (off > h.nlmsg_len)
      return "";
    auto tlv = Parse(p + off, h.nlmsg_len - off);
    auto it = tlv.find(NLMSGERR_ATTR_MSG);
    if (it == tlv.end())
      return "";
    return std::string(it->second.begin(), it->second.end()).c_str();
  }

  int fd_;
  uint32_t seq_ = 0;
  Bytes buf_ = Bytes(1 << 17);
};

// --- the fuzzer -------------------------------------------------------------

constexpr uint32_t kHandle = 0x10000;  // 1:
constexpr uint64_t kLongLease = 3600ULL * 1000000000ULL;
constexpr uint64_t kShortLease = 5ULL * 1000000000ULL;  // ns: may lapse
constexpr unsigned kMaxClasses = 24;
// Classes at minors outside the first kMaxClasses + 4 (a random minor):
// past this many, one of them is deleted instead of a random message, so
// that the table, which every class message dumps, stays small.
constexpr size_t kStrayClasses = 8;
constexpr uint64_t kProgressEvery = 10000;  // messages between progress lines

struct Stats {
  uint64_t sent = 0, accepted = 0, refused = 0, mutated = 0;
};

class Fuzzer {
 public:
  Fuzzer(int ifindex, uint64_t seed) : ifindex_(ifindex), rng_(seed) {}

  void setup();
  void run(uint64_t iterations);

 private:
  enum Kind { kQdisc, kClass, kGenl, kKinds };

  // Random numbers.
  uint64_t u(uint64_t n) { return n ? rng_() % n : 0; }
  bool chance(unsigned pct) { return u(100) < pct; }
  uint64_t pick(std::initializer_list<uint64_t> v) {
    return *(v.begin() + u(v.size()));
  }
  uint64_t edge(uint64_t lo, uint64_t hi);

  // Requests.
  int request(Socket& s, uint16_t type, uint16_t flags, const Bytes& p,
              std::vector<Bytes>* out = nullptr, std::string* msg = nullptr);
  tcmsg tcm(uint32_t handle, uint32_t parent) const;
  Bytes tcmsg_payload(const tcmsg& t, const std::vector<Attr>& attrs);
  Bytes genl_payload(uint8_t cmd, uint8_t version,
                     const std::vector<Attr>& attrs);

  // Messages.
  Attr random_leaf(uint16_t type, size_t size, uint64_t value);
  void mutate(std::vector<Attr>& attrs, unsigned maxtype);
  void cut_or_flip(Bytes& payload, size_t keep);
  void add_options(std::vector<Attr>& top, std::vector<Attr> opts);
  int send_qdisc(Bytes* opts);
  int send_class(uint16_t* type, Bytes* payload);
  int send_genl(Bytes* payload, uint8_t* cmd);

  // State.
  struct Qstate {
    Bytes opts;
    uint64_t resv_sum = 0, resv_capacity = 0;
    uint32_t resv_classes = 0;
    bool operator==(const Qstate& o) const { return opts == o.opts; }
  };
  using Cstate = std::map<uint32_t, Bytes>;  // classid -> options
  struct Gstate {
    // address -> credit, epoch; entries that may lapse left out
    std::map<Bytes, std::pair<uint32_t, uint64_t>> credits;
    std::set<Bytes> lapsing;
    Bytes mon;  // enabled, size, dscp, hold
    size_t entries = 0;
  };
  std::vector<std::pair<tcmsg, std::map<uint16_t, Bytes>>> tc_dump(
      uint16_t type, const char* what);
  Qstate qstate();
  Cstate cstate();
  Gstate gstate();
  // Each returns the state after the message, the next one's before.
  Qstate check_qdisc(int err, const Bytes& opts, const Qstate& before);
  Cstate check_class(int err, uint16_t type, const Bytes& payload,
                     const Cstate& before);
  Gstate check_genl(int err, uint8_t cmd, const Bytes& payload,
                    const Gstate& before);
  void check_all();
  [[noreturn]] void fail(const std::string& why, const Bytes& msg);

  int ifindex_;
  std::mt19937_64 rng_;
  Socket rt_{NETLINK_ROUTE};
  Socket gn_{NETLINK_GENERIC};
  uint16_t family_ = 0;
  // What the qdisc was last asked for: split-gso and linkrate, which keep
  // their value when a message that does not set them is refused.
  uint8_t want_split_ = PARQ_SPLIT_GSO_AUTO;
  uint64_t want_linkrate_ = 0;
  uint64_t iter_ = 0;
  Stats stats_[kKinds];
  // The last state read of each kind: a message of one kind leaves the
  // others' alone, so each is read once per message, after it.
  Qstate q_;
  Cstate c_;
  Gstate g_;
  std::string last_msg_;
};

uint64_t Fuzzer::edge(uint64_t lo, uint64_t hi) {
  switch (u(8)) {
    case 0:
      return lo;
    case 1:
      return hi;
    case 2:
      return lo - 1;
    case 3:
      return hi + 1;
    case 4:
      return 0;
    case 5:
      return ~0ULL;
    default:
      return lo + (hi > lo ? u(hi - lo + 1) : 0);
  }
}

int Fuzzer::request(Socket& s, uint16_t type, uint16_t flags, const Bytes& p,
                    std::vector<Bytes>* out, std::string* msg) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
  uint32_t seq = s.send(h, p);
  return s.replies(seq, out, msg);
}

// A tc message about the fuzzed device.
tcmsg Fuzzer::tcm(uint32_t handle, uint32_t parent) const {
  tcmsg t{};
  t.tcm_family = AF_UNSPEC;
  t.tcm_ifindex = ifindex_;
  t.tcm_handle = handle;
  t.tcm_parent = parent;
  return t;
}

Bytes Fuzzer::tcmsg_payload(const tcmsg& t, const std::vector<Attr>& attrs) {
  Bytes b(NLMSG_ALIGN(sizeof(t)));
  std::memcpy(b.data(), &t, sizeof(t));
  PutAttrs(b, attrs);
  return b;
}

Bytes Fuzzer::genl_payload(uint8_t cmd, uint8_t version,
                           const std::vector<Attr>& attrs) {
  genlmsghdr g{};
  g.cmd = cmd;
  g.version = version;
  Bytes b(GENL_HDRLEN);
  std::memcpy(b.data(), &g, sizeof(g));
  PutAttrs(b, attrs);
  return b;
}

Attr Fuzzer::random_leaf(uint16_t type, size_t size, uint64_t value) {
  Attr a;
  a.type = type;
  if (chance(8))
    size = pick({0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17});
  a.data.resize(size);
  for (size_t i = 0; i < size; i++)
    a.data[i] = i < 8 ? static_cast<uint8_t>(value >> (8 * i))
                      : static_cast<uint8_t>(u(256));
  return a;
}

// Structural mutations of a list of attributes.
void Fuzzer::mutate(std::vector<Attr>& attrs, unsigned maxtype) {
  unsigned n = 1 + static_cast<unsigned>(u(3));
  for (unsigned i = 0; i < n; i++) {
    switch (u(8)) {
      case 0:  // repeat one
        if (!attrs.empty())
          attrs.push_back(attrs[u(attrs.size())]);
        break;
      case 1:  // drop one
        if (!attrs.empty())
          attrs.erase(attrs.begin() + static_cast<long>(u(attrs.size())));
        break;
      case 2:  // an unknown or reserved type
        attrs.push_back(
            random_leaf(static_cast<uint16_t>(
                            pick({0, maxtype + 1, maxtype + 2, 64, 0x3fff})),
                        u(17), rng_()));
        break;
      case 3:  // a flag on a type
        if (!attrs.empty())
          attrs[u(attrs.size())].type |=
              static_cast<uint16_t>(pick({NLA_F_NESTED, NLA_F_NET_BYTEORDER}));
        break;
      case 4: {  // a leaf made a nest of leaves
        if (attrs.empty())
          break;
        Attr& a = attrs[u(attrs.size())];
        Attr inner = a;
        a.is_nest = true;
        a.nest = {inner, inner};
        a.data.clear();
        break;
      }
      case 5: {  // an empty or deeply nested attribute
        Attr a;
        a.type = static_cast<uint16_t>(1 + u(maxtype));
        a.is_nest = chance(50);
        Attr* p = &a;
        for (unsigned d = 0; a.is_nest && d < u(40); d++) {
          p->nest.push_back(Attr{});
          p = &p->nest.back();
          p->type = static_cast<uint16_t>(1 + u(maxtype));
          p->is_nest = true;
        }
        attrs.push_back(a);
        break;
      }
      case 6:  // the length of one changed
        if (!attrs.empty() && !attrs[0].is_nest) {
          Attr& a = attrs[u(attrs.size())];
          if (!a.is_nest)
            a.data.resize(u(20));
        }
        break;
      default:  // shuffled
        for (size_t j = attrs.size(); j > 1; j--)
          std::swap(attrs[j - 1], attrs[u(j)]);
        break;
    }
  }
}

// Flip bytes past @keep, or cut the payload short.
void Fuzzer::cut_or_flip(Bytes& payload, size_t keep) {
  if (payload.size() <= keep)
    return;
  if (chance(50)) {
    payload.resize(keep + u(payload.size() - keep));
    return;
  }
  unsigned n = 1 + static_cast<unsigned>(u(4));
  for (unsigned i = 0; i < n; i++)
    payload[keep + u(payload.size() - keep)] ^=
        static_cast<uint8_t>(1 + u(255));
}

// TCA_OPTIONS around @opts, mostly flagged nested as the kernel wants,
// sometimes left out.
void Fuzzer::add_options(std::vector<Attr>& top, std::vector<Attr> opts) {
  Attr o;
  o.type = static_cast<uint16_t>(TCA_OPTIONS | (chance(90) ? NLA_F_NESTED : 0));
  o.is_nest = true;
  o.nest = std::move(opts);
  if (!chance(3))
    top.push_back(std::move(o));
}

// --- the qdisc's options ---------------------------------------------------

struct OptSpec {
  uint16_t type;
  size_t size;
  int64_t lo;  // what the module accepts
  uint64_t hi;
  bool is_signed;
  uint64_t dflt;
};

constexpr size_t ParamSize(parq_param_type t) {
  return t == PARQ_U8 ? 1 : t == PARQ_U64 ? 8 : 4;
}

// What the module accepts of a row: min(min, word_value) ..
// max(max, word_value), compared by value whatever the types' signs.
template <typename A, typename B>
constexpr int64_t ParamLo(A min, B word_value) {
  return std::cmp_less(min, word_value) ? static_cast<int64_t>(min)
                                        : static_cast<int64_t>(word_value);
}
template <typename A, typename B>
constexpr uint64_t ParamHi(A max, B word_value) {
  return std::cmp_greater(max, word_value) ? static_cast<uint64_t>(max)
                                           : static_cast<uint64_t>(word_value);
}

#define PARQ_FUZZ_OPT(a, field, kw, t, syn, meta, lo, hi, dflt, word, wval, \
                      names, msg)                                           \
  OptSpec{a,                                                                \
          ParamSize(t),                                                     \
          ParamLo(+(lo), +(wval)),                                          \
          ParamHi(+(hi), +(wval)),                                          \
          (t) == PARQ_S32,                                                  \
          static_cast<uint64_t>(dflt)},

// The padding, then every parameter from its row in <parq/params.h>.
const OptSpec kQopts[] = {{TCA_PARQ_PAD, 8, 0, 0, false, 0},
                          PARQ_PARAMS(PARQ_FUZZ_OPT)};

#undef PARQ_FUZZ_OPT

// Limits above this only cost the fuzzer's machine memory.
constexpr uint64_t kFuzzLimitMax = 20000;

int Fuzzer::send_qdisc(Bytes* opts_out) {
  std::vector<Attr> opts;
  unsigned n = static_cast<unsigned>(u(5));
  for (unsigned i = 0; i < n; i++) {
    const OptSpec& s = kQopts[u(std::size(kQopts))];
    uint64_t hi = s.type == TCA_PARQ_LIMIT || s.type == TCA_PARQ_FLOW_LIMIT
                      ? kFuzzLimitMax
                      : s.hi;
    // A signed range: its edges and what lies just outside them.
    uint64_t v = s.is_signed ? static_cast<uint64_t>(
                                   s.lo - 2 +
                                   static_cast<int64_t>(u(static_cast<uint64_t>(
                                       static_cast<int64_t>(hi) - s.lo + 5))))
                             : edge(static_cast<uint64_t>(s.lo), hi);
    opts.push_back(random_leaf(s.type, s.size, v));
  }
  bool mutated = chance(30);
  if (mutated)
    mutate(opts, TCA_PARQ_MAX);

  std::vector<Attr> top;
  if (!chance(3))
    top.push_back(StrAttr(TCA_KIND,
                          chance(95)             ? "parq"
                          : pick({0, 1, 2}) == 0 ? "pfifo"
                          : chance(50)           ? "parqq"
                                                 : "",
                          true));
  add_options(top, std::move(opts));

  tcmsg t = tcm(kHandle, TC_H_ROOT);
  uint16_t flags = 0;
  if (chance(5)) {
    mutated = true;
    switch (u(4)) {
      case 0:
        t.tcm_ifindex = static_cast<int>(pick({0, 9999, 1}));
        break;
      case 1:
        t.tcm_handle = static_cast<uint32_t>(rng_());
        break;
      case 2:
        t.tcm_parent = static_cast<uint32_t>(rng_());
        break;
      default:
        flags = NLM_F_EXCL;
        break;
    }
  }
  Bytes p = tcmsg_payload(t, top);
  if (chance(5)) {
    mutated = true;
    cut_or_flip(p, NLMSG_ALIGN(sizeof(tcmsg)));
  }
  stats_[kQdisc].mutated += mutated;
  // What the kernel parsed, if it took the message: the options nest.
  opts_out->clear();
  auto m = Parse(p.data() + NLMSG_ALIGN(sizeof(tcmsg)),
                 p.size() - NLMSG_ALIGN(sizeof(tcmsg)));
  if (m.count(TCA_OPTIONS))
    *opts_out = m[TCA_OPTIONS];
  return request(rt_, RTM_NEWQDISC, flags, p, nullptr, &last_msg_);
}

// --- reserved classes -------------------------------------------------------

int Fuzzer::send_class(uint16_t* type, Bytes* payload) {
  tcmsg t = tcm(0, 0);
  std::vector<uint32_t> strays;
  for (const auto& [handle, opts] : c_)
    if (TC_H_MIN(handle) >= PARQ_RESV_MINOR_MIN + kMaxClasses + 4)
      strays.push_back(handle);
  if (strays.size() > kStrayClasses) {
    *type = RTM_DELTCLASS;
    t.tcm_handle = strays[u(strays.size())];
    t.tcm_parent = kHandle;
    *payload = tcmsg_payload(t, {});
    return request(rt_, *type, 0, *payload, nullptr, &last_msg_);
  }
  uint32_t minor = static_cast<uint32_t>(
      chance(80) ? PARQ_RESV_MINOR_MIN + u(kMaxClasses + 4)
                 : pick({0, 1, 2, 3, 0x15, 0xffff, rng_() & 0xffff}));
  t.tcm_handle = TC_H_MAKE(chance(95) ? kHandle : 0x20000, minor);
  t.tcm_parent = static_cast<uint32_t>(
      chance(90) ? pick({TC_H_ROOT, kHandle})
                 : pick({0, kHandle | 1, 0x20000, rng_()}));
  bool mutated = false;
  std::vector<Attr> top;
  uint16_t flags = 0;
  if (chance(20)) {
    *type = RTM_DELTCLASS;
  } else {
    *type = RTM_NEWTCLASS;
    flags = static_cast<uint16_t>(NLM_F_CREATE | (chance(20) ? NLM_F_EXCL : 0));
    if (!chance(5))
      top.push_back(StrAttr(TCA_KIND, "parq"));
    std::vector<Attr> opts;
    unsigned n = static_cast<unsigned>(chance(85) ? 1 : u(4));
    for (unsigned i = 0; i < n; i++) {
      if (chance(50))
        opts.push_back(random_leaf(
            TCA_PARQ_CLASS_RATE, 8,
            chance(80) ? 1000 + u(3000000) : edge(1, PARQ_RATE_MAX)));
      else
        opts.push_back(random_leaf(
            TCA_PARQ_CLASS_IDT, 8,
            chance(80) ? 100000 + u(100000000) : edge(1, PARQ_IDT_MAX)));
    }
    if (chance(20)) {
      mutated = true;
      mutate(opts, TCA_PARQ_CLASS_MAX);
    }
    add_options(top, std::move(opts));
    if (chance(5)) {
      tc_estimator est{};
      est.interval = static_cast<signed char>(u(256));
      est.ewma_log = static_cast<unsigned char>(u(256));
      top.push_back(Leaf(TCA_RATE, est));
    }
  }
  Bytes p = tcmsg_payload(t, top);
  if (chance(4)) {
    mutated = true;
    cut_or_flip(p, NLMSG_ALIGN(sizeof(tcmsg)));
  }
  stats_[kClass].mutated += mutated;
  *payload = p;
  return request(rt_, *type, flags, p, nullptr, &last_msg_);
}

// --- the generic netlink family -------------------------------------------

int Fuzzer::send_genl(Bytes* payload, uint8_t* cmd) {
  static const uint32_t addrs4[] = {0x0100000a, 0x0200000a, 0x0300000a,
                                    0x0400000a, 0x0500000a};
  *cmd =
      static_cast<uint8_t>(chance(92) ? 1 + u(PARQ_CMD_MON_EVENT)
                                      : pick({0, PARQ_CMD_MAX + 1, 200, 255}));
  std::vector<Attr> attrs;
  auto addr = [&] {
    if (chance(70))
      attrs.push_back(Leaf<uint32_t>(
          PARQ_A_ADDR4,
          chance(95) ? addrs4[u(5)] : static_cast<uint32_t>(rng_())));
    else {
      Bytes a6(16, 0);
      a6[0] = 0xfd;
      a6[15] = static_cast<uint8_t>(1 + u(4));
      Attr a;
      a.type = PARQ_A_ADDR6;
      a.data = a6;
      attrs.push_back(a);
    }
  };
  switch (*cmd) {
    case PARQ_CMD_CREDIT_SET:
      addr();
      attrs.push_back(
          random_leaf(PARQ_A_CREDIT, 4, chance(70) ? u(100000) : rng_()));
      if (chance(70))
        attrs.push_back(
            random_leaf(PARQ_A_EPOCH, 8, edge(PARQ_EPOCH_MIN, PARQ_EPOCH_MAX)));
      attrs.push_back(random_leaf(
          PARQ_A_LEASE, 8, chance(60) ? kLongLease : edge(1, PARQ_LEASE_MAX)));
      break;
    case PARQ_CMD_CREDIT_DEL:
    case PARQ_CMD_CREDIT_GET:
      if (chance(85))
        addr();
      break;
    case PARQ_CMD_MON_SET:
      if (chance(60))
        attrs.push_back(random_leaf(PARQ_A_MON_ENABLED, 1, edge(0, 1)));
      if (chance(50))
        attrs.push_back(
            random_leaf(PARQ_A_MON_SIZE, 4, edge(1, PARQ_MON_SIZE_MAX)));
      if (chance(40))
        attrs.push_back(random_leaf(PARQ_A_MON_DSCP, 8, rng_()));
      if (chance(50))
        attrs.push_back(random_leaf(
            PARQ_A_MON_HOLD, 8, edge(PARQ_MON_HOLD_MIN, PARQ_MON_HOLD_MAX)));
      if (chance(30))
        attrs.push_back(random_leaf(PARQ_A_MON_REPORT_LOCAL, 1, edge(0, 1)));
      if (chance(25)) {  // a peer set: a few addresses, rarely too many
        std::vector<Attr> top = std::move(attrs);
        attrs.clear();
        size_t n = chance(2) ? PARQ_MON_PEERS_MAX + 1 : u(6);
        for (size_t i = 0; i < n; i++)
          addr();
        if (chance(15))
          mutate(attrs, PARQ_A_MAX);
        Attr peers;
        peers.type = static_cast<uint16_t>(PARQ_A_MON_PEERS |
                                           (chance(90) ? NLA_F_NESTED : 0));
        peers.is_nest = true;
        peers.nest = std::move(attrs);
        attrs = std::move(top);
        attrs.push_back(std::move(peers));
      }
      break;
    default:
      break;
  }
  // Attributes the command does not take, reply-only ones among them.
  if (chance(15))
    attrs.push_back(
        random_leaf(static_cast<uint16_t>(1 + u(PARQ_A_MAX)), 8, rng_()));
  bool mutated = chance(20);
  if (mutated)
    mutate(attrs, PARQ_A_MAX);
  uint8_t version =
      chance(95) ? PARQ_GENL_VERSION : static_cast<uint8_t>(u(256));
  Bytes p = genl_payload(*cmd, version, attrs);
  if (chance(4)) {
    mutated = true;
    cut_or_flip(p, GENL_HDRLEN);
  }
  stats_[kGenl].mutated += mutated;
  *payload = p;
  uint16_t flags = 0;
  if ((*cmd == PARQ_CMD_CREDIT_GET || *cmd == PARQ_CMD_PEER_GET ||
       *cmd == PARQ_CMD_MON_GET) &&
      chance(50))
    flags = NLM_F_DUMP;
  std::vector<Bytes> sink;
  return request(gn_, family_, flags, p, &sink, &last_msg_);
}

// --- reading the state back -----------------------------------------------

// The device's qdiscs or classes: each one's tcmsg and attributes.
std::vector<std::pair<tcmsg, std::map<uint16_t, Bytes>>> Fuzzer::tc_dump(
    uint16_t type, const char* what) {
  tcmsg t = tcm(0, 0);
  std::vector<Bytes> out;
  int err = request(rt_, type, NLM_F_DUMP, tcmsg_payload(t, {}), &out);
  if (err)
    Die(std::string(what) + " dump failed: " + std::strerror(-err));
  std::vector<std::pair<tcmsg, std::map<uint16_t, Bytes>>> res;
  for (const auto& m : out) {
    tcmsg r;
    std::memcpy(&r, m.data(), sizeof(r));
    if (r.tcm_ifindex == ifindex_)
      res.emplace_back(r, Parse(m.data() + NLMSG_ALIGN(sizeof(r)),
                                m.size() - NLMSG_ALIGN(sizeof(r))));
  }
  return res;
}

Fuzzer::Qstate Fuzzer::qstate() {
  for (auto& [r, a] : tc_dump(RTM_GETQDISC, "qdisc")) {
    if (r.tcm_handle != kHandle)
      continue;
    auto k = a.find(TCA_KIND);
    if (k == a.end() ||
        std::string(k->second.begin(), k->second.end()).c_str() !=
            std::string("parq"))
      Die("the parq qdisc at 1: is gone");
    Qstate s;
    s.opts = a[TCA_OPTIONS];
    auto st = Parse(a[TCA_STATS2]);
    const Bytes& x = st[TCA_STATS_APP];
    tc_parq_xstats xs{};
    std::memcpy(&xs, x.data(), std::min(x.size(), sizeof(xs)));
    s.resv_sum = xs.resv_sum_rate;
    s.resv_capacity = xs.resv_capacity;
    s.resv_classes = xs.resv_classes;
    return s;
  }
  Die("no qdisc 1: on the device");
}

Fuzzer::Cstate Fuzzer::cstate() {
  Cstate s;
  for (auto& [r, a] : tc_dump(RTM_GETTCLASS, "class"))
    if (TC_H_MIN(r.tcm_handle) >= PARQ_RESV_MINOR_MIN)
      s[r.tcm_handle] = a[TCA_OPTIONS];
  return s;
}

Fuzzer::Gstate Fuzzer::gstate() {
  Gstate s;
  std::vector<Bytes> out;
  int err = request(gn_, family_, NLM_F_DUMP,
                    genl_payload(PARQ_CMD_CREDIT_GET, 1, {}), &out);
  if (err)
    Die("credit dump failed: " + std::string(std::strerror(-err)));
  s.entries = out.size();
  for (const auto& m : out) {
    auto a = Parse(m.data() + GENL_HDRLEN, m.size() - GENL_HDRLEN);
    Bytes addr = a.count(PARQ_A_ADDR4) ? a[PARQ_A_ADDR4] : a[PARQ_A_ADDR6];
    auto credit = Get<uint32_t>(a, PARQ_A_CREDIT);
    auto epoch = Get<uint64_t>(a, PARQ_A_EPOCH);
    auto lease = Get<uint64_t>(a, PARQ_A_LEASE);
    if ((addr.size() != 4 && addr.size() != 16) || !credit || !epoch || !lease)
      fail("a credit entry without its address, credit, epoch or lease", m);
    if (*epoch < PARQ_EPOCH_MIN || *epoch > PARQ_EPOCH_MAX ||
        *lease > PARQ_LEASE_MAX)
      fail("a credit entry out of range", m);
    if (*lease < kShortLease)
      s.lapsing.insert(addr);
    else
      s.credits[addr] = {*credit, *epoch};
  }
  if (s.entries > PARQ_CREDIT_ENTRIES_MAX)
    fail("more credit entries than PARQ_CREDIT_ENTRIES_MAX", {});
  out.clear();
  err = request(gn_, family_, 0, genl_payload(PARQ_CMD_MON_GET, 1, {}), &out);
  if (err || out.size() != 1)
    Die("monitor get failed");
  auto a = Parse(out[0].data() + GENL_HDRLEN, out[0].size() - GENL_HDRLEN);
  auto en = Get<uint8_t>(a, PARQ_A_MON_ENABLED);
  auto size = Get<uint32_t>(a, PARQ_A_MON_SIZE);
  auto dscp = Get<uint64_t>(a, PARQ_A_MON_DSCP);
  auto hold = Get<uint64_t>(a, PARQ_A_MON_HOLD);
  auto local = Get<uint8_t>(a, PARQ_A_MON_REPORT_LOCAL);
  auto npeers = Get<uint32_t>(a, PARQ_A_MON_NPEERS);
  if (!en || !size || !dscp || !hold || !local || !npeers || *en > 1 ||
      *size < 1 || *size > PARQ_MON_SIZE_MAX || *hold < PARQ_MON_HOLD_MIN ||
      *hold > PARQ_MON_HOLD_MAX || *local > 1 || *npeers > PARQ_MON_PEERS_MAX)
    fail("the monitor's configuration is missing or out of range", out[0]);
  // The peer count last: the read-back below walks the first five.
  for (auto b :
       {a[PARQ_A_MON_ENABLED], a[PARQ_A_MON_SIZE], a[PARQ_A_MON_DSCP],
        a[PARQ_A_MON_HOLD], a[PARQ_A_MON_REPORT_LOCAL], a[PARQ_A_MON_NPEERS]})
    s.mon.insert(s.mon.end(), b.begin(), b.end());
  return s;
}

// --- the checks -------------------------------------------------------------

void Fuzzer::fail(const std::string& why, const Bytes& msg) {
  std::fprintf(stderr,
               "parq-nlfuzz: VIOLATION at message %llu: %s\n"
               "  message: %s\n  kernel said: %s\n",
               static_cast<unsigned long long>(iter_), why.c_str(),
               Hex(msg).c_str(), last_msg_.c_str());
  std::exit(1);
}

Fuzzer::Qstate Fuzzer::check_qdisc(int err, const Bytes& opts,
                                   const Qstate& before) {
  Qstate now = qstate();
  if (err) {
    if (!(now == before))
      fail("a refused qdisc change changed the options: " + Hex(before.opts) +
               " -> " + Hex(now.opts),
           opts);
    return now;
  }
  auto got = Parse(now.opts);
  auto sent = Parse(opts);
  for (const auto& s : kQopts) {
    if (s.type == TCA_PARQ_PAD)
      continue;
    auto it = got.find(s.type);
    if (it == got.end() || it->second.size() != s.size)
      fail("option " + std::to_string(s.type) +
               " missing or of the wrong size in the dump",
           now.opts);
    uint64_t v = 0;
    std::memcpy(&v, it->second.data(), s.size);
    if (s.is_signed) {
      int32_t o;
      std::memcpy(&o, it->second.data(), 4);
      if (o < s.lo || o > static_cast<int64_t>(s.hi))
        fail("option " + std::to_string(s.type) + " out of range", now.opts);
      continue;
    }
    bool zero_ok = s.type == TCA_PARQ_LINKRATE || s.lo == 0;
    if ((v < static_cast<uint64_t>(s.lo) && !zero_ok) || v > s.hi)
      fail("option " + std::to_string(s.type) + " out of range", now.opts);
    // What the message set reads back.
    auto m = sent.find(s.type);
    if (m == sent.end() || m->second.size() != s.size)
      continue;
    uint64_t want = 0;
    std::memcpy(&want, m->second.data(), s.size);
    if (s.type == TCA_PARQ_SPLIT_GSO) {
      want_split_ = static_cast<uint8_t>(want);
      continue;
    }
    if (s.type == TCA_PARQ_LINKRATE) {
      want_linkrate_ = want;
      continue;
    }
    if (v != want)
      fail("option " + std::to_string(s.type) +
               " reads back other than it was set",
           opts);
  }
  uint32_t limit = *Get<uint32_t>(got, TCA_PARQ_LIMIT);
  uint32_t flow_limit = *Get<uint32_t>(got, TCA_PARQ_FLOW_LIMIT);
  if (flow_limit > limit)
    fail("flow-limit above limit", now.opts);
  // Dumped as configured, auto included (the statistics resolve it).
  if (*Get<uint8_t>(got, TCA_PARQ_SPLIT_GSO) != want_split_)
    fail("split-gso does not read back as it was set", now.opts);
  if (*Get<uint64_t>(got, TCA_PARQ_LINKRATE) != want_linkrate_)
    fail("linkrate does not read back as it was set", now.opts);
  if (now.resv_sum > now.resv_capacity)
    fail("reserved " + std::to_string(now.resv_sum) +
             " B/s above the capacity " + std::to_string(now.resv_capacity),
         now.opts);
  return now;
}

Fuzzer::Cstate Fuzzer::check_class(int err, uint16_t type, const Bytes& payload,
                                   const Cstate& before) {
  Cstate now = cstate();
  if (err) {
    if (now != before)
      fail("a refused class request changed the classes", payload);
    return now;
  }
  tcmsg t;
  std::memcpy(&t, payload.data(), sizeof(t));
  if (type == RTM_DELTCLASS) {
    if (now.count(t.tcm_handle) || before.size() != now.size() + 1)
      fail("a deleted class is still there", payload);
  } else {
    auto it = now.find(t.tcm_handle);
    if (it == now.end())
      fail("an accepted class is not there", payload);
    auto a = Parse(it->second);
    auto rate = Get<uint64_t>(a, TCA_PARQ_CLASS_RATE);
    auto idt = Get<uint64_t>(a, TCA_PARQ_CLASS_IDT);
    if (!rate == !idt || (rate && (*rate < 1 || *rate > PARQ_RATE_MAX)) ||
        (idt && (*idt < 1 || *idt > PARQ_IDT_MAX)))
      fail("a class's options are out of range", it->second);
    for (const auto& [id, o] : before)
      if (id != t.tcm_handle && (!now.count(id) || now[id] != o))
        fail("a request for one class changed another", payload);
  }
  Qstate q = qstate();
  if (q.resv_classes != now.size())
    fail("the qdisc counts " + std::to_string(q.resv_classes) +
             " reserved classes, the dump has " + std::to_string(now.size()),
         payload);
  if (q.resv_sum > q.resv_capacity)
    fail("reserved " + std::to_string(q.resv_sum) + " B/s above the capacity " +
             std::to_string(q.resv_capacity),
         payload);
  return now;
}

Fuzzer::Gstate Fuzzer::check_genl(int err, uint8_t cmd, const Bytes& payload,
                                  const Gstate& before) {
  Gstate now = gstate();
  bool changed = now.mon != before.mon;
  // An entry may have come within kShortLease of its end since the
  // last read: it lapses, which is no change.
  for (const auto& [addr, v] : before.credits) {
    auto it = now.credits.find(addr);
    if (it == now.credits.end() ? !now.lapsing.count(addr) : it->second != v)
      changed = true;
  }
  for (const auto& [addr, v] : now.credits)
    if (!before.credits.count(addr))
      changed = true;
  bool writes = cmd == PARQ_CMD_CREDIT_SET || cmd == PARQ_CMD_CREDIT_DEL ||
                cmd == PARQ_CMD_MON_SET;
  if (changed && (err || !writes))
    fail(err ? "a refused command changed the tables"
             : "a read changed the tables",
         payload);
  if (err || !writes)
    return now;
  auto a = Parse(payload.data() + GENL_HDRLEN, payload.size() - GENL_HDRLEN);
  Bytes addr = a.count(PARQ_A_ADDR4) ? a[PARQ_A_ADDR4] : a[PARQ_A_ADDR6];
  if (a.count(PARQ_A_ADDR4) && a.count(PARQ_A_ADDR6))
    return now;  // which one the kernel took is its choice
  if (cmd == PARQ_CMD_CREDIT_SET) {
    auto lease = Get<uint64_t>(a, PARQ_A_LEASE);
    if (!lease || *lease < 2 * kShortLease)
      return now;
    auto it = now.credits.find(addr);
    auto credit = Get<uint32_t>(a, PARQ_A_CREDIT);
    uint64_t epoch =
        Get<uint64_t>(a, PARQ_A_EPOCH).value_or(PARQ_EPOCH_DEFAULT);
    if (it == now.credits.end() || !credit ||
        it->second != std::make_pair(*credit, epoch))
      fail("an accepted credit does not read back", payload);
  } else if (cmd == PARQ_CMD_CREDIT_DEL) {
    if (addr.empty() ? now.entries != 0 : now.credits.count(addr) != 0)
      fail("a deleted credit is still there", payload);
  } else {
    size_t off = 0;
    uint16_t types[] = {PARQ_A_MON_ENABLED, PARQ_A_MON_SIZE, PARQ_A_MON_DSCP,
                        PARQ_A_MON_HOLD, PARQ_A_MON_REPORT_LOCAL};
    size_t sizes[] = {1, 4, 8, 8, 1};
    for (size_t i = 0; i < std::size(types); i++) {
      auto it = a.find(types[i]);
      if (it != a.end() && it->second.size() == sizes[i] &&
          !std::equal(it->second.begin(), it->second.end(),
                      now.mon.begin() + static_cast<long>(off)))
        fail("a monitor setting does not read back", payload);
      off += sizes[i];
    }
  }
  return now;
}

void Fuzzer::check_all() {
  q_ = qstate();
  c_ = cstate();
  g_ = gstate();
  if (q_.resv_classes != c_.size() || q_.resv_sum > q_.resv_capacity)
    fail("the reserved classes do not add up", q_.opts);
}

// --- set-up and the loop -----------------------------------------------------

void Fuzzer::setup() {
  // The family's id.
  std::vector<Attr> attrs{StrAttr(CTRL_ATTR_FAMILY_NAME, PARQ_GENL_NAME)};
  genlmsghdr g{};
  g.cmd = CTRL_CMD_GETFAMILY;
  g.version = 1;
  Bytes p(GENL_HDRLEN);
  std::memcpy(p.data(), &g, sizeof(g));
  PutAttrs(p, attrs);
  std::vector<Bytes> out;
  if (request(gn_, GENL_ID_CTRL, 0, p, &out) || out.empty())
    Die("no generic netlink family \"parq\": is sch_parq loaded?");
  auto a = Parse(out[0].data() + GENL_HDRLEN, out[0].size() - GENL_HDRLEN);
  auto id = Get<uint16_t>(a, CTRL_ATTR_FAMILY_ID);
  if (!id)
    Die("CTRL_CMD_GETFAMILY: no family id");
  family_ = *id;

  // The qdisc, with every option given.
  want_linkrate_ = 125000000;
  std::vector<Attr> opts;
  for (const OptSpec& s : kQopts) {
    uint64_t v = s.type == TCA_PARQ_SPLIT_GSO  ? want_split_
                 : s.type == TCA_PARQ_LINKRATE ? want_linkrate_
                                               : s.dflt;
    if (s.type == TCA_PARQ_PAD)
      continue;
    if (s.size == 1)
      opts.push_back(Leaf<uint8_t>(s.type, static_cast<uint8_t>(v)));
    else if (s.size == 4)
      opts.push_back(Leaf<uint32_t>(s.type, static_cast<uint32_t>(v)));
    else
      opts.push_back(Leaf<uint64_t>(s.type, v));
  }
  Attr o;
  o.type = TCA_OPTIONS | NLA_F_NESTED;
  o.is_nest = true;
  o.nest = opts;
  tcmsg t = tcm(kHandle, TC_H_ROOT);
  int err = request(rt_, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE,
                    tcmsg_payload(t, {StrAttr(TCA_KIND, "parq"), o}), nullptr,
                    &last_msg_);
  if (err)
    Die("cannot add the parq qdisc: " + std::string(std::strerror(-err)) + " " +
        last_msg_);
  check_all();
}

void Fuzzer::run(uint64_t iterations) {
  static const char* names[kKinds] = {"qdisc", "class", "genl"};
  auto t0 = std::chrono::steady_clock::now();
  for (iter_ = 1; iter_ <= iterations; iter_++) {
    unsigned r = static_cast<unsigned>(u(100));
    Kind k = r < 40 ? kQdisc : r < 65 ? kClass : kGenl;
    int err;
    last_msg_.clear();
    if (k == kQdisc) {
      Bytes opts;
      err = send_qdisc(&opts);
      q_ = check_qdisc(err, opts, q_);
    } else if (k == kClass) {
      uint16_t type;
      Bytes payload;
      err = send_class(&type, &payload);
      c_ = check_class(err, type, payload, c_);
    } else {
      Bytes payload;
      uint8_t cmd;
      err = send_genl(&payload, &cmd);
      g_ = check_genl(err, cmd, payload, g_);
    }
    stats_[k].sent++;
    (err ? stats_[k].refused : stats_[k].accepted)++;
    if (iter_ % 256 == 0)
      check_all();
    if (iter_ % kProgressEvery == 0)
      std::printf(
          "%llu messages: %.1f s, %zu reserved classes, %zu credit "
          "entries\n",
          static_cast<unsigned long long>(iter_),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count(),
          c_.size(), g_.entries);
  }
  check_all();
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  uint64_t total = 0;
  for (int k = 0; k < kKinds; k++) {
    total += stats_[k].sent;
    std::printf("%s: %llu sent, %llu accepted, %llu refused, %llu mutated\n",
                names[k], static_cast<unsigned long long>(stats_[k].sent),
                static_cast<unsigned long long>(stats_[k].accepted),
                static_cast<unsigned long long>(stats_[k].refused),
                static_cast<unsigned long long>(stats_[k].mutated));
  }
  std::printf("parq-nlfuzz: %llu messages in %.1f s, 0 violations\n",
              static_cast<unsigned long long>(total), secs);
}

[[noreturn]] void Usage(int code) {
  std::fprintf(
      code ? stderr : stdout,
      "usage: parq-nlfuzz --dev DEV [--iterations N] [--seed S]\n"
      "  Replaces DEV's root qdisc with parq 1: and sends N random and\n"
      "  mutated netlink messages at it and at the parq family\n"
      "  (default 100000), checking the configuration after each.\n");
  std::exit(code);
}

uint64_t Number(const char* opt, const char* s) {
  char* end;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno || *end || !*s)
    Die(std::string(opt) + ": not a number: " + s);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dev = nullptr;
  uint64_t iterations = 100000;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help")
      Usage(0);
    if (i + 1 >= argc)
      Usage(2);
    if (a == "--dev")
      dev = argv[++i];
    else if (a == "--iterations")
      iterations = Number("--iterations", argv[++i]);
    else if (a == "--seed")
      seed = Number("--seed", argv[++i]);
    else
      Usage(2);
  }
  if (!dev)
    Usage(2);
  int ifindex = static_cast<int>(if_nametoindex(dev));
  if (!ifindex)
    Die(std::string("no device ") + dev);
  std::printf("parq-nlfuzz: seed %llu, %llu messages at %s\n",
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(iterations), dev);
  std::fflush(stdout);
  Fuzzer f(ifindex, seed);
  f.setup();
  f.run(iterations);
  return 0;
}
