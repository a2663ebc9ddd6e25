// The HTTP/1.1 listener behind http_server.h: the Responder a handler
// answers through, the ServerImpl (TLS setup, listening, accepting, the
// shutdown) and HttpServer::Start. The classes, and the listener's design
// notes, are in http_connection.h; Connection's methods in
// http_connection.cc.
#include "service/http_server.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "base/log.h"
#include "service/http_connection.h"

namespace understudy {
namespace service {

absl::string_view HttpRequest::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

namespace http_internal {
namespace {

// Pause before accepting again after an accept error such as EMFILE.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// How long Shutdown waits for the connections to run their own Close before
// it stops the io_context regardless.
constexpr absl::Duration kCloseGrace = absl::Seconds(2);

}  // namespace

std::string DefaultErrorBody(int status, absl::string_view message) {
  absl::string_view code = "bad_request";
  if (status == 413) code = "body_too_large";
  if (status == 431) code = "headers_too_large";
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') {
      escaped.push_back('\\');
      escaped.push_back(c);
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      escaped.push_back(c);
    }
  }
  return absl::StrCat(R"({"error":{"message":")", escaped,
                      R"(","type":"invalid_request_error","code":")", code, R"("}})");
}

// ---------------------------------------------------------------------------
// Responder

template <typename F>
void Responder::Post(F fn) {
  posted_ = true;
  gate_->IfOpen([&] {
    // Destroyed before the gate's lock is released: if it is the last
    // reference, the connection dies while the io_context is alive.
    std::shared_ptr<Connection> connection = connection_.lock();
    if (!connection) return;
    const net::any_io_executor& executor = connection->executor();
    net::post(executor, [connection, fn = std::move(fn)]() mutable { fn(*connection); });
  });
}

template <typename F>
Connection* Responder::InlineOrPost(F& fn) {
  if (!posted_ && t_dispatching != nullptr) {
    // Locked, not compared by address: a connection that died may have left
    // its address to the one being dispatched.
    std::shared_ptr<Connection> connection = connection_.lock();
    // Alive after this reference goes: Dispatch's caller holds another.
    if (connection.get() == t_dispatching && connection->dispatching()) return connection.get();
  }
  Post(std::move(fn));
  return nullptr;
}

Responder::~Responder() {
  absl::MutexLock lock(&mu_);
  const bool abandoned =
      !client_gone_ && !aborted_ && (phase_ == Phase::kFresh || phase_ == Phase::kStreaming);
  if (!abandoned) return;
  const uint64_t id = id_;
  Post([id](Connection& c) { c.DoAbandon(id); });
}

// Each call below decides under mu_ and, when the handler is calling it
// from Dispatch, runs on the connection after releasing mu_ (InlineOrPost).

