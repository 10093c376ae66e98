// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the progress bridge (run under TSan by the tsan preset;
// docs/sessions.md#pinned-finals, #streamed-post, #progress-records, #lock-discipline,
// #ordering-guarantees): reporters, pumps, the sweep and cancels racing on the records of one
// session.
#include <mcpcore/session/progress_bridge.hpp>

#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

// A detached call's final as `operation_handle::finish` hands it to the record.
operation_final finished() {
  operation_final f;
  f.result_json = R"({"content":[{"type":"text","text":"finished"}]})";
  return f;
}

std::string success(std::int64_t id) {
  std::string out;
  write_result_response(out, request_id_view{id}, R"({"content":[]})");
  return out;
}

// Delivers every pinned final of `s`: a resume at its newest id replays them, and the pump's
// successful write releases them (docs/sessions.md#pinned-finals on the GET wire).
void acknowledge_all(const std::shared_ptr<session>& s) {
  stream_budget budget;
  const auto next = s->stream()->stats().next_id;
  auto a = s->stream()->attach_and_replay(next - 1, budget, s->principal_id());
  REQUIRE(a.status == attach_status::attached);
  stream_sink::batch b;
  a.sink->take(b);
  std::vector<std::uint64_t> ids;
  for (const auto& f : b.frames) ids.push_back(f.id);
  (void)s->stream()->written(ids);
  s->stream()->detach(*a.sink);
}

// What one POST pump saw.
struct pump_log {
  bool ordered = true;      // ring ids strictly increasing across every take
  bool final_last = true;   // nothing after the final
  bool progress_up = true;  // progress values strictly increasing
  bool finished = true;     // ended by its final or a close within the bound
  int finals = 0;
};

