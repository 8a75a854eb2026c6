// LookupConnection: serves one lookup channel connection (rpc/lookup_wire.h)
// on the RPC server's event loop: reads whole request frames, answers every
// frame that has arrived with one write (a client may pipeline), and loops.
// A reply is written in the same turn its request completes: no thread
// hand-off, one read and one write per request when requests come one by
// one. A mutation that waits for its standbys (master/replication_wait.h)
// holds the frames after it until its reply is settled.
//
// Limits: the stream is the connection's GuardedStream, whose frame meter
// knows lookup frames, so request size, the server's request budget, slow
// requests and idleness are held exactly as for Cap'n Proto connections.
// A frame that does not start with the lookup tag, a malformed request or
// an unauthenticated call ends the connection (after its reply, where one
// is due); nothing else is affected.
//
// Thread safety: belongs to its loop thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <kj/async.h>

#include "master/guarded_stream.h"
#include "master/lookup_session.h"

namespace shelfmark {

class LookupConnection {
 public:
  // `first_bytes`: what was already read from the stream (the start of the
  // first frame).
  LookupConnection(kj::Own<GuardedStream> stream, std::unique_ptr<LookupSession> session,
                   std::string_view first_bytes);

  // Serves until the peer closes, misbehaves or the stream is aborted.
  kj::Promise<void> Run();
  GuardedStream& stream() { return *stream_; }

 private:
  // Reads at least `min` more bytes, then answers what is complete.
  kj::Promise<void> ReadAtLeast(size_t min);
  // Answers every whole frame in the buffer; then writes the replies and
  // reads on (or ends the connection).
  kj::Promise<void> AnswerComplete();
  // The same, appending to the replies already in out_ (after a reply that
  // waited for replication, LookupSession::pending).
  kj::Promise<void> AnswerMore();

  kj::Own<GuardedStream> stream_;
  std::unique_ptr<LookupSession> session_;
  std::string in_;     // received bytes; [0, have_) are valid
  size_t have_ = 0;
  std::string out_;    // replies of the frames answered this turn
};

}  // namespace shelfmark
