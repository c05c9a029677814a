#pragma once

// One TLS connection: Asio reading the socket into the connection's input buffer, OpenSSL decrypting from
// that buffer and writing to the socket's descriptor itself. Replaces Asio's ssl::stream in the server's
// sessions.
//
// Why (issue 24, item 3): Asio's SSL stream runs OpenSSL over a memory BIO pair, so every byte is copied
// between the socket and the pair, and before every OpenSSL call it clears the thread's error queue
// (`ERR_clear_error`, about 2,100 instructions in OpenSSL 3.0) and asks for it after: counted under
// callgrind on the demo JobSet review, a request made six such calls (5 reads and a write), 14,000
// instructions of the 177,000 the server spent on it. Here the error queue is emptied only when a call
// failed, so it is empty before the next one as OpenSSL requires (SSL_get_error(3)), and `read_ahead` lets
// one BIO read take everything received instead of a record's 5-byte header first.
//
// Reads go through Asio, not OpenSSL's socket BIO, because of how Asio waits: its reactor keeps the
// socket registered in epoll (edge-triggered), so a receive asked for before the request came in waits
// without re-arming it. Waiting for readability instead (`async_wait`, all a stream whose OpenSSL reads
// the descriptor itself can ask for) re-arms the socket with an `epoll_ctl` every time, about 0.3 us
// here. (Boost 1.74's Asio tries the receive once before it waits: under load the request has come in
// by then and that one recv takes it; a client slower than the server costs a recv that finds nothing
// where the epoll_ctl was.) The price: an input buffer per open connection, 4 KB while it waits and
// 16 KB while a large request comes in (Asio's ssl::stream kept two of 17 KB), and a copy of each received
// record from it into OpenSSL's record buffer.
//
// The operations are those the session uses, with Asio's completion signatures and error codes:
// async_handshake, async_read_some (net::error::eof for the peer's close_notify, ssl::error::stream_truncated
// for a connection closed without one), async_write of one or two buffers, and async_shutdown (our
// close_notify, then the peer's, or the end of the connection). Every completion is posted to the
// socket's executor, never run inside the call that started the operation, as Asio's own operations do.
// Closing the socket (the session's deadline) makes a pending read or wait, and so the operation, fail.

#include <array>
#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace karta {

class TlsStream {
 public:
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;
  using error_code = boost::system::error_code;

  // Throws std::bad_alloc when OpenSSL cannot make the connection's state, boost::system::system_error
  // when the socket cannot be made non-blocking.
  TlsStream(Socket&& socket, SSL_CTX* context);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  Socket& lowest_layer() { return socket_; }
  Socket::executor_type get_executor() { return socket_.get_executor(); }

  // handler(error_code)
  template <typename Handler>
  void async_handshake(Handler handler) {
    run([this] { return SSL_do_handshake(ssl_); },
        [handler = std::move(handler)](error_code ec, int) mutable { handler(ec); });
  }

  // handler(error_code, std::size_t bytes)
  template <typename Handler>
  void async_read_some(boost::asio::mutable_buffer buffer, Handler handler) {
    run([this, buffer] { return read(buffer); }, read_done(std::move(handler)));
  }

  // The same for a read that is not expected to find data yet: the next request on a keep-alive
  // connection, asked for just after the last response was written (its client sends it only once it has
  // that response). Unless bytes already received wait in OpenSSL or the input buffer, it goes straight
  // to Asio's receive, without asking OpenSSL first.
  template <typename Handler>
  void async_read_some_when_readable(boost::asio::mutable_buffer buffer, Handler handler) {
    if (SSL_has_pending(ssl_) == 1 || input_begin_ < input_end_) return async_read_some(buffer, std::move(handler));
    input_wanted_ = kSmallInput;  // an idle connection keeps the small buffer
    receive_then([this, buffer] { return read(buffer); }, read_done(std::move(handler)));
  }

  // Writes all of both buffers (either may be empty). handler(error_code, std::size_t bytes)
  template <typename Handler>
  void async_write(std::array<boost::asio::const_buffer, 2> buffers, Handler handler) {
    write_next(buffers, 0, 0, std::move(handler), /*in_completion=*/false);
  }

  // handler(error_code)
  template <typename Handler>
  void async_shutdown(Handler handler) {
    run([this] { return shutdown_step(); },
        [handler = std::move(handler)](error_code ec, int) mutable { handler(ec); });
  }

 private:
  enum class Want { Nothing, Read, Write };

  // The outcome of one OpenSSL call that returned `result` (> 0: done): what it waits for, or its error.
  Want outcome(int result, error_code& ec);
  int read(boost::asio::mutable_buffer buffer);
  int write(boost::asio::const_buffer buffer);
  int shutdown_step();

