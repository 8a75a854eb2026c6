// ErrorCode: the one error vocabulary shared by the directory, the RPC layer,
// the client library and the tools. Numeric values are part of the wire
// format (they travel in RPC replies) and must never be renumbered; new codes
// get new values.
#pragma once

#include <cstdint>
#include <string_view>

namespace shelfmark {

enum class ErrorCode : int32_t {
  OK = 0,
  INTERNAL_ERROR = -1,
  BUFFER_OVERFLOW = -10,

  SEGMENT_NOT_FOUND = -101,
  SEGMENT_ALREADY_EXISTS = -102,

  NO_AVAILABLE_HANDLE = -200,

  INVALID_KEY = -400,

  INVALID_PARAMS = -600,

  INVALID_WRITE = -700,
  INVALID_READ = -701,
  INVALID_REPLICA = -702,
  REPLICA_IS_NOT_READY = -703,
  OBJECT_NOT_FOUND = -704,
  OBJECT_ALREADY_EXISTS = -705,
  OBJECT_HAS_LEASE = -706,
  LEASE_EXPIRED = -707,
  OBJECT_HAS_REFERENCE = -708,

  TRANSFER_FAIL = -800,
  CHECKSUM_MISMATCH = -801,

  RPC_FAIL = -900,

  ILLEGAL_CLIENT = -1000,
  NEED_REMOUNT = -1001,
  UNAVAILABLE_IN_CURRENT_STATUS = -1002,

  FILE_NOT_FOUND = -1100,
  FILE_OPEN_FAIL = -1101,
  FILE_READ_FAIL = -1102,
  FILE_WRITE_FAIL = -1103,

  // Snapshots and object stores.
  DATA_CORRUPTED = -1200,       // a payload failed to decode or verify
  VERSION_MISMATCH = -1201,     // a format name or version this build does not read
  STORE_UNAVAILABLE = -1202,    // an object store answered an error or timed out

  // Authentication (docs/security.md).
  UNAUTHENTICATED = -1300,      // no (or a failed) token handshake on this connection
  PERMISSION_DENIED = -1301,    // authenticated, but the token's role or tenant forbids it
  RATE_LIMITED = -1302,         // too many failed handshakes from this peer; retry later

  // Master high availability on etcd (docs/ha.md). Mooncake numbers its etcd
  // codes -1000..-1002, which Shelfmark already uses for other codes.
  ETCD_OPERATION_ERROR = -1400,   // etcd unreachable, answered an error or garbage
  ETCD_KEY_NOT_EXIST = -1401,     // the key (or lease) is not in etcd
  ETCD_TRANSACTION_FAIL = -1402,  // a transaction's compare failed
  NOT_LEADER = -1410,             // this master is not the leader (or cannot prove it)

  // Copy/move tasks (directory/task_table.h). Mooncake numbers them -1400
  // and -1401, which are Shelfmark's etcd codes above.
  TASK_NOT_FOUND = -1420,               // no such task (or a finished one already dropped)
  TASK_PENDING_LIMIT_EXCEEDED = -1421,  // the master holds its most unfinished tasks
};

// Stable upper-case name of the code ("OBJECT_NOT_FOUND"); "UNKNOWN_ERROR_CODE"
// for a value outside the enum.
std::string_view ErrorCodeName(ErrorCode code);

// Maps a raw integer (e.g. from the wire) to an ErrorCode; values that are not
// members of the enum map to INTERNAL_ERROR so callers never hold an
// out-of-range enum.
ErrorCode ErrorCodeFromInt(int32_t value);

}  // namespace shelfmark
