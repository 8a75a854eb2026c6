#include "common/page_populator.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>

#include <gtest/gtest.h>

#include "common/sanitizer.h"

namespace shelfmark {
namespace {

constexpr uint64_t kChunk = PagePopulator::kChunkBytes;

// A fresh memfd mapping of `size` bytes, its pages allocated by a first
// mapping (as a node's segment is) but not mapped in this one.
class SharedMemory {
 public:
  explicit SharedMemory(uint64_t size) : size_(size) {
    fd_ = memfd_create("page-populator-test", MFD_CLOEXEC);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0);
    void* owner = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
    EXPECT_NE(owner, MAP_FAILED);
    munmap(owner, size);
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    EXPECT_NE(m, MAP_FAILED);
    memory_ = static_cast<uint8_t*>(m);
  }
  ~SharedMemory() {
    munmap(memory_, size_);
    close(fd_);
  }
  uint8_t* memory() const { return memory_; }

 private:
  uint64_t size_;
  int fd_ = -1;
  uint8_t* memory_ = nullptr;
};

long ThreadMinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Minor faults of writing one byte into every page of [at, at + length).
long FaultsOfWriting(uint8_t* at, uint64_t length) {
  const long page = sysconf(_SC_PAGESIZE);
  const long before = ThreadMinorFaults();
  for (uint64_t i = 0; i < length; i += page) at[i] = 1;
  return ThreadMinorFaults() - before;
}

TEST(PagePopulator, ATouchedChunkIsWrittenWithoutFaultsAndAnUntouchedOneFaults) {
  if (kShadowMemory) GTEST_SKIP() << "a sanitizer's shadow memory faults too";
  SharedMemory shm(4 * kChunk);
  PagePopulator populator(shm.memory(), 4 * kChunk);
  const long pages = static_cast<long>(kChunk / sysconf(_SC_PAGESIZE));
  populator.Touch(kChunk + 100, 64 << 10);  // inside chunk 1 only
  EXPECT_EQ(populator.chunks_populated(), 1u);
  EXPECT_LT(FaultsOfWriting(shm.memory() + kChunk, kChunk), pages / 4);
  // The control: chunk 2 was not populated, so its pages fault (the test
  // would prove nothing on a kernel that mapped them anyway).
  EXPECT_GT(FaultsOfWriting(shm.memory() + 2 * kChunk, kChunk), pages / 4);
}

TEST(PagePopulator, PopulatesEachChunkOnceAndOnlyThoseARangeCrosses) {
  SharedMemory shm(4 * kChunk);
  PagePopulator populator(shm.memory(), 4 * kChunk);
  populator.Touch(kChunk - 1, 2);  // crosses chunks 0 and 1
  EXPECT_EQ(populator.chunks_populated(), 2u);
  populator.Touch(0, 2 * kChunk);  // both done already
  EXPECT_EQ(populator.chunks_populated(), 2u);
  populator.Touch(3 * kChunk, 1);
  EXPECT_EQ(populator.chunks_populated(), 3u);
}

TEST(PagePopulator, ClipsRangesToTheMappingAndIgnoresEmptyOnes) {
  if (kShadowMemory) GTEST_SKIP() << "a sanitizer's shadow memory faults too";
  // A last chunk of 64 pages, shorter than kChunk. Faults are compared with
  // a quarter of its pages, not with 0: a sanitizer's shadow memory faults
  // too when the test writes.
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t tail = 64 * static_cast<uint64_t>(page);
  const uint64_t size = kChunk + tail;
  SharedMemory shm(size);
  PagePopulator populator(shm.memory(), size);
  populator.Touch(0, 0);
  populator.Touch(size, 4096);
  populator.Touch(UINT64_MAX, UINT64_MAX);
  EXPECT_EQ(populator.chunks_populated(), 0u);
  populator.Touch(kChunk, UINT64_MAX);  // the short last chunk, clipped
  EXPECT_EQ(populator.chunks_populated(), 1u);
  EXPECT_LT(FaultsOfWriting(shm.memory() + kChunk, tail), 64 / 4);
}

}  // namespace
}  // namespace shelfmark
