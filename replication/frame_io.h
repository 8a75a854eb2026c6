// Blocking frame I/O on a replication connection (replication_wire.h
// framing): whole frames out, whole frames in, each bounded by a size limit
// and deadlines.
//
// Thread safety: one reader and one writer per descriptor at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error_code.h"

namespace shelfmark {

// Frames larger than this are refused (a full copy is sent in many frames).
inline constexpr uint32_t kMaxReplicationFrameBytes = 1u << 30;
// The largest body of every frame but a batch (hello, proof, ack,
// challenge, welcome: a cluster id of at most 128 bytes, an address, nonces
// and proofs). A leader reads nothing larger, before or after the handshake.
inline constexpr uint32_t kMaxControlFrameBytes = 4096;

// What one ReadFrame may take.
struct FrameLimits {
  uint32_t max_body_bytes = kMaxReplicationFrameBytes;
  // How long to wait for the frame's first byte (-1: as long as it takes;
  // an idle peer sends nothing).
  int wait_ms = -1;
  // How long the whole frame may take from its first byte (from the call
  // when `pending` already holds some; -1: no deadline, only `wait_ms`
  // without progress).
  int frame_ms = -1;
  // Before sleeping for the frame's first byte, poll for it this long
  // (common/reply_poll.h: yielding the CPU to any thread that wants it, and
  // not while the process has more such waits than half its CPUs, at least
  // one): a thread asleep between frames costs a wake-up per frame, and on
  // a virtual machine whose CPU went idle meanwhile an interrupt to a halted
  // CPU, the largest part of a standby's round trip (docs/ha.md, "What a
  // put waits for").
  int spin_us = 0;
};

// Reads one frame into *body (its body only). `pending` holds bytes already
// read from the descriptor (the sniffed tag): they are used first and
// cleared. RPC_FAIL on end of stream, an error, a deadline of `limits`
// passed, a wrong tag or a frame over limits.max_body_bytes (refused from
// its header: the body's memory grows only with the bytes that arrive);
// `peer_closed` (when not null) then says whether the peer closed the
// stream in order (FIN, not a reset) before the frame's first byte.
ErrorCode ReadFrame(int fd, const FrameLimits& limits, std::string* pending, std::string* body,
                    bool* peer_closed = nullptr);
// Writes `frames` whole. RPC_FAIL on an error or no progress for `timeout_ms`.
ErrorCode WriteFrames(int fd, int timeout_ms, std::string_view frames);

}  // namespace shelfmark
