// SPDX-License-Identifier: Apache-2.0
// The token-introspection authenticator (docs/oauth.md#introspection): the authorization server
// played by an injected fetch (and once by a loopback cpp-httplib server), time from a manual
// clock.
#include "jwt_fixture.hpp"

#include <doctest/doctest.h>

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/introspection_authenticator.hpp>
#include <mcpcore/wire/http.hpp>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore_test_oauth;
using mcpcore::transport::fetch_request;
using mcpcore::transport::fetch_response;
using mcpcore::transport::introspection_authenticator;
using mcpcore::transport::introspection_refusal;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr std::string_view endpoint_url = "https://as.example.com/introspect";

// The authorization server's introspection endpoint, in memory: answers by the form-encoded
// token of the request body, records every request, can be held at a gate or taken down.
struct fake_as {
  std::mutex mutex;
  std::map<std::string, std::string, std::less<>> answers;  // form-encoded token -> body
  int status = 200;
  std::optional<std::errc> failure;  // the fetch fails with this
  std::vector<fetch_request> seen;
  std::optional<std::shared_future<void>> gate;
  std::atomic<int> calls{0};

  void answer(const std::string& token, std::string body) {
    const std::lock_guard lock(mutex);
    answers[token] = std::move(body);
  }
  [[nodiscard]] fetch_request last() {
    const std::lock_guard lock(mutex);
    REQUIRE_FALSE(seen.empty());
    return seen.back();
  }
};

mcpcore::transport::fetch_function fetcher(const std::shared_ptr<fake_as>& as) {
  return [as](const fetch_request& req) -> mcpcore::result<fetch_response> {
    std::optional<std::shared_future<void>> gate;
    {
      const std::lock_guard lock(as->mutex);
      as->seen.push_back(req);
      gate = as->gate;
    }
    as->calls.fetch_add(1);
    if (gate) gate->wait();
    const std::lock_guard lock(as->mutex);
    if (as->failure) return mcpcore::fail(mcpcore::error{std::make_error_code(*as->failure), "down"});
    if (req.url != endpoint_url) return fetch_response{404, "text/plain", "not found"};
    constexpr std::string_view prefix = "token=";
    const std::string_view body = req.body;
    const std::string_view token = body.substr(prefix.size(), body.find('&') - prefix.size());
    const auto it = as->answers.find(token);
    return fetch_response{as->status, "application/json", it != as->answers.end() ? it->second : R"({"active":false})"};
  };
}

// An active answer for user `alice` at `now`: valid for an hour.
claims active_answer(std::chrono::system_clock::time_point now) {
  claims c = user_claims(now);
  c.set("active", "true")
      .set("username", mcpcore_test_oauth::quoted("Alice Example"))
      .set("token_type", mcpcore_test_oauth::quoted("Bearer"));
  return c;
}

struct fixture {
  mcpcore::manual_clock clock;
  std::shared_ptr<fake_as> as = std::make_shared<fake_as>();

  mcpcore::transport::introspection_authenticator_options options() {
    mcpcore::transport::introspection_authenticator_options o;
    o.introspection_endpoint = endpoint_url;
    o.client_id = "mcp-server";
    o.client_secret = "server-secret";
    o.issuer = issuer;
    o.audience = audience;
    o.scopes = test_scopes();
    o.use_clock(mcpcore::clock_ref{clock});
    return o;
  }
  introspection_authenticator make(mcpcore::transport::introspection_authenticator_options o) {
    return must_make<introspection_authenticator>(std::move(o), fetcher(as));
  }
  introspection_authenticator make() { return make(options()); }
  [[nodiscard]] claims good() const { return active_answer(clock.system_now()); }
  [[nodiscard]] std::int64_t now() const { return seconds_of(clock.system_now()); }
};

mcpcore::http_request_view request_with(std::vector<mcpcore::http_header_view>& h) {
  mcpcore::http_request_view r;
  r.method = "POST";
  r.target = "/mcp";
  r.headers = h;
  return r;
}

// The refusal of `r`, or nullopt when it was accepted.
std::optional<introspection_refusal> why(const mcpcore::result<mcpcore::principal, introspection_refusal>& r) {
  if (r) return std::nullopt;
  return r.error();
}

std::string basic(std::string_view credentials) {
  std::string out = "Basic ";
  mcpcore::detail::base64_encode(out, credentials, mcpcore::detail::base64_alphabet::standard);
  return out;
}

}  // namespace

