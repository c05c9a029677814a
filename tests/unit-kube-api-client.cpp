// The Kubernetes API client against the local API server: headers, reconnects, ApiError, TLS name, rotated tokens.

#include <doctest/doctest.h>

#include <cstdlib>

#include "kube/api_client.h"
#include "kube/kube_connection.h"
#include "support/fake_api_server.h"
#include "support/kube_fixtures.h"
#include "support/test_support.h"

namespace unit_kube_api_client {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace kube = karta::kube;
namespace test = karta::test;

using test::FakeApiServer;
using test::read_text;
using test::write_text;
using namespace test::kube_fixtures;

// ---------------------------------------------------------------------------------------------------
// ApiClient

TEST_CASE("get sends the bearer token and Accept: application/json and returns the JSON answer") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a"), karta_object("b")});
  kube::ApiClient client(server.connection());
  json list = client.get(std::string(kKartas) + "?limit=500");
  CHECK(list["kind"] == "KartaList");
  CHECK(list["metadata"] == json{{"resourceVersion", "100"}});
  CHECK(names(list["items"].get<std::vector<json>>()) == std::vector<std::string>{"a", "b"});
  // The second request reuses the connection; both carry the same headers.
  client.get(std::string(kKartas) + "?limit=1");
  auto received = server.received();
  REQUIRE(received.size() == 2);
  for (const auto& request : received) {
    CHECK(request.authorization == "Bearer sesame");
    CHECK(request.accept == "application/json");
  }
  CHECK(received[1].target == std::string(kKartas) + "?limit=1");
}

TEST_CASE("when the server has closed the kept-alive connection, get asks again on a new one") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")}, {.close_after_answer = true});
  kube::ApiClient client(server.connection());
  CHECK(client.get(kKartas)["kind"] == "KartaList");
  REQUIRE(eventually([&] { return server.received().size() == 1; }));
  CHECK(client.get(kKartas)["kind"] == "KartaList");
  CHECK(server.received().size() == 2);
  CHECK(server.connections() == 2);
}

TEST_CASE("get with a deadline gives up there, closes the connection, and the next get opens another") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  kube::ApiClient client(server.connection());
  CHECK(client.get(kKartas)["kind"] == "KartaList");  // a kept-alive connection
  server.delay_gets(kKartas, std::chrono::milliseconds(2'000));
  const auto started = std::chrono::steady_clock::now();
  try {
    client.get(kKartas, started + std::chrono::milliseconds(300));
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(std::string(e.what()) == "GET " + client.url(kKartas) + ": no answer before the caller's deadline");
    CHECK(e.status() == 0);
  }
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took >= std::chrono::milliseconds(300));
  CHECK(took < std::chrono::milliseconds(800));
  // A deadline already past sends nothing.
  CHECK_THROWS_AS(client.get(kKartas, std::chrono::steady_clock::now()), kube::ApiError);
  CHECK(server.received().size() == 2);
  server.delay_gets(kKartas, std::chrono::milliseconds(0));
  CHECK(client.get(kKartas)["kind"] == "KartaList");
  CHECK(server.connections() == 2);
}

TEST_CASE("a non-2xx answer throws an ApiError with the HTTP status and the Status's reason and message") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {});
  kube::ApiClient wrong(server.connection("wrong"));
  try {
    wrong.get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 401);
    CHECK(e.reason() == "Unauthorized");
    CHECK(e.message() == "Unauthorized");
    CHECK_FALSE(e.cancelled());
    CHECK(std::string(e.what()) ==
          "GET https://127.0.0.1:" + std::to_string(server.port()) + kKartas + " answered 401: Unauthorized");
  }
  kube::ApiClient client(server.connection());
  try {
    client.get("/apis/run.ai/v1alpha1/nothings");
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 404);
    CHECK(e.reason() == "NotFound");
    CHECK(e.message() == "the server could not find the requested resource");
  }
}

TEST_CASE("the server's certificate must carry the name checked: a wrong tls-server-name fails the handshake") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {});
  kube::KubeConnection connection = server.connection();
  connection.tls_server_name = "kubernetes.default.svc";
  kube::ApiClient client(connection);
  try {
    client.get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 0);
    CHECK(e.message().rfind("TLS handshake with 127.0.0.1:" + std::to_string(server.port()) + " failed: ", 0) == 0);
    CHECK(e.message() == "TLS handshake with 127.0.0.1:" + std::to_string(server.port()) +
                             " failed: certificate verify failed (the certificate has no subjectAltName for "
                             "\"kubernetes.default.svc\": it has DNS:localhost, IP:127.0.0.1)");
  }
  // "localhost" is in the certificate's subjectAltNames, as is 127.0.0.1.
  connection.tls_server_name = "localhost";
  CHECK(kube::ApiClient(connection).get(kKartas)["kind"] == "KartaList");
  CHECK(server.received().size() == 1);
}

TEST_CASE("a certificate that names the host only in its Common Name is refused, as Go and kubectl refuse it") {
  // Two servers with certificates from the same CA, both with the Common Name localhost: the first also
  // has the subjectAltNames DNS:localhost and IP:127.0.0.1, the second none.
  test::TempDir dir;
  FakeApiServer with_names(dir.path, {});
  FakeApiServer common_name_only(dir.path, {}, {.common_name_only = true});
  CHECK(read_text(with_names.certificates().ca) == read_text(common_name_only.certificates().ca));
  kube::KubeConnection good = with_names.connection();
  good.tls_server_name = "localhost";
  CHECK(kube::ApiClient(good).get(kKartas)["kind"] == "KartaList");

  kube::KubeConnection bad = common_name_only.connection();
  bad.tls_server_name = "localhost";
  try {
    kube::ApiClient(bad).get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 0);
    CHECK(e.message() == "TLS handshake with 127.0.0.1:" + std::to_string(common_name_only.port()) +
                             " failed: certificate verify failed (the certificate has no subjectAltName for "
                             "\"localhost\": it has none, only the Common Name \"localhost\", which is never "
                             "checked (Go and kubectl require a subjectAltName))");
  }
  // By IP address too: only an IP subjectAltName can match one.
  try {
    kube::ApiClient(common_name_only.connection()).get(kKartas);
    FAIL("no ApiError");
  } catch (const kube::ApiError& e) {
    CHECK(e.message().ends_with("(the certificate has no subjectAltName for \"127.0.0.1\": it has none, only the "
                                "Common Name \"localhost\", which is never checked (Go and kubectl require a "
                                "subjectAltName))"));
  }
  CHECK(common_name_only.received().empty());
}

TEST_CASE("an in-cluster connection reads its rotated token file again for the next request") {
  test::TempDir dir;
  FakeApiServer server(dir.path, {karta_object("a")});
  kube::ServiceAccountFiles files{dir.path / "sa/token", dir.path / "sa/ca.crt", dir.path / "sa/namespace"};
  write_text(files.token, "sesame");
  write_text(files.ca, read_text(server.certificates().ca));
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", std::to_string(server.port()).c_str(), 1);
  kube::KubeConnection connection = kube::in_cluster_connection(files);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  kube::ApiClient client(connection);
  client.get(kKartas);
  write_text(files.token, "rotated");
  try {
    client.get(kKartas);
    FAIL("the rotated token was not sent");
  } catch (const kube::ApiError& e) {
    CHECK(e.status() == 401);
  }
  auto received = server.received();
  REQUIRE(received.size() == 2);
  CHECK(received[0].authorization == "Bearer sesame");
  CHECK(received[1].authorization == "Bearer rotated");
}

}  // namespace unit_kube_api_client
