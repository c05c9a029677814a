// Longer than 500 lines because it reads every field of a kubeconfig as client-go reads it, each fault
// named by file and field: the files merged, the cluster (server, TLS, proxy), the user (token, client
// certificate, exec plugin) and the context share one reader (KubeconfigReader). The values it decodes
// (base64, PEM, the server URL) are read in kube/kubeconfig_values.cpp.
#include "kube/kube_connection.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>
#include <vector>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "kube/go_strings.h"
#include "kube/kubeconfig_values.h"
#include "kube/server_name_check.h"

namespace karta::kube {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(buffer).str();
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : separator) + part;
  return text;
}


// One kubeconfig, read into yaml-cpp nodes, with every fault reported as "file: field: problem".
class KubeconfigReader {
 public:
  explicit KubeconfigReader(fs::path file) : file_(std::move(file)) {
    try {
      root_ = YAML::LoadFile(file_.string());
    } catch (const YAML::BadFile&) {
      throw KubeConfigError(file_.string() + ": cannot be read");
    } catch (const YAML::Exception& e) {
      throw KubeConfigError(file_.string() + ": not valid YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                            e.msg);
    }
    if (root_.IsNull()) root_ = YAML::Node(YAML::NodeType::Map);  // an empty file is an empty kubeconfig
    if (!root_.IsMap()) throw KubeConfigError(file_.string() + ": not a kubeconfig (the document is not a map)");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw KubeConfigError(file_.string() + ": " + field + ": " + problem);
  }

  std::string string_field(const YAML::Node& parent, const std::string& key, const std::string& field) const {
    YAML::Node node = parent[key];
    if (!node || node.IsNull()) return "";
    if (!node.IsScalar()) fail(field, "must be a string");
    return node.Scalar();
  }

  bool bool_field(const YAML::Node& parent, const std::string& key, const std::string& field) const {
    std::string text = string_field(parent, key, field);
    if (text.empty() || text == "false") return false;
    if (text == "true") return true;
    fail(field, "must be true or false, not \"" + text + "\"");
  }

  // The `inner` map of the entry named `name` in the list `list` (clusters, users, contexts), if this
  // file has one. Every entry's name is appended to `names`, for the message when no file has it.
  std::optional<YAML::Node> find_entry(const std::string& list, const std::string& name, const std::string& inner,
                                       std::vector<std::string>& names) const {
    YAML::Node entries = root_[list];
    if (!entries || entries.IsNull()) return std::nullopt;
    if (!entries.IsSequence()) fail(list, "must be a list");
    for (const YAML::Node& candidate : entries) {
      std::string candidate_name = candidate.IsMap() ? string_field(candidate, "name", list + "[].name") : "";
      if (candidate_name == name) {
        YAML::Node value = candidate[inner];
        if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!value.IsMap()) fail(list + "[" + name + "]." + inner, "must be a map");
        return value;
      }
      names.push_back(candidate_name);
    }
    return std::nullopt;
  }

  fs::path resolve(const std::string& path) const {
    fs::path file_path(path);
    if (file_path.is_absolute()) return file_path;
    return file_.parent_path() / file_path;  // relative to the kubeconfig, as kubectl resolves them
  }

  std::string file_contents(const std::string& path, const std::string& field) const {
    fs::path resolved = resolve(path);
    auto contents = read_file(resolved);
    if (!contents) fail(field, resolved.string() + " cannot be read");
    return *contents;
  }

  // A PEM value given either inline as base64 (`key`-data) or as a file (`key`), never both.
  std::string pem_field(const YAML::Node& parent, const std::string& key, const std::string& field) const {
    std::string data = string_field(parent, key + "-data", field + "-data");
    std::string path = string_field(parent, key, field);
    if (!data.empty() && !path.empty()) fail(field, "both " + key + " and " + key + "-data are set; keep one");
    if (!data.empty()) {
      auto decoded = decode_base64(data);
      if (!decoded) fail(field + "-data", "not valid base64");
      return *decoded;
    }
    if (!path.empty()) return file_contents(path, field);
    return "";
  }

  const YAML::Node& root() const { return root_; }
  const fs::path& file() const { return file_; }

 private:
  fs::path file_;
  YAML::Node root_;
};

