#include "support/test_support.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <doctest/doctest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace karta::test {

namespace fs = std::filesystem;

fs::path source_dir() { return KARTA_SOURCE_DIR; }
fs::path binary_path() { return KARTA_BINARY; }

std::optional<fs::path> corpus_dir() {
  fs::path dir = std::getenv("KARTA_CORPUS_DIR") ? fs::path(std::getenv("KARTA_CORPUS_DIR")) : fs::path(KARTA_CORPUS_DIR);
  if (fs::is_directory(dir / "samples") && fs::is_directory(dir / "crds")) return dir;
  // The corpus is part of the repository: missing, it is a broken checkout (or a wrong KARTA_CORPUS_DIR),
  // never a reason to skip. FAIL throws, so callers never see the empty value.
  FAIL("the corpus is missing at " << dir.string() << " (it is kept in the repository at tests/corpus/)");
  return std::nullopt;
}

std::vector<json> sample_objects() {
  std::vector<json> objects;
  auto corpus = corpus_dir();
  if (!corpus) return objects;
  for (const auto& file : fs::directory_iterator(*corpus / "samples")) {
    for (auto& d : documents(file.path())) objects.push_back(std::move(d.value));
  }
  objects.push_back(document(source_dir() / "examples/jobset-demo.yaml"));
  return objects;
}

json yaml(const std::string& text) {
  auto docs = parse_documents(text, "test");
  REQUIRE(docs.size() == 1);
  return docs[0].value;
}

std::vector<SourceDocument> documents(const fs::path& file) { return read_documents(file); }

json document(const fs::path& file, std::size_t index) {
  auto docs = read_documents(file);
  REQUIRE(index < docs.size());
  return docs[index].value;
}

const Catalog& builtin_catalog() {
  static const Catalog catalog = load_catalog(CatalogSources{});
  return catalog;
}

Policy policy_from_yaml(const std::string& text) { return parse_policy(yaml(text), "test-policy"); }

