#include "master/lookup_connection.h"

#include <cstring>
#include <utility>

#include "rpc/lookup_wire.h"

namespace shelfmark {
namespace {

constexpr size_t kInitialBuffer = 64 * 1024;

}  // namespace

LookupConnection::LookupConnection(kj::Own<GuardedStream> stream,
                                   std::unique_ptr<LookupSession> session,
                                   std::string_view first_bytes)
    : stream_(kj::mv(stream)), session_(std::move(session)), in_(kInitialBuffer, '\0') {
  std::memcpy(in_.data(), first_bytes.data(), first_bytes.size());
  have_ = first_bytes.size();
}

kj::Promise<void> LookupConnection::Run() { return AnswerComplete(); }

kj::Promise<void> LookupConnection::ReadAtLeast(size_t min) {
  // The frame meter has already refused frames over the request limit, so
  // growing to the frame being received is bounded by it.
  if (in_.size() < have_ + min) in_.resize(have_ + min);
  return stream_->tryRead(in_.data() + have_, min, in_.size() - have_)
      .then([this, min](size_t n) -> kj::Promise<void> {
        if (n < min) return kj::READY_NOW;  // the peer closed (or was aborted)
        have_ += n;
        return AnswerComplete();
      });
}

kj::Promise<void> LookupConnection::AnswerComplete() {
  out_.clear();
  return AnswerMore();
}

kj::Promise<void> LookupConnection::AnswerMore() {
  size_t pos = 0;
  size_t need = kLookupHeaderBytes;  // bytes the next frame needs beyond `pos`
  bool keep = true;
  while (keep && have_ - pos >= kLookupHeaderBytes) {
    uint32_t body = 0;
    if (!ParseLookupHeader(std::string_view(in_.data() + pos, have_ - pos), &body)) {
      keep = false;  // not a lookup frame: the peer speaks something else
      break;
    }
    need = kLookupHeaderBytes + size_t{body};
    if (have_ - pos < need) break;
    keep = session_->Handle(std::string_view(in_.data() + pos + kLookupHeaderBytes, body), &out_);
    pos += need;
    need = kLookupHeaderBytes;
    if (session_->pending()) break;
  }
  std::memmove(in_.data(), in_.data() + pos, have_ - pos);
  have_ -= pos;
  if (session_->pending()) {
    // A mutation waits for its standbys: its reply is settled before any
    // later frame is answered (replies stay in request order).
    return session_->WaitPending().then([this]() -> kj::Promise<void> {
      session_->FinishPending(&out_);
      return AnswerMore();
    });
  }
  if (!keep) stream_->AbortAfterNextWrite();
  if (out_.empty()) {
    if (!keep) {
      stream_->Abort();
      return kj::READY_NOW;
    }
    return ReadAtLeast(need - have_);
  }
  return stream_->write(out_.data(), out_.size()).then([this, keep, need]() -> kj::Promise<void> {
    if (!keep) return kj::READY_NOW;
    return ReadAtLeast(need - have_);
  });
}

}  // namespace shelfmark
