// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the session registry (run under TSan by the tsan preset;
// docs/sessions.md#the-session-registry, docs/http.md#delete-sessions-on,
// docs/sessions.md#lock-discipline).
#include <mcpcore/session/session_registry.hpp>

#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

TEST_SUITE("concurrency") {
  TEST_CASE("sessions.md/the-session-registry: mint, validate, terminate and GC from many threads never exceed the caps") {
    constexpr std::size_t global_cap = 7;
    constexpr std::size_t per_principal_cap = 3;
    constexpr int threads = 4;
    constexpr int iterations = 600;
    const std::array<std::string_view, 3> principals{"alice", "bob", "carol"};

    manual_clock clk;
    metrics_registry metrics;
    const session_metrics m = bind_session_metrics(metrics);
    memory_audit_sink audit{256};
    stream_budget budget;
    session_registry_options o;
    o.max_sessions = global_cap;
    o.max_sessions_per_principal = per_principal_cap;
    o.idle_ttl = 50ms;
    session_registry reg{o, clock_ref<manual_clock>{clk}, m};
    reg.set_audit(audit);

    std::atomic<bool> caps_ok{true};
    std::atomic<bool> binding_ok{true};
    std::atomic<std::uint64_t> minted{0};
    std::atomic<std::uint64_t> refused{0};
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          std::vector<std::shared_ptr<session>> held;
          std::vector<std::shared_ptr<stream_sink>> sinks;
          for (int i = 0; i < iterations; ++i) {
            const auto k = static_cast<std::size_t>(t * 7 + i);
            const std::string_view me = principals[k % principals.size()];
            switch (i % 6) {
              case 0:
              case 1: {
                auto r = reg.mint(me, "cid");
                if (r.has_value()) {
                  ++minted;
                  if ((*r)->principal_id() != me) binding_ok = false;
                  held.push_back(*r);
                } else {
                  ++refused;
                }
                break;
              }
              case 2:
                if (!held.empty()) {
                  const auto& s = held[k % held.size()];
                  const auto v = reg.validate_and_touch(s->id(), s->principal_id());
                  if (v != nullptr && v != s) binding_ok = false;
                  // a foreign principal never gets it
                  if (reg.validate_and_touch(s->id(), "mallory") != nullptr) binding_ok = false;
                  if (v != nullptr && sinks.size() < 2) {
                    auto a = v->stream()->attach_and_replay(0, budget, v->principal_id());
                    if (a.status == attach_status::attached) sinks.push_back(a.sink);
                  }
                }
                break;
              case 3:
                if (!held.empty()) {
                  const std::size_t victim = k % held.size();
                  (void)reg.terminate(held[victim]->id(), held[victim]->principal_id(), "deleted", "cid");
                  held.erase(held.begin() + static_cast<std::ptrdiff_t>(victim));
                }
                break;
              case 4:
                if (t == 0) clk.advance(10ms);  // one thread moves time, so sessions expire
                (void)reg.collect_garbage();
                break;
              default:
                if (!held.empty()) (void)reg.exists(held.front()->id(), held.front()->principal_id());
                if (held.size() > per_principal_cap * principals.size()) held.erase(held.begin());
                break;
            }
            if (reg.size() > global_cap) caps_ok = false;
            for (const auto p : principals) {
              if (reg.count(p) > per_principal_cap) caps_ok = false;
            }
            // a closed sink's pump would detach it, returning its lease
            for (auto it = sinks.begin(); it != sinks.end();) {
              if ((*it)->closed()) {
                it = sinks.erase(it);
              } else {
                ++it;
              }
            }
          }
        });
      }
    }
    CHECK(caps_ok.load());
    CHECK(binding_ok.load());
    CHECK(minted.load() > 0);
    CHECK(refused.load() > 0);  // the caps were actually reached
    std::size_t sum = 0;
    for (const auto p : principals) {
      const std::size_t c = reg.count(p);
      CHECK(c <= per_principal_cap);
      sum += c;
    }
    CHECK(reg.size() == sum);
    CHECK(reg.size() <= global_cap);
    CHECK(m.sessions_active.value() == static_cast<std::int64_t>(reg.size()));
    CHECK(m.sessions_opened.value() == minted.load());
    std::uint64_t rejects = 0;
    for (const auto& c : m.session_rejects) rejects += c.value();
    CHECK(rejects == refused.load());
    CHECK(m.session_gc_failures.value() == 0);
    const std::size_t left = reg.size();
    CHECK(reg.terminate_all() == left);
    CHECK(reg.size() == 0);
    CHECK(m.sessions_active.value() == 0);
    // The idle TTL reaps (how many went during the run depends on the threads' interleaving: thread
    // 0 may take its clock steps before the others mint), and is counted once per session.
    const std::uint64_t expired_before = m.sessions_expired.value();
    auto idle = reg.mint("dave", "cid");
    REQUIRE(idle.has_value());
    clk.advance(o.idle_ttl);
    CHECK(reg.collect_garbage() == 1);
    CHECK(m.sessions_expired.value() == expired_before + 1);
    CHECK(reg.validate_and_touch((*idle)->id(), "dave") == nullptr);
    CHECK(m.sessions_active.value() == 0);
  }

  TEST_CASE("sessions.md/shutdown: begin_shutdown racing mints: once it returns, no mint succeeds") {
    manual_clock clk;
    session_registry reg{session_registry_options{}, clock_ref<manual_clock>{clk}};
    std::atomic<bool> flagged{false};
    std::atomic<bool> ok{true};
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < 3; ++t) {
        workers.emplace_back([&, t] {
          const std::string p = "p" + std::to_string(t);
          std::vector<std::shared_ptr<session>> held;
          for (int i = 0; i < 300; ++i) {
            const bool after = flagged.load();
            auto r = reg.mint(p);
            if (after && r.has_value()) ok = false;
            if (r.has_value()) {
              held.push_back(*r);
              if (held.size() == default_max_sessions_per_principal) {
                (void)reg.terminate(held.front()->id(), p);
                held.erase(held.begin());
              }
            } else if (r.error() != session_reject::shutdown) {
              ok = false;
            }
          }
        });
      }
      std::this_thread::yield();
      reg.begin_shutdown();
      flagged = true;
    }
    CHECK(ok.load());
    CHECK(reg.shutting_down());
    CHECK_FALSE(reg.mint("late").has_value());
  }
}

