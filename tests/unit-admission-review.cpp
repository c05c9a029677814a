#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "admission/admission_review.h"
#include "admission/base64.h"

namespace unit_admission_review {  // this file's names, apart from other tests' in a unity build

using karta::AdmissionDecision;
using karta::json;

namespace {

std::string decode_error(const std::string& body) {
  auto decoding = karta::decode_admission_review(body);
  CHECK_FALSE(decoding.review.has_value());
  return decoding.error;
}

}  // namespace

TEST_CASE("a well-formed review is decoded field by field") {
  auto decoding = karta::decode_admission_review(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
    "request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",
      "kind":{"group":"jobset.x-k8s.io","version":"v1alpha2","kind":"JobSet"},
      "resource":{"group":"jobset.x-k8s.io","version":"v1alpha2","resource":"jobsets"},
      "subResource":"status","name":"demo","namespace":"research","operation":"UPDATE",
      "userInfo":{"username":"alice"},"object":{"kind":"JobSet"},"oldObject":null,"dryRun":true}})");
  REQUIRE(decoding.review.has_value());
  const auto& r = decoding.review->request;
  CHECK(r.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(r.kind == karta::GroupVersionKind{"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  CHECK(r.resource == "jobsets");
  CHECK(r.sub_resource == "status");
  CHECK(r.operation == "UPDATE");
  CHECK(r.namespace_name == "research");
  CHECK(r.name == "demo");
  CHECK(r.username == "alice");
  CHECK(r.dry_run);
  REQUIRE(r.object.has_value());
  CHECK(karta::to_json(*r.object) == json{{"kind", "JobSet"}});
  CHECK_FALSE(r.old_object.has_value());
}

TEST_CASE("a request's uid and username stay valid as long as the request, copied or moved, past later reviews") {
  // They are views into the parsed document the request holds; a document's buffers are reused once it is
  // let go, so a view that outlived its document would read the next review's bytes.
  auto review = [](const std::string& uid, const std::string& user) {
    return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":")" + uid +
           R"(","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","userInfo":{"username":")" +
           user + R"("}}})";
  };
  std::optional<karta::AdmissionRequest> kept;
  {
    auto first = karta::decode_admission_review(review("11111111-aaaa-bbbb-cccc-000000000001", "system:serviceaccount:a:b"));
    REQUIRE(first.review.has_value());
    kept = first.review->request;  // a copy; `first` goes away below
  }
  karta::AdmissionRequest moved;
  {
    auto second = karta::decode_admission_review(review("22222222-aaaa-bbbb-cccc-000000000002", "kubernetes-admin"));
    REQUIRE(second.review.has_value());
    moved = std::move(second.review->request);
  }
  for (int i = 0; i < 4; ++i) {  // later reviews, parsed into whatever buffers were let go
    auto later = karta::decode_admission_review(review("33333333-aaaa-bbbb-cccc-00000000000" + std::to_string(i), "mallory"));
    REQUIRE(later.review.has_value());
    CHECK(later.review->request.uid == "33333333-aaaa-bbbb-cccc-00000000000" + std::to_string(i));
  }
  CHECK(kept->uid == "11111111-aaaa-bbbb-cccc-000000000001");
  CHECK(kept->username == "system:serviceaccount:a:b");
  CHECK(moved.uid == "22222222-aaaa-bbbb-cccc-000000000002");
  CHECK(moved.username == "kubernetes-admin");
  CHECK(moved.review_api_version == "admission.k8s.io/v1");
  CHECK(json::parse(karta::encode_admission_review(AdmissionDecision::allow(), kept->uid, kept->review_api_version)) ==
        json{{"apiVersion", "admission.k8s.io/v1"},
             {"kind", "AdmissionReview"},
             {"response", {{"allowed", true}, {"status", {{"code", 200}}}, {"uid", "11111111-aaaa-bbbb-cccc-000000000001"}}}});
}

