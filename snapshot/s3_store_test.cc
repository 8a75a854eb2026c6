// S3Store against a real S3 server (s3rver: real HTTP, real XML, checks the
// access key id; it does not verify SigV4 signatures, s3_signing_test.cc does),
// started through scripts/s3rver.sh; plus fault servers on loopback (one that
// never answers, one that answers 500). When node/npm cannot provide s3rver
// the tests FAIL (they never pass without a server).
#include "snapshot/s3_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/process_util.h"
#include "testing/s3rver.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

constexpr char kBucket[] = "shelfmark-test";
S3Config ConfigFor(const std::string& endpoint) {
  S3Config config;
  config.endpoint = endpoint;
  config.bucket = kBucket;
  config.access_key = testing::S3rver::kAccessKey;
  config.secret_key = testing::S3rver::kSecretKey;
  config.timeout_ms = 10000;
  return config;
}

std::unique_ptr<S3Store> OpenStore(const S3Config& config) {
  std::string error;
  auto store = S3Store::Open(config, &error);
  EXPECT_TRUE(store.ok()) << error;
  return store.ok() ? std::move(store.value()) : nullptr;
}

class S3StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testing::S3rver(kBucket); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(server_->status(), 0) << server_->StartFailure();
    // Each test works under its own prefix of the shared bucket.
    S3Config config = ConfigFor(server_->endpoint());
    config.prefix = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    store_ = OpenStore(config);
    ASSERT_NE(store_, nullptr);
  }
  static testing::S3rver* server_;
  std::unique_ptr<S3Store> store_;
};
testing::S3rver* S3StoreTest::server_ = nullptr;

TEST_F(S3StoreTest, PutGetReplaceRemove) {
  EXPECT_EQ(store_->Get("snap/latest.txt").error(), ErrorCode::FILE_NOT_FOUND);
  ASSERT_EQ(store_->Put("snap/latest.txt", "first"), ErrorCode::OK) << store_->last_error();
  EXPECT_EQ(store_->Get("snap/latest.txt").value(), "first");
  ASSERT_EQ(store_->Put("snap/latest.txt", "second"), ErrorCode::OK);
  EXPECT_EQ(store_->Get("snap/latest.txt").value(), "second");
  std::string binary(3 << 20, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7919 >> 3);
  ASSERT_EQ(store_->Put("snap/s1/metadata", binary), ErrorCode::OK) << store_->last_error();
  EXPECT_EQ(store_->Get("snap/s1/metadata").value(), binary);
  ASSERT_EQ(store_->Put("snap/empty", ""), ErrorCode::OK) << store_->last_error();
  EXPECT_EQ(store_->Get("snap/empty").value(), "");
  EXPECT_EQ(store_->List("").value(),
            (std::vector<std::string>{"snap/empty", "snap/latest.txt", "snap/s1/metadata"}));
  ASSERT_EQ(store_->Remove("snap/latest.txt"), ErrorCode::OK);
  EXPECT_EQ(store_->Get("snap/latest.txt").error(), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(store_->Remove("snap/latest.txt"), ErrorCode::OK);  // missing: OK
  EXPECT_EQ(store_->Remove("never/there"), ErrorCode::OK);
  EXPECT_EQ(store_->List("").value(),
            (std::vector<std::string>{"snap/empty", "snap/s1/metadata"}));
  EXPECT_EQ(store_->last_error(), "");  // nothing failed
}

TEST_F(S3StoreTest, ListFollowsContinuationTokensAndFiltersByPrefix) {
  S3Config config = ConfigFor(server_->endpoint());
  config.prefix = "paged";
  config.list_page_size = 3;  // forces many ListObjectsV2 pages
  auto store = OpenStore(config);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) {
    std::string key = "m/c1/s" + std::to_string(100 + i) + "/metadata";
    ASSERT_EQ(store->Put(key, key), ErrorCode::OK) << store->last_error();
    expected.push_back(key);
  }
  ASSERT_EQ(store->Put("m/c10/x", "x"), ErrorCode::OK);
  ASSERT_EQ(store->Put("other", "o"), ErrorCode::OK);
  ASSERT_EQ(store_->Put("m/c1/not-in-paged", "x"), ErrorCode::OK);  // another prefix
  EXPECT_EQ(store->List("m/c1/").value(), expected);
  EXPECT_EQ(store->List("m/c1/s11").value(),
            (std::vector<std::string>{"m/c1/s110/metadata", "m/c1/s111/metadata",
                                      "m/c1/s112/metadata", "m/c1/s113/metadata",
                                      "m/c1/s114/metadata", "m/c1/s115/metadata",
                                      "m/c1/s116/metadata", "m/c1/s117/metadata",
                                      "m/c1/s118/metadata", "m/c1/s119/metadata"}));
  auto all = store->List("");
  ASSERT_TRUE(all.ok()) << store->last_error();
  EXPECT_EQ(all->size(), 22u);
  EXPECT_EQ(all->back(), "other");
  EXPECT_TRUE(store->List("none/").value().empty());
  EXPECT_EQ(store->List("../").error(), ErrorCode::INVALID_PARAMS);
  for (const auto& key : expected) ASSERT_EQ(store->Remove(key), ErrorCode::OK);
  EXPECT_EQ(store->List("m/").value(), (std::vector<std::string>{"m/c10/x"}));
}

