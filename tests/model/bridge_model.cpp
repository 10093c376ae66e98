// SPDX-License-Identifier: Apache-2.0
// Model test of the progress bridge on one session (docs/sessions.md#get-attach-replay-resume,
// #the-replay-ring, #pinned-finals, #streamed-post, #progress-records, #ordering-guarantees):
// random schedules drive the real `progress_bridge`, `session_stream` and `session_registry` (one
// manual clock) through a simulated client — streamed and GET-only calls, their POST pumps, at most
// one GET connection, cancels, sweeps, clock jumps — while a plain model written from the reference
// predicts every verdict, every committed frame, every pin and every charge. After each step the
// library and the model must agree, and the ordering guarantees of
// docs/sessions.md#ordering-guarantees must hold on every wire the client reads. Small random ring
// bounds make eviction, pin overshoot, gaps, pin_slots refusals, reclaims, parks and pressure
// expiry common.
#include <mcpcore/session/progress_bridge.hpp>

#include <doctest/doctest.h>

#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rec_state = mcpcore::bridge_record_state;
using mcpcore::arm_outcome;
using mcpcore::attach_status;
using mcpcore::bridge_reject;
using mcpcore::cancel_outcome;
using mcpcore::max_pinned_finals;

std::size_t env_or(const char* name, std::size_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 10);
  return fallback;
}

constexpr std::string_view principal = "alice";
constexpr int owner_server = -1;  // a frame the server published itself (a notification)
// In-call messages a record queues while it cannot project them (the bridge's bound; one more is
// dropped and counted `frames_dropped`).
constexpr std::size_t pending_messages = 64;

// An in-call message of call `index` (a log notification the tool sends during the call).
std::string call_message(int index) {
  return R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"call","data":)" +
         std::to_string(index) + "}}";
}

std::string final_text(std::int64_t id) {
  const std::string n = std::to_string(id);
  return R"({"jsonrpc":"2.0","id":)" + n + R"(,"result":{"content":[{"type":"text","text":"final-)" + n +
         R"("}]}})";
}

// The complete result the detached work of call `id` finishes with (it replaces the call's own).
mcpcore::operation_final finished_final(std::int64_t id) {
  mcpcore::operation_final f;
  f.result_json = R"({"content":[{"type":"text","text":"finished-)" + std::to_string(id) + R"("}]})";
  return f;
}

// What the run exercised and what it found (summed over schedules).
struct tallies {
  std::array<std::uint64_t, mcpcore::bridge_reject_count> refusals{};
  std::uint64_t reservations = 0, pin_slots_charges = 0, pin_slots_pins = 0;
  std::uint64_t reclaims_orphan = 0, reclaims_parked = 0;
  std::uint64_t parks_post_closed = 0, parks_dispatch = 0, parks_backstop = 0, parks_write_failed = 0;
  std::uint64_t attaches = 0, gaps = 0, handovers = 0, takeovers = 0, replayed_frames = 0;
  std::uint64_t cap_drains = 0, cap_settles = 0, finals_on_post = 0;
  std::array<std::uint64_t, mcpcore::cancel_outcome_count> cancels{};
  std::array<std::uint64_t, mcpcore::expire_disposition_count> expires{};
  std::uint64_t arming_reaped = 0, session_deaths = 0, tie_probes = 0;
  std::uint64_t residual_over_cap = 0, lru_displaced = 0;
  std::uint64_t acked_unseen = 0;       // pinned finals a cursor acknowledged that the client never received
  std::uint64_t acked_unseen_get = 0;   // of them, by the Last-Event-ID of the client's own GET stream
  std::uint64_t end_parked = 0;         // records left parked awaiting a resume at the end of a schedule
  std::uint64_t end_resumed_finals = 0; // of their finals, delivered by the closing resume
  std::uint64_t messages = 0, finishes_early = 0, finishes_late = 0, no_response = 0, settled_on_park = 0;
  std::uint64_t steps = 0, quiet_steps = 0, frames = 0, too_large = 0, violations = 0;
};

// The model of one call: the record as the reference describes it, plus what the client saw of it.
struct call_model {
  call_model(std::int64_t i, mcpcore::progress_call h, bool streamed, bool want,
             std::chrono::steady_clock::time_point now)
      : id(i), handle(std::move(h)), streamed_res(streamed), want_stream(want), charge(streamed), created(now) {}

  std::int64_t id;
  mcpcore::progress_call handle;
  bool streamed_res;  // reserved streamed (holds a charge until its final settles)
  bool want_stream;   // the delivery its transport arms
  rec_state st = rec_state::arming;
  bool in_bridge = true;  // not yet torn down (still in the bridge's map)
  bool charge;
  bool cancel_intent = false;
  bool terminal = false;       // a terminal was accepted
  bool final_pending = false;  // latched while arming
  bool real_final = false;     // the committed final is the call's own response (not synthesized)
  std::uint64_t final_id = 0;  // ring id of its committed final
  bool final_uncertain = false;  // synthesized under a park-order tie: which id is its own is unknown
  bool final_written = false;
  bool final_in_outbox = false;
  bool cap_drain_done = false;
  std::uint64_t park_order = 0;
  std::optional<double> watermark;
  std::optional<double> slot;  // latched progress (latest wins)
  std::size_t messages = 0;    // in-call messages queued while arming
  bool no_response = false;    // its terminal was complete_without_response
  bool deferred = false;       // its terminal was defer + finish (a detached operation)
  bool detached = false;       // mark_detached: its handler returns a base later
  bool has_base = false;       // defer brought the base
  bool awaiting_base = false;  // finished before its handler returned
  bool final_settled = false;  // the final was projected (or answered plain)
  std::vector<std::uint64_t> outbox;
  std::chrono::steady_clock::time_point created;
  bool wake_closed = false;
  bool live_progress = false;  // armed GET-only: progress goes live to the GET stream
  double last_sent = 0;
  // The POST wire.
  bool post_open = false;
  std::uint64_t post_last = 0;
  bool post_final_seen = false;
  // The union of wires.
  std::map<std::uint64_t, double> seen_progress;  // ring id -> progress
  std::uint64_t seen_final = 0;
  std::uint64_t seen_before_final = 0;  // the highest id of its progress and messages the client saw
};

enum class wire : std::uint8_t { post, get_replay, get_live };