TEST_CASE("a malformed envelope is refused with what is wrong and where") {
  const std::string head = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)";
  CHECK(decode_error("") == "empty body: expected an admission.k8s.io/v1 AdmissionReview");
  CHECK(decode_error("[1,2]") == "body must be a JSON object (an AdmissionReview), not array");
  CHECK(decode_error(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"})") ==
        "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview, got admission.k8s.io/v1beta1 AdmissionReview");
  CHECK(decode_error(R"({"kind":"AdmissionReview"})") == "apiVersion: is required");
  CHECK(decode_error(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})") == "request: is required");
  CHECK(decode_error(head + R"("text"})") == "request: must be an object, not string");
  CHECK(decode_error(head + R"({"kind":{"version":"v1","kind":"Pod"},"operation":"CREATE"}})") ==
        "request.uid: is required");
  CHECK(decode_error(head + R"({"uid":7}})") == "request.uid: must be a string, not number");
  CHECK(decode_error(head + R"({"uid":"u","operation":"CREATE"}})") == "request.kind: is required");
  CHECK(decode_error(head + R"({"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"PATCH"}})") ==
        "request.operation: \"PATCH\" is not CREATE, UPDATE, DELETE or CONNECT");
  CHECK(decode_error(head + R"({"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":"x"}})") ==
        "request.object: must be an object, not string");
  CHECK(decode_error(head + R"({"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","dryRun":"yes"}})") ==
        "request.dryRun: must be a boolean, not string");
  CHECK(decode_error(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionRev)").rfind("body is not JSON: ", 0) == 0);
}

TEST_CASE("regression: 200,000-deep nesting is refused by the parser") {
  std::string body = std::string(200000, '[') + std::string(200000, ']');
  CHECK(decode_error(body) == "body nested deeper than 1000 levels");
  // Brackets inside strings do not count.
  CHECK(karta::json_nesting_depth(R"({"a":"[[[[[[","b":[{}]})", 100) == 3);
}

TEST_CASE("responses echo the uid and carry the patch base64-encoded") {
  json patch = json::parse(R"([{"op":"add","path":"/metadata/labels","value":{"a":"b"}}])");
  json review = json::parse(karta::encode_admission_review(AdmissionDecision::patched(karta::JsonPatch::from(patch)), "u-1"));
  CHECK(review == json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
      "uid":"u-1","allowed":true,"status":{"code":200},"patchType":"JSONPatch",
      "patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImEiOiJiIn19XQ=="}})"));

  CHECK(json::parse(karta::encode_admission_review(AdmissionDecision::patched(karta::JsonPatch::from(json::array())), "u-2")) ==
        json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
            "uid":"u-2","allowed":true,"status":{"code":200}}})"));

  auto denied = AdmissionDecision::deny("label team missing");
  denied.warnings = {"w1"};
  CHECK(json::parse(karta::encode_admission_review(denied, "u-3")) ==
        json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
            "uid":"u-3","allowed":false,"status":{"code":403,"reason":"Forbidden","message":"label team missing"},
            "warnings":["w1"]}})"));
}

TEST_CASE("the review is written as nlohmann::json would write it, and never fails on bad text") {
  json patch = json::parse(R"([{"op":"add","path":"/metadata/labels/a~1b","value":{"q\"uote":"tab\there","n":[1,2.5,true,null]}}])");
  auto decision = AdmissionDecision::patched(karta::JsonPatch::from(patch));
  decision.warnings = {"w\u00e9 \"quoted\"", "line\nbreak"};
  std::string written = karta::encode_admission_review(decision, "u\\1");
  json expected = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                   {"response", {{"uid", "u\\1"}, {"allowed", true}, {"status", {{"code", 200}}},
                                 {"patchType", "JSONPatch"}, {"patch", karta::base64_encode(patch.dump())},
                                 {"warnings", decision.warnings}}}};
  CHECK(written == expected.dump());  // byte for byte

  // A warning cut inside a character and a control character: replaced and escaped, not a failure.
  auto denied = AdmissionDecision::deny(std::string("bad \xc3 \x01 end"));
  denied.warnings = {std::string("cut \xe2\x82")};
  json review = json::parse(karta::encode_admission_review(denied, "u-4"));
  CHECK(review["response"]["status"]["message"] == "bad \xef\xbf\xbd \u0001 end");
  CHECK(review["response"]["warnings"] == json::array({"cut \xef\xbf\xbd\xef\xbf\xbd"}));
}

