// SPDX-License-Identifier: Apache-2.0
// The JWT access-token authenticator: header and claim checks with mcpcore's JSON parser,
// signatures through cjose, the JWKS kept fresh by one refresher thread.
#include <mcpcore/transport/jwt_authenticator.hpp>

#include "authenticator_common.hpp"
#include "jwks.hpp"

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/base64.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>

#include <cjose/error.h>
#include <cjose/header.h>
#include <cjose/jws.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

namespace {

using detail::claim;
using detail::steady_time;
using detail::system_time;

constexpr std::array<std::string_view, 9> algorithm_names{"RS256", "RS384", "RS512", "PS256", "PS384",
                                                          "PS512", "ES256", "ES384", "ES512"};
constexpr std::array<std::string_view, jwt_refusal_count> refusal_names{
    "malformed", "too_large", "algorithm", "unknown_key", "signature", "issuer",
    "audience",  "expired",   "not_yet_valid", "no_subject", "internal"};

// A JOSE header nests little (`jwk` is an object); claims a little more (`act`, `cnf`).
constexpr std::uint32_t header_max_depth = 8;
constexpr std::uint32_t claims_max_depth = 16;

struct cjose_jws_release_fn {
  void operator()(cjose_jws_t* j) const noexcept { cjose_jws_release(j); }
};
using cjose_jws_ptr = std::unique_ptr<cjose_jws_t, cjose_jws_release_fn>;

bool is_b64url(std::string_view s) noexcept {
  return std::ranges::all_of(s, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// RFC 9068 §2.1 `at+jwt`, RFC 7519 §5.1 `JWT`, each with or without `application/` (RFC 7515 §4.1.9).
bool acceptable_typ(std::string_view typ) noexcept {
  constexpr std::string_view prefix = "application/";
  if (typ.size() > prefix.size() && mcpcore::detail::ascii_iequals(typ.substr(0, prefix.size()), prefix)) {
    typ.remove_prefix(prefix.size());
  }
  return mcpcore::detail::ascii_iequals(typ, "JWT") || mcpcore::detail::ascii_iequals(typ, "at+jwt");
}

// A NumericDate claim: an integer from 0 to `max_jwt_time`.
claim read_time(const json::value& v, std::int64_t& out) noexcept { return detail::read_time(v, max_jwt_time, out); }

// The token's scopes (`scope`, space-separated; else `scp`, an array or a space-separated
// string), or false when a claim has the wrong type.
bool read_scopes(const json::value& claims, std::vector<std::string_view>& out) {
  if (const json::value scope = claims.find("scope"); scope.exists()) {
    if (!scope.is_string()) return false;
    detail::split_scopes(scope.as_string(), out);
    return true;
  }
  const json::value scp = claims.find("scp");
  if (!scp.exists()) return true;
  if (scp.is_string()) {
    detail::split_scopes(scp.as_string(), out);
    return true;
  }
  if (!scp.is_array()) return false;
  for (const json::value s : scp.elements()) {
    if (!s.is_string()) return false;
    out.push_back(s.as_string());
  }
  return true;
}

// What the header says, once checked.
struct jose_header {
  jwt_algorithm alg = jwt_algorithm::rs256;
  std::optional<std::string> kid{};
};

}  // namespace

std::string_view to_string(jwt_algorithm a) noexcept {
  const auto i = static_cast<std::size_t>(a);
  return i < algorithm_names.size() ? algorithm_names[i] : std::string_view{};
}

std::optional<jwt_algorithm> parse_jwt_algorithm(std::string_view s) noexcept {
  for (std::size_t i = 0; i < algorithm_names.size(); ++i) {
    if (algorithm_names[i] == s) return static_cast<jwt_algorithm>(i);
  }
  return std::nullopt;
}

std::string_view to_string(jwt_refusal r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < refusal_names.size() ? refusal_names[i] : std::string_view{};
}

// ---- shared state -------------------------------------------------------------------------------

struct jwt_authenticator::shared_state {
  shared_state(jwt_authenticator_options o, fetch_function f)
      : options(std::move(o)), fetch(std::move(f)), injected_clock(static_cast<bool>(options.steady_now)) {
    started = steady_now();
  }
  shared_state(const shared_state&) = delete;
  shared_state& operator=(const shared_state&) = delete;
  ~shared_state() {
    {
      const std::lock_guard lock(schedule_mutex);
      stop = true;
    }
    wake.notify_all();
    if (refresher.joinable()) refresher.join();
  }

  [[nodiscard]] steady_time steady_now() const { return detail::steady_now(options); }
  [[nodiscard]] system_time system_now() const { return detail::system_now(options); }

  [[nodiscard]] std::shared_ptr<const detail::jwk_set> snapshot() const {
    const std::lock_guard lock(keys_mutex);
    return keys;
  }

  void refresh_once();
  void run_refresher();
  void want_refresh();
  [[nodiscard]] result<jose_header, jwt_refusal> read_header(std::string_view header_b64) const;
  [[nodiscard]] result<std::shared_ptr<const detail::jwk_set>, jwt_refusal> choose_key(const jose_header& h, const detail::jwk_entry*& key);
  [[nodiscard]] result<principal, jwt_refusal> read_claims(std::string_view payload) const;
  [[nodiscard]] result<principal, jwt_refusal> check(std::string_view token);

  const jwt_authenticator_options options;
  const fetch_function fetch;
  const bool injected_clock;

  mutable std::mutex keys_mutex;                  // guards `keys` (the pointer)
  std::shared_ptr<const detail::jwk_set> keys;    // null until a fetch succeeds

  std::mutex schedule_mutex;  // guards the members below
  std::condition_variable wake;
  bool stop = false;
  bool wanted = false;              // an unknown key asked for a fetch
  steady_time started{};
  steady_time last_attempt{};
  steady_time next_due{};
  std::optional<steady_time> last_success{};
  unsigned failures = 0;

  detail::check_counters<jwt_refusal, jwt_refusal_count> counts;
  std::atomic<std::uint64_t> fetches{0};
  std::atomic<std::uint64_t> fetch_failures{0};
  std::atomic<std::size_t> key_count{0};
  std::atomic<std::size_t> keys_ignored{0};

  std::thread refresher;  // last: started once everything above is in place
};

void jwt_authenticator::shared_state::refresh_once() {
  bool ok = false;
  try {
    fetch_request req;
    req.url = options.jwks_uri;
    req.headers.emplace_back("Accept", "application/jwk-set+json, application/json");
    req.timeout = options.fetch_timeout;
    req.max_body_bytes = options.max_jwks_bytes;
    const result<fetch_response> answer = fetch(req);
    if (answer && answer->status == 200) {
      auto set = detail::parse_jwks(answer->body, options.max_jwks_bytes, options.max_jwks_keys);
      if (set) {
        key_count.store(set->keys.size(), std::memory_order_relaxed);
        keys_ignored.store(set->ignored, std::memory_order_relaxed);
        auto fresh = std::make_shared<const detail::jwk_set>(std::move(*set));
        {
          const std::lock_guard lock(keys_mutex);
          keys.swap(fresh);
        }  // the previous set is released here, outside the lock
        ok = true;
      }
    }
  } catch (...) {
    ok = false;  // a throwing fetch function is a failed fetch
  }
  const steady_time now = steady_now();
  {
    const std::lock_guard lock(schedule_mutex);
    if (ok) {
      failures = 0;
      last_success = now;
      next_due = now + options.jwks_refresh;
    } else {
      ++failures;
      auto delay = options.jwks_retry;
      for (unsigned i = 1; i < failures && delay < options.jwks_refresh; ++i) delay *= 2;
      next_due = now + std::min(delay, options.jwks_refresh);
    }
  }
  // Counted once the keys are in force: a reader that sees the count sees the keys.
  if (!ok) fetch_failures.fetch_add(1, std::memory_order_release);
  fetches.fetch_add(1, std::memory_order_release);
}

void jwt_authenticator::shared_state::run_refresher() {
  try {
    std::unique_lock lock(schedule_mutex);
    while (!stop) {
      const steady_time now = steady_now();
      steady_time due = next_due;
      if (wanted) due = std::min(due, last_attempt + options.jwks_min_interval);
      if (now >= due) {
        wanted = false;
        last_attempt = now;
        lock.unlock();
        refresh_once();
        lock.lock();
        continue;
      }
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(due - now) + std::chrono::milliseconds{1};
      if (injected_clock) wait = std::min(wait, injected_clock_poll);
      wake.wait_for(lock, wait);
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): a lock failure ends the refresher; the keys in
                   // force stay and the staleness shows in revalidate
  }
}

void jwt_authenticator::shared_state::want_refresh() {
  const std::lock_guard lock(schedule_mutex);
  if (wanted) return;
  wanted = true;
  wake.notify_one();
}

result<jose_header, jwt_refusal> jwt_authenticator::shared_state::read_header(std::string_view header_b64) const {
  const auto text = mcpcore::detail::base64_decode(header_b64, mcpcore::detail::base64_alphabet::url);
  if (!text) return fail(jwt_refusal::malformed);
  json::parse_options limits;
  limits.max_depth = header_max_depth;
  limits.max_bytes = options.max_jwt_bytes;
  json::document doc{limits};
  const auto root = doc.parse(*text);
  if (!root || !root->is_object()) return fail(jwt_refusal::malformed);
  const json::value alg = root->find("alg");
  if (!alg.is_string()) return fail(jwt_refusal::malformed);
  // `none`, the HMAC family and anything not allowed stop here, before any key is looked up.
  const auto a = parse_jwt_algorithm(alg.as_string());
  if (!a || std::ranges::find(options.algorithms, *a) == options.algorithms.end()) return fail(jwt_refusal::algorithm);
  if (const json::value typ = root->find("typ"); typ.exists() && (!typ.is_string() || !acceptable_typ(typ.as_string()))) {
    return fail(jwt_refusal::malformed);
  }
  // RFC 7515 §4.1.11: no extension is understood, so a token that names one as critical is refused.
  if (root->find("crit").exists()) return fail(jwt_refusal::malformed);
  jose_header h;
  h.alg = *a;
  if (const json::value kid = root->find("kid"); kid.exists()) {
    if (!kid.is_string()) return fail(jwt_refusal::malformed);
    h.kid = std::string{kid.as_string()};
  }
  return h;
}

result<std::shared_ptr<const detail::jwk_set>, jwt_refusal> jwt_authenticator::shared_state::choose_key(
    const jose_header& h, const detail::jwk_entry*& key) {
  std::shared_ptr<const detail::jwk_set> set = snapshot();
  key = nullptr;
  bool kid_known = false;
  std::size_t fitting = 0;
  if (set) {
    for (const detail::jwk_entry& k : set->keys) {
      if (h.kid && k.kid != h.kid) continue;
      kid_known = true;
      if (!detail::key_fits(k, h.alg)) continue;
      if (++fitting == 1) key = &k;
    }
  }
  if (h.kid && kid_known && fitting == 0) return fail(jwt_refusal::algorithm);  // e.g. RS256 naming an EC key
  if (fitting == 0 || (!h.kid && fitting != 1)) {
    if (fitting == 0) want_refresh();
    key = nullptr;
    return fail(jwt_refusal::unknown_key);
  }
  return set;
}

result<principal, jwt_refusal> jwt_authenticator::shared_state::read_claims(std::string_view payload) const {
  json::parse_options limits;
  limits.max_depth = claims_max_depth;
  limits.max_bytes = options.max_jwt_bytes;
  json::document doc{limits};
  const auto root = doc.parse(payload);
  if (!root || !root->is_object()) return fail(jwt_refusal::malformed);
  const json::value& claims = *root;

  const json::value iss = claims.find("iss");
  if (!iss.exists()) return fail(jwt_refusal::issuer);
  if (!iss.is_string()) return fail(jwt_refusal::malformed);
  if (iss.as_string() != options.issuer) return fail(jwt_refusal::issuer);

  const detail::audience_claim aud = detail::read_audience(claims.find("aud"), options.audience);
  if (aud == detail::audience_claim::bad) return fail(jwt_refusal::malformed);
  if (aud != detail::audience_claim::held) return fail(jwt_refusal::audience);

  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(system_now().time_since_epoch()).count();
  const std::int64_t leeway = options.leeway.count();
  std::int64_t exp = 0;
  if (read_time(claims.find("exp"), exp) != claim::ok) return fail(jwt_refusal::malformed);
  if (now >= exp + leeway) return fail(jwt_refusal::expired);
  std::int64_t nbf = 0;
  const claim has_nbf = read_time(claims.find("nbf"), nbf);
  if (has_nbf == claim::bad) return fail(jwt_refusal::malformed);
  if (has_nbf == claim::ok && now + leeway < nbf) return fail(jwt_refusal::not_yet_valid);
  std::int64_t iat = 0;
  const claim has_iat = read_time(claims.find("iat"), iat);
  if (has_iat == claim::bad) return fail(jwt_refusal::malformed);
  if (has_iat == claim::ok && iat > now + leeway) return fail(jwt_refusal::not_yet_valid);

  const detail::subject subject = detail::read_subject(claims, max_jwt_subject_bytes);
  if (subject.state == claim::bad) return fail(jwt_refusal::malformed);
  if (subject.state == claim::absent) return fail(jwt_refusal::no_subject);

  std::vector<std::string_view> scopes;
  if (!read_scopes(claims, scopes)) return fail(jwt_refusal::malformed);

  principal p;
  p.id = std::string{subject.id};
  p.kind = subject.kind;
  detail::set_display_name(p, claims.find("name"), max_jwt_display_name_bytes);
  options.scopes.apply(scopes, p);
  p.expires = system_time{std::chrono::seconds{exp}};
  return p;
}

result<principal, jwt_refusal> jwt_authenticator::shared_state::check(std::string_view token) {
  if (token.size() > options.max_jwt_bytes) return fail(jwt_refusal::too_large);
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return fail(jwt_refusal::malformed);
  }
  const std::string_view header_b64 = token.substr(0, dot1);
  const std::string_view payload_b64 = token.substr(dot1 + 1, dot2 - dot1 - 1);
  const std::string_view signature_b64 = token.substr(dot2 + 1);
  if (header_b64.empty() || payload_b64.empty() || !is_b64url(header_b64) || !is_b64url(payload_b64) ||
      !is_b64url(signature_b64)) {
    return fail(jwt_refusal::malformed);
  }
  const auto header = read_header(header_b64);
  if (!header) return fail(header.error());
  if (signature_b64.empty()) return fail(jwt_refusal::signature);

  const detail::jwk_entry* key = nullptr;
  const auto keys_held = choose_key(*header, key);  // keeps the key alive while it is used
  if (!keys_held) return fail(keys_held.error());

  cjose_err err{};
  const cjose_jws_ptr jws{cjose_jws_import(token.data(), token.size(), &err)};
  if (!jws) return fail(err.code == CJOSE_ERR_NO_MEMORY ? jwt_refusal::internal : jwt_refusal::malformed);
  // cjose parses the header again (jansson) and verifies with the algorithm it reads. Two parsers
  // may read one header differently (a repeated `alg` member: the first here, the last there), so
  // the algorithm cjose will use must be the one checked above.
  cjose_header_t* const protected_header = cjose_jws_get_protected(jws.get());
  const char* const cjose_alg =
      protected_header != nullptr ? cjose_header_get(protected_header, CJOSE_HDR_ALG, &err) : nullptr;
  if (cjose_alg == nullptr || std::string_view{cjose_alg} != to_string(header->alg)) {
    return fail(jwt_refusal::algorithm);
  }
  if (!cjose_jws_verify(jws.get(), key->key.get(), &err)) {
    return fail(err.code == CJOSE_ERR_NO_MEMORY ? jwt_refusal::internal : jwt_refusal::signature);
  }
  std::uint8_t* plaintext = nullptr;
  std::size_t plaintext_len = 0;
  if (!cjose_jws_get_plaintext(jws.get(), &plaintext, &plaintext_len, &err) || plaintext == nullptr) {
    return fail(jwt_refusal::internal);
  }
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): cjose's bytes as characters
  return read_claims(std::string_view{reinterpret_cast<const char*>(plaintext), plaintext_len});
}