TEST_CASE("oauth.md/introspection: an active token gives the principal of the answer") {
  fixture f;
  f.as->answer("tok-alice", f.good().json());
  const introspection_authenticator auth = f.make();
  const auto p = auth.check("tok-alice");
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  CHECK(p->kind == mcpcore::principal_kind::human_interactive);
  CHECK(p->display_name == "Alice Example");
  CHECK(p->tier == "operator");  // the last listed grant held that names a tier
  CHECK(p->roles == std::vector<std::string>{"reader", "writer"});
  CHECK(p->scopes == std::vector<std::string>{"mcp:read", "mcp:write"});
  CHECK(p->expires == f.clock.system_now() + seconds{3600});
  CHECK_FALSE(p->assured);
  CHECK(auth.stats().accepted == 1);
  CHECK(auth.stats().introspections == 1);
  // A scope that names a lower tier only; a username with a control character is dropped.
  f.as->answer("tok-reader", f.good().set("scope", mcpcore_test_oauth::quoted("mcp:read")).set("username", mcpcore_test_oauth::quoted("a\\u0007b")).json());
  const auto reader = auth.check("tok-reader");
  REQUIRE(reader.has_value());
  CHECK(reader->tier == "readonly");
  CHECK(reader->display_name.empty());
  // No scope: admitted with the unscoped tier. No exp: it does not expire.
  f.as->answer("tok-bare", f.good().drop("scope").drop("exp").json());
  const auto bare = auth.check("tok-bare");
  REQUIRE(bare.has_value());
  CHECK(bare->tier == mcpcore::unscoped_tier);
  CHECK(bare->expires == std::chrono::system_clock::time_point::max());
}

TEST_CASE("oauth.md/introspection: the request carries the resource server's Basic credentials and the token as a form") {
  fixture f;
  auto o = f.options();
  o.client_id = "mcp server";
  o.client_secret = "s3cr:t/+%";
  o.fetch_timeout = milliseconds{1234};
  o.max_response_bytes = 4321;
  f.as->answer("abc-123", f.good().json());
  const introspection_authenticator auth = f.make(std::move(o));
  REQUIRE(auth.check("abc-123").has_value());
  const fetch_request r = f.as->last();
  CHECK(r.url == endpoint_url);
  CHECK(r.method == "POST");
  CHECK(r.content_type == "application/x-www-form-urlencoded");
  CHECK(r.body == "token=abc-123&token_type_hint=access_token");
  CHECK(r.timeout == milliseconds{1234});
  CHECK(r.max_body_bytes == 4321);
  std::optional<std::string> authorization;
  for (const auto& [name, value] : r.headers) {
    if (name == "Authorization") authorization = value;
  }
  // RFC 6749 §2.3.1: the id and the secret are form-urlencoded, then joined by ':' and encoded.
  CHECK(authorization == basic("mcp%20server:s3cr%3At%2F%2B%25"));
  // A b64token's '+', '/' and '=' are encoded in the form.
  CHECK(why(auth.check("a+b/c==")) == introspection_refusal::inactive);
  CHECK(f.as->last().body == "token=a%2Bb%2Fc%3D%3D&token_type_hint=access_token");
}

TEST_CASE("oauth.md/introspection: a client-credentials answer without sub is a service principal") {
  fixture f;
  f.as->answer("tok-cc", f.good().drop("sub").drop("username").set("scope", mcpcore_test_oauth::quoted("mcp:read")).json());
  f.as->answer("tok-same", f.good().set("sub", mcpcore_test_oauth::quoted("mcp-client")).json());
  f.as->answer("tok-none", f.good().drop("sub").drop("client_id").json());
  const introspection_authenticator auth = f.make();
  const auto p = auth.check("tok-cc");
  REQUIRE(p.has_value());
  CHECK(p->id == "mcp-client");
  CHECK(p->kind == mcpcore::principal_kind::service);
  CHECK(p->tier == "readonly");
  const auto same = auth.check("tok-same");
  REQUIRE(same.has_value());
  CHECK(same->kind == mcpcore::principal_kind::service);
  const auto none = auth.check("tok-none");
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error() == introspection_refusal::no_subject);
}

