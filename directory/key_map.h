// KeyMap<V>: an open-addressing hash map from string keys to V, built for the
// directory's millions of small per-object entries.
//
// Layout: a power-of-two array of 16-byte slots {hash, entry} probed linearly
// from the slot chosen by the HIGH bits of hash * 0x9E3779B97F4A7C15
// (fibonacci hashing), kept in Robin Hood order (an insert displaces entries
// nearer their home), which bounds probe lengths at load 0.8 and ends misses
// early. Each entry is ONE heap allocation laid out as
// [V value][uint32_t key_len][key bytes], so a hit costs one miss in the slot
// array plus one in the entry; the stored full hash is compared before the key
// bytes. Deletion shifts the following cluster back (no tombstones).
//
// Hash() is a wyhash-style 64-bit string hash, independent of
// std::hash<std::string_view>: callers shard keys by std::hash % 1024, so all
// keys of one map may share the low bits of std::hash.
//
// Thread safety: none; the caller's lock (the shard's mutex) guards the map.
// Invariants:
//  - capacity() is 0 (no slot array allocated) or a power of two >= 16;
//    size() == 0 implies capacity 0 (barring an exception from V()), except
//    after Reserve() until the next Erase.
//  - size() <= 0.8 * capacity; after an Erase, size() >= 0.2 * capacity
//    unless capacity is the minimum (16).
//  - every occupied slot is reachable from its home slot without crossing an
//    empty slot; slot.hash == Hash(key of slot.entry).
//  - Robin Hood order: along a run of occupied slots, an entry's distance from
//    its home exceeds its predecessor's by at most one.
//  - an entry (its V and its key bytes) never moves until it is erased; V
//    need not be movable or copyable.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

namespace shelfmark {

namespace key_map_internal {

inline uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
inline uint64_t Read8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Read4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t Read3(const char* p, size_t n) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint64_t{u[0]} << 16) | (uint64_t{u[n >> 1]} << 8) | u[n - 1];
}

inline constexpr uint64_t kSecret[4] = {0xa0761d6478bd642full, 0xe7037ed1a0b428dbull,
                                        0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull};

// Keys longer than 16 bytes: 48-byte rounds on three lanes, then 16-byte
// rounds; leaves the last 16 bytes in *a, *b.
inline uint64_t HashLong(const char* p, size_t i, uint64_t seed, uint64_t* a, uint64_t* b) {
  if (i > 48) {
    uint64_t s1 = seed, s2 = seed;
    do {
      seed = Mix(Read8(p) ^ kSecret[1], Read8(p + 8) ^ seed);
      s1 = Mix(Read8(p + 16) ^ kSecret[2], Read8(p + 24) ^ s1);
      s2 = Mix(Read8(p + 32) ^ kSecret[3], Read8(p + 40) ^ s2);
      p += 48;
      i -= 48;
    } while (i > 48);
    seed ^= s1 ^ s2;
  }
  while (i > 16) {
    seed = Mix(Read8(p) ^ kSecret[1], Read8(p + 8) ^ seed);
    p += 16;
    i -= 16;
  }
  *a = Read8(p + i - 16);
  *b = Read8(p + i - 8);
  return seed;
}

inline uint64_t HashBytes(std::string_view key) {
  const char* p = key.data();
  const size_t n = key.size();
  uint64_t seed = 0x5368656c666d6172ull ^ Mix(0x5368656c666d6172ull ^ kSecret[0], kSecret[1]);
  uint64_t a = 0, b = 0;
  if (n <= 16) {
    if (n >= 4) {
      const size_t off = (n >> 3) << 2;
      a = (Read4(p) << 32) | Read4(p + off);
      b = (Read4(p + n - 4) << 32) | Read4(p + n - 4 - off);
    } else if (n > 0) {
      a = Read3(p, n);
    }
  } else {
    seed = HashLong(p, n, seed, &a, &b);
  }
  const unsigned __int128 r =
      static_cast<unsigned __int128>(a ^ kSecret[1]) * (b ^ seed);
  a = static_cast<uint64_t>(r);
  b = static_cast<uint64_t>(r >> 64);
  return Mix(a ^ kSecret[0] ^ n, b ^ kSecret[1]);
}

}  // namespace key_map_internal

template <typename V>
class KeyMap {
 public:
  KeyMap() = default;
  ~KeyMap() { Clear(); }
  KeyMap(const KeyMap&) = delete;
  KeyMap& operator=(const KeyMap&) = delete;
  KeyMap(KeyMap&& other) noexcept { Swap(other); }
  KeyMap& operator=(KeyMap&& other) noexcept {
    if (this != &other) {
      Clear();
      Swap(other);
    }
    return *this;
  }

  // The hash the map uses; well mixed in all 64 bits.
  static uint64_t Hash(std::string_view key) { return key_map_internal::HashBytes(key); }

