// SPDX-License-Identifier: Apache-2.0
// The JWT access-token authenticator (docs/oauth.md#jwt-access-tokens): keys made and tokens signed
// by cjose at test time, the JWKS served through an injected fetch, time from a manual clock.
#include "jwt_fixture.hpp"

#include <doctest/doctest.h>

#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <mcpcore/wire/http.hpp>

#include <cjose/header.h>
#include <cjose/jwk.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore_test_oauth;
using mcpcore::transport::jwt_authenticator;
using mcpcore::transport::jwt_refusal;
using std::chrono::seconds;

namespace {

// One RSA and one EC key, made once (RSA generation is slow under the sanitizers).
struct keys {
  jwk_ptr rsa = make_rsa("rsa-1");
  jwk_ptr ec = make_ec("ec-1");
  jwk_ptr rsa2 = make_rsa("rsa-2");
};
const keys& test_keys() {
  static const keys k;
  return k;
}

struct fixture {
  mcpcore::manual_clock clock;
  std::shared_ptr<jwks_endpoint> endpoint = std::make_shared<jwks_endpoint>();

  fixture() { endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get()), public_jwk(test_keys().ec.get())})); }

  mcpcore::transport::jwt_authenticator_options options() {
    auto o = base_options();
    o.use_clock(mcpcore::clock_ref{clock});
    return o;
  }
  jwt_authenticator make(mcpcore::transport::jwt_authenticator_options o) {
    return must_make<jwt_authenticator>(std::move(o), fetcher(endpoint));
  }
  jwt_authenticator make() { return make(options()); }
  [[nodiscard]] std::string rs256(const claims& c) const { return sign(test_keys().rsa.get(), "RS256", "rsa-1", c.json()); }
  [[nodiscard]] claims good() const { return user_claims(clock.system_now()); }
};

}  // namespace

TEST_CASE("oauth.md/jwt-access-tokens: a valid RS256 token gives the principal of its claims") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto p = auth.check(f.rs256(f.good().set("name", quoted("Alice Example"))));
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  CHECK(p->kind == mcpcore::principal_kind::human_interactive);
  CHECK(p->display_name == "Alice Example");
  CHECK(p->tier == "operator");  // the last listed grant held that names a tier
  CHECK(p->roles == std::vector<std::string>{"reader", "writer"});
  CHECK(p->scopes == std::vector<std::string>{"mcp:read", "mcp:write"});
  CHECK(p->expires == f.clock.system_now() + seconds{3600});
  CHECK(auth.stats().accepted == 1);
}

TEST_CASE("oauth.md/jwt-access-tokens: a valid ES256 token is accepted") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto p = auth.check(sign(test_keys().ec.get(), "ES256", "ec-1", f.good().set("scope", quoted("mcp:read")).json()));
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  CHECK(p->tier == "readonly");
  CHECK(p->roles == std::vector<std::string>{"reader"});
  // Without a kid, the one key that fits the algorithm is used.
  const auto no_kid = auth.check(sign(test_keys().ec.get(), "ES256", std::nullopt, f.good().json()));
  CHECK(no_kid.has_value());
}

TEST_CASE("oauth.md/jwt-access-tokens: a client-credentials token without sub is a service principal") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto p = auth.check(f.rs256(f.good().drop("sub").drop("scope").set("scp", R"(["mcp:read"])")));
  REQUIRE(p.has_value());
  CHECK(p->id == "mcp-client");
  CHECK(p->kind == mcpcore::principal_kind::service);
  CHECK(p->tier == "readonly");
  const auto same = auth.check(f.rs256(f.good().set("sub", quoted("mcp-client"))));
  REQUIRE(same.has_value());
  CHECK(same->kind == mcpcore::principal_kind::service);
  const auto none = auth.check(f.rs256(f.good().drop("sub").drop("client_id")));
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error() == jwt_refusal::no_subject);
  // No scope at all: admitted with the unscoped tier.
  const auto unscoped = auth.check(f.rs256(f.good().drop("scope")));
  REQUIRE(unscoped.has_value());
  CHECK(unscoped->tier == mcpcore::unscoped_tier);
}

