// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of one session's stream state (run under TSan by the tsan preset;
// docs/sessions.md#get-attach-replay-resume, #takeover, #the-replay-ring, #pinned-finals,
// #lock-discipline, #ordering-guarantees).
#include <mcpcore/session/session_stream.hpp>

#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/stream_budget.hpp>

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
  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/the-replay-ring, sessions.md/ordering-guarantees: a resuming reader sees every id once, in order, across replay and live") {
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

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/takeover: concurrent takeovers and detaches return every lease exactly once") {
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

  TEST_CASE("sessions.md/pinned-finals: concurrent finals, unpins and acknowledging attaches release each pin exactly once") {
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

  TEST_CASE("MCP resumability (sessions.md/get-attach-replay-resume, sessions.md/takeover, sessions.md/pinned-finals, sessions.md/ordering-guarantees): concurrent channel publishers, resumes, ends and detaches keep each stream to its own frames") {
    // Channel publishers open POST streams one after another and fill them; even-numbered streams
    // end with their final, odd ones with end_channel (also called at random by an ender); a GET
    // publisher fills the GET stream; resumers attach by priming markers (and by GET cursors),
    // drain, and detach, some before the end. The ring and the queues hold everything: no gap, no
    // drop, so every delivery can be checked exactly.
    constexpr int channel_publishers = 3;
    constexpr int channels_each = 6;
    constexpr int frames_per_channel = 150;
    constexpr int get_frames = 1000;
    constexpr int resumers = 3;
    constexpr int resumes_each = 80;
    session_stream_options o;
    o.ring_frames = 4096;  // holds everything: no gap, no eviction
    o.ring_bytes = std::size_t{1} << 22;
    o.sink_queue_frames = 4096;  // no drop
    o.get_streams_per_principal = 0;
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{o, m};

    struct opened {
      stream_channel channel = 0;
      std::uint64_t priming = 0;
      bool by_final = false;
    };
    // What one sink delivered, from attach to the end of its consumer.
    struct delivery {
      stream_channel channel = 0;
      std::size_t replayed = 0;  // the first frames, from the ring; the rest came live
      std::vector<std::uint64_t> ids;
      std::vector<stream_channel> channels;  // of each frame
      std::vector<std::string> data;
      std::uint64_t dropped = 0;
      bool closed = false;
      close_reason reason = close_reason::none;
      bool detached_early = false;
      bool superseded_known = true;  // a superseded POST stream's sink is no longer known to detach
    };

    std::mutex registry_mutex;
    std::vector<opened> registry;                   // every POST stream opened so far
    std::vector<std::uint64_t> finals;              // by channel: the final's id (0: none)
    std::vector<delivery> deliveries;
    std::atomic<int> publishers_left{channel_publishers + 1};
    std::atomic<bool> go{false};
    std::atomic<long> failed_publishes{0};
    std::atomic<long> refused{0};
    std::atomic<long> pending{0};
    std::atomic<long> post_resumes{0};
    std::atomic<long> get_resumes{0};
    std::atomic<long> hung{0};
    std::atomic<long> kept_leases{0};  // detach said known but kept the lease

    const auto publish_on = [&](stream_channel c, int seq, bool final) {
      const auto id = final ? s.publish_final(tagged(static_cast<int>(c), seq), c)
                            : s.publish_ring_only(tagged(static_cast<int>(c), seq), c);
      if (id == 0) ++failed_publishes;
      return id;
    };
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < channel_publishers; ++t) {
        threads.emplace_back([&] {
          while (!go.load()) std::this_thread::yield();
          for (int k = 0; k < channels_each; ++k) {
            const auto c = s.open_channel();
            if (c.priming_id == 0) ++failed_publishes;
            const bool by_final = (c.channel % 2) == 0;
            {
              const std::lock_guard<std::mutex> lock(registry_mutex);
              registry.push_back({c.channel, c.priming_id, by_final});
            }
            for (int i = 0; i < frames_per_channel; ++i) {
              (void)publish_on(c.channel, i, false);
              if ((i % 8) == 0) std::this_thread::yield();
            }
            if (!by_final) {
              s.end_channel(c.channel);
              continue;
            }
            const auto final_id = publish_on(c.channel, frames_per_channel, true);
            const std::lock_guard<std::mutex> lock(registry_mutex);
            if (finals.size() <= c.channel) finals.resize(c.channel + 1, 0);
            finals[c.channel] = final_id;
          }
          --publishers_left;
        });
      }
      threads.emplace_back([&] {  // the GET stream's publisher
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < get_frames; ++i) {
          if (s.publish(tagged(0, i)) == 0) ++failed_publishes;
          if ((i % 8) == 0) std::this_thread::yield();
        }
        --publishers_left;
      });
      threads.emplace_back([&] {  // an ender: odd streams at random times, and no-ops
        std::uint64_t n = 0;
        while (publishers_left.load() > 0) {
          opened pick;
          {
            const std::lock_guard<std::mutex> lock(registry_mutex);
            if (!registry.empty()) pick = registry[(n * 7) % registry.size()];
          }
          if (pick.channel != 0 && !pick.by_final && (n % 64) == 0) s.end_channel(pick.channel);
          s.end_channel(get_channel);
          s.end_channel(1000 + n);  // never opened
          ++n;
          std::this_thread::yield();
        }
      });
      for (int r = 0; r < resumers; ++r) {
        threads.emplace_back([&, r] {
          while (!go.load()) std::this_thread::yield();
          for (;;) {  // the first POST stream
            {
              const std::lock_guard<std::mutex> lock(registry_mutex);
              if (!registry.empty()) break;
            }
            std::this_thread::yield();
          }
          stream_sink::batch batch;
          std::uint64_t get_cursor = 0;
          for (int i = 0; i < resumes_each; ++i) {
            // Every fourth resume is the GET stream's; the others a POST stream's priming marker.
            std::uint64_t cursor = 0;
            const bool on_get = (i % 4) == 3;
            if (on_get) {
              cursor = (i % 8) == 7 ? 0 : get_cursor;
            } else {
              // The newest stream (most likely still open: its final comes live), or an older one.
              const std::lock_guard<std::mutex> lock(registry_mutex);
              cursor = (i % 3) == 0 ? registry.back().priming
                                    : registry[static_cast<std::size_t>(r + i * 5) % registry.size()].priming;
            }
            auto a = s.attach_and_replay(cursor, budget, "resumer");
            if (a.status == attach_status::handover_pending) {
              ++pending;
              continue;
            }
            if (a.status != attach_status::attached) {
              ++refused;
              continue;
            }
            if (a.channel == get_channel) {
              ++get_resumes;
            } else {
              ++post_resumes;
            }
            delivery d;
            d.channel = a.channel;
            d.replayed = a.replayed;
            // Some consumers leave early: after a pass or two, or at once.
            const int passes_before_leaving = (i % 5) == 1 ? (i % 3) : -1;
            int passes = 0;
            // On the GET stream, until the publishers are done (or superseded); on a POST stream,
            // until it is closed (every POST stream ends once its publisher is done).
            const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            for (;;) {
              a.sink->wait_for(std::chrono::milliseconds(2));
              a.sink->take(batch);
              d.dropped += batch.dropped;
              for (auto& f : batch.frames) {
                d.ids.push_back(f.id);
                d.channels.push_back(f.channel);
                d.data.push_back(std::move(f.data));
              }
              if (batch.closed) {
                d.closed = true;
                d.reason = batch.reason;
                break;
              }
              if (passes_before_leaving >= 0 && passes++ >= passes_before_leaving) {
                d.detached_early = true;
                break;
              }
              // The GET stream never ends by itself: its consumer leaves once it has everything.
              if (a.channel == get_channel && batch.frames.empty() && publishers_left.load() == 0) break;
              if (std::chrono::steady_clock::now() > guard) {  // a hang guard, not a timing check
                ++hung;
                break;
              }
            }
            if (a.channel == get_channel && !d.ids.empty()) get_cursor = std::max(get_cursor, d.ids.back());
            // The pump lets go: detach returns the lease of a sink the stream knows (a superseded
            // POST stream's sink, or one of a stream that had ended, is not known: its lease goes
            // with the last reference).
            const bool known = s.detach(*a.sink);
            if (a.channel != get_channel && d.reason == close_reason::superseded && known) d.superseded_known = false;
            if (known && static_cast<bool>(a.sink->lease())) ++kept_leases;
            a.sink.reset();
            const std::lock_guard<std::mutex> lock(registry_mutex);
            deliveries.push_back(std::move(d));
          }
        });
      }
      go = true;
    }

    CHECK(failed_publishes.load() == 0);
    CHECK(refused.load() == 0);  // no gap, no cap
    CHECK(hung.load() == 0);
    CHECK(kept_leases.load() == 0);
    CHECK(post_resumes.load() > 0);
    CHECK(get_resumes.load() > 0);
    std::size_t completed = 0, finals_last = 0, finals_live = 0, superseded = 0, early = 0;
    bool own_channel = true, increasing = true, tags_ok = true, no_drop = true, supersede_ok = true;
    bool ends_ok = true, finals_ok = true;
    for (const auto& d : deliveries) {
      no_drop = no_drop && d.dropped == 0;
      supersede_ok = supersede_ok && d.superseded_known;
      int last_seq = -1;
      for (std::size_t k = 0; k < d.ids.size(); ++k) {
        if (d.channels[k] != d.channel) own_channel = false;
        if (k > 0 && d.ids[k] <= d.ids[k - 1]) increasing = false;
        int t = 0;
        int seq = 0;
        if (!parse_tag(d.data[k], t, seq) || static_cast<stream_channel>(t) != d.channel || seq <= last_seq) {
          tags_ok = false;
        }
        last_seq = seq;
      }
      if (d.detached_early) ++early;
      if (!d.closed || d.channel == get_channel) continue;
      if (d.reason == close_reason::superseded) {
        ++superseded;
        continue;
      }
      // A resumed POST stream ends `completed`, after the last frame its stream had; when the
      // stream ended with its final, that final is the last frame delivered.
      if (d.reason != close_reason::completed) ends_ok = false;
      ++completed;
      const auto fin = d.channel < finals.size() ? finals[d.channel] : 0;
      const bool by_final = (d.channel % 2) == 0;
      if (by_final) {
        if (d.ids.empty() || d.ids.back() != fin) {
          finals_ok = false;
        } else {
          ++finals_last;
          if (d.ids.size() > d.replayed) ++finals_live;  // published after the attach
        }
      }
    }
    MESSAGE("deliveries=" << deliveries.size() << " post_resumes=" << post_resumes.load()
                          << " get_resumes=" << get_resumes.load() << " handover_pending=" << pending.load()
                          << " completed=" << completed << " finals_last=" << finals_last
                          << " (live " << finals_live << ")"
                          << " superseded=" << superseded << " left_early=" << early);
    CHECK(own_channel);
    CHECK(increasing);
    CHECK(tags_ok);
    CHECK(no_drop);
    CHECK(supersede_ok);
    CHECK(ends_ok);
    CHECK(finals_ok);
    CHECK(completed > 0);
    // Every lease went back; nothing is left attached.
    CHECK(budget.in_use() == 0);
    const auto st = s.stats();
    CHECK(st.channels_open == 0);
    CHECK(st.channel_sinks == 0);
    CHECK_FALSE(st.live);
    CHECK_FALSE(st.draining);
    CHECK(m.streams_active.value() == 0);
    CHECK(m.streams_handover_pending.value() == 0);
    CHECK(m.frames_dropped.value() == 0);
  }

  TEST_CASE("sessions.md/the-get-pump, sessions.md/lock-discipline: close, poke and poison wake a consumer blocked in wait_for") {
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
