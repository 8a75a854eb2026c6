// Blocking frame I/O on a replication connection (replication_wire.h
// framing): whole frames out, whole frames in, each bounded by a timeout
// and a size limit.
//
// Thread safety: one reader and one writer per descriptor at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error_code.h"

namespace shelfmark {

// Frames larger than this are refused (a full copy is sent in many frames).
inline constexpr uint32_t kMaxReplicationFrameBytes = 1u << 30;

// Reads one frame into *body (its body only). `pending` holds bytes already
// read from the descriptor (the sniffed tag): they are used first and
// cleared. RPC_FAIL on end of stream, an error, no progress for
// `timeout_ms`, a wrong tag or an oversized frame; `peer_closed` (when not
// null) then says whether the peer closed the stream in order (FIN, not a
// reset) before the frame's first byte.
ErrorCode ReadFrame(int fd, int timeout_ms, std::string* pending, std::string* body,
                    bool* peer_closed = nullptr);
// Writes `frames` whole. RPC_FAIL on an error or no progress for `timeout_ms`.
ErrorCode WriteFrames(int fd, int timeout_ms, const std::string& frames);

}  // namespace shelfmark
