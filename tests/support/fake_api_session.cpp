// One connection of the fake API server (support/fake_api_server_impl.h): the TLS handshake, reading
// requests, writing answers and a watch's chunks. Beast's asynchronous operations are instantiated in this
// file alone; the files that decide what to answer only call these functions.
#include "support/fake_api_server_impl.h"

namespace karta::test {

void FakeApiServer::Impl::Session::start() {
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

void FakeApiServer::Impl::Session::close() {
  if (closed_) return;
  closed_ = true;
  watching_ = false;
  timer_.cancel();
  beast::get_lowest_layer(stream_).close();
}

void FakeApiServer::Impl::Session::respond_text(int status, const std::string& content_type, std::string body) {
  auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
  response->set(http::field::content_type, content_type);
  response->body() = std::move(body);
  response->keep_alive(request_.keep_alive());
  response->prepare_payload();
  http::async_write(stream_, *response, [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
    if (ec || !response->keep_alive() || self->server_.options_.close_after_answer) return self->close();
    self->read();
  });
}

void FakeApiServer::Impl::Session::begin_watch(std::chrono::seconds timeout, bool bookmarks) {
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

void FakeApiServer::Impl::Session::send_event(const json& event) {
  if (!watching()) return;
  outgoing_.push_back(event.dump() + "\n");  // the API server's JSON encoder ends each event with a newline
  write_next();
}

void FakeApiServer::Impl::Session::end_watch() {
  if (!watching()) return;
  watching_ = false;
  timer_.cancel();
  outgoing_.push_back(std::nullopt);
  write_next();
}

void FakeApiServer::Impl::Session::read() {
  request_ = {};
  http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) return self->close();
    self->server_.handle(self, self->request_);
  });
}

void FakeApiServer::Impl::Session::watch_for_close() {
  stream_.async_read_some(net::buffer(probe_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) return self->close();
    self->watch_for_close();
  });
}

void FakeApiServer::Impl::Session::write_next() {
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

}  // namespace karta::test
