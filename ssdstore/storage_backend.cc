#include "ssdstore/storage_backend.h"

#include "common/checksum.h"

namespace shelfmark {

uint64_t ValueChecksum(std::string_view value) { return Checksum64(value); }

std::string StorageRecovery::Describe() const {
  std::string text = "discarded " + std::to_string(files_discarded) + " file(s), dropped " +
                     std::to_string(records_dropped) + " record(s)";
  if (checkpoint_corrupt) text += ", corrupt checkpoint (started empty)";
  for (size_t i = 0; i < reasons.size(); ++i) text += (i == 0 ? ": " : "; ") + reasons[i];
  return text;
}

}  // namespace shelfmark
