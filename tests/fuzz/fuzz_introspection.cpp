// SPDX-License-Identifier: Apache-2.0
// Fuzzes the token-introspection authenticator (src/oauth/introspection_authenticator.cpp,
// compiled into the fuzzer with its instrumentation): the input is the authorization server's
// answer to the introspection of one fixed token.
//
// Per input, a fresh authenticator (wall and steady clocks fixed at 2026-01-01T00:00:00Z, an
// injected fetch that answers 200 with the input as the body) checks the token twice.
//
// Invariants:
//  - `check` never fails `internal`, `busy`, `too_large` (no allocation failure is injected, one
//    thread, the token is short) and never throws;
//  - the request is the RFC 7662 form with the fixed Basic credentials, sent at most once per
//    check;
//  - an accepted token's principal has a non-empty id, scopes that are scope tokens, and an
//    expiry after the fixed now minus the leeway;
//  - an `unavailable` answer (not JSON, no boolean `active`, over the size cap) is never
//    remembered: the second check asks again; every other outcome is the same twice, and a
//    refusal on the answer is answered from the cache the second time.
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/introspection_authenticator.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_check.hpp"

namespace {

using mcpcore::transport::introspection_authenticator;
using mcpcore::transport::introspection_refusal;

constexpr std::string_view token = "opaque-token_0123456789";
constexpr std::string_view expected_body = "token=opaque-token_0123456789&token_type_hint=access_token";
// base64("rs:secret")
constexpr std::string_view expected_authorization = "Basic cnM6c2VjcmV0";

struct exchange {
  std::string body;
  std::atomic<int> calls{0};
  std::atomic<bool> bad_request{false};
};

introspection_authenticator make(const std::shared_ptr<exchange>& x) {
  mcpcore::transport::introspection_authenticator_options o;
  o.introspection_endpoint = "https://as.example.com/introspect";
  o.client_id = "rs";
  o.client_secret = "secret";
  o.issuer = "https://as.example.com";
  o.audience = "https://mcp.example.com/mcp";
  o.scopes = mcpcore::scope_map{{{"mcp:read", "readonly", {"reader"}}, {"mcp:write", "operator", {"writer"}}}};
  o.max_response_bytes = std::size_t{4} << 10U;
  o.system_now = [] { return mcpcore::manual_clock::initial_system; };
  o.steady_now = [] { return mcpcore::manual_clock::initial_steady; };
  auto made = introspection_authenticator::make(std::move(o), [x](const mcpcore::transport::fetch_request& req) {
    x->calls.fetch_add(1);
    bool auth_ok = false;
    for (const auto& [name, value] : req.headers) auth_ok = auth_ok || (name == "Authorization" && value == expected_authorization);
    if (req.body != expected_body || req.method != "POST" || !auth_ok) x->bad_request.store(true);
    return mcpcore::result<mcpcore::transport::fetch_response>{
        mcpcore::transport::fetch_response{200, "application/json", x->body}};
  });
  if (!made) std::abort();
  return std::move(*made);
}

void check_outcome(const mcpcore::result<mcpcore::principal, introspection_refusal>& r) {
  if (!r) {
    MCPCORE_FUZZ_CHECK(r.error() != introspection_refusal::internal);
    MCPCORE_FUZZ_CHECK(r.error() != introspection_refusal::busy);
    MCPCORE_FUZZ_CHECK(r.error() != introspection_refusal::too_large);
    MCPCORE_FUZZ_CHECK(!mcpcore::transport::to_string(r.error()).empty());
    return;
  }
  MCPCORE_FUZZ_CHECK(!r->id.empty());
  MCPCORE_FUZZ_CHECK(r->expires > mcpcore::manual_clock::initial_system - mcpcore::transport::default_introspection_leeway);
  for (const std::string& s : r->scopes) MCPCORE_FUZZ_CHECK(mcpcore::is_scope_token(s));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto x = std::make_shared<exchange>();
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  x->body.assign(reinterpret_cast<const char*>(data), size);
  const introspection_authenticator auth = make(x);
  const auto first = auth.check(token);
  check_outcome(first);
  MCPCORE_FUZZ_CHECK(x->calls.load() == 1);
  const auto second = auth.check(token);
  check_outcome(second);
  MCPCORE_FUZZ_CHECK(!x->bad_request.load());
  MCPCORE_FUZZ_CHECK(first.has_value() == second.has_value());
  if (!first) {
    MCPCORE_FUZZ_CHECK(first.error() == second.error());
    if (first.error() == introspection_refusal::unavailable) {
      MCPCORE_FUZZ_CHECK(x->calls.load() == 2);
    } else {
      MCPCORE_FUZZ_CHECK(x->calls.load() == 1);  // remembered for negative_ttl
      MCPCORE_FUZZ_CHECK(auth.stats().cache_hits == 1);
    }
  } else {
    MCPCORE_FUZZ_CHECK(first->id == second->id);
    MCPCORE_FUZZ_CHECK(first->tier == second->tier);
    MCPCORE_FUZZ_CHECK(first->scopes == second->scopes);
    MCPCORE_FUZZ_CHECK(first->expires == second->expires);
  }
  return 0;
}
