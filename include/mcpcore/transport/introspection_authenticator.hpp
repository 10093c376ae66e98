// SPDX-License-Identifier: Apache-2.0
// The token-introspection authenticator: OAuth 2.1 resource-server validation of opaque access
// tokens by asking the authorization server (RFC 7662; docs/oauth.md#introspection).
#ifndef MCPCORE_TRANSPORT_INTROSPECTION_AUTHENTICATOR_HPP
#define MCPCORE_TRANSPORT_INTROSPECTION_AUTHENTICATOR_HPP

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

MCPCORE_BEGIN_NAMESPACE

namespace transport {

/// Longest token `check` considers, in bytes (default of
/// `introspection_authenticator_options::max_token_bytes`): the bearer-token cap of
/// `token_authenticator` (`max_bearer_token_bytes`, which lives with mcpcore::transport). A longer
/// token is refused `too_large` before it is hashed or sent anywhere.
inline constexpr std::size_t max_introspection_token_bytes = 4096;
/// Largest introspection response accepted, in bytes (default of
/// `introspection_authenticator_options::max_response_bytes`): the fetch is cut off past it.
inline constexpr std::size_t max_introspection_response_bytes = std::size_t{64} << 10U;
/// Most tokens the cache remembers (default of `max_cache_entries`); the least recently used
/// entry goes first.
inline constexpr std::size_t default_introspection_cache_entries = 10000;
/// How long an accepted token is remembered (default of `positive_ttl`); never beyond its `exp`.
inline constexpr std::chrono::milliseconds default_introspection_positive_ttl{std::chrono::seconds{60}};
/// How long a refused token is remembered (default of `negative_ttl`).
inline constexpr std::chrono::milliseconds default_introspection_negative_ttl{std::chrono::seconds{5}};
/// Most introspections of distinct tokens under way at once (default of `max_inflight`).
inline constexpr std::size_t default_introspection_max_inflight = 8;
/// The default clock leeway applied to `exp` and `nbf`.
inline constexpr std::chrono::seconds default_introspection_leeway{30};
/// The largest clock leeway `introspection_authenticator::make` accepts.
inline constexpr std::chrono::seconds max_introspection_leeway{300};
/// Longest `username` kept as `principal::display_name`, in bytes; a longer one is dropped.
inline constexpr std::size_t max_introspection_display_name_bytes = 128;
/// Longest `sub` or `client_id` accepted as a principal id, in bytes.
inline constexpr std::size_t max_introspection_subject_bytes = 1024;
/// The latest time accepted in `exp` and `nbf`, in seconds since the epoch: 2^33 - 1.
inline constexpr std::int64_t max_introspection_time = (std::int64_t{1} << 33U) - 1;

/// Why `introspection_authenticator::check` refused a token (docs/oauth.md#introspection-refusals).
enum class introspection_refusal : std::uint8_t {
  malformed,    ///< the token is not a `b64token`, or the answer has a member of the wrong type
  too_large,    ///< the token is longer than `max_token_bytes`
  inactive,     ///< the answer says `"active": false`, or its `nbf` is in the future
  issuer,       ///< the answer's `iss` is not the configured issuer
  audience,     ///< the answer's `aud` does not hold this resource's URI, or is absent
  expired,      ///< the answer's `exp` passed (beyond the leeway)
  no_subject,   ///< the answer has neither `sub` nor `client_id`
  unavailable,  ///< no usable answer: no connection, a timeout, a status other than 200, not JSON
  busy,         ///< `max_inflight` introspections of other tokens were under way
  internal,     ///< an allocation or library failure
};
/// How many `introspection_refusal` values there are.
inline constexpr std::size_t introspection_refusal_count = 10;

/// "malformed", "too_large", ..., "internal"; "" for a value outside the enumeration.
[[nodiscard]] MCPCORE_API std::string_view to_string(introspection_refusal r) noexcept;

/// How an `introspection_authenticator` asks about tokens and remembers the answers
/// (docs/oauth.md#introspection-options). The clocks (`oauth_clock`): `system_now` for `exp` and
/// `nbf`, `steady_now` for the cache.
struct introspection_authenticator_options : oauth_clock {
  /// The authorization server's introspection endpoint (`https://`). Required.
  std::string introspection_endpoint{};
  /// This resource server's client id at the authorization server. Required.
  std::string client_id{};
  /// Its client secret. Both go in an HTTP Basic `Authorization` field, each form-urlencoded
  /// first (RFC 7662 §2.1, RFC 6749 §2.3.1). Required.
  std::string client_secret{};
  /// The authorization server's issuer identifier: an answer's `iss`, when present, must equal it
  /// exactly. Required.
  std::string issuer{};
  /// This resource's canonical URI (RFC 8707): the answer's `aud`, a string or an array of
  /// strings, must hold it exactly. Required.
  std::string audience{};
  /// Whether an answer without `aud` is refused `audience` (on by default: a token meant for any
  /// resource of the authorization server is not accepted here unless this is turned off).
  bool require_audience = true;
  /// The answer's `scope` (space-separated) as tier and roles.
  scope_map scopes{};
  /// Clock skew allowed on `exp` and `nbf`: 0 to `max_introspection_leeway`.
  std::chrono::seconds leeway = default_introspection_leeway;
  /// Cap on a token's length.
  std::size_t max_token_bytes = max_introspection_token_bytes;
  /// Cap on an introspection response's size.
  std::size_t max_response_bytes = max_introspection_response_bytes;
  /// The timeout of one introspection request (`fetch_request::timeout`).
  std::chrono::milliseconds fetch_timeout = default_fetch_timeout;
  /// Cap on the tokens remembered.
  std::size_t max_cache_entries = default_introspection_cache_entries;
  /// How long an accepted token is remembered, capped at its `exp`; 0: not remembered.
  std::chrono::milliseconds positive_ttl = default_introspection_positive_ttl;
  /// How long a token refused on the authorization server's answer is remembered; 0: not
  /// remembered.
  std::chrono::milliseconds negative_ttl = default_introspection_negative_ttl;
  /// Cap on the introspections of distinct tokens under way at once; past it, `busy`.
  std::size_t max_inflight = default_introspection_max_inflight;
};

/// Counters of an `introspection_authenticator` (shared by its copies), for metrics and tests.
/// `accepted`, `refused` and `refusals(r)` come from `oauth_check_counts`.
struct introspection_authenticator_stats : oauth_check_counts<introspection_refusal, introspection_refusal_count> {
  std::uint64_t introspections = 0;          ///< requests sent to the introspection endpoint
  std::uint64_t introspection_failures = 0;  ///< of which got no usable answer (`unavailable`)
  std::uint64_t cache_hits = 0;              ///< checks answered from the cache
  std::uint64_t shared = 0;                  ///< checks that waited for an introspection under way
  std::uint64_t evictions = 0;               ///< entries dropped to keep the cache within its cap
  std::size_t cache_entries = 0;             ///< tokens remembered now
};

/// OAuth 2.1 opaque access tokens, validated by the authorization server's introspection endpoint
/// (RFC 7662; docs/oauth.md#introspection; `authenticator` concept).
///
/// `check(token)` answers from a bounded cache keyed by the SHA-256 of the token (the token itself
/// is never stored); on a miss it POSTs `token=<token>&token_type_hint=access_token` to the
/// endpoint with the resource server's own credentials (HTTP Basic) and checks the answer:
/// `active`, then `iss`, `aud`, `exp`, `nbf`, `sub` / `client_id`. An accepted token is remembered
/// for `positive_ttl`, never beyond its `exp`; a token refused on the answer (`inactive`, a wrong
/// issuer, ...) for `negative_ttl`, so that a flood of one bad token does not flood the
/// authorization server. No usable answer (`unavailable`) is not remembered.
///
/// @par Blocking
/// A cache miss blocks the calling thread for the introspection request, up to `fetch_timeout`
/// per connect, read and write. The Asio server authenticates on its I/O threads, so a slow
/// authorization server stalls the connections of those threads. Two bounds keep that contained:
/// concurrent checks of one token share one introspection (single flight: the others wait for it,
/// at most twice `fetch_timeout`, and get its answer), and at most `max_inflight` introspections
/// of distinct tokens run at once (a check past it is refused `busy` at once, counted, not
/// waited for).
///
/// @par Revocation
/// A token revoked at the authorization server is refused to new requests once its cache entry
/// has lapsed, within `positive_ttl`; an open stream authenticated with it keeps going until its
/// `exp` (`revalidate` sees the principal, not the token, and does not introspect).
///
/// `revalidate(p)`: `revoked` once `p.expires` has passed; `indeterminate` while the last
/// introspection got no usable answer (the authorization server cannot be reached: grace
/// applies); `valid` otherwise.
///
/// @par Sharing and thread safety
/// Copies share the cache and the counters. Every member may be called concurrently; a moved-from
/// authenticator admits nobody (`check` → `internal`, `revalidate` → `revoked`). No thread of its
/// own is started.
class introspection_authenticator {
 public:
  /// Validates `options`. Errors: `std::errc::invalid_argument` with a message naming the option
  /// (a required one empty, an endpoint that is not `http(s)://`, a leeway over
  /// `max_introspection_leeway`, a zero cap, a non-positive timeout, a negative TTL, an empty
  /// `fetch`). Nothing is fetched.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static result<introspection_authenticator> make(introspection_authenticator_options options,
                                                                            fetch_function fetch = httplib_fetcher());

