// SPDX-License-Identifier: Apache-2.0
// Internal: a JWKS document (RFC 7517 §5) as the verification keys the JWT authenticator may use.
#ifndef MCPCORE_SRC_OAUTH_JWKS_HPP
#define MCPCORE_SRC_OAUTH_JWKS_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>

#include <cjose/jwk.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

/// Shortest RSA modulus a key may have, in bits: shorter keys are ignored.
inline constexpr std::size_t min_rsa_modulus_bits = 2048;

/// Releases a cjose key.
struct cjose_jwk_release_fn {
  void operator()(cjose_jwk_t* k) const noexcept { cjose_jwk_release(k); }
};
using cjose_jwk_ptr = std::unique_ptr<cjose_jwk_t, cjose_jwk_release_fn>;

/// What a key can verify: RSA (RS*, PS*) or EC on one curve (ES256 P-256, ES384 P-384, ES512 P-521).
enum class key_family : std::uint8_t { rsa, ec_p256, ec_p384, ec_p521 };

/// The family `a` needs.
[[nodiscard]] key_family family_of(jwt_algorithm a) noexcept;

/// One usable verification key.
struct jwk_entry {
  std::optional<std::string> kid{};        ///< the `kid` member, when there is one
  key_family family = key_family::rsa;     ///< from `kty` (and `crv`)
  std::optional<jwt_algorithm> alg{};      ///< the `alg` member, when there is one
  cjose_jwk_ptr key{};                     ///< the public key alone (private members are never imported)
};

/// The usable keys of one JWKS document, and how many of its keys were ignored.
struct jwk_set {
  std::vector<jwk_entry> keys{};
  std::size_t ignored = 0;
};

/// Whether `k` may verify a token signed with `a`: its family fits, its `alg` is absent or `a`.
[[nodiscard]] bool key_fits(const jwk_entry& k, jwt_algorithm a) noexcept;

/// Parses a JWKS document: a JSON object whose `keys` is an array of at most `max_keys` objects,
/// the text at most `max_bytes` long. Each key that is not an RSA key (`n`, `e`, a modulus of at
/// least `min_rsa_modulus_bits`) or an EC key on P-256, P-384 or P-521 (`crv`, `x`, `y`), whose
/// `use` is present and not `sig`, whose `alg` is present and not an allowed asymmetric algorithm
/// of its family, or whose `kid` is not a string, is ignored (counted); the others are imported
/// into cjose from their public members only. Errors: `std::errc::invalid_argument` or
/// `std::errc::message_size`, with a message.
/// @throws std::bad_alloc
[[nodiscard]] result<jwk_set> parse_jwks(std::string_view text, std::size_t max_bytes, std::size_t max_keys);

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_SRC_OAUTH_JWKS_HPP
