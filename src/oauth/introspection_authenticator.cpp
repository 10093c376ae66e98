// SPDX-License-Identifier: Apache-2.0
// The token-introspection authenticator (RFC 7662): the request to the authorization server, the
// checks of its answer with mcpcore's JSON parser, and the bounded cache with single flight.
#include <mcpcore/transport/introspection_authenticator.hpp>

#include "authenticator_common.hpp"
#include "bearer_token.hpp"

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/detail/sha256.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

namespace {

using detail::claim;
using detail::steady_time;
using detail::system_time;
using digest = mcpcore::detail::sha256_digest;

constexpr std::array<std::string_view, introspection_refusal_count> refusal_names{
    "malformed", "too_large", "inactive", "issuer", "audience", "expired", "no_subject", "unavailable", "busy", "internal"};

// An introspection response is a flat object; `act` or `cnf` may nest a little.
constexpr std::uint32_t response_max_depth = 16;

// The cache and flight maps are keyed by a SHA-256 digest: its first bytes are already uniform.
struct digest_hash {
  std::size_t operator()(const digest& d) const noexcept {
    std::size_t h = 0;
    std::memcpy(&h, d.data(), sizeof h);
    return h;
  }
};

// application/x-www-form-urlencoded (RFC 6749 Appendix B): every byte but ALPHA, DIGIT and
// "-._~" percent-encoded (a space as %20, which every decoder reads as a space).
std::string form_encode(std::string_view s) {
  static constexpr std::string_view hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '.' || c == '_' || c == '~';
    if (plain) {
      out += c;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    out += '%';
    out += hex[static_cast<std::size_t>(u >> 4U)];
    out += hex[static_cast<std::size_t>(u & 0x0FU)];
  }
  return out;
}

// A NumericDate: an integer from 0 to `max_introspection_time`.
claim read_time(const json::value& v, std::int64_t& out) noexcept {
  return detail::read_time(v, max_introspection_time, out);
}

// What one introspection gave: the verdict, whether the authorization server answered usably
// (a 200 with a JSON object holding a boolean `active`), and how long an acceptance may be kept.
struct introspection {
  result<principal, introspection_refusal> outcome = fail(introspection_refusal::internal);
  bool answered = false;
  std::chrono::milliseconds keep{0};
};

// One introspection under way; the checks of the same token wait for it.
struct flight {
  bool done = false;
  result<principal, introspection_refusal> outcome = fail(introspection_refusal::internal);
};

// One remembered token: its principal (accepted) or its refusal, until `until`.
struct cache_entry {
  std::optional<principal> accepted{};
  introspection_refusal refusal = introspection_refusal::internal;
  steady_time until{};
  std::list<digest>::iterator lru{};
};

}  // namespace

std::string_view to_string(introspection_refusal r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < refusal_names.size() ? refusal_names[i] : std::string_view{};
}

// ---- shared state -------------------------------------------------------------------------------

struct introspection_authenticator::shared_state {
  shared_state(introspection_authenticator_options o, fetch_function f, std::string basic)
      : options(std::move(o)), fetch(std::move(f)), authorization(std::move(basic)) {}

  [[nodiscard]] steady_time steady_now() const { return detail::steady_now(options); }
  [[nodiscard]] system_time system_now() const { return detail::system_now(options); }

  [[nodiscard]] introspection introspect(std::string_view token) const;
  [[nodiscard]] introspection read_answer(std::string_view body) const;
  [[nodiscard]] result<principal, introspection_refusal> check(std::string_view token);
  void remember(const digest& key, const introspection& got);  // with `mutex` held
  void forget(std::unordered_map<digest, cache_entry, digest_hash>::iterator it) noexcept;  // likewise

  const introspection_authenticator_options options;
  const fetch_function fetch;
  const std::string authorization;  // "Basic <base64(form(id):form(secret))>"

  std::mutex mutex;  // guards the members below
  std::condition_variable landed;
  std::unordered_map<digest, cache_entry, digest_hash> cache;
  std::list<digest> lru;  // most recently used first
  std::unordered_map<digest, std::shared_ptr<flight>, digest_hash> flights;