// The kubeconfig files that exist, merged as client-go's ClientConfigLoadingRules.Load merges them: for
// each named cluster, user and context the first file that has one wins, whole (entries of the same
// name in later files are ignored, even fields the first lacks); the first file that sets
// current-context wins. Each entry's relative paths stay relative to its own file.
class MergedKubeconfig {
 public:
  explicit MergedKubeconfig(const KubeconfigFiles& files) {
    std::vector<std::string> missing;
    for (const fs::path& file : files.files) {
      if (file.empty()) continue;
      std::error_code ec;
      if (!files.explicit_file && !fs::exists(file, ec)) {  // an explicit file must be there: read it, and fail
        missing.push_back(file.string());
        continue;
      }
      readers_.emplace_back(file);
    }
    if (readers_.empty()) {
      if (missing.empty()) throw NoKubeconfigError("no kubeconfig: " + files.origin + " names no file");
      if (missing.size() == 1) {
        throw NoKubeconfigError("no kubeconfig: " + missing[0] + " (from " + files.origin + ") does not exist");
      }
      throw NoKubeconfigError("no kubeconfig: none of the files " + files.origin + " names exists (" +
                              joined(missing, ", ") + ")");
    }
    std::vector<std::string> read;
    for (const KubeconfigReader& reader : readers_) read.push_back(reader.file().string());
    names_ = joined(read, ":");
  }

  // "a" or "a:b": the files read.
  const std::string& names() const { return names_; }

  // current-context and the file it came from; "" and nullptr when no file sets it.
  std::pair<std::string, const KubeconfigReader*> current_context() const {
    for (const KubeconfigReader& reader : readers_) {
      std::string context = reader.string_field(reader.root(), "current-context", "current-context");
      if (!context.empty()) return {context, &reader};
    }
    return {"", nullptr};
  }

  // The `inner` map of the first entry named `name` in `list`, and its file. The entry missing from
  // every file is reported as a fault of `referrer`'s field `referenced_by` (of all files when nullptr).
  std::pair<YAML::Node, const KubeconfigReader*> entry(const std::string& list, const std::string& name,
                                                       const std::string& inner, const KubeconfigReader* referrer,
                                                       const std::string& referenced_by) const {
    std::vector<std::string> known;
    for (const KubeconfigReader& reader : readers_) {
      std::vector<std::string> names;
      if (auto found = reader.find_entry(list, name, inner, names)) return {*found, &reader};
      for (auto& known_name : names) {
        if (std::find(known.begin(), known.end(), known_name) == known.end()) known.push_back(std::move(known_name));
      }
    }
    fail(referrer, referenced_by,
         "no " + inner + " named \"" + name + "\" in " + list + " (" +
             (known.empty() ? std::string("it is empty") : "it has " + joined(known, ", ")) + ")");
  }

  [[noreturn]] void fail(const KubeconfigReader* file, const std::string& field, const std::string& problem) const {
    if (file != nullptr) file->fail(field, problem);
    throw KubeConfigError(names_ + ": " + field + ": " + problem);
  }

 private:
  std::vector<KubeconfigReader> readers_;
  std::string names_;
};


std::optional<ProxyServer> environment_proxy(const std::string& host, unsigned short port) {
  try {
    return proxy_from_environment(host, port);
  } catch (const std::invalid_argument& e) {
    throw KubeConfigError(std::string("$HTTPS_PROXY: ") + e.what());
  }
}

// A YAML value as JSON, for the exec extension's `config` (scalars keep YAML's plain types).
nlohmann::ordered_json yaml_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& entry : node) object[entry.first.as<std::string>()] = yaml_json(entry.second);
    return object;
  }
  if (node.IsSequence()) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (const auto& entry : node) array.push_back(yaml_json(entry));
    return array;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& text = node.Scalar();
  if (node.Tag() != "!") {
    if (text == "null" || text == "~") return nullptr;
    if (text == "true" || text == "false") return text == "true";
    nlohmann::ordered_json number = nlohmann::ordered_json::parse(text, nullptr, false);
    if (number.is_number()) return number;
  }
  return text;
}