TEST_CASE("oauth.md/introspection-refusals: an inactive token is refused and remembered for negative_ttl only") {
  fixture f;
  f.as->answer("tok-revoked", R"({"active":false})");
  const introspection_authenticator auth = f.make();
  CHECK(why(auth.check("tok-revoked")) == introspection_refusal::inactive);
  for (int i = 0; i < 20; ++i) CHECK(why(auth.check("tok-revoked")) == introspection_refusal::inactive);
  CHECK(f.as->calls.load() == 1);
  CHECK(auth.stats().cache_hits == 20);
  f.clock.advance(mcpcore::transport::default_introspection_negative_ttl - milliseconds{1});
  CHECK(why(auth.check("tok-revoked")) == introspection_refusal::inactive);
  CHECK(f.as->calls.load() == 1);
  f.clock.advance(milliseconds{1});
  CHECK(why(auth.check("tok-revoked")) == introspection_refusal::inactive);
  CHECK(f.as->calls.load() == 2);
  CHECK(auth.stats().refusals(introspection_refusal::inactive) == 23);
  // With negative_ttl 0 a refusal is not remembered at all.
  auto o = f.options();
  o.negative_ttl = milliseconds{0};
  const introspection_authenticator forgetful = f.make(std::move(o));
  CHECK(why(forgetful.check("tok-revoked")) == introspection_refusal::inactive);
  CHECK(why(forgetful.check("tok-revoked")) == introspection_refusal::inactive);
  CHECK(f.as->calls.load() == 4);
  CHECK(forgetful.stats().cache_entries == 0);
}

TEST_CASE("oauth.md/introspection-cache: an accepted token is answered from the cache until positive_ttl") {
  fixture f;
  f.as->answer("tok-alice", f.good().json());
  const introspection_authenticator auth = f.make();
  REQUIRE(auth.check("tok-alice").has_value());
  const auto again = auth.check("tok-alice");
  REQUIRE(again.has_value());
  CHECK(again->id == "alice");
  CHECK(f.as->calls.load() == 1);
  CHECK(auth.stats().cache_hits == 1);
  CHECK(auth.stats().cache_entries == 1);
  // Revoked at the authorization server: still accepted until the entry lapses.
  f.as->answer("tok-alice", R"({"active":false})");
  f.clock.advance(mcpcore::transport::default_introspection_positive_ttl - milliseconds{1});
  CHECK(auth.check("tok-alice").has_value());
  CHECK(f.as->calls.load() == 1);
  f.clock.advance(milliseconds{1});
  CHECK(why(auth.check("tok-alice")) == introspection_refusal::inactive);
  CHECK(f.as->calls.load() == 2);
}

TEST_CASE("oauth.md/introspection-cache: an accepted token is remembered no longer than its exp") {
  fixture f;
  f.as->answer("tok-short", f.good().set("exp", std::to_string(f.now() + 10)).json());
  const introspection_authenticator auth = f.make();
  REQUIRE(auth.check("tok-short").has_value());
  f.clock.advance(seconds{9});
  REQUIRE(auth.check("tok-short").has_value());
  CHECK(f.as->calls.load() == 1);
  f.clock.advance(seconds{1});  // at exp, 50 s before positive_ttl would end
  CHECK(auth.check("tok-short").has_value());  // introspected again: still within the leeway
  CHECK(f.as->calls.load() == 2);
  CHECK(auth.check("tok-short").has_value());  // accepted within the leeway, but not remembered
  CHECK(f.as->calls.load() == 3);
  // The wall clock jumps past exp while the steady clock stands: the entry lapses too.
  f.as->answer("tok-jump", f.good().set("exp", std::to_string(f.now() + 40)).json());
  REQUIRE(auth.check("tok-jump").has_value());
  f.clock.set_system(f.clock.system_now() + seconds{40});
  CHECK(auth.check("tok-jump").has_value());  // within the leeway again, introspected
  CHECK(f.as->calls.load() == 5);
}

