# The offset-allocator backend: records in one preallocated kv_cache.data,
# placed by the directory's OffsetAllocator, checkpointed to kv_cache.meta.
shelfmark_library(ssdstore_offset
  SOURCES offset_record.cc offset_checkpoint.cc offset_backend.cc
  DEPS shelfmark::ssdstore_io shelfmark::directory)

shelfmark_test(offset_record_test SOURCES offset_record_test.cc
  DEPS shelfmark::ssdstore_offset LABELS quick)
shelfmark_test(offset_checkpoint_test SOURCES offset_checkpoint_test.cc
  DEPS shelfmark::ssdstore_offset LABELS quick)
shelfmark_test(offset_backend_test SOURCES offset_backend_test.cc
  DEPS shelfmark::ssdstore_offset LABELS quick)
