// SPDX-License-Identifier: Apache-2.0
// The JWT access-token authenticator: OAuth 2.1 resource-server validation of signed access tokens
// against the authorization server's JWKS (docs/oauth.md#jwt-access-tokens).
#ifndef MCPCORE_TRANSPORT_JWT_AUTHENTICATOR_HPP
#define MCPCORE_TRANSPORT_JWT_AUTHENTICATOR_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/oauth_common.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

/// Longest token `check` considers, in bytes (default of `jwt_authenticator_options::max_jwt_bytes`):
/// a longer one is refused `too_large` before any parsing.
inline constexpr std::size_t max_jwt_bytes = std::size_t{8} << 10U;
/// Largest JWKS document accepted, in bytes (default of the option of the same name).
inline constexpr std::size_t max_jwks_bytes = std::size_t{256} << 10U;
/// Most keys one JWKS document may list (default of the option of the same name); a longer list is
/// refused whole and the keys in force stay.
inline constexpr std::size_t max_jwks_keys = 64;
/// The largest clock leeway `jwt_authenticator::make` accepts.
inline constexpr std::chrono::seconds max_jwt_leeway{300};
/// The default clock leeway applied to `exp`, `nbf` and `iat`.
inline constexpr std::chrono::seconds default_jwt_leeway{30};
/// The default period of the JWKS refresh.
inline constexpr std::chrono::milliseconds default_jwks_refresh{std::chrono::minutes{5}};
/// The default least interval between two fetches asked for by unknown key ids.
inline constexpr std::chrono::milliseconds default_jwks_min_interval{std::chrono::seconds{10}};
/// The default first retry delay after a failed fetch (doubled per failure, up to the refresh period).
inline constexpr std::chrono::milliseconds default_jwks_retry{std::chrono::seconds{1}};
/// The default age past which keys not refreshed make `revalidate` answer `indeterminate`.
inline constexpr std::chrono::milliseconds default_max_jwks_staleness{std::chrono::hours{1}};
/// Longest `name` claim kept as `principal::display_name`, in bytes; a longer one is dropped.
inline constexpr std::size_t max_jwt_display_name_bytes = 128;
/// Longest `sub` or `client_id` accepted as a principal id, in bytes.
inline constexpr std::size_t max_jwt_subject_bytes = 1024;
/// The latest time claim accepted (`exp`, `nbf`, `iat`), in seconds since the epoch: 2^33 - 1,
/// in the year 2242 (within `std::chrono::system_clock`'s range).
inline constexpr std::int64_t max_jwt_time = (std::int64_t{1} << 33U) - 1;

/// The signature algorithms a token may use: asymmetric ones only. `none` and the HMAC family
/// cannot be named, so they cannot be allowed.
enum class jwt_algorithm : std::uint8_t { rs256, rs384, rs512, ps256, ps384, ps512, es256, es384, es512 };

/// "RS256", "RS384", ..., "ES512"; "" for a value outside the enumeration.
[[nodiscard]] MCPCORE_API std::string_view to_string(jwt_algorithm a) noexcept;
/// The algorithm named `s` exactly (case-sensitive, RFC 7518), or nullopt.
[[nodiscard]] MCPCORE_API std::optional<jwt_algorithm> parse_jwt_algorithm(std::string_view s) noexcept;

/// Why `jwt_authenticator::check` refused a token (docs/oauth.md#what-is-refused).
enum class jwt_refusal : std::uint8_t {
  malformed,      ///< not a JWS compact serialization, bad base64url or JSON, a claim of the wrong type
  too_large,      ///< longer than `max_jwt_bytes`
  algorithm,      ///< `alg` not allowed (`none`, HMAC, ...), or not the algorithm of the key its `kid` names
  unknown_key,    ///< no key in the JWKS in force fits the token's `kid` and `alg`
  signature,      ///< the signature does not verify
  issuer,         ///< `iss` is not the configured issuer
  audience,       ///< `aud` does not hold this resource's URI
  expired,        ///< `exp` passed (beyond the leeway)
  not_yet_valid,  ///< `nbf` or `iat` in the future (beyond the leeway)
  no_subject,     ///< neither `sub` nor `client_id`
  internal,       ///< an allocation or library failure
};
/// How many `jwt_refusal` values there are.
inline constexpr std::size_t jwt_refusal_count = 11;

/// "malformed", "too_large", ..., "internal"; "" for a value outside the enumeration.
[[nodiscard]] MCPCORE_API std::string_view to_string(jwt_refusal r) noexcept;