TEST_CASE("oauth.md/introspection-cache: the cache holds at most max_cache_entries tokens, the least recently used goes first") {
  fixture f;
  auto o = f.options();
  o.max_cache_entries = 3;
  const std::vector<std::string> tokens{"t0", "t1", "t2", "t3"};
  for (const std::string& t : tokens) f.as->answer(t, f.good().set("sub", mcpcore_test_oauth::quoted("user-" + t)).json());
  const introspection_authenticator auth = f.make(std::move(o));
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(auth.check(tokens[i]).has_value());
  CHECK(auth.stats().cache_entries == 3);
  REQUIRE(auth.check("t0").has_value());  // t0 is now the most recently used
  CHECK(f.as->calls.load() == 3);
  REQUIRE(auth.check("t3").has_value());  // evicts t1
  CHECK(auth.stats().cache_entries == 3);
  CHECK(auth.stats().evictions == 1);
  const auto t0 = auth.check("t0");
  REQUIRE(t0.has_value());
  CHECK(t0->id == "user-t0");
  CHECK(f.as->calls.load() == 4);
  const auto t1 = auth.check("t1");
  REQUIRE(t1.has_value());
  CHECK(t1->id == "user-t1");
  CHECK(f.as->calls.load() == 5);
  CHECK(auth.stats().cache_entries == 3);
  CHECK(auth.stats().evictions == 2);
}

TEST_CASE("oauth.md/introspection-refusals: an answer from another issuer is refused") {
  fixture f;
  f.as->answer("tok-evil", f.good().set("iss", mcpcore_test_oauth::quoted("https://evil.example.com")).json());
  f.as->answer("tok-slash", f.good().set("iss", mcpcore_test_oauth::quoted("https://as.example.com/")).json());
  f.as->answer("tok-number", f.good().set("iss", "42").json());
  f.as->answer("tok-no-iss", f.good().drop("iss").json());
  const introspection_authenticator auth = f.make();
  CHECK(why(auth.check("tok-evil")) == introspection_refusal::issuer);
  CHECK(why(auth.check("tok-slash")) == introspection_refusal::issuer);
  CHECK(why(auth.check("tok-number")) == introspection_refusal::malformed);
  CHECK(auth.check("tok-no-iss").has_value());  // iss is optional in an introspection answer
  // Refusals on the answer are remembered like inactive tokens.
  CHECK(why(auth.check("tok-evil")) == introspection_refusal::issuer);
  CHECK(f.as->calls.load() == 4);
}

