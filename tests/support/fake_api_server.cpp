#include "support/fake_api_server.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>
#include <thread>

#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace karta::test {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kKartas = "/apis/run.ai/v1alpha1/kartas";

// A label selector as the API server parses it (k8s.io/apimachinery/pkg/labels/selector.go): equality
// (=, ==, !=), set-based (in, notin), existence (key, !key), requirements joined by commas (AND). The
// error messages are the parser's.
class LabelSelector {
 public:
  // Throws std::invalid_argument with the parser's message.
  explicit LabelSelector(const std::string& text) : text_(text) {
    for (;;) {
      Token token = peek();
      if (token.type == End) return;
      if (token.type != Identifier && token.type != Bang) {
        fail("found '" + token.text + "', expected: !, identifier, or 'end of string'");
      }
      requirement();
      Token after = next();
      if (after.type == End) return;
      if (after.type != Comma) fail("found '" + after.text + "', expected: ',' or 'end of string'");
      Token following = peek();
      if (following.type != Identifier && following.type != Bang) {
        fail("found '" + following.text + "', expected: identifier after ','");
      }
    }
  }

  bool matches(const json& object) const {
    const json* labels = nullptr;
    if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
      if (auto found = metadata->find("labels"); found != metadata->end() && found->is_object()) labels = &*found;
    }
    for (const Requirement& r : requirements_) {
      std::optional<std::string> value;
      if (labels != nullptr) {
        if (auto found = labels->find(r.key); found != labels->end() && found->is_string()) value = found->get<std::string>();
      }
      bool in = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
      bool ok = r.op == "exists"         ? value.has_value()
                : r.op == "!"            ? !value.has_value()
                : r.op == "=" || r.op == "==" || r.op == "in" ? in
                                                                : !in;  // != and notin
      if (!ok) return false;
    }
    return true;
  }

 private:
  enum Type { End, Identifier, Bang, Comma, Open, Close, Operator };
  struct Token {
    Type type;
    std::string text;
  };
  struct Requirement {
    std::string key, op;
    std::vector<std::string> values;
  };

  [[noreturn]] static void fail(const std::string& message) { throw std::invalid_argument(message); }

  Token lex(std::size_t& at) const {
    while (at < text_.size() && std::isspace(static_cast<unsigned char>(text_[at]))) ++at;
    if (at >= text_.size()) return {End, ""};
    char c = text_[at];
    auto two = text_.substr(at, 2);
    if (two == "!=" || two == "==") return at += 2, Token{Operator, two};
    if (c == '!') return ++at, Token{Bang, "!"};
    if (c == '=') return ++at, Token{Operator, "="};
    if (c == ',') return ++at, Token{Comma, ","};
    if (c == '(') return ++at, Token{Open, "("};
    if (c == ')') return ++at, Token{Close, ")"};
    std::size_t start = at;
    while (at < text_.size() && !std::isspace(static_cast<unsigned char>(text_[at])) &&
           std::string_view("!=,()").find(text_[at]) == std::string_view::npos) {
      ++at;
    }
    return {Identifier, text_.substr(start, at - start)};
  }
  Token peek() const {
    std::size_t at = position_;
    return lex(at);
  }
  Token next() { return lex(position_); }

  void requirement() {
    try {
      Requirement r;
      Token token = next();
      if (token.type == Bang) {
        r.op = "!";
        token = next();
      }
      if (token.type != Identifier) fail("found '" + token.text + "', expected: identifier");
      r.key = token.text;
      Type after = peek().type;
      if (after == End || after == Comma) {
        if (r.op.empty()) r.op = "exists";
        requirements_.push_back(std::move(r));
        return;
      }
      Token op = next();
      if (op.type == Operator || (op.type == Identifier && (op.text == "in" || op.text == "notin"))) {
        r.op = op.text;
      } else {
        fail("found '" + op.text + "', expected: '=', '!=', '==', 'in', notin'");
      }
      if (r.op == "in" || r.op == "notin") {
        Token open = next();
        if (open.type != Open) fail("found '" + open.text + "' expected: '('");
        for (;;) {
          Token value = next();
          if (value.type == Close) break;
          if (value.type != Identifier) fail("found '" + value.text + "', expected: ',', or identifier");
          r.values.push_back(value.text);
          Token separator = next();
          if (separator.type == Close) break;
          if (separator.type != Comma) fail("found '" + separator.text + "', expected: ',' or ')'");
        }
      } else {
        Type value = peek().type;
        if (value == End || value == Comma) {
          r.values.push_back("");
        } else {
          Token token_value = next();
          if (token_value.type != Identifier) fail("found '" + token_value.text + "', expected: identifier");
          r.values.push_back(token_value.text);
        }
      }
      requirements_.push_back(std::move(r));
    } catch (const std::invalid_argument& e) {
      fail(std::string("unable to parse requirement: ") + e.what());
    }
  }

  std::string text_;
  std::size_t position_ = 0;
  std::vector<Requirement> requirements_;
};

