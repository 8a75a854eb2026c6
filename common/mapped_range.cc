#include "common/mapped_range.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>

namespace shelfmark {
namespace {

// One line of a maps file: "start-end perms offset dev inode [path]".
struct MapsLine {
  uint64_t start = 0;
  uint64_t end = 0;
  bool read = false;
  bool write = false;
};

bool ParseHex(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseLine(std::string_view line, MapsLine& out) {
  const size_t dash = line.find('-');
  const size_t space = line.find(' ');
  if (dash == std::string_view::npos || space == std::string_view::npos || dash > space) {
    return false;
  }
  if (!ParseHex(line.substr(0, dash), out.start) ||
      !ParseHex(line.substr(dash + 1, space - dash - 1), out.end) || out.start > out.end) {
    return false;
  }
  const std::string_view perms = line.substr(space + 1);
  if (perms.size() < 2) return false;
  out.read = perms[0] == 'r';
  out.write = perms[1] == 'w';
  return true;
}

// The whole file; empty when it cannot be read. /proc files report size 0,
// so it is read to its end in chunks.
std::string ReadAll(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) text.clear();
      break;
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

bool MapsCover(std::string_view maps, uint64_t begin, uint64_t end, RangeAccess access) {
  if (begin > end) return false;
  uint64_t covered = begin;  // [begin, covered) is known to be mapped with `access`
  while (covered < end && !maps.empty()) {
    const size_t newline = maps.find('\n');
    const std::string_view line = maps.substr(0, newline);
    maps = newline == std::string_view::npos ? std::string_view() : maps.substr(newline + 1);
    MapsLine m;
    if (!ParseLine(line, m)) return false;
    if (m.end <= covered) continue;     // wholly below what is left
    if (m.start > covered) return false;  // a hole (the file is ascending)
    if (!m.read || (access == RangeAccess::kReadWrite && !m.write)) return false;
    covered = m.end;
  }
  return covered >= end;
}

// Why /proc/self/maps and not a probe of the memory itself:
// - mincore(2) says whether pages are mapped, not whether they may be
//   written (a PROT_READ mapping passes it);
// - a write probe (a store per page, or process_vm_writev on ourselves)
//   must write: it either changes the caller's bytes or reads and writes
//   them back, racing with the caller's own threads, and it commits memory
//   for every page of a sparse buffer;
// - MADV_POPULATE_WRITE (Linux 5.14+) checks writability without a store
//   but also commits every page, and older kernels lack it;
// - catching SIGSEGV around a probe takes a process-wide signal handler
//   that a library embedded in Python or a serving engine must not own.
// The maps file gives every mapping's protection as the kernel enforces it,
// touches no page, and costs one read of the file (O(mappings)) per call:
// registration is rare, so this is paid once per buffer. What it cannot see:
// a file mapping that extends past its file's end is listed, but an access
// there raises SIGBUS (for the caller's own code as much as ours).
bool MappedWith(const void* addr, uint64_t size, RangeAccess access) {
  const auto begin = reinterpret_cast<uint64_t>(addr);
  if (begin == 0 || size > UINT64_MAX - begin) return false;
  if (size == 0) return true;
  const std::string maps = ReadAll("/proc/self/maps");
  if (maps.empty()) return false;
  return MapsCover(maps, begin, begin + size, access);
}

}  // namespace shelfmark
