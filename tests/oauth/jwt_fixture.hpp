// SPDX-License-Identifier: Apache-2.0
// Test keys, tokens and an in-memory JWKS endpoint for the JWT authenticator's tests: keys made
// at test time by cjose, tokens signed by cjose, the JWKS served through an injected fetch; and
// what the introspection authenticator's tests share with them (claims, scopes, `must_make`).
#ifndef MCPCORE_TESTS_OAUTH_JWT_FIXTURE_HPP
#define MCPCORE_TESTS_OAUTH_JWT_FIXTURE_HPP

#include <doctest/doctest.h>

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>

#include <cjose/header.h>
#include <cjose/jwk.h>
#include <cjose/jws.h>
#include <cjose/util.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace mcpcore_test_oauth {

struct jwk_release {
  void operator()(cjose_jwk_t* k) const noexcept { cjose_jwk_release(k); }
};
using jwk_ptr = std::unique_ptr<cjose_jwk_t, jwk_release>;

inline constexpr std::string_view issuer = "https://as.example.com";
inline constexpr std::string_view audience = "https://mcp.example.com/mcp";
inline constexpr std::string_view jwks_uri = "https://as.example.com/jwks";

inline jwk_ptr with_kid(cjose_jwk_t* k, std::string_view kid) {
  if (k == nullptr) throw std::runtime_error("cjose could not make a key");
  jwk_ptr key{k};
  cjose_err err{};
  if (!cjose_jwk_set_kid(key.get(), kid.data(), kid.size(), &err)) throw std::runtime_error("cjose_jwk_set_kid");
  return key;
}

inline jwk_ptr make_rsa(std::string_view kid) {
  static constexpr std::uint8_t e[] = {0x01, 0x00, 0x01};
  cjose_err err{};
  return with_kid(cjose_jwk_create_RSA_random(2048, e, sizeof e, &err), kid);
}

inline jwk_ptr make_ec(std::string_view kid, cjose_jwk_ec_curve crv = CJOSE_JWK_EC_P_256) {
  cjose_err err{};
  return with_kid(cjose_jwk_create_EC_random(crv, &err), kid);
}

/// The public JWK of `key` as JSON, with `extra` members (`"use":"sig"`) appended.
inline std::string public_jwk(const cjose_jwk_t* key, std::string_view extra = {}) {
  cjose_err err{};
  char* text = cjose_jwk_to_json(key, false, &err);
  if (text == nullptr) throw std::runtime_error("cjose_jwk_to_json");
  std::string out{text};
  cjose_get_dealloc()(text);
  if (!extra.empty()) out.insert(out.size() - 1, "," + std::string{extra});
  return out;
}

inline std::string jwks_of(const std::vector<std::string>& keys) {
  std::string out = R"({"keys":[)";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i != 0) out += ',';
    out += keys[i];
  }
  return out + "]}";
}

inline std::string b64url(std::string_view bytes) {
  std::string out;
  mcpcore::detail::base64_encode(out, bytes, mcpcore::detail::base64_alphabet::url);
  return out;
}

/// A compact JWS of `payload` signed by `key` with `alg`; `kid` and `typ` in the header when given.
inline std::string sign(const cjose_jwk_t* key, const char* alg, std::optional<std::string> kid, std::string_view payload,
                        std::optional<std::string> typ = std::string{"at+jwt"}) {
  cjose_err err{};
  cjose_header_t* h = cjose_header_new(&err);
  if (h == nullptr) throw std::runtime_error("cjose_header_new");
  cjose_header_set(h, CJOSE_HDR_ALG, alg, &err);
  if (kid) cjose_header_set(h, CJOSE_HDR_KID, kid->c_str(), &err);
  if (typ) cjose_header_set(h, "typ", typ->c_str(), &err);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  cjose_jws_t* jws = cjose_jws_sign(key, h, reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), &err);
  cjose_header_release(h);
  if (jws == nullptr) throw std::runtime_error(std::string{"cjose_jws_sign: "} + (err.message ? err.message : ""));
  const char* ser = nullptr;
  cjose_jws_export(jws, &ser, &err);
  std::string out{ser != nullptr ? ser : ""};
  cjose_jws_release(jws);
  return out;
}

