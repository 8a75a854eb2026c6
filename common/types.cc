#include "common/types.h"

namespace shelfmark {

const char* ReplicaStatusName(ReplicaStatus s) {
  switch (s) {
    case ReplicaStatus::INITIALIZED: return "INITIALIZED";
    case ReplicaStatus::PROCESSING: return "PROCESSING";
    case ReplicaStatus::COMPLETE: return "COMPLETE";
    case ReplicaStatus::REMOVED: return "REMOVED";
    case ReplicaStatus::FAILED: return "FAILED";
  }
  return "UNKNOWN";
}

const char* ReplicaTypeName(ReplicaType t) {
  switch (t) {
    case ReplicaType::MEMORY: return "MEMORY";
    case ReplicaType::LOCAL_DISK: return "LOCAL_DISK";
  }
  return "UNKNOWN";
}

}  // namespace shelfmark