  /// The principal of the request's bearer token: exactly one `Authorization` field, `Bearer`,
  /// one or more spaces, the token (the rules of `token_authenticator`), then `check`. May block
  /// (see the class comment).
  [[nodiscard]] MCPCORE_API std::optional<principal> authenticate(const http_request_view& req) const noexcept;

  /// Validates one opaque access token (see the class comment). The principal's id is `sub` (else
  /// `client_id`); its kind `service` when there is no `sub` or it equals `client_id` (client
  /// credentials), else `human_interactive`; its tier, roles and scopes from `scopes`;
  /// `display_name` from `username`; `expires` from `exp` (`max()` without one).
  [[nodiscard]] MCPCORE_API result<principal, introspection_refusal> check(std::string_view token) const noexcept;

  /// See the class comment.
  [[nodiscard]] MCPCORE_API credential_verdict revalidate(const principal& p) const noexcept;

  /// The counters now.
  [[nodiscard]] MCPCORE_API introspection_authenticator_stats stats() const noexcept;

 private:
  struct shared_state;
  explicit introspection_authenticator(std::shared_ptr<shared_state> state) noexcept;
  std::shared_ptr<shared_state> state_;
};

static_assert(authenticator<introspection_authenticator>);

}  // namespace transport

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_INTROSPECTION_AUTHENTICATOR_HPP
