#include "snapshot/object_store.h"

#include <string>

namespace shelfmark {
namespace {

constexpr size_t kMaxObjectKeyLength = 1024;

bool KeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == '-' || c == '/';
}

}  // namespace

bool ValidObjectKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxObjectKeyLength) return false;
  for (char c : key) {
    if (!KeyChar(c)) return false;
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view part = key.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

ErrorCode ProbeWritable(ObjectStore& store, std::string_view key, std::string* error) {
  ErrorCode rc = store.Put(key, "shelfmark write check\n");
  if (rc == ErrorCode::OK) rc = store.Remove(key);
  if (rc != ErrorCode::OK) {
    *error = "cannot write to " + store.Describe() + ": " + store.last_error() + " (" +
             std::string(ErrorCodeName(rc)) + ")";
  }
  return rc;
}

bool ValidObjectPrefix(std::string_view prefix) {
  return prefix.empty() || ValidObjectKey(prefix) || ValidObjectKey(std::string(prefix) + "x");
}

}  // namespace shelfmark
