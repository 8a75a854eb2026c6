# The bucket backend ("bucket_storage_backend", the default): objects packed
# into <id>.bucket files with <id>.meta recovery records.
shelfmark_library(ssdstore_bucket
  SOURCES bucket_format.cc bucket_backend.cc
  DEPS shelfmark::ssdstore_io shelfmark::directory)
find_path(SHELFMARK_XXHASH_INCLUDE xxhash.h REQUIRED)
target_include_directories(shelfmark_ssdstore_bucket PRIVATE ${SHELFMARK_XXHASH_INCLUDE})

shelfmark_test(ssdstore_bucket_test
  SOURCES bucket_format_test.cc bucket_backend_test.cc
  DEPS shelfmark::ssdstore_bucket
  LABELS quick)
target_include_directories(ssdstore_bucket_test PRIVATE ${SHELFMARK_XXHASH_INCLUDE})
