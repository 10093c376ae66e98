// SPDX-License-Identifier: Apache-2.0
// Fuzzes the JWT access-token authenticator (src/oauth/jwt_authenticator.cpp) and its JWKS parser
// (src/oauth/jwks.cpp), both compiled into the fuzzer with its instrumentation.
//
// At start-up one RSA and one EC (P-256) key are made with cjose, and one authenticator gets their
// public JWKS through an injected fetch (wall clock fixed at 2026-01-01T00:00:00Z). Input: byte 0
// chooses (modulo 4) what the rest is:
//   0  a token, checked as presented;
//   1  the claims of a token: signed RS256 with the RSA key (kid "rsa"), then checked;
//   2  the claims of a token: signed ES256 with the EC key (kid "ec"), then checked;
//   3  a JWKS document, parsed with the authenticator's caps.
//
// Invariants:
//  - `check` never fails `internal` (no allocation failure is injected) and never throws;
//  - a token as presented (mode 0) is never accepted: without the private keys no input can carry
//    a valid signature, so acceptance would be a forgery (alg none, HMAC confusion, a bypass);
//  - an accepted token's principal has a non-empty id, scopes that are scope tokens, and an
//    expiry after the fixed now minus the leeway;
//  - a JWKS parse keeps at most `max_jwks_keys` keys, counts every other listed key as ignored,
//    and every key kept holds a cjose key of the family its algorithm needs.
#include <cjose/header.h>
#include <cjose/jwk.h>
#include <cjose/jws.h>
#include <cjose/util.h>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_check.hpp"
#include "jwks.hpp"

namespace {

using mcpcore::transport::jwt_authenticator;
using mcpcore::transport::jwt_refusal;

cjose_jwk_t* keyed(cjose_jwk_t* k, const char* kid) {
  cjose_err err{};
  if (k == nullptr || !cjose_jwk_set_kid(k, kid, std::string_view{kid}.size(), &err)) std::abort();
  return k;
}

std::string public_json(const cjose_jwk_t* k) {
  cjose_err err{};
  char* text = cjose_jwk_to_json(k, false, &err);
  if (text == nullptr) std::abort();
  std::string out{text};
  cjose_get_dealloc()(text);
  return out;
}

struct harness {
  cjose_jwk_t* rsa = nullptr;
  cjose_jwk_t* ec = nullptr;
  std::optional<jwt_authenticator> auth;
  std::chrono::system_clock::time_point now = mcpcore::manual_clock::initial_system;

  harness() {
    static constexpr std::uint8_t e[] = {0x01, 0x00, 0x01};
    cjose_err err{};
    rsa = keyed(cjose_jwk_create_RSA_random(2048, e, sizeof e, &err), "rsa");
    ec = keyed(cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &err), "ec");
    const std::string jwks = R"({"keys":[)" + public_json(rsa) + "," + public_json(ec) + "]}";
    mcpcore::transport::jwt_authenticator_options o;
    o.issuer = "https://as.example.com";
    o.audience = "https://mcp.example.com/mcp";
    o.jwks_uri = "https://as.example.com/jwks";
    o.scopes = mcpcore::scope_map{{{"mcp:read", "readonly", {"reader"}}, {"mcp:write", "operator", {"writer"}}}};
    o.jwks_refresh = std::chrono::hours{24};
    o.system_now = [t = now] { return t; };
    auto made = jwt_authenticator::make(std::move(o), [jwks](const mcpcore::transport::fetch_request&) {
      return mcpcore::result<mcpcore::transport::fetch_response>{mcpcore::transport::fetch_response{200, "application/json", jwks}};
    });
    if (!made || made->stats().keys != 2) std::abort();
    auth.emplace(std::move(*made));
  }
};

harness& the_harness() {
  static harness h;
  return h;
}

std::string sign(const cjose_jwk_t* key, const char* alg, const char* kid, std::string_view payload) {
  cjose_err err{};
  cjose_header_t* h = cjose_header_new(&err);
  if (h == nullptr) std::abort();
  cjose_header_set(h, CJOSE_HDR_ALG, alg, &err);
  cjose_header_set(h, CJOSE_HDR_KID, kid, &err);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  cjose_jws_t* jws = cjose_jws_sign(key, h, reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), &err);
  cjose_header_release(h);
  if (jws == nullptr) return {};
  const char* ser = nullptr;
  std::string out;
  if (cjose_jws_export(jws, &ser, &err) && ser != nullptr) out = ser;
  cjose_jws_release(jws);
  return out;
}

void check_token(const harness& h, std::string_view token, bool forged) {
  const auto r = h.auth->check(token);
  if (!r) {
    MCPCORE_FUZZ_CHECK(r.error() != jwt_refusal::internal);
    MCPCORE_FUZZ_CHECK(!mcpcore::transport::to_string(r.error()).empty());
    return;
  }
  MCPCORE_FUZZ_CHECK(!forged);
  MCPCORE_FUZZ_CHECK(!r->id.empty());
  MCPCORE_FUZZ_CHECK(r->expires > h.now - mcpcore::transport::default_jwt_leeway);
  for (const std::string& s : r->scopes) MCPCORE_FUZZ_CHECK(mcpcore::is_scope_token(s));
}

void check_jwks(std::string_view text) {
  const auto set = mcpcore::transport::detail::parse_jwks(text, mcpcore::transport::max_jwks_bytes,
                                                          mcpcore::transport::max_jwks_keys);
  if (!set) {
    MCPCORE_FUZZ_CHECK(!set.error().message().empty());
    return;
  }
  MCPCORE_FUZZ_CHECK(set->keys.size() + set->ignored <= mcpcore::transport::max_jwks_keys);
  for (const auto& k : set->keys) {
    MCPCORE_FUZZ_CHECK(k.key != nullptr);
    cjose_err err{};
    const bool rsa = cjose_jwk_get_kty(k.key.get(), &err) == CJOSE_JWK_KTY_RSA;
    MCPCORE_FUZZ_CHECK(rsa == (k.family == mcpcore::transport::detail::key_family::rsa));
    if (k.alg) MCPCORE_FUZZ_CHECK(mcpcore::transport::detail::family_of(*k.alg) == k.family);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  harness& h = the_harness();
  // Exact-size heap copy, so that ASan sees any read past the end.
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  const std::string rest{reinterpret_cast<const char*>(data) + 1, size - 1};
  switch (data[0] % 4U) {
    case 0: check_token(h, rest, true); break;
    case 1: check_token(h, sign(h.rsa, "RS256", "rsa", rest), false); break;
    case 2: check_token(h, sign(h.ec, "ES256", "ec", rest), false); break;
    default: check_jwks(rest); break;
  }
  return 0;
}
