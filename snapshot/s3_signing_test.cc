// S3 request signing is libcurl's (CURLOPT_AWS_SIGV4, set up by
// SetCurlSigV4 exactly as S3Store does). Checked here on a loopback server
// that records every request as it arrives:
//  - libcurl's Authorization header for AWS's published SigV4 examples (S3
//    "Signature Calculations for the Authorization Header", credentials
//    AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,
//    2013-05-24, us-east-1) equals the published one, with the example's
//    date given as an x-amz-date header;
//  - every request S3Store sends signs exactly the headers it sends (Host with
//    the port, x-amz-content-sha256 = SHA-256 of the body, one x-amz-date),
//    has a canonical path and query, and carries the signature that libcurl
//    computes for those explicit values and that date (the computation the
//    examples check).
//
// libcurl 7.88 sends a caller-supplied x-amz-date twice (the caller's header
// and its own copy next to Authorization, same value); only these tests
// supply one, S3Store lets libcurl date its requests.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "snapshot/s3_store.h"
#include "testing/process_util.h"

namespace shelfmark {
namespace {

constexpr char kEmptyHash[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kDate[] = "20130524T000000Z";

S3Config ExampleConfig() {
  S3Config config;
  config.region = "us-east-1";
  config.access_key = "AKIAIOSFODNN7EXAMPLE";
  config.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return config;
}

// One HTTP request as the server received it.
struct Captured {
  std::string method;
  std::string target;  // path[?query]
  std::vector<std::pair<std::string, std::string>> headers;  // in order, values trimmed
  std::string body;

  std::vector<std::string> Values(const std::string& name) const {
    std::vector<std::string> values;
    for (const auto& [n, v] : headers) {
      if (strcasecmp(n.c_str(), name.c_str()) == 0) values.push_back(v);
    }
    return values;
  }
  // The first value of `name`; "" when absent.
  std::string Header(const std::string& name) const {
    auto values = Values(name);
    return values.empty() ? "" : values.front();
  }
};

// "AWS4-HMAC-SHA256 Credential=C, SignedHeaders=S, Signature=X" -> parts.
struct Authorization {
  std::string credential;
  std::string signed_headers;
  std::string signature;
};
Authorization ParseAuthorization(const std::string& value) {
  Authorization auth;
  auto field = [&](const std::string& name) -> std::string {
    size_t start = value.find(name + "=");
    if (start == std::string::npos) return "";
    start += name.size() + 1;
    size_t end = value.find(',', start);
    return value.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  auth.credential = field("Credential");
  auth.signed_headers = field("SignedHeaders");
  auth.signature = field("Signature");
  return auth;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// A loopback HTTP/1.1 server: records each request (answering
// "Expect: 100-continue"), answers 200 with the body `reply` gives and closes
// the connection.
class CaptureServer {
 public:
  using Reply = std::function<std::string(const Captured&)>;

  explicit CaptureServer(Reply reply = nullptr) : reply_(std::move(reply)) {
    fd_ = testing::ListenLoopback(16, &port_);
    EXPECT_GE(fd_, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CaptureServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    close(fd_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Captured> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // Forgets the requests recorded so far.
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.clear();
  }

 private:
  void Serve() {
    while (true) {
      int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      Captured request;
      if (Read(conn, &request)) {
        std::string body = reply_ ? reply_(request) : "";
        {
          // Recorded before the answer: the client may look as soon as it has one.
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(std::move(request));
        }
        Write(conn, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\nConnection: close\r\n\r\n" + body);
      }
      close(conn);
    }
  }

  static void Write(int conn, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(conn, data.data() + done, data.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  static bool Read(int conn, Captured* request) {
    std::string data;
    char buf[65536];
    size_t head_end;
    while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = read(conn, buf, sizeof(buf));
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
    }
    std::vector<std::string> lines = Split(data.substr(0, head_end), '\n');
    for (std::string& line : lines) {
      if (line.ends_with('\r')) line.pop_back();
    }
    std::vector<std::string> start = Split(lines[0], ' ');
    if (start.size() != 3) return false;
    request->method = start[0];
    request->target = start[1];
    for (size_t i = 1; i < lines.size(); ++i) {
      size_t colon = lines[i].find(':');
      if (colon == std::string::npos) return false;
      request->headers.emplace_back(lines[i].substr(0, colon), Trim(lines[i].substr(colon + 1)));
    }
    std::string length = request->Header("Content-Length");
    size_t want = length.empty() ? 0 : std::stoul(length);
    request->body = data.substr(head_end + 4);
    if (request->body.size() < want && request->Header("Expect") == "100-continue") {
      Write(conn, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    while (request->body.size() < want) {
      ssize_t n = read(conn, buf, sizeof(buf));
      if (n <= 0) return false;
      request->body.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  Reply reply_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Captured> requests_;
};

// Sends `method` `target` with the header lines `headers` (and `body`, when
// given, from memory as S3Store sends a PUT body) to `server`, signed by
// libcurl as SetCurlSigV4(config) sets it up; returns what arrived.
Captured SendSigned(CaptureServer& server, const S3Config& config, const std::string& method,
                    const std::string& target, const std::vector<std::string>& headers,
                    const std::string& body = "") {
  server.Clear();
  CURL* curl = curl_easy_init();
  EXPECT_NE(curl, nullptr);
  if (curl == nullptr) return {};
  curl_slist* list = nullptr;
  for (const std::string& line : headers) list = curl_slist_append(list, line.c_str());
  std::string url = server.endpoint() + target;
  std::string reply;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION,
                   +[](char* data, size_t size, size_t n, void* user) {
                     static_cast<std::string*>(user)->append(data, size * n);
                     return size * n;
                   });
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  if (method != "GET") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  EXPECT_TRUE(SetCurlSigV4(curl, config));
  CURLcode rc = curl_easy_perform(curl);
  EXPECT_EQ(rc, CURLE_OK) << curl_easy_strerror(rc);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  auto requests = server.requests();
  EXPECT_EQ(requests.size(), 1u);
  return requests.empty() ? Captured{} : requests.back();
}

std::string ExpectedAuthorization(const std::string& signed_headers, const std::string& signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
         "SignedHeaders=" + signed_headers + ", Signature=" + signature;
}

TEST(CurlSigV4, GetObjectExample) {
  // "GET Object": GET /test.txt, Range: bytes=0-9.
  CaptureServer server;
  Captured got = SendSigned(server, ExampleConfig(), "GET", "/test.txt",
                            {"Host: examplebucket.s3.amazonaws.com", "Range: bytes=0-9",
                             std::string("x-amz-content-sha256: ") + kEmptyHash,
                             std::string("x-amz-date: ") + kDate});
  EXPECT_EQ(got.Header("Authorization"),
            ExpectedAuthorization("host;range;x-amz-content-sha256;x-amz-date",
                                  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));
  // The example's date is the one signed and sent (libcurl 7.88 sends it twice).
  ASSERT_FALSE(got.Values("x-amz-date").empty());
  for (const std::string& date : got.Values("x-amz-date")) EXPECT_EQ(date, kDate);
}

TEST(CurlSigV4, HeaderOrderCaseAndSpacingDoNotMatter) {
  CaptureServer server;
  Captured got = SendSigned(server, ExampleConfig(), "GET", "/test.txt",
                            {std::string("X-Amz-Date: ") + kDate, "RANGE:   bytes=0-9 ",
                             std::string("x-amz-content-sha256: ") + kEmptyHash,
                             "host: examplebucket.s3.amazonaws.com"});
  EXPECT_EQ(ParseAuthorization(got.Header("Authorization")).signature,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(CurlSigV4, ListObjectsExample) {
  // "GET Bucket (List Objects)": GET /?max-keys=2&prefix=J. libcurl signs the
  // query as sent, so it must be sent in canonical order (S3Store does).
  CaptureServer server;
  Captured got = SendSigned(server, ExampleConfig(), "GET", "/?max-keys=2&prefix=J",
                            {"Host: examplebucket.s3.amazonaws.com",
                             std::string("x-amz-content-sha256: ") + kEmptyHash,
                             std::string("x-amz-date: ") + kDate});
  EXPECT_EQ(got.target, "/?max-keys=2&prefix=J");
  EXPECT_EQ(got.Header("Authorization"),
            ExpectedAuthorization("host;x-amz-content-sha256;x-amz-date",
                                  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"));
}

TEST(CurlSigV4, PutObjectExample) {
  // "PUT Object": PUT /test$file.text, body "Welcome to Amazon S3.", with a
  // Date and an x-amz-storage-class header; the payload hash is the
  // x-amz-content-sha256 header's (SHA-256 of the body).
  CaptureServer server;
  Captured got = SendSigned(
      server, ExampleConfig(), "PUT", "/test%24file.text",
      {"Host: examplebucket.s3.amazonaws.com", "Date: Fri, 24 May 2013 00:00:00 GMT",
       std::string("x-amz-date: ") + kDate, "x-amz-storage-class: REDUCED_REDUNDANCY",
       "x-amz-content-sha256: 44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
      "Welcome to Amazon S3.");
  EXPECT_EQ(got.method, "PUT");
  EXPECT_EQ(got.body, "Welcome to Amazon S3.");
  EXPECT_EQ(got.Header("Authorization"),
            ExpectedAuthorization("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                                  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"));
}

// Checks one request S3Store sent: signed headers = headers sent, one
// x-amz-date, the credential scope, and the signature libcurl computes for
// the same method, target, header values and date given explicitly.
void CheckStoreRequest(CaptureServer& server, const S3Config& config, const Captured& sent) {
  SCOPED_TRACE(sent.method + " " + sent.target);
  Authorization auth = ParseAuthorization(sent.Header("Authorization"));
  ASSERT_EQ(sent.Values("x-amz-date").size(), 1u);
  const std::string date = sent.Header("x-amz-date");
  ASSERT_EQ(date.size(), 16u);
  EXPECT_EQ(auth.credential, config.access_key + "/" + date.substr(0, 8) + "/" + config.region +
                                 "/s3/aws4_request");
  std::string expected_signed = "host;x-amz-content-sha256;x-amz-date";
  if (sent.method == "PUT") expected_signed = "content-type;" + expected_signed;
  EXPECT_EQ(auth.signed_headers, expected_signed);
  std::vector<std::string> replay;
  for (const std::string& name : Split(auth.signed_headers, ';')) {
    ASSERT_EQ(sent.Values(name).size(), 1u) << name << " is signed but not sent once";
    replay.push_back(name + ": " + sent.Header(name));
  }
  EXPECT_EQ(sent.Header("Host"), server.endpoint().substr(7));  // with the port
  Captured again = SendSigned(server, config, sent.method, sent.target, replay);
  EXPECT_EQ(ParseAuthorization(again.Header("Authorization")).signature, auth.signature);
}

TEST(S3StoreSigning, EveryRequestSignsWhatItSends) {
  int lists = 0;
  CaptureServer server([&lists](const Captured& request) -> std::string {
    if (request.target.find("list-type=2") == std::string::npos) return "data";
    // Two ListObjectsV2 pages, the first with a token that needs escaping.
    if (++lists % 2 == 1) {
      return "<ListBucketResult><IsTruncated>true</IsTruncated>"
             "<Contents><Key>pre/snap/a.txt</Key></Contents>"
             "<NextContinuationToken>a+b/c==&amp;x y</NextContinuationToken></ListBucketResult>";
    }
    return "<ListBucketResult><IsTruncated>false</IsTruncated>"
           "<Contents><Key>pre/snap/b.txt</Key></Contents></ListBucketResult>";
  });
  S3Config config = ExampleConfig();
  config.endpoint = server.endpoint();
  config.bucket = "shelfmark-test";
  config.region = "eu-west-1";
  config.prefix = "pre";
  config.timeout_ms = 10000;
  std::string error;
  auto opened = S3Store::Open(config, &error);
  ASSERT_TRUE(opened.ok()) << error;
  S3Store& store = **opened;

  ASSERT_EQ(store.Put("snap/a.txt", "Welcome to Amazon S3."), ErrorCode::OK) << store.last_error();
  const std::string big(2 << 20, 'b');  // above libcurl's 1 MiB "Expect: 100-continue" limit
  ASSERT_EQ(store.Put("snap/big", big), ErrorCode::OK) << store.last_error();
  ASSERT_EQ(store.Get("snap/a.txt").value(), "data");
  ASSERT_EQ(store.Remove("snap/a.txt"), ErrorCode::OK);
  ASSERT_EQ(store.List("snap/").value(), (std::vector<std::string>{"snap/a.txt", "snap/b.txt"}));
  std::vector<Captured> sent = server.requests();
  ASSERT_EQ(sent.size(), 6u);

  EXPECT_EQ(sent[0].method, "PUT");
  EXPECT_EQ(sent[0].target, "/shelfmark-test/pre/snap/a.txt");
  EXPECT_EQ(sent[0].body, "Welcome to Amazon S3.");
  EXPECT_EQ(sent[0].Header("x-amz-content-sha256"),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(sent[0].Header("Content-Type"), "application/octet-stream");
  EXPECT_TRUE(sent[0].Values("Expect").empty());
  EXPECT_EQ(sent[1].body, big);
  EXPECT_EQ(sent[1].Header("Expect"), "100-continue");  // sent, not signed
  EXPECT_EQ(sent[1].Header("x-amz-content-sha256"),
            "85a6e0cdf20bfbc76abca53afb39fdf2edd59ac8fcf236ee730d8ea2851ca975");
  EXPECT_EQ(sent[2].method, "GET");
  EXPECT_EQ(sent[2].target, "/shelfmark-test/pre/snap/a.txt");
  EXPECT_EQ(sent[2].Header("x-amz-content-sha256"), kEmptyHash);
  EXPECT_EQ(sent[3].method, "DELETE");
  EXPECT_EQ(sent[3].target, "/shelfmark-test/pre/snap/a.txt");
  // ListObjectsV2: parameters sorted by name, values RFC 3986 encoded.
  EXPECT_EQ(sent[4].target, "/shelfmark-test/?list-type=2&max-keys=1000&prefix=pre%2Fsnap%2F");
  EXPECT_EQ(sent[5].target,
            "/shelfmark-test/?continuation-token=a%2Bb%2Fc%3D%3D%26x%20y"
            "&list-type=2&max-keys=1000&prefix=pre%2Fsnap%2F");

  for (const Captured& request : sent) CheckStoreRequest(server, config, request);
}

TEST(S3StoreSigning, RegionWithAColonIsRejected) {
  // It would split curl's "aws:amz:<region>:s3" differently.
  S3Config config = ExampleConfig();
  config.endpoint = "http://127.0.0.1:9";
  config.bucket = "shelfmark-test";
  config.region = "us:east";
  std::string error;
  EXPECT_EQ(S3Store::Open(config, &error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("region"), std::string::npos) << error;
}

}  // namespace
}  // namespace shelfmark