// A failed invariant fails the test and ends the schedule (the model no longer follows it).
#define BRIDGE_INVARIANT(cond, what)               \
  do {                                             \
    if (!(cond)) {                                 \
      ++t_.violations;                             \
      broken_ = true;                              \
      FAIL_CHECK(what << "  [" << #cond << "] after step " << step_ << ": " << std::string_view{action_}); \
    }                                              \
  } while (false)
#define BRIDGE_FAIL(what)   \
  do {                      \
    ++t_.violations;        \
    broken_ = true;         \
    FAIL_CHECK(what << " after step " << step_ << ": " << std::string_view{action_}); \
  } while (false)

class bridge_sim {
 public:
  bridge_sim(std::uint64_t seed, const mcpcore::session_metrics& m, tallies& t)
      : t_(t), m_(m), rng_(seed), ropts_(registry_options()), bopts_(bridge_options()),
        registry_(ropts_, mcpcore::clock_ref<mcpcore::manual_clock>{clk_}, m),
        bridge_(registry_, bopts_, mcpcore::clock_ref<mcpcore::manual_clock>{clk_}, m) {
    calls_.reserve(64);
    auto s = registry_.mint(principal);
    REQUIRE(s.has_value());
    sess_ = *s;
    sid_ = sess_->id();
    baseline();
  }

  bridge_sim(const bridge_sim&) = delete;
  bridge_sim& operator=(const bridge_sim&) = delete;

  ~bridge_sim() {
    if (live_) (void)sess_->stream()->detach(*live_);
    if (draining_) (void)sess_->stream()->detach(*draining_);
  }

  [[nodiscard]] bool broken() const noexcept { return broken_; }
  /// A resume gapped: the session was terminated and the client would re-initialize.
  [[nodiscard]] bool ended() const noexcept { return gapped_; }

  // One random action, then the per-step checks.
  void step(std::size_t index) {
    ++t_.steps;
    step_ = index;
    if (alive_ && !dying_ && expire_at_ != 0 && index >= expire_at_) let_expire();
    const int r = pick(0, 999);
    const char* action = "";
    action_ = "?";
    if (r < 95) {
      action = action_ = "reserve streamed";
      reserve(true, false);
    } else if (r < 135) {
      action = action_ = "reserve GET-only";
      reserve(false, false);
    } else if (r < 145) {
      action = action_ = "reserve a duplicate id";
      reserve(coin(0.5), true);
    } else if (r < 175) {
      action = action_ = "arm";
      arm_one();
    } else if (r < 345) {
      action = action_ = "progress";
      progress_one();
    } else if (r < 375) {
      action = action_ = "in-call message";
      message_one();
    } else if (r < 475) {
      action = action_ = "complete";
      complete_one();
    } else if (r < 630) {
      action = action_ = "POST pump pass";
      if (const int i = pick_call([](const call_model& c) { return c.post_open; }); i >= 0) pump(i, 0.06, 0.1);
    } else if (r < 670) {
      action = action_ = "POST closed without final";
      if (const int i = pick_call([](const call_model& c) { return c.post_open; }); i >= 0) release_post(i);
    } else if (r < 680) {
      action = action_ = "park after dispatch failure";
      // (A record whose work already ended without a response settles there instead: see the case
      // "a response-less terminal latched while arming ...".)
      if (const int i = pick_active([](const call_model& c) { return c.st == rec_state::arming; });
          i >= 0) {
        acted_ = true;
        touched_.push_back(i);
        calls_[idx(i)].handle.on_post_closed();
        if (model_post_closed(i)) ++t_.parks_dispatch;
      }
    } else if (r < 715) {
      action = action_ = "cancel";
      cancel_one();
    } else if (r < 775) {
      action = action_ = "GET attach";
      if (alive_) attach(choose_cursor());
    } else if (r < 845) {
      action = action_ = "GET drain";
      drain();
    } else if (r < 875) {
      action = action_ = "GET detach";
      detach_get(coin(0.5));
    } else if (r < 915) {
      action = action_ = "notification";
      notify();
    } else if (r < 955) {
      action = action_ = "sweep";
      sweep();
    } else if (r < 995) {
      action = action_ = "clock";
      advance_clock();
    } else {
      action = action_ = "abandon";
      if (const int i = pick_active([](const call_model& c) { return c.st == rec_state::arming; });
          i >= 0) {
        acted_ = true;
        calls_[idx(i)].handle.abandon();
        model_abandon(i);
      }
    }
    clk_.advance(std::chrono::milliseconds{pick(0, 40)});
    touch();
    // A step that did not call into the bridge or the stream (no target, or only the clock moved)
    // cannot have changed them: nothing to re-check.
    if (std::exchange(acted_, false)) {
      settle(action);
    } else {
      ++t_.quiet_steps;
    }
  }

  // The end of a schedule (docs/sessions.md#ordering-guarantees, #pinned-finals, #the-sweep): every
  // call completes, every POST closes, the GET detaches, the sweep settles; what is left are parked
  // records awaiting a resume; a resume from the client's cursor, then one from the end,
  // acknowledges everything.
  void finish() {
    if (broken_) return;
    step_ = 1000;  // the end phase
    action_ = "end";
    if (alive_ && expire_at_ != 0 && coin(0.3)) let_expire();
    for (std::size_t i = 0; i < calls_.size() && !broken_; ++i) {
      const auto& c = calls_[i];
      if (c.in_bridge && c.st == rec_state::arming) arm(static_cast<int>(i), c.want_stream);
    }
    full_check_ = true;
    settle("end: arm");
    for (std::size_t i = 0; i < calls_.size() && !broken_; ++i) {
      if (calls_[i].in_bridge && !calls_[i].terminal) complete(static_cast<int>(i));
      if (calls_[i].in_bridge && calls_[i].awaiting_base) defer(static_cast<int>(i));
    }
    full_check_ = true;
    settle("end: complete");
    for (std::size_t i = 0; i < calls_.size() && !broken_; ++i) {
      const int ci = static_cast<int>(i);
      if (calls_[i].post_open && coin(0.2)) release_post(ci);  // the client went away
      for (int pass = 0; pass < 4 && calls_[i].post_open && !broken_; ++pass) pump(ci, 0.0, 0.1);
      if (calls_[i].post_open) {
        BRIDGE_FAIL("docs/sessions.md#streamed-post: a POST with its final committed ends within one pass");
        release_post(ci);
      }
      full_check_ = true;
      settle("end: POST");
    }
    if (broken_) return;
    drain();
    detach_get(true);
    detach_get(true);
    full_check_ = true;
    settle("end: GET detach");
    sweep_until_stable();
    if (broken_) return;

    // Only parked records whose final is pinned are left: they wait for a resume
    // (docs/sessions.md#progress-records).
    std::size_t parked_pinned = 0;
    for (const auto& c : calls_) {
      if (!c.in_bridge) continue;
      const bool waiting = c.st == rec_state::ring_only && c.final_id != 0 && pins_.contains(c.final_id);
      CHECK_MESSAGE(waiting, "docs/sessions.md#the-sweep: after the flush only parked records awaiting a resume remain (call "
                                 << c.id << " state " << mcpcore::to_string(c.st) << ")");
      if (waiting) ++parked_pinned;
    }
    CHECK_MESSAGE(bridge_.records() == parked_pinned,
                  "docs/sessions.md#the-sweep: records() counts only the parked records awaiting a resume");
    CHECK_MESSAGE(bridge_.charges(sid_) == 0, "docs/sessions.md#pinned-finals: every charge settled once every final settled");
    t_.end_parked += parked_pinned;

    if (alive_ && coin(0.3)) {
      // Invariant 4 at the end: every pinned final is replayed by a resume from 0.
      attach(0);
      if (live_ && !broken_) {
        for (const auto& [pin, owner] : pins_) {
          CHECK_MESSAGE(std::binary_search(expected_get_.begin(), expected_get_.end(), pin),
                        "docs/sessions.md#pinned-finals: a pinned final replays on a resume from cursor 0 (id " << pin << ")");
        }
        drain();
      }
      detach_get(true);
      full_check_ = true;
      settle("end: resume from 0");
    }
    if (alive_ && !broken_) {
      // The client's own resume (docs/sessions.md#get-attach-replay-resume): its cursor, then a
      // reconnect from the end, which acknowledges every pin (route (b)).
      const std::uint64_t cursor = choose_cursor_final();
      attach(cursor);
      if (live_ && !broken_) {
        for (const auto& [pin, owner] : pins_) {
          CHECK_MESSAGE(std::binary_search(expected_get_.begin(), expected_get_.end(), pin),
                        "docs/sessions.md#pinned-finals: a pinned final the cursor did not acknowledge replays (id " << pin << ")");
        }
        std::vector<int> unseen;  // parked calls whose final the client has not received yet
        for (const int k : active_) {
          const auto& c = calls_[idx(k)];
          if (c.in_bridge && c.st == rec_state::ring_only && c.seen_final == 0) unseen.push_back(k);
        }
        drain();
        for (const int k : unseen) {
          if (calls_[idx(k)].seen_final != 0) ++t_.end_resumed_finals;
        }
        detach_get(true);
        attach(get_cursor_);
        if (live_ && !broken_) {
          CHECK_MESSAGE(pins_.empty(), "docs/sessions.md#pinned-finals: a cursor at the end acknowledges every pin");
          detach_get(true);
        }
      }
      detach_get(true);
      detach_get(true);
      full_check_ = true;
      settle("end: resume");
    }
    sweep_until_stable();
    if (broken_) return;
    CHECK_MESSAGE(bridge_.records() == 0, "docs/sessions.md#the-sweep: after the resume and a sweep no record is left");
    CHECK_MESSAGE(bridge_.charges(sid_) == 0, "docs/sessions.md#pinned-finals: no charge is left");
    CHECK_MESSAGE(bridge_.parked() == 0, "docs/sessions.md#the-sweep: no parked record is left");
    CHECK_MESSAGE(budget_.in_use() == 0, "docs/sessions.md#the-stream-budget: every GET lease went back to the budget");
    if (alive_) {
      const auto st = sess_->stream()->stats();
      CHECK_MESSAGE(std::none_of(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }),
                    "docs/sessions.md#pinned-finals: no pin is left once the client resumed from the end");
    }
  }

 private:
  // ---- helpers -------------------------------------------------------------------------------

  static std::size_t idx(int i) { return static_cast<std::size_t>(i); }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }

  // A uniformly chosen call satisfying `pred`, or -1.
  template <class Pred>
  int pick_call(Pred pred) {
    int hits = 0;
    for (const auto& c : calls_) hits += pred(c) ? 1 : 0;
    if (hits == 0) return -1;
    int k = pick(0, hits - 1);
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      if (pred(calls_[i]) && k-- == 0) return static_cast<int>(i);
    }
    return -1;
  }

  mcpcore::session_registry_options registry_options() {
    mcpcore::session_registry_options o;
    o.idle_ttl = 60s;
    o.stream.ring_frames = static_cast<std::size_t>(pick(4, 20));
    o.stream.ring_bytes = static_cast<std::size_t>(pick(256, 2000));
    return o;
  }
  mcpcore::progress_bridge_options bridge_options() {
    mcpcore::progress_bridge_options o;
    o.max_records = coin(0.5) ? mcpcore::default_bridge_records : static_cast<std::size_t>(pick(6, 30));
    static constexpr std::array<std::size_t, 5> thresholds{0, 1, 2, 3, mcpcore::default_parked_pressure_threshold};
    o.parked_pressure_threshold = thresholds[static_cast<std::size_t>(pick(0, 4))];
    o.arming_reap_after = std::chrono::milliseconds{pick(2000, 8000)};
    o.streaming_park_after = std::chrono::milliseconds{pick(5000, 20000)};
    // One schedule in ten lets its session expire near the end.
    expire_at_ = coin(0.1) ? static_cast<std::size_t>(pick(100, 140)) : 0;
    return o;
  }

  void baseline() {
    ev_base_ = m_.ring_evictions.value();
    lru_base_ = m_.pin_displaced.value();
    raced_base_ = m_.pin_release_raced.value();
    failed_base_ = m_.pin_release_failed.value();
    adm_base_ = m_.pin_displaced_for_admission.value();
    backstop_base_ = m_.streaming_backstop.value();
    for (std::size_t i = 0; i < forced_base_.size(); ++i) forced_base_[i] = m_.forced_expires[i].value();
  }

  // Calls still in the bridge's map are listed in `active_` (a superset between two settles: every
  // scan re-checks `in_bridge`); plain index loops keep a sanitized debug build fast.
  [[nodiscard]] int find_call(std::int64_t id) const {
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge && calls_[idx(i)].id == id) return i;
    }
    return -1;
  }
  [[nodiscard]] std::size_t model_records() const {
    std::size_t n = 0;
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge) ++n;
    }
    return n;
  }
  [[nodiscard]] std::size_t model_parked() const {
    std::size_t n = 0;
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge && calls_[idx(i)].st == rec_state::ring_only) ++n;
    }
    return n;
  }
  [[nodiscard]] std::size_t model_charges() const {
    std::size_t n = 0;
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge && calls_[idx(i)].charge) ++n;
    }
    return n;
  }
  // A pin some surviving record references (docs/sessions.md#pinned-finals: otherwise an orphan).
  [[nodiscard]] bool referenced(std::uint64_t pin) const {
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge && calls_[idx(i)].final_id == pin) return true;
    }
    return false;
  }
  // A uniformly chosen call still in the bridge satisfying `pred`, or -1.
  template <class Pred>
  int pick_active(Pred pred) {
    int hits = 0;
    for (const int i : active_) hits += calls_[idx(i)].in_bridge && pred(calls_[idx(i)]) ? 1 : 0;
    if (hits == 0) return -1;
    int k = pick(0, hits - 1);
    for (const int i : active_) {
      if (calls_[idx(i)].in_bridge && pred(calls_[idx(i)]) && k-- == 0) return i;
    }
    return -1;
  }

  // ---- the model's projection (docs/sessions.md#projection-and-finals)
  // ---------------------------------------

  // A frame the library is expected to commit now: the model assigns its id.
  std::uint64_t commit(int owner, bool is_final, bool live_frame, bool to_outbox) {
    const std::uint64_t id = next_id_++;
    shadow_.push_back(id);
    if (live_frame && live_ && live_open_) expected_get_.push_back(id);
    if (owner >= 0 && to_outbox) calls_[idx(owner)].outbox.push_back(id);
    if (is_final) {
      if (pins_.size() >= max_pinned_finals) {  // route (c): the smallest pin yields
        pins_.erase(pins_.begin());
        ++expect_lru_;
      }
      pins_.emplace(id, owner);
    }
    return id;
  }

  void project(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.st == rec_state::arming) return;
    if (c.st == rec_state::done || c.st == rec_state::aborted) {
      c.slot.reset();
      c.messages = 0;
      c.final_pending = false;
      return;
    }
    for (; c.messages > 0; --c.messages) {
      (void)commit(i, false, c.st == rec_state::get_only, c.st == rec_state::streaming);
    }
    if (c.slot) {
      const double p = *c.slot;
      c.slot.reset();
      if (!c.watermark || p > *c.watermark) {
        (void)commit(i, false, c.st == rec_state::get_only, c.st == rec_state::streaming);
        c.watermark = p;
      }
    }
    if (c.final_pending) {
      c.final_pending = false;
      c.final_settled = true;
      if (c.st == rec_state::get_only) {
        c.st = rec_state::done;  // answered as plain JSON on the POST: no frame, no pin
      } else {
        c.final_id = commit(i, true, false, c.st == rec_state::streaming);
        c.real_final = true;
        if (c.st == rec_state::streaming) c.final_in_outbox = true;
      }
      c.charge = false;  // the final settled
    }
  }

  void teardown(call_model& c) {
    if (c.in_bridge) torn_ = true;
    c.in_bridge = false;
    if (c.st != rec_state::aborted) c.st = rec_state::done;
    c.slot.reset();
    c.messages = 0;
    c.final_pending = false;
    c.outbox.clear();
    c.final_in_outbox = false;
    c.charge = false;
  }

  arm_outcome model_arm(int i, bool streamed_delivery) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.st == rec_state::aborted) return arm_outcome::not_armed;
    if (c.st != rec_state::arming) return arm_outcome::already_armed;
    arm_outcome out = arm_outcome::get_only;
    if (c.cancel_intent) {
      c.st = rec_state::get_only;
      c.charge = false;
      out = arm_outcome::cancelled;
    } else if (streamed_delivery && c.streamed_res) {
      c.st = rec_state::streaming;
      out = arm_outcome::streaming;
    } else {
      c.st = rec_state::get_only;
      c.charge = false;
    }
    c.live_progress = c.st == rec_state::get_only;
    if (c.no_response) {  // the work already ended without a response: nothing to project
      c.st = rec_state::done;
      c.slot.reset();
      c.messages = 0;
      c.charge = false;
    }
    project(i);
    return out;
  }

  bool model_progress(int i, double p, std::optional<double> total) {
    if (total && *total <= 0) return false;
    if (total && p > *total) p = *total;
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.terminal || c.st == rec_state::done || c.st == rec_state::aborted) return false;
    if (c.watermark && !(p > *c.watermark)) return false;
    c.slot = p;
    if (c.st == rec_state::arming) return false;
    const std::uint64_t before = next_id_;
    project(i);
    return next_id_ != before;
  }

  bool model_message(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.terminal || c.st == rec_state::done || c.st == rec_state::aborted) return false;
    if (c.messages >= pending_messages) return false;  // dropped, counted
    ++c.messages;
    if (c.st == rec_state::arming) return false;
    project(i);
    return true;
  }

  bool model_complete_without_response(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.terminal || c.st == rec_state::aborted) return false;
    c.terminal = true;
    c.no_response = true;
    if (c.st == rec_state::arming) return true;  // arm settles it
    c.st = rec_state::done;
    c.slot.reset();
    c.messages = 0;
    c.outbox.clear();  // frames not yet written stay in the ring only
    c.final_in_outbox = false;
    c.charge = false;
    // A streamed POST ends `cancelled` with its close frame (never looking like a completion,
    // docs/errors.md#honest-answers).
    if (c.streamed_res) c.wake_closed = true;
    return true;
  }

  // `finish` (docs/sessions.md#projection-and-finals): before the call returned (detached, no base
  // yet) the terminal is accepted at once and the final waits for `defer`.
  bool model_finish(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.terminal || c.st == rec_state::aborted) return false;
    if (c.detached && !c.has_base) {
      c.terminal = true;
      c.awaiting_base = true;
      return true;
    }
    return model_complete(i);
  }

  void model_defer(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.has_base) return;
    if (!c.awaiting_base) {
      if (!c.terminal) c.has_base = true;
      return;
    }
    if (c.st == rec_state::aborted) return;
    c.awaiting_base = false;
    c.has_base = true;
    c.final_pending = true;
    project(i);
  }

  bool model_complete(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.terminal || c.st == rec_state::aborted) return false;
    c.terminal = true;
    c.final_pending = true;
    project(i);
    return true;
  }

  struct take_prediction {
    std::vector<std::uint64_t> ids;
    bool final_included = false;
    bool cap_settled = false;
    bool drained = false;
  };
  take_prediction model_take(int i, bool cap_expired) {
    take_prediction p;
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.st != rec_state::streaming) {
      p.cap_settled = cap_expired;
      return p;
    }
    const bool terminal_wins =
        c.final_in_outbox || c.final_pending || (c.terminal && !c.no_response && !c.final_settled);
    if (cap_expired && !terminal_wins) {  // a terminal wins over the cap
      if (!c.cap_drain_done) {
        c.cap_drain_done = true;
        p.drained = true;
        project(i);
      } else {
        p.cap_settled = true;
      }
    }
    p.ids.assign(c.outbox.begin(), c.outbox.end());
    c.outbox.clear();
    p.final_included = std::exchange(c.final_in_outbox, false);
    return p;
  }

  void model_final_written(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.final_written) return;
    c.final_written = true;
    if (c.st != rec_state::aborted) c.st = rec_state::done;
    c.charge = false;
    if (c.final_id != 0) pins_.erase(c.final_id);  // route (a)
  }

  // Returns whether the record parked.
  bool model_post_closed(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.final_written) return false;
    if (c.no_response && (c.st == rec_state::arming || c.st == rec_state::streaming)) {
      // Its work ended without a response: nothing will ever be published for it, so it settles
      // rather than park holding a pin slot (docs/sessions.md#pinned-finals).
      c.st = rec_state::done;
      c.slot.reset();
      c.messages = 0;
      c.outbox.clear();
      c.final_in_outbox = false;
      c.charge = false;
      ++t_.settled_on_park;
      return false;
    }
    if (c.st == rec_state::streaming || (c.st == rec_state::arming && c.streamed_res)) {
      c.st = rec_state::ring_only;
      c.park_order = ++park_counter_;
      c.outbox.clear();
      c.final_in_outbox = false;
      project(i);
      return true;
    }
    return false;
  }

  cancel_outcome model_cancel(std::int64_t id) {
    const int i = find_call(id);
    if (i < 0) return cancel_outcome::noop;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    if (c.st == rec_state::arming && !c.cancel_intent) {
      c.cancel_intent = true;
      return cancel_outcome::accepted;
    }
    if (c.st == rec_state::streaming && c.streamed_res && !c.terminal && !c.wake_closed) {
      c.wake_closed = true;
      return cancel_outcome::detached;
    }
    return cancel_outcome::noop;
  }

  void model_abandon(int i) {
    auto& c = calls_[idx(i)];
    if (!c.in_bridge || c.st != rec_state::arming) return;
    c.st = rec_state::aborted;
    teardown(c);
  }

  // ---- actions -------------------------------------------------------------------------------

  void touch() {
    if (!alive_ || dying_) return;
    BRIDGE_INVARIANT(registry_.validate_and_touch(sid_, principal) != nullptr,
                     "docs/sessions.md#the-session-registry: a session touched every step stays alive");
  }

  void let_expire() {
    dying_ = true;
    acted_ = true;
    clk_.advance(ropts_.idle_ttl + 1s);
    (void)registry_.collect_garbage();  // closes its GET sinks `session_terminated`
    alive_ = false;
    live_open_ = false;
    ++t_.session_deaths;
  }

  void reserve(bool streamed, bool duplicate) {
    std::int64_t id = 0;
    if (duplicate) {
      const int d = pick_active([](const call_model&) { return true; });
      if (d < 0) return;
      id = calls_[idx(d)].id;
    } else {
      id = next_request_++;
    }
    ++t_.reservations;
    // The model's verdict (docs/sessions.md#streamed-post-admission, #pinned-finals).
    std::optional<bridge_reject> expect;
    bool expect_held = false;
    std::vector<std::uint64_t> acceptable;  // pins a reclaim may take
    bool orphan = false;
    if (!alive_) {
      expect = bridge_reject::unknown_session;
    } else if (find_call(id) >= 0) {
      expect = bridge_reject::duplicate_request_id;
    } else if (model_records() >= bopts_.max_records) {
      expect = bridge_reject::global_cap;
    } else if (streamed) {
      const std::size_t charges = model_charges();
      if (pins_.size() + charges >= max_pinned_finals) {
        for (const auto& [pin, owner] : pins_) {  // orphans first, lowest id first
          if (!referenced(pin)) {
            acceptable.push_back(pin);
            orphan = true;
            break;
          }
        }
        if (acceptable.empty()) {  // then the oldest parked final (ties: any of them)
          std::uint64_t oldest = 0;
          for (const int k : active_) {
            const auto& c = calls_[idx(k)];
            if (c.in_bridge && c.st == rec_state::ring_only && c.final_id != 0 && !c.final_written &&
                pins_.contains(c.final_id) && (oldest == 0 || c.park_order < oldest)) {
              oldest = c.park_order;
            }
          }
          for (const int k : active_) {
            const auto& c = calls_[idx(k)];
            if (c.in_bridge && c.st == rec_state::ring_only && c.final_id != 0 && !c.final_written &&
                pins_.contains(c.final_id) && c.park_order == oldest) {
              acceptable.push_back(c.final_id);
            }
          }
        }
        if (acceptable.empty()) {
          expect = bridge_reject::pin_slots;
          expect_held = charges > 0;
        }
      }
    }
    const int index = static_cast<int>(calls_.size());
    acted_ = true;
    auto r = bridge_.reserve(sess_, mcpcore::request_id{id},
                             mcpcore::request_id{"tok-" + std::to_string(index)}, streamed);
    if (!r.has_value()) {
      const auto reason = r.error().reason;
      ++t_.refusals[static_cast<std::size_t>(reason)];
      if (reason == bridge_reject::pin_slots) ++(r.error().held_by_charges ? t_.pin_slots_charges : t_.pin_slots_pins);
      BRIDGE_INVARIANT(expect.has_value() && *expect == reason,
                       "docs/sessions.md#streamed-post-admission, #pinned-finals: refusal " << mcpcore::to_string(reason) << " where the model "
                                                               << (expect ? mcpcore::to_string(*expect) : "admits"));
      if (reason == bridge_reject::pin_slots) {
        BRIDGE_INVARIANT(r.error().held_by_charges == expect_held,
                         "docs/sessions.md#pinned-finals: held=charges exactly when charges are outstanding");
      }
      return;
    }
    if (expect) {
      BRIDGE_FAIL("docs/sessions.md#streamed-post-admission, #pinned-finals: admitted where the model refuses " << mcpcore::to_string(*expect));
      r->abandon();
      return;
    }
    calls_.emplace_back(id, std::move(*r), streamed, streamed ? coin(0.9) : false, clk_.steady_now());
    active_.push_back(index);
    touched_.push_back(index);
    by_request_[id] = index;
    if (!acceptable.empty()) {
      // docs/sessions.md#pinned-finals: exactly one pin went, the one the rules select; its record
      // is done.
      const auto st = sess_->stream()->stats();
      std::vector<std::uint64_t> gone;
      for (const auto& [pin, owner] : pins_) {
        if (std::find(st.pins.begin(), st.pins.end(), pin) == st.pins.end()) gone.push_back(pin);
      }
      BRIDGE_INVARIANT(gone.size() == 1, "docs/sessions.md#pinned-finals: a reclaim releases exactly one pin (" << gone.size() << ")");
      if (gone.size() != 1) return;
      BRIDGE_INVARIANT(std::find(acceptable.begin(), acceptable.end(), gone.front()) != acceptable.end(),
                       "docs/sessions.md#pinned-finals: reclaim takes orphans lowest id first, then the oldest parked final (took "
                           << gone.front() << ", expected " << acceptable.front() << ")");
      const int owner = pins_[gone.front()];
      pins_.erase(gone.front());
      full_check_ = true;  // a reclaim moves another record
      ++expect_adm_;
      if (orphan) {
        ++t_.reclaims_orphan;
      } else {
        ++t_.reclaims_parked;
        if (owner >= 0 && calls_[idx(owner)].in_bridge) calls_[idx(owner)].st = rec_state::done;
      }
    }
    const int i = static_cast<int>(calls_.size()) - 1;
    const int what = pick(0, 99);
    if (what < 80) {
      arm(i, calls_.back().want_stream);
    } else if (what < 95) {
      // left arming: work may report and a cancel may land before its transport arms it
    } else {
      calls_.back().handle.abandon();
      model_abandon(i);
    }
  }

  void arm(int i, bool streamed_delivery) {
    acted_ = true;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    const auto expect = model_arm(i, streamed_delivery);
    const auto got = c.handle.arm(streamed_delivery ? mcpcore::bridge_delivery::streamed
                                                    : mcpcore::bridge_delivery::get_only);
    BRIDGE_INVARIANT(got == expect, "docs/sessions.md#streamed-post-admission: arm outcome of call " << c.id);
    if (got == arm_outcome::streaming) {
      c.post_open = true;  // the transport installs the SSE response and its pump
      c.post_last = 0;
    }
  }

  void arm_one() {
    if (coin(0.85)) {
      const int i = pick_active([](const call_model& c) { return c.st == rec_state::arming; });
      if (i >= 0) arm(i, calls_[idx(i)].want_stream);
    } else {  // an arm of a record that is armed, done or gone
      const int i = pick_call([](const call_model& c) { return c.st != rec_state::arming || !c.in_bridge; });
      if (i >= 0) arm(i, coin(0.5));
    }
  }

  void progress_one() {
    const int i = coin(0.9) ? pick_active([](const call_model& c) { return !c.terminal; })
                            : pick_call([](const call_model&) { return true; });
    if (i < 0) return;
    acted_ = true;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    double p = c.last_sent + pick(-5, 20);
    if (p < 0) p = 0;
    c.last_sent = p;
    std::optional<double> total;
    const int tk = pick(0, 99);
    if (tk < 10) {
      // no total
    } else if (tk < 18) {
      total = 0.0;  // skipped (docs/sessions.md#projection-and-finals)
    } else {
      total = static_cast<double>(pick(10, 100));
    }
    const bool expect = model_progress(i, p, total);
    const bool got = c.handle.progress(p, total, coin(0.3) ? "working" : "");
    BRIDGE_INVARIANT(got == expect, "docs/sessions.md#projection-and-finals: progress(" << p << ") of call " << c.id << " committed");
  }

  // The call's terminal: its response (`complete`), or for a detached operation the deferred base
  // and `finish` (docs/sessions.md#projection-and-finals), or now and then no response at all.
  void complete(int i) {
    acted_ = true;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    const int how = pick(0, 99);
    if (how < 5) {
      const bool expect = model_complete_without_response(i);
      const bool got = c.handle.complete_without_response();
      if (got) ++t_.no_response;
      BRIDGE_INVARIANT(
          got == expect,
          "docs/sessions.md: complete_without_response is a terminal, accepted once (call " << c.id << ")");
      return;
    }
    bool expect = false;
    bool got = false;
    if (how < 25) {
      // A detached operation (docs/sessions.md): its handler returns the base of the final
      // (`defer`), then its work finishes; or the work finishes first and the final waits for the
      // base.
      c.handle.mark_detached();
      c.detached = true;
      if (how < 15) {
        c.handle.defer(final_text(c.id));
        model_defer(i);
      }
      expect = model_finish(i);
      got = c.handle.finish(finished_final(c.id));
      if (got) {
        c.deferred = true;
        ++(how < 15 ? t_.finishes_late : t_.finishes_early);
      }
    } else {
      expect = model_complete(i);
      got = c.handle.complete(final_text(c.id));
    }
    BRIDGE_INVARIANT(got == expect, "docs/sessions.md#progress-records: exactly one terminal is accepted (call " << c.id << ")");
  }

  // The handler of a detached operation returns after its work finished: `defer` brings the base.
  void defer(int i) {
    acted_ = true;
    touched_.push_back(i);
    calls_[idx(i)].handle.defer(final_text(calls_[idx(i)].id));
    model_defer(i);
  }

  void message_one() {
    const int i = coin(0.9) ? pick_active([](const call_model& c) { return !c.terminal; })
                            : pick_call([](const call_model&) { return true; });
    if (i < 0) return;
    acted_ = true;
    touched_.push_back(i);
    const bool expect = model_message(i);
    const bool got = calls_[idx(i)].handle.message(call_message(i));
    if (got) ++t_.messages;
    BRIDGE_INVARIANT(got == expect, "docs/sessions.md#progress-records: an in-call message of call " << calls_[idx(i)].id
                                                                                  << " is committed like progress");
  }

  void complete_one() {
    if (const int w = pick_active([](const call_model& c) { return c.awaiting_base; }); w >= 0 && coin(0.5)) {
      defer(w);
      return;
    }
    const int i = coin(0.9) ? pick_active([](const call_model& c) { return !c.terminal; })
                            : pick_call([](const call_model&) { return true; });
    if (i >= 0) complete(i);
  }

  void cancel_one() {
    std::int64_t id = 0;
    if (coin(0.9)) {
      const int i = pick_call([](const call_model&) { return true; });
      if (i < 0) return;
      id = calls_[idx(i)].id;
    } else {
      id = next_request_ + 1000;  // never reserved
    }
    acted_ = true;
    const auto expect = model_cancel(id);
    const auto got = bridge_.cancel(sid_, mcpcore::request_id{id});
    ++t_.cancels[static_cast<std::size_t>(got)];
    BRIDGE_INVARIANT(got == expect, "docs/sessions.md#cancellation: cancel outcome for id " << id << " is "
                                                                               << mcpcore::to_string(got));
  }

  // The releaser of a streamed POST response (docs/sessions.md#streamed-post).
  void release_post(int i) {
    acted_ = true;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    c.handle.on_post_closed();
    if (model_post_closed(i)) ++t_.parks_post_closed;
    c.post_open = false;
  }

  // One pass of the POST pump (docs/sessions.md#streamed-post), as a transport runs it.
  void pump(int i, double cap_p, double fail_p) {
    acted_ = true;
    touched_.push_back(i);
    auto& c = calls_[idx(i)];
    const auto wake = c.handle.wake_sink();
    BRIDGE_INVARIANT(wake != nullptr, "docs/sessions.md#streamed-post-admission: a streamed reservation has a wake sink");
    if (!wake) return;
    const bool was_ready = wake->ready();
    mcpcore::stream_sink::batch wb;
    wake->take(wb);
    BRIDGE_INVARIANT(wb.closed == c.wake_closed, "docs/sessions.md#cancellation: the POST sink of call "
                                                     << c.id << " is closed exactly by a detaching cancel (closed "
                                                     << mcpcore::to_string(wb.reason) << ", state "
                                                     << mcpcore::to_string(c.st) << ")");
    if (wb.closed) {
      BRIDGE_INVARIANT(wb.reason == mcpcore::close_reason::cancelled, "docs/sessions.md#cancellation: closed `cancelled`");
      release_post(i);  // the pump finished `cancelled`
      return;
    }
    const bool cap = coin(cap_p);
    const auto expect = model_take(i, cap);
    mcpcore::post_batch b;
    c.handle.take(b, cap);
    std::vector<std::uint64_t> ids;
    for (const auto& f : b.frames) ids.push_back(f.id);
    BRIDGE_INVARIANT(ids == expect.ids, "docs/sessions.md#streamed-post, #ordering-guarantees: the POST of call "
                                            << c.id << " takes every frame committed for it, in id order ("
                                            << ids.size() << " taken, " << expect.ids.size() << " expected)");
    BRIDGE_INVARIANT(b.final_included == expect.final_included, "docs/sessions.md#streamed-post: final_included");
    BRIDGE_INVARIANT(b.cap_settled == expect.cap_settled, "docs/sessions.md#streamed-post: the cap settles after one drain pass");
    if (!was_ready && !expect.drained) {
      BRIDGE_INVARIANT(b.frames.empty(), "docs/sessions.md#lock-discipline: frames reached the POST outbox without waking its pump");
    }
    if (expect.drained) ++t_.cap_drains;
    const bool write_ok = !b.final_included || !coin(fail_p);
    for (std::size_t k = 0; k < b.frames.size(); ++k) {
      const bool is_final = b.final_included && k + 1 == b.frames.size();
      if (is_final && !write_ok) break;  // the final did not reach the client
      const auto& f = b.frames[k];
      BRIDGE_INVARIANT(f.id > c.post_last, "docs/sessions.md#ordering-guarantees: ids strictly increase on a POST wire");
      BRIDGE_INVARIANT(!c.post_final_seen, "docs/sessions.md#ordering-guarantees: nothing follows the final on its POST wire");
      c.post_last = f.id;
      observe(f, wire::post, i, is_final);
      if (is_final) c.post_final_seen = true;
    }
    if (b.final_included) {
      if (coin(0.1)) {  // a second pass before the write confirmed: nothing more for this POST
        mcpcore::post_batch again;
        c.handle.take(again, false);
        BRIDGE_INVARIANT(again.frames.empty() && !again.final_included,
                         "docs/sessions.md#ordering-guarantees: the final is last: nothing is taken after it");
      }
      if (write_ok) {
        ++t_.finals_on_post;
        c.handle.on_final_written();
        model_final_written(i);
      } else {
        ++t_.parks_write_failed;
      }
      release_post(i);
      return;
    }
    if (b.cap_settled) {
      ++t_.cap_settles;
      release_post(i);
      return;
    }
    if (b.frames.empty()) {
      const auto st = c.handle.state_now();
      if (st == rec_state::done || st == rec_state::aborted || st == rec_state::ring_only) release_post(i);
    }
  }

  std::uint64_t choose_cursor() {
    const int r = pick(0, 99);
    if (r < 35) {
      cursor_is_get_ = true;
      return get_cursor_;  // Last-Event-ID of its GET stream
    }
    // The highest ring id it saw on any wire (docs/sessions.md#streamed-post: POST frames carry
    // ring ids).
    if (r < 80) return any_cursor_;
    if (r < 96) return 0;
    const std::uint64_t lo = shadow_.empty() ? next_id_ : shadow_.front();
    const std::uint64_t from = lo > 3 ? lo - 3 : 1;
    return std::uniform_int_distribution<std::uint64_t>(from, next_id_ + 1)(rng_);
  }
  std::uint64_t choose_cursor_final() {
    cursor_is_get_ = coin(0.5);
    return cursor_is_get_ ? get_cursor_ : any_cursor_;
  }

  // The model's verdict of an attach (docs/sessions.md#get-attach-replay-resume).
  attach_status predict_attach(std::uint64_t cursor) const {
    if (cursor != 0) {
      // The replay must be exactly cursor+1, ..., next_id-1.
      std::uint64_t expect = cursor + 1;
      bool below = false;  // the cursor's own neighbourhood is still in the window
      const std::uint64_t lower = shadow_.empty() ? next_id_ : shadow_.front();
      below = cursor + 1 >= lower;
      if (!below || cursor >= next_id_) return attach_status::gap;
      for (const auto id : shadow_) {
        if (id <= cursor) continue;
        if (id != expect) return attach_status::gap;
        ++expect;
      }
      if (expect != next_id_) return attach_status::gap;
    }
    if (live_ && draining_) return attach_status::handover_pending;
    return attach_status::attached;
  }

  void attach(std::uint64_t cursor) {
    const bool from_get = std::exchange(cursor_is_get_, false);
    if (!alive_) return;
    acted_ = true;
    ++t_.attaches;
    const auto expect = predict_attach(cursor);
    auto a = sess_->stream()->attach_and_replay(cursor, budget_, principal);
    BRIDGE_INVARIANT(a.status == expect, "docs/sessions.md#get-attach-replay-resume, #ordering-guarantees: attach verdict for cursor "
                                             << cursor << " (next " << next_id_ << ", oldest "
                                             << (shadow_.empty() ? 0 : shadow_.front()) << ")");
    if (a.status != expect) {
      if (a.sink) (void)sess_->stream()->detach(*a.sink);
      return;
    }
    if (a.status == attach_status::gap) {
      // docs/sessions.md#get-attach-replay-resume: the caller terminates the session ("Replay
      // window exceeded").
      ++t_.gaps;
      gapped_ = true;
      BRIDGE_INVARIANT(registry_.terminate(sid_, principal, "replay_window_exceeded"),
                       "docs/sessions.md#get-attach-replay-resume: the gap terminates the session");
      alive_ = false;
      live_open_ = false;
      return;
    }
    if (a.status == attach_status::handover_pending) {
      ++t_.handovers;
      return;
    }
    // Finals still pinned at or below the cursor were never written on a wire: they replay first
    // (a cursor releases no pin; only a write does, docs/sessions.md#pinned-finals on either wire).
    std::deque<std::uint64_t> replay;
    std::size_t pinned_below = 0;
    for (const auto& [pin, owner] : pins_) {
      if (pin <= cursor) {
        replay.push_back(pin);
        ++pinned_below;
        if (from_get) ++t_.acked_unseen_get;  // a GET cursor passed a final it never carried
        ++t_.acked_unseen;
      }
    }
    for (const auto id : shadow_) {
      if (id > cursor) replay.push_back(id);
    }
    BRIDGE_INVARIANT(a.replayed == replay.size(),
                     "docs/sessions.md#get-attach-replay-resume: the unwritten pinned finals, then every held frame after the cursor, replay");
    BRIDGE_INVARIANT(a.pins_replayed == pinned_below,
                     "docs/sessions.md#pinned-finals: pins at or below the cursor replay instead of being acknowledged");
    if (live_) {
      BRIDGE_INVARIANT(a.took_over, "docs/sessions.md#takeover: a second GET supersedes the first");
      BRIDGE_INVARIANT(live_->closed() && live_->reason() == mcpcore::close_reason::superseded,
                       "docs/sessions.md#get-attach-replay-resume: the superseded sink is closed `superseded`");
      ++t_.takeovers;
      draining_ = std::move(live_);  // its pump is still exiting: the client reads only the new one
    }
    live_ = a.sink;
    live_open_ = true;
    expected_get_ = std::move(replay);
    replay_left_ = expected_get_.size();
    t_.replayed_frames += replay_left_;
    get_last_ = 0;
  }

  void drain() {
    if (!live_) return;
    acted_ = true;
    mcpcore::stream_sink::batch b;
    live_->take(b);
    BRIDGE_INVARIANT(b.dropped == 0, "docs/sessions.md#get-attach-replay-resume: a replay and the live tail fit the sink queue");
    BRIDGE_INVARIANT(b.closed == !live_open_, "docs/sessions.md#takeover: the live GET sink closes only with its session");
    std::vector<std::uint64_t> ids;
    for (const auto& f : b.frames) ids.push_back(f.id);
    const std::vector<std::uint64_t> expect(expected_get_.begin(), expected_get_.end());
    BRIDGE_INVARIANT(
        ids == expect,
        "docs/sessions.md#ordering-guarantees: the GET wire is the replay, then every live frame, no silent gap ("
            << ids.size() << " taken, " << expect.size() << " expected)");
    if (broken_) return;
    for (const auto& f : b.frames) {
      BRIDGE_INVARIANT(
          f.id > get_last_,
          "docs/sessions.md#ordering-guarantees: ids strictly increase on the GET wire (replay, then live)");
      get_last_ = f.id;
      observe(f, replay_left_ > 0 ? wire::get_replay : wire::get_live, -1, false);
      if (replay_left_ > 0) --replay_left_;
    }
    get_cursor_ = std::max(get_cursor_, get_last_);
    expected_get_.clear();
    // The pass reached the wire: pinned finals written on the GET stream are released (route (a)).
    std::size_t released = 0;
    for (const auto id : ids) released += pins_.erase(id);
    BRIDGE_INVARIANT(sess_->stream()->written(ids) == released,
                     "docs/sessions.md#pinned-finals: a final written on the GET wire releases its pin");
  }

  void detach_get(bool draining_first) {
    auto& victim = (draining_first && draining_) || !live_ ? draining_ : live_;
    if (!victim) return;
    acted_ = true;
    BRIDGE_INVARIANT(sess_->stream()->detach(*victim), "docs/sessions.md#takeover: a known sink detaches");
    BRIDGE_INVARIANT(!sess_->stream()->detach(*victim), "docs/sessions.md#takeover: detach is idempotent");
    if (victim == live_) {
      expected_get_.clear();
      replay_left_ = 0;
    }
    victim.reset();
  }

  void notify() {
    acted_ = true;
    const std::uint64_t expect = commit(owner_server, false, true, false);
    const auto id = sess_->stream()->publish(
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"note"}})");
    BRIDGE_INVARIANT(id == expect, "docs/sessions.md#the-replay-ring: ids per session, from 1, strictly increasing");
  }

  void advance_clock() {
    if (coin(0.1)) {
      // Past arming_reap_after and sometimes past streaming_park_after (never past the idle TTL).
      clk_.advance(std::chrono::milliseconds{pick(2000, 25000)});
    } else {
      clk_.advance(std::chrono::milliseconds{pick(0, 400)});
    }
  }

  bool probe_in_bridge(std::int64_t id) {
    ++t_.tie_probes;
    auto r = bridge_.reserve(sess_, mcpcore::request_id{id}, mcpcore::request_id{std::string{"probe"}}, false);
    if (r.has_value()) {
      r->abandon();
      return false;
    }
    return r.error().reason == bridge_reject::duplicate_request_id;
  }

  // Expires one parked record (docs/sessions.md#the-sweep pressure): its disposition, then
  // teardown.
  void expire(int i, bool uncertain) {
    auto& c = calls_[idx(i)];
    auto d = mcpcore::expire_disposition::synthesize_unavailable;
    if (c.final_id != 0) {
      d = mcpcore::expire_disposition::none;
    } else if (c.terminal && !c.no_response) {
      d = mcpcore::expire_disposition::fallback_final;
    }
    if (d != mcpcore::expire_disposition::none) {
      c.final_id = commit(i, true, false, false);
      c.real_final = false;
      c.final_uncertain = uncertain;
    }
    ++expect_forced_[static_cast<std::size_t>(d)];
    ++t_.expires[static_cast<std::size_t>(d)];
    teardown(c);
  }

  // The maintenance pass (docs/sessions.md#the-sweep), predicted, then run.
  void sweep() {
    acted_ = true;
    full_check_ = true;
    const bool session_alive = registry_.exists(sid_, principal);
    BRIDGE_INVARIANT(session_alive == alive_, "docs/sessions.md#the-session-registry: the session lives exactly while the client keeps it");
    const auto now = clk_.steady_now();
    std::vector<int> backstopped;
    for (const int k : active_) {
      auto& c = calls_[idx(k)];
      if (!c.in_bridge) continue;
      if (c.st == rec_state::done || c.st == rec_state::aborted) {
        teardown(c);
        continue;
      }
      if (c.st == rec_state::arming) {
        if (now - c.created > bopts_.arming_reap_after) {
          teardown(c);
          ++t_.arming_reaped;
        }
        continue;
      }
      if (c.st == rec_state::streaming && (now - c.created > bopts_.streaming_park_after || !session_alive)) {
        c.st = rec_state::ring_only;  // docs/sessions.md#the-sweep: parked, never reaped
        c.outbox.clear();
        c.final_in_outbox = false;
        backstopped.push_back(k);
        ++expect_backstop_;
        ++t_.parks_backstop;
      }
      if ((c.st == rec_state::get_only || c.st == rec_state::ring_only) && !session_alive) {
        teardown(c);
        continue;
      }
      if (c.st == rec_state::ring_only && c.final_id != 0 && !pins_.contains(c.final_id)) teardown(c);
    }
    if (!backstopped.empty()) {
      // Parked in one pass in the bridge's map order: the model keeps them as one tie group.
      const std::uint64_t order = ++park_counter_;
      for (const int k : backstopped) calls_[idx(k)].park_order = order;
    }
    // Pressure: the oldest parked records above the threshold expire.
    std::vector<int> parked;
    for (const int k : active_) {
      if (calls_[idx(k)].in_bridge && calls_[idx(k)].st == rec_state::ring_only) parked.push_back(k);
    }
    std::vector<int> group;  // a tie straddling the cut: resolved by observation
    std::size_t group_victims = 0;
    if (parked.size() > bopts_.parked_pressure_threshold) {
      std::sort(parked.begin(), parked.end(), [&](int a, int b) {
        const auto oa = calls_[idx(a)].park_order;
        const auto ob = calls_[idx(b)].park_order;
        return oa != ob ? oa < ob : a < b;
      });
      const std::size_t need = parked.size() - bopts_.parked_pressure_threshold;
      const std::uint64_t cut = calls_[idx(parked[need - 1])].park_order;
      const bool tie = need < parked.size() && calls_[idx(parked[need])].park_order == cut;
      // Records parked in one backstop pass expire in the bridge's map order: when more than one
      // of them gets a synthesized final, which id is whose is unknown (decided before any expires).
      std::vector<std::pair<int, bool>> victims;
      for (const int k : parked) {
        if (victims.size() + group.size() == need) break;
        if (tie && calls_[idx(k)].park_order == cut) {
          group.push_back(k);
          continue;
        }
        if (calls_[idx(k)].park_order > cut) break;
        const auto order = calls_[idx(k)].park_order;
        const auto synthesizing = std::count_if(parked.begin(), parked.end(), [&](int j) {
          return calls_[idx(j)].park_order == order && calls_[idx(j)].final_id == 0;
        });
        victims.emplace_back(k, synthesizing > 1);
      }
      const std::size_t taken = victims.size();
      for (const auto& [k, uncertain] : victims) expire(k, uncertain);
      if (tie) {
        for (const int k : parked) {
          if (calls_[idx(k)].park_order == cut && std::find(group.begin(), group.end(), k) == group.end()) {
            group.push_back(k);
          }
        }
        group_victims = need - taken;
      }
    }
    bridge_.sweep();
    if (!group.empty()) {
      std::vector<int> gone;
      for (const int k : group) {
        if (!probe_in_bridge(calls_[idx(k)].id)) gone.push_back(k);
      }
      BRIDGE_INVARIANT(gone.size() == group_victims,
                       "docs/sessions.md#the-sweep: pressure expires exactly the parked records above the threshold");
      std::size_t synthesized = 0;
      for (const int k : gone) {
        if (calls_[idx(k)].final_id == 0) ++synthesized;
      }
      for (const int k : gone) expire(k, synthesized > 1);
    }
  }

  // Sweeps until a pass changes nothing (a pass can leave work for the next: pin-ack after a park).
  void sweep_until_stable() {
    for (int pass = 0; pass < 6 && !broken_; ++pass) {
      const std::size_t before = bridge_.records();
      const std::uint64_t next_before = next_id_;
      sweep();
      settle("sweep (flush)");
      if (bridge_.records() == before && next_id_ == next_before) break;
    }
  }

  // ---- what the client receives (docs/sessions.md#ordering-guarantees)
  // --------------------------------------------

  // What a frame is, decided the first time the client receives its id.
  enum class frame_kind : std::uint8_t { notification, progress, message, final, too_large };
  struct seen_frame {
    std::size_t hash = 0;  // of the data: one id, one frame
    frame_kind kind = frame_kind::notification;
    int call = -1;
  };

  void observe(const mcpcore::stream_frame& f, wire w, int post_owner, bool post_final) {
    ++t_.frames;
    BRIDGE_INVARIANT(f.id > 0 && f.id < next_id_, "docs/sessions.md#the-replay-ring: a wire frame carries a committed ring id");
    any_cursor_ = std::max(any_cursor_, f.id);
    const std::size_t hash = std::hash<std::string_view>{}(f.data);
    seen_frame info;
    if (const auto known = seen_.find(f.id); known != seen_.end()) {
      BRIDGE_INVARIANT(known->second.hash == hash, "docs/sessions.md#the-replay-ring: one id, one frame, on every wire");
      info = known->second;
    } else {
      info = first_sight(f, hash);
      if (broken_) return;
      seen_.emplace(f.id, info);
    }
    // Per-wire rules, on every sighting.
    switch (info.kind) {
      case frame_kind::notification:
        BRIDGE_INVARIANT(w != wire::post, "docs/sessions.md#the-replay-ring: a server notification never rides a POST response");
        BRIDGE_INVARIANT(!post_final, "docs/sessions.md#streamed-post: the frame flagged final is the call's response");
        break;
      case frame_kind::progress:
      case frame_kind::message:
        BRIDGE_INVARIANT(!post_final, "docs/sessions.md#streamed-post: the frame flagged final is the call's response");
        if (w == wire::post) {
          BRIDGE_INVARIANT(info.call == post_owner,
                           "docs/sessions.md#streamed-post: a POST response carries only its own call's frames");
        }
        if (w == wire::get_live) {
          BRIDGE_INVARIANT(calls_[idx(info.call)].live_progress,
                           "docs/sessions.md#the-replay-ring, #progress-records: streamed and parked frames are ring-only, never live on GET");
        }
        break;
      case frame_kind::too_large:  // docs/sessions.md#the-replay-ring: replaced a frame over the byte cap (a -32014 final
        break;                     // with its error data can exceed the smallest rings)
      case frame_kind::final:
        BRIDGE_INVARIANT(w != wire::get_live, "docs/sessions.md#pinned-finals, #progress-records: a final is ring-only, never live on GET");
        if (w == wire::post) {
          BRIDGE_INVARIANT(info.call == post_owner, "docs/sessions.md#streamed-post: a POST carries only its own final");
          BRIDGE_INVARIANT(post_final, "docs/sessions.md#streamed-post: a final on a POST is flagged final_included and is last");
        }
        break;
    }
  }

  // Parses a frame the client receives for the first time and checks the rules of the union of
  // wires (docs/sessions.md#ordering-guarantees): per call, progress strictly increases with the
  // ring id and precedes the final; one final per call, under one id; the final is the call's own
  // response or a synthesized one.
  seen_frame first_sight(const mcpcore::stream_frame& f, std::size_t hash) {
    seen_frame info;
    info.hash = hash;
    auto parsed = doc_.parse(f.data);
    BRIDGE_INVARIANT(parsed.has_value(), "docs/sessions.md#sse-frames: every frame is one JSON-RPC message");
    if (!parsed.has_value()) return info;
    const mcpcore::json::value root = *parsed;
    const auto method = root["method"];
    if (method.exists()) {
      if (method.as_string() == "notifications/message") {
        const auto params = root["params"];
        if (!(params["logger"].is_string() && params["logger"].as_string() == "call")) return info;  // the server's
        const auto data = params["data"].to_int64();
        BRIDGE_INVARIANT(data && *data >= 0 && static_cast<std::size_t>(*data) < calls_.size(),
                         "an in-call message names its call");
        if (broken_) return info;
        info.kind = frame_kind::message;
        info.call = static_cast<int>(*data);
        auto& c = calls_[idx(info.call)];
        BRIDGE_INVARIANT(c.seen_final == 0 || f.id < c.seen_final,
                         "docs/sessions.md#ordering-guarantees: every in-call message precedes the final of its request");
        c.seen_before_final = std::max(c.seen_before_final, f.id);
        return info;
      }
      if (method.as_string() == mcpcore::default_frame_too_large_method) {
        ++t_.too_large;
        info.kind = frame_kind::too_large;
        return info;
      }
      BRIDGE_INVARIANT(method.as_string() == "notifications/progress",
                       "docs/sessions.md#sse-frames: only progress and notifications (id " << f.id << ": " << f.data << ")");
      const auto params = root["params"];
      const auto token = params["progressToken"];
      BRIDGE_INVARIANT(token.is_string() && token.as_string().starts_with("tok-"),
                       "docs/sessions.md#projection-and-finals: the progress token is echoed verbatim");
      if (broken_) return info;
      const auto index = static_cast<int>(std::strtol(std::string{token.as_string().substr(4)}.c_str(), nullptr, 10));
      BRIDGE_INVARIANT(index >= 0 && idx(index) < calls_.size(), "progress token names a call");
      if (broken_) return info;
      info.kind = frame_kind::progress;
      info.call = index;
      auto& c = calls_[idx(index)];
      const auto progress = params["progress"].to_double();
      const auto total = params["total"];
      BRIDGE_INVARIANT(progress.has_value(), "docs/sessions.md#projection-and-finals: progress is a number");
      if (!progress) return info;
      if (total.exists()) {
        const auto tv = total.to_double();
        BRIDGE_INVARIANT(tv && *tv > 0, "docs/sessions.md#ordering-guarantees: total is never 0");
        BRIDGE_INVARIANT(tv && *progress <= *tv, "docs/sessions.md#projection-and-finals: progress is clamped to total");
      }
      const auto it = c.seen_progress.emplace(f.id, *progress).first;
      if (it != c.seen_progress.begin()) {
        BRIDGE_INVARIANT(std::prev(it)->second < *progress,
                         "docs/sessions.md#ordering-guarantees: progress strictly increases per request");
      }
      if (std::next(it) != c.seen_progress.end()) {
        BRIDGE_INVARIANT(*progress < std::next(it)->second,
                         "docs/sessions.md#ordering-guarantees: progress strictly increases per request");
      }
      BRIDGE_INVARIANT(c.seen_final == 0 || f.id < c.seen_final,
                       "docs/sessions.md#ordering-guarantees: every progress frame precedes the final of its request");
      c.seen_before_final = std::max(c.seen_before_final, f.id);
      return info;
    }
    // A response: the final of the call it names.
    const auto rid = root["id"].to_int64();
    BRIDGE_INVARIANT(rid.has_value(), "docs/sessions.md#projection-and-finals: a final answers its request id");
    if (!rid) return info;
    const auto found = by_request_.find(*rid);
    BRIDGE_INVARIANT(found != by_request_.end(), "docs/sessions.md#projection-and-finals: a final answers a reserved request");
    if (found == by_request_.end()) return info;
    info.kind = frame_kind::final;
    info.call = found->second;
    auto& c = calls_[idx(found->second)];
    BRIDGE_INVARIANT(c.seen_final == 0 || c.seen_final == f.id,
                     "docs/sessions.md#ordering-guarantees: one final per call: call "
                         << c.id << " final seen with ids " << c.seen_final << " and " << f.id);
    c.seen_final = f.id;
    BRIDGE_INVARIANT(c.seen_before_final < f.id, "docs/sessions.md#ordering-guarantees: the final is last");
    if (!c.final_uncertain) {
      BRIDGE_INVARIANT(c.final_id == f.id, "docs/sessions.md#pinned-finals: the final committed for call "
                                               << c.id << " is id " << c.final_id << ", not "
                                               << f.id);
    }
    const auto result = root["result"];
    if (c.real_final && c.deferred) {
      // docs/sessions.md#projection-and-finals: the work's own complete result replaces the call's.
      const auto content = result["content"];
      const bool own = content.is_array() && content.size() == 1 &&
                       (*content.elements().begin())["text"].is_string() &&
                       (*content.elements().begin())["text"].as_string() == "finished-" + std::to_string(c.id);
      BRIDGE_INVARIANT(own && !result["status"].exists(),
                       "docs/sessions.md#projection-and-finals: a finished detached operation's final is its work's result");
    } else if (c.real_final) {
      BRIDGE_INVARIANT(f.data == final_text(c.id), "docs/sessions.md#projection-and-finals: the call's own response is its final, verbatim");
    } else {
      const auto code = root["error"]["code"].to_int64();
      const bool unavailable = code && *code == -32014;
      const bool fallback = result.is_object() && result["isError"].is_bool() && result["isError"].as_bool() &&
                            !result["structuredContent"].exists();
      BRIDGE_INVARIANT(unavailable || fallback, "docs/sessions.md#the-sweep: a synthesized final is -32014 or the fallback");
    }
    return info;
  }

  // ---- the per-step checks -------------------------------------------------------------------

  void settle(const char* action) {
    if (broken_) return;
    action_ = action;
    const auto st = sess_->stream()->stats();
    BRIDGE_INVARIANT(
        st.next_id == next_id_,
        "docs/sessions.md#the-replay-ring, #projection-and-finals: the frames committed are the ones the model predicts (next id "
            << st.next_id << ", model " << next_id_ << ")");
    if (broken_) return;
    std::vector<std::uint64_t>& observed_pins = scratch_pins_;  // sorted
    observed_pins.clear();
    for (const auto p : st.pins) {
      if (p != 0) observed_pins.push_back(p);
    }
    std::sort(observed_pins.begin(), observed_pins.end());
    const auto is_pinned = [&](std::uint64_t id) {
      return std::binary_search(observed_pins.begin(), observed_pins.end(), id);
    };
    // The ring (docs/sessions.md#the-replay-ring): the evicted frames are the oldest unpinned ones.
    const std::uint64_t ev = m_.ring_evictions.value();
    std::uint64_t evicted = ev - ev_base_;
    ev_base_ = ev;
    for (auto it = shadow_.begin(); evicted > 0 && it != shadow_.end();) {
      if (!is_pinned(*it)) {
        it = shadow_.erase(it);
        --evicted;
      } else {
        ++it;
      }
    }
    BRIDGE_INVARIANT(evicted == 0, "docs/sessions.md#the-replay-ring: only unpinned frames are evicted");
    BRIDGE_INVARIANT(shadow_.size() == st.frames, "docs/sessions.md#the-replay-ring: frames held (" << st.frames << ", model "
                                                                                 << shadow_.size() << ")");
    BRIDGE_INVARIANT((shadow_.empty() ? 0 : shadow_.front()) == st.oldest_id,
                     "docs/sessions.md#the-replay-ring: the oldest unpinned frame that is not the newest goes first");
    // Pins (docs/sessions.md#pinned-finals): exactly the model's; each pinned final is still held.
    BRIDGE_INVARIANT(std::equal(observed_pins.begin(), observed_pins.end(), pins_.begin(), pins_.end(),
                                [](std::uint64_t a, const auto& b) { return a == b.first; }),
                     "docs/sessions.md#pinned-finals: a final is pinned at commit and keeps its pin until written (a), acknowledged "
                     "by a cursor (b), displaced (c) or reclaimed (e)");
    for (const auto p : observed_pins) {
      BRIDGE_INVARIANT(std::binary_search(shadow_.begin(), shadow_.end(), p),
                       "docs/sessions.md#pinned-finals: a pinned final survives eviction (id " << p << ")");
    }
    // The pin cap (docs/sessions.md#pinned-finals): pins + charges <= max_pinned_finals, one over
    // only as the residual.
    const std::size_t charges = bridge_.charges(sid_);
    BRIDGE_INVARIANT(charges == model_charges(), "docs/sessions.md#pinned-finals: streamed charges (" << charges << ", model "
                                                                                    << model_charges() << ")");
    const std::size_t load = observed_pins.size() + charges;
    if (load > max_pinned_finals) {
      ++t_.residual_over_cap;
      residual_ = true;
    }
    BRIDGE_INVARIANT(load <= max_pinned_finals + 1, "docs/sessions.md#pinned-finals: pins + charges <= max_pinned_finals + 1");
    const std::uint64_t lru = m_.pin_displaced.value() - lru_base_;
    t_.lru_displaced += lru;
    BRIDGE_INVARIANT(lru == expect_lru_, "docs/sessions.md#pinned-finals: LRU displacement at publish");
    BRIDGE_INVARIANT(
        lru == 0 || residual_,
        "docs/sessions.md#pinned-finals: pin_displaced stays 0 unless the one-call residual occurred");
    BRIDGE_INVARIANT(m_.pin_release_raced.value() == raced_base_ && m_.pin_release_failed.value() == failed_base_,
                     "docs/sessions.md#pinned-finals: no reclaim races or fails in a single-threaded schedule");
    BRIDGE_INVARIANT(m_.pin_displaced_for_admission.value() - adm_base_ == expect_adm_,
                     "docs/sessions.md#pinned-finals: pin_displaced_for_admission counts each reclaim");
    BRIDGE_INVARIANT(m_.streaming_backstop.value() - backstop_base_ == expect_backstop_,
                     "docs/sessions.md#the-sweep: stranded streaming records are parked by the sweep");
    for (std::size_t d = 0; d < forced_base_.size(); ++d) {
      BRIDGE_INVARIANT(m_.forced_expires[d].value() - forced_base_[d] == expect_forced_[d],
                       "docs/sessions.md#the-sweep: pressure expiry disposition "
                           << mcpcore::to_string(static_cast<mcpcore::expire_disposition>(d)));
    }
    // Records (docs/sessions.md#progress-records).
    BRIDGE_INVARIANT(bridge_.records() == model_records(), "docs/sessions.md#progress-records: records alive ("
                                                               << bridge_.records() << ", model "
                                                               << model_records() << ")");
    // Record states: the calls this step acted on; every call in the bridge (and those torn down
    // since the last step: a torn-down record's state no longer moves) after a reclaim, a sweep,
    // a teardown, and every eighth step (a divergence persists, so it is caught there).
    const auto check_state = [&](int i) {
      const auto& c = calls_[idx(i)];
      const auto s = c.handle.state_now();
      BRIDGE_INVARIANT(s == c.st, "docs/sessions.md#progress-records: call " << c.id << " is " << mcpcore::to_string(s) << ", model "
                                                          << mcpcore::to_string(c.st));
    };
    if (full_check_ || torn_ || ++settles_ % 8 == 0) {
      BRIDGE_INVARIANT(bridge_.parked() == model_parked(), "docs/sessions.md#progress-records: parked records");
      for (const int i : active_) {
        check_state(i);
        if (broken_) break;
      }
    } else {
      for (const int i : touched_) check_state(i);
    }
    touched_.clear();
    full_check_ = false;
    if (torn_) {
      std::erase_if(active_, [&](int i) { return !calls_[idx(i)].in_bridge; });
      torn_ = false;
    }
    expect_lru_ = expect_adm_ = expect_backstop_ = 0;
    expect_forced_ = {};
    baseline();
  }

  tallies& t_;
  const mcpcore::session_metrics& m_;
  std::mt19937_64 rng_;
  std::size_t expire_at_ = 0;
  mcpcore::manual_clock clk_;
  mcpcore::session_registry_options ropts_;
  mcpcore::progress_bridge_options bopts_;
  mcpcore::stream_budget budget_;  // outlives every sink (and so the registry, whose sessions hold them)
  mcpcore::session_registry registry_;
  mcpcore::progress_bridge bridge_;
  std::shared_ptr<mcpcore::session> sess_;
  std::string sid_;
  bool alive_ = true;
  bool dying_ = false;
  bool gapped_ = false;
  bool broken_ = false;
  bool residual_ = false;

  std::vector<call_model> calls_;
  std::vector<int> active_;  // indices of calls in the bridge (see find_call)
  bool torn_ = false;        // a call left the bridge since `active_` was compacted
  std::vector<int> touched_;  // calls the step acted on
  bool full_check_ = false;   // the step may have moved any record
  bool acted_ = false;        // the step called into the bridge, the stream or the sink
  std::size_t settles_ = 0;
  const char* action_ = "start";  // the action the step ran, for failure messages
  std::size_t step_ = 0;
  std::unordered_map<std::int64_t, int> by_request_;
  std::int64_t next_request_ = 1;
  std::uint64_t park_counter_ = 0;
  std::map<std::uint64_t, int> pins_;  // pinned id -> owning call (torn down: an orphan)
  std::deque<std::uint64_t> shadow_;   // ring ids held
  std::uint64_t next_id_ = 1;

  // The client's GET connection (at most one; a superseded one lingers as draining until detached).
  std::shared_ptr<mcpcore::stream_sink> live_;
  std::shared_ptr<mcpcore::stream_sink> draining_;
  bool live_open_ = true;
  std::deque<std::uint64_t> expected_get_;
  std::size_t replay_left_ = 0;
  std::uint64_t get_last_ = 0;
  std::uint64_t get_cursor_ = 0;
  std::uint64_t any_cursor_ = 0;
  bool cursor_is_get_ = false;  // the next attach resumes from the GET stream's own Last-Event-ID
  std::unordered_map<std::uint64_t, seen_frame> seen_;  // every ring id the client received, on any wire

  // Metric baselines and what the step is expected to move.
  std::uint64_t ev_base_ = 0, lru_base_ = 0, raced_base_ = 0, failed_base_ = 0, adm_base_ = 0, backstop_base_ = 0;
  std::array<std::uint64_t, mcpcore::expire_disposition_count> forced_base_{};
  std::uint64_t expect_lru_ = 0, expect_adm_ = 0, expect_backstop_ = 0;
  std::array<std::uint64_t, mcpcore::expire_disposition_count> expect_forced_{};
  mcpcore::json::document doc_;
  std::vector<std::uint64_t> scratch_pins_;
