#include "server/tls_stream.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include <boost/asio/error.hpp>

namespace karta {

namespace net = boost::asio;

BIO_METHOD* TlsStream::input_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "karta-webhook input");
    if (m == nullptr || BIO_meth_set_read_ex(m, &TlsStream::input_read) != 1 ||
        BIO_meth_set_ctrl(m, &TlsStream::input_control) != 1) {
      throw std::bad_alloc();
    }
    return m;
  }();
  return method;
}

int TlsStream::input_read(BIO* bio, char* out, std::size_t size, std::size_t* read) {
  auto* self = static_cast<TlsStream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  *read = 0;
  const std::size_t available = self->input_end_ - self->input_begin_;
  if (available == 0) {
    if (!self->input_eof_) BIO_set_retry_read(bio);  // after the end: a read of nothing, without retry
    return 0;
  }
  const std::size_t n = size < available ? size : available;
  std::memcpy(out, self->input_.get() + self->input_begin_, n);
  self->input_begin_ += n;
  *read = n;
  return 1;
}

long TlsStream::input_control(BIO*, int command, long, void*) {
  return command == BIO_CTRL_FLUSH ? 1 : 0;  // nothing else applies to a source
}

TlsStream::TlsStream(Socket&& socket, SSL_CTX* context) : socket_(std::move(socket)), ssl_(nullptr) {
  socket_.non_blocking(true);  // OpenSSL's writes return at once; Asio waits for readiness
  ssl_ = SSL_new(context);
  BIO* input = ssl_ != nullptr ? BIO_new(input_method()) : nullptr;
  // Writes go to the descriptor (a socket BIO); reads come from the input buffer.
  if (input == nullptr || SSL_set_wfd(ssl_, static_cast<int>(socket_.native_handle())) != 1) {
    BIO_free(input);  // only an allocation can fail here
    SSL_free(ssl_);
    ERR_clear_error();
    throw std::bad_alloc();
  }
  BIO_set_data(input, this);
  BIO_set_init(input, 1);
  SSL_set0_rbio(ssl_, input);  // owned by ssl_ from here
  SSL_set_accept_state(ssl_);
  // One BIO read takes what has arrived (a whole request's record, usually), not a record's 5-byte header
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