TEST_CASE("oauth.md/what-is-refused: an expired token is refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::int64_t now = seconds_of(f.clock.system_now());
  const auto r = auth.check(f.rs256(f.good().set("iat", std::to_string(now - 7200)).set("nbf", std::to_string(now - 7200))
                                        .set("exp", std::to_string(now - 60))));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == jwt_refusal::expired);
  CHECK(auth.stats().refusals(jwt_refusal::expired) == 1);
  // exp is required.
  const auto no_exp = auth.check(f.rs256(f.good().drop("exp")));
  REQUIRE_FALSE(no_exp.has_value());
  CHECK(no_exp.error() == jwt_refusal::malformed);
}

TEST_CASE("oauth.md/what-is-refused: a token not yet valid is refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::int64_t now = seconds_of(f.clock.system_now());
  const auto nbf = auth.check(f.rs256(f.good().set("nbf", std::to_string(now + 600))));
  REQUIRE_FALSE(nbf.has_value());
  CHECK(nbf.error() == jwt_refusal::not_yet_valid);
  const auto iat = auth.check(f.rs256(f.good().set("iat", std::to_string(now + 600))));
  REQUIRE_FALSE(iat.has_value());
  CHECK(iat.error() == jwt_refusal::not_yet_valid);
}

TEST_CASE("oauth.md/options: the leeway is honoured and bounded") {
  fixture f;
  const jwt_authenticator auth = f.make();  // default leeway: 30 s
  const std::int64_t now = seconds_of(f.clock.system_now());
  CHECK(auth.check(f.rs256(f.good().set("exp", std::to_string(now - 29)))).has_value());
  CHECK(auth.check(f.rs256(f.good().set("exp", std::to_string(now - 30)))).error() == jwt_refusal::expired);
  CHECK(auth.check(f.rs256(f.good().set("nbf", std::to_string(now + 30)))).has_value());
  CHECK(auth.check(f.rs256(f.good().set("nbf", std::to_string(now + 31)))).error() == jwt_refusal::not_yet_valid);

  auto none = f.options();
  none.leeway = seconds{0};
  const jwt_authenticator strict = f.make(std::move(none));
  CHECK(strict.check(f.rs256(f.good().set("exp", std::to_string(now)))).error() == jwt_refusal::expired);
  CHECK(strict.check(f.rs256(f.good().set("exp", std::to_string(now + 1)))).has_value());

  auto too_much = f.options();
  too_much.leeway = mcpcore::transport::max_jwt_leeway + seconds{1};
  const auto refused = jwt_authenticator::make(std::move(too_much), fetcher(f.endpoint));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error() == std::errc::invalid_argument);
  auto at_max = f.options();
  at_max.leeway = mcpcore::transport::max_jwt_leeway;
  CHECK(jwt_authenticator::make(std::move(at_max), fetcher(f.endpoint)).has_value());
}

TEST_CASE("oauth.md/what-is-refused: a token for another audience is refused, an aud array holding this resource is accepted") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto other = auth.check(f.rs256(f.good().set("aud", quoted("https://other.example.com/mcp"))));
  REQUIRE_FALSE(other.has_value());
  CHECK(other.error() == jwt_refusal::audience);
  const auto prefix = auth.check(f.rs256(f.good().set("aud", quoted("https://mcp.example.com/"))));
  CHECK(prefix.error() == jwt_refusal::audience);
  const auto missing = auth.check(f.rs256(f.good().drop("aud")));
  CHECK(missing.error() == jwt_refusal::audience);
  const auto array = auth.check(f.rs256(f.good().set("aud", "[\"https://other.example.com\"," + quoted(audience) + "]")));
  CHECK(array.has_value());
  const auto array_without = auth.check(f.rs256(f.good().set("aud", R"(["https://other.example.com"])")));
  CHECK(array_without.error() == jwt_refusal::audience);
  const auto wrong_type = auth.check(f.rs256(f.good().set("aud", "[1]")));
  CHECK(wrong_type.error() == jwt_refusal::malformed);
}

TEST_CASE("oauth.md/what-is-refused: a token from another issuer is refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto r = auth.check(f.rs256(f.good().set("iss", quoted("https://evil.example.com"))));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == jwt_refusal::issuer);
  CHECK(auth.check(f.rs256(f.good().set("iss", quoted("https://as.example.com/")))).error() == jwt_refusal::issuer);
  CHECK(auth.check(f.rs256(f.good().set("iss", "42"))).error() == jwt_refusal::malformed);
}

TEST_CASE("oauth.md/keys-and-rotation: an unknown kid is refused and a burst triggers exactly one rate-limited refresh") {
  fixture f;
  const jwt_authenticator auth = f.make();
  REQUIRE(auth.stats().fetches == 1);
  const jwk_ptr stranger = make_ec("stranger");
  const std::string token = sign(stranger.get(), "ES256", "stranger", f.good().json());

  // Right after the fetch of make: refused at once, and no fetch yet (min interval).
  CHECK(auth.check(token).error() == jwt_refusal::unknown_key);
  f.clock.advance(mcpcore::transport::default_jwks_min_interval);
  std::vector<std::thread> burst;
  std::atomic<int> unknown{0};
  for (int t = 0; t < 4; ++t) {
    burst.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (auth.check(token).error() == jwt_refusal::unknown_key) unknown.fetch_add(1);
      }
    });
  }
  for (std::thread& t : burst) t.join();
  CHECK(unknown.load() == 100);
  REQUIRE(eventually([&] { return auth.stats().fetches == 2; }));
  CHECK(f.endpoint->calls.load() == 2);

  // Another burst within the interval: nothing is fetched until the interval has passed, then once.
  for (int i = 0; i < 50; ++i) CHECK(auth.check(token).error() == jwt_refusal::unknown_key);
  f.clock.advance(mcpcore::transport::default_jwks_min_interval - seconds{1});
  for (int i = 0; i < 50; ++i) CHECK(auth.check(token).error() == jwt_refusal::unknown_key);
  CHECK(f.endpoint->calls.load() == 2);
  f.clock.advance(seconds{1});
  REQUIRE(eventually([&] { return auth.stats().fetches == 3; }));
  CHECK(f.endpoint->calls.load() == 3);
  CHECK(auth.stats().refusals(jwt_refusal::unknown_key) == 201);
}

