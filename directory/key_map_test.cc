#include "directory/key_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shelfmark {
namespace {

std::string Key(uint64_t i) { return "tenant/object/" + std::to_string(i); }

TEST(KeyMapTest, EmptyMapHoldsNoSlots) {
  KeyMap<int> m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.SlotCount(), 0u);
  EXPECT_EQ(m.Find("a"), nullptr);
  EXPECT_FALSE(m.Erase("a"));
  m.Prefetch(KeyMap<int>::Hash("a"));  // must not touch a missing array
  m.PrefetchEntry(KeyMap<int>::Hash("a"));
}

TEST(KeyMapTest, InsertFindErase) {
  KeyMap<int> m;
  auto [v, inserted] = m.TryEmplace("alpha");
  ASSERT_TRUE(inserted);
  EXPECT_EQ(*v, 0);  // value-initialised
  *v = 7;
  auto [v2, inserted2] = m.TryEmplace("alpha");
  EXPECT_FALSE(inserted2);
  EXPECT_EQ(v2, v);
  EXPECT_EQ(*m.TryEmplace("beta").first, 0);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.SlotCount(), 16u);
  ASSERT_NE(m.Find("alpha"), nullptr);
  EXPECT_EQ(*m.Find("alpha"), 7);
  EXPECT_EQ(m.Find("alph"), nullptr);
  EXPECT_EQ(m.Find("alphaa"), nullptr);
  const KeyMap<int>& cm = m;
  EXPECT_EQ(cm.Find("alpha"), v);
  EXPECT_EQ(m.Find("alpha", KeyMap<int>::Hash("alpha")), v);
  EXPECT_TRUE(m.Erase("alpha"));
  EXPECT_FALSE(m.Erase("alpha"));
  EXPECT_EQ(m.Find("alpha"), nullptr);
  EXPECT_NE(m.Find("beta"), nullptr);
  EXPECT_TRUE(m.Erase("beta"));
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.SlotCount(), 0u);  // the last erase releases the slot array
}

TEST(KeyMapTest, ReserveAvoidsRehashAndKeepsEntries) {
  KeyMap<int> m;
  m.Reserve(0);
  EXPECT_EQ(m.SlotCount(), 0u);
  m.Reserve(1000);
  const size_t slots = m.SlotCount();
  EXPECT_GE(slots * 4, 1000u * 5);  // 1000 entries stay under the 0.8 load
  EXPECT_LT(slots * 4, 2000u * 5);  // and no more than double that
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.Find("a"), nullptr);
  int* first = m.TryEmplace(Key(0)).first;
  *first = 42;
  for (int i = 1; i < 1000; ++i) {
    const std::string k = Key(i);
    auto [v, inserted] = m.TryEmplace(k, KeyMap<int>::Hash(k));
    ASSERT_TRUE(inserted);
    *v = i;
  }
  EXPECT_EQ(m.SlotCount(), slots);  // no growth while filling what was reserved
  m.Reserve(10);                    // never shrinks
  EXPECT_EQ(m.SlotCount(), slots);
  m.Reserve(5000);  // grows with the entries in place
  EXPECT_GT(m.SlotCount(), slots);
  EXPECT_EQ(m.Find(Key(0)), first);
  EXPECT_EQ(*first, 42);
  for (int i = 1; i < 1000; ++i) ASSERT_EQ(*m.Find(Key(i)), i);
  EXPECT_FALSE(m.TryEmplace(Key(7), KeyMap<int>::Hash(Key(7))).second);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(m.Erase(Key(i)));
  EXPECT_EQ(m.SlotCount(), 0u);
}

TEST(KeyMapTest, KeysWithNulBytesAreDistinct) {
  KeyMap<int> m;
  const std::vector<std::string> keys = {std::string("a\0b", 3), std::string("a\0c", 3),
                                         std::string("a", 1), std::string("\0", 1),
                                         std::string("\0\0", 2), std::string("a\0", 2)};
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [v, inserted] = m.TryEmplace(keys[i]);
    ASSERT_TRUE(inserted) << i;
    *v = static_cast<int>(i);
  }
  EXPECT_EQ(m.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const int* v = m.Find(keys[i]);
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, static_cast<int>(i));
    EXPECT_EQ(KeyMap<int>::KeyOf(v), keys[i]);
  }
}

TEST(KeyMapTest, KeyOfRoundTripsIncludingLongKeys) {
  KeyMap<std::string> m;
  std::vector<std::string> keys;
  for (size_t len : {1, 3, 4, 7, 8, 15, 16, 17, 47, 48, 49, 64, 97, 1000, 4096}) {
    keys.push_back(std::string(len, 'x') + std::to_string(len));
  }
  for (const auto& k : keys) *m.TryEmplace(k).first = k;
  for (const auto& k : keys) {
    const std::string* v = m.Find(k);
    ASSERT_NE(v, nullptr) << k.size();
    EXPECT_EQ(*v, k);
    EXPECT_EQ(KeyMap<std::string>::KeyOf(v), k);
  }
}