void Responder::Respond(int status, HttpHeaders headers, std::string body) {
  auto call = [id = id_, status, headers = std::move(headers),
               body = std::move(body)](Connection& c) mutable {
    c.DoRespond(id, status, std::move(headers), std::move(body));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kFresh || client_gone_ || aborted_) return;
    phase_ = Phase::kEnding;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::StartStream(int status, HttpHeaders headers) {
  auto call = [id = id_, status, headers = std::move(headers)](Connection& c) mutable {
    c.DoStartStream(id, status, std::move(headers));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kFresh || client_gone_ || aborted_) return;
    phase_ = Phase::kStreaming;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::Write(std::string data, absl::Time not_before) {
  const SteadyClock::time_point when = ToSteady(not_before);
  auto call = [id = id_, data = std::move(data), when](Connection& c) mutable {
    c.DoWrite(id, std::move(data), when);
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::WriteFrom(std::shared_ptr<HttpSource> source) {
  if (source == nullptr) return;
  auto call = [id = id_, source = std::move(source)](Connection& c) mutable {
    c.DoWriteFrom(id, std::move(source));
  };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::End() {
  auto call = [id = id_](Connection& c) { c.DoEnd(id); };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kStreaming || client_gone_ || aborted_) return;
    phase_ = Phase::kEnding;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::Abort() {
  auto call = [id = id_](Connection& c) { c.DoAbort(id); };
  std::function<void()> dropped;  // Released outside the lock.
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ == Phase::kDone || client_gone_ || aborted_) return;
    aborted_ = true;
    phase_ = Phase::kDone;
    dropped = std::move(on_cancel_);
    on_cancel_ = nullptr;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

bool Responder::cancelled() const {
  absl::MutexLock lock(&mu_);
  return client_gone_ || aborted_;
}

void Responder::OnCancel(std::function<void()> callback) {
  {
    absl::MutexLock lock(&mu_);
    if (!client_gone_) {
      // Kept only while it can still run.
      if (phase_ != Phase::kDone && !aborted_) on_cancel_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void Responder::SetLabel(absl::string_view label) {
  auto call = [id = id_, label](Connection& c) { c.DoSetLabel(id, label); };
  Connection* now;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ == Phase::kDone || client_gone_ || aborted_) return;
    now = InlineOrPost(call);
  }
  if (now != nullptr) now->RunInline(call);
}

void Responder::MarkComplete() {
  std::function<void()> dropped;
  absl::MutexLock lock(&mu_);
  phase_ = Phase::kDone;
  dropped = std::move(on_cancel_);  // Released outside the lock.
  on_cancel_ = nullptr;
}

void Responder::MarkClientGone() {
  std::function<void()> callback;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ == Phase::kDone || client_gone_ || aborted_) return;
    client_gone_ = true;
    callback = std::move(on_cancel_);
    on_cancel_ = nullptr;
  }
  if (callback) callback();
}

// ---------------------------------------------------------------------------
// ServerImpl

absl::Status ServerImpl::ConfigureTls() {
  if (options_.tls_cert_pem.empty() && options_.tls_key_pem.empty()) return absl::OkStatus();
  if (options_.tls_cert_pem.empty() || options_.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a private key");
  }
  auto context = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  // TLS 1.2 and newer only.
  context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                       net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                       net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
  beast::error_code ec;
  context->use_certificate_chain(net::buffer(options_.tls_cert_pem), ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS certificate: ", ec.message()));
  context->use_private_key(net::buffer(options_.tls_key_pem), net::ssl::context::pem, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS private key: ", ec.message()));
  tls_ = std::move(context);
  return absl::OkStatus();
}

absl::Status ServerImpl::Listen(const tcp::endpoint& endpoint, int threads) {
  ioc_ = std::make_unique<net::io_context>(threads);
  acceptor_ = std::make_unique<tcp::acceptor>(net::make_strand(*ioc_));
  accept_backoff_ = std::make_unique<net::steady_timer>(acceptor_->get_executor());
  beast::error_code ec;
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(net::socket_base::max_listen_connections, ec);
  tcp::endpoint bound;
  if (!ec) bound = acceptor_->local_endpoint(ec);
  if (ec) {
    const std::string where =
        endpoint.address().is_v6()
            ? absl::StrCat("[", endpoint.address().to_string(), "]:", endpoint.port())
            : absl::StrCat(endpoint.address().to_string(), ":", endpoint.port());
    acceptor_.reset();
    accept_backoff_.reset();
    ioc_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  port_ = bound.port();
  address_ = bound.address().is_v6() ? absl::StrCat("[", bound.address().to_string(), "]:", port_)
                                     : absl::StrCat(bound.address().to_string(), ":", port_);
  work_.emplace(ioc_->get_executor());
  net::post(acceptor_->get_executor(), [this] { Accept(); });
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([ioc = ioc_.get()] { ioc->run(); });
  }
  return absl::OkStatus();
}

void ServerImpl::Accept() {
  if (!acceptor_->is_open()) return;
  acceptor_->async_accept(
      net::make_strand(*ioc_),
      [this](beast::error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void ServerImpl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_->is_open()) return;
  if (ec) {
    // E.g. EMFILE: the listener must survive it. A connection aborted by
    // its client is retried at once; anything else after a pause.
    Log(LogLevel::kWarning, "http_accept_failed", {{"error", ec.message()}});
    if (ec == net::error::connection_aborted) return Accept();
    accept_backoff_->expires_after(kAcceptBackoff);
    accept_backoff_->async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::shared_ptr<Connection> connection;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // The socket closes as it goes out of scope.
    connection = std::make_shared<Connection>(this, std::move(socket), tls_.get());
    connections_.emplace(connection.get(), connection);
  }
  connection->PostStart();
  Accept();
}

void ServerImpl::Forget(Connection* connection) {
  std::shared_ptr<Connection> dropped;  // Released outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  dropped = std::move(it->second);
  connections_.erase(it);
}

std::vector<std::shared_ptr<Connection>> ServerImpl::Connections() {
  std::vector<std::shared_ptr<Connection>> out;
  absl::MutexLock lock(&mu_);
  out.reserve(connections_.size());
  for (const auto& [key, connection] : connections_) out.push_back(connection);
  return out;
}

void ServerImpl::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      // Another call is (or was) shutting down: wait for it to finish.
      mu_.Await(absl::Condition(&shutdown_done_));
      return;
    }
    stopping_ = true;
    if (ioc_ == nullptr) {  // Never listened.
      shutdown_done_ = true;
      return;
    }
  }
  // Stop accepting, and stop reading new requests: idle connections close
  // now, busy ones after their answer.
  net::post(acceptor_->get_executor(), [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    accept_backoff_->cancel();
  });
  for (const auto& connection : Connections()) connection->PostStopping();
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](int* n) { return *n == 0; }, &in_flight_),
                          deadline);
  }
  // From here on responders are ignored; close whatever is still open
  // (a still-unanswered request's responder sees the client gone).
  gate_->Close();
  for (const auto& connection : Connections()) connection->PostClose();
  {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](std::unordered_map<Connection*, std::shared_ptr<Connection>>* c) {
                                return c->empty();
                              },
                              &connections_),
                          Env::Default()->Now() + kCloseGrace);
  }
  work_.reset();
  ioc_->stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  std::unordered_map<Connection*, std::shared_ptr<Connection>> leftover;
  {
    absl::MutexLock lock(&mu_);
    leftover.swap(connections_);
  }
  leftover.clear();
  accept_backoff_.reset();
  acceptor_.reset();
  ioc_.reset();  // Destroys unrun handlers and the connections they hold.
  absl::MutexLock lock(&mu_);
  shutdown_done_ = true;
}

}  // namespace http_internal