TEST_CASE("oauth.md/keys-and-rotation: a rotated key is picked up without a new authenticator") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string old_token = f.rs256(f.good());
  REQUIRE(auth.check(old_token).has_value());
  // The authorization server publishes rsa-2 and stops publishing rsa-1.
  f.endpoint->serve(jwks_of({public_jwk(test_keys().rsa2.get())}));
  const std::string new_token = sign(test_keys().rsa2.get(), "RS256", "rsa-2", f.good().json());
  CHECK(auth.check(new_token).error() == jwt_refusal::unknown_key);
  f.clock.advance(mcpcore::transport::default_jwks_min_interval);
  REQUIRE(eventually([&] { return auth.stats().fetches == 2; }));
  const auto p = auth.check(new_token);
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  CHECK(auth.check(old_token).error() == jwt_refusal::unknown_key);
}

TEST_CASE("oauth.md/what-is-refused: alg none is refused before any key lookup") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string payload = b64url(f.good().json());
  for (const char* header : {R"({"alg":"none","typ":"JWT"})", R"({"alg":"none","kid":"rsa-1"})", R"({"alg":"None"})"}) {
    const std::string token = b64url(header) + "." + payload + ".";
    const auto r = auth.check(token);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == jwt_refusal::algorithm);
  }
  // A header without alg is malformed.
  CHECK(auth.check(b64url(R"({"typ":"JWT"})") + "." + payload + ".c2ln").error() == jwt_refusal::malformed);
  CHECK(auth.stats().refusals(jwt_refusal::algorithm) == 3);
  CHECK(f.endpoint->calls.load() == 1);
}

TEST_CASE("oauth.md/what-is-refused: a header or payload that names a member twice is refused before the JOSE library reads it") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string payload = b64url(f.good().json());
  // One parser might keep the first alg (allowed) and the JOSE library the last (HMAC): refused
  // as malformed, as is an escaped spelling of the same name.
  for (const char* header : {R"({"alg":"RS256","kid":"rsa-1","alg":"HS256"})",
                             R"({"alg":"RS256","kid":"rsa-1","\u0061lg":"HS256"})"}) {
    const auto r = auth.check(b64url(header) + "." + payload + ".c2lnbmF0dXJl");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == jwt_refusal::malformed);
  }
  const std::string twice = b64url(R"({"iss":"a","iss":"b"})");
  const auto r = auth.check(b64url(R"({"alg":"RS256","kid":"rsa-1"})") + "." + twice + ".c2lnbmF0dXJl");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() != jwt_refusal::internal);  // refused (its signature fails first)
  CHECK(f.endpoint->calls.load() == 1);      // no refresh for any of them
}