struct AtomicValue {
  std::atomic<uint64_t> counter{0};
  std::atomic<int64_t> deadline{-1};
  char pad[40] = {};
};

TEST(KeyMapTest, NonMovableValuesKeepTheirAddressesAcrossGrowth) {
  KeyMap<AtomicValue> m;
  std::vector<AtomicValue*> first;
  for (int i = 0; i < 100; ++i) {
    AtomicValue* v = m.TryEmplace(Key(i)).first;
    EXPECT_EQ(v->deadline.load(), -1);
    v->counter.store(static_cast<uint64_t>(i));
    first.push_back(v);
  }
  const std::string_view key0 = KeyMap<AtomicValue>::KeyOf(first[0]);
  const char* key0_bytes = key0.data();
  const size_t slots_before = m.SlotCount();
  for (int i = 100; i < 100'100; ++i) m.TryEmplace(Key(i));
  EXPECT_GT(m.SlotCount(), slots_before * 1000);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(m.Find(Key(i)), first[i]);
    EXPECT_EQ(first[i]->counter.load(), static_cast<uint64_t>(i));
  }
  EXPECT_EQ(KeyMap<AtomicValue>::KeyOf(first[0]).data(), key0_bytes);
  // Erasing the others (shrinking) also leaves them in place.
  for (int i = 100; i < 100'100; ++i) ASSERT_TRUE(m.Erase(Key(i)));
  EXPECT_LE(m.SlotCount(), 512u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(m.Find(Key(i)), first[i]);
}

struct alignas(64) Aligned {
  char bytes[64];
};

TEST(KeyMapTest, OverAlignedValuesAreAligned) {
  KeyMap<Aligned> m;
  for (int i = 0; i < 100; ++i) {
    Aligned* v = m.TryEmplace(Key(i)).first;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v) % 64, 0u);
    v->bytes[63] = 1;
    EXPECT_EQ(KeyMap<Aligned>::KeyOf(v), Key(i));
  }
}

