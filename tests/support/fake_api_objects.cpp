// The fake API server's encodings (base64, Go's raw URL base64 of continue tokens, percent-decoding), Status
// objects and client certificates (declared in fake_api_server.h), version priority and path segments.
#include "support/fake_api_objects.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <tuple>

#include <doctest/doctest.h>
#include <openssl/evp.h>

#include "support/fake_api_server.h"

namespace karta::test {

namespace fs = std::filesystem;

bool higher_priority(const std::string& a, const std::string& b) {
  auto rank = [](const std::string& v) {
    static const std::regex pattern("^v([0-9]+)(?:(alpha|beta)([0-9]+))?$");
    std::smatch m;
    if (!std::regex_match(v, m, pattern)) return std::tuple<int, int, int>(0, 0, 0);
    int stage = !m[2].matched ? 3 : m[2] == "beta" ? 2 : 1;
    return std::tuple<int, int, int>(stage, std::stoi(m[1]), m[3].matched ? std::stoi(m[3]) : 0);
  };
  auto ra = rank(a), rb = rank(b);
  if (ra != rb) return ra > rb;
  return a < b;
}

std::vector<std::string> path_segments(const std::string& path) {
  std::vector<std::string> segments;
  for (std::size_t start = 1; start <= path.size();) {
    std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

std::string FakeResource::api_version() const { return group.empty() ? version : group + "/" + version; }
std::string FakeResource::group_resource() const { return group.empty() ? plural : plural + "." + group; }

FakeResource crd_resource() {
  return {.group = "apiextensions.k8s.io",
          .version = "v1",
          .kind = "CustomResourceDefinition",
          .plural = "customresourcedefinitions",
          .singular = "customresourcedefinition",
          .short_names = {"crd", "crds"},
          .namespaced = false};
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE_MESSAGE(in, file.string() << " cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string base64(const std::string& bytes) {
  std::string encoded(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                               reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  encoded.resize(static_cast<std::size_t>(length));
  return encoded;
}

std::string raw_url_base64(const std::string& bytes) {
  std::string encoded = base64(bytes);
  for (char& c : encoded) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
  return encoded;
}

std::string from_raw_url_base64(std::string encoded) {
  for (char& c : encoded) c = c == '-' ? '+' : c == '_' ? '/' : c;
  std::size_t padding = (4 - encoded.size() % 4) % 4;
  encoded.append(padding, '=');
  std::string decoded(encoded.size() / 4 * 3, '\0');
  int length =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                      reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  REQUIRE(length >= 0);
  decoded.resize(static_cast<std::size_t>(length) - padding);
  return decoded;
}

std::string path_unescape(const std::string& text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      decoded.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      decoded.push_back(text[i]);
    }
  }
  return decoded;
}

std::string percent_decode(const std::string& text) {
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), '+', ' ');
  return path_unescape(spaced);
}

// A Status as the API server writes it in error answers and ERROR events.
json status_object(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

// A client certificate (clientAuth) for `common_name`, signed by the CA TestCertificates made in `dir`.
ClientCertificate make_client_certificate(const fs::path& dir, const std::string& common_name) {
  return make_certificate(dir, common_name, "extendedKeyUsage=clientAuth\n");
}

ClientCertificate make_certificate(const fs::path& dir, const std::string& common_name, const std::string& extensions) {
  ClientCertificate made{dir / (common_name + ".crt"), dir / (common_name + ".key")};
  fs::path csr = dir / (common_name + ".csr");
  fs::path ext = dir / (common_name + ".ext");
  write_text(ext, extensions);
  int code = 0;
  std::string out =
      test::run_command("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + common_name +
                            " -keyout " + made.key.string() + " -out " + csr.string(),
                        &code);
  REQUIRE_MESSAGE(code == 0, out);
  out = test::run_command("openssl x509 -req -in " + csr.string() + " -CA " + (dir / "ca.crt").string() + " -CAkey " +
                              (dir / "ca.key").string() + " -CAcreateserial -days 2 -extfile " + ext.string() +
                              " -out " + made.certificate.string(),
                          &code);
  REQUIRE_MESSAGE(code == 0, out);
  return made;
}

json partial_object_metadata(const json& object) {
  return {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", object.value("metadata", json::object())}};
}

AnswerForm answer_form(const std::string& accept, const std::string& metadata_as) {
  if (accept.empty()) return AnswerForm::Full;
  auto trim = [](std::string text) {
    const char* space = " \t";
    text.erase(0, text.find_first_not_of(space));
    text.erase(text.find_last_not_of(space) + 1);
    return text;
  };
  std::size_t start = 0;
  while (start <= accept.size()) {
    std::size_t end = std::min(accept.find(',', start), accept.size());
    std::string media = accept.substr(start, end - start);
    start = end + 1;
    std::vector<std::string> parts;
    for (std::size_t from = 0; from <= media.size();) {
      std::size_t semicolon = std::min(media.find(';', from), media.size());
      parts.push_back(trim(media.substr(from, semicolon - from)));
      from = semicolon + 1;
    }
    if (parts[0] != "application/json" && parts[0] != "*/*" && parts[0] != "application/*") continue;
    std::map<std::string, std::string> parameters;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      std::size_t equals = parts[i].find('=');
      if (equals != std::string::npos) parameters[parts[i].substr(0, equals)] = parts[i].substr(equals + 1);
    }
    if (parameters.count("as") == 0) return AnswerForm::Full;
    if (parameters["as"] == metadata_as && parameters["g"] == "meta.k8s.io" && parameters["v"] == "v1") {
      return AnswerForm::Metadata;
    }
  }
  return AnswerForm::NotAcceptable;
}

}  // namespace karta::test