// users[].user.exec as client-go's ExecConfig reads it. The cluster goes into KUBERNETES_EXEC_INFO
// under provideClusterInfo, as client-go's Cluster (field order and names included).
ExecConfig exec_config(const KubeconfigReader& file, const YAML::Node& exec, const std::string& field,
                       const YAML::Node& cluster, const std::string& server, const KubeConnection& connection) {
  if (!exec.IsMap()) file.fail(field, "must be a map");
  ExecConfig config;
  config.field = file.file().string() + ": " + field;
  config.api_version = file.string_field(exec, "apiVersion", field + ".apiVersion");
  if (config.api_version != "client.authentication.k8s.io/v1" &&
      config.api_version != "client.authentication.k8s.io/v1beta1") {
    file.fail(field + ".apiVersion",
              config.api_version.empty()
                  ? std::string("not set; client.authentication.k8s.io/v1 or v1beta1")
                  : "\"" + config.api_version + "\" is not client.authentication.k8s.io/v1 or v1beta1");
  }
  config.command = file.string_field(exec, "command", field + ".command");
  if (config.command.empty()) file.fail(field + ".command", "not set");
  // client-go resolves a command with a path separator against the kubeconfig's directory.
  if (config.command.find('/') != std::string::npos) config.command = file.resolve(config.command).lexically_normal().string();
  if (YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) file.fail(field + ".args", "must be a list of strings");
    for (const auto& arg : args) {
      if (!arg.IsScalar()) file.fail(field + ".args", "must be a list of strings");
      config.args.push_back(arg.Scalar());
    }
  }
  if (YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) file.fail(field + ".env", "must be a list of {name, value}");
    for (const auto& variable : env) {
      if (!variable.IsMap()) file.fail(field + ".env", "must be a list of {name, value}");
      std::string name = file.string_field(variable, "name", field + ".env[].name");
      if (name.empty()) file.fail(field + ".env[].name", "not set");
      config.env.emplace_back(name, file.string_field(variable, "value", field + ".env[" + name + "].value"));
    }
  }
  config.install_hint = file.string_field(exec, "installHint", field + ".installHint");
  std::string mode = file.string_field(exec, "interactiveMode", field + ".interactiveMode");
  if (mode.empty() && config.api_version.ends_with("/v1")) {
    file.fail(field + ".interactiveMode", "not set; client.authentication.k8s.io/v1 needs Never, IfAvailable or Always");
  }
  if (!mode.empty() && mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    file.fail(field + ".interactiveMode", "\"" + mode + "\" is not Never, IfAvailable or Always");
  }
  if (!mode.empty()) config.interactive_mode = mode;
  if (file.bool_field(exec, "provideClusterInfo", field + ".provideClusterInfo")) {
    nlohmann::ordered_json info;
    info["server"] = server;
    if (!connection.tls_server_name.empty()) info["tls-server-name"] = connection.tls_server_name;
    if (connection.insecure_skip_tls_verify) info["insecure-skip-tls-verify"] = true;
    if (connection.ca_pem) {
      std::string encoded(4 * ((connection.ca_pem->size() + 2) / 3), '\0');
      encoded.resize(static_cast<std::size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                                              reinterpret_cast<const unsigned char*>(connection.ca_pem->data()),
                                                              static_cast<int>(connection.ca_pem->size()))));
      info["certificate-authority-data"] = encoded;
    }
    if (YAML::Node proxy = cluster["proxy-url"]; proxy && proxy.IsScalar()) info["proxy-url"] = proxy.Scalar();
    if (YAML::Node extensions = cluster["extensions"]; extensions && extensions.IsSequence()) {
      for (const auto& extension : extensions) {
        if (extension.IsMap() && extension["name"] && extension["name"].IsScalar() &&
            extension["name"].Scalar() == "client.authentication.k8s.io/exec") {
          info["config"] = yaml_json(extension["extension"]);
        }
      }
    }
    config.cluster_json = info.dump();
  }
  return config;
}
}  // namespace

std::string KubeConnection::bearer_token() const {
  if (exec) return exec->current().token;
  if (!token_file.empty()) {
    // Token files end with a newline when written by hand; the kubelet's have none. Neither is part of it.
    if (auto contents = read_file(token_file)) return trim_space(*contents);
    if (token.empty()) throw KubeConfigError(source + ": token file " + token_file.string() + " cannot be read");
  }
  return token;
}

std::string KubeConnection::server_url() const {
  return "https://" + authority_host(host) + ":" + std::to_string(port) + base_path;
}

KubeconfigFiles kubeconfig_files(const std::string& flag) {
  if (!flag.empty()) return {{flag}, /*explicit_file=*/true, "--kubeconfig"};
  const char* variable = std::getenv("KUBECONFIG");
  if (variable != nullptr && *variable != '\0') {
    KubeconfigFiles files{{}, false, "$KUBECONFIG"};
    std::string list = variable;
    for (std::size_t start = 0; start <= list.size();) {
      std::size_t colon = std::min(list.find(':', start), list.size());
      fs::path file = list.substr(start, colon - start);
      // Repeats are read once, as client-go's deduplicate does; empty entries ("a::b") are skipped.
      if (!file.empty() && std::find(files.files.begin(), files.files.end(), file) == files.files.end()) {
        files.files.push_back(file);
      }
      start = colon + 1;
    }
    return files;
  }
  const char* home = std::getenv("HOME");
  return {{fs::path(home != nullptr ? home : "") / ".kube" / "config"}, false, "~/.kube/config"};
}