// Differential test against std::unordered_map with a small key space, so
// clusters form and backward shifts move many entries; the live count swings
// between ~0 and the whole key space, exercising growth and shrink.
TEST(KeyMapTest, RandomOpsMatchUnorderedMap) {
  KeyMap<int> m;
  std::unordered_map<std::string, int> ref;
  std::mt19937_64 rng(42);
  constexpr int kKeySpace = 3000;
  size_t max_slots = 0, min_slots_after_peak = SIZE_MAX;
  bool shrank = false;
  for (int op = 0; op < 200'000; ++op) {
    const int phase = (op / 20'000) % 2;  // 0: mostly inserts, 1: only erases/finds
    const std::string k = Key(rng() % kKeySpace);
    const uint64_t r = rng() % 10;
    if (r < (phase == 0 ? 6u : 0u)) {
      auto [v, inserted] = m.TryEmplace(k);
      auto [it, ref_inserted] = ref.try_emplace(k, op);
      ASSERT_EQ(inserted, ref_inserted) << op;
      if (inserted) *v = op;
      ASSERT_EQ(*v, it->second) << op;
    } else if (r < 8) {
      ASSERT_EQ(m.Erase(k), ref.erase(k) == 1) << op;
    } else {
      const int* v = m.Find(k);
      auto it = ref.find(k);
      ASSERT_EQ(v != nullptr, it != ref.end()) << op;
      if (v) {
        ASSERT_EQ(*v, it->second) << op;
      }
    }
    ASSERT_EQ(m.size(), ref.size());
    ASSERT_LE(m.size() * 5, m.SlotCount() * 4);
    if (m.SlotCount() > 16) {
      ASSERT_GE(m.size() * 5, m.SlotCount()) << op;
    }
    max_slots = std::max(max_slots, m.SlotCount());
    if (max_slots >= 2048 && m.SlotCount() < max_slots) {
      shrank = true;
      min_slots_after_peak = std::min(min_slots_after_peak, m.SlotCount());
    }
  }
  EXPECT_TRUE(shrank);
  EXPECT_LT(m.MaxProbeLength(), 64u);
  EXPECT_LE(min_slots_after_peak, 64u);
  size_t visited = 0;
  m.ForEach([&](std::string_view key, int& v) {
    ++visited;
    auto it = ref.find(std::string(key));
    ASSERT_NE(it, ref.end());
    EXPECT_EQ(v, it->second);
  });
  EXPECT_EQ(visited, ref.size());
}

// Callers shard by std::hash % 1024: a map may hold only keys sharing those
// low bits. The map's own hash must still spread them.
TEST(KeyMapTest, KeysSharingLowStdHashBitsStillSpread) {
  KeyMap<int> m;
  char key[] = "tenant-a/kv/00000000";
  constexpr size_t kDigits = 8, kPrefix = sizeof(key) - 1 - kDigits;
  std::hash<std::string_view> std_hash;
  for (uint32_t i = 0; m.size() < 100'000; ++i) {
    for (size_t d = 0; d < kDigits; ++d) {
      key[kPrefix + d] = "0123456789abcdef"[(i >> (28 - 4 * d)) & 15];
    }
    const std::string_view k(key, sizeof(key) - 1);
    if (std_hash(k) % 1024 == 7) m.TryEmplace(k);
  }
  EXPECT_LT(m.MaxProbeLength(), 64u);
  // KeyMap::Hash is independent of std::hash: its low bits take every value.
  std::vector<bool> low_bits(1024);
  size_t visited = 0;
  m.ForEach([&](std::string_view k, int&) {
    ++visited;
    EXPECT_EQ(std_hash(k) % 1024, 7u);
    low_bits[KeyMap<int>::Hash(k) % 1024] = true;
  });
  EXPECT_EQ(visited, 100'000u);
  EXPECT_EQ(std::count(low_bits.begin(), low_bits.end(), true), 1024);
}

TEST(KeyMapTest, HashBitsAreBalanced) {
  constexpr int kKeys = 20'000;
  int ones[64] = {};
  for (int i = 0; i < kKeys; ++i) {
    const uint64_t h = KeyMap<int>::Hash(Key(static_cast<uint64_t>(i) * 1024));
    for (int b = 0; b < 64; ++b) ones[b] += static_cast<int>((h >> b) & 1);
  }
  for (int b = 0; b < 64; ++b) {
    EXPECT_GT(ones[b], kKeys * 45 / 100) << b;
    EXPECT_LT(ones[b], kKeys * 55 / 100) << b;
  }
  EXPECT_NE(KeyMap<int>::Hash("a"), KeyMap<int>::Hash(std::string("a\0", 2)));
  EXPECT_NE(KeyMap<int>::Hash(""), KeyMap<int>::Hash(std::string("\0", 1)));
}

TEST(KeyMapTest, ForEachVisitsEachEntryOnce) {
  KeyMap<int> m;
  for (int i = 0; i < 5000; ++i) *m.TryEmplace(Key(i)).first = i;
  for (int i = 0; i < 5000; i += 3) m.Erase(Key(i));
  std::map<std::string, int> seen;
  m.ForEach([&](std::string_view k, int& v) {
    seen[std::string(k)] += 1;
    EXPECT_EQ(k, Key(v));
    v += 1;  // mutable overload
  });
  const KeyMap<int>& cm = m;
  size_t const_visits = 0;
  cm.ForEach([&](std::string_view k, const int& v) {
    ++const_visits;
    EXPECT_EQ(k, Key(v - 1));
  });
  EXPECT_EQ(seen.size(), m.size());
  EXPECT_EQ(const_visits, m.size());
  for (const auto& [k, count] : seen) EXPECT_EQ(count, 1) << k;
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(seen.count(Key(i)), i % 3 == 0 ? 0u : 1u) << i;
}

struct Counted {
  static inline int live = 0;
  std::unique_ptr<std::string> payload = std::make_unique<std::string>(100, 'p');
  Counted() { ++live; }
  ~Counted() { --live; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
};

TEST(KeyMapTest, DestructorAndEraseDestroyValues) {
  {
    KeyMap<Counted> m;
    for (int i = 0; i < 1000; ++i) m.TryEmplace(Key(i));
    EXPECT_EQ(Counted::live, 1000);
    for (int i = 0; i < 300; ++i) m.Erase(Key(i));
    EXPECT_EQ(Counted::live, 700);
    m.TryEmplace(Key(500));  // present: constructs nothing
    EXPECT_EQ(Counted::live, 700);
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(KeyMapTest, MoveTransfersEntries) {
  KeyMap<Counted> a;
  Counted* v = a.TryEmplace("k").first;
  KeyMap<Counted> b(std::move(a));
  EXPECT_EQ(b.Find("k"), v);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.SlotCount(), 0u);
  KeyMap<Counted> c;
  c.TryEmplace("other");
  c = std::move(b);
  EXPECT_EQ(Counted::live, 1);
  EXPECT_EQ(c.Find("k"), v);
  EXPECT_EQ(c.Find("other"), nullptr);
}

TEST(KeyMapTest, PrefetchedBatchFindMatchesFind) {
  KeyMap<int> m;
  for (int i = 0; i < 10'000; ++i) *m.TryEmplace(Key(i)).first = i;
  std::vector<std::string> batch;
  for (int i = 0; i < 128; ++i) batch.push_back(Key(static_cast<uint64_t>(i) * 97));
  uint64_t hashes[128];
  for (int i = 0; i < 128; ++i) {
    hashes[i] = KeyMap<int>::Hash(batch[i]);
    m.Prefetch(hashes[i]);
  }
  for (uint64_t h : hashes) m.PrefetchEntry(h);  // hits and misses alike
  for (int i = 0; i < 128; ++i) {
    const int* v = m.Find(batch[i], hashes[i]);
    if (i * 97 < 10'000) {
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(*v, i * 97);
    } else {
      EXPECT_EQ(v, nullptr);
    }
  }
}

}  // namespace
}  // namespace shelfmark
