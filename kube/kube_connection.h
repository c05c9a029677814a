#pragma once

// Where the Kubernetes API server is and how to prove who we are to it, read from kubeconfig files or
// from the service account Kubernetes mounts into every pod, as client-go reads them: a CA (or the
// system store), a bearer token (inline or from a file), a client certificate, an exec credential plugin
// (kube/exec_credential.h), and an HTTP proxy (the cluster's proxy-url, else $HTTPS_PROXY and $NO_PROXY:
// kube/proxy.h).

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kube/exec_credential.h"
#include "kube/proxy.h"

namespace karta::kube {

// A kubeconfig or service account that cannot be used. The message names the file and the field.
class KubeConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No kubeconfig file to read at all: none of those $KUBECONFIG names exists, or ~/.kube/config does not.
class NoKubeconfigError : public KubeConfigError {
 public:
  using KubeConfigError::KubeConfigError;
};

struct KubeConnection {
  std::string host;  // a DNS name or an IP address (IPv6 without brackets)
  unsigned short port = 443;
  std::string base_path;              // the server URL's path without a trailing slash: "" or "/k8s/clusters/c-1"
  std::optional<std::string> ca_pem;  // the CAs trusted for the server; none: the system store
  std::string token;                  // a bearer token
  // Read again for every request and preferred to `token`: projected service account tokens rotate
  // (the kubelet rewrites the file), and a long-running watcher must pick up the new one.
  std::filesystem::path token_file;
  std::string client_certificate_pem;  // with client_key_pem, presented to the server
  std::string client_key_pem;
  // The user's exec plugin, when it has one: its token is sent, and its client certificate presented,
  // instead. Shared, so that every copy of the connection (a watcher's, a retry's) runs it once.
  std::shared_ptr<ExecCredentialSource> exec;
  // The HTTP proxy to tunnel through (CONNECT), when the cluster's proxy-url or the environment names one.
  std::optional<ProxyServer> proxy;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;    // the name the server's certificate must carry (and SNI), when not host
  std::string default_namespace;  // the context's namespace, or the service account's
  std::string source;             // where this came from, for messages: "kubeconfig /x/config, context dev"

  // The token to send now, "" for none: the exec plugin's (running it when its credential has expired),
  // else the token file's, else the inline token. Throws KubeConfigError when token_file cannot be read
  // and there is no inline token to fall back on, or the plugin fails.
  std::string bearer_token() const;

  // "https://host:port" plus base_path, IPv6 hosts in brackets: for requests' messages.
  std::string server_url() const;
};

// The kubeconfig files to read, as kubectl chooses them (client-go's ClientConfigLoadingRules).
struct KubeconfigFiles {
  std::vector<std::filesystem::path> files;  // in precedence order
  bool explicit_file = false;                // named by --kubeconfig: it must exist
  std::string origin;                        // where the list came from, for messages: "$KUBECONFIG"
};

// `flag` (the --kubeconfig flag) alone when it is not empty; else every file of $KUBECONFIG, split at
// ':' with repeats and empty entries dropped; else ~/.kube/config.
KubeconfigFiles kubeconfig_files(const std::string& flag);

// Reads the kubeconfig files (clusters, users, contexts, current-context) and returns the connection
// of `context`, or of current-context when `context` is empty. Several files are merged as kubectl
// merges them: missing files are skipped (an explicit one is an error); for each named cluster, user
// and context the first file that has one wins, and so does the first file that sets current-context.
// Relative file paths are resolved against the directory of the file that holds them, as kubectl does.
// Throws KubeConfigError naming the file and field when something is missing, unreadable or
// unsupported (auth-provider plugins, basic auth, impersonation, SOCKS5 proxies); NoKubeconfigError
// when no file exists. An exec plugin is not run here: the first request runs it.
KubeConnection load_kubeconfig(const KubeconfigFiles& files, std::string context = "");
// One file, which must exist: load_kubeconfig({{file}, true, "--kubeconfig"}, context).
KubeConnection load_kubeconfig(const std::filesystem::path& file, std::string context = "");

// The files Kubernetes mounts into a pod for its service account. Tests point them elsewhere.
struct ServiceAccountFiles {
  std::filesystem::path token = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::filesystem::path ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::filesystem::path namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// The connection a pod has to its own cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the
// service account's CA, and its token file (re-read for every request). Throws KubeConfigError when
// the variables are unset (not running in a pod) or the token or CA cannot be read.
KubeConnection in_cluster_connection(const ServiceAccountFiles& files = {});

// A host as it is written in a URL's authority or a Host header: an IPv6 address in brackets.
std::string authority_host(const std::string& host);

}  // namespace karta::kube
