// SPDX-License-Identifier: Apache-2.0
// The session layer (docs/sessions.md#get-attach-replay-resume, #pinned-finals, #streamed-post,
// #progress-records): replay-ring publish (with and without a live GET sink), the resume replay of
// a full ring, streamed-POST admission (budget lease + bridge reservation), and the memory held per
// idle session and per parked record, each beside a reference measured in the same run:
// - publish: a std::deque<std::string> under a std::mutex, bounded at the same 500 frames
//   (push_back a copy, pop_front beyond the bound) — the cheapest structure with the same
//   copying and locking, without ids, byte accounting or pins;
// - replay: copying the same frames into a std::vector (what any replay must at least do);
// - admission: an std::unordered_map<std::string, int> increment and decrement under a
//   std::mutex (the shape of the budget's per-principal count).
// Memory figures are counters (bytes per object, from glibc's mallinfo2 in-use total before and
// after creating 1000 objects), not timings.
//
// Every operation's result is checked (a publish that returned id 0, an attach that was refused,
// a reservation that failed) and fails the benchmark with SkipWithError.
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>

#include <benchmark/benchmark.h>

#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

// A progress notification of the size docs/sessions.md#projection-and-finals produces (about 200
// bytes).
const std::string frame_text =
    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-0001",)"
    R"("progress":41,"total":120,"message":"41/120 agents responded","_meta":{"mcpcore/executionId":)"
    R"("3f9a1c2e7b4d4e0f9a1c2e7b4d4e0f9a"}}})";

// ---- publish ------------------------------------------------------------------------------------

