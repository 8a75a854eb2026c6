#include "directory/batch_pipeline.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shelfmark {
namespace {

// The calls RunPipelined makes for a batch of n, as "s3", "e3", "v3".
std::vector<std::string> Trace(size_t n) {
  std::vector<std::string> calls;
  auto note = [&](char what) {
    return [&calls, what](size_t i) { calls.push_back(what + std::to_string(i)); };
  };
  RunPipelined(n, note('s'), note('e'), note('v'));
  return calls;
}

size_t IndexOf(const std::vector<std::string>& calls, const std::string& call) {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i] == call) return i;
  }
  return calls.size();
}

TEST(BatchPipelineTest, EmptyBatchCallsNothing) { EXPECT_TRUE(Trace(0).empty()); }

TEST(BatchPipelineTest, EveryKeyWarmedOnceSlotThenEntryBeforeItsVisitInOrder) {
  for (size_t n : {size_t{1}, size_t{3}, kEntryLead, kSlotLead, kSlotLead + 1, size_t{128}}) {
    SCOPED_TRACE(n);
    const std::vector<std::string> calls = Trace(n);
    ASSERT_EQ(calls.size(), 3 * n);
    size_t last_visit = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string key = std::to_string(i);
      const size_t s = IndexOf(calls, "s" + key), e = IndexOf(calls, "e" + key),
                   v = IndexOf(calls, "v" + key);
      ASSERT_LT(v, calls.size());
      EXPECT_LT(s, e);
      EXPECT_LT(e, v);
      EXPECT_TRUE(i == 0 || v > last_visit) << "visits out of order at " << i;
      last_visit = v;
    }
  }
}

TEST(BatchPipelineTest, WarmsRunAheadOfTheVisit) {
  const std::vector<std::string> calls = Trace(64);
  const auto at = [&](char what, size_t i) { return IndexOf(calls, what + std::to_string(i)); };
  // Key 40's slot is requested just before key 40 - kSlotLead is visited,
  // its entry just before key 40 - kEntryLead.
  EXPECT_LT(at('s', 40), at('v', 40 - kSlotLead));
  EXPECT_GT(at('s', 40), at('v', 40 - kSlotLead - 1));
  EXPECT_LT(at('e', 40), at('v', 40 - kEntryLead));
  EXPECT_GT(at('e', 40), at('v', 40 - kEntryLead - 1));
}

}  // namespace
}  // namespace shelfmark