// Kubernetes' version priority (k8s.io/apimachinery/pkg/version): GA before beta before alpha, higher
// numbers first; anything else after them, alphabetically.
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

}  // namespace

std::string FakeResource::api_version() const { return group.empty() ? version : group + "/" + version; }
std::string FakeResource::group_resource() const { return group.empty() ? plural : plural + "." + group; }

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

std::string percent_decode(const std::string& text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      decoded.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      decoded.push_back(text[i] == '+' ? ' ' : text[i]);
    }
  }
  return decoded;
}

// A Status as the API server writes it in error answers and ERROR events.
json status_object(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

// A client certificate (clientAuth) for `common_name`, signed by the CA TestCertificates made in `dir`.
ClientCertificate make_client_certificate(const fs::path& dir, const std::string& common_name) {
  ClientCertificate made{dir / (common_name + ".crt"), dir / (common_name + ".key")};
  fs::path csr = dir / (common_name + ".csr");
  fs::path ext = dir / (common_name + ".ext");
  write_text(ext, "extendedKeyUsage=clientAuth\n");
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

class FakeApiServer::Impl {
  struct Served {
    FakeResource resource;
    // By "namespace/name", or "name" when cluster-scoped; one set for every version of the resource, as
    // the API server stores one object and converts it to the version asked for.
    std::shared_ptr<std::map<std::string, json>> objects = std::make_shared<std::map<std::string, json>>();
    std::set<std::string> forbidden;      // namespaces denied; "" for all of them
  };

  Served& kartas() { return served_.front(); }

  // `version` "" for any version of the resource.
  Served* find(const std::string& group, const std::string& version, const std::string& plural) {
    for (Served& served : served_) {
      const FakeResource& r = served.resource;
      if (r.group == group && (version.empty() || r.version == version) && r.plural == plural) return &served;
    }
    return nullptr;
  }

  // The object as read through `resource`'s version.
  static json in_version(json object, const FakeResource& resource) {
    if (object.contains("apiVersion")) object["apiVersion"] = resource.api_version();
    return object;
  }

  void store(Served& served, std::vector<json> objects) {
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

  // One connection: reads requests and writes answers, or the chunks of a watch.
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(Impl& server, tcp::socket socket)
        : server_(server), stream_(std::move(socket), server.tls_), timer_(server.io_) {}

    void start() {
      stream_.async_handshake(net::ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
        if (ec) return self->close();
        if (X509* peer = SSL_get1_peer_certificate(self->stream_.native_handle())) {
          char name[256] = {};
          X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, name, sizeof name);
          self->client_name_ = name;
          X509_free(peer);
        }
        self->read();
      });
    }

    void close() {
      if (closed_) return;
      closed_ = true;
      watching_ = false;
      timer_.cancel();
      beast::get_lowest_layer(stream_).close();
    }

    const std::string& client_name() const { return client_name_; }
    bool watching() const { return watching_ && !closed_; }
    bool wants_bookmarks() const { return bookmarks_; }

    void respond(int status, const json& body) {
      auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
      response->set(http::field::content_type, "application/json");
      response->body() = body.dump();
      response->keep_alive(request_.keep_alive());
      response->prepare_payload();
      http::async_write(stream_, *response, [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
        if (ec || !response->keep_alive() || self->server_.options_.close_after_answer) return self->close();
        self->read();
      });
    }

    // Sends the header of a chunked 200 answer; events follow as chunks until end_watch().
    void begin_watch(std::chrono::seconds timeout, bool bookmarks) {
      watching_ = true;
      bookmarks_ = bookmarks;
      auto header = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
      header->set(http::field::content_type, "application/json");
      header->set(http::field::cache_control, "no-cache, private");
      header->chunked(true);
      auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
      writing_ = true;
      http::async_write_header(stream_, *serializer,
                               [self = shared_from_this(), header, serializer](beast::error_code ec, std::size_t) {
                                 self->writing_ = false;
                                 if (ec) return self->close();
                                 self->write_next();
                               });
      timer_.expires_after(timeout);
      timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->end_watch();
      });
      watch_for_close();
    }

    void send_event(const json& event) {
      if (!watching()) return;
      outgoing_.push_back(event.dump() + "\n");  // the API server's JSON encoder ends each event with a newline
      write_next();
    }

    // The terminating chunk: the answer ends normally. The connection is then closed.
    void end_watch() {
      if (!watching()) return;
      watching_ = false;
      timer_.cancel();
      outgoing_.push_back(std::nullopt);
      write_next();
    }

   private:
    void read() {
      request_ = {};
      http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->server_.handle(self, self->request_);
      });
    }

    // During a watch the client sends nothing: a read that ends means it has gone.
    void watch_for_close() {
      stream_.async_read_some(net::buffer(probe_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->watch_for_close();
      });
    }

    // Each event is flushed as a chunk of its own, as the API server flushes after every event.
    void write_next() {
      if (writing_ || outgoing_.empty() || closed_) return;
      writing_ = true;
      auto done = [self = shared_from_this()](beast::error_code ec, std::size_t) {
        self->writing_ = false;
        bool last = !self->outgoing_.front().has_value();
        self->outgoing_.pop_front();
        if (ec || last) return self->close();
        self->write_next();
      };
      if (outgoing_.front()) {
        net::async_write(stream_, http::make_chunk(net::buffer(*outgoing_.front())), done);
      } else {
        net::async_write(stream_, http::make_chunk_last(), done);
      }
    }

    Impl& server_;
    beast::ssl_stream<beast::tcp_stream> stream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    std::string client_name_;
    std::deque<std::optional<std::string>> outgoing_;  // nullopt: the last chunk
    std::array<char, 64> probe_{};
    bool writing_ = false;
    bool watching_ = false;
    bool bookmarks_ = false;
    bool closed_ = false;
  };

 public:
  Impl(const fs::path& dir, std::vector<json> objects, FakeApiServerOptions options = {})
      : options_(std::move(options)), certificates_(dir) {
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

  ~Impl() {
    on_io([this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      for (auto& weak : sessions_) {
        if (auto session = weak.lock()) session->close();
      }
    });
    thread_.join();  // the I/O thread ends when nothing is left to do
  }

  unsigned short port() const { return port_; }
  const test::TestCertificates& certificates() const { return certificates_; }

  // A connection to this server with `token`.
  kube::KubeConnection connection(const std::string& token = "sesame") const {
    kube::KubeConnection connection;
    connection.host = "127.0.0.1";
    connection.port = port_;
    connection.ca_pem = read_text(certificates_.ca);
    connection.token = token;
    connection.source = "test";
    return connection;
  }

  void add(json object) {
    on_io([&] { publish("ADDED", std::move(object)); });
  }
  void modify(json object) {
    on_io([&] { publish("MODIFIED", std::move(object)); });
  }
  void remove(const std::string& name) {
    on_io([&] {
      json object = kartas().objects->at(name);
      publish("DELETED", std::move(object));
    });
  }
  // Writes elsewhere in the cluster moved the resourceVersion to `version`; watches that asked for
  // bookmarks are told.
  void bookmark(int version) {
    on_io([&] {
      resource_version_ = version;
      json event = {{"type", "BOOKMARK"},
                    {"object",
                     {{"kind", "Karta"},
                      {"apiVersion", "run.ai/v1alpha1"},
                      {"metadata", {{"resourceVersion", std::to_string(version)}}}}}};
      for (auto& session : live_watches()) {
        if (session->wants_bookmarks()) session->send_event(event);
      }
    });
  }
  // Writes elsewhere moved the resourceVersion to `version` and etcd was compacted there: older
  // resourceVersions can no longer be watched from. Open watches end, as they do when the API server's
  // watch cache is re-initialized.
  void compact(int version) {
    on_io([&] {
      resource_version_ = version;
      oldest_watchable_ = version;
      history_.clear();
      end_all_watches();
    });
  }
  // Ends every open watch normally, as when its timeoutSeconds has passed.
  void end_watches() {
    on_io([&] { end_all_watches(); });
  }
  // The next `count` requests get `status` with a Status body.
  void fail_next(int count, int status) {
    on_io([&] {
      failures_left_ = count;
      failure_status_ = status;
    });
  }

  std::vector<Received> received() const {
    return on_io([&] { return received_; });
  }
  std::vector<std::string> targets() const {
    std::vector<std::string> result;
    for (const auto& request : received()) result.push_back(request.target);
    return result;
  }
  std::size_t connections() const {
    return on_io([&] { return sessions_.size(); });
  }
  std::size_t open_watches() const {
    return on_io([&] { return live_watches().size(); });
  }

  void serve(FakeResource resource, std::vector<json> objects) {
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
  void add_objects(const std::string& group, const std::string& plural, std::vector<json> objects) {
    on_io([&] {
      Served* served = find(group, "", plural);
      if (served == nullptr) throw std::logic_error("FakeApiServer: " + plural + "." + group + " is not served");
      store(*served, std::move(objects));
    });
  }
  void forbid(const std::string& group, const std::string& plural, const std::string& namespace_name) {
    on_io([&] {
      for (Served& served : served_) {
        if (served.resource.group == group && served.resource.plural == plural) served.forbidden.insert(namespace_name);
      }
    });
  }

 private:
  template <class F>
  auto on_io(F&& f) const -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::forward<F>(f));
    auto result = task.get_future();
    net::post(const_cast<net::io_context&>(io_), [&task] { task(); });
    return result.get();
  }

  void accept() {
    acceptor_.async_accept(io_, [this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      auto session = std::make_shared<Session>(*this, std::move(socket));
      sessions_.push_back(session);
      session->start();
      accept();
    });
  }

  std::vector<std::shared_ptr<Session>> live_watches() const {
    std::vector<std::shared_ptr<Session>> live;
    for (const auto& weak : watches_) {
      auto session = weak.lock();
      if (session && session->watching()) live.push_back(session);
    }
    return live;
  }

  void end_all_watches() {
    for (auto& session : live_watches()) session->end_watch();
    watches_.clear();
  }

  void publish(const std::string& type, json object) {
    ++resource_version_;
    std::string name = object["metadata"]["name"].get<std::string>();
    object["metadata"]["resourceVersion"] = std::to_string(resource_version_);
    if (type == "DELETED") {
      kartas().objects->erase(name);
    } else {
      object["metadata"]["uid"] = "uid-" + name;
      (*kartas().objects)[name] = object;
    }
    json event = {{"type", type}, {"object", object}};
    history_.push_back({resource_version_, event});
    for (auto& session : live_watches()) session->send_event(event);
  }

  void handle(const std::shared_ptr<Session>& session, const http::request<http::string_body>& request) {
    std::string target(request.target());
    received_.push_back({target, std::string(request[http::field::authorization]),
                         std::string(request[http::field::accept]), session->client_name(), Clock::now()});
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
    std::string path = target.substr(0, target.find('?'));
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
      if (std::optional<Target> resolved = resolve(path)) return serve_resource(session, *resolved, path, query);
    }
    json body = status_object(404, "NotFound", "the server could not find the requested resource");
    body["details"] = json::object();
    session->respond(404, body);
  }

  // A request for a collection or one object of a served resource.
  struct Target {
    Served* served;
    std::string namespace_name;  // "" for all namespaces, or a cluster-scoped resource
    std::string name;            // "" for the collection
  };

  std::optional<Target> resolve(const std::string& path) {
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

  void serve_resource(const std::shared_ptr<Session>& session, const Target& target, const std::string& path,
                      std::map<std::string, std::string>& query) {
    const FakeResource& resource = target.served->resource;
    bool watching = query["watch"] == "1" || query["watch"] == "true";
    std::string verb = !target.name.empty() ? "get" : watching ? "watch" : "list";
    if (forbidden(*target.served, target.namespace_name)) {
      return session->respond(403, forbidden_status(resource, verb, target.namespace_name, target.name));
    }
    if (!target.name.empty()) {
      std::string key = target.namespace_name.empty() ? target.name : target.namespace_name + "/" + target.name;
      auto found = target.served->objects->find(key);
      if (found != target.served->objects->end()) return session->respond(200, in_version(found->second, resource));
      json body = status_object(404, "NotFound", resource.group_resource() + " \"" + target.name + "\" not found");
      body["details"] = {{"name", target.name}, {"kind", resource.plural}};
      if (!resource.group.empty()) body["details"]["group"] = resource.group;
      return session->respond(404, body);
    }
    if (watching) {
      if (path == kKartas) return watch(session, query);
      json body = status_object(405, "MethodNotAllowed", "this fake API server watches only " + std::string(kKartas));
      return session->respond(405, body);
    }
    std::optional<LabelSelector> selector;
    if (!query["labelSelector"].empty()) {
      try {
        selector.emplace(query["labelSelector"]);
      } catch (const std::invalid_argument& e) {
        return session->respond(400, status_object(400, "BadRequest", e.what()));
      }
    }
    list(session, *target.served, target.namespace_name, selector, query);
  }

  bool forbidden(const Served& served, const std::string& namespace_name) const {
    if (served.forbidden.empty()) return false;
    // A request across namespaces needs the right in all of them (a ClusterRole).
    return namespace_name.empty() || served.forbidden.count("") > 0 || served.forbidden.count(namespace_name) > 0;
  }

  // RBAC's denial: k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage)
  // wrapped by apierrors.NewForbidden.
  json forbidden_status(const FakeResource& resource, const std::string& verb, const std::string& namespace_name,
                        const std::string& name) const {
    std::string message = resource.group_resource() + (name.empty() ? "" : " \"" + name + "\"") +
                          " is forbidden: User \"" + options_.user + "\" cannot " + verb + " resource \"" +
                          resource.plural + "\" in API group \"" + resource.group + "\"";
    message += namespace_name.empty() ? " at the cluster scope" : " in the namespace \"" + namespace_name + "\"";
    json body = status_object(403, "Forbidden", message);
    body["details"] = {{"kind", resource.plural}};
    if (!resource.group.empty()) body["details"]["group"] = resource.group;
    if (!name.empty()) body["details"]["name"] = name;
    return body;
  }

  // GET /api, /api/v1, /apis, /apis/GROUP and /apis/GROUP/VERSION.
  std::optional<json> discovery(const std::string& path) const {
    std::vector<std::string> segments = path_segments(path);
    if (segments == std::vector<std::string>{"api"}) {
      return json{{"kind", "APIVersions"},
                  {"versions", {"v1"}},
                  {"serverAddressByClientCIDRs",
                   {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(port_)}}}}};
    }
    if (segments.size() == 2 && segments[0] == "api") return resource_list("", segments[1]);
    if (segments == std::vector<std::string>{"apis"}) {
      json groups = json::array();
      for (const std::string& group : group_names()) groups.push_back(api_group(group));
      return json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
    }
    if (segments.size() == 2 && segments[0] == "apis") {
      if (group_versions(segments[1]).empty()) return std::nullopt;
      json group = api_group(segments[1]);
      group["kind"] = "APIGroup";
      group["apiVersion"] = "v1";
      return group;
    }
    if (segments.size() == 3 && segments[0] == "apis") return resource_list(segments[1], segments[2]);
    return std::nullopt;
  }

  std::optional<json> resource_list(const std::string& group, const std::string& version) const {
    json resources = json::array();
    for (const Served& served : served_) {
      const FakeResource& r = served.resource;
      if (r.group != group || r.version != version) continue;
      json entry = {{"name", r.plural}, {"singularName", r.singular}, {"namespaced", r.namespaced},
                    {"kind", r.kind},   {"verbs", r.verbs}};
      if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
      resources.push_back(entry);
      for (const std::string& sub : r.subresources) {
        resources.push_back({{"name", r.plural + "/" + sub}, {"singularName", ""}, {"namespaced", r.namespaced},
                             {"kind", r.kind}, {"verbs", {"get", "patch", "update"}}});
      }
    }
    // The core group's v1 is always there; another group version only while something is served in it.
    if (resources.empty() && !(group.empty() && version == "v1")) return std::nullopt;
    json list = {{"kind", "APIResourceList"}, {"groupVersion", group.empty() ? version : group + "/" + version},
                 {"resources", resources}};
    // /apis/GROUP/VERSION carries apiVersion v1; the core group's /api/v1 does not.
    if (!group.empty()) list["apiVersion"] = "v1";
    return list;
  }

  std::vector<std::string> group_names() const {
    std::vector<std::string> names;
    for (const Served& served : served_) {
      const std::string& group = served.resource.group;
      if (!group.empty() && std::find(names.begin(), names.end(), group) == names.end()) names.push_back(group);
    }
    return names;
  }

  // Preferred first, by Kubernetes' version priority.
  std::vector<std::string> group_versions(const std::string& group) const {
    std::vector<std::string> versions;
    for (const Served& served : served_) {
      const FakeResource& r = served.resource;
      if (r.group == group && std::find(versions.begin(), versions.end(), r.version) == versions.end()) {
        versions.push_back(r.version);
      }
    }
    std::sort(versions.begin(), versions.end(), higher_priority);
    return versions;
  }

  json api_group(const std::string& group) const {
    json versions = json::array();
    for (const std::string& version : group_versions(group)) {
      versions.push_back({{"groupVersion", group + "/" + version}, {"version", version}});
    }
    return {{"name", group}, {"versions", versions}, {"preferredVersion", versions.at(0)}};
  }

  void list(const std::shared_ptr<Session>& session, const Served& served, const std::string& namespace_name,
            const std::optional<LabelSelector>& selector, std::map<std::string, std::string>& query) {
    const FakeResource& resource = served.resource;
    std::size_t limit = query["limit"].empty() ? 0 : std::stoul(query["limit"]);
    int version = resource_version_;
    std::string start;
    if (!query["continue"].empty()) {
      json token = json::parse(from_raw_url_base64(query["continue"]));
      version = token.at("rv").get<int>();
      start = token.at("start").get<std::string>();
      // etcd3's store, when the snapshot the token reads from has been compacted away.
      if (version < oldest_watchable_) {
        return session->respond(
            410, status_object(410, "Expired",
                               "The provided continue parameter is too old to display a consistent list result. You "
                               "can start a new list without the continue parameter, or use the continue token in "
                               "this response to retrieve the remainder of the results. Continuing with the provided "
                               "token results in an inconsistent list - objects that were created, modified, or "
                               "deleted between the time the first chunk was returned and now may show up in the "
                               "list."));
      }
    }
    json items = json::array();
    std::string last;
    std::size_t remaining = 0;
    // In key order, as etcd returns them: namespace, then name.
    for (const auto& [name, object] : *served.objects) {
      if (name < start) continue;
      if (!namespace_name.empty() && !name.starts_with(namespace_name + "/")) continue;
      if (selector && !selector->matches(object)) continue;
      if (limit != 0 && items.size() == limit) {
        ++remaining;
        continue;
      }
      items.push_back(in_version(object, resource));
      if (options_.list_items_without_type) {
        items.back().erase("apiVersion");
        items.back().erase("kind");
      }
      last = name;
    }
    json metadata = {{"resourceVersion", std::to_string(version)}};
    if (remaining > 0) {
      // The next page starts just after the last key sent: "<key>\0".
      metadata["continue"] =
          raw_url_base64(json{{"v", "meta.k8s.io/v1"}, {"rv", version}, {"start", last + '\0'}}.dump());
      // The API server counts the rest only when it need not filter them (no label or field selector).
      if (!selector) metadata["remainingItemCount"] = remaining;
    }
    session->respond(200, {{"apiVersion", resource.api_version()},
                           {"kind", resource.kind + "List"},
                           {"metadata", metadata},
                           {"items", items}});
  }

  void watch(const std::shared_ptr<Session>& session, std::map<std::string, std::string>& query) {
    const std::string& version_text = query["resourceVersion"];
    int from = version_text.empty() || version_text == "0" ? -1 : std::stoi(version_text);
    int timeout_seconds = query["timeoutSeconds"].empty() ? 1800 : std::stoi(query["timeoutSeconds"]);
    bool bookmarks = query["allowWatchBookmarks"] == "true";
    if (from >= 0 && from < oldest_watchable_) {
      json status = status_object(
          410, "Expired", "too old resource version: " + version_text + " (" + std::to_string(oldest_watchable_) + ")");
      if (options_.gone_as_http_status) return session->respond(410, status);
      session->begin_watch(std::chrono::seconds(timeout_seconds), bookmarks);
      session->send_event({{"type", "ERROR"}, {"object", status}});
      session->end_watch();
      return;
    }
    session->begin_watch(std::chrono::seconds(timeout_seconds), bookmarks);
    watches_.push_back(session);
    if (from < 0) {
      for (const auto& [name, object] : *kartas().objects) session->send_event({{"type", "ADDED"}, {"object", object}});
      return;
    }
    for (const auto& [version, event] : history_) {
      if (version > from) session->send_event(event);
    }
  }

  FakeApiServerOptions options_;
  test::TestCertificates certificates_;
  net::io_context io_;
  net::ssl::context tls_{net::ssl::context::tls_server};
  tcp::acceptor acceptor_{io_};
  unsigned short port_ = 0;
  std::thread thread_;

  // I/O thread only.
  std::vector<Served> served_;  // the kartas first; in the order served, which is the order of /apis
  int resource_version_ = 100;
  int oldest_watchable_ = 100;
  std::vector<std::pair<int, json>> history_;
  std::vector<std::weak_ptr<Session>> sessions_;
  std::vector<std::weak_ptr<Session>> watches_;
  int failures_left_ = 0;
  int failure_status_ = 500;
  std::vector<Received> received_;
};

FakeApiServer::FakeApiServer(const fs::path& dir, std::vector<json> objects, FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(dir, std::move(objects), std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

unsigned short FakeApiServer::port() const { return impl_->port(); }
const TestCertificates& FakeApiServer::certificates() const { return impl_->certificates(); }
kube::KubeConnection FakeApiServer::connection(const std::string& token) const { return impl_->connection(token); }
void FakeApiServer::add(json object) { impl_->add(std::move(object)); }
void FakeApiServer::modify(json object) { impl_->modify(std::move(object)); }
void FakeApiServer::remove(const std::string& name) { impl_->remove(name); }
void FakeApiServer::bookmark(int version) { impl_->bookmark(version); }
void FakeApiServer::compact(int version) { impl_->compact(version); }
void FakeApiServer::end_watches() { impl_->end_watches(); }
void FakeApiServer::fail_next(int count, int status) { impl_->fail_next(count, status); }
std::vector<Received> FakeApiServer::received() const { return impl_->received(); }
std::vector<std::string> FakeApiServer::targets() const { return impl_->targets(); }
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