TEST_CASE("oauth.md/introspection-refusals: an answer for another audience, or without aud, is refused unless require_audience is off") {
  fixture f;
  f.as->answer("tok-other", f.good().set("aud", mcpcore_test_oauth::quoted("https://other.example.com/mcp")).json());
  f.as->answer("tok-prefix", f.good().set("aud", mcpcore_test_oauth::quoted("https://mcp.example.com/")).json());
  f.as->answer("tok-array", f.good().set("aud", "[\"https://other.example.com\"," + mcpcore_test_oauth::quoted(audience) + "]").json());
  f.as->answer("tok-array-without", f.good().set("aud", R"(["https://other.example.com"])").json());
  f.as->answer("tok-wrong-type", f.good().set("aud", "[1]").json());
  f.as->answer("tok-no-aud", f.good().drop("aud").json());
  const introspection_authenticator auth = f.make();
  CHECK(why(auth.check("tok-other")) == introspection_refusal::audience);
  CHECK(why(auth.check("tok-prefix")) == introspection_refusal::audience);
  CHECK(auth.check("tok-array").has_value());
  CHECK(why(auth.check("tok-array-without")) == introspection_refusal::audience);
  CHECK(why(auth.check("tok-wrong-type")) == introspection_refusal::malformed);
  CHECK(why(auth.check("tok-no-aud")) == introspection_refusal::audience);

  auto o = f.options();
  o.require_audience = false;
  const introspection_authenticator lenient = f.make(std::move(o));
  CHECK(lenient.check("tok-no-aud").has_value());
  CHECK(why(lenient.check("tok-other")) == introspection_refusal::audience);  // a wrong aud still is
}

TEST_CASE("oauth.md/introspection-refusals: an expired or not yet valid answer is refused within the leeway") {
  fixture f;
  const std::int64_t now = f.now();
  f.as->answer("tok-expired", f.good().set("exp", std::to_string(now - 60)).json());
  f.as->answer("tok-29", f.good().set("exp", std::to_string(now - 29)).json());
  f.as->answer("tok-30", f.good().set("exp", std::to_string(now - 30)).json());
  f.as->answer("tok-nbf", f.good().set("nbf", std::to_string(now + 31)).json());
  f.as->answer("tok-nbf-30", f.good().set("nbf", std::to_string(now + 30)).json());
  f.as->answer("tok-exp-string", f.good().set("exp", mcpcore_test_oauth::quoted(std::to_string(now + 60))).json());
  f.as->answer("tok-exp-huge", f.good().set("exp", "99999999999999").json());
  const introspection_authenticator auth = f.make();
  CHECK(why(auth.check("tok-expired")) == introspection_refusal::expired);
  CHECK(auth.check("tok-29").has_value());
  CHECK(why(auth.check("tok-30")) == introspection_refusal::expired);
  CHECK(why(auth.check("tok-nbf")) == introspection_refusal::inactive);
  CHECK(auth.check("tok-nbf-30").has_value());
  CHECK(why(auth.check("tok-exp-string")) == introspection_refusal::malformed);
  CHECK(why(auth.check("tok-exp-huge")) == introspection_refusal::malformed);
  CHECK(auth.stats().refusals(introspection_refusal::expired) == 2);
}

TEST_CASE("oauth.md/introspection-refusals: no usable answer is unavailable and not remembered") {
  fixture f;
  auto o = f.options();
  o.max_response_bytes = 1024;
  const introspection_authenticator auth = f.make(std::move(o));
  const auto twice_unavailable = [&](std::string_view token) {
    const int before = f.as->calls.load();
    const bool both = why(auth.check(token)) == introspection_refusal::unavailable &&
                      why(auth.check(token)) == introspection_refusal::unavailable;
    return both && f.as->calls.load() == before + 2;
  };
  f.as->answer("tok", f.good().json());
  f.as->status = 500;
  CHECK(twice_unavailable("tok"));
  f.as->status = 401;  // the resource server's own credentials refused
  CHECK(twice_unavailable("tok"));
  f.as->status = 200;
  f.as->failure = std::errc::timed_out;
  CHECK(twice_unavailable("tok"));
  f.as->failure = std::errc::message_size;  // the fetcher cut an oversized answer off
  CHECK(twice_unavailable("tok"));
  f.as->failure.reset();
  for (const std::string& body : {std::string{"<html>busy</html>"}, std::string{R"(["active",true])"},
                                 std::string{R"({"scope":"mcp:read"})"}, std::string{R"({"active":"true"})"},
                                 std::string{R"({"active":true,"active":false})"},
                                 f.good().set("pad", mcpcore_test_oauth::quoted(std::string(1024, 'x'))).json()}) {
    CAPTURE(body);
    f.as->answer("tok", body);
    CHECK(twice_unavailable("tok"));
  }
  CHECK(auth.stats().cache_entries == 0);
  CHECK(auth.stats().introspection_failures == 20);
  CHECK(auth.stats().refusals(introspection_refusal::unavailable) == 20);
  // The authorization server recovers: the same token passes at once.
  f.as->answer("tok", f.good().json());
  CHECK(auth.check("tok").has_value());
}

TEST_CASE("oauth.md/introspection: concurrent checks of one token share one introspection") {
  fixture f;
  f.as->answer("tok-alice", f.good().json());
  std::promise<void> open;
  f.as->gate = open.get_future().share();
  const introspection_authenticator auth = f.make();
  constexpr int n = 6;
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&auth, &accepted] {
      const auto p = auth.check("tok-alice");
      if (p.has_value() && p->id == "alice") accepted.fetch_add(1);
    });
  }
  // Every check but the one introspecting waits for it; then the answer comes.
  const bool all_waiting = eventually([&] { return auth.stats().shared == n - 1; });
  open.set_value();
  for (std::thread& t : threads) t.join();
  CHECK(all_waiting);
  CHECK(accepted.load() == n);
  CHECK(f.as->calls.load() == 1);
  CHECK(auth.stats().introspections == 1);
  CHECK(auth.stats().accepted == n);
}

TEST_CASE("oauth.md/introspection: past max_inflight distinct introspections a check is refused busy") {
  fixture f;
  f.as->answer("tok-a", f.good().json());
  f.as->answer("tok-b", f.good().json());
  f.as->answer("tok-c", f.good().json());
  std::promise<void> open;
  f.as->gate = open.get_future().share();
  auto o = f.options();
  o.max_inflight = 2;
  const introspection_authenticator auth = f.make(std::move(o));
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (const char* token : {"tok-a", "tok-b"}) {
    threads.emplace_back([&auth, &accepted, token] {
      if (auth.check(token).has_value()) accepted.fetch_add(1);
    });
  }
  const bool both_under_way = eventually([&] { return f.as->calls.load() == 2; });
  const auto third = auth.check("tok-c");
  open.set_value();
  for (std::thread& t : threads) t.join();
  CHECK(both_under_way);
  REQUIRE_FALSE(third.has_value());
  CHECK(third.error() == introspection_refusal::busy);
  CHECK(auth.stats().refusals(introspection_refusal::busy) == 1);
  CHECK(accepted.load() == 2);
  CHECK(f.as->calls.load() == 2);  // busy was not sent anywhere
  {
    const std::lock_guard lock(f.as->mutex);
    f.as->gate.reset();
  }
  CHECK(auth.check("tok-c").has_value());  // not remembered: passes once there is room
}

