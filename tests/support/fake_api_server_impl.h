#pragma once

// The inside of the fake API server (support/fake_api_server.h), for its own sources only: the resources
// it serves and one HTTPS connection (Session). fake_api_server.cpp runs the I/O thread, keeps the
// objects and their events and routes each request; fake_api_answers.cpp writes what the API server
// answers: discovery documents, objects, LIST pages, WATCH streams and RBAC denials.

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "support/fake_api_objects.h"
#include "support/fake_api_server.h"

namespace karta::test {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

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

  // The key of an object of `served`: "namespace/name", or "name" when cluster-scoped.
  static std::string key_of(const Served& served, const json& object) {
    std::string name = object.at("metadata").at("name").get<std::string>();
    if (!served.resource.namespaced) return name;
    return object["metadata"].value("namespace", "default") + "/" + name;
  }

  // The object as read through `resource`'s version.
  static json in_version(json object, const FakeResource& resource) {
    if (object.contains("apiVersion")) object["apiVersion"] = resource.api_version();
    return object;
  }

  void store(Served& served, std::vector<json> objects);

  // One connection: reads requests and writes answers, or the chunks of a watch. Its asynchronous
  // operations are defined in fake_api_session.cpp only, so that one file instantiates Beast's templates.
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(Impl& server, tcp::socket socket)
        : server_(server), stream_(std::move(socket), server.tls_), timer_(server.io_), hold_timer_(server.io_) {}

    void start();
    void close();

    const std::string& client_name() const { return client_name_; }
    bool watching() const { return watching_ && !closed_; }
    bool wants_bookmarks() const { return bookmarks_; }

    void respond(int status, const json& body) { respond_text(status, "application/json", body.dump()); }

    // What this session's watch streams: the events of one collection (its objects' map), as full objects
    // or, when its Accept asked for PartialObjectMetadata, metadata only.
    const std::map<std::string, json>* watched = nullptr;
    bool metadata_only = false;

    void respond_text(int status, const std::string& content_type, std::string body);
    // The next answer (not a watch) is sent this much later (FakeApiServer::delay_gets).
    void hold_next_answer(std::chrono::milliseconds delay) { hold_ = delay; }

    // Sends the header of a chunked 200 answer; events follow as chunks until end_watch().
    void begin_watch(std::chrono::seconds timeout, bool bookmarks);
    void send_event(const json& event);

    // The terminating chunk: the answer ends normally. The connection is then closed.
    void end_watch();

    // After an answer: unless a request comes within options.idle_408_after, a 408 and the close.
    void time_out_idle();

   private:
    void write_answer(const std::shared_ptr<http::response<http::string_body>>& response);
    void read();

    // During a watch the client sends nothing: a read that ends means it has gone.
    void watch_for_close();

    // Each event is flushed as a chunk of its own, as the API server flushes after every event.
    void write_next();

    Impl& server_;
    beast::ssl_stream<beast::tcp_stream> stream_;
    net::steady_timer timer_;
    net::steady_timer hold_timer_;  // a held answer's (hold_next_answer)
    beast::flat_buffer buffer_;
    // A request head as its bytes came, read before Beast's parser is given them (raw_heads()).
    std::string head_bytes_;
    http::request<http::string_body> request_;
    std::string client_name_;
    std::deque<std::optional<std::string>> outgoing_;  // nullopt: the last chunk
    std::array<char, 64> probe_{};
    bool writing_ = false;
    bool watching_ = false;
    bool bookmarks_ = false;
    bool closed_ = false;
    std::size_t answers_ = 0;  // written on this connection
    std::chrono::milliseconds hold_{0};
  };

 public:
  Impl(const fs::path& dir, std::vector<json> objects, FakeApiServerOptions options = {});
  ~Impl();

  unsigned short port() const { return port_; }
  const test::TestCertificates& certificates() const { return certificates_; }

  // A connection to this server with `token`.
  kube::KubeConnection connection(const std::string& token = "sesame") const;

  void add(json object);
  void modify(json object);
  void remove(const std::string& name);
  void write(const std::string& group, const std::string& plural, const std::string& type, json object);
  void remove_from(const std::string& group, const std::string& plural, const std::string& key);
  void bookmark(int version);
  void compact(int version);
  void end_watches();
  void fail_next(int count, int status);
  void set_token(const std::string& token);
  void make_unavailable(const std::string& group, const std::string& version);
  void delay_gets(const std::string& target_prefix, std::chrono::milliseconds delay);

  std::vector<Received> received() const;
  std::vector<std::string> raw_heads() const;
  void answer_raw(const std::string& path, int status, std::string body);
  std::vector<std::string> targets() const;
  std::size_t connections() const;
  std::size_t open_watches() const;

  void serve(FakeResource resource, std::vector<json> objects);
  void add_objects(const std::string& group, const std::string& plural, std::vector<json> objects);
  void forbid(const std::string& group, const std::string& plural, const std::string& namespace_name);

 private:
  // In fake_api_server.cpp: the I/O thread, the connections, the kartas' events and the routing.
  template <class F>
  auto on_io(F&& f) const -> decltype(f());
  void accept();
  std::vector<std::shared_ptr<Session>> live_watches() const;
  void end_all_watches();
  void publish(Served& served, const std::string& type, json object);
  // An event as `session` asked for it: nothing when it watches another collection.
  static void send_to(Session& session, const std::map<std::string, json>* objects, const json& event);
  void handle(const std::shared_ptr<Session>& session, const http::request<http::string_body>& request);

  // A request for a collection or one object of a served resource.
  struct Target {
    Served* served;
    std::string namespace_name;  // "" for all namespaces, or a cluster-scoped resource
    std::string name;            // "" for the collection
  };
  std::optional<Target> resolve(const std::string& path);

  // In fake_api_answers.cpp: what the API server answers.
  void serve_resource(const std::shared_ptr<Session>& session, const Target& target, const std::string& accept,
                      std::map<std::string, std::string>& query);
  bool forbidden(const Served& served, const std::string& namespace_name) const;
  json forbidden_status(const FakeResource& resource, const std::string& verb, const std::string& namespace_name,
                        const std::string& name) const;
  std::optional<json> discovery(const std::string& path) const;
  std::optional<json> resource_list(const std::string& group, const std::string& version) const;
  std::vector<std::string> group_names() const;
  std::vector<std::string> group_versions(const std::string& group) const;
  json api_group(const std::string& group) const;
  void list(const std::shared_ptr<Session>& session, const Served& served, const std::string& namespace_name,
            const std::optional<LabelSelector>& selector, std::map<std::string, std::string>& query, bool metadata_only);
  void watch(const std::shared_ptr<Session>& session, const Served& served, std::map<std::string, std::string>& query,
             bool metadata_only);

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
  struct Past {
    int version;
    const std::map<std::string, json>* objects;  // the collection
    json event;
  };
  std::vector<Past> history_;
  std::vector<std::weak_ptr<Session>> sessions_;
  std::vector<std::weak_ptr<Session>> watches_;
  int failures_left_ = 0;
  int failure_status_ = 500;
  std::set<std::string> unavailable_;  // group versions: "/apis/GROUP/VERSION"
  std::vector<Received> received_;
  std::vector<std::string> raw_heads_;
  std::map<std::string, std::pair<int, std::string>> raw_answers_;  // by path
  std::map<std::string, std::chrono::milliseconds> get_delays_;     // by target prefix
};

}  // namespace karta::test