  // A read's handler(error_code, std::size_t bytes) as run()'s done(error_code, int).
  template <typename Handler>
  static auto read_done(Handler handler) {
    return [handler = std::move(handler)](error_code ec, int bytes) mutable {
      handler(ec, ec ? 0 : static_cast<std::size_t>(bytes));
    };
  }

  // Calls `attempt` until it is done or fails, receiving more or waiting for the socket to take more in
  // between; then posts done(error_code, attempt's result).
  template <typename Attempt, typename Done>
  void run(Attempt attempt, Done done) {
    error_code ec;
    const int result = attempt();
    const Want want = result > 0 ? Want::Nothing : outcome(result, ec);
    if (want == Want::Nothing) {
      boost::asio::post(socket_.get_executor(),
                        [done = std::move(done), ec, result]() mutable { done(ec, ec ? 0 : result); });
      return;
    }
    if (want == Want::Read) return receive_then(std::move(attempt), std::move(done));
    socket_.async_wait(Socket::wait_write,
                       [this, attempt = std::move(attempt), done = std::move(done)](error_code wait_ec) mutable {
                         if (wait_ec) return done(wait_ec, 0);
                         run(std::move(attempt), std::move(done));
                       });
  }

  // Receives what the socket has (waiting for it if need be) into the drained input buffer, then runs
  // `attempt` again. The end of the stream is given to OpenSSL (which tells a close_notify from a
  // truncation); any other error of the socket completes the operation.
  template <typename Attempt, typename Done>
  void receive_then(Attempt attempt, Done done) {
    if (input_eof_) {  // OpenSSL asks for more after the end: nothing more will come
      boost::asio::post(socket_.get_executor(), [done = std::move(done)]() mutable {
        done(boost::asio::ssl::error::stream_truncated, 0);
      });
      return;
    }
    if (input_size_ != input_wanted_) {  // drained: nothing is lost
      input_ = std::make_unique<unsigned char[]>(input_wanted_);
      input_size_ = input_wanted_;
    }
    socket_.async_read_some(
        boost::asio::buffer(input_.get(), input_size_),
        [this, attempt = std::move(attempt), done = std::move(done)](error_code ec, std::size_t bytes) mutable {
          if (ec == boost::asio::error::eof) {
            input_eof_ = true;
          } else if (ec) {
            return done(ec, 0);
          }
          input_begin_ = 0;
          input_end_ = bytes;  // 0 at the end
          if (input_end_ == input_size_) input_wanted_ = kLargeInput;  // more is coming: bigger receives
          run(std::move(attempt), std::move(done));
        });
  }

  // Writes buffers[index] on, then completes with the bytes written. in_completion: called from a posted
  // completion, where the handler may run at once.
  template <typename Handler>
  void write_next(std::array<boost::asio::const_buffer, 2> buffers, std::size_t index, std::size_t written,
                  Handler handler, bool in_completion) {
    while (index < buffers.size() && buffers[index].size() == 0) ++index;
    if (index == buffers.size()) {
      if (in_completion) return handler(error_code(), written);
      boost::asio::post(socket_.get_executor(),
                        [handler = std::move(handler), written]() mutable { handler(error_code(), written); });
      return;
    }
    const boost::asio::const_buffer buffer = buffers[index];
    run([this, buffer] { return write(buffer); },
        [this, buffers, index, written, handler = std::move(handler)](error_code ec, int) mutable {
          if (ec) return handler(ec, written);
          write_next(buffers, index + 1, written + buffers[index].size(), std::move(handler), true);
        });
  }

  // OpenSSL's read BIO, whose data is this stream: takes from input_, or asks to retry when it is empty.
  static BIO_METHOD* input_method();
  static int input_read(BIO* bio, char* out, std::size_t size, std::size_t* read);
  static long input_control(BIO* bio, int command, long number, void* pointer);

  // The input buffer: small while a connection waits for a request (most reviews fit in one receive of
  // it), as large as a TLS record once a receive filled it, until the connection waits again.
  static constexpr std::size_t kSmallInput = 4 * 1024;
  static constexpr std::size_t kLargeInput = 16 * 1024;

  Socket socket_;
  SSL* ssl_;
  std::unique_ptr<unsigned char[]> input_;  // received, not yet given to OpenSSL: [input_begin_, input_end_)
  std::size_t input_size_ = 0;
  std::size_t input_wanted_ = kSmallInput;  // the size of the next receive's buffer
  std::size_t input_begin_ = 0;
  std::size_t input_end_ = 0;
  bool input_eof_ = false;  // the peer ended the stream
};

}  // namespace karta