  V* Find(std::string_view key) { return Find(key, Hash(key)); }
  const V* Find(std::string_view key) const { return Find(key, Hash(key)); }
  // `hash` must be Hash(key).
  V* Find(std::string_view key, uint64_t hash) {
    return const_cast<V*>(std::as_const(*this).Find(key, hash));
  }
  const V* Find(std::string_view key, uint64_t hash) const {
    if (size_ == 0) return nullptr;
    const size_t i = FindSlot(key, hash);
    return i == kNotFound ? nullptr : ValueOf(slots_[i].entry);
  }

  // Prefetches the home slot of `hash` (a later Find touches it first).
  void Prefetch(uint64_t hash) const {
    if (slots_ != nullptr) __builtin_prefetch(slots_ + Home(hash));
  }
  // Prefetches the entry a later Find of a key with this `hash` would
  // compare: the first slot of the probe whose stored hash is `hash` (none
  // for a miss). Reads the slots, so it pays off once Prefetch(hash) has
  // brought them in; a batch of finds calls Prefetch a few keys ahead of
  // this, and this a few keys ahead of Find (group prefetching).
  void PrefetchEntry(uint64_t hash) const {
    if (size_ == 0) return;
    const size_t i = Probe(hash, [](const Entry*) { return true; });
    if (i != kNotFound) PrefetchLines(slots_[i].entry);
  }

  // Inserts a default-constructed V for an absent key; returns {value, inserted}.
  std::pair<V*, bool> TryEmplace(std::string_view key) { return TryEmplace(key, Hash(key)); }
  // `hash` must be Hash(key).
  std::pair<V*, bool> TryEmplace(std::string_view key, uint64_t hash) {
    if (size_ != 0) {
      const size_t i = FindSlot(key, hash);
      if (i != kNotFound) return {ValueOf(slots_[i].entry), false};
    }
    if ((size_ + 1) * 5 > capacity_ * 4) Rehash(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
    Entry* entry = NewEntry(key);
    InsertSlot(Slot{hash, entry});
    ++size_;
    return {ValueOf(entry), true};
  }

  // Grows the slot array so that `n` entries in all fit without a rehash
  // (the array never shrinks here). Entries do not move.
  void Reserve(size_t n) {
    if (n * 5 <= capacity_ * 4) return;
    size_t capacity = capacity_ == 0 ? kMinCapacity : capacity_;
    while (n * 5 > capacity * 4) capacity *= 2;
    Rehash(capacity);
  }

  bool Erase(std::string_view key) {
    if (size_ == 0) return false;
    const size_t i = FindSlot(key, Hash(key));
    if (i == kNotFound) return false;
    DeleteEntry(slots_[i].entry);
    ShiftBack(i);
    --size_;
    MaybeShrink();
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t SlotCount() const { return capacity_; }

  // Visits every entry: f(std::string_view key, V& value). f must not insert or erase.
  // Entries a few slots ahead are prefetched: they lie scattered over the
  // heap, and a walk over a big map is otherwise one cache (and TLB) miss
  // per entry, one at a time.
  template <typename F>
  void ForEach(F&& f) {
    std::as_const(*this).ForEach([&f](std::string_view key, const V& value) {
      f(key, const_cast<V&>(value));
    });
  }
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (i + kPrefetchSlots < capacity_) PrefetchLines(slots_[i + kPrefetchSlots].entry);
      if (slots_[i].entry) {
        const V* v = ValueOf(slots_[i].entry);
        f(KeyOf(v), *v);
      }
    }
  }

  // The stable key bytes of the entry whose value is `v`.
  static std::string_view KeyOf(const V* v) {
    const char* base = reinterpret_cast<const char*>(v);
    return {base + kKeyOffset, KeyLen(base)};
  }

