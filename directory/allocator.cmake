# OffsetAllocator: best-fit placement of MEMORY replicas in segments.
list(APPEND DIRECTORY_SOURCES offset_allocator.cc)
shelfmark_test(offset_allocator_test
  SOURCES offset_allocator_test.cc
  DEPS shelfmark::directory
  LABELS quick)
