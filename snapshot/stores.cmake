# Object stores of snapshots: a local directory and S3 (libcurl, SigV4 with
# OpenSSL libcrypto). s3_store_test starts a real S3 server (npm s3rver)
# through scripts/s3rver.sh and fails when Node.js/npm cannot provide it.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)

shelfmark_library(snapshot_store
  SOURCES object_store.cc local_store.cc sigv4.cc s3_store.cc
  DEPS shelfmark::common CURL::libcurl OpenSSL::Crypto)

shelfmark_test(snapshot_store_test
  SOURCES local_store_test.cc sigv4_test.cc
  DEPS shelfmark::snapshot_store
  LABELS quick)

shelfmark_test(s3_store_test
  SOURCES s3_store_test.cc ${PROJECT_SOURCE_DIR}/tests/process_util.cc
  DEPS shelfmark::snapshot_store shelfmark::perfutil
  LABELS quick s3
  TIMEOUT 300)
target_compile_definitions(s3_store_test PRIVATE
  SHELFMARK_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
