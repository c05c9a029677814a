// The fake API server (support/fake_api_server.h): its I/O thread, connections, objects and the kartas'
// events, and the routing of each request; fake_api_answers.cpp answers them.
#include "support/fake_api_server.h"

#include <algorithm>
#include <functional>
#include <future>
#include <stdexcept>

#include <boost/asio/post.hpp>

#include "support/fake_api_server_impl.h"

namespace karta::test {

using Clock = std::chrono::steady_clock;

template <class F>
auto FakeApiServer::Impl::on_io(F&& f) const -> decltype(f()) {
  std::packaged_task<decltype(f())()> task(std::forward<F>(f));
  auto result = task.get_future();
  net::post(const_cast<net::io_context&>(io_), [&task] { task(); });
  return result.get();
}

void FakeApiServer::Impl::store(Served& served, std::vector<json> objects) {
  for (json& object : objects) {
    json& metadata = object["metadata"];
    if (!object.contains("apiVersion")) object["apiVersion"] = served.resource.api_version();
    if (!object.contains("kind")) object["kind"] = served.resource.kind;
    std::string name = metadata.at("name").get<std::string>();
    std::string space = served.resource.namespaced ? metadata.value("namespace", "default") : "";
    if (served.resource.namespaced) metadata["namespace"] = space;
    metadata["resourceVersion"] = std::to_string(++resource_version_);
    if (!metadata.contains("uid")) metadata["uid"] = "uid-" + (space.empty() ? name : space + "-" + name);
    (*served.objects)[space.empty() ? name : space + "/" + name] = std::move(object);
  }
}

FakeApiServer::Impl::Impl(const fs::path& dir, std::vector<json> objects, FakeApiServerOptions options)
    : options_(std::move(options)), certificates_(dir) {
  if (options_.common_name_only) {
    ClientCertificate named = make_certificate(dir, "localhost", "extendedKeyUsage=serverAuth\n");
    certificates_.certificate = named.certificate;
    certificates_.key = named.key;
  }
  tls_.use_certificate_chain_file(certificates_.certificate.string());
  tls_.use_private_key_file(certificates_.key.string(), net::ssl::context::pem);
  if (options_.require_client_certificate) {
    tls_.load_verify_file(certificates_.ca.string());
    tls_.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
  }
  served_.push_back({{.group = "run.ai", .version = "v1alpha1", .kind = "Karta", .plural = "kartas",
                      .singular = "karta", .namespaced = false},
                     std::make_shared<std::map<std::string, json>>(),
                     {}});
  int version = 40;
  for (json& object : objects) {
    object["metadata"]["resourceVersion"] = std::to_string(version++);
    std::string name = object["metadata"]["name"].get<std::string>();
    (*kartas().objects)[name] = std::move(object);
  }
  tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol());
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

FakeApiServer::Impl::~Impl() {
  on_io([this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    for (auto& weak : sessions_) {
      if (auto session = weak.lock()) session->close();
    }
  });
  thread_.join();  // the I/O thread ends when nothing is left to do
}

// A connection to this server with `token`.
kube::KubeConnection FakeApiServer::Impl::connection(const std::string& token) const {
  kube::KubeConnection connection;
  connection.host = "127.0.0.1";
  connection.port = port_;
  connection.ca_pem = read_text(certificates_.ca);
  connection.token = token;
  connection.source = "test";
  return connection;
}

void FakeApiServer::Impl::add(json object) {
  on_io([&] { publish(kartas(), "ADDED", std::move(object)); });
}

void FakeApiServer::Impl::modify(json object) {
  on_io([&] { publish(kartas(), "MODIFIED", std::move(object)); });
}

void FakeApiServer::Impl::remove(const std::string& name) {
  on_io([&] {
    json object = kartas().objects->at(name);
    publish(kartas(), "DELETED", std::move(object));
  });
}

void FakeApiServer::Impl::write(const std::string& group, const std::string& plural, const std::string& type,
                                json object) {
  on_io([&] {
    Served* served = find(group, "", plural);
    if (served == nullptr) throw std::logic_error("FakeApiServer: " + plural + "." + group + " is not served");
    if (!object.contains("apiVersion")) object["apiVersion"] = served->resource.api_version();
    if (!object.contains("kind")) object["kind"] = served->resource.kind;
    if (served->resource.namespaced && !object["metadata"].contains("namespace")) object["metadata"]["namespace"] = "default";
    publish(*served, type, std::move(object));
  });
}

void FakeApiServer::Impl::remove_from(const std::string& group, const std::string& plural, const std::string& key) {
  on_io([&] {
    Served* served = find(group, "", plural);
    if (served == nullptr) throw std::logic_error("FakeApiServer: " + plural + "." + group + " is not served");
    json object = served->objects->at(key);
    publish(*served, "DELETED", std::move(object));
  });
}

// Writes elsewhere in the cluster moved the resourceVersion to `version`; watches that asked for
// bookmarks are told.
void FakeApiServer::Impl::bookmark(int version) {
  on_io([&] {
    resource_version_ = version;
    for (auto& session : live_watches()) {
      if (!session->wants_bookmarks()) continue;
      // A bookmark carries only a resourceVersion, in an object of the kind watched.
      json object = {{"metadata", {{"resourceVersion", std::to_string(version)}}}};
      for (const Served& served : served_) {
        if (served.objects.get() == session->watched) {
          object["kind"] = served.resource.kind;
          object["apiVersion"] = served.resource.api_version();
          break;
        }
      }
      send_to(*session, session->watched, {{"type", "BOOKMARK"}, {"object", object}});
    }
  });
}

// Writes elsewhere moved the resourceVersion to `version` and etcd was compacted there: older
// resourceVersions can no longer be watched from. Open watches end, as they do when the API server's
// watch cache is re-initialized.
void FakeApiServer::Impl::compact(int version) {
  on_io([&] {
    resource_version_ = version;
    oldest_watchable_ = version;
    history_.clear();
    end_all_watches();
  });
}

// Ends every open watch normally, as when its timeoutSeconds has passed.
void FakeApiServer::Impl::end_watches() {
  on_io([&] { end_all_watches(); });
}

// The next `count` requests get `status` with a Status body.
void FakeApiServer::Impl::set_token(const std::string& token) {
  on_io([&] { options_.token = token; });
}

void FakeApiServer::Impl::fail_next(int count, int status) {
  on_io([&] {
    failures_left_ = count;
    failure_status_ = status;
  });
}

void FakeApiServer::Impl::make_unavailable(const std::string& group, const std::string& version) {
  on_io([&] { unavailable_.insert(group.empty() ? "/api/" + version : "/apis/" + group + "/" + version); });
}

void FakeApiServer::Impl::delay_gets(const std::string& target_prefix, std::chrono::milliseconds delay) {
  on_io([&] {
    if (delay.count() > 0) get_delays_[target_prefix] = delay;
    else get_delays_.erase(target_prefix);
  });
}

std::vector<Received> FakeApiServer::Impl::received() const {
  return on_io([&] { return received_; });
}

std::vector<std::string> FakeApiServer::Impl::raw_heads() const {
  return on_io([&] { return raw_heads_; });
}

void FakeApiServer::Impl::answer_raw(const std::string& path, int status, std::string body) {
  on_io([&] { raw_answers_[path] = {status, std::move(body)}; });
}

std::vector<std::string> FakeApiServer::Impl::targets() const {
  std::vector<std::string> result;
  for (const auto& request : received()) result.push_back(request.target);
  return result;
}

std::size_t FakeApiServer::Impl::connections() const {
  return on_io([&] { return sessions_.size(); });
}

std::size_t FakeApiServer::Impl::open_watches() const {
  return on_io([&] { return live_watches().size(); });
}

void FakeApiServer::Impl::serve(FakeResource resource, std::vector<json> objects) {
  on_io([&] {
    Served* served = find(resource.group, resource.version, resource.plural);
    if (served == nullptr) {
      Served added{std::move(resource), std::make_shared<std::map<std::string, json>>(), {}};
      if (Served* other = find(added.resource.group, "", added.resource.plural)) added.objects = other->objects;
      served_.push_back(std::move(added));
      served = &served_.back();
    }
    store(*served, std::move(objects));
  });
}

void FakeApiServer::Impl::add_objects(const std::string& group, const std::string& plural, std::vector<json> objects) {
  on_io([&] {
    Served* served = find(group, "", plural);
    if (served == nullptr) throw std::logic_error("FakeApiServer: " + plural + "." + group + " is not served");
    store(*served, std::move(objects));
  });
}

void FakeApiServer::Impl::forbid(const std::string& group, const std::string& plural,
                                 const std::string& namespace_name) {
  on_io([&] {
    for (Served& served : served_) {
      if (served.resource.group == group && served.resource.plural == plural) served.forbidden.insert(namespace_name);
    }
  });
}

void FakeApiServer::Impl::accept() {
  acceptor_.async_accept(io_, [this](beast::error_code ec, tcp::socket socket) {
    if (ec) return;
    auto session = std::make_shared<Session>(*this, std::move(socket));
    sessions_.push_back(session);
    session->start();
    accept();
  });
}

std::vector<std::shared_ptr<FakeApiServer::Impl::Session>> FakeApiServer::Impl::live_watches() const {
  std::vector<std::shared_ptr<Session>> live;
  for (const auto& weak : watches_) {
    auto session = weak.lock();
    if (session && session->watching()) live.push_back(session);
  }
  return live;
}

void FakeApiServer::Impl::end_all_watches() {
  for (auto& session : live_watches()) session->end_watch();
  watches_.clear();
}

void FakeApiServer::Impl::publish(Served& served, const std::string& type, json object) {
  ++resource_version_;
  std::string key = key_of(served, object);
  object["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  if (type == "DELETED") {
    served.objects->erase(key);
  } else {
    std::string uid = key;
    std::replace(uid.begin(), uid.end(), '/', '-');
    object["metadata"]["uid"] = "uid-" + uid;
    (*served.objects)[key] = object;
  }
  json event = {{"type", type}, {"object", object}};
  history_.push_back({resource_version_, served.objects.get(), event});
  for (auto& session : live_watches()) send_to(*session, served.objects.get(), event);
}

void FakeApiServer::Impl::send_to(Session& session, const std::map<std::string, json>* objects, const json& event) {
  if (session.watched != objects) return;
  if (!session.metadata_only || event.value("type", "") == "ERROR") return session.send_event(event);
  json partial = event;
  partial["object"] = partial_object_metadata(event["object"]);
  session.send_event(partial);
}

void FakeApiServer::Impl::handle(const std::shared_ptr<Session>& session,
                                 const http::request<http::string_body>& request) {
  std::string target(request.target());
  received_.push_back({std::string(request.method_string()), target,
                       "HTTP/" + std::to_string(request.version() / 10) + "." + std::to_string(request.version() % 10),
                       std::string(request[http::field::authorization]),
                       std::string(request[http::field::accept]), session->client_name(), Clock::now()});
  if (request.method() == http::verb::get) {
    for (const auto& [prefix, delay] : get_delays_) {
      if (target.starts_with(prefix)) session->hold_next_answer(delay);
    }
  }
  if (failures_left_ > 0) {
    --failures_left_;
    json body =
        status_object(failure_status_, "InternalError", "Internal error occurred: etcdserver: leader changed");
    body["details"] = {{"causes", {{{"message", "etcdserver: leader changed"}}}}};
    return session->respond(failure_status_, body);
  }
  bool authenticated = !session->client_name().empty() ||
                       (!options_.token.empty() && request[http::field::authorization] == "Bearer " + options_.token);
  if (!authenticated) return session->respond(401, status_object(401, "Unauthorized", "Unauthorized"));
  std::string path = path_unescape(target.substr(0, target.find('?')));
  if (auto raw = raw_answers_.find(path); raw != raw_answers_.end()) {
    return session->respond_text(raw->second.first, "application/json", raw->second.second);
  }
  for (const std::string& prefix : unavailable_) {
    if (path == prefix || path.starts_with(prefix + "/")) return session->respond_text(503, "text/plain; charset=utf-8", "service unavailable\n");
  }
  std::map<std::string, std::string> query;
  if (auto question = target.find('?'); question != std::string::npos) {
    std::string rest = target.substr(question + 1);
    for (std::size_t start = 0; start <= rest.size();) {
      std::size_t end = std::min(rest.find('&', start), rest.size());
      std::string pair = rest.substr(start, end - start);
      std::size_t equals = pair.find('=');
      query[percent_decode(pair.substr(0, equals))] =
          equals == std::string::npos ? "" : percent_decode(pair.substr(equals + 1));
      start = end + 1;
    }
  }
  if (request.method() == http::verb::get) {
    if (std::optional<json> document = discovery(path)) return session->respond(200, *document);
    if (std::optional<Target> resolved = resolve(path)) {
      return serve_resource(session, *resolved, std::string(request[http::field::accept]), query);
    }
  }
  json body = status_object(404, "NotFound", "the server could not find the requested resource");
  body["details"] = json::object();
  session->respond(404, body);
}

std::optional<FakeApiServer::Impl::Target> FakeApiServer::Impl::resolve(const std::string& path) {
  std::vector<std::string> segments = path_segments(path);
  std::string group, version;
  std::size_t rest = 0;
  if (segments.size() >= 3 && segments[0] == "api") {
    version = segments[1];
    rest = 2;
  } else if (segments.size() >= 4 && segments[0] == "apis") {
    group = segments[1];
    version = segments[2];
    rest = 3;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> tail(segments.begin() + static_cast<std::ptrdiff_t>(rest), segments.end());
  Target target{nullptr, "", ""};
  if (tail.size() >= 3 && tail[0] == "namespaces") {
    target.namespace_name = tail[1];
    tail.erase(tail.begin(), tail.begin() + 2);
  }
  if (tail.empty() || tail.size() > 2) return std::nullopt;
  target.served = find(group, version, tail[0]);
  if (target.served == nullptr) return std::nullopt;
  // The API server has no /namespaces/NS/ paths for cluster-scoped resources, nor a cluster path to one
  // object of a namespaced resource.
  if (!target.served->resource.namespaced && !target.namespace_name.empty()) return std::nullopt;
  if (tail.size() == 2) {
    if (target.served->resource.namespaced && target.namespace_name.empty()) return std::nullopt;
    target.name = tail[1];
  }
  return target;
}

FakeApiServer::FakeApiServer(const fs::path& dir, std::vector<json> objects, FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(dir, std::move(objects), std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

unsigned short FakeApiServer::port() const { return impl_->port(); }
const TestCertificates& FakeApiServer::certificates() const { return impl_->certificates(); }
kube::KubeConnection FakeApiServer::connection(const std::string& token) const { return impl_->connection(token); }
std::string FakeApiServer::kubeconfig(const std::string& namespace_name) const {
  kube::KubeConnection c = connection();
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://" + c.host + ":" +
         std::to_string(c.port) + "\n    certificate-authority-data: " + base64(*c.ca_pem) +
         (c.tls_server_name.empty() ? "" : "\n    tls-server-name: " + c.tls_server_name) +
         "\nusers:\n- name: me\n  user:\n    token: " + c.token +
         "\ncontexts:\n- name: local\n  context: {cluster: local, user: me, namespace: " + namespace_name +
         "}\ncurrent-context: local\n";
}
void FakeApiServer::add(json object) { impl_->add(std::move(object)); }
void FakeApiServer::modify(json object) { impl_->modify(std::move(object)); }
void FakeApiServer::remove(const std::string& name) { impl_->remove(name); }
void FakeApiServer::add_to(const std::string& group, const std::string& plural, json object) {
  impl_->write(group, plural, "ADDED", std::move(object));
}
void FakeApiServer::modify_in(const std::string& group, const std::string& plural, json object) {
  impl_->write(group, plural, "MODIFIED", std::move(object));
}
void FakeApiServer::change_object(const std::string& group, const std::string& plural, const std::string& type,
                                  json object) {
  if (type != "DELETED") return impl_->write(group, plural, type, std::move(object));
  std::string name = object.at("metadata").at("name").get<std::string>();
  std::string space = object["metadata"].value("namespace", "");
  impl_->remove_from(group, plural, space.empty() ? name : space + "/" + name);
}
void FakeApiServer::remove_from(const std::string& group, const std::string& plural, const std::string& key) {
  impl_->remove_from(group, plural, key);
}
void FakeApiServer::bookmark(int version) { impl_->bookmark(version); }
void FakeApiServer::compact(int version) { impl_->compact(version); }
void FakeApiServer::end_watches() { impl_->end_watches(); }
void FakeApiServer::fail_next(int count, int status) { impl_->fail_next(count, status); }
void FakeApiServer::set_token(const std::string& token) { impl_->set_token(token); }
void FakeApiServer::make_unavailable(const std::string& group, const std::string& version) {
  impl_->make_unavailable(group, version);
}
std::vector<Received> FakeApiServer::received() const { return impl_->received(); }
std::vector<std::string> FakeApiServer::request_lines() const {
  std::vector<std::string> lines;
  for (const auto& request : impl_->received()) lines.push_back(request.method + " " + request.target + " " + request.version);
  return lines;
}
std::vector<std::string> FakeApiServer::targets() const { return impl_->targets(); }
void FakeApiServer::delay_gets(const std::string& target_prefix, std::chrono::milliseconds delay) {
  impl_->delay_gets(target_prefix, delay);
}
std::size_t FakeApiServer::requests_for(const std::string& path) const {
  std::size_t count = 0;
  for (const std::string& target : impl_->targets()) count += target.substr(0, target.find('?')) == path ? 1 : 0;
  return count;
}
std::vector<std::string> FakeApiServer::raw_heads() const { return impl_->raw_heads(); }
void FakeApiServer::answer_raw(const std::string& path, int status, std::string body) {
  impl_->answer_raw(path, status, std::move(body));
}
std::size_t FakeApiServer::connections() const { return impl_->connections(); }
std::size_t FakeApiServer::open_watches() const { return impl_->open_watches(); }
void FakeApiServer::serve(FakeResource resource, std::vector<json> objects) {
  impl_->serve(std::move(resource), std::move(objects));
}
void FakeApiServer::add_objects(const std::string& group, const std::string& plural, std::vector<json> objects) {
  impl_->add_objects(group, plural, std::move(objects));
}
void FakeApiServer::forbid(const std::string& group, const std::string& plural, const std::string& namespace_name) {
  impl_->forbid(group, plural, namespace_name);
}

}  // namespace karta::test
