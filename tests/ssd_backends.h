// The SSD store backends the process tests run over, as a GoogleTest
// parameter: INSTANTIATE_TEST_SUITE_P(Backends, Suite, testing::SsdBackends(),
// testing::SsdBackendName) names the cases .../bucket and .../offset.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace shelfmark::testing {

inline auto SsdBackends() {
  return ::testing::Values(std::string("bucket_storage_backend"),
                           std::string("offset_allocator_storage_backend"));
}

inline std::string SsdBackendName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param == "bucket_storage_backend" ? "bucket" : "offset";
}

}  // namespace shelfmark::testing