/// The claims of a token, as JSON members written out by hand (raw JSON values).
struct claims {
  std::vector<std::pair<std::string, std::string>> members;

  claims& set(const std::string& name, std::string raw_json) {
    for (auto& [n, v] : members) {
      if (n == name) {
        v = std::move(raw_json);
        return *this;
      }
    }
    members.emplace_back(name, std::move(raw_json));
    return *this;
  }
  claims& drop(const std::string& name) {
    std::erase_if(members, [&](const auto& m) { return m.first == name; });
    return *this;
  }
  [[nodiscard]] std::string json() const {
    std::string out = "{";
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i != 0) out += ',';
      out += '"' + members[i].first + "\":" + members[i].second;
    }
    return out + "}";
  }
};

inline std::string quoted(std::string_view s) { return '"' + std::string{s} + '"'; }

inline std::int64_t seconds_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

/// Good claims for a user `alice` at `now`: valid for an hour.
inline claims user_claims(std::chrono::system_clock::time_point now) {
  claims c;
  const std::int64_t t = seconds_of(now);
  c.set("iss", quoted(issuer))
      .set("aud", quoted(audience))
      .set("sub", quoted("alice"))
      .set("client_id", quoted("mcp-client"))
      .set("iat", std::to_string(t))
      .set("nbf", std::to_string(t))
      .set("exp", std::to_string(t + 3600))
      .set("scope", quoted("mcp:read mcp:write"));
  return c;
}

/// An in-memory JWKS endpoint: serves `body` with `status`, or fails the fetch; counts calls.
struct jwks_endpoint {
  std::mutex mutex;
  std::string body;
  int status = 200;
  bool unreachable = false;
  std::atomic<int> calls{0};

  void serve(std::string b) {
    const std::lock_guard lock(mutex);
    body = std::move(b);
    status = 200;
    unreachable = false;
  }
  void go_down() {
    const std::lock_guard lock(mutex);
    unreachable = true;
  }
};

inline mcpcore::transport::fetch_function fetcher(const std::shared_ptr<jwks_endpoint>& ep) {
  return [ep](const mcpcore::transport::fetch_request& req) -> mcpcore::result<mcpcore::transport::fetch_response> {
    ep->calls.fetch_add(1);
    const std::lock_guard lock(ep->mutex);
    if (req.url != jwks_uri) return mcpcore::transport::fetch_response{404, "text/plain", "not found"};
    if (ep->unreachable) return mcpcore::fail(mcpcore::error{std::make_error_code(std::errc::connection_refused), "down"});
    return mcpcore::transport::fetch_response{ep->status, "application/json", ep->body};
  };
}

/// The scopes of the tests: `mcp:read` (tier readonly, role reader), `mcp:write` (operator, writer).
inline mcpcore::scope_map test_scopes() {
  return mcpcore::scope_map{{{"mcp:read", "readonly", {"reader"}}, {"mcp:write", "operator", {"writer"}}}};
}

inline mcpcore::transport::jwt_authenticator_options base_options() {
  mcpcore::transport::jwt_authenticator_options o;
  o.issuer = issuer;
  o.audience = audience;
  o.jwks_uri = jwks_uri;
  o.scopes = test_scopes();
  return o;
}

/// `Authenticator::make(o, fetch)`, which must succeed.
template <class Authenticator, class Options>
Authenticator must_make(Options o, mcpcore::transport::fetch_function fetch) {
  auto a = Authenticator::make(std::move(o), std::move(fetch));
  REQUIRE(a.has_value());
  return std::move(*a);
}

/// Whether `Authenticator::make` refuses `o` once `change`d, with `invalid_argument`.
template <class Authenticator, class Options, class Change>
bool make_refuses(Options o, Change change, mcpcore::transport::fetch_function fetch) {
  change(o);
  const auto a = Authenticator::make(std::move(o), std::move(fetch));
  return !a.has_value() && a.error() == std::errc::invalid_argument;
}

/// Waits (bounded, 20 s) until `pred` holds; returns whether it did. Not a timing assertion: the
/// bound only keeps a broken build from hanging.
template <class Pred>
bool eventually(Pred pred) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
  return true;
}

}  // namespace mcpcore_test_oauth

#endif  // MCPCORE_TESTS_OAUTH_JWT_FIXTURE_HPP
