// SPDX-License-Identifier: GPL-2.0
//
// The wire format of parq-bench: every message, over TCP and over UDP,
// begins with one 32-byte header in network byte order:
//
//   0  u32 magic    "PQB1"
//   4  u8  type     enum Type
//   5  u8  flags    0
//   6  u16 src      sender's rank (a one-to-one client is rank 1)
//   8  u32 size     length of the whole message, header included
//  12  u32 reserved 0
//  16  u64 seq      message number (one-to-one) or iteration (collectives)
//  24  u64 ts_ns    sender's CLOCK_MONOTONIC time in ns; echoed in an Ack
//
// The size - 32 bytes after the header are zeros; a reader skips them.  Over
// TCP a message is a frame in the byte stream (FrameDecoder reassembles it
// from reads of any length); over UDP it is one datagram.

#ifndef BENCH_FRAME_H
#define BENCH_FRAME_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "parqd/base/result.h"

namespace parqbench {

// Every fallible call of parq-bench returns a Result: its value, or a
// message that says what went wrong (parqd's type, parqd/base/result.h).
using parq::parqd::Err;
using parq::parqd::Result;

constexpr uint32_t kMagic = 0x50514231;  // "PQB1"
constexpr uint32_t kHeaderSize = 32;
constexpr uint32_t kMaxTcpSize = 64u << 20;  // one message, TCP
constexpr uint32_t kMaxUdpSize = 65507;      // one IPv4 UDP datagram

enum class Type : uint8_t {
  kData = 1,   // a pattern message; one-to-one: answered by an Ack
  kAck = 2,    // echo of a Data message: same seq and ts_ns, header only
  kBulk = 3,   // bulk stream message, never answered
  kReady = 4,  // a rank is connected to all others (UDP: repeated)
  kHello = 5,  // first message on a TCP connection between ranks
  kStart = 6,  // root begins iteration seq
  kDone = 7,   // all-to-all: a rank has sent and received all of seq
  kEnd = 8,    // root: the run is over
};

const char* TypeName(Type t);

struct Header {
  Type type = Type::kData;
  uint16_t src = 0;
  uint32_t size = kHeaderSize;
  uint64_t seq = 0;
  uint64_t ts_ns = 0;

  bool operator==(const Header&) const = default;
};

void Encode(const Header& h, uint8_t out[kHeaderSize]);

// Decodes one header; an error when it is not a parq-bench header (wrong
// magic, unknown type) or its size is below kHeaderSize or above max_size.
Result<Header, std::string> Decode(const uint8_t in[kHeaderSize],
                                   uint32_t max_size = kMaxTcpSize);

// Reassembles frames from a TCP byte stream.  Payload bytes are counted
// and skipped, never stored, so a 64 MiB message costs 32 bytes of memory.
class FrameDecoder {
 public:
  // Consumes all n bytes; appends every frame completed by them to out.
  // An error on a malformed header (the frames before it are in out; the
  // stream is then lost).
  Result<std::monostate, std::string> feed(const uint8_t* p, size_t n,
                                           std::vector<Header>& out);

  // True between frames (no partial header or payload pending).
  bool at_boundary() const { return have_ == 0 && skip_ == 0; }

 private:
  uint8_t hdr_[kHeaderSize] = {};
  size_t have_ = 0;    // header bytes collected
  uint64_t skip_ = 0;  // payload bytes still to skip
  Header cur_;
};

}  // namespace parqbench

#endif