  detail::check_counters<introspection_refusal, introspection_refusal_count> counts;
  std::atomic<std::uint64_t> introspections{0};
  std::atomic<std::uint64_t> introspection_failures{0};
  std::atomic<std::uint64_t> cache_hits{0};
  std::atomic<std::uint64_t> shared{0};
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::size_t> cache_size{0};
  std::atomic<bool> last_failed{false};
};

introspection introspection_authenticator::shared_state::read_answer(std::string_view body) const {
  introspection out;
  json::parse_options limits;
  limits.max_depth = response_max_depth;
  limits.max_bytes = options.max_response_bytes;
  json::document doc{limits};
  const auto root = doc.parse(body);
  if (!root || !root->is_object()) return out;  // not an answer: unavailable
  const json::value& answer = *root;
  const json::value active = answer.find("active");
  if (!active.is_bool()) return out;
  out.answered = true;
  const auto refuse = [&out](introspection_refusal r) -> introspection {
    out.outcome = fail(r);
    return out;
  };
  // RFC 7662 §2.2: with `active` false nothing else in the answer is meaningful.
  if (!active.as_bool()) return refuse(introspection_refusal::inactive);

  if (const json::value iss = answer.find("iss"); iss.exists()) {
    if (!iss.is_string()) return refuse(introspection_refusal::malformed);
    if (iss.as_string() != options.issuer) return refuse(introspection_refusal::issuer);
  }

  const detail::audience_claim aud = detail::read_audience(answer.find("aud"), options.audience);
  if (aud == detail::audience_claim::bad) return refuse(introspection_refusal::malformed);
  const bool audience_found = aud == detail::audience_claim::held ||
                              (aud == detail::audience_claim::absent && !options.require_audience);
  if (!audience_found) return refuse(introspection_refusal::audience);

  const system_time wall = system_now();
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  const std::int64_t leeway = options.leeway.count();
  std::int64_t exp = 0;
  const claim has_exp = read_time(answer.find("exp"), exp);
  if (has_exp == claim::bad) return refuse(introspection_refusal::malformed);
  if (has_exp == claim::ok && now >= exp + leeway) return refuse(introspection_refusal::expired);
  std::int64_t nbf = 0;
  const claim has_nbf = read_time(answer.find("nbf"), nbf);
  if (has_nbf == claim::bad) return refuse(introspection_refusal::malformed);
  if (has_nbf == claim::ok && now + leeway < nbf) return refuse(introspection_refusal::inactive);

  const detail::subject subject = detail::read_subject(answer, max_introspection_subject_bytes);
  if (subject.state == claim::bad) return refuse(introspection_refusal::malformed);
  if (subject.state == claim::absent) return refuse(introspection_refusal::no_subject);

  std::vector<std::string_view> scopes;
  if (const json::value scope = answer.find("scope"); scope.exists()) {
    if (!scope.is_string()) return refuse(introspection_refusal::malformed);
    detail::split_scopes(scope.as_string(), scopes);
  }

  principal p;
  p.id = std::string{subject.id};
  p.kind = subject.kind;
  detail::set_display_name(p, answer.find("username"), max_introspection_display_name_bytes);
  options.scopes.apply(scopes, p);
  out.keep = options.positive_ttl;
  if (has_exp == claim::ok) {
    p.expires = system_time{std::chrono::seconds{exp}};
    // Never remembered beyond `exp`: an answer accepted within the leeway is not remembered.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.expires - wall);
    out.keep = std::max(std::min(out.keep, left), std::chrono::milliseconds::zero());
  }
  out.outcome = std::move(p);
  return out;
}