TEST_CASE("oauth.md/what-is-refused: HS256 signed with the RSA public key as the HMAC secret is refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string secret = public_jwk(test_keys().rsa.get());
  cjose_err err{};
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
  const jwk_ptr hmac{cjose_jwk_create_oct_spec(reinterpret_cast<const std::uint8_t*>(secret.data()), secret.size(), &err)};
  REQUIRE(hmac != nullptr);
  for (const char* alg : {"HS256", "HS384", "HS512"}) {
    const std::string token = sign(hmac.get(), alg, "rsa-1", f.good().json());
    const auto r = auth.check(token);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == jwt_refusal::algorithm);
  }
  // An algorithm the options do not allow is refused the same way, even with a fitting key.
  CHECK(auth.check(sign(test_keys().rsa.get(), "RS512", "rsa-1", f.good().json())).error() == jwt_refusal::algorithm);
}

TEST_CASE("oauth.md/what-is-refused: a tampered payload fails the signature") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string token = f.rs256(f.good());
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = token.find('.', dot1 + 1);
  const std::string forged_payload = b64url(f.good().set("sub", quoted("root")).json());
  const std::string forged = token.substr(0, dot1 + 1) + forged_payload + token.substr(dot2);
  const auto r = auth.check(forged);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == jwt_refusal::signature);
  // A signature of the other key with the same kid fails too.
  const std::string other = sign(test_keys().rsa2.get(), "RS256", "rsa-1", f.good().json());
  CHECK(auth.check(other).error() == jwt_refusal::signature);
  // No signature at all.
  CHECK(auth.check(token.substr(0, dot2 + 1)).error() == jwt_refusal::signature);
}

TEST_CASE("oauth.md/what-is-refused: an RS256 token whose kid names an EC key is refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const auto r = auth.check(sign(test_keys().rsa.get(), "RS256", "ec-1", f.good().json()));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == jwt_refusal::algorithm);
  // An ES256 token naming the RSA key, likewise.
  CHECK(auth.check(sign(test_keys().ec.get(), "ES256", "rsa-1", f.good().json())).error() == jwt_refusal::algorithm);
  // A key whose own alg differs from the token's is not used.
  f.endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get(), R"("alg":"PS256","use":"sig")")}));
  auto o = f.options();
  o.algorithms = {mcpcore::transport::jwt_algorithm::rs256, mcpcore::transport::jwt_algorithm::ps256};
  const jwt_authenticator pinned = f.make(std::move(o));
  CHECK(pinned.check(f.rs256(f.good())).error() == jwt_refusal::algorithm);
  CHECK(pinned.check(sign(test_keys().rsa.get(), "PS256", "rsa-1", f.good().json())).has_value());
}

TEST_CASE("oauth.md/what-is-refused: a token over max_jwt_bytes is refused before parsing") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string big(mcpcore::transport::max_jwt_bytes + 1, 'A');
  const auto r = auth.check(big);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == jwt_refusal::too_large);
  // A valid token padded past the cap by a long claim.
  const std::string padded = f.rs256(f.good().set("pad", quoted(std::string(mcpcore::transport::max_jwt_bytes, 'x'))));
  CHECK(auth.check(padded).error() == jwt_refusal::too_large);
  CHECK(auth.stats().refusals(jwt_refusal::too_large) == 2);
}