/// How a `jwt_authenticator` validates tokens and keeps its keys (docs/oauth.md#options). The
/// clocks (`oauth_clock`): `system_now` for `exp`, `nbf` and `iat`, `steady_now` for the refresh
/// schedule; when `steady_now` is set, the refresher re-reads it at least every
/// `injected_clock_poll` (a test clock moves without waking anyone).
struct jwt_authenticator_options : oauth_clock {
  /// The authorization server's issuer identifier: `iss` must equal it exactly. Required.
  std::string issuer{};
  /// This resource's canonical URI (RFC 8707): `aud`, a string or an array of strings, must hold
  /// it exactly. Required.
  std::string audience{};
  /// Where the authorization server publishes its keys (`https://`). Required.
  std::string jwks_uri{};
  /// The algorithms accepted; at least one, each once.
  std::vector<jwt_algorithm> algorithms{jwt_algorithm::rs256, jwt_algorithm::es256};
  /// Clock skew allowed on `exp`, `nbf` and `iat`: 0 to `max_jwt_leeway`.
  std::chrono::seconds leeway = default_jwt_leeway;
  /// The token's scopes (`scope`, space-separated, or `scp`, an array) as tier and roles.
  scope_map scopes{};
  /// Cap on a token's length.
  std::size_t max_jwt_bytes = transport::max_jwt_bytes;
  /// Cap on a JWKS document's size.
  std::size_t max_jwks_bytes = transport::max_jwks_bytes;
  /// Cap on the keys of one JWKS document.
  std::size_t max_jwks_keys = transport::max_jwks_keys;
  /// The period of the JWKS refresh (after a successful fetch).
  std::chrono::milliseconds jwks_refresh = default_jwks_refresh;
  /// An unknown key id makes the refresher fetch at most once per this interval.
  std::chrono::milliseconds jwks_min_interval = default_jwks_min_interval;
  /// The delay after a first failed fetch; doubled per further failure, up to `jwks_refresh`.
  std::chrono::milliseconds jwks_retry = default_jwks_retry;
  /// The timeout of one JWKS fetch (`fetch_request::timeout`).
  std::chrono::milliseconds fetch_timeout = default_fetch_timeout;
  /// Past this long without a successful fetch, `revalidate` answers `indeterminate`.
  std::chrono::milliseconds max_jwks_staleness = default_max_jwks_staleness;
};

/// How often the refresher re-reads an injected steady clock.
inline constexpr std::chrono::milliseconds injected_clock_poll{20};

/// Counters of a `jwt_authenticator` (shared by its copies), for metrics and tests.
/// `accepted`, `refused` and `refusals(r)` come from `oauth_check_counts`.
struct jwt_authenticator_stats : oauth_check_counts<jwt_refusal, jwt_refusal_count> {
  std::uint64_t fetches = 0;                                 ///< JWKS fetches attempted
  std::uint64_t fetch_failures = 0;                          ///< of which failed (no answer, status, parse)
  std::size_t keys = 0;                                      ///< usable keys in force
  std::size_t keys_ignored = 0;                              ///< keys the last good JWKS listed but could not be used
};

/// OAuth 2.1 access tokens as JWTs (RFC 9068), validated against the authorization server's
/// published keys (docs/oauth.md#jwt-access-tokens; `authenticator` concept).
///
/// `make` validates the options, fetches the JWKS once (a failure is not fatal: the authenticator
/// starts without keys) and starts one refresher thread. Requests never fetch: a token whose key
/// is unknown is refused `unknown_key` at once and asks the refresher for a fetch, at most one per
/// `jwks_min_interval`; once it lands the same token passes (a key rotation needs no restart).
///
/// `revalidate(p)`: `revoked` once `p.expires` has passed, `indeterminate` when no fetch has
/// succeeded for longer than `max_jwks_staleness`, `valid` otherwise.
///
/// @par Sharing and thread safety
/// Copies share the keys, the counters and the refresher thread, which stops (and is joined) when
/// the last copy goes, after the fetch under way if any. Every member may be called concurrently;
/// a moved-from authenticator admits nobody (`check` → `internal`, `revalidate` → `revoked`).
class jwt_authenticator {
 public:
  /// Validates `options` and starts. Errors: `std::errc::invalid_argument` with a message naming
  /// the option (a required one empty, no or repeated algorithms, a leeway over `max_jwt_leeway`,
  /// a zero cap or interval, an empty `fetch`), or the error of starting the thread.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static result<jwt_authenticator> make(jwt_authenticator_options options,
                                                                  fetch_function fetch = httplib_fetcher());

  /// The principal of the request's bearer token: exactly one `Authorization` field, `Bearer`,
  /// one or more spaces, the token (the rules of `token_authenticator`), then `check`.
  [[nodiscard]] MCPCORE_API std::optional<principal> authenticate(const http_request_view& req) const noexcept;

  /// Validates one compact JWS access token: size, form, header (`alg`, `typ`, `crit`, `kid`),
  /// key, signature, then the claims (`iss`, `aud`, `exp`, `nbf`, `iat`, `sub` / `client_id`).
  /// The principal's id is `sub` (else `client_id`); its kind `service` when there is no `sub`
  /// or it equals `client_id` (client credentials), else `human_interactive`; its tier, roles and
  /// scopes from `scopes`; `display_name` from `name`; `expires` from `exp`.
  [[nodiscard]] MCPCORE_API result<principal, jwt_refusal> check(std::string_view token) const noexcept;

  /// See the class comment.
  [[nodiscard]] MCPCORE_API credential_verdict revalidate(const principal& p) const noexcept;

  /// The counters now.
  [[nodiscard]] MCPCORE_API jwt_authenticator_stats stats() const noexcept;

 private:
  struct shared_state;
  explicit jwt_authenticator(std::shared_ptr<shared_state> state) noexcept;
  std::shared_ptr<shared_state> state_;
};

static_assert(authenticator<jwt_authenticator>);

}  // namespace transport

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_JWT_AUTHENTICATOR_HPP
