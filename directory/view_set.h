// ViewSet: a set of string views in one open-addressed array (linear
// probing, backward-shift erase). It holds views of bytes someone else owns:
// a tenant's keys with an unfinished put are views of their entries' key
// bytes (directory/shard.h). A node-based std::unordered_set cost a malloc
// and a free and two dependent misses (bucket, node) on every put, in the
// shard's write lock; here a put costs one slot line and no allocation
// while the array has room (keys are hashed once, by KeyMap's hash).
//
// Contract: views must have non-null data (an empty view may); the viewed
// bytes must stay valid and unchanged while in the set. Iteration order is
// unspecified, and inserting or erasing invalidates iterators. Thread
// safety: none of its own (the shard's lock guards it).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string_view>
#include <utility>

#include "directory/key_map.h"

namespace shelfmark {

class ViewSet {
  struct Slot {
    const char* data = nullptr;  // nullptr: free
    uint64_t hash = 0;           // kept: a move or a resize reads no viewed bytes
    uint32_t size = 0;
  };

 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;

    const_iterator() = default;
    std::string_view operator*() const { return {slot_->data, slot_->size}; }
    const_iterator& operator++() {
      ++slot_;
      Skip();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return slot_ == o.slot_; }

   private:
    friend class ViewSet;
    const_iterator(const Slot* slot, const Slot* end) : slot_(slot), end_(end) { Skip(); }
    void Skip() {
      while (slot_ != end_ && slot_->data == nullptr) ++slot_;
    }
    const Slot* slot_ = nullptr;
    const Slot* end_ = nullptr;
  };

  ViewSet() = default;
  ViewSet(const ViewSet&) = delete;
  ViewSet& operator=(const ViewSet&) = delete;
  ViewSet(ViewSet&& other) noexcept { *this = std::move(other); }
  ViewSet& operator=(ViewSet&& other) noexcept {
    slots_ = std::move(other.slots_);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
    shift_ = std::exchange(other.shift_, 64);
    return *this;
  }

  // Inserts `view` unless an equal one is there; true when inserted.
  bool emplace(std::string_view view) {
    const uint64_t hash = key_map_internal::HashBytes(view);
    if (capacity_ != 0 && Locate(view, hash) != kNone) return false;
    if ((size_ + 1) * 4 > capacity_ * 3) Resize(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
    Place(Slot{view.data(), hash, static_cast<uint32_t>(view.size())});
    ++size_;
    return true;
  }
  // Removes a view equal to `view`; returns how many were removed (0 or 1).
  size_t erase(std::string_view view) {
    if (size_ == 0) return 0;
    const size_t i = Locate(view, key_map_internal::HashBytes(view));
    if (i == kNone) return 0;
    ShiftBack(i);
    --size_;
    if (capacity_ > kMinCapacity && size_ * 8 < capacity_) Resize(capacity_ / 2);
    return 1;
  }
  bool contains(std::string_view view) const {
    return size_ != 0 && Locate(view, key_map_internal::HashBytes(view)) != kNone;
  }
  void clear() { *this = ViewSet(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const { return {slots_.get(), slots_.get() + capacity_}; }
  const_iterator end() const { return {slots_.get() + capacity_, slots_.get() + capacity_}; }

 private:
  static constexpr size_t kMinCapacity = 8;
  static constexpr size_t kNone = ~size_t{0};

  size_t Home(uint64_t hash) const { return (hash * 0x9E3779B97F4A7C15ull) >> shift_; }
  size_t Next(size_t i) const { return (i + 1) & (capacity_ - 1); }

  size_t Locate(std::string_view view, uint64_t hash) const {
    for (size_t i = Home(hash);; i = Next(i)) {
      const Slot& s = slots_[i];
      if (s.data == nullptr) return kNone;
      if (s.hash == hash && s.size == view.size() &&
          std::memcmp(s.data, view.data(), view.size()) == 0) {
        return i;
      }
    }
  }
  void Place(const Slot& slot) {
    size_t i = Home(slot.hash);
    while (slots_[i].data != nullptr) i = Next(i);
    slots_[i] = slot;
  }
  // Empties slot i and moves later slots of its probe run back, so that no
  // lookup stops early at the hole.
  void ShiftBack(size_t i) {
    for (size_t j = Next(i);; j = Next(j)) {
      const Slot& s = slots_[j];
      if (s.data == nullptr) break;
      const size_t home = Home(s.hash);
      // s may move to i when its home is not in the cyclic range (i, j].
      const bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
      if (stays) continue;
      slots_[i] = s;
      i = j;
    }
    slots_[i] = Slot{};
  }
  void Resize(size_t capacity) {
    std::unique_ptr<Slot[]> old = std::exchange(slots_, std::make_unique<Slot[]>(capacity));
    const size_t old_capacity = std::exchange(capacity_, capacity);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].data != nullptr) Place(old[i]);
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t size_ = 0;
  unsigned shift_ = 64;
};

}  // namespace shelfmark
