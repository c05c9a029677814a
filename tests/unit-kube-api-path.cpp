// Request targets: every path segment escaped as Go's url.PathEscape escapes it (client-go's), and
// ApiClient refusing, before it sends a byte, a target that could end the request line, add a header or
// name another path.

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "kube/api_client.h"
#include "kube/api_path.h"
#include "support/fake_api_server.h"
#include "support/test_support.h"

namespace unit_kube_api_path {  // this file's names, apart from other tests' in a unity build

namespace kube = karta::kube;
namespace test = karta::test;

TEST_CASE("path_escape escapes a segment exactly as Go's url.PathEscape") {
  // Expected values as net/url's shouldEscape(c, encodePathSegment) decides, byte by byte.
  const std::vector<std::pair<std::string, std::string>> table = {
      {"demo-leader-0", "demo-leader-0"},
      {"AZaz09-_.~", "AZaz09-_.~"},           // unreserved
      {"$&+:=@", "$&+:=@"},                   // reserved, but allowed in a segment
      {"/", "%2F"}, {";", "%3B"}, {",", "%2C"}, {"?", "%3F"},  // reserved, and meaningful in a path
      {"#", "%23"}, {"%", "%25"}, {"%2F", "%252F"},
      {"a b", "a%20b"},
      {"!'()*", "%21%27%28%29%2A"},
      {"[]<>\"\\^`{|}", "%5B%5D%3C%3E%22%5C%5E%60%7B%7C%7D"},
      {"\r\n\t", "%0D%0A%09"}, {std::string(1, '\0'), "%00"}, {"\x7f", "%7F"},
      {"é", "%C3%A9"}, {"日本", "%E6%97%A5%E6%9C%AC"}, {"\xff", "%FF"},
      {".", "."}, {"..", ".."},  // not escaped: target_fault refuses them
      {"", ""},
  };
  for (const auto& [segment, escaped] : table) {
    CAPTURE(segment);
    CHECK(kube::path_escape(segment) == escaped);
  }
}

TEST_CASE("query_escape keeps only the unreserved characters, as a continue token or a selector needs") {
  CHECK(kube::query_escape("eyJ2+/=") == "eyJ2%2B%2F%3D");
  CHECK(kube::query_escape("app in (a, b),!x") == "app%20in%20%28a%2C%20b%29%2C%21x");
  CHECK(kube::query_escape("AZaz09-._~$&:@") == "AZaz09-._~%24%26%3A%40");
}

TEST_CASE("resource_path escapes every segment: group, version, namespace, resource and name") {
  CHECK(kube::resource_path("", "v1", "pods") == "/api/v1/pods");
  CHECK(kube::resource_path("", "v1", "pods", "research") == "/api/v1/namespaces/research/pods");
  CHECK(kube::resource_path("batch", "v1", "jobs", "research", "a b") == "/apis/batch/v1/namespaces/research/jobs/a%20b");
  CHECK(kube::resource_path("run.ai", "v1alpha1", "kartas", "", "x/../y") == "/apis/run.ai/v1alpha1/kartas/x%2F..%2Fy");
  CHECK(kube::resource_path("", "v1", "configmaps", "ns?watch=1", "n#f") ==
        "/api/v1/namespaces/ns%3Fwatch=1/configmaps/n%23f");
  CHECK(kube::resource_path("", "v1", "configmaps", "kube-system", "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /api") ==
        "/api/v1/namespaces/kube-system/configmaps/x%20HTTP%2F1.1%0D%0AHost:%20a%0D%0A%0D%0ADELETE%20%2Fapi");
  CHECK(kube::group_version_path("metrics.k8s.io", "v1beta1") == "/apis/metrics.k8s.io/v1beta1");
  CHECK(kube::group_version_path("", "v1") == "/api/v1");
}

TEST_CASE("target_fault says why a target must not be sent, and nothing for a built one") {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"/api/v1/namespaces/research/pods?limit=500&continue=eyJ2Ijo", ""},
      {kube::resource_path("", "v1", "pods", "research", "a b?#..\r\n"), ""},
      {"/api/v1/namespaces/research/pods/x\r\nHost: a", "it holds a control character"},
      {"/api/v1/pods/x\x7f", "it holds a control character"},
      {std::string("/api/v1/pods/x\0y", 15), "it holds a control character"},
      {"/api/v1/pods/a b", "it holds a space"},
      {"/api/v1/pods/a#b", "it holds '#', which would start a fragment"},
      {"/api/v1/pods/a?b?limit=1", "it holds a second '?': a name went in unescaped"},
      {"/api/v1/namespaces/research/pods/..", "it has a \"..\" segment, which names another path"},
      {"/api/v1/namespaces/./pods", "it has a \".\" segment, which names another path"},
  };
  for (const auto& [target, fault] : table) {
    CAPTURE(target);
    CHECK(kube::target_fault(target) == fault);
  }
}

TEST_CASE("printable shows control characters, '\\' and bytes from 0x80 escaped, the rest as it is") {
  CHECK(kube::printable("x HTTP/1.1\r\nHost: a\t\x1b[2J\x07\\\x7f\xc2\x9b \"ok\"") ==
        "x HTTP/1.1\\r\\nHost: a\\t\\x1B[2J\\x07\\\\\\x7F\\xC2\\x9B \"ok\"");
}

TEST_CASE("ApiClient refuses a target with CR/LF before sending anything, naming it escaped") {
  test::TempDir dir;
  test::FakeApiServer server(dir.path, {});
  kube::ApiClient client(server.connection());
  const std::string smuggling = "/api/v1/namespaces/research/pods/x HTTP/1.1\r\nHost: a\r\n\r\n"
                                "DELETE /api/v1/namespaces/kube-system/configmaps/victim";
  const std::string base = "https://127.0.0.1:" + std::to_string(server.port());
  auto refusal = [&](const auto& send) -> std::string {
    try {
      send();
    } catch (const kube::ApiError& e) {
      CHECK(e.status() == 0);
      return e.what();
    }
    return "sent";
  };
  const std::string expected = "GET " + base +
                               "/api/v1/namespaces/research/pods/x HTTP/1.1\\r\\nHost: a\\r\\n\\r\\nDELETE "
                               "/api/v1/namespaces/kube-system/configmaps/victim: refused before sending: it holds a "
                               "control character";
  CHECK(refusal([&] { client.get(smuggling); }) == expected);
  CHECK(refusal([&] { client.stream_lines(smuggling, std::chrono::seconds(5), [](std::string_view) {}); }) == expected);
  CHECK(refusal([&] { client.get("/api/v1/namespaces/research/pods/a b"); }) ==
        "GET " + base + "/api/v1/namespaces/research/pods/a b: refused before sending: it holds a space");
  CHECK(refusal([&] { client.get("/api/v1/namespaces/research/pods/.."); }) ==
        "GET " + base + "/api/v1/namespaces/research/pods/..: refused before sending: it has a \"..\" segment, which names another path");
  // Nothing reached the server, not even a connection; an escaped name is sent and answered.
  CHECK(server.request_lines().empty());
  CHECK(server.connections() == 0);
  CHECK_THROWS_AS(client.get(kube::resource_path("", "v1", "pods", "research", "a b")), kube::ApiError);
  CHECK(server.request_lines() == std::vector<std::string>{"GET /api/v1/namespaces/research/pods/a%20b HTTP/1.1"});
}

}  // namespace unit_kube_api_path
