// Whether this build runs under a sanitizer with shadow memory (ASan,
// TSan). Tests that count page faults skip their counts there: the
// sanitizer's shadow pages fault alongside the memory a test writes, so the
// counts say nothing about the code under test.
#pragma once

namespace shelfmark {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kShadowMemory = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kShadowMemory = true;
#else
inline constexpr bool kShadowMemory = false;
#endif
#else
inline constexpr bool kShadowMemory = false;
#endif

}  // namespace shelfmark::testing