TEST_CASE("oauth.md/what-is-refused: malformed compact forms are refused") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string token = f.rs256(f.good());
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = token.find('.', dot1 + 1);
  const std::string header = token.substr(0, dot1);
  const std::string payload = token.substr(dot1 + 1, dot2 - dot1 - 1);
  const std::string sig = token.substr(dot2 + 1);
  const std::vector<std::string> bad{
      "",
      header + "." + payload,                                   // two parts
      token + ".extra",                                         // four parts
      "." + payload + "." + sig,                                // empty header
      header + ".." + sig,                                      // empty payload
      header + "=." + payload + "." + sig,                      // padding
      "eyJ+bGciOiJSUzI1NiJ9." + payload + "." + sig,            // a character outside base64url
      "A." + payload + "." + sig,                               // base64url of no whole byte
      b64url("not json") + "." + payload + "." + sig,           // header not JSON
      b64url("[\"alg\",\"RS256\"]") + "." + payload + "." + sig,  // header not an object
      b64url(R"({"alg":"RS256","alg":"RS256"})") + "." + payload + "." + sig,  // duplicate member
      b64url(R"({"alg":"RS256","kid":"rsa-1","typ":"JOSE"})") + "." + payload + "." + sig,  // typ
      b64url(R"({"alg":"RS256","kid":"rsa-1","crit":["exp"]})") + "." + payload + "." + sig,  // crit
      b64url(R"({"alg":"RS256","kid":7})") + "." + payload + "." + sig,  // kid type
  };
  for (const std::string& t : bad) {
    CAPTURE(t);
    const auto r = auth.check(t);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == jwt_refusal::malformed);
  }
  // Claims of the wrong type, once the signature holds.
  const std::int64_t now = seconds_of(f.clock.system_now());
  CHECK(auth.check(f.rs256(f.good().set("exp", quoted(std::to_string(now + 60))))).error() == jwt_refusal::malformed);
  CHECK(auth.check(f.rs256(f.good().set("exp", std::to_string(now + 60) + ".5"))).error() == jwt_refusal::malformed);
  CHECK(auth.check(f.rs256(f.good().set("nbf", "-1"))).error() == jwt_refusal::malformed);
  CHECK(auth.check(f.rs256(f.good().set("exp", "99999999999999"))).error() == jwt_refusal::malformed);
  CHECK(auth.check(f.rs256(f.good().set("sub", "[]"))).error() == jwt_refusal::malformed);
  CHECK(auth.check(f.rs256(f.good().set("scope", "[\"mcp:read\"]"))).error() == jwt_refusal::malformed);
  CHECK(auth.check(sign(test_keys().rsa.get(), "RS256", "rsa-1", "[1,2]")).error() == jwt_refusal::malformed);
  // typ JWT and application/at+jwt are accepted, whatever their case.
  CHECK(auth.check(sign(test_keys().rsa.get(), "RS256", "rsa-1", f.good().json(), "jwt")).has_value());
  CHECK(auth.check(sign(test_keys().rsa.get(), "RS256", "rsa-1", f.good().json(), "application/AT+JWT")).has_value());
  CHECK(auth.check(sign(test_keys().rsa.get(), "RS256", "rsa-1", f.good().json(), std::nullopt)).has_value());
}

TEST_CASE("oauth.md/keys-and-rotation: a failed first fetch is not fatal and tokens pass once the fetch recovers") {
  fixture f;
  f.endpoint->go_down();
  const jwt_authenticator auth = f.make();
  CHECK(auth.stats().fetches == 1);
  CHECK(auth.stats().fetch_failures == 1);
  CHECK(auth.stats().keys == 0);
  const std::string token = f.rs256(f.good());
  CHECK(auth.check(token).error() == jwt_refusal::unknown_key);
  // The retry comes after jwks_retry (1 s), doubling while the fetches keep failing.
  f.clock.advance(mcpcore::transport::default_jwks_retry);
  REQUIRE(eventually([&] { return auth.stats().fetches == 2; }));
  CHECK(auth.stats().fetch_failures == 2);
  CHECK(auth.check(token).error() == jwt_refusal::unknown_key);
  f.endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get())}));
  f.clock.advance(mcpcore::transport::default_jwks_min_interval);
  REQUIRE(eventually([&] { return auth.stats().fetches == 3; }));
  CHECK(auth.stats().fetch_failures == 2);
  CHECK(auth.stats().keys == 1);
  CHECK(auth.check(token).has_value());
}

TEST_CASE("oauth.md/keys-and-rotation: a JWKS answer that is not a key set is a failed fetch") {
  fixture f;
  f.endpoint->serve(R"({"keys":"none"})");
  const jwt_authenticator auth = f.make();
  CHECK(auth.stats().fetch_failures == 1);
  f.endpoint->serve(std::string(mcpcore::transport::max_jwks_bytes + 1, ' '));
  f.clock.advance(mcpcore::transport::default_jwks_retry);
  REQUIRE(eventually([&] { return auth.stats().fetches == 2; }));
  CHECK(auth.stats().fetch_failures == 2);
  std::vector<std::string> many(mcpcore::transport::max_jwks_keys + 1, public_jwk(test_keys().ec.get()));
  f.endpoint->serve(jwks_of(many));
  f.clock.advance(2 * mcpcore::transport::default_jwks_retry);
  REQUIRE(eventually([&] { return auth.stats().fetches == 3; }));
  CHECK(auth.stats().fetch_failures == 3);
  CHECK(auth.stats().keys == 0);
}