KubeConnection load_kubeconfig(const std::filesystem::path& file, std::string context) {
  return load_kubeconfig(KubeconfigFiles{{file}, /*explicit_file=*/true, "--kubeconfig"}, std::move(context));
}

KubeConnection load_kubeconfig(const KubeconfigFiles& files, std::string context) {
  MergedKubeconfig merged(files);
  std::string context_field = "context";
  const KubeconfigReader* context_referrer = nullptr;
  if (context.empty()) {
    std::tie(context, context_referrer) = merged.current_context();
    context_field = "current-context";
    if (context.empty()) merged.fail(nullptr, "current-context", "not set, and no context was named");
  }
  auto [context_node, context_file] = merged.entry("contexts", context, "context", context_referrer, context_field);
  const std::string context_path = "contexts[" + context + "].context";

  std::string cluster_name = context_file->string_field(context_node, "cluster", context_path + ".cluster");
  if (cluster_name.empty()) context_file->fail(context_path + ".cluster", "not set");
  std::string user_name = context_file->string_field(context_node, "user", context_path + ".user");
  if (user_name.empty()) context_file->fail(context_path + ".user", "not set");
  auto [cluster, cluster_file] =
      merged.entry("clusters", cluster_name, "cluster", context_file, context_path + ".cluster");
  auto [user, user_file] = merged.entry("users", user_name, "user", context_file, context_path + ".user");
  const std::string cluster_path = "clusters[" + cluster_name + "].cluster";
  const std::string user_path = "users[" + user_name + "].user";

  KubeConnection connection;
  connection.source = "kubeconfig " + merged.names() + ", context " + context;
  connection.default_namespace = context_file->string_field(context_node, "namespace", context_path + ".namespace");

  std::string server = cluster_file->string_field(cluster, "server", cluster_path + ".server");
  if (server.empty()) cluster_file->fail(cluster_path + ".server", "not set");
  ServerAddress address = parse_server_url(
      server, [&, file = cluster_file](const std::string& problem) { file->fail(cluster_path + ".server", problem); });
  connection.host = address.host;
  connection.port = address.port;
  connection.base_path = address.base_path;
  // The cluster's proxy-url is used whatever NO_PROXY says, as client-go uses it.
  if (std::string proxy_url = cluster_file->string_field(cluster, "proxy-url", cluster_path + ".proxy-url");
      !proxy_url.empty()) {
    try {
      connection.proxy = parse_proxy_url(proxy_url);
      connection.proxy->source = "proxy-url";
    } catch (const std::invalid_argument& e) {
      cluster_file->fail(cluster_path + ".proxy-url", e.what());
    }
  } else {
    connection.proxy = environment_proxy(connection.host, connection.port);
  }
  connection.tls_server_name =
      cluster_file->string_field(cluster, "tls-server-name", cluster_path + ".tls-server-name");
  // Refused here rather than when connecting: OpenSSL does not take such a name, and a client that went
  // on would accept any certificate the CA signed, whatever name it is for.
  if (!connection.tls_server_name.empty()) {
    if (std::string fault = server_name_fault(connection.tls_server_name); !fault.empty()) {
      cluster_file->fail(cluster_path + ".tls-server-name", fault);
    }
  } else if (std::string fault = server_name_fault(connection.host); !fault.empty()) {
    cluster_file->fail(cluster_path + ".server", "its host " + fault + "; or set tls-server-name");
  }
  connection.insecure_skip_tls_verify =
      cluster_file->bool_field(cluster, "insecure-skip-tls-verify", cluster_path + ".insecure-skip-tls-verify");
  std::string ca = cluster_file->pem_field(cluster, "certificate-authority", cluster_path + ".certificate-authority");
  if (!ca.empty()) {
    if (connection.insecure_skip_tls_verify) {
      cluster_file->fail(cluster_path + ".insecure-skip-tls-verify",
                         "cannot be true when a certificate-authority is given (kubectl refuses this too)");
    }
    if (!holds_pem_certificate(ca))
      cluster_file->fail(cluster_path + ".certificate-authority", "holds no PEM certificate");
    connection.ca_pem = std::move(ca);
  }

  // Credentials this client cannot use are refused by name: silently connecting anonymously instead
  // would only fail later with a puzzling 401 or 403.
  const std::string use_instead = "; use token, tokenFile or client-certificate and client-key instead";
  if (YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
    connection.exec = std::make_shared<ExecCredentialSource>(
        exec_config(*user_file, exec, user_path + ".exec", cluster, server, connection));
  }
  if (YAML::Node provider = user["auth-provider"]; provider && !provider.IsNull()) {
    std::string name =
        provider.IsMap() ? user_file->string_field(provider, "name", user_path + ".auth-provider.name") : "";
    user_file->fail(user_path + ".auth-provider",
                    "auth-provider plugins are not supported" +
                        (name.empty() ? std::string() : " (this one is \"" + name + "\")") + use_instead);
  }
  for (const char* key : {"username", "password"}) {
    if (user[key]) {
      user_file->fail(user_path + "." + key,
                      "basic authentication is not supported (Kubernetes 1.19 removed it)" + use_instead);
    }
  }
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (user[key]) user_file->fail(user_path + "." + key, "impersonation is not supported");
  }

  connection.token = user_file->string_field(user, "token", user_path + ".token");
  if (std::string token_file = user_file->string_field(user, "tokenFile", user_path + ".tokenFile");
      !token_file.empty()) {
    connection.token_file = user_file->resolve(token_file);
    // Read once now, as kubectl does, so a wrong path fails at start-up rather than on the first request.
    if (!read_file(connection.token_file)) {
      user_file->fail(user_path + ".tokenFile", connection.token_file.string() + " cannot be read");
    }
  }
  connection.client_certificate_pem =
      user_file->pem_field(user, "client-certificate", user_path + ".client-certificate");
  connection.client_key_pem = user_file->pem_field(user, "client-key", user_path + ".client-key");
  if (!connection.client_certificate_pem.empty() && connection.client_key_pem.empty()) {
    user_file->fail(user_path + ".client-key", "not set, but client-certificate is");
  }
  if (connection.client_certificate_pem.empty() && !connection.client_key_pem.empty()) {
    user_file->fail(user_path + ".client-certificate", "not set, but client-key is");
  }
  if (!connection.client_certificate_pem.empty() && !holds_pem_certificate(connection.client_certificate_pem)) {
    user_file->fail(user_path + ".client-certificate", "holds no PEM certificate");
  }
  if (!connection.client_key_pem.empty() && !holds_pem_private_key(connection.client_key_pem)) {
    user_file->fail(user_path + ".client-key", "holds no PEM private key");
  }
  return connection;
}