// ---- the public members -------------------------------------------------------------------------

jwt_authenticator::jwt_authenticator(std::shared_ptr<shared_state> state) noexcept : state_(std::move(state)) {}

namespace {

std::optional<std::string> options_problem(const jwt_authenticator_options& o, const fetch_function& fetch) {
  using std::chrono::milliseconds;
  if (auto problem = detail::issuer_audience_problem(o.issuer, o.audience)) return problem;
  if (auto problem = detail::url_option_problem("jwks_uri", o.jwks_uri)) return problem;
  if (o.algorithms.empty()) return "algorithms must name at least one algorithm";
  for (std::size_t i = 0; i < o.algorithms.size(); ++i) {
    if (to_string(o.algorithms[i]).empty()) return "algorithms holds a value outside jwt_algorithm";
    if (std::ranges::find(o.algorithms.begin(), o.algorithms.begin() + static_cast<std::ptrdiff_t>(i), o.algorithms[i]) !=
        o.algorithms.begin() + static_cast<std::ptrdiff_t>(i)) {
      return "algorithms lists " + std::string{to_string(o.algorithms[i])} + " twice";
    }
  }
  if (auto problem = detail::leeway_problem(o.leeway, max_jwt_leeway, "max_jwt_leeway")) return problem;
  if (o.max_jwt_bytes == 0 || o.max_jwks_bytes == 0 || o.max_jwks_keys == 0) return "the caps must not be 0";
  if (o.jwks_refresh <= milliseconds::zero() || o.jwks_retry <= milliseconds::zero() ||
      o.fetch_timeout <= milliseconds::zero() || o.max_jwks_staleness <= milliseconds::zero() ||
      o.jwks_min_interval < milliseconds::zero()) {
    return "jwks_refresh, jwks_retry, fetch_timeout and max_jwks_staleness must be positive, jwks_min_interval not negative";
  }
  if (o.jwks_retry > o.jwks_refresh) return "jwks_retry must not exceed jwks_refresh";
  if (!fetch) return "no fetch function";
  return std::nullopt;
}

}  // namespace

