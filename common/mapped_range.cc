#include "common/mapped_range.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>
#include <string_view>

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

// Walks a maps file's lines in order, keeping how much of [begin, end) is
// covered. The verdict is known as soon as a hole, a refused protection or
// a bad line is met, or the range is covered: the rest of the file is not
// needed (the kernel writes the file as it is read, which is most of the
// cost, so MappedWith stops reading there).
class MapsWalk {
 public:
  enum class Verdict { kOpen, kCovered, kRefused };
  MapsWalk(uint64_t begin, uint64_t end, RangeAccess access)
      : covered_(begin),
        end_(end),
        access_(access),
        verdict_(begin > end    ? Verdict::kRefused
                 : begin == end ? Verdict::kCovered
                                : Verdict::kOpen) {}
  Verdict verdict() const { return verdict_; }
  void Line(std::string_view line) {
    if (verdict_ != Verdict::kOpen) return;
    MapsLine m;
    if (!ParseLine(line, m)) {
      verdict_ = Verdict::kRefused;
    } else if (m.end <= covered_) {
      return;  // wholly below what is left
    } else if (m.start > covered_ || !m.read ||
               (access_ == RangeAccess::kReadWrite && !m.write)) {
      verdict_ = Verdict::kRefused;  // a hole (the file is ascending), or the protection
    } else {
      covered_ = m.end;
      if (covered_ >= end_) verdict_ = Verdict::kCovered;
    }
  }
  // Feeds the complete lines of `text` (until the verdict is known); the
  // length of what follows the last one fed.
  size_t Lines(std::string_view text) {
    size_t newline;
    while (verdict_ == Verdict::kOpen && (newline = text.find('\n')) != std::string_view::npos) {
      Line(text.substr(0, newline));
      text.remove_prefix(newline + 1);
    }
    return text.size();
  }

 private:
  uint64_t covered_;  // [begin, covered_) is mapped with access_
  const uint64_t end_;
  const RangeAccess access_;
  Verdict verdict_;
};

}  // namespace

bool MapsCover(std::string_view maps, uint64_t begin, uint64_t end, RangeAccess access) {
  MapsWalk walk(begin, end, access);
  const size_t rest = walk.Lines(maps);
  if (rest > 0) walk.Line(maps.substr(maps.size() - rest));  // a last line without '\n'
  return walk.verdict() == MapsWalk::Verdict::kCovered;
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
// The maps file gives every mapping's protection as the kernel enforces it
// and touches no page. Its cost is the kernel writing the lines up to the
// range's last mapping (the read stops there): tenths of a millisecond in a
// Python process with a few hundred mappings, paid once per registration.
// What it cannot see: a file mapping that extends past its file's end is
// listed, but an access there raises SIGBUS (for the caller's own code as
// much as ours).
bool MappedWith(const void* addr, uint64_t size, RangeAccess access) {
  const auto begin = reinterpret_cast<uint64_t>(addr);
  if (begin == 0 || size > UINT64_MAX - begin) return false;
  if (size == 0) return true;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  MapsWalk walk(begin, begin + size, access);
  std::string text;  // read, less the lines already fed
  char chunk[4096];
  while (walk.verdict() == MapsWalk::Verdict::kOpen) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the end (or an error): what is not covered is refused
    text.append(chunk, static_cast<size_t>(n));
    text.erase(0, text.size() - walk.Lines(text));
  }
  ::close(fd);
  return walk.verdict() == MapsWalk::Verdict::kCovered;
}

}  // namespace shelfmark