// The pump of one streamed POST (docs/sessions.md#streamed-post), in a thread of its own: arms,
// then takes until the final is written or the wake sink closes.
void pump(progress_call call, pump_log& log) {
  if (call.arm(bridge_delivery::streamed) != arm_outcome::streaming) return;  // cancelled: plain answer
  const auto sink = call.wake_sink();
  std::uint64_t last_id = 0;
  std::optional<double> last_progress;
  json::document doc;
  post_batch batch;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    (void)sink->wait_for(5ms);
    stream_sink::batch drained;
    sink->take(drained);  // clears the poke
    call.take(batch, false);
    for (std::size_t i = 0; i < batch.frames.size(); ++i) {
      const auto& f = batch.frames[i];
      if (log.finals > 0) log.final_last = false;
      if (f.id <= last_id) log.ordered = false;
      last_id = f.id;
      auto root = doc.parse(f.data);
      if (!root.has_value()) continue;
      const auto p = (*root)["params"]["progress"].to_double();
      if (p) {
        if (last_progress && !(*p > *last_progress)) log.progress_up = false;
        last_progress = p;
      }
      if (batch.final_included && i + 1 == batch.frames.size()) ++log.finals;
    }
    if (batch.final_included) {
      call.on_final_written();
      call.on_post_closed();
      return;
    }
    if (drained.closed || call.state_now() == bridge_record_state::done) {
      call.on_post_closed();
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      log.finished = false;
      call.on_post_closed();
      return;
    }
  }
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("sessions.md/lock-discipline, sessions.md/ordering-guarantees: reporters, pumps, sweeps and cancels keep ids ordered and the final last") {
    manual_clock clk;
    metrics_registry metrics;
    const session_metrics m = bind_session_metrics(metrics);
    session_registry registry{session_registry_options{}, clock_ref<manual_clock>{clk}, m};
    progress_bridge bridge{registry, progress_bridge_options{}, clock_ref<manual_clock>{clk}, m};
    auto minted = registry.mint("alice");
    REQUIRE(minted.has_value());
    const std::shared_ptr<session> s = *minted;

    constexpr int rounds = 8;
    constexpr int calls_per_round = 4;  // one per pin slot (docs/sessions.md#pinned-finals)
    constexpr int reports = 60;
    std::atomic<bool> stop{false};
    std::atomic<int> round_base{0};
    std::atomic<long> accepted_total{0};
    bool all_ok = true;

    std::jthread sweeper([&] {
      while (!stop.load()) {
        bridge.sweep();
        std::this_thread::yield();
      }
    });
    std::jthread canceller([&] {
      unsigned n = 0;
      while (!stop.load()) {
        const int id = round_base.load() + static_cast<int>(n++ % calls_per_round);
        (void)bridge.cancel(s->id(), id);
        for (int i = 0; i < 50; ++i) std::this_thread::yield();
      }
    });

    for (int round = 0; round < rounds; ++round) {
      const int base = 100 * (round + 1);
      std::vector<progress_call> calls;
      for (int k = 0; k < calls_per_round; ++k) {
        auto r = bridge.reserve(s, base + k, request_id{base + k}, true);
        REQUIRE(r.has_value());
        r->set_execution_id("ex-" + std::to_string(base + k));
        calls.push_back(*r);
      }
      round_base = base;
      std::array<pump_log, calls_per_round> logs{};
      std::array<std::atomic<int>, calls_per_round> accepted{};
      {
        std::vector<std::jthread> threads;
        for (int k = 0; k < calls_per_round; ++k) {
          const auto uk = static_cast<std::size_t>(k);
          threads.emplace_back([&, uk] { pump(calls[uk], logs[uk]); });
          for (int t = 0; t < 2; ++t) {
            threads.emplace_back([&, uk, t, base, k] {
              progress_call call = calls[uk];
              for (int i = 1; i <= reports; ++i) {
                (void)call.progress(static_cast<double>(2 * i + t), 2.0 * reports + 1);
              }
              const bool won = t == 0 ? call.complete(success(base + k)) : call.finish(finished());
              if (won) ++accepted[uk];
            });
          }
        }
      }
      for (std::size_t k = 0; k < calls_per_round; ++k) {
        const auto& l = logs[k];
        if (!(l.ordered && l.final_last && l.progress_up && l.finished && l.finals <= 1)) all_ok = false;
        CHECK(accepted[k].load() == 1);  // exactly one terminal
        accepted_total += accepted[k].load();
      }
      // Parked finals (a cancelled POST) are released by a resume; then everything is reapable.
      acknowledge_all(s);
      for (auto& c : calls) c.on_post_closed();
    }
    stop = true;
    sweeper.join();
    canceller.join();
    CHECK(all_ok);
    CHECK(accepted_total.load() == rounds * calls_per_round);
    acknowledge_all(s);
    bridge.sweep();
    CHECK(bridge.records() == 0);
    CHECK(bridge.charges(s->id()) == 0);
    CHECK(m.bridge_records_active.value() == 0);
    CHECK(m.bridge_sweep_failures.value() == 0);
    CHECK_FALSE(s->stream()->poisoned());
    CHECK(m.pin_displaced.value() == 0);  // admission counted every pin: LRU never had to act
  }

  TEST_CASE("sessions.md/projection-and-finals: exactly one terminal is accepted when many threads race to finish one call") {
    manual_clock clk;
    metrics_registry metrics;
    const session_metrics m = bind_session_metrics(metrics);
    session_registry registry{session_registry_options{}, clock_ref<manual_clock>{clk}, m};
    progress_bridge bridge{registry, progress_bridge_options{}, clock_ref<manual_clock>{clk}, m};
    auto minted = registry.mint("alice");
    REQUIRE(minted.has_value());
    const std::shared_ptr<session> s = *minted;

    constexpr int rounds = 40;
    constexpr int threads = 6;
    for (int round = 0; round < rounds; ++round) {
      auto r = bridge.reserve(s, round, request_id{round}, true);
      REQUIRE(r.has_value());
      progress_call call = *r;
      const bool park = round % 2 == 1;
      REQUIRE(call.arm(bridge_delivery::streamed) == arm_outcome::streaming);
      if (park) call.on_post_closed();
      std::atomic<int> winners{0};
      std::atomic<int> responses{0};
      {
        std::vector<std::jthread> ts;
        for (int t = 0; t < threads; ++t) {
          ts.emplace_back([&, t] {
            (void)call.progress(static_cast<double>(t), threads);
            bool won = false;
            switch (t % 3) {
              case 0: won = call.complete(success(round)); break;
              case 1: won = call.finish(finished()); break;
              default: won = call.complete_without_response(); break;
            }
            if (won) {
              ++winners;
              if (t % 3 != 2) ++responses;
            }
            (void)call.progress(static_cast<double>(threads), threads);  // after a terminal: dropped
          });
        }
      }
      CHECK(winners.load() == 1);
      post_batch b;
      call.take(b, false);
      if (responses.load() == 1) {
        if (park) {
          CHECK(call.state_now() == bridge_record_state::ring_only);
        } else {
          REQUIRE_FALSE(b.frames.empty());
          CHECK(b.final_included);
          call.on_final_written();
        }
      } else {
        CHECK_FALSE(b.final_included);
        CHECK(call.state_now() == bridge_record_state::done);
      }
      CHECK(bridge.charges(s->id()) == 0);
      acknowledge_all(s);
      bridge.sweep();
      CHECK(bridge.records() == 0);
    }
  }

  TEST_CASE("sessions.md/pinned-finals: concurrent reservations never exceed the pin slots, charges settle to zero") {
    manual_clock clk;
    metrics_registry metrics;
    const session_metrics m = bind_session_metrics(metrics);
    session_registry registry{session_registry_options{}, clock_ref<manual_clock>{clk}, m};
    progress_bridge bridge{registry, progress_bridge_options{}, clock_ref<manual_clock>{clk}, m};
    auto minted = registry.mint("alice");
    REQUIRE(minted.has_value());
    const std::shared_ptr<session> s = *minted;

    constexpr int threads = 4;
    constexpr int iterations = 150;
    std::atomic<bool> over{false};
    std::atomic<bool> stop{false};
    std::atomic<long> admitted{0};
    std::jthread observer([&] {
      while (!stop.load()) {
        if (bridge.charges(s->id()) > max_pinned_finals) over = true;
        bridge.sweep();
        std::this_thread::yield();
      }
    });
    {
      std::vector<std::jthread> ts;
      for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
          for (int i = 0; i < iterations; ++i) {
            bridge.sweep();  // done records hold their slot until a sweep (docs/sessions.md#the-sweep)
            const int id = t * 100000 + i;
            auto r = bridge.reserve(s, id, request_id{id}, true);
            if (!r.has_value()) {
              if (r.error().reason != bridge_reject::pin_slots) over = true;
              continue;
            }
            ++admitted;
            progress_call call = *r;
            switch (i % 4) {
              case 0: call.abandon(); break;
              case 1:
                (void)bridge.cancel(s->id(), id);
                (void)call.arm(bridge_delivery::streamed);
                (void)call.complete(success(id));
                call.on_post_closed();
                break;
              case 2: {
                (void)call.arm(bridge_delivery::streamed);
                (void)call.complete(success(id));
                post_batch b;
                call.take(b, false);
                if (b.final_included) call.on_final_written();
                call.on_post_closed();
                break;
              }
              default:
                (void)call.arm(bridge_delivery::streamed);
                call.on_post_closed();  // parked, then finished: the final stays pinned (reclaimable)
                (void)call.finish(finished());
                break;
            }
          }
        });
      }
    }
    stop = true;
    observer.join();
    CHECK_FALSE(over.load());
    CHECK(admitted.load() > 0);
    // Admission counts pins, so LRU displacement needs a lost release race
    // (docs/sessions.md#pinned-finals).
    CHECK(m.pin_displaced.value() <= m.pin_release_raced.value());
    CHECK(bridge.charges(s->id()) == 0);
    acknowledge_all(s);
    bridge.sweep();
    CHECK(bridge.records() == 0);
    CHECK(m.bridge_records_active.value() == 0);
  }

  // Found by the soak test (tests/soak): a session deleted while its streamed call runs. The
  // dispatch core stops the handler and `complete_without_response` runs on the dispatch thread
  // while the transport's strand passes the POST's pump. A pass that found the record done before
  // its sink was closed ended the stream `completed`: no result and no close frame, read by the
  // client as a completion (docs/errors.md#honest-answers: never indistinguishable).
  TEST_CASE("errors.md/honest-answers: work that ends without a response while its POST pump passes ends it cancelled") {
    constexpr int rounds = 200;
    int completed = 0;
    int cancelled = 0;
    int other = 0;
    for (int round = 0; round < rounds; ++round) {
      manual_clock clk;
      metrics_registry metrics;
      const session_metrics m = bind_session_metrics(metrics);
      session_registry registry{session_registry_options{}, clock_ref<manual_clock>{clk}, m};
      progress_bridge bridge{registry, progress_bridge_options{}, clock_ref<manual_clock>{clk}, m};
      stream_budget budget;
      auto minted = registry.mint("alice");
      REQUIRE(minted.has_value());
      const std::shared_ptr<session> s = *minted;
      auto a = admit_post(post_mode::streamed, budget, bridge, s, request_id{1}, request_id{1}, m);
      REQUIRE(a.call.has_value());
      progress_call work = *a.call;
      REQUIRE(work.arm(bridge_delivery::streamed) == arm_outcome::streaming);
      REQUIRE(work.progress(1, 2));  // a frame for the pump: the transport was woken
      post_pump pump{std::move(*a.call), std::move(a.lease), clk.steady_now(), "cid", post_pump_options{}, 0ms, m};
      std::atomic<bool> go{false};
      std::jthread dispatch{[&] {
        while (!go.load()) std::this_thread::yield();
        (void)work.complete_without_response();
      }};
      go = true;
      std::string wire;
      for (int pass = 0; !pump.finished() && pass < 1000000; ++pass) {
        std::string out;
        pump.pass(clk.steady_now(), out);
        wire += out;
        if (!out.empty()) pump.written();
      }
      dispatch.join();
      REQUIRE(pump.finished());
      switch (pump.reason()) {
        case close_reason::cancelled:
          ++cancelled;
          CHECK(wire.find("\"reason\":\"cancelled\"") != std::string::npos);  // with its close frame
          break;
        case close_reason::completed: ++completed; break;
        default: ++other; break;
      }
    }
    CHECK(completed == 0);
    CHECK(other == 0);
    CHECK(cancelled == rounds);
  }
}
