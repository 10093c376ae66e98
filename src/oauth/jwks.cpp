// SPDX-License-Identifier: Apache-2.0
// A JWKS document as verification keys: parsed with mcpcore's JSON parser, each usable key
// imported into cjose from its public members only.
#include "jwks.hpp"

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <mcpcore/wire/json.hpp>

#include <cjose/error.h>
#include <cjose/jwk.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

namespace {

// A JWKS nests three levels (set, keys array, key); a little room for members such as `x5c`.
constexpr std::uint32_t jwks_max_depth = 8;

error jwks_error(std::errc code, std::string message) {
  return error{std::make_error_code(code), std::move(message)};
}

// A base64url member (no padding, canonical), or nullopt.
std::optional<std::string_view> b64url_member(const json::value& key, std::string_view name) {
  const json::value v = key.find(name);
  if (!v.is_string()) return std::nullopt;
  const std::string_view s = v.as_string();
  if (s.empty() || !mcpcore::detail::base64_decode(s, mcpcore::detail::base64_alphabet::url)) return std::nullopt;
  return s;
}

std::optional<key_family> ec_family(std::string_view crv) noexcept {
  if (crv == "P-256") return key_family::ec_p256;
  if (crv == "P-384") return key_family::ec_p384;
  if (crv == "P-521") return key_family::ec_p521;
  return std::nullopt;
}

// Bits of a big-endian unsigned integer (leading zero bytes do not count).
std::size_t bit_length(std::string_view bytes) noexcept {
  while (!bytes.empty() && bytes.front() == '\0') bytes.remove_prefix(1);
  if (bytes.empty()) return 0;
  std::size_t bits = (bytes.size() - 1) * 8;
  for (auto top = static_cast<unsigned char>(bytes.front()); top != 0; top >>= 1U) ++bits;
  return bits;
}

// The key, or nullopt when it is to be ignored.
std::optional<jwk_entry> parse_key(const json::value& key) {
  if (!key.is_object()) return std::nullopt;
  const json::value kty = key.find("kty");
  if (!kty.is_string()) return std::nullopt;
  jwk_entry entry;
  if (const json::value kid = key.find("kid"); kid.exists()) {
    if (!kid.is_string()) return std::nullopt;
    entry.kid = std::string{kid.as_string()};
  }
  if (const json::value use = key.find("use"); use.exists() && (!use.is_string() || use.as_string() != "sig")) {
    return std::nullopt;
  }
  std::string public_json;
  if (kty.as_string() == "RSA") {
    const auto n = b64url_member(key, "n");
    const auto e = b64url_member(key, "e");
    if (!n || !e) return std::nullopt;
    const auto modulus = mcpcore::detail::base64_decode(*n, mcpcore::detail::base64_alphabet::url);
    if (!modulus || bit_length(*modulus) < min_rsa_modulus_bits) return std::nullopt;
    entry.family = key_family::rsa;
    // Base64url text needs no JSON escaping.
    public_json.append(R"({"kty":"RSA","n":")").append(*n).append(R"(","e":")").append(*e).append("\"}");
  } else if (kty.as_string() == "EC") {
    const json::value crv = key.find("crv");
    const auto family = crv.is_string() ? ec_family(crv.as_string()) : std::nullopt;
    const auto x = b64url_member(key, "x");
    const auto y = b64url_member(key, "y");
    if (!family || !x || !y) return std::nullopt;
    entry.family = *family;
    public_json.append(R"({"kty":"EC","crv":")").append(crv.as_string()).append(R"(","x":")").append(*x);
    public_json.append(R"(","y":")").append(*y).append("\"}");
  } else {
    return std::nullopt;  // oct (HMAC secrets), OKP, anything else
  }
  if (const json::value alg = key.find("alg"); alg.exists()) {
    const auto a = alg.is_string() ? parse_jwt_algorithm(alg.as_string()) : std::nullopt;
    if (!a || family_of(*a) != entry.family) return std::nullopt;
    entry.alg = a;
  }
  cjose_err err{};
  entry.key.reset(cjose_jwk_import(public_json.data(), public_json.size(), &err));
  if (!entry.key) return std::nullopt;
  const cjose_jwk_kty_t imported = cjose_jwk_get_kty(entry.key.get(), &err);
  if ((entry.family == key_family::rsa) != (imported == CJOSE_JWK_KTY_RSA)) return std::nullopt;
  return entry;
}

}  // namespace

key_family family_of(jwt_algorithm a) noexcept {
  switch (a) {
    case jwt_algorithm::es256: return key_family::ec_p256;
    case jwt_algorithm::es384: return key_family::ec_p384;
    case jwt_algorithm::es512: return key_family::ec_p521;
    case jwt_algorithm::rs256:
    case jwt_algorithm::rs384:
    case jwt_algorithm::rs512:
    case jwt_algorithm::ps256:
    case jwt_algorithm::ps384:
    case jwt_algorithm::ps512: return key_family::rsa;
  }
  return key_family::rsa;
}

bool key_fits(const jwk_entry& k, jwt_algorithm a) noexcept {
  return k.family == family_of(a) && (!k.alg || *k.alg == a);
}

result<jwk_set> parse_jwks(std::string_view text, std::size_t max_bytes, std::size_t max_keys) {
  if (text.size() > max_bytes) {
    return fail(jwks_error(std::errc::message_size, "the JWKS is larger than max_jwks_bytes (" + std::to_string(max_bytes) + ")"));
  }
  json::parse_options limits;
  limits.max_depth = jwks_max_depth;
  limits.max_bytes = max_bytes;
  json::document doc{limits};
  auto root = doc.parse(text);
  if (!root) return fail(jwks_error(std::errc::invalid_argument, "the JWKS is not JSON: " + root.error().message()));
  const json::value keys = root->find("keys");
  if (!root->is_object() || !keys.is_array()) {
    return fail(jwks_error(std::errc::invalid_argument, "the JWKS is not an object with a \"keys\" array"));
  }
  if (keys.size() > max_keys) {
    return fail(jwks_error(std::errc::message_size, "the JWKS lists more than max_jwks_keys (" + std::to_string(max_keys) + ") keys"));
  }
  jwk_set out;
  for (const json::value key : keys.elements()) {
    if (auto entry = parse_key(key)) {
      out.keys.push_back(std::move(*entry));
    } else {
      ++out.ignored;
    }
  }
  return out;
}

}  // namespace transport::detail

MCPCORE_END_NAMESPACE
