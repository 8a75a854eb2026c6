#include "ssdstore/storage_backend.h"

#include <algorithm>
#include <cstdio>

#include "common/checksum.h"

namespace shelfmark {

uint64_t ValueChecksum(std::string_view value) { return Checksum64(value); }

void LogCorruptRecord(std::string_view backend, std::string_view root, std::string_view tenant,
                      std::string_view key, uint64_t count) {
  if (count > 10 && count % 1000 != 0) return;
  std::fprintf(stderr,
               "shelfmark ssdstore: %.*s at %.*s: record %.*s/%.*s did not read back intact "
               "(checksum, file or read error): dropped, a miss (%llu so far)\n",
               static_cast<int>(backend.size()), backend.data(), static_cast<int>(root.size()),
               root.data(), static_cast<int>(tenant.size()), tenant.data(),
               static_cast<int>(std::min<size_t>(key.size(), 256)), key.data(),
               static_cast<unsigned long long>(count));
}

std::string StorageRecovery::Describe() const {
  std::string text = "discarded " + std::to_string(files_discarded) + " file(s), dropped " +
                     std::to_string(records_dropped) + " record(s)";
  if (checkpoint_corrupt) text += ", corrupt checkpoint (started empty)";
  for (size_t i = 0; i < reasons.size(); ++i) text += (i == 0 ? ": " : "; ") + reasons[i];
  return text;
}

}  // namespace shelfmark
