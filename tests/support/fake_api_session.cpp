// One connection of the fake API server (support/fake_api_server_impl.h): the TLS handshake, reading
// requests, writing answers and a watch's chunks. Beast's asynchronous operations are instantiated in this
// file alone; the files that decide what to answer only call these functions.
#include "support/fake_api_server_impl.h"

#include <sstream>

#include <boost/asio/read_until.hpp>

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
  hold_timer_.cancel();
  beast::get_lowest_layer(stream_).close();
}

void FakeApiServer::Impl::Session::respond_text(int status, const std::string& content_type, std::string body) {
  auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
  response->set(http::field::content_type, content_type);
  response->body() = std::move(body);
  response->keep_alive(request_.keep_alive());
  response->prepare_payload();
  if (hold_.count() > 0) {
    // Made now, sent later: the answer is what the server held when the request came.
    hold_timer_.expires_after(std::exchange(hold_, {}));
    hold_timer_.async_wait([self = shared_from_this(), response](beast::error_code ec) {
      if (!ec) self->write_answer(response);
    });
    return;
  }
  write_answer(response);
}

void FakeApiServer::Impl::Session::write_answer(const std::shared_ptr<http::response<http::string_body>>& response) {
  if (closed_) return;
  auto written = [self = shared_from_this(), keep_alive = response->keep_alive()](beast::error_code ec, std::size_t) {
    if (ec || !keep_alive || self->server_.options_.close_after_answer) return self->close();
    self->read();
    if (self->server_.options_.idle_408_after.count() > 0) self->time_out_idle();
  };
  if (answers_++ == 0 && server_.options_.unsolicited_403_after_first_answer) {
    // The answer and the unsolicited one in a single write, so that they reach the client together.
    http::response<http::string_body> unsolicited(http::status::forbidden, 11);
    unsolicited.set(http::field::content_type, "application/json");
    unsolicited.body() = status_object(403, "Forbidden", "unsolicited: this answers nothing that was asked").dump();
    unsolicited.prepare_payload();
    std::ostringstream both;
    both << *response << unsolicited;
    auto bytes = std::make_shared<std::string>(both.str());
    net::async_write(stream_, net::buffer(*bytes),
                     [bytes, written](beast::error_code ec, std::size_t n) { written(ec, n); });
    return;
  }
  http::async_write(stream_, *response, [response, written](beast::error_code ec, std::size_t n) { written(ec, n); });
}

void FakeApiServer::Impl::Session::time_out_idle() {
  timer_.expires_after(server_.options_.idle_408_after);
  timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->closed_) return;
    // Go's net/http server's words for it (server.go: "408 Request Timeout" with errorHeaders).
    auto bytes = std::make_shared<std::string>(
        "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        "408 Request Timeout");
    net::async_write(self->stream_, net::buffer(*bytes), [self, bytes](beast::error_code, std::size_t) { self->close(); });
  });
}

void FakeApiServer::Impl::Session::begin_watch(std::chrono::seconds timeout, bool bookmarks) {
  hold_ = {};
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
  // The head is read to its blank line and kept as it came, then handed to Beast's parser. Asio's
  // read_until takes a Beast buffer by value (a copy), so it reads into a string of ours, which starts
  // with whatever the last request left unread.
  head_bytes_.clear();
  if (buffer_.size() != 0) head_bytes_.assign(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  net::async_read_until(stream_, net::dynamic_buffer(head_bytes_), "\r\n\r\n",
                        [self = shared_from_this()](beast::error_code ec, std::size_t head) {
    if (ec) return self->close();
    self->timer_.cancel();  // a request came: not idle
    self->server_.raw_heads_.emplace_back(self->head_bytes_.data(), head);
    const std::size_t read = self->head_bytes_.size();
    self->buffer_.commit(net::buffer_copy(self->buffer_.prepare(read), net::buffer(self->head_bytes_)));
    self->head_bytes_.clear();
    http::async_read(self->stream_, self->buffer_, self->request_, [self](beast::error_code read_ec, std::size_t) {
      if (read_ec) return self->close();
      self->server_.handle(self, self->request_);
    });
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
