#pragma once

// An HTTP/1 request parser that keeps what the server reads of a request and nothing else: the request
// line, Content-Type, Expect and the body. Beast's basic_parser still does the parsing and the framing
// (Content-Length, chunked, keep-alive, the header and body limits); Beast's own request_parser would
// also keep every field in a basic_fields container, one allocation each, looked up again by name: this
// saves about 1,900 instructions of a request's 110,000 (callgrind, the demo review over TLS keep-alive).
//
// One parser per message, as with Beast's (a basic_parser cannot be reused).

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/optional.hpp>

namespace karta {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  using verb = boost::beast::http::verb;

  verb method() const { return method_; }
  std::string_view method_string() const { return method_string_; }
  std::string_view target() const { return target_; }
  unsigned version() const { return version_; }  // 10 or 11, as Beast's messages give it
  // The first Content-Type and Expect fields, empty when absent (as basic_fields' operator[] gives them).
  std::string_view content_type() const { return content_type_; }
  std::string_view expect() const { return expect_; }
  // The body, moved out once the message is done.
  std::string release_body() { return std::move(body_); }

 private:
  using error_code = boost::beast::error_code;
  using field = boost::beast::http::field;
  using beast_string_view = boost::beast::string_view;

  void on_request_impl(verb method, beast_string_view method_string, beast_string_view target, int version,
                       error_code&) override {
    method_ = method;
    method_string_.assign(method_string.data(), method_string.size());
    target_.assign(target.data(), target.size());
    version_ = static_cast<unsigned>(version);
  }
  void on_response_impl(int, beast_string_view, int, error_code&) override {}  // a request parser gets none
  void on_field_impl(field name, beast_string_view, beast_string_view value, error_code&) override {
    if (name == field::content_type && !seen_content_type_) {
      seen_content_type_ = true;
      content_type_.assign(value.data(), value.size());
    } else if (name == field::expect && !seen_expect_) {
      seen_expect_ = true;
      expect_.assign(value.data(), value.size());
    }
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) override {
    // The limit is checked before this, against the Content-Length (body_limit()).
    if (content_length) body_.reserve(static_cast<std::size_t>(*content_length));
  }
  std::size_t on_body_impl(beast_string_view body, error_code&) override {
    body_.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast_string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast_string_view body, error_code&) override {
    body_.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  verb method_ = verb::unknown;
  std::string method_string_;
  std::string target_;
  unsigned version_ = 0;
  bool seen_content_type_ = false;
  bool seen_expect_ = false;
  std::string content_type_;
  std::string expect_;
  std::string body_;
};

}  // namespace karta