introspection introspection_authenticator::shared_state::introspect(std::string_view token) const {
  fetch_request req;
  req.url = options.introspection_endpoint;
  req.method = "POST";
  req.content_type = "application/x-www-form-urlencoded";
  req.body = "token=" + form_encode(token) + "&token_type_hint=access_token";
  req.headers.emplace_back("Authorization", authorization);
  req.headers.emplace_back("Accept", "application/json");
  req.timeout = options.fetch_timeout;
  req.max_body_bytes = options.max_response_bytes;
  introspection unavailable;
  unavailable.outcome = fail(introspection_refusal::unavailable);
  std::optional<result<fetch_response>> answer;
  try {
    answer.emplace(fetch(req));
  } catch (...) {
    return unavailable;  // a throwing fetch function is a failed introspection
  }
  const result<fetch_response>& got = *answer;
  if (!got || got->status != 200 || got->body.size() > options.max_response_bytes) return unavailable;
  introspection read = read_answer(got->body);
  if (!read.answered) return unavailable;
  return read;
}

void introspection_authenticator::shared_state::forget(std::unordered_map<digest, cache_entry, digest_hash>::iterator it) noexcept {
  lru.erase(it->second.lru);
  cache.erase(it);
  cache_size.store(cache.size(), std::memory_order_relaxed);
}

void introspection_authenticator::shared_state::remember(const digest& key, const introspection& got) {
  if (!got.answered) return;
  const auto keep = got.outcome ? got.keep : options.negative_ttl;
  if (keep <= std::chrono::milliseconds::zero()) return;
  if (const auto old = cache.find(key); old != cache.end()) forget(old);
  while (!cache.empty() && cache.size() >= options.max_cache_entries) {
    forget(cache.find(lru.back()));
    evictions.fetch_add(1, std::memory_order_relaxed);
  }
  cache_entry e;
  if (got.outcome) {
    e.accepted = *got.outcome;
  } else {
    e.refusal = got.outcome.error();
  }
  e.until = steady_now() + keep;
  lru.push_front(key);
  e.lru = lru.begin();
  try {
    cache.emplace(key, std::move(e));
  } catch (...) {
    lru.pop_front();
    throw;
  }
  cache_size.store(cache.size(), std::memory_order_relaxed);
}

result<principal, introspection_refusal> introspection_authenticator::shared_state::check(std::string_view token) {
  if (token.size() > options.max_token_bytes) return fail(introspection_refusal::too_large);
  if (!detail::is_b64token(token)) return fail(introspection_refusal::malformed);
  const digest key = mcpcore::detail::sha256{}.update(token).finish();

  std::shared_ptr<flight> mine;
  {
    std::unique_lock lock(mutex);
    if (const auto hit = cache.find(key); hit != cache.end()) {
      const cache_entry& e = hit->second;
      // An acceptance also lapses at its `exp` by the wall clock (which may have jumped).
      const bool fresh = steady_now() < e.until && (!e.accepted || system_now() < e.accepted->expires);
      if (fresh) {
        lru.splice(lru.begin(), lru, e.lru);
        cache_hits.fetch_add(1, std::memory_order_relaxed);
        if (e.accepted) return *e.accepted;
        return fail(e.refusal);
      }
      forget(hit);
    }
    if (const auto under_way = flights.find(key); under_way != flights.end()) {
      const std::shared_ptr<flight> theirs = under_way->second;
      shared.fetch_add(1, std::memory_order_relaxed);
      // The introspection under way ends within its fetch's timeouts; the bound only keeps a
      // fetch function that ignores them from holding every waiter forever.
      if (!landed.wait_for(lock, 2 * options.fetch_timeout, [&theirs] { return theirs->done; })) {
        return fail(introspection_refusal::unavailable);
      }
      return theirs->outcome;
    }
    if (flights.size() >= options.max_inflight) return fail(introspection_refusal::busy);
    mine = std::make_shared<flight>();
    flights.emplace(key, mine);
  }

  introspection got;
  try {
    introspections.fetch_add(1, std::memory_order_relaxed);
    got = introspect(token);
  } catch (...) {
    got = introspection{};  // internal, not remembered
  }
  if (got.answered) {
    last_failed.store(false, std::memory_order_relaxed);
  } else if (!got.outcome && got.outcome.error() == introspection_refusal::unavailable) {
    last_failed.store(true, std::memory_order_relaxed);
    introspection_failures.fetch_add(1, std::memory_order_relaxed);
  }

  const std::lock_guard lock(mutex);
  try {
    remember(key, got);
  } catch (...) {  // NOLINT(bugprone-empty-catch): an entry that cannot be stored is not remembered
  }
  // The waiters get the outcome even if copying it for them fails: they get `internal` then.
  try {
    mine->outcome = got.outcome;
  } catch (...) {
    mine->outcome = fail(introspection_refusal::internal);
  }
  mine->done = true;
  flights.erase(key);
  landed.notify_all();
  return std::move(got.outcome);
}