TEST_SUITE("concurrency") {
  TEST_CASE("sessions.md/the-session-registry: eviction at the per-principal cap racing use of the evicted session never evicts a held one") {
    // Users validate-and-hold random sessions of one principal while minters push it over its cap:
    // a session a user holds is never evicted under it (its id stays valid while held), an
    // evicted id is unknown from then on, and the principal never holds more than the cap.
    constexpr std::size_t per_principal_cap = 4;
    constexpr int users = 3;
    constexpr int iterations = 400;
    manual_clock clk;
    metrics_registry metrics;
    const session_metrics m = bind_session_metrics(metrics);
    session_registry_options o;
    o.max_sessions_per_principal = per_principal_cap;
    session_registry reg{o, clock_ref<manual_clock>{clk}, m};

    std::mutex ids_mu;
    std::vector<std::string> ids;  // every id ever minted (guarded by ids_mu)
    for (std::size_t i = 0; i < per_principal_cap; ++i) {
      auto r = reg.mint("alice");
      REQUIRE(r.has_value());
      ids.push_back((*r)->id());
    }
    std::atomic<bool> held_ok{true};
    std::atomic<bool> cap_ok{true};
    std::atomic<std::uint64_t> held_uses{0};
    std::atomic<std::uint64_t> minted{0};
    {
      std::vector<std::jthread> workers;
      for (int u = 0; u < users; ++u) {
        workers.emplace_back([&, u] {
          for (int i = 0; i < iterations; ++i) {
            std::string id;
            {
              const std::lock_guard lock{ids_mu};
              id = ids[(static_cast<std::size_t>(i) * 7U + static_cast<std::size_t>(u)) % ids.size()];
            }
            session_hold hold;
            const auto s = reg.validate_and_touch(id, "alice", hold);
            if (!s) continue;  // evicted already: unknown
            ++held_uses;
            std::this_thread::yield();
            // held: still there, whatever the minters did meanwhile
            if (!reg.exists(id, "alice")) held_ok = false;
          }
        });
      }
      workers.emplace_back([&] {
        for (int i = 0; i < iterations; ++i) {
          auto r = reg.mint("alice");
          if (r) {
            ++minted;
            const std::lock_guard lock{ids_mu};
            ids.push_back((*r)->id());
          }
          if (reg.count("alice") > per_principal_cap) cap_ok = false;
        }
      });
    }
    CHECK(held_ok.load());
    CHECK(cap_ok.load());
    CHECK(reg.count("alice") <= per_principal_cap);
    CHECK(held_uses.load() > 0);
    CHECK(minted.load() > 0);
    // three users hold at most three of the four sessions: every mint found an idle one to evict
    CHECK(reg.count("alice") == per_principal_cap);
    CHECK(m.sessions_evicted.value() == minted.load());
  }
}