TEST_F(S3StoreTest, InvalidKeysAreRejectedWithoutARequest) {
  for (std::string key : {std::string(""), std::string("/abs"), std::string("a//b"),
                          std::string("../x"), std::string("a/./b"), std::string("a/"),
                          std::string("sp ace"), std::string("q?x"), std::string(1025, 'k')}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(store_->Put(key, "v"), ErrorCode::INVALID_PARAMS);
    EXPECT_EQ(store_->Get(key).error(), ErrorCode::INVALID_PARAMS);
    EXPECT_EQ(store_->Remove(key), ErrorCode::INVALID_PARAMS);
  }
  EXPECT_EQ(store_->last_error(), "");
  EXPECT_TRUE(store_->List("").value().empty());
}

TEST_F(S3StoreTest, UnknownAccessKeyIsStoreUnavailable) {
  // s3rver checks the access key id (not the SigV4 signature itself).
  S3Config config = ConfigFor(server_->endpoint());
  config.access_key = "NOBODY";
  config.secret_key = "not-the-secret";
  auto store = OpenStore(config);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Put("k", "v"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_NE(store->last_error().find("HTTP 403 InvalidAccessKeyId"), std::string::npos)
      << store->last_error();
  EXPECT_EQ(store->Get("k").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->List("").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->Remove("k"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->last_error().find("not-the-secret"), std::string::npos);
  EXPECT_EQ(store->Describe().find("not-the-secret"), std::string::npos);
  EXPECT_EQ(store->Describe().find("NOBODY"), std::string::npos);
}

TEST_F(S3StoreTest, MissingBucketIsStoreUnavailableNotNotFound) {
  S3Config config = ConfigFor(server_->endpoint());
  config.bucket = "no-such-bucket";
  auto store = OpenStore(config);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("k").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_NE(store->last_error().find("NoSuchBucket"), std::string::npos) << store->last_error();
  EXPECT_EQ(store->Put("k", "v"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->List("").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->Remove("k"), ErrorCode::STORE_UNAVAILABLE);
}

TEST_F(S3StoreTest, ConcurrentCallsFromManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 15; ++i) {
        std::string key = "t" + std::to_string(t) + "/k" + std::to_string(i);
        ASSERT_EQ(store_->Put(key, key + "!"), ErrorCode::OK) << store_->last_error();
        auto got = store_->Get(key);
        ASSERT_TRUE(got.ok()) << store_->last_error();
        ASSERT_EQ(*got, key + "!");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store_->List("").value().size(), 90u);
}

TEST(S3StoreServerGone, StoppedServerIsStoreUnavailable) {
  testing::S3rver server(kBucket);
  ASSERT_EQ(server.status(), 0) << server.StartFailure();
  S3Config config = ConfigFor(server.endpoint());
  config.timeout_ms = 2000;
  auto store = OpenStore(config);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("k", "v"), ErrorCode::OK) << store->last_error();
  server.Stop();
  EXPECT_EQ(store->Get("k").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_NE(store->last_error().find("curl"), std::string::npos) << store->last_error();
  EXPECT_EQ(store->Put("k", "v"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->List("").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->Remove("k"), ErrorCode::STORE_UNAVAILABLE);
}

// A loopback listener; with `answer_500`, a thread answers every request with
// HTTP 500, otherwise connections are accepted by the kernel and never
// answered.
class FaultServer {
 public:
  explicit FaultServer(bool answer_500) {
    fd_ = testing::ListenLoopback(64, &port_);
    EXPECT_GE(fd_, 0);
    if (answer_500) thread_ = std::thread([this] { Serve500(); });
  }
  ~FaultServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept()
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void Serve500() {
    while (true) {
      int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(conn, buf, sizeof(buf));
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      ++requests_;
      std::string body = "<Error><Code>InternalError</Code><Message>boom</Message></Error>";
      std::string reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      ssize_t ignored = write(conn, reply.data(), reply.size());
      (void)ignored;
      close(conn);
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

TEST(S3StoreFaults, SilentServerTimesOut) {
  FaultServer server(/*answer_500=*/false);
  S3Config config = ConfigFor(server.endpoint());
  config.timeout_ms = 300;
  auto store = OpenStore(config);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("k").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_NE(store->last_error().find("Timeout"), std::string::npos) << store->last_error();
  EXPECT_EQ(store->Put("k", std::string(1 << 20, 'x')), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->List("").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->Remove("k"), ErrorCode::STORE_UNAVAILABLE);
}

TEST(S3StoreFaults, Http500IsStoreUnavailable) {
  FaultServer server(/*answer_500=*/true);
  auto store = OpenStore(ConfigFor(server.endpoint()));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("k").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_NE(store->last_error().find("HTTP 500 InternalError (boom)"), std::string::npos)
      << store->last_error();
  EXPECT_EQ(store->Put("k", "v"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->List("").error(), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(store->Remove("k"), ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(server.requests(), 4);
}

TEST(S3StoreOpen, ValidatesTheConfiguration) {
  S3Config good = ConfigFor("http://127.0.0.1:9");
  std::string error;
  ASSERT_TRUE(S3Store::Open(good, &error).ok()) << error;
  auto bad = [&](auto change) {
    S3Config config = good;
    change(config);
    error.clear();
    auto store = S3Store::Open(config, &error);
    EXPECT_EQ(store.error(), ErrorCode::INVALID_PARAMS);
    EXPECT_FALSE(error.empty());
  };
  bad([](S3Config& c) { c.endpoint = "127.0.0.1:9"; });
  bad([](S3Config& c) { c.endpoint = "ftp://host"; });
  bad([](S3Config& c) { c.endpoint = "http://"; });
  bad([](S3Config& c) { c.endpoint = "http://host/path"; });
  bad([](S3Config& c) { c.endpoint = "http://user:pw@host"; });
  bad([](S3Config& c) { c.bucket = ""; });
  bad([](S3Config& c) { c.bucket = "a/b"; });
  bad([](S3Config& c) { c.access_key = ""; });
  bad([](S3Config& c) { c.secret_key = ""; });
  bad([](S3Config& c) { c.timeout_ms = 0; });
  bad([](S3Config& c) { c.list_page_size = 0; });
  bad([](S3Config& c) { c.list_page_size = 1001; });
  bad([](S3Config& c) { c.prefix = "../up"; });
  good.prefix = "cluster/a/";
  auto store = S3Store::Open(good, &error);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Describe(), "s3:http://127.0.0.1:9/shelfmark-test/cluster/a/");
  EXPECT_EQ((*store)->Describe().find("S3RVER"), std::string::npos);
}

class S3ConfigEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kNames) unsetenv(name);
  }
  static constexpr const char* kNames[] = {
      "MOONCAKE_SNAPSHOT_S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
      "AWS_REGION", "AWS_DEFAULT_REGION", "MOONCAKE_SNAPSHOT_S3_ENDPOINT",
      "MOONCAKE_SNAPSHOT_S3_PREFIX", "MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS"};
};

TEST_F(S3ConfigEnvTest, RequiredVariablesAreNamed) {
  std::string error;
  EXPECT_EQ(S3ConfigFromEnv(&error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("MOONCAKE_SNAPSHOT_S3_BUCKET"), std::string::npos) << error;
  setenv("MOONCAKE_SNAPSHOT_S3_BUCKET", "snaps", 1);
  EXPECT_EQ(S3ConfigFromEnv(&error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("AWS_ACCESS_KEY_ID"), std::string::npos) << error;
  setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  EXPECT_EQ(S3ConfigFromEnv(&error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << error;
  setenv("AWS_SECRET_ACCESS_KEY", "very-secret", 1);
  auto config = S3ConfigFromEnv(&error);
  ASSERT_TRUE(config.ok()) << error;
  EXPECT_EQ(config->region, "us-east-1");
  EXPECT_EQ(config->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_EQ(config->timeout_ms, 30000);
  setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
  EXPECT_EQ(S3ConfigFromEnv()->endpoint, "https://s3.eu-west-1.amazonaws.com");
  setenv("AWS_REGION", "eu-central-1", 1);
  setenv("MOONCAKE_SNAPSHOT_S3_ENDPOINT", "http://minio:9000", 1);
  setenv("MOONCAKE_SNAPSHOT_S3_PREFIX", "mooncake", 1);
  setenv("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS", "1500", 1);
  config = S3ConfigFromEnv(&error);
  ASSERT_TRUE(config.ok()) << error;
  EXPECT_EQ(config->region, "eu-central-1");
  EXPECT_EQ(config->endpoint, "http://minio:9000");
  EXPECT_EQ(config->bucket, "snaps");
  EXPECT_EQ(config->access_key, "AKID");
  EXPECT_EQ(config->secret_key, "very-secret");
  EXPECT_EQ(config->prefix, "mooncake");
  EXPECT_EQ(config->timeout_ms, 1500);
  setenv("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS", "soon", 1);
  EXPECT_EQ(S3ConfigFromEnv(&error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS"), std::string::npos) << error;
  unsetenv("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS");
  setenv("MOONCAKE_SNAPSHOT_S3_ENDPOINT", "minio:9000", 1);
  EXPECT_EQ(S3ConfigFromEnv(&error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("MOONCAKE_SNAPSHOT_S3_ENDPOINT"), std::string::npos) << error;
  EXPECT_EQ(error.find("very-secret"), std::string::npos);
}

TEST(S3ListParse, KeysTruncationTokensAndEntities) {
  auto page = ParseListObjectsV2(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
      "<IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a&amp;b</Key><Size>1</Size></Contents>\n"
      "<Contents>\n  <Key>p/&lt;c&gt;&#x41;&#66;&quot;&apos;</Key>\n</Contents>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&amp;</NextContinuationToken>"
      "</ListBucketResult>");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->keys, (std::vector<std::string>{"p/a&b", "p/<c>AB\"'"}));
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&");

  auto last = ParseListObjectsV2("<ListBucketResult><IsTruncated>false</IsTruncated>"
                                 "</ListBucketResult>");
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->keys.empty());
  EXPECT_FALSE(last->truncated);

  EXPECT_EQ(ParseListObjectsV2("<Error><Code>AccessDenied</Code></Error>").error(),
            ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated>"
                               "</ListBucketResult>").error(),
            ErrorCode::DATA_CORRUPTED);  // truncated without a token
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><Contents><Size>1</Size></Contents>"
                               "</ListBucketResult>").error(),
            ErrorCode::DATA_CORRUPTED);  // an entry without a key
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><Contents><Key>a&bogus;</Key></Contents>"
                               "</ListBucketResult>").error(),
            ErrorCode::DATA_CORRUPTED);
}

TEST(S3ListParse, XmlUnescape) {
  EXPECT_EQ(XmlUnescape("plain").value(), "plain");
  EXPECT_EQ(XmlUnescape("&#233;&#x20AC;&#x1F600;").value(), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(XmlUnescape("&").error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(XmlUnescape("&#;").error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(XmlUnescape("&#x110000;").error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(XmlUnescape("&#xD800;").error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(XmlUnescape("&#0;").error(), ErrorCode::DATA_CORRUPTED);
}

}  // namespace
}  // namespace shelfmark