result<jwt_authenticator> jwt_authenticator::make(jwt_authenticator_options options, fetch_function fetch) {
  if (auto problem = options_problem(options, fetch)) {
    return fail(error{std::make_error_code(std::errc::invalid_argument), "jwt_authenticator: " + *problem});
  }
  auto state = std::make_shared<shared_state>(std::move(options), std::move(fetch));
  state->last_attempt = state->steady_now();
  state->refresh_once();  // a failure is not fatal: the refresher retries
  try {
    shared_state* const raw = state.get();
    state->refresher = std::thread([raw] { raw->run_refresher(); });
  } catch (const std::system_error& e) {
    return fail(error{e.code(), std::string{"jwt_authenticator: cannot start the refresher thread"}});
  }
  return jwt_authenticator(std::move(state));
}

std::optional<principal> jwt_authenticator::authenticate(const http_request_view& req) const noexcept {
  return detail::authenticate_bearer(*this, req);
}

result<principal, jwt_refusal> jwt_authenticator::check(std::string_view token) const noexcept {
  if (!state_) return fail(jwt_refusal::internal);
  return detail::counted_check(state_->counts, [&] { return state_->check(token); });
}

credential_verdict jwt_authenticator::revalidate(const principal& p) const noexcept {
  return detail::revalidate_unexpired(state_.get(), p, [](shared_state& s) {
    const steady_time now = s.steady_now();
    const std::lock_guard lock(s.schedule_mutex);
    const steady_time since = s.last_success.value_or(s.started);
    if (now - since > s.options.max_jwks_staleness) return credential_verdict::indeterminate;
    return credential_verdict::valid;
  });
}

jwt_authenticator_stats jwt_authenticator::stats() const noexcept {
  jwt_authenticator_stats s;
  if (!state_) return s;
  state_->counts.copy_to(s);
  s.fetches = state_->fetches.load(std::memory_order_acquire);
  s.fetch_failures = state_->fetch_failures.load(std::memory_order_acquire);
  s.keys = state_->key_count.load(std::memory_order_relaxed);
  s.keys_ignored = state_->keys_ignored.load(std::memory_order_relaxed);
  return s;
}

}  // namespace transport

MCPCORE_END_NAMESPACE
