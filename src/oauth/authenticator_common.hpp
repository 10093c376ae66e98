// SPDX-License-Identifier: Apache-2.0
// What the JWT and the token-introspection authenticators share (internal): the clocks, the
// counted `check`, the bearer-then-check `authenticate`, the expiry test of `revalidate`, the
// option checks and the reading of the claims both understand (`iss`-like strings aside).
#ifndef MCPCORE_SRC_OAUTH_AUTHENTICATOR_COMMON_HPP
#define MCPCORE_SRC_OAUTH_AUTHENTICATOR_COMMON_HPP

#include "bearer_token.hpp"

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/oauth_common.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

using steady_time = std::chrono::steady_clock::time_point;
using system_time = std::chrono::system_clock::time_point;

/// The wall clock of `c`: its `system_now`, else `std::chrono::system_clock`.
[[nodiscard]] inline system_time system_now(const oauth_clock& c) {
  return c.system_now ? c.system_now() : std::chrono::system_clock::now();
}

/// The steady clock of `c`: its `steady_now`, else `std::chrono::steady_clock`.
[[nodiscard]] inline steady_time steady_now(const oauth_clock& c) {
  return c.steady_now ? c.steady_now() : std::chrono::steady_clock::now();
}

/// The accepted and refused counters of an authenticator's shared state (read by its `stats`).
template <class Refusal, std::size_t RefusalCount>
struct check_counters {
  std::atomic<std::uint64_t> accepted{0};
  std::array<std::atomic<std::uint64_t>, RefusalCount> refused{};

  void count(const result<principal, Refusal>& outcome) noexcept {
    if (outcome) {
      accepted.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const auto i = static_cast<std::size_t>(outcome.error());
    if (i < refused.size()) refused.at(i).fetch_add(1, std::memory_order_relaxed);
  }

  void copy_to(oauth_check_counts<Refusal, RefusalCount>& out) const noexcept {
    out.accepted = accepted.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < out.refused.size(); ++i) out.refused.at(i) = refused.at(i).load(std::memory_order_relaxed);
  }
};

/// `check()`, a throw taken as `Refusal::internal`, the outcome counted in `counters`.
template <class Refusal, std::size_t RefusalCount, class Check>
[[nodiscard]] result<principal, Refusal> counted_check(check_counters<Refusal, RefusalCount>& counters,
                                                       Check&& check) noexcept {
  result<principal, Refusal> out = fail(Refusal::internal);
  try {
    out = std::forward<Check>(check)();
  } catch (...) {
    out = fail(Refusal::internal);
  }
  counters.count(out);
  return out;
}

/// The principal of the request's bearer token (`bearer_token`), by `auth.check`; nullopt for no
/// token or a refused one.
template <class Authenticator>
[[nodiscard]] std::optional<principal> authenticate_bearer(const Authenticator& auth, const http_request_view& req) noexcept {
  const std::optional<std::string_view> token = bearer_token(req);
  if (!token) return std::nullopt;
  auto p = auth.check(*token);
  if (!p) return std::nullopt;
  return std::move(*p);
}

/// `revalidate` of an authenticator whose shared state is `state` (null when moved from):
/// `revoked` without a state or once `p.expires` has passed by the state's clock (`options`),
/// else `rest(*state)`; `indeterminate` when anything throws.
template <class State, class Rest>
[[nodiscard]] credential_verdict revalidate_unexpired(State* state, const principal& p, Rest&& rest) noexcept {
  try {
    if (state == nullptr) return credential_verdict::revoked;
    if (p.expires != system_time::max() && system_now(state->options) >= p.expires) return credential_verdict::revoked;
    return std::forward<Rest>(rest)(*state);
  } catch (...) {
    return credential_verdict::indeterminate;
  }
}

// ---- option checks ------------------------------------------------------------------------------

/// The problem with the required `issuer` and `audience`, if any.
[[nodiscard]] inline std::optional<std::string> issuer_audience_problem(std::string_view issuer, std::string_view audience) {
  if (issuer.empty()) return "issuer is required";
  if (audience.empty()) return "audience (this resource's canonical URI) is required";
  return std::nullopt;
}

/// The problem with the URL option `name`, if it is not `http(s)://` (the fetcher checks more).
[[nodiscard]] inline std::optional<std::string> url_option_problem(std::string_view name, std::string_view url) {
  if (!url.starts_with("https://") && !url.starts_with("http://")) return std::string{name} + " must be an https:// URL";
  return std::nullopt;
}