std::string authority_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

KubeConnection in_cluster_connection(const ServiceAccountFiles& files) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    throw KubeConfigError(
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  KubeConnection connection;
  connection.source = "in-cluster service account";
  std::string port_text = port;
  bool digits = port_text.size() <= 5 &&
                std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; });
  int number = digits ? std::stoi(port_text) : 0;
  if (number < 1 || number > 65535) {
    throw KubeConfigError("KUBERNETES_SERVICE_PORT: \"" + port_text + "\" is not a port number from 1 to 65535");
  }
  connection.host = host;
  if (std::string fault = server_name_fault(connection.host); !fault.empty()) {
    throw KubeConfigError("KUBERNETES_SERVICE_HOST: " + fault);
  }
  connection.port = static_cast<unsigned short>(number);
  connection.proxy = environment_proxy(connection.host, connection.port);
  connection.token_file = files.token;
  if (!read_file(files.token)) {
    throw KubeConfigError("service account token " + files.token.string() +
                          " cannot be read (is automountServiceAccountToken off?)");
  }
  // client-go falls back to the system store when ca.crt is unreadable; the cluster's CA is never in
  // it, so that could only fail later, less clearly.
  auto ca = read_file(files.ca);
  if (!ca) throw KubeConfigError("service account CA " + files.ca.string() + " cannot be read");
  if (!holds_pem_certificate(*ca)) {
    throw KubeConfigError("service account CA " + files.ca.string() + " holds no PEM certificate");
  }
  connection.ca_pem = std::move(*ca);
  if (auto name = read_file(files.namespace_file)) connection.default_namespace = trim_space(*name);
  return connection;
}

}  // namespace karta::kube
