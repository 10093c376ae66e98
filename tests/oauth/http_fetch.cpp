// SPDX-License-Identifier: Apache-2.0
// httplib_fetcher (docs/oauth.md#keys-and-rotation) against a loopback cpp-httplib server.
#include <doctest/doctest.h>

#include <mcpcore/transport/http_fetch.hpp>

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <string>
#include <system_error>
#include <thread>

using mcpcore::transport::fetch_request;
using mcpcore::transport::httplib_fetcher;

namespace {

// A cpp-httplib server on an ephemeral loopback port, listening on its own thread.
class loopback_server {
 public:
  loopback_server() {
    server.Get("/jwks", [](const httplib::Request& /*req*/, httplib::Response& res) {
      res.set_content(R"({"keys":[]})", "application/jwk-set+json");
    });
    server.Get("/teapot", [](const httplib::Request& /*req*/, httplib::Response& res) {
      res.status = 418;
      res.set_content("short and stout", "text/plain");
    });
    server.Get("/big", [](const httplib::Request& /*req*/, httplib::Response& res) {
      res.set_content(std::string(1000, 'x'), "text/plain");
    });
    server.Get("/chunked", [](const httplib::Request& /*req*/, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [](std::size_t offset, httplib::DataSink& sink) {
        if (offset >= 4000) {
          sink.done();
          return true;
        }
        const std::string chunk(100, 'y');
        return sink.write(chunk.data(), chunk.size());
      });
    });
    server.Get("/moved", [](const httplib::Request& /*req*/, httplib::Response& res) {
      res.set_redirect("/jwks");
    });
    server.Get("/stall", [this](const httplib::Request& /*req*/, httplib::Response& res) {
      release.wait();  // until the test has seen the client time out
      res.set_content("late", "text/plain");
    });
    server.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.get_header_value("Content-Type") + "|" + req.body, "text/plain");
    });
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;
  ~loopback_server() {
    released.set_value();
    server.stop();
    thread.join();
  }
  [[nodiscard]] std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }

  httplib::Server server;
  std::promise<void> released;
  std::shared_future<void> release = released.get_future().share();
  int port = 0;
  std::thread thread;
};

fetch_request get(std::string url) {
  fetch_request r;
  r.url = std::move(url);
  r.timeout = std::chrono::seconds{10};
  return r;
}

}  // namespace

TEST_CASE("oauth.md/keys-and-rotation: httplib_fetcher returns the status and body of a loopback server") {
  loopback_server s;
  const auto fetch = httplib_fetcher();
  const auto ok = fetch(get(s.url("/jwks")));
  REQUIRE(ok.has_value());
  CHECK(ok->status == 200);
  CHECK(ok->content_type == "application/jwk-set+json");
  CHECK(ok->body == R"({"keys":[]})");
  const auto teapot = fetch(get(s.url("/teapot")));
  REQUIRE(teapot.has_value());
  CHECK(teapot->status == 418);
  CHECK(teapot->body == "short and stout");
  // Redirects are answers, not followed.
  const auto moved = fetch(get(s.url("/moved")));
  REQUIRE(moved.has_value());
  CHECK(moved->status == 302);
  auto post = get(s.url("/echo"));
  post.method = "POST";
  post.content_type = "application/x-www-form-urlencoded";
  post.body = "token=abc";
  const auto echoed = fetch(post);
  REQUIRE(echoed.has_value());
  CHECK(echoed->body == "application/x-www-form-urlencoded|token=abc");
}

TEST_CASE("oauth.md/keys-and-rotation: httplib_fetcher refuses a body over max_body_bytes") {
  loopback_server s;
  const auto fetch = httplib_fetcher();
  auto big = get(s.url("/big"));
  big.max_body_bytes = 999;
  const auto refused = fetch(big);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error() == std::errc::message_size);
  big.max_body_bytes = 1000;
  const auto fits = fetch(big);
  REQUIRE(fits.has_value());
  CHECK(fits->body.size() == 1000);
  // Without a Content-Length, the cap holds while the chunks are read.
  auto chunked = get(s.url("/chunked"));
  chunked.max_body_bytes = 1050;
  const auto cut = fetch(chunked);
  REQUIRE_FALSE(cut.has_value());
  CHECK(cut.error() == std::errc::message_size);
}

TEST_CASE("oauth.md/keys-and-rotation: httplib_fetcher gives up after the request's timeout") {
  loopback_server s;
  const auto fetch = httplib_fetcher();
  auto stall = get(s.url("/stall"));
  stall.timeout = std::chrono::milliseconds{200};
  const auto r = fetch(stall);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == std::errc::timed_out);
}

TEST_CASE("oauth.md/keys-and-rotation: httplib_fetcher refuses plain http to a host that is not loopback") {
  const auto fetch = httplib_fetcher();
  const auto r = fetch(get("http://as.example.com/jwks"));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == std::errc::permission_denied);
  for (const char* bad : {"ftp://as.example.com/jwks", "https://user:pw@as.example.com/jwks",
                          "https://as.example.com/jwks#frag", "https:///jwks", "https://as.example.com/a b"}) {
    CAPTURE(bad);
    const auto refused = fetch(get(bad));
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error() == std::errc::invalid_argument);
  }
  // A closed loopback port: the attempt is made and fails as a refused connection.
  mcpcore::transport::httplib_fetcher_options o;
  o.allow_http = true;
  const auto attempt = httplib_fetcher(o)(get("http://127.0.0.1:1/jwks"));
  REQUIRE_FALSE(attempt.has_value());
  CHECK(attempt.error() == std::errc::connection_refused);
}

TEST_CASE("oauth.md/keys-and-rotation: parse_http_url takes apart the URLs httplib_fetcher fetches") {
  using mcpcore::transport::is_loopback_host;
  using mcpcore::transport::parse_http_url;
  const auto full = parse_http_url("HTTPS://[::1]:8443/a/b?c=d");
  REQUIRE(full.has_value());
  CHECK(full->https);
  CHECK(full->authority == "[::1]:8443");
  CHECK(full->host == "::1");
  CHECK(full->path_and_query == "/a/b?c=d");
  const auto bare = parse_http_url("http://as.example.com:80");
  REQUIRE(bare.has_value());
  CHECK_FALSE(bare->https);
  CHECK(bare->host == "as.example.com");
  CHECK(bare->path_and_query.empty());
  CHECK(parse_http_url("http://as.example.com?x=1")->path_and_query == "?x=1");
  for (const char* bad : {"ftp://as.example.com/", "https://", "https://user@as.example.com/", "https://as.example.com/#f",
                          "https://as.example.com/a b", "https://[::1/", "https://:443/"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_http_url(bad).has_value());
  }
  CHECK(is_loopback_host("LocalHost"));
  CHECK(is_loopback_host("::1"));
  CHECK(is_loopback_host("127.0.0.2"));
  CHECK_FALSE(is_loopback_host("127.example.com"));
  CHECK_FALSE(is_loopback_host("10.0.0.1"));
}
