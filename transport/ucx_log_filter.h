// UcxStrayMessageFilter: keeps a stranger's UCX messages from stalling this
// process through UCX's own log (docs/security.md, "Denial of service").
//
// The ucx engine runs no UCX RMA (ucx_memory_access.h), so a peer's RMA
// message (a get request, a put fragment, ...) finds no handler on the
// receiving interface. UCX 1.13 answers each such message by writing, from
// inside ucp_worker_progress() (so on the thread that holds the worker),
// three warnings to stdout: "got active message id N, but no handler
// installed", a hex dump of the payload and a backtrace of ~15 lines:
// about 2.6 KiB per message, 6 KiB per RMA try. Where stdout is a pipe that
// nobody drains (a launcher reading a child's output only at its exit,
// Python's subprocess.PIPE), 64 KiB of it fill the pipe, the next write
// blocks the worker for good, and from then on no hello is answered: a peer
// without a token stopped every new client after about four tries. Drained,
// the same bytes still let any peer fill a node's logs at will.
//
// The filter, a UCX log handler installed once per process, drops those
// three warnings (and only them) and counts the messages; the first one of
// the process is reported in one line of its own on stderr. Every other UCX
// log line passes unchanged.
#pragma once

#include <cstdint>

namespace shelfmark {

// Installs the filter (idempotent, thread-safe); UcxContext does it before
// it starts UCX.
void InstallUcxStrayMessageFilter();

// Messages dropped by the filter in this process so far.
uint64_t UcxStrayMessagesDropped();

}  // namespace shelfmark
