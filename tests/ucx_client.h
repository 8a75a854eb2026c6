// The process and cluster tests' Client of a real master over UCX.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "client/client.h"

namespace shelfmark::testing {

// A Client of the master at `master` (HOST:PORT) over UCX, with the rest of
// `options`; nullptr, after a GoogleTest failure naming the error, when it
// cannot be created.
inline std::unique_ptr<Client> MakeUcxClient(const std::string& master,
                                             ClientOptions options = {}) {
  options.master = master;
  options.protocol = "ucx";
  auto client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << ErrorCodeName(client.error());
  return client.ok() ? std::move(client).value() : nullptr;
}

}  // namespace shelfmark::testing