TEST_CASE("oauth.md/introspection: revalidate says revoked after exp and indeterminate while the authorization server cannot be reached") {
  fixture f;
  f.as->answer("tok-alice", f.good().json());
  const introspection_authenticator auth = f.make();
  const auto p = auth.check("tok-alice");
  REQUIRE(p.has_value());
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::valid);
  mcpcore::principal forever = *p;
  forever.expires = std::chrono::system_clock::time_point::max();
  // The authorization server goes down: the next introspection fails.
  f.as->failure = std::errc::connection_refused;
  CHECK(why(auth.check("tok-other")) == introspection_refusal::unavailable);
  CHECK(auth.revalidate(forever) == mcpcore::credential_verdict::indeterminate);
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::indeterminate);
  // It is back: a usable answer, even a refusal, ends the doubt.
  f.as->failure.reset();
  CHECK(why(auth.check("tok-other")) == introspection_refusal::inactive);
  CHECK(auth.revalidate(forever) == mcpcore::credential_verdict::valid);
  f.clock.advance(seconds{3599});
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::valid);
  f.clock.advance(seconds{1});
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::revoked);
  // A moved-from authenticator admits nobody.
  introspection_authenticator moved = auth;
  const introspection_authenticator taken = std::move(moved);
  CHECK(why(moved.check("tok-alice")) == introspection_refusal::internal);  // NOLINT(bugprone-use-after-move)
  CHECK(moved.revalidate(forever) == mcpcore::credential_verdict::revoked);    // NOLINT(bugprone-use-after-move)
  CHECK(taken.revalidate(forever) == mcpcore::credential_verdict::valid);
}

TEST_CASE("oauth.md/introspection: authenticate reads exactly one Bearer field and checks the token before sending it") {
  fixture f;
  f.as->answer("tok-alice", f.good().json());
  const introspection_authenticator auth = f.make();
  const std::string field = "Bearer tok-alice";
  std::vector<mcpcore::http_header_view> one{{"authorization", field}};
  const auto p = auth.authenticate(request_with(one));
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  std::vector<mcpcore::http_header_view> two{{"Authorization", field}, {"Authorization", field}};
  CHECK_FALSE(auth.authenticate(request_with(two)).has_value());
  const std::string other_scheme = "Basic tok-alice";
  std::vector<mcpcore::http_header_view> other{{"Authorization", other_scheme}};
  CHECK_FALSE(auth.authenticate(request_with(other)).has_value());
  CHECK(f.as->calls.load() == 1);
  // Too long, or not a b64token: refused without any request.
  const std::string big(mcpcore::transport::max_introspection_token_bytes + 1, 'A');
  CHECK(why(auth.check(big)) == introspection_refusal::too_large);
  CHECK(why(auth.check(big.substr(1))) == introspection_refusal::inactive);  // at the cap: asked about
  CHECK(why(auth.check("")) == introspection_refusal::malformed);
  CHECK(why(auth.check("tok alice")) == introspection_refusal::malformed);
  CHECK(why(auth.check("tok&token=x")) == introspection_refusal::malformed);
  CHECK(f.as->calls.load() == 2);
}