TEST_CASE("base64 matches RFC 4648's test vectors") {
  CHECK(karta::base64_encode("") == "");
  CHECK(karta::base64_encode("f") == "Zg==");
  CHECK(karta::base64_encode("fo") == "Zm8=");
  CHECK(karta::base64_encode("foo") == "Zm9v");
  CHECK(karta::base64_encode("foob") == "Zm9vYg==");
  CHECK(karta::base64_encode("fooba") == "Zm9vYmE=");
  CHECK(karta::base64_encode("foobar") == "Zm9vYmFy");
}

TEST_CASE("base64 agrees with a bit-by-bit encoder at every length, whatever the bytes, with every kernel") {
  // The widest kernel takes forty-eight bytes at a time while sixty-four can be read (AVX-512 VBMI, where
  // the processor has it), then twelve while sixteen can be (SSSE3), then six while eight can be, then
  // three, then the padded tail: every length up to 300 meets each of those steps and each way they hand
  // over, and every byte value is met at each position of a three-byte group.
  auto reference = [](const std::string& bytes) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    unsigned buffer = 0;
    int bits = 0;
    for (unsigned char c : bytes) {
      buffer = (buffer << 8) | c;
      bits += 8;
      while (bits >= 6) out += alphabet[(buffer >> (bits -= 6)) & 63];
    }
    if (bits > 0) out += alphabet[(buffer << (6 - bits)) & 63];
    while (out.size() % 4 != 0) out += '=';
    return out;
  };
  const auto& kernels = karta::available_base64_kernels();
  REQUIRE(!kernels.empty());
  CHECK(kernels.front() == karta::Base64Kernel::Scalar);
  std::string all_bytes;
  for (int round = 0; round < 3; ++round) {
    for (int c = 0; c < 256; ++c) all_bytes += static_cast<char>((c * 97 + 13 + round * 256 / 3) % 256);
  }
  std::size_t compared = 0;
  for (karta::Base64Kernel kernel : kernels) {
    CAPTURE(karta::kernel_name(kernel));
    for (std::size_t length = 0; length <= 300; ++length) {
      CAPTURE(length);
      std::string bytes = all_bytes.substr(length % 3, length);
      std::string out = "prefix:";  // appended after what is there
      karta::append_base64(out, bytes, kernel);
      CHECK(out == "prefix:" + reference(bytes));
      ++compared;
    }
    // Every byte value at each of a group's three positions, past the widest kernel's step.
    for (std::size_t shift = 0; shift < 3; ++shift) {
      std::string bytes = all_bytes.substr(shift);
      std::string out;
      karta::append_base64(out, bytes, kernel);
      CHECK(out == reference(bytes));
    }
  }
  CHECK(compared == 301 * kernels.size());
  MESSAGE("base64 kernels compared: " << kernels.size() << ", the widest " << karta::kernel_name(kernels.back()));
  CHECK(karta::base64_encode(std::string(40, '\xff')) == std::string(52, '/') + "/w==");
  CHECK(karta::base64_encode(std::string(12, '\xff')) == "////////////////");
  CHECK(karta::base64_encode(std::string(12, '\0')) == "AAAAAAAAAAAAAAAA");
  CHECK(karta::base64_encode(std::string(96, '\0')) == std::string(128, 'A'));
  CHECK(karta::base64_encode(std::string(96, '\xff')) == std::string(128, '/'));
}

}  // namespace unit_admission_review
