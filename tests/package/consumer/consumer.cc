// shelfmark-consumer MASTER KEY: puts 1 MiB of a known pattern under KEY
// through the installed client library, reads it back and compares. Prints
// "consumer: ok N bytes" and exits 0 only when the bytes match.
#include <cstdio>
#include <string>

#include "client/client.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: shelfmark-consumer MASTER_HOST:PORT KEY\n");
    return 2;
  }
  shelfmark::ClientOptions options;
  options.master = argv[1];
  options.protocol = "ucx";
  auto client = shelfmark::Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "consumer: create: %s\n", shelfmark::ErrorCodeName(client.error()).data());
    return 1;
  }
  std::string value(1 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 131) >> 3);
  shelfmark::ErrorCode put = (*client)->Put("", argv[2], value);
  if (put != shelfmark::ErrorCode::OK) {
    std::fprintf(stderr, "consumer: put: %s\n", shelfmark::ErrorCodeName(put).data());
    return 1;
  }
  auto got = (*client)->Get("", argv[2]);
  if (!got.ok()) {
    std::fprintf(stderr, "consumer: get: %s\n", shelfmark::ErrorCodeName(got.error()).data());
    return 1;
  }
  if (*got != value) {
    std::fprintf(stderr, "consumer: get returned %zu bytes that differ from the put\n",
                 got->size());
    return 1;
  }
  std::printf("consumer: ok %zu bytes\n", got->size());
  return 0;
}