TEST_CASE("oauth.md/keys-and-rotation: JWKS keys of other types are ignored and counted") {
  fixture f;
  f.endpoint->serve(jwks_of({
      R"({"kty":"oct","kid":"hmac","k":"c2VjcmV0"})",
      R"({"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})",
      public_jwk(test_keys().rsa.get(), R"("use":"enc")"),
      public_jwk(test_keys().ec.get(), R"("alg":"RS256")"),
      public_jwk(test_keys().rsa2.get(), R"("use":"sig","alg":"RS256")"),
      R"("not an object")",
  }));
  const jwt_authenticator auth = f.make();
  CHECK(auth.stats().fetch_failures == 0);
  CHECK(auth.stats().keys == 1);
  CHECK(auth.stats().keys_ignored == 5);
  CHECK(auth.check(sign(test_keys().rsa2.get(), "RS256", "rsa-2", f.good().json())).has_value());
  CHECK(auth.check(f.rs256(f.good())).error() == jwt_refusal::unknown_key);  // rsa-1 was for encryption
  // ec-1 was published with an RSA algorithm: ignored, so its kid is unknown.
  CHECK(auth.check(sign(test_keys().ec.get(), "ES256", "ec-1", f.good().json())).error() == jwt_refusal::unknown_key);
}

TEST_CASE("oauth.md/keys-and-rotation: revalidate says revoked after exp and indeterminate when the keys are stale") {
  fixture f;
  auto o = f.options();
  o.jwks_refresh = std::chrono::minutes{10};
  const jwt_authenticator auth = f.make(std::move(o));
  const auto p = auth.check(f.rs256(f.good()));
  REQUIRE(p.has_value());
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::valid);
  f.clock.advance(seconds{3599});
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::valid);
  f.clock.advance(seconds{1});
  CHECK(auth.revalidate(*p) == mcpcore::credential_verdict::revoked);

  // A principal that does not expire, while the JWKS endpoint is down for more than an hour.
  mcpcore::principal forever = *p;
  forever.expires = std::chrono::system_clock::time_point::max();
  REQUIRE(eventually([&] { return auth.stats().fetches >= 2; }));  // the periodic refreshes went on
  f.endpoint->go_down();
  const auto before = auth.stats().fetches;
  f.clock.advance(std::chrono::minutes{10});
  REQUIRE(eventually([&] { return auth.stats().fetches > before; }));
  CHECK(auth.stats().fetch_failures >= 1);
  CHECK(auth.revalidate(forever) == mcpcore::credential_verdict::valid);  // stale for 10 minutes only
  f.clock.advance(mcpcore::transport::default_max_jwks_staleness);
  CHECK(auth.revalidate(forever) == mcpcore::credential_verdict::indeterminate);
  f.endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get())}));
  REQUIRE(eventually([&] { return auth.revalidate(forever) == mcpcore::credential_verdict::valid; }));
}

TEST_CASE("oauth.md/keys-and-rotation: the refresher thread stops when the last copy goes") {
  auto endpoint = std::make_shared<jwks_endpoint>();
  endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get())}));
  const std::weak_ptr<jwks_endpoint> watch = endpoint;
  auto o = base_options();  // the real clocks: the next refresh is an hour away
  o.jwks_refresh = std::chrono::hours{1};
  auto made = jwt_authenticator::make(std::move(o), fetcher(endpoint));
  endpoint.reset();  // only the authenticator's fetch function holds it now
  REQUIRE(made.has_value());
  std::optional<jwt_authenticator> first{std::move(*made)};
  std::optional<jwt_authenticator> second{*first};
  const std::string token = sign(test_keys().rsa.get(), "RS256", "rsa-1", user_claims(std::chrono::system_clock::now()).json());
  first.reset();
  CHECK_FALSE(watch.expired());
  CHECK(second->check(token).has_value());
  // The last copy goes: the refresher is woken, stops and is joined; the state, its fetch function
  // with it, is released.
  second.reset();
  CHECK(watch.expired());
}

