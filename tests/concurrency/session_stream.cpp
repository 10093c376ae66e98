// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of one session's stream state (run under TSan by the tsan preset; reference §7.4,
// §7.5, §7.9, §8, §14.1, §14.3).
#include <mcpcore/session_stream.hpp>

#include <mcpcore/metrics.hpp>
#include <mcpcore/session_metrics.hpp>
#include <mcpcore/stream_budget.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;

namespace {

// "<thread>:<sequence>", so that the reader can check each publisher's own order.
std::string tagged(int thread, int seq) { return std::to_string(thread) + ":" + std::to_string(seq); }

bool parse_tag(std::string_view s, int& thread, int& seq) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view left = s.substr(0, colon);
  const std::string_view right = s.substr(colon + 1);
  const auto a = std::from_chars(left.data(), left.data() + left.size(), thread);
  const auto b = std::from_chars(right.data(), right.data() + right.size(), seq);
  return a.ec == std::errc{} && b.ec == std::errc{};
}

std::size_t pin_count(const session_stream_stats& st) {
  return static_cast<std::size_t>(std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }));
}

void count_wake(void* p) noexcept { static_cast<std::atomic<long>*>(p)->fetch_add(1, std::memory_order_relaxed); }

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("reference §7.4, §7.9, §14.3: a resuming reader sees every id once, in order, across replay and live") {
    constexpr int publishers = 4;
    constexpr int per_publisher = 500;
    constexpr std::uint64_t total = std::uint64_t{publishers} * per_publisher;
    session_stream_options o;
    o.ring_frames = 4096;  // holds everything: no gap, no eviction
    o.ring_bytes = std::size_t{1} << 22;
    o.sink_queue_frames = 4096;  // no drop
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{o, m};

    std::atomic<bool> go{false};
    std::atomic<bool> ids_ok{true};
    std::atomic<bool> order_ok{true};
    std::atomic<bool> attach_ok{true};
    std::atomic<bool> drops_ok{true};
    std::atomic<long> wakes{0};
    std::atomic<long> failed_publishes{0};
    std::uint64_t last = 0;
    int attaches = 0;
    {
      std::vector<std::jthread> threads;
      threads.reserve(publishers + 1);
      for (int t = 0; t < publishers; ++t) {
        threads.emplace_back([&, t] {
          while (!go.load()) std::this_thread::yield();
          for (int i = 0; i < per_publisher; ++i) {
            if (s.publish(tagged(t, i)) == 0) ++failed_publishes;
            if ((i % 4) == 0) std::this_thread::yield();
          }
        });
      }
      threads.emplace_back([&] {
        std::array<int, publishers> next_seq{};
        std::shared_ptr<stream_sink> sink;
        stream_sink::batch batch;
        int passes = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (last < total && std::chrono::steady_clock::now() < deadline) {
          if (!sink || passes % 3 == 2) {
            // Resume after the last id seen, preferably with frames still unread on the old sink: the
            // replay and the live queue must join seamlessly.
            if (sink) sink->wait_for(std::chrono::milliseconds(5));
            auto r = s.attach_and_replay(last, budget, "reader");
            if (r.status != attach_status::attached) {
              attach_ok = false;
              go = true;
              break;
            }
            ++attaches;
            if (sink) {
              // The old sink was superseded; what it still queues is replayed on the new one.
              if (sink->reason() != close_reason::superseded) attach_ok = false;
              if (!s.detach(*sink)) attach_ok = false;
            }
            // What the old sink still queued, unread, is replayed by the new one.
            sink = std::move(r.sink);
            if (passes % 2 == 0) sink->set_waker(&count_wake, &wakes);
            go = true;
          }
          ++passes;
          sink->wait_for(std::chrono::milliseconds(2));
          sink->take(batch);
          if (batch.dropped != 0) drops_ok = false;
          for (const auto& f : batch.frames) {
            if (f.id != last + 1) ids_ok = false;
            last = f.id;
            int t = 0;
            int seq = 0;
            if (!parse_tag(f.data, t, seq) || t < 0 || t >= publishers || seq != next_seq[static_cast<std::size_t>(t)]) {
              order_ok = false;
            } else {
              ++next_seq[static_cast<std::size_t>(t)];
            }
          }
        }
        if (sink && !s.detach(*sink)) attach_ok = false;
      });
    }
    CHECK(failed_publishes.load() == 0);
    CHECK(attach_ok.load());
    CHECK(ids_ok.load());
    CHECK(order_ok.load());
    CHECK(drops_ok.load());
    CHECK(last == total);
    CHECK(attaches > 2);
    CHECK(s.stats().next_id == total + 1);
    CHECK(budget.in_use() == 0);
    CHECK(m.frames_dropped.value() == 0);
    CHECK(m.streams_active.value() == 0);
    CHECK(m.streams_handover_pending.value() == 0);
  }

  TEST_CASE("reference §7.4 steps 5-8, §7.5: concurrent takeovers and detaches return every lease exactly once") {
    constexpr int threads = 4;
    constexpr int iterations = 300;
    session_stream_options o;
    o.ring_frames = 64;
    o.get_streams_per_principal = 2;
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{o, m};

    std::atomic<bool> done{false};
    std::atomic<bool> bounded{true};
    std::atomic<bool> detach_ok{true};
    std::atomic<long> attached{0};
    std::atomic<long> pending{0};
    std::atomic<long> capped{0};
    std::atomic<long> other{0};
    std::atomic<long> wakes{0};
    std::mutex generations_mutex;
    std::set<std::uint64_t> generations;
    {
      std::vector<std::jthread> workers;
      // a publisher, so that live pushes and wakes race the takeovers
      workers.emplace_back([&] {
        int i = 0;
        while (!done.load()) s.publish(tagged(9, i++));
      });
      // an observer: at most a live and a draining sink are tracked; a detached sink's lease goes
      // back just after the stream lock is released, so each attacher may hold one more briefly
      workers.emplace_back([&] {
        while (!done.load()) {
          if (budget.in_use() > 2 + threads) bounded = false;
          const auto st = s.stats();
          if (st.draining && st.generation < 2) bounded = false;  // only a takeover makes a draining sink
          if (m.streams_active.value() > 2 || m.streams_handover_pending.value() > 1) bounded = false;
        }
      });
      std::vector<std::jthread> attachers;
      attachers.reserve(threads);
      for (int t = 0; t < threads; ++t) {
        attachers.emplace_back([&, t] {
          stream_sink::batch batch;
          for (int i = 0; i < iterations; ++i) {
            auto r = s.attach_and_replay(0, budget, (t % 2) == 0 ? "alice" : "bob");
            if (r.status == attach_status::attached) {
              ++attached;
              {
                const std::lock_guard<std::mutex> lock(generations_mutex);
                if (!generations.insert(r.generation).second) bounded = false;  // a fence is never reused
              }
              if ((i % 3) == 0) r.sink->set_waker(&count_wake, &wakes);
              r.sink->take(batch);
              // my sink stays tracked until I detach it, exactly once
              if (!s.detach(*r.sink)) detach_ok = false;
              if (s.detach(*r.sink)) detach_ok = false;
              if (static_cast<bool>(r.sink->lease())) detach_ok = false;
            } else if (r.status == attach_status::handover_pending) {
              ++pending;
              std::this_thread::yield();
            } else if (r.status == attach_status::per_principal_stream_cap ||
                       r.status == attach_status::global_stream_cap) {
              ++capped;
            } else {
              ++other;
            }
          }
        });
      }
      attachers.clear();  // joins
      done = true;
    }
    CHECK(attached.load() > 0);
    CHECK(other.load() == 0);
    CHECK(capped.load() == 0);  // a principal holds at most two sinks here, within its cap of 2
    CHECK(bounded.load());
    CHECK(detach_ok.load());
    CHECK(budget.in_use() == 0);
    CHECK(budget.entries() == 0);
    const auto st = s.stats();
    CHECK_FALSE(st.live);
    CHECK_FALSE(st.draining);
    CHECK(st.generation == static_cast<std::uint64_t>(attached.load()));
    CHECK(generations.size() == static_cast<std::size_t>(attached.load()));
    CHECK(m.streams_active.value() == 0);
    CHECK(m.streams_handover_pending.value() == 0);
  }

  TEST_CASE("reference §8: concurrent finals, unpins and acknowledging attaches release each pin exactly once") {
    constexpr int threads = 4;
    constexpr int per_thread = 400;
    session_stream_options o;
    o.ring_frames = 8192;  // resumes stay in the window
    o.ring_bytes = std::size_t{1} << 22;
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{o, m};

    std::atomic<bool> done{false};
    std::atomic<bool> pins_ok{true};
    std::atomic<long> unpinned{0};
    std::atomic<long> acknowledged{0};
    std::atomic<long> gaps{0};
    std::atomic<std::uint64_t> latest{0};
    {
      std::vector<std::jthread> workers;
      workers.emplace_back([&] {  // an observer of the slots
        while (!done.load()) {
          const auto st = s.stats();
          if (pin_count(st) > max_pinned_finals) pins_ok = false;
          for (const auto p : st.pins) {
            if (p >= st.next_id) pins_ok = false;  // no ghost pins: only committed ids
          }
        }
      });
      workers.emplace_back([&] {  // a resuming client whose replays reach the wire
        std::shared_ptr<stream_sink> sink;
        while (!done.load()) {
          const std::uint64_t cursor = latest.load();
          auto r = s.attach_and_replay(cursor, budget, "carol");
          if (r.status == attach_status::attached) {
            // The pump writes the replay; written frames release their pins (route (a) on GET).
            stream_sink::batch b;
            r.sink->take(b);
            std::vector<std::uint64_t> ids;
            for (const auto& f : b.frames) ids.push_back(f.id);
            acknowledged += static_cast<long>(s.written(ids));
            if (sink) s.detach(*sink);
            sink = std::move(r.sink);
          } else {
            ++gaps;
          }
          std::this_thread::yield();
        }
        if (sink) s.detach(*sink);
      });
      std::vector<std::jthread> finals;
      finals.reserve(threads);
      for (int t = 0; t < threads; ++t) {
        finals.emplace_back([&, t] {
          for (int i = 0; i < per_thread; ++i) {
            const auto id = s.publish_final(tagged(t, i));
            if (id == 0) {
              pins_ok = false;
              continue;
            }
            if ((i % 4) == 0) s.publish_ring_only(tagged(t, -i));
            // unpin my final (route (a)) or an older one someone else may hold (a race on the slot)
            const std::uint64_t target = (i % 3) == 0 && id > 2 ? id - 2 : id;
            if ((i % 5) != 4 && s.unpin(target)) ++unpinned;
            if ((i % 10) == 0) {
              std::uint64_t seen = latest.load();
              while (seen < id && !latest.compare_exchange_weak(seen, id)) {
              }
            }
          }
        });
      }
      finals.clear();
      done = true;
    }
    const auto st = s.stats();
    CHECK(pins_ok.load());
    CHECK(pin_count(st) <= max_pinned_finals);
    CHECK(gaps.load() == 0);
    // every final's pin ended by exactly one route: unpinned, displaced, acknowledged, or still held
    CHECK(static_cast<std::uint64_t>(threads) * per_thread ==
          static_cast<std::uint64_t>(unpinned.load()) + m.pin_displaced.value() +
              static_cast<std::uint64_t>(acknowledged.load()) + pin_count(st));
    CHECK(budget.in_use() == 0);
  }

  TEST_CASE("reference §7.6, §14.1: close, poke and poison wake a consumer blocked in wait_for") {
    stream_budget budget;
    session_stream s;
    auto a = s.attach_and_replay(0, budget, "dave");
    REQUIRE(a.status == attach_status::attached);
    std::atomic<int> woken{0};
    close_reason seen = close_reason::none;
    {
      std::jthread consumer([&] {
        stream_sink::batch b;
        for (;;) {
          if (a.sink->wait_for(std::chrono::seconds(30))) ++woken;
          a.sink->take(b);
          if (b.closed) {
            seen = b.reason;
            return;
          }
        }
      });
      for (int i = 0; i < 50; ++i) {
        s.publish(tagged(0, i));
        if ((i % 10) == 0) a.sink->poke();
      }
      s.poison();
    }
    CHECK(woken.load() >= 1);
    CHECK(seen == close_reason::internal_error);
    CHECK(s.detach(*a.sink));
    CHECK(budget.in_use() == 0);
  }
}
