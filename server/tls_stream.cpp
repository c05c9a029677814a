#include "server/tls_stream.h"

#include <cerrno>
#include <climits>
#include <new>

#include <boost/asio/error.hpp>

namespace karta {

namespace net = boost::asio;

TlsStream::TlsStream(Socket&& socket, SSL_CTX* context) : socket_(std::move(socket)), ssl_(nullptr) {
  socket_.non_blocking(true);  // OpenSSL's reads and writes return at once; Asio waits for readiness
  ssl_ = SSL_new(context);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, static_cast<int>(socket_.native_handle())) != 1) {
    SSL_free(ssl_);  // only an allocation can fail here
    ERR_clear_error();
    throw std::bad_alloc();
  }
  SSL_set_accept_state(ssl_);
  // One recv takes what has arrived (a whole request's record, usually), not a record's 5-byte header
  // first and its body in a second call.
  SSL_set_read_ahead(ssl_, 1);
  // As Asio's stream: an idle connection gives its read and write buffers (about 34 KB) back.
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

int TlsStream::read(net::mutable_buffer buffer) {
  std::size_t bytes = 0;
  const std::size_t size = buffer.size() > INT_MAX ? INT_MAX : buffer.size();
  if (SSL_read_ex(ssl_, buffer.data(), size, &bytes) != 1) return -1;
  return static_cast<int>(bytes);
}

int TlsStream::write(net::const_buffer buffer) {
  std::size_t bytes = 0;
  return SSL_write_ex(ssl_, buffer.data(), buffer.size(), &bytes) == 1 ? 1 : -1;
}

int TlsStream::shutdown_step() {
  // 0: our close_notify is sent and the peer's not yet read; asked again, 1 once it is, or a want.
  int result = SSL_shutdown(ssl_);
  if (result == 0) result = SSL_shutdown(ssl_);
  return result;
}

TlsStream::Want TlsStream::outcome(int result, error_code& ec) {
  const int saved_errno = errno;
  const int error = SSL_get_error(ssl_, result);
  switch (error) {
    case SSL_ERROR_WANT_READ:
      return Want::Read;
    case SSL_ERROR_WANT_WRITE:
      return Want::Write;
    case SSL_ERROR_ZERO_RETURN:  // the peer's close_notify
      ec = net::error::eof;
      break;
    case SSL_ERROR_SYSCALL: {
      const unsigned long code = ERR_get_error();
      if (code != 0) {
        ec = error_code(static_cast<int>(code), net::error::get_ssl_category());
      } else if (saved_errno != 0) {
        ec = error_code(saved_errno, boost::system::system_category());
      } else {
        ec = net::ssl::error::stream_truncated;  // the connection ended without a close_notify
      }
      break;
    }
    case SSL_ERROR_SSL: {
      const unsigned long code = ERR_get_error();
      if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ec = net::ssl::error::stream_truncated;  // OpenSSL 3's word for the same
      } else {
        ec = error_code(static_cast<int>(code), net::error::get_ssl_category());
      }
      break;
    }
    default:
      ec = error_code(error, net::error::get_ssl_category());
  }
  // What failed leaves its errors queued: emptied now, the queue is empty before the next call.
  ERR_clear_error();
  return Want::Nothing;
}

}  // namespace karta
