# Snapshot payload codecs: msgpack-c (header-only, used without Boost) and zstd.
find_path(SHELFMARK_MSGPACK_INCLUDE_DIR msgpack.hpp REQUIRED)
find_path(SHELFMARK_ZSTD_INCLUDE_DIR zstd.h REQUIRED)
find_library(SHELFMARK_ZSTD_LIBRARY zstd REQUIRED)

shelfmark_library(snapshot_codec SOURCES codec.cc DEPS shelfmark::directory ${SHELFMARK_ZSTD_LIBRARY})
target_include_directories(shelfmark_snapshot_codec SYSTEM PUBLIC
  ${SHELFMARK_MSGPACK_INCLUDE_DIR} ${SHELFMARK_ZSTD_INCLUDE_DIR})
target_compile_definitions(shelfmark_snapshot_codec PUBLIC MSGPACK_NO_BOOST)

shelfmark_test(snapshot_codec_test SOURCES codec_test.cc DEPS shelfmark::snapshot_codec LABELS quick)

# libFuzzer target over every decoder (clang only), with codec.cc compiled
# into it so libFuzzer sees the decoders' coverage; ASan + UBSan on:
#   <build>/snapshot/snapshot_codec_fuzz -max_total_time=60
if(CMAKE_CXX_COMPILER_ID MATCHES Clang)
  add_executable(snapshot_codec_fuzz codec_fuzz.cc codec.cc)
  target_compile_options(snapshot_codec_fuzz PRIVATE ${SHELFMARK_WARNINGS}
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(snapshot_codec_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_include_directories(snapshot_codec_fuzz SYSTEM PRIVATE
    ${SHELFMARK_MSGPACK_INCLUDE_DIR} ${SHELFMARK_ZSTD_INCLUDE_DIR})
  target_compile_definitions(snapshot_codec_fuzz PRIVATE MSGPACK_NO_BOOST)
  target_link_libraries(snapshot_codec_fuzz PRIVATE shelfmark::directory ${SHELFMARK_ZSTD_LIBRARY})
endif()