TEST_CASE("oauth.md/introspection-options: make refuses incomplete or unsafe options") {
  fixture f;
  const auto refused = [&](auto change) { return make_refuses<introspection_authenticator>(f.options(), change, fetcher(f.as)); };
  using opts = mcpcore::transport::introspection_authenticator_options;
  CHECK(refused([](opts& o) { o.introspection_endpoint.clear(); }));
  CHECK(refused([](opts& o) { o.introspection_endpoint = "ftp://as.example.com/introspect"; }));
  CHECK(refused([](opts& o) { o.client_id.clear(); }));
  CHECK(refused([](opts& o) { o.client_secret.clear(); }));
  CHECK(refused([](opts& o) { o.issuer.clear(); }));
  CHECK(refused([](opts& o) { o.audience.clear(); }));
  CHECK(refused([](opts& o) { o.leeway = seconds{-1}; }));
  CHECK(refused([](opts& o) { o.leeway = mcpcore::transport::max_introspection_leeway + seconds{1}; }));
  CHECK(refused([](opts& o) { o.max_token_bytes = 0; }));
  CHECK(refused([](opts& o) { o.max_response_bytes = 0; }));
  CHECK(refused([](opts& o) { o.max_cache_entries = 0; }));
  CHECK(refused([](opts& o) { o.max_inflight = 0; }));
  CHECK(refused([](opts& o) { o.fetch_timeout = milliseconds{0}; }));
  CHECK(refused([](opts& o) { o.positive_ttl = milliseconds{-1}; }));
  CHECK(refused([](opts& o) { o.negative_ttl = milliseconds{-1}; }));
  CHECK_FALSE(refused([](opts& o) { o.leeway = mcpcore::transport::max_introspection_leeway; }));
  CHECK_FALSE(refused([](opts& o) { o.positive_ttl = milliseconds{0}; }));
  const auto no_fetch = introspection_authenticator::make(f.options(), nullptr);
  REQUIRE_FALSE(no_fetch.has_value());
  CHECK(no_fetch.error() == std::errc::invalid_argument);
  CHECK(f.as->calls.load() == 0);  // make never fetches
  CHECK(mcpcore::transport::to_string(introspection_refusal::unavailable) == "unavailable");
  CHECK(mcpcore::transport::to_string(introspection_refusal::internal) == "internal");
  CHECK(mcpcore::transport::to_string(static_cast<introspection_refusal>(200)).empty());
}

TEST_CASE("oauth.md/introspection: against a loopback introspection endpoint with Basic authentication") {
  httplib::Server server;
  const std::string expected = basic("mcp-server:server-secret");
  std::atomic<int> calls{0};
  const std::int64_t now = seconds_of(std::chrono::system_clock::now());
  server.Post("/introspect", [&](const httplib::Request& req, httplib::Response& res) {
    calls.fetch_add(1);
    if (req.get_header_value("Authorization") != expected) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Basic");
      res.set_content(R"({"error":"invalid_client"})", "application/json");
      return;
    }
    if (req.get_param_value("token_type_hint") != "access_token") {
      res.status = 400;
      return;
    }
    const std::string token = req.get_param_value("token");
    if (token == "live+token/=") {
      res.set_content(active_answer(std::chrono::system_clock::time_point{seconds{now}}).json(), "application/json");
    } else {
      res.set_content(R"({"active":false})", "application/json");
    }
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread listener([&server] { server.listen_after_bind(); });

  mcpcore::transport::introspection_authenticator_options o;
  o.introspection_endpoint = "http://127.0.0.1:" + std::to_string(port) + "/introspect";
  o.client_id = "mcp-server";
  o.client_secret = "server-secret";
  o.issuer = issuer;
  o.audience = audience;
  o.fetch_timeout = seconds{10};
  // Plain http to a loopback host: httplib_fetcher allows it without allow_http.
  auto made = introspection_authenticator::make(o, mcpcore::transport::httplib_fetcher());
  o.client_secret = "wrong";
  auto wrong = introspection_authenticator::make(o, mcpcore::transport::httplib_fetcher());
  std::optional<mcpcore::result<mcpcore::principal, introspection_refusal>> live;
  std::optional<mcpcore::result<mcpcore::principal, introspection_refusal>> dead;
  std::optional<mcpcore::result<mcpcore::principal, introspection_refusal>> refused;
  if (made && wrong) {
    live = made->check("live+token/=");
    dead = made->check("dead-token");
    refused = wrong->check("live+token/=");
  }
  server.stop();
  listener.join();
  REQUIRE(made.has_value());
  REQUIRE(wrong.has_value());
  REQUIRE(live.has_value());
  REQUIRE(live->has_value());
  CHECK((*live)->id == "alice");
  CHECK((*live)->expires == std::chrono::system_clock::time_point{seconds{now + 3600}});
  REQUIRE(dead.has_value());
  CHECK(why(*dead) == introspection_refusal::inactive);
  REQUIRE(refused.has_value());
  CHECK(why(*refused) == introspection_refusal::unavailable);  // 401 to the resource server itself
  CHECK(calls.load() == 3);
}