void BM_ring_publish_ring_only(benchmark::State& state) {
  mcpcore::session_stream stream;
  for (auto _ : state) {
    if (stream.publish_ring_only(frame_text) == 0) {
      state.SkipWithError("publish_ring_only returned 0");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ring_publish_ring_only);

void BM_ring_publish_live_sink(benchmark::State& state) {
  mcpcore::session_stream stream;
  mcpcore::stream_budget budget;
  auto a = stream.attach_and_replay(0, budget, "bench");
  if (a.status != mcpcore::attach_status::attached) {
    state.SkipWithError("attach refused");
    return;
  }
  mcpcore::stream_sink::batch batch;
  std::size_t n = 0;
  for (auto _ : state) {
    if (stream.publish(frame_text) == 0) {
      state.SkipWithError("publish returned 0");
      break;
    }
    // The consumer drains every 64 frames, as a pump pass would.
    if (++n % 64 == 0) a.sink->take(batch);
  }
  a.sink->take(batch);
  if (a.sink->dropped_total() != 0) state.SkipWithError("the live sink dropped frames");
  stream.detach(*a.sink);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ring_publish_live_sink);

void BM_reference_deque_publish(benchmark::State& state) {
  std::mutex mu;
  std::deque<std::string> ring;
  for (auto _ : state) {
    std::lock_guard lock{mu};
    ring.push_back(frame_text);
    if (ring.size() > mcpcore::default_ring_frames) ring.pop_front();
    benchmark::DoNotOptimize(ring.back().data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_reference_deque_publish);

// ---- resume replay ------------------------------------------------------------------------------

void BM_resume_replay_full_ring(benchmark::State& state) {
  mcpcore::session_stream stream;
  mcpcore::stream_budget budget;
  for (std::size_t i = 0; i < mcpcore::default_ring_frames * 2; ++i) (void)stream.publish_ring_only(frame_text);
  const auto held = stream.stats().frames;
  const auto cursor = stream.stats().oldest_id - 1;  // resume from just before the oldest frame
  for (auto _ : state) {
    auto a = stream.attach_and_replay(cursor, budget, "bench");
    if (a.status != mcpcore::attach_status::attached || a.replayed != held) {
      state.SkipWithError("replay did not queue the whole ring");
      break;
    }
    stream.detach(*a.sink);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(held));
  state.counters["frames"] = static_cast<double>(held);
}
BENCHMARK(BM_resume_replay_full_ring);

// As many frames as the default ring holds of `frame_text`: the 64 KiB byte bound binds before
// the 500-frame one at this frame size.
void BM_reference_vector_copy(benchmark::State& state) {
  const std::size_t held = std::min(mcpcore::default_ring_frames,
                                    mcpcore::default_ring_bytes / (mcpcore::stream_event_type.size() + frame_text.size()));
  std::deque<std::string> ring(held, frame_text);
  for (auto _ : state) {
    std::vector<std::string> out;
    out.reserve(ring.size());
    for (const auto& f : ring) out.push_back(f);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(ring.size()));
}
BENCHMARK(BM_reference_vector_copy);

// ---- admission ----------------------------------------------------------------------------------

void BM_budget_acquire_release(benchmark::State& state) {
  mcpcore::stream_budget budget;
  for (auto _ : state) {
    auto lease = budget.try_acquire(mcpcore::stream_surface_post, "principal-0001",
                                    mcpcore::default_post_streams_per_principal);
    if (!lease) {
      state.SkipWithError("budget refused");
      break;
    }
    lease->release();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_budget_acquire_release);

void BM_streamed_post_admission(benchmark::State& state) {
  mcpcore::session_registry registry;
  mcpcore::stream_budget budget;
  mcpcore::progress_bridge bridge{registry};
  auto s = registry.mint("principal-0001");
  if (!s) {
    state.SkipWithError("mint refused");
    return;
  }
  const mcpcore::request_id token{std::string{"tok"}};
  std::int64_t n = 0;
  for (auto _ : state) {
    auto lease = budget.try_acquire(mcpcore::stream_surface_post, "principal-0001",
                                    mcpcore::default_post_streams_per_principal);
    auto call = bridge.reserve(*s, mcpcore::request_id{++n}, token, true);
    if (!lease || !call) {
      state.SkipWithError("admission refused");
      break;
    }
    call->abandon();
    lease->release();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_streamed_post_admission);

void BM_reference_map_count(benchmark::State& state) {
  std::mutex mu;
  std::unordered_map<std::string, int> counts;
  const std::string key = "8:mcp_postprincipal-0001";
  for (auto _ : state) {
    {
      std::lock_guard lock{mu};
      ++counts[key];
    }
    {
      std::lock_guard lock{mu};
      if (--counts[key] == 0) counts.erase(key);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_reference_map_count);

// ---- memory -------------------------------------------------------------------------------------

std::size_t heap_in_use() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Bytes per idle session: 1000 sessions minted (8 principals' worth of caps raised), no frames.
void BM_memory_per_idle_session(benchmark::State& state) {
  constexpr std::size_t count = 1000;
  for (auto _ : state) {
    mcpcore::session_registry_options options;
    options.max_sessions = count;
    options.max_sessions_per_principal = count;
    mcpcore::session_registry registry{options};
    std::vector<std::shared_ptr<mcpcore::session>> held;
    held.reserve(count);
    const auto before = heap_in_use();
    for (std::size_t i = 0; i < count; ++i) {
      auto s = registry.mint("principal-0001");
      if (!s) {
        state.SkipWithError("mint refused");
        return;
      }
      held.push_back(*std::move(s));
    }
    const auto after = heap_in_use();
    // The vector of handles was reserved before `before`: it is not counted.
    state.counters["bytes_per_session"] = static_cast<double>(after - before) / count;
  }
}
BENCHMARK(BM_memory_per_idle_session)->Iterations(1);

// Bytes per parked record: a streamed call whose POST closed before its final, then finished:
// its progress frame and pinned final sit in the ring and the record waits for a resume.
void BM_memory_per_parked_record(benchmark::State& state) {
  constexpr std::size_t count = 1000;
  for (auto _ : state) {
    mcpcore::session_registry_options options;
    options.max_sessions = count;
    options.max_sessions_per_principal = count;
    mcpcore::session_registry registry{options};
    mcpcore::progress_bridge_options bo;
    bo.max_records = count;
    bo.parked_pressure_threshold = count;
    mcpcore::progress_bridge bridge{registry, bo};
    std::vector<std::shared_ptr<mcpcore::session>> sessions;
    std::vector<mcpcore::progress_call> calls;
    sessions.reserve(count);
    calls.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      auto s = registry.mint("principal-0001");
      if (!s) {
        state.SkipWithError("mint refused");
        return;
      }
      sessions.push_back(*std::move(s));
    }
    const auto before = heap_in_use();
    for (std::size_t i = 0; i < count; ++i) {
      auto call = bridge.reserve(sessions[i], mcpcore::request_id{std::int64_t{1}},
                                 mcpcore::request_id{std::string{"tok"}}, true);
      if (!call || call->arm(mcpcore::bridge_delivery::streamed) != mcpcore::arm_outcome::streaming) {
        state.SkipWithError("reserve or arm failed");
        return;
      }
      (void)call->progress(1, 2, "1/2");
      call->on_post_closed();
      (void)call->complete(R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}})");
      if (call->state_now() != mcpcore::bridge_record_state::ring_only) {
        state.SkipWithError("record did not park");
        return;
      }
      calls.push_back(*std::move(call));
    }
    const auto after = heap_in_use();
    state.counters["bytes_per_parked_record"] = static_cast<double>(after - before) / count;
  }
}
BENCHMARK(BM_memory_per_parked_record)->Iterations(1);

}  // namespace