#undef BRIDGE_INVARIANT
#undef BRIDGE_FAIL
};

}  // namespace

TEST_SUITE("model") {
  // Found by this model test: a parked final is committed ring-only and never rides the live GET
  // stream (docs/sessions.md#progress-records NOTE), so a client resuming its GET stream with that
  // stream's own Last-Event-ID passes a final it never received. A cursor therefore releases no pin
  // (the reference's route (b) is replaced): finals still pinned at or below it replay first, and a
  // pin goes when its frame is written on a wire.
  TEST_CASE("sessions.md/pinned-finals, sessions.md/get-attach-replay-resume: a parked final is not lost to the Last-Event-ID of a GET stream that "
            "never carried it") {
    mcpcore::manual_clock clk;
    mcpcore::stream_budget budget;  // outlives the sinks
    mcpcore::session_registry registry{mcpcore::session_registry_options{},
                                       mcpcore::clock_ref<mcpcore::manual_clock>{clk}};
    mcpcore::progress_bridge bridge{registry, mcpcore::progress_bridge_options{},
                                    mcpcore::clock_ref<mcpcore::manual_clock>{clk}};
    auto minted = registry.mint(principal);
    REQUIRE(minted.has_value());
    const auto s = *minted;
    // The client holds its GET stream open.
    auto get = s->stream()->attach_and_replay(0, budget, principal);
    REQUIRE(get.status == attach_status::attached);
    // A streamed call whose POST connection drops before its result: parked
    // (docs/sessions.md#streamed-post).
    auto call = bridge.reserve(s, mcpcore::request_id{1}, mcpcore::request_id{std::string{"tok"}}, true);
    REQUIRE(call.has_value());
    REQUIRE(call->arm(mcpcore::bridge_delivery::streamed) == arm_outcome::streaming);
    call->on_post_closed();
    REQUIRE(call->state_now() == rec_state::ring_only);
    REQUIRE(call->complete(final_text(1)));  // ring-only and pinned: id 1
    REQUIRE(s->stream()->pinned(1));
    // A server notification rides the live GET stream: id 2 is the last id that stream carried.
    constexpr std::string_view note =
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}})";
    REQUIRE(s->stream()->publish(note) == 2);
    mcpcore::stream_sink::batch b;
    get.sink->take(b);
    REQUIRE(b.frames.size() == 1);
    REQUIRE(b.frames.front().id == 2);
    // The GET connection drops; the client resumes with Last-Event-ID 2.
    REQUIRE(s->stream()->detach(*get.sink));
    auto resumed = s->stream()->attach_and_replay(2, budget, principal);
    REQUIRE(resumed.status == attach_status::attached);
    resumed.sink->take(b);
    bridge.sweep();
    const bool delivered =
        std::any_of(b.frames.begin(), b.frames.end(), [](const mcpcore::stream_frame& f) { return f.id == 1; });
    CHECK_MESSAGE(delivered, "the final of call 1 never reached the client");
    CHECK_MESSAGE(s->stream()->pinned(1), "docs/sessions.md#pinned-finals: the final lost its pin to a cursor that never carried it");
    (void)s->stream()->detach(*resumed.sink);
  }

  // Found by the model test: a record whose work ended without a response while it was still arming
  // (`complete_without_response` latches: "arm settles it") and whose POST then parks it instead of
  // arming it (docs/sessions.md#streamed-post-admission) must settle there too, or it holds a pin
  // slot and its charge forever.
  TEST_CASE("sessions.md/pinned-finals, sessions.md/streamed-post-admission: a response-less terminal latched while arming settles the record when its POST parks "
            "it") {
    mcpcore::manual_clock clk;
    mcpcore::session_registry registry{mcpcore::session_registry_options{},
                                       mcpcore::clock_ref<mcpcore::manual_clock>{clk}};
    mcpcore::progress_bridge bridge{registry, mcpcore::progress_bridge_options{},
                                    mcpcore::clock_ref<mcpcore::manual_clock>{clk}};
    auto minted = registry.mint(principal);
    REQUIRE(minted.has_value());
    const auto s = *minted;
    auto call = bridge.reserve(s, mcpcore::request_id{1}, mcpcore::request_id{std::string{"tok"}}, true);
    REQUIRE(call.has_value());
    REQUIRE(bridge.charges(s->id()) == 1);
    REQUIRE(call->complete_without_response());  // the in-call work was cancelled before arm
    call->on_post_closed();                      // the transport parks it (post-dispatch failure)
    for (int minute = 0; minute < 60; ++minute) {  // the session stays in use; the sweep runs
      clk.advance(1min);
      REQUIRE(registry.validate_and_touch(s->id(), principal) != nullptr);
      bridge.sweep();
    }
    CHECK_MESSAGE(bridge.charges(s->id()) == 0, "docs/sessions.md#pinned-finals: the charge goes when the record settles");
    CHECK_MESSAGE(call->state_now() == rec_state::done,
                  "the record was left " << mcpcore::to_string(call->state_now()));
    CHECK_MESSAGE(bridge.records() == 0, "docs/sessions.md#the-sweep: a settled record is reaped by the sweep");
  }

  TEST_CASE(
      "sessions.md/get-attach-replay-resume, sessions.md/the-replay-ring, sessions.md/pinned-finals, sessions.md/streamed-post, sessions.md/progress-records, sessions.md/ordering-guarantees: the bridge, ring, pins and GET resume keep their "
      "invariants on random schedules") {
    const std::size_t schedules = env_or("MCPCORE_MODEL_SCHEDULES", 3000);
    const std::size_t seed = env_or("MCPCORE_MODEL_SEED", 20261207);
    constexpr std::size_t steps = 150;
    mcpcore::metrics_registry registry;
    const mcpcore::session_metrics m = mcpcore::bind_session_metrics(registry);
    tallies t;
    std::size_t failed_schedules = 0;

    for (std::size_t schedule = 0; schedule < schedules; ++schedule) {
      CAPTURE(schedule);
      bridge_sim sim{seed * 0x9E3779B97F4A7C15ULL + schedule, m, t};
      for (std::size_t step = 0; step < steps && !sim.broken() && !sim.ended(); ++step) sim.step(step);
      sim.finish();
      if (sim.broken() && ++failed_schedules >= 5) FAIL("stopping after 5 failed schedules");
    }

    MESSAGE("schedules=" << schedules << " steps=" << t.steps << " (quiet " << t.quiet_steps << ")"
                         << " frames read=" << t.frames << " (frame_too_large notices "
                         << t.too_large << ")"
                         << " reservations=" << t.reservations);
    MESSAGE("refusals: unknown_session="
            << t.refusals[static_cast<std::size_t>(bridge_reject::unknown_session)]
            << " duplicate_request_id="
            << t.refusals[static_cast<std::size_t>(bridge_reject::duplicate_request_id)]
            << " global_cap=" << t.refusals[static_cast<std::size_t>(bridge_reject::global_cap)]
            << " pin_slots=" << t.refusals[static_cast<std::size_t>(bridge_reject::pin_slots)]
            << " (held=charges " << t.pin_slots_charges << ", held=pins " << t.pin_slots_pins
            << ")");
    MESSAGE("reclaims: orphan=" << t.reclaims_orphan << " parked=" << t.reclaims_parked
                                << "; parks: post_closed=" << t.parks_post_closed << " write_failed="
                                << t.parks_write_failed << " dispatch_failure=" << t.parks_dispatch
                                << " backstop=" << t.parks_backstop);
    MESSAGE("GET: attaches=" << t.attaches << " gaps=" << t.gaps << " handover_pending=" << t.handovers
                             << " takeovers=" << t.takeovers << " replayed=" << t.replayed_frames
                             << " pinned finals acknowledged unseen=" << t.acked_unseen
                             << " (by the GET stream's own Last-Event-ID: " << t.acked_unseen_get << ")");
    MESSAGE("POST: finals written=" << t.finals_on_post << " cap drains=" << t.cap_drains
                                    << " cap settles=" << t.cap_settles);
    MESSAGE("cancels: accepted=" << t.cancels[static_cast<std::size_t>(cancel_outcome::accepted)] << " detached="
                                 << t.cancels[static_cast<std::size_t>(cancel_outcome::detached)] << " noop="
                                 << t.cancels[static_cast<std::size_t>(cancel_outcome::noop)]);
    MESSAGE(
        "sweep: arming reaped="
        << t.arming_reaped << " pressure none="
        << t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::none)] << " fallback="
        << t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::fallback_final)]
        << " synthesized="
        << t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::synthesize_unavailable)]
        << " session deaths=" << t.session_deaths << " tie probes=" << t.tie_probes);
    MESSAGE("terminals: in-call messages=" << t.messages << " finish after defer=" << t.finishes_late
                                           << " finish before defer=" << t.finishes_early
                                           << " without response=" << t.no_response
                                           << " (settled by a park: " << t.settled_on_park << ")");
    MESSAGE("pin cap: over cap (residual)=" << t.residual_over_cap << " LRU displaced=" << t.lru_displaced
                                            << "; end: parked awaiting resume=" << t.end_parked
                                            << " delivered by the resume=" << t.end_resumed_finals);
    CHECK(t.violations == 0);
    // The residual of docs/sessions.md#pinned-finals needs a raced or failed reclaim: impossible
    // single-threaded.
    CHECK(t.residual_over_cap == 0);
    CHECK(t.lru_displaced == 0);
    if (schedules >= 500) {  // the default run must have exercised every interesting path
      CHECK(t.pin_slots_charges > 0);
      CHECK(t.pin_slots_pins > 0);
      CHECK(t.reclaims_orphan > 0);
      CHECK(t.reclaims_parked > 0);
      CHECK(t.parks_post_closed > 0);
      CHECK(t.parks_backstop > 0);
      CHECK(t.parks_dispatch > 0);
      CHECK(t.gaps > 0);
      CHECK(t.handovers > 0);
      CHECK(t.cap_settles > 0);
      CHECK(t.cap_drains > 0);
      CHECK(t.refusals[static_cast<std::size_t>(bridge_reject::global_cap)] > 0);
      CHECK(t.refusals[static_cast<std::size_t>(bridge_reject::unknown_session)] > 0);
      CHECK(t.cancels[static_cast<std::size_t>(cancel_outcome::detached)] > 0);
      CHECK(t.cancels[static_cast<std::size_t>(cancel_outcome::accepted)] > 0);
      CHECK(t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::none)] > 0);
      CHECK(t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::synthesize_unavailable)] > 0);
      CHECK(t.arming_reaped > 0);
      CHECK(t.end_parked > 0);
      CHECK(t.settled_on_park > 0);
      CHECK(t.expires[static_cast<std::size_t>(mcpcore::expire_disposition::fallback_final)] > 0);
    }
  }
}