TempDir::TempDir() {
  std::random_device random;
  path = fs::temp_directory_path() / ("karta-test-" + std::to_string(random()) + std::to_string(random()));
  fs::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string run_command(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = pclose(pipe);
  if (exit_code != nullptr) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

std::shared_ptr<const CompiledDefinition> compile_definition(const std::string& karta_yaml) {
  auto definitions = parse_definitions(karta_yaml, "test.yaml");
  REQUIRE(definitions.size() == 1);
  return CompiledDefinition::compile(definitions[0], 1);
}

std::string made_up_karta(const std::string& name, const std::string& kind) {
  return "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: " + name + "}\nspec:\n  structureDefinition:\n"
         "    rootComponent:\n      name: " + name + "\n      kind: {group: example.com, version: v1, kind: " + kind + "}\n";
}

json kubectl_apply(const json& object, const json& patch) {
  TempDir dir;
  {
    std::ofstream(dir.path / "object.json") << object.dump();
    std::ofstream(dir.path / "patch.json") << patch.dump();
  }
  int code = 0;
  std::string out = run_command("kubectl patch --local --type=json --patch-file=" + (dir.path / "patch.json").string() +
                                    " -f " + (dir.path / "object.json").string() + " -o json",
                                &code);
  REQUIRE_MESSAGE(code == 0, "kubectl refused the patch " << patch.dump() << ": " << out);
  return json::parse(out);
}

json admission_review(const json& object, const std::string& operation, const std::string& uid) {
  std::string api_version = object.value("apiVersion", "");
  auto gvk = GroupVersionKind::from_api_version(api_version, object.value("kind", ""));
  json metadata = object.value("metadata", json::object());
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", gvk.group}, {"version", gvk.version}, {"kind", gvk.kind}}},
            {"resource", {{"group", gvk.group}, {"version", gvk.version}, {"resource", "things"}}},
            {"requestKind", {{"group", gvk.group}, {"version", gvk.version}, {"kind", gvk.kind}}},
            {"name", metadata.value("name", "")},
            {"namespace", metadata.value("namespace", "default")},
            {"operation", operation},
            {"userInfo", {{"username", "alice"}, {"groups", {"system:authenticated"}}}},
            {"object", object},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

json decoded_patch(const json& review) {
  const json& response = review.at("response");
  if (!response.contains("patch")) return nullptr;
  std::string encoded = response["patch"].get<std::string>();
  std::string decoded(encoded.size(), '\0');
  int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                               reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  REQUIRE(length >= 0);
  decoded.resize(static_cast<std::size_t>(length));
  while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // EVP_DecodeBlock pads
  return json::parse(decoded);
}

TestCertificates::TestCertificates(const fs::path& dir, const std::string& name) {
  ca = dir / "ca.crt";
  certificate = dir / (name + ".crt");
  key = dir / (name + ".key");
  fs::path ca_key = dir / "ca.key";
  int code = 0;
  std::string out;
  if (!fs::exists(ca)) {
    out = run_command("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=test-ca "
                      "-keyout " + ca_key.string() + " -out " + ca.string(), &code);
    REQUIRE_MESSAGE(code == 0, out);
  }
  fs::path csr = dir / (name + ".csr");
  fs::path ext = dir / (name + ".ext");
  std::ofstream(ext) << "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
  out = run_command("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost -keyout " +
                    key.string() + " -out " + csr.string(), &code);
  REQUIRE_MESSAGE(code == 0, out);
  out = run_command("openssl x509 -req -in " + csr.string() + " -CA " + ca.string() + " -CAkey " + ca_key.string() +
                    " -CAcreateserial -days 2 -extfile " + ext.string() + " -out " + certificate.string(), &code);
  REQUIRE_MESSAGE(code == 0, out);
}

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

struct HttpsClient::Impl {
  net::io_context io;
  net::ssl::context tls{net::ssl::context::tls_client};
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream;
  beast::flat_buffer buffer;
};

HttpsClient::HttpsClient(unsigned short port, const fs::path& ca, int tls_version) : impl_(std::make_unique<Impl>()) {
  impl_->tls.load_verify_file(ca.string());
  impl_->tls.set_verify_mode(net::ssl::verify_peer);
  if (tls_version != 0) {
    SSL_CTX_set_min_proto_version(impl_->tls.native_handle(), tls_version);
    SSL_CTX_set_max_proto_version(impl_->tls.native_handle(), tls_version);
    // OpenSSL's default security level forbids TLS 1.0/1.1 in the client too; lower it so the test
    // really offers them and the server is the one saying no.
    SSL_CTX_set_security_level(impl_->tls.native_handle(), 0);
  }
  impl_->stream = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(impl_->io, impl_->tls);
  SSL_set_tlsext_host_name(impl_->stream->native_handle(), "localhost");
  impl_->stream->set_verify_callback(net::ssl::host_name_verification("localhost"));
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(10));
  beast::get_lowest_layer(*impl_->stream).connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  impl_->stream->handshake(net::ssl::stream_base::client);
}

HttpsClient::~HttpsClient() {
  beast::error_code ec;
  beast::get_lowest_layer(*impl_->stream).socket().close(ec);
}

bool HttpsClient::connected() const { return beast::get_lowest_layer(*impl_->stream).socket().is_open(); }

HttpReply HttpsClient::request(const std::string& method, const std::string& target, const std::string& body,
                               const std::string& content_type) {
  http::request<http::string_body> request{http::string_to_verb(method), target, 11};
  request.set(http::field::host, "localhost");
  if (!body.empty()) request.set(http::field::content_type, content_type);
  request.body() = body;
  request.prepare_payload();
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  http::write(*impl_->stream, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(*impl_->stream, impl_->buffer, parser);
  auto response = parser.release();
  return {static_cast<int>(response.result_int()), response.body(), std::string(response[http::field::connection])};
}

void HttpsClient::send_partial(const std::string& bytes) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  net::write(*impl_->stream, net::buffer(bytes));
}

HttpReply HttpsClient::send_raw(const std::string& bytes, bool head_request) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  net::write(*impl_->stream, net::buffer(bytes));
  return receive(head_request);
}

HttpReply HttpsClient::receive(bool head_request) {
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(30));
  http::response_parser<http::string_body> parser;
  parser.skip(head_request);  // a response to HEAD has a Content-Length but no body
  http::read(*impl_->stream, impl_->buffer, parser);
  auto response = parser.release();
  return {static_cast<int>(response.result_int()), response.body(), std::string(response[http::field::connection])};
}

std::string HttpsClient::receive_bytes(std::size_t count, std::chrono::milliseconds limit) {
  beast::get_lowest_layer(*impl_->stream).expires_after(limit);
  // Bytes a previous response's read took beyond its message come first.
  std::size_t buffered = std::min(count, impl_->buffer.size());
  std::string bytes(static_cast<const char*>(impl_->buffer.data().data()), buffered);
  impl_->buffer.consume(buffered);
  bytes.resize(count);
  if (buffered < count) net::read(*impl_->stream, net::buffer(bytes.data() + buffered, count - buffered));
  return bytes;
}

std::string HttpsClient::peer_certificate_serial() const {
  X509* peer = SSL_get1_peer_certificate(impl_->stream->native_handle());
  if (peer == nullptr) return "";
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get_serialNumber(peer), nullptr);
  char* hex = BN_bn2hex(serial);
  std::string result = hex;
  OPENSSL_free(hex);
  BN_free(serial);
  X509_free(peer);
  return result;
}

}  // namespace karta::test