namespace {

// HttpServer::Start's names from the listener's internals.
namespace net = http_internal::net;
namespace beast = http_internal::beast;
using http_internal::ServerImpl;
using http_internal::tcp;

// Splits "host:port" / "[v6]:port"; false when it does not parse.
bool SplitHostPort(absl::string_view listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) return false;
  absl::string_view h = listen.substr(0, colon);
  const absl::string_view p = listen.substr(colon + 1);
  if (!h.empty() && h.front() == '[') {
    if (h.size() < 2 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != absl::string_view::npos) {
    return false;
  }
  int value;
  if (p.empty() || !absl::SimpleAtoi(p, &value) || value < 0 || value > 65535) return false;
  *host = h.empty() ? "0.0.0.0" : std::string(h);
  *port = value;
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler) {
  if (!handler) return absl::InvalidArgumentError("HttpServer needs a handler");
  std::string host;
  int port = 0;
  if (!SplitHostPort(options.listen, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address \"", options.listen, "\" is not host:port"));
  }
  tcp::endpoint endpoint;
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(port));
  } else {
    // A name such as "localhost": take its first address.
    net::io_context resolver_context;
    tcp::resolver resolver(resolver_context);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve \"", host, "\": ", ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  int threads = options.threads;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  auto server = std::make_unique<ServerImpl>(options, std::move(handler));
  if (absl::Status status = server->ConfigureTls(); !status.ok()) return status;
  if (absl::Status status = server->Listen(endpoint, threads); !status.ok()) return status;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace service
}  // namespace understudy
