#include "transport/am_transport.h"

#include <utility>

namespace shelfmark {

AmResponder::~AmResponder() {
  if (sink_ != nullptr) Send(ErrorCode::INTERNAL_ERROR, {}, {});
}

AmResponder& AmResponder::operator=(AmResponder&& other) noexcept {
  if (this != &other) {
    if (sink_ != nullptr) Send(ErrorCode::INTERNAL_ERROR, {}, {});
    sink_ = std::move(other.sink_);
  }
  return *this;
}

bool AmResponder::Reply(std::string header, std::string data) {
  return Send(ErrorCode::OK, std::move(header), std::move(data));
}

bool AmResponder::Fail(ErrorCode code) {
  return Send(code == ErrorCode::OK ? ErrorCode::INTERNAL_ERROR : code, {}, {});
}

bool AmResponder::Send(ErrorCode status, std::string header, std::string data) {
  if (sink_ == nullptr) return false;
  std::unique_ptr<AmReplySink> sink = std::move(sink_);
  return sink->Send(status, std::move(header), std::move(data));
}

}  // namespace shelfmark