  // Debug/tests: the longest distance of an entry from its home slot.
  size_t MaxProbeLength() const {
    size_t worst = 0;
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].entry) worst = std::max(worst, Displacement(i));
    }
    return worst;
  }

 private:
  struct Entry;  // opaque: [V][uint32_t key_len][key bytes]
  struct Slot {
    uint64_t hash;
    Entry* entry;  // nullptr: empty
  };
  static_assert(sizeof(Slot) == 16);

  static constexpr size_t kMinCapacity = 16;
  static constexpr size_t kPrefetchSlots = 16;  // how far ahead ForEach prefetches
  static constexpr size_t kNotFound = SIZE_MAX;
  static constexpr size_t kLenOffset = (sizeof(V) + 3) & ~size_t{3};
  static constexpr size_t kKeyOffset = kLenOffset + sizeof(uint32_t);
  static constexpr size_t kAlign = alignof(V) > 4 ? alignof(V) : 4;
  static constexpr bool kOverAligned = kAlign > __STDCPP_DEFAULT_NEW_ALIGNMENT__;

  static size_t KeyLen(const char* base) {
    uint32_t len;
    std::memcpy(&len, base + kLenOffset, sizeof(len));
    return len;
  }
  static V* ValueOf(Entry* e) { return std::launder(reinterpret_cast<V*>(e)); }
  static const V* ValueOf(const Entry* e) {
    return std::launder(reinterpret_cast<const V*>(e));
  }
  static bool KeyEquals(const Entry* e, std::string_view key) {
    const char* base = reinterpret_cast<const char*>(e);
    return KeyLen(base) == key.size() &&
           std::memcmp(base + kKeyOffset, key.data(), key.size()) == 0;
  }

  static void* Allocate(size_t bytes) {
    if constexpr (kOverAligned) return ::operator new(bytes, std::align_val_t{kAlign});
    return ::operator new(bytes);
  }
  static void Free(void* p) {
    if constexpr (kOverAligned) {
      ::operator delete(p, std::align_val_t{kAlign});
    } else {
      ::operator delete(p);
    }
  }

  // Starts loading an entry's value and the head of its key (its length
  // and first 16 bytes), if any: every line of [e, e + kKeyOffset + 16),
  // wherever the allocation puts the line boundaries. A prefetch never
  // faults, even past the allocation.
  static void PrefetchLines(const Entry* e) {
    if (e == nullptr) return;
    const char* p = reinterpret_cast<const char*>(e);
    for (size_t off = 0; off < kKeyOffset + 16; off += 64) __builtin_prefetch(p + off);
    __builtin_prefetch(p + kKeyOffset + 15);
  }

  static Entry* NewEntry(std::string_view key) {
    char* base = static_cast<char*>(Allocate(kKeyOffset + key.size()));
    try {
      ::new (static_cast<void*>(base)) V();
    } catch (...) {
      Free(base);
      throw;
    }
    const auto len = static_cast<uint32_t>(key.size());
    std::memcpy(base + kLenOffset, &len, sizeof(len));
    if (!key.empty()) std::memcpy(base + kKeyOffset, key.data(), key.size());
    return reinterpret_cast<Entry*>(base);
  }
  static void DeleteEntry(Entry* e) {
    ValueOf(e)->~V();
    Free(e);
  }

  size_t Home(uint64_t hash) const { return (hash * 0x9E3779B97F4A7C15ull) >> shift_; }

  // Distance of the entry in slot i from its home slot.
  size_t Displacement(size_t i) const { return (i - Home(slots_[i].hash)) & (capacity_ - 1); }

  // The slot holding `key`, or kNotFound. Requires capacity_ > 0. Robin Hood
  // order lets a miss stop at the first slot whose entry sits closer to its
  // home than the probe has travelled.
  size_t FindSlot(std::string_view key, uint64_t hash) const {
    return Probe(hash, [key](const Entry* e) { return KeyEquals(e, key); });
  }
  // The first slot of hash's probe whose hash is `hash` and whose entry
  // `match` accepts, or kNotFound. Requires capacity_ > 0.
  template <typename Match>
  size_t Probe(uint64_t hash, Match match) const {
    const size_t mask = capacity_ - 1;
    for (size_t i = Home(hash), d = 0;; i = (i + 1) & mask, ++d) {
      const Slot& s = slots_[i];
      if (s.entry == nullptr) return kNotFound;
      if (s.hash == hash && match(s.entry)) return i;
      if (Displacement(i) < d) return kNotFound;
    }
  }

  // Robin Hood insertion of an absent entry: it takes the place of the first
  // entry nearer to its home than the probe, which moves on (only slots move).
  void InsertSlot(Slot slot) {
    const size_t mask = capacity_ - 1;
    for (size_t i = Home(slot.hash), d = 0;; i = (i + 1) & mask, ++d) {
      if (slots_[i].entry == nullptr) {
        slots_[i] = slot;
        return;
      }
      const size_t resident = Displacement(i);
      if (resident < d) {
        std::swap(slots_[i], slot);
        d = resident;
      }
    }
  }

  // Backward-shift deletion: slot `hole` was just vacated; the displaced
  // entries after it move one slot back toward their homes.
  void ShiftBack(size_t hole) {
    const size_t mask = capacity_ - 1;
    for (size_t j = (hole + 1) & mask; slots_[j].entry != nullptr && Displacement(j) != 0;
         j = (j + 1) & mask) {
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = Slot{0, nullptr};
  }

  void MaybeShrink() {
    if (size_ == 0) {
      ReleaseSlots();
    } else if (capacity_ > kMinCapacity && size_ * 5 < capacity_) {
      Rehash(capacity_ / 2);
    }
  }

  // Moves every slot into a new array of `capacity` slots (a power of two).
  void Rehash(size_t capacity) {
    Slot* old = slots_;
    const size_t old_capacity = capacity_;
    slots_ = static_cast<Slot*>(::operator new(capacity * sizeof(Slot)));
    for (size_t i = 0; i < capacity; ++i) slots_[i] = Slot{0, nullptr};
    capacity_ = capacity;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].entry) InsertSlot(old[i]);
    }
    ::operator delete(old);
  }

  void ReleaseSlots() {
    ::operator delete(slots_);
    slots_ = nullptr;
    capacity_ = 0;
    shift_ = 63;
  }

  void Clear() {
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].entry) DeleteEntry(slots_[i].entry);
    }
    size_ = 0;
    ReleaseSlots();
  }

  void Swap(KeyMap& other) noexcept {
    std::swap(slots_, other.slots_);
    std::swap(capacity_, other.capacity_);
    std::swap(size_, other.size_);
    std::swap(shift_, other.shift_);
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  unsigned shift_ = 63;
};

}  // namespace shelfmark
