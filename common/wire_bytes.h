// Byte packing for the project's own binary messages (UCX hellos and
// active-message framing, LOCAL_DISK requests and replies): fixed-width
// little-endian integers and length-prefixed byte strings appended to or
// read from a byte string. Reads are bounds-checked: a short or malformed
// message makes Reader::done() false, never a read past the end.
//
// Thread safety: value types; one thread each.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shelfmark::wire {

// Appends to a caller's string (reusing its capacity).
class Appender {
 public:
  explicit Appender(std::string* out) : out_(out) {}
  template <typename T>
  Appender& Put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));  // hosts are little-endian (x86-64, aarch64)
    out_->append(bytes, sizeof(T));
    return *this;
  }
  Appender& Bytes(std::string_view bytes) {
    Put(static_cast<uint32_t>(bytes.size()));
    out_->append(bytes);
    return *this;
  }

 private:
  std::string* out_;
};

// Builds a message of its own.
class Writer {
 public:
  template <typename T>
  Writer& Put(T value) {
    Appender(&out_).Put(value);
    return *this;
  }
  Writer& Bytes(std::string_view bytes) {
    Appender(&out_).Bytes(bytes);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const void* data, size_t size) : data_(static_cast<const char*>(data)), left_(size) {}
  template <typename T>
  T Get() {
    T value{};
    if (!ok_ || left_ < sizeof(T)) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, data_, sizeof(T));
    data_ += sizeof(T);
    left_ -= sizeof(T);
    return value;
  }
  std::string Bytes() { return std::string(BytesView()); }
  // A view into the message (valid while it is): no copy.
  std::string_view BytesView() {
    const uint32_t size = Get<uint32_t>();
    if (!ok_ || left_ < size) {
      ok_ = false;
      return {};
    }
    std::string_view out(data_, size);
    data_ += size;
    left_ -= size;
    return out;
  }
  // Bytes not read yet.
  size_t left() const { return left_; }
  // True when every read so far fitted and nothing is left over.
  bool done() const { return ok_ && left_ == 0; }

 private:
  const char* data_;
  size_t left_;
  bool ok_ = true;
};

}  // namespace shelfmark::wire
