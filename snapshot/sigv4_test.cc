// SigV4 against AWS's published examples (S3 "Signature Calculations for the
// Authorization Header", example credentials AKIAIOSFODNN7EXAMPLE /
// wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, 2013-05-24, us-east-1).
#include "snapshot/sigv4.h"

#include <gtest/gtest.h>

namespace shelfmark::sigv4 {
namespace {

const Credentials kExampleCreds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                "us-east-1", "s3"};
constexpr char kEmptyHash[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kDate[] = "20130524T000000Z";

Request GetObjectExample() {
  Request r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptyHash},
               {"x-amz-date", kDate}};
  r.payload_hash = kEmptyHash;
  return r;
}

TEST(SigV4, Sha256AndHmacKnownValues) {
  EXPECT_EQ(Sha256Hex(""), kEmptyHash);
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231 test case 2.
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SigV4, GetObjectExampleCanonicalRequest) {
  EXPECT_EQ(CanonicalRequest(GetObjectExample()),
            "GET\n/test.txt\n\n"
            "host:examplebucket.s3.amazonaws.com\n"
            "range:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\n"
            "host;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SigV4, GetObjectExampleStringToSign) {
  std::string scope = CredentialScope(kDate, kExampleCreds);
  EXPECT_EQ(scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(StringToSign(kDate, scope, CanonicalRequest(GetObjectExample())),
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

TEST(SigV4, GetObjectExampleAuthorization) {
  EXPECT_EQ(Signature(GetObjectExample(), kExampleCreds, kDate),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(AuthorizationHeader(GetObjectExample(), kExampleCreds, kDate),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, HeaderOrderCaseAndSpacingDoNotMatter) {
  Request r = GetObjectExample();
  r.headers = {{"X-Amz-Date", kDate},
               {"RANGE", "  bytes=0-9 "},
               {"x-amz-content-sha256", kEmptyHash},
               {"host", "examplebucket.s3.amazonaws.com"}};
  EXPECT_EQ(Signature(r, kExampleCreds, kDate),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, ListObjectsExampleQuerySigning) {
  // "GET Bucket (List Objects)": GET /?max-keys=2&prefix=J.
  Request r;
  r.method = "GET";
  r.path = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-content-sha256", kEmptyHash},
               {"x-amz-date", kDate}};
  r.payload_hash = kEmptyHash;
  EXPECT_EQ(CanonicalQueryString(r.query), "max-keys=2&prefix=J");
  EXPECT_EQ(Signature(r, kExampleCreds, kDate),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, PutObjectExample) {
  // "PUT Object": PUT /test$file.text with "Welcome to Amazon S3." body.
  Request r;
  r.method = "PUT";
  r.path = "/" + UriEncode("test$file.text", true);
  r.payload_hash = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(r.path, "/test%24file.text");
  EXPECT_EQ(r.payload_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", kDate},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", r.payload_hash}};
  EXPECT_EQ(Signature(r, kExampleCreds, kDate),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, SigningKeyIamExample) {
  // SigV4 general reference, "Examples of how to derive a signing key".
  Credentials creds{"", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "iam"};
  EXPECT_EQ(Hex(SigningKey(creds, "20120215")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST(SigV4, UriEncodeAndQueryOrder) {
  EXPECT_EQ(UriEncode("a b/c~d_e-f.g+h=&", false), "a%20b%2Fc~d_e-f.g%2Bh%3D%26");
  EXPECT_EQ(UriEncode("a/b c", true), "a/b%20c");
  EXPECT_EQ(CanonicalQueryString({{"list-type", "2"},
                                  {"continuation-token", "a+b/c=="},
                                  {"prefix", ""}}),
            "continuation-token=a%2Bb%2Fc%3D%3D&list-type=2&prefix=");
}

TEST(SigV4, AmzDate) {
  EXPECT_EQ(AmzDate(1369353600), "20130524T000000Z");
  EXPECT_EQ(AmzDate(0), "19700101T000000Z");
}

}  // namespace
}  // namespace shelfmark::sigv4