// ---- the public members -------------------------------------------------------------------------

introspection_authenticator::introspection_authenticator(std::shared_ptr<shared_state> state) noexcept
    : state_(std::move(state)) {}

namespace {

std::optional<std::string> options_problem(const introspection_authenticator_options& o, const fetch_function& fetch) {
  using std::chrono::milliseconds;
  if (o.introspection_endpoint.empty()) return "introspection_endpoint is required";
  if (auto problem = detail::url_option_problem("introspection_endpoint", o.introspection_endpoint)) return problem;
  if (o.client_id.empty()) return "client_id is required";
  if (o.client_secret.empty()) return "client_secret is required";
  if (auto problem = detail::issuer_audience_problem(o.issuer, o.audience)) return problem;
  if (auto problem = detail::leeway_problem(o.leeway, max_introspection_leeway, "max_introspection_leeway")) return problem;
  if (o.max_token_bytes == 0 || o.max_response_bytes == 0 || o.max_cache_entries == 0 || o.max_inflight == 0) {
    return "the caps (max_token_bytes, max_response_bytes, max_cache_entries, max_inflight) must not be 0";
  }
  if (o.fetch_timeout <= milliseconds::zero()) return "fetch_timeout must be positive";
  if (o.positive_ttl < milliseconds::zero() || o.negative_ttl < milliseconds::zero()) {
    return "positive_ttl and negative_ttl must not be negative";
  }
  if (!fetch) return "no fetch function";
  return std::nullopt;
}

}  // namespace

result<introspection_authenticator> introspection_authenticator::make(introspection_authenticator_options options,
                                                                      fetch_function fetch) {
  if (auto problem = options_problem(options, fetch)) {
    return fail(error{std::make_error_code(std::errc::invalid_argument), "introspection_authenticator: " + *problem});
  }
  std::string basic = "Basic ";
  mcpcore::detail::base64_encode(basic, form_encode(options.client_id) + ":" + form_encode(options.client_secret),
                                 mcpcore::detail::base64_alphabet::standard);
  return introspection_authenticator(std::make_shared<shared_state>(std::move(options), std::move(fetch), std::move(basic)));
}

std::optional<principal> introspection_authenticator::authenticate(const http_request_view& req) const noexcept {
  return detail::authenticate_bearer(*this, req);
}

result<principal, introspection_refusal> introspection_authenticator::check(std::string_view token) const noexcept {
  if (!state_) return fail(introspection_refusal::internal);
  return detail::counted_check(state_->counts, [&] { return state_->check(token); });
}

credential_verdict introspection_authenticator::revalidate(const principal& p) const noexcept {
  return detail::revalidate_unexpired(state_.get(), p, [](const shared_state& s) {
    return s.last_failed.load(std::memory_order_relaxed) ? credential_verdict::indeterminate : credential_verdict::valid;
  });
}

introspection_authenticator_stats introspection_authenticator::stats() const noexcept {
  introspection_authenticator_stats s;
  if (!state_) return s;
  state_->counts.copy_to(s);
  s.introspections = state_->introspections.load(std::memory_order_relaxed);
  s.introspection_failures = state_->introspection_failures.load(std::memory_order_relaxed);
  s.cache_hits = state_->cache_hits.load(std::memory_order_relaxed);
  s.shared = state_->shared.load(std::memory_order_relaxed);
  s.evictions = state_->evictions.load(std::memory_order_relaxed);
  s.cache_entries = state_->cache_size.load(std::memory_order_relaxed);
  return s;
}

}  // namespace transport

MCPCORE_END_NAMESPACE