/// The problem with `leeway`, if it is not from 0 to `max` (the constant `max_name`).
[[nodiscard]] inline std::optional<std::string> leeway_problem(std::chrono::seconds leeway, std::chrono::seconds max,
                                                                std::string_view max_name) {
  if (leeway.count() < 0 || leeway > max) {
    return "leeway must be from 0 to " + std::string{max_name} + " (" + std::to_string(max.count()) + " s)";
  }
  return std::nullopt;
}

// ---- claims -------------------------------------------------------------------------------------

/// Whether `s` holds a control character (C0 or DEL).
[[nodiscard]] inline bool has_control(std::string_view s) noexcept {
  return std::ranges::any_of(s, [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20U || u == 0x7FU;
  });
}

/// Appends the space-separated scopes of `s` to `out`.
inline void split_scopes(std::string_view s, std::vector<std::string_view>& out) {
  while (!s.empty()) {
    const std::size_t space = s.find(' ');
    const std::string_view one = s.substr(0, space);
    if (!one.empty()) out.push_back(one);
    if (space == std::string_view::npos) break;
    s.remove_prefix(space + 1);
  }
}

/// What reading one claim found.
enum class claim : std::uint8_t { absent, bad, ok };

/// A NumericDate claim: an integer from 0 to `max`.
[[nodiscard]] inline claim read_time(const json::value& v, std::int64_t max, std::int64_t& out) noexcept {
  if (!v.exists()) return claim::absent;
  if (!v.is_integer()) return claim::bad;
  const auto n = v.to_int64();
  if (!n || *n < 0 || *n > max) return claim::bad;
  out = *n;
  return claim::ok;
}

/// `sub` or `client_id`: a non-empty string of at most `max_bytes`, no control character.
[[nodiscard]] inline claim read_id(const json::value& v, std::size_t max_bytes, std::string_view& out) noexcept {
  if (!v.exists()) return claim::absent;
  if (!v.is_string()) return claim::bad;
  const std::string_view s = v.as_string();
  if (s.empty() || s.size() > max_bytes || has_control(s)) return claim::bad;
  out = s;
  return claim::ok;
}

/// What an `aud` member says of this resource's URI.
enum class audience_claim : std::uint8_t {
  absent,    ///< no `aud`
  bad,       ///< neither a string nor an array of strings
  held,      ///< it is, or holds, the URI
  not_held,  ///< it does not
};

/// Reads `aud`, a string or an array of strings, against `audience`.
[[nodiscard]] inline audience_claim read_audience(const json::value& aud, std::string_view audience) noexcept {
  if (aud.is_string()) return aud.as_string() == audience ? audience_claim::held : audience_claim::not_held;
  if (aud.is_array()) {
    bool found = false;
    for (const json::value a : aud.elements()) {
      if (!a.is_string()) return audience_claim::bad;
      found = found || a.as_string() == audience;
    }
    return found ? audience_claim::held : audience_claim::not_held;
  }
  return aud.exists() ? audience_claim::bad : audience_claim::absent;
}

/// Who a token speaks for, from its `sub` and `client_id`.
struct subject {
  claim state = claim::absent;  ///< `bad` if either is, `absent` if both are, else `ok`
  std::string_view id{};        ///< `sub`, else `client_id`
  principal_kind kind = principal_kind::service;  ///< `service` without `sub` or when it is `client_id`
};

/// The subject of the claims object `claims`, each id at most `max_bytes`.
[[nodiscard]] inline subject read_subject(const json::value& claims, std::size_t max_bytes) noexcept {
  std::string_view sub;
  std::string_view client_id;
  const claim has_sub = read_id(claims.find("sub"), max_bytes, sub);
  const claim has_client = read_id(claims.find("client_id"), max_bytes, client_id);
  subject out;
  if (has_sub == claim::bad || has_client == claim::bad) {
    out.state = claim::bad;
    return out;
  }
  if (has_sub == claim::absent && has_client == claim::absent) return out;
  out.state = claim::ok;
  out.id = has_sub == claim::ok ? sub : client_id;
  out.kind = has_sub == claim::absent || (has_client == claim::ok && sub == client_id) ? principal_kind::service
                                                                                       : principal_kind::human_interactive;
  return out;
}

/// Sets `p.display_name` from `name` when it is a non-empty string of at most `max_bytes`
/// without a control character; anything else is dropped.
inline void set_display_name(principal& p, const json::value& name, std::size_t max_bytes) {
  if (!name.is_string()) return;
  const std::string_view n = name.as_string();
  if (!n.empty() && n.size() <= max_bytes && !has_control(n)) p.display_name = std::string{n};
}

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_SRC_OAUTH_AUTHENTICATOR_COMMON_HPP