TEST_CASE("oauth.md/keys-and-rotation: concurrent checks during refreshes") {
  fixture f;
  auto o = f.options();
  o.jwks_min_interval = std::chrono::milliseconds{0};
  const jwt_authenticator auth = f.make(std::move(o));
  const std::string good = f.rs256(f.good());
  const jwk_ptr stranger = make_ec("stranger");
  const std::string unknown = sign(stranger.get(), "ES256", "stranger", f.good().json());
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, copy = auth] {
      while (!done.load()) {
        if (!copy.check(good).has_value()) wrong.fetch_add(1);
        if (copy.check(unknown).error() != jwt_refusal::unknown_key) wrong.fetch_add(1);
        (void)copy.stats();
      }
    });
  }
  // Every unknown kid asks for a refresh: the refresher fetches while the readers check.
  for (int round = 0; round < 5; ++round) {
    const auto before = auth.stats().fetches;
    f.endpoint->serve(jwks_of({public_jwk(test_keys().rsa.get()), public_jwk(test_keys().ec.get(), round % 2 == 0 ? R"("use":"sig")" : "")}));
    REQUIRE(eventually([&] { return auth.stats().fetches > before; }));
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  CHECK(wrong.load() == 0);
  CHECK(auth.stats().fetch_failures == 0);
}

TEST_CASE("oauth.md/jwt-access-tokens: authenticate reads exactly one Bearer field") {
  fixture f;
  const jwt_authenticator auth = f.make();
  const std::string token = f.rs256(f.good());
  const std::string field = "Bearer " + token;
  const auto request = [](std::vector<mcpcore::http_header_view>& h) {
    mcpcore::http_request_view r;
    r.method = "POST";
    r.target = "/mcp";
    r.headers = h;
    return r;
  };
  std::vector<mcpcore::http_header_view> one{{"authorization", field}};
  const auto p = auth.authenticate(request(one));
  REQUIRE(p.has_value());
  CHECK(p->id == "alice");
  std::vector<mcpcore::http_header_view> two{{"Authorization", field}, {"Authorization", field}};
  CHECK_FALSE(auth.authenticate(request(two)).has_value());
  const std::string basic = "Basic " + token;
  std::vector<mcpcore::http_header_view> other{{"Authorization", basic}};
  CHECK_FALSE(auth.authenticate(request(other)).has_value());
  std::vector<mcpcore::http_header_view> none{};
  CHECK_FALSE(auth.authenticate(request(none)).has_value());
  const std::string expired = "bearer   " + f.rs256(f.good().set("exp", std::to_string(seconds_of(f.clock.system_now()) - 3600)));
  std::vector<mcpcore::http_header_view> late{{"Authorization", expired}};
  CHECK_FALSE(auth.authenticate(request(late)).has_value());
  CHECK(auth.stats().refusals(jwt_refusal::expired) == 1);
}

TEST_CASE("oauth.md/options: make refuses incomplete or unsafe options") {
  fixture f;
  using mcpcore::transport::jwt_algorithm;
  const auto refused = [&](auto change) { return make_refuses<jwt_authenticator>(f.options(), change, fetcher(f.endpoint)); };
  using opts = mcpcore::transport::jwt_authenticator_options;
  CHECK(refused([](opts& o) { o.issuer.clear(); }));
  CHECK(refused([](opts& o) { o.audience.clear(); }));
  CHECK(refused([](opts& o) { o.jwks_uri = "ftp://as.example.com/jwks"; }));
  CHECK(refused([](opts& o) { o.algorithms.clear(); }));
  CHECK(refused([](opts& o) { o.algorithms = {jwt_algorithm::rs256, jwt_algorithm::rs256}; }));
  CHECK(refused([](opts& o) { o.algorithms = {static_cast<jwt_algorithm>(200)}; }));
  CHECK(refused([](opts& o) { o.leeway = seconds{-1}; }));
  CHECK(refused([](opts& o) { o.max_jwt_bytes = 0; }));
  CHECK(refused([](opts& o) { o.jwks_refresh = std::chrono::milliseconds{0}; }));
  CHECK(refused([](opts& o) { o.jwks_retry = std::chrono::hours{1}; }));
  CHECK(refused([](opts& o) { o.fetch_timeout = std::chrono::milliseconds{0}; }));
  const auto no_fetch = jwt_authenticator::make(f.options(), nullptr);
  CHECK_FALSE(no_fetch.has_value());
  CHECK(f.endpoint->calls.load() == 0);  // nothing was fetched for a refused configuration
  CHECK(mcpcore::transport::to_string(jwt_refusal::unknown_key) == "unknown_key");
  CHECK(mcpcore::transport::to_string(jwt_algorithm::ps384) == "PS384");
  CHECK(mcpcore::transport::parse_jwt_algorithm("HS256") == std::nullopt);
  CHECK(mcpcore::transport::parse_jwt_algorithm("none") == std::nullopt);
}
