// Clang thread-safety annotations (after LevelDB's port/thread_annotations.h
// and the Clang manual). With clang and -Wthread-safety the compiler checks
// that a GUARDED_BY field is only touched with its capability held and that
// REQUIRES functions are only called with it held; under GCC every macro
// expands to nothing. Build with scripts/check_thread_safety.sh.
#pragma once

#if defined(__clang__)
#define SHELFMARK_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SHELFMARK_THREAD_ANNOTATION(x)  // no-op
#endif

// A type whose instances are capabilities (mutexes): `class CAPABILITY("mutex") Mutex`.
#ifndef CAPABILITY
#define CAPABILITY(x) SHELFMARK_THREAD_ANNOTATION(capability(x))
#endif

// An RAII guard that acquires a capability in its constructor and releases it
// in its destructor.
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY SHELFMARK_THREAD_ANNOTATION(scoped_lockable)
#endif

// A field readable (shared) or writable (exclusive) only with `x` held.
#ifndef GUARDED_BY
#define GUARDED_BY(x) SHELFMARK_THREAD_ANNOTATION(guarded_by(x))
#endif

// A pointer whose pointee is guarded by `x` (the pointer itself is not).
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) SHELFMARK_THREAD_ANNOTATION(pt_guarded_by(x))
#endif

// The caller must hold the capabilities exclusively / at least shared.
#ifndef REQUIRES
#define REQUIRES(...) SHELFMARK_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) SHELFMARK_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#endif

// The function acquires / releases the capabilities (exclusive or shared).
// Without arguments on a member function: the object itself.
#ifndef ACQUIRE
#define ACQUIRE(...) SHELFMARK_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) SHELFMARK_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) SHELFMARK_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) SHELFMARK_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#endif

// The caller must not hold the capabilities (the function takes them itself).
#ifndef EXCLUDES
#define EXCLUDES(...) SHELFMARK_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif

#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(...) SHELFMARK_THREAD_ANNOTATION(assert_capability(__VA_ARGS__))
#endif

// Turns the analysis off for one function. Use on the narrowest function
// possible, with a comment saying why the analysis cannot follow.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS SHELFMARK_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
