// SPDX-License-Identifier: Apache-2.0
// Approvals (docs/approvals.md#the-flow): mint, recall-pending and consume per second for
// memory_approval_store and sqlite_approval_store, at the store and through
// approval_service::gate, beside references measured in the same run: a bare SQLite write
// transaction inserting a row of the same size with the same pragmas, a bare SQLite point
// select, and a std::map insert (and find + copy) of the same ticket under a std::mutex.
//
// Backends (the second component of each benchmark name):
// - memory:     memory_approval_store (default options: 10,000 finished tickets of history);
// - sqlite_tmp: sqlite_approval_store on a fresh file in a fresh mkdtemp directory under /tmp
//               (WAL, synchronous=FULL, as the store opens it); the label names the file system;
// - sqlite_shm: the same under /dev/shm (tmpfs: fsync costs nothing), registered only when
//               /dev/shm is writable. The difference between the two is the cost of durability.
//
// Steady state. Every write benchmark runs in batches (State::KeepRunningBatch) of 64 operations
// (16 on sqlite_tmp, where each write costs an fsync). Between batches, with the timer paused,
// the previous batch is retired and the next one prepared, so that the sets the store scans stay
// bounded however long the benchmark runs:
// - mint: each operation mints a fresh scope (a distinct file path) for one of 16 submitters with
//   the caps raised to 2^30, so every mint creates; the previous batch is rejected between
//   batches, so the pending set holds 0 to 63 tickets (0 to 15 on sqlite_tmp). The "pending:1000"
//   variant first seeds 1000 pending tickets from 40 other submitters (25 each: the default
//   per-submitter and global caps, docs/approvals.md#what-the-machine-checks-in-order), which stay pending throughout;
// - consume: between batches, the next batch is minted and approved; each operation consumes a
//   different approved ticket;
// - review: between batches, the previous batch (now approved) is consumed and the next batch
//   minted; each operation approves a different pending ticket;
// - the gate benchmarks do the same through approval_service (reject, approve, mint).
// Finished tickets stay: the memory store forgets the oldest beyond its history cap, the SQLite
// store keeps every row (by design; its hot-path indexes are partial and hold only live tickets),
// so its table grows by one row per created ticket. Every benchmark run starts on a fresh store.
//
// Every operation's result is checked (a mint that did not create, a consume that did not win,
// a gate that did not answer the expected verdict...) and fails the benchmark with
// SkipWithError, so a benchmark cannot time an operation that did nothing. Rates use wall time
// (UseRealTime): an fsync is waited for, not computed, so CPU time would hide it.
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

// ---- counting allocator (allocations()) ---------------------------------------------------------
#include "approval_ops.hpp"
#include "counting_new.hpp"

namespace {

using namespace approval_bench;  // the shared ticket fields and checked store operations
namespace json = mcpcore::json;
using mcpcore::approval_ticket;

// ---- inputs -------------------------------------------------------------------------------------

constexpr std::string_view tool_name = "delete_file";
/// Submitters the benchmarks' tickets rotate over.
constexpr std::size_t submitters = 16;
/// The "pending:1000" baseline: 40 bystanders with 25 pending tickets each.
constexpr std::size_t bystanders = 40;
constexpr std::size_t baseline_pending = 1000;

const std::string& submitter_name(std::size_t i) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (std::size_t k = 0; k < submitters; ++k) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "user-%02zu", k);
      v.emplace_back(buf);
    }
    return v;
  }();
  return names[i % submitters];
}

/// A 32-hex-digit ticket id from a tag and a counter (ids must be unique within a store; each
/// benchmark run has a fresh store).
std::string hex_id(std::uint64_t tag, std::uint64_t n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, tag, n);
  return buf;
}

std::string file_path(std::uint64_t n) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/srv/data/file-%08" PRIu64 ".txt", n);
  return buf;
}

/// The arguments of the n-th call: 52 bytes, e.g.
/// {"path":"/srv/data/file-00000042.txt","mode":"delete"}.
std::string arguments_text(std::uint64_t n) {
  return R"({"path":")" + file_path(n) + R"(","mode":"delete"})";
}
/// The same arguments recalling ticket `id`.
std::string recall_text(std::uint64_t n, std::string_view id) {
  return R"({"path":")" + file_path(n) + R"(","mode":"delete","approval_id":")" + std::string{id} +
         R"("})";
}
/// canonical_arguments(arguments_text(n)): what the gate stores as the ticket's scope (50 bytes).
std::string scope_text(std::uint64_t n) {
  return R"({"mode":"delete","path":")" + file_path(n) + R"("})";
}

struct ticket_spec {
  std::string id;
  std::string scope;
  std::size_t submitter = 0;
};

/// Fresh tickets: distinct ids and scopes, submitters in rotation.
class spec_source {
 public:
  explicit spec_source(std::uint64_t tag) noexcept : tag_(tag) {}
  ticket_spec next() {
    const std::uint64_t n = n_++;
    return {hex_id(tag_, n), scope_text(n), static_cast<std::size_t>(n % submitters)};
  }

 private:
  std::uint64_t tag_;
  std::uint64_t n_ = 0;
};

// The shared checked operations (approval_ops.hpp) for a ticket of this file.
template <class Store>
bool mint_created(Store& s, const ticket_spec& t, approval_time now, std::string& why) {
  return approval_bench::mint_created(s, t.id, t.scope, submitter_name(t.submitter), now, why);
}

template <class Store>
bool consumed(Store& s, const ticket_spec& t, approval_time now, std::string& why) {
  return approval_bench::consumed(s, t.id, submitter_name(t.submitter), now, why);
}

// ---- backends -----------------------------------------------------------------------------------

enum class backend : std::uint8_t { memory, sqlite_tmp, sqlite_shm };

std::string_view name_of(backend b) {
  switch (b) {
    case backend::memory:
      return "memory";
    case backend::sqlite_tmp:
      return "sqlite_tmp";
    case backend::sqlite_shm:
      return "sqlite_shm";
  }
  return "?";
}

const char* parent_dir(backend b) { return b == backend::sqlite_shm ? "/dev/shm" : "/tmp"; }

/// Operations per batch (see the file comment).
std::size_t batch_of(backend b) { return b == backend::sqlite_tmp ? 16 : 64; }

/// "/tmp (ext4)": the directory and its file system, for the benchmark's label.
std::string fs_label(const char* dir) {
  struct statfs st {};
  if (::statfs(dir, &st) != 0) return std::string{dir} + " (file system unknown)";
  const auto magic = static_cast<std::uint64_t>(st.f_type);
  std::string fs;
  switch (magic) {
    case 0x01021994:
      fs = "tmpfs";
      break;
    case 0xEF53:
      fs = "ext2/3/4";
      break;
    case 0x58465342:
      fs = "xfs";
      break;
    case 0x9123683E:
      fs = "btrfs";
      break;
    case 0x794C7630:
      fs = "overlayfs";
      break;
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "fs magic 0x%" PRIx64, magic);
      fs = buf;
    }
  }
  return std::string{dir} + " (" + fs + ")";
}

class raw_db {
 public:
  raw_db() = default;
  raw_db(const raw_db&) = delete;
  raw_db& operator=(const raw_db&) = delete;
  ~raw_db() {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }
  bool open(const std::string& path, std::string& why) {
    const int rc =
        sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      why = std::string{"sqlite3_open_v2: "} + sqlite3_errstr(rc);
      return false;
    }
    sqlite3_busy_timeout(db_, 5000);
    return true;
  }
  bool exec(const char* sql, std::string& why) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      why = std::string{"sqlite3_exec: "} + (msg != nullptr ? msg : "?") + " in: " + sql;
      sqlite3_free(msg);
      return false;
    }
    return true;
  }
  /// A statement finalized with the connection; nullptr (and `why`) on failure.
  sqlite3_stmt* prepare(const char* sql, std::string& why) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
      why = std::string{"prepare: "} + sqlite3_errmsg(db_) + " in: " + sql;
      return nullptr;
    }
    stmts_.push_back(s);
    return s;
  }
  /// The text of the first column of the first row of `sql`.
  std::string query_text(const char* sql, std::string& why) {
    sqlite3_stmt* s = prepare(sql, why);
    if (s == nullptr) return {};
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      const auto* p = sqlite3_column_text(s, 0);
      if (p != nullptr) out = reinterpret_cast<const char*>(p);
    }
    sqlite3_reset(s);
    return out;
  }
  [[nodiscard]] sqlite3* get() const noexcept { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

bool bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  return sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC) == SQLITE_OK;
}

/// Seeds `n` pending tickets from the bystanders (25 each) into the store: through the API for the
/// memory store, in one transaction of a side connection for SQLite (the documented schema; one
/// fsync instead of 1000). Then checks, through the store, that exactly `n` tickets are pending.
template <class Store>
bool seed_pending(Store& store, const std::string& path, std::size_t n, approval_time now,
                  std::string& why) {
  const auto bystander = [](std::size_t i) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "bystander-%02zu", i % bystanders);
    return std::string{buf};
  };
  if constexpr (std::is_same_v<Store, mcpcore::memory_approval_store>) {
    (void)path;
    for (std::size_t i = 0; i < n; ++i) {
      const ticket_spec t{hex_id(0xb, i), scope_text(i), 0};
      const auto r = store.mint(mint_request(t.id, t.scope, bystander(i), now));
      if (!r || r->status != mcpcore::approval_mint_status::created) {
        why = "seeding: a mint did not create";
        return false;
      }
    }
  } else {
    raw_db side;
    if (!side.open(path, why) || !side.exec("BEGIN IMMEDIATE", why)) return false;
    sqlite3_stmt* ins = side.prepare(
        "INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, "
        "submitted_at, scope)"
        " VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6)",
        why);
    if (ins == nullptr) return false;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string id = hex_id(0xb, i);
      const std::string who = bystander(i);
      const std::string scope = scope_text(i);
      const bool bound = bind_text(ins, 1, id) && bind_text(ins, 2, definition_id) &&
                         bind_text(ins, 3, origin) && bind_text(ins, 4, who) &&
                         sqlite3_bind_int64(ins, 5, now.time_since_epoch().count()) == SQLITE_OK &&
                         bind_text(ins, 6, scope);
      const int rc = bound ? sqlite3_step(ins) : SQLITE_ERROR;
      sqlite3_reset(ins);
      if (rc != SQLITE_DONE) {
        why = std::string{"seeding: insert failed: "} + sqlite3_errmsg(side.get());
        return false;
      }
    }
    if (!side.exec("COMMIT", why)) return false;
  }
  const auto listed = store.pending(n + 1);
  if (!listed || listed->size() != n) {
    why = "seeding: the store does not list the seeded tickets as pending";
    return false;
  }
  return true;
}

/// Runs `body(store, path)` on a fresh store of backend `b` (`path` is "" for memory). SQLite:
/// a fresh file in a fresh directory, removed afterwards; the file is checked to be in WAL mode.
template <class Body>
void with_store(benchmark::State& state, backend b, Body&& body) {
  if (b == backend::memory) {
    mcpcore::memory_approval_store store;
    body(store, std::string{});
    return;
  }
  approval_bench::temp_dir dir{parent_dir(b), "mcpcore-bench-approval"};
  if (!dir.ok()) {
    state.SkipWithError((std::string{"mkdtemp under "} + parent_dir(b) + " failed").c_str());
    return;
  }
  state.SetLabel(fs_label(parent_dir(b)));
  const std::string path = dir.path() + "/approvals.db";
  auto opened = mcpcore::sqlite_approval_store::open(path);
  if (!opened) {
    state.SkipWithError(("sqlite_approval_store::open: " + opened.error().message()).c_str());
    return;
  }
  {
    std::string why;
    raw_db side;
    if (!side.open(path, why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    if (const auto mode = side.query_text("PRAGMA journal_mode", why); mode != "wal") {
      state.SkipWithError(("the store's journal mode is '" + mode + "', not wal " + why).c_str());
      return;
    }
  }
  body(*opened, path);
}

// ---- the measurement loop -----------------------------------------------------------------------

/// Rates (items_per_second: operations per wall-clock second, see UseRealTime at registration)
/// and operator-new calls per operation (SQLite's own mallocs are not counted).
void finish(benchmark::State& state, std::uint64_t allocs) {
  const auto n = state.iterations();
  state.SetItemsProcessed(n);
  if (n > 0) state.counters["allocs_per_op"] = static_cast<double>(allocs) / static_cast<double>(n);
}

/// Runs `op(i, why)` for i in [0, batch) per batch of iterations; `prepare(why)` runs before each
/// batch with the timer paused. Either returning false fails the benchmark with `why`.
template <class Prepare, class Op>
void batched(benchmark::State& state, std::size_t batch, Prepare&& prepare, Op&& op) {
  std::uint64_t allocs = 0;
  std::string why;
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(batch))) {
    state.PauseTiming();
    if (!prepare(why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    state.ResumeTiming();
    const std::uint64_t before = allocations();
    for (std::size_t i = 0; i < batch; ++i) {
      if (!op(i, why)) {
        state.SkipWithError(why.c_str());
        return;
      }
    }
    allocs += allocations() - before;
  }
  finish(state, allocs);
}

// ---- store level --------------------------------------------------------------------------------

// mint that creates: a fresh scope per operation; the previous batch is rejected between batches.
// With `baseline` > 0, that many bystander tickets stay pending throughout.
void BM_store_mint(benchmark::State& state, backend b, std::size_t baseline) {
  with_store(state, b, [&](auto& store, const std::string& path) {
    const approval_time now = now_ms();
    std::string why;
    if (baseline > 0 && !seed_pending(store, path, baseline, now, why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    spec_source source{1};
    std::vector<ticket_spec> specs(batch_of(b));
    bool previous = false;
    batched(
        state, specs.size(),
        [&](std::string& err) {
          if (previous) {
            for (const auto& t : specs) {
              if (!reviewed(store, t.id, approval_status::rejected, now, err)) return false;
            }
          }
          for (auto& t : specs) t = source.next();
          previous = true;
          return true;
        },
        [&](std::size_t i, std::string& err) { return mint_created(store, specs[i], now, err); });
  });
}

// mint that finds the caller's identical pending ticket (step 2, dedup).
void BM_store_mint_dedup(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    const approval_time now = now_ms();
    std::string why;
    spec_source source{2};
    const ticket_spec first = source.next();
    if (!mint_created(store, first, now, why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    // Same key, another id (used only if the mint created a ticket, which fails the benchmark).
    const ticket_spec again{hex_id(2, 1U << 20U), first.scope, first.submitter};
    const auto request = mint_request(again.id, again.scope, submitter_name(again.submitter), now);
    const std::uint64_t before = allocations();
    for (auto _ : state) {
      const auto r = store.mint(request);
      if (!r || r->status != mcpcore::approval_mint_status::deduped || r->id != first.id) {
        state.SkipWithError("the mint was not deduplicated onto the pending ticket");
        break;
      }
    }
    finish(state, allocations() - before);
  });
}

// get of a pending ticket: the read with which the gate recalls a ticket.
void BM_store_get(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    const approval_time now = now_ms();
    std::string why;
    spec_source source{3};
    const ticket_spec first = source.next();
    if (!mint_created(store, first, now, why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    const std::uint64_t before = allocations();
    for (auto _ : state) {
      const auto r = store.get(first.id);
      if (!r || !*r || (*r)->status != approval_status::pending || (*r)->id != first.id) {
        state.SkipWithError("get did not return the pending ticket");
        break;
      }
    }
    finish(state, allocations() - before);
  });
}

// consume of an approved ticket (the compare-and-set); the batch is minted and approved untimed.
void BM_store_consume(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    const approval_time now = now_ms();
    spec_source source{4};
    std::vector<ticket_spec> specs(batch_of(b));
    batched(
        state, specs.size(),
        [&](std::string& err) {
          for (auto& t : specs) {
            t = source.next();
            if (!mint_created(store, t, now, err) ||
                !reviewed(store, t.id, approval_status::approved, now, err)) {
              return false;
            }
          }
          return true;
        },
        [&](std::size_t i, std::string& err) { return consumed(store, specs[i], now, err); });
  });
}

// review (approve) of a pending ticket; between batches the previous batch is consumed and the
// next one minted.
void BM_store_review(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    const approval_time now = now_ms();
    spec_source source{5};
    std::vector<ticket_spec> specs(batch_of(b));
    bool previous = false;
    batched(
        state, specs.size(),
        [&](std::string& err) {
          for (auto& t : specs) {
            if (previous && !consumed(store, t, now, err)) return false;
            t = source.next();
            if (!mint_created(store, t, now, err)) return false;
          }
          previous = true;
          return true;
        },
        [&](std::size_t i, std::string& err) {
          return reviewed(store, specs[i].id, approval_status::approved, now, err);
        });
  });
}

// ---- service level: approval_service::gate ------------------------------------------------------

mcpcore::approval_options service_options() {
  mcpcore::approval_options o;
  o.max_pending_per_submitter = high_cap;
  o.max_pending_global = high_cap;
  return o;
}

const std::vector<mcpcore::principal>& callers() {
  static const std::vector<mcpcore::principal> v = [] {
    std::vector<mcpcore::principal> out(submitters);
    for (std::size_t i = 0; i < submitters; ++i) out[i].id = submitter_name(i);
    return out;
  }();
  return v;
}

const mcpcore::principal& approver() {
  static const mcpcore::principal p = [] {
    mcpcore::principal a;
    a.id = std::string{reviewer_id};
    a.kind = mcpcore::principal_kind::human_interactive;
    a.assured = true;
    return a;
  }();
  return p;
}

std::string gate_failure(std::string_view what, const mcpcore::approval_gate_outcome& o) {
  return std::string{what} + ": verdict " + std::string{to_string(o.verdict)} + " " + o.detail;
}

// First call (no approval_id): the gate canonicalises the arguments, draws an id from getrandom
// and mints. Fresh arguments per operation; the previous batch is rejected between batches.
void BM_gate_mint(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    mcpcore::approval_service service{store, service_options()};
    const auto& who = callers();
    const std::size_t batch = batch_of(b);
    std::vector<json::document> docs(batch);
    std::vector<json::value> args(batch);
    std::vector<std::size_t> caller(batch);
    std::vector<std::string> minted(batch);
    std::uint64_t n = 0;
    bool previous = false;
    batched(
        state, batch,
        [&](std::string& err) {
          for (std::size_t i = 0; i < batch; ++i) {
            if (previous && !service.reject(minted[i], approver()).ok()) {
              err = "reject of a minted ticket failed";
              return false;
            }
            const auto v = docs[i].parse(arguments_text(n));
            if (!v) {
              err = "the arguments do not parse";
              return false;
            }
            args[i] = *v;
            caller[i] = static_cast<std::size_t>(n % submitters);
            ++n;
          }
          previous = true;
          return true;
        },
        [&](std::size_t i, std::string& err) {
          auto o = service.gate(tool_name, who[caller[i]], args[i]);
          if (o.verdict != mcpcore::approval_verdict::minted) {
            err = gate_failure("the first call did not mint", o);
            return false;
          }
          minted[i] = std::move(o.approval_id);
          return true;
        });
  });
}

// Recall of a pending ticket (approval_id set): canonicalise, get, compare -> verdict pending.
void BM_gate_recall_pending(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    mcpcore::approval_service service{store, service_options()};
    const mcpcore::principal& caller = callers()[0];
    json::document first;
    const auto plain = first.parse(arguments_text(0));
    if (!plain) {
      state.SkipWithError("the arguments do not parse");
      return;
    }
    const auto minted = service.gate(tool_name, caller, *plain);
    if (minted.verdict != mcpcore::approval_verdict::minted) {
      state.SkipWithError(gate_failure("the first call did not mint", minted).c_str());
      return;
    }
    json::document recall;
    const auto args = recall.parse(recall_text(0, minted.approval_id));
    if (!args) {
      state.SkipWithError("the recall arguments do not parse");
      return;
    }
    const std::uint64_t before = allocations();
    for (auto _ : state) {
      const auto o = service.gate(tool_name, caller, *args);
      if (o.verdict != mcpcore::approval_verdict::pending || o.approval_id != minted.approval_id) {
        state.SkipWithError(gate_failure("the recall did not answer pending", o).c_str());
        break;
      }
    }
    finish(state, allocations() - before);
  });
}

// Recall of an approved ticket: canonicalise, get, checks, consume -> verdict proceed. Between
// batches each ticket is minted through the gate and approved through the service.
void BM_gate_consume(benchmark::State& state, backend b) {
  with_store(state, b, [&](auto& store, const std::string&) {
    mcpcore::approval_service service{store, service_options()};
    const auto& who = callers();
    const std::size_t batch = batch_of(b);
    json::document scratch;
    std::vector<json::document> docs(batch);
    std::vector<json::value> args(batch);
    std::vector<std::size_t> caller(batch);
    std::uint64_t n = 0;
    batched(
        state, batch,
        [&](std::string& err) {
          for (std::size_t i = 0; i < batch; ++i) {
            caller[i] = static_cast<std::size_t>(n % submitters);
            const auto plain = scratch.parse(arguments_text(n));
            if (!plain) {
              err = "the arguments do not parse";
              return false;
            }
            const auto o = service.gate(tool_name, who[caller[i]], *plain);
            if (o.verdict != mcpcore::approval_verdict::minted) {
              err = gate_failure("the first call did not mint", o);
              return false;
            }
            if (!service.approve(o.approval_id, approver()).ok()) {
              err = "approve failed";
              return false;
            }
            const auto v = docs[i].parse(recall_text(n, o.approval_id));
            if (!v) {
              err = "the recall arguments do not parse";
              return false;
            }
            args[i] = *v;
            ++n;
          }
          return true;
        },
        [&](std::size_t i, std::string& err) {
          const auto o = service.gate(tool_name, who[caller[i]], args[i]);
          if (o.verdict != mcpcore::approval_verdict::proceed) {
            err = gate_failure("the recall of an approved ticket did not proceed", o);
            return false;
          }
          return true;
        });
  });
}

// ---- references ---------------------------------------------------------------------------------

// The memory store's floor: a std::map insert of the same ticket (the same strings copied) under
// a std::mutex. The map is cleared between batches (at most 64 entries).
void BM_ref_map_insert(benchmark::State& state) {
  std::mutex mutex;
  std::map<std::string, approval_ticket, std::less<>> tickets;
  const approval_time now = now_ms();
  spec_source source{6};
  std::vector<ticket_spec> specs(batch_of(backend::memory));
  batched(
      state, specs.size(),
      [&](std::string&) {
        tickets.clear();
        for (auto& t : specs) t = source.next();
        return true;
      },
      [&](std::size_t i, std::string& err) {
        const ticket_spec& s = specs[i];
        approval_ticket t;
        t.id = s.id;
        t.definition_id = std::string{definition_id};
        t.status = approval_status::pending;
        t.origin = std::string{origin};
        t.submitted_by = submitter_name(s.submitter);
        t.submitted_at = now;
        t.scope = s.scope;
        const std::lock_guard lock{mutex};
        if (!tickets.emplace(s.id, std::move(t)).second) {
          err = "the reference insert did not insert";
          return false;
        }
        return true;
      });
}

// The memory store's read floor: find + copy of the same ticket under a std::mutex.
void BM_ref_map_find_copy(benchmark::State& state) {
  std::mutex mutex;
  std::map<std::string, approval_ticket, std::less<>> tickets;
  spec_source source{7};
  const ticket_spec s = source.next();
  approval_ticket t;
  t.id = s.id;
  t.definition_id = std::string{definition_id};
  t.origin = std::string{origin};
  t.submitted_by = submitter_name(s.submitter);
  t.submitted_at = now_ms();
  t.scope = s.scope;
  tickets.emplace(s.id, t);
  const std::string_view id = s.id;
  const std::uint64_t before = allocations();
  for (auto _ : state) {
    std::optional<approval_ticket> copy;
    {
      const std::lock_guard lock{mutex};
      const auto it = tickets.find(id);
      if (it != tickets.end()) copy = it->second;
    }
    if (!copy || copy->id != id) {
      state.SkipWithError("the reference find did not find the ticket");
      break;
    }
    benchmark::DoNotOptimize(copy);
  }
  finish(state, allocations() - before);
}

/// A bare database on a fresh file in a fresh directory with the store's pragmas (WAL,
/// synchronous=FULL) and a table of the store's columns, with its primary key but none of its
/// partial indexes. `body(db)` runs with it.
template <class Body>
void with_ref_db(benchmark::State& state, backend b, Body&& body) {
  approval_bench::temp_dir dir{parent_dir(b), "mcpcore-bench-approval"};
  if (!dir.ok()) {
    state.SkipWithError((std::string{"mkdtemp under "} + parent_dir(b) + " failed").c_str());
    return;
  }
  state.SetLabel(fs_label(parent_dir(b)));
  std::string why;
  raw_db db;
  if (!db.open(dir.path() + "/reference.db", why) ||
      db.query_text("PRAGMA journal_mode = WAL", why) != "wal" ||
      !db.exec("PRAGMA synchronous = FULL", why) ||
      !db.exec(
          "CREATE TABLE ref_tickets ("
          " id TEXT NOT NULL PRIMARY KEY, definition_id TEXT NOT NULL,"
          " status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),"
          " origin TEXT NOT NULL, submitted_by TEXT NOT NULL, submitted_at INTEGER NOT NULL,"
          " reviewed_by TEXT NOT NULL DEFAULT '', reviewed_at INTEGER,"
          " review_comment TEXT NOT NULL DEFAULT '', scope TEXT NOT NULL,"
          " consumed_at INTEGER, consumed_by TEXT NOT NULL DEFAULT '', expired_at INTEGER)",
          why)) {
    state.SkipWithError(("reference database: " + why).c_str());
    return;
  }
  body(db);
}

constexpr const char* ref_insert_sql =
    "INSERT INTO ref_tickets (id, definition_id, status, origin, submitted_by, submitted_at, scope)"
    " VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6)";

bool ref_insert(sqlite3_stmt* ins, const ticket_spec& t, approval_time now) {
  const bool bound = bind_text(ins, 1, t.id) && bind_text(ins, 2, definition_id) &&
                     bind_text(ins, 3, origin) && bind_text(ins, 4, submitter_name(t.submitter)) &&
                     sqlite3_bind_int64(ins, 5, now.time_since_epoch().count()) == SQLITE_OK &&
                     bind_text(ins, 6, t.scope);
  const int rc = bound ? sqlite3_step(ins) : SQLITE_ERROR;
  sqlite3_reset(ins);
  return rc == SQLITE_DONE;
}

// The SQLite floor of a write: BEGIN IMMEDIATE; INSERT of the row a mint inserts; COMMIT, all
// three prepared once (as the store's statements are).
void BM_ref_sqlite_insert_prepared(benchmark::State& state, backend b) {
  with_ref_db(state, b, [&](raw_db& db) {
    std::string why;
    sqlite3_stmt* begin = db.prepare("BEGIN IMMEDIATE", why);
    sqlite3_stmt* ins = db.prepare(ref_insert_sql, why);
    sqlite3_stmt* commit = db.prepare("COMMIT", why);
    if (begin == nullptr || ins == nullptr || commit == nullptr) {
      state.SkipWithError(why.c_str());
      return;
    }
    const approval_time now = now_ms();
    spec_source source{8};
    std::vector<ticket_spec> specs(batch_of(b));
    batched(
        state, specs.size(),
        [&](std::string&) {
          for (auto& t : specs) t = source.next();
          return true;
        },
        [&](std::size_t i, std::string& err) {
          int rc = sqlite3_step(begin);
          sqlite3_reset(begin);
          if (rc != SQLITE_DONE || !ref_insert(ins, specs[i], now) ||
              sqlite3_changes(db.get()) != 1) {
            err = std::string{"reference insert failed: "} + sqlite3_errmsg(db.get());
            return false;
          }
          rc = sqlite3_step(commit);
          sqlite3_reset(commit);
          if (rc != SQLITE_DONE) {
            err = std::string{"reference commit failed: "} + sqlite3_errmsg(db.get());
            return false;
          }
          return true;
        });
  });
}

// The same write as one sqlite3_exec of "BEGIN IMMEDIATE; INSERT ... VALUES (...); COMMIT" (the SQL
// text, built untimed, is compiled on every call).
void BM_ref_sqlite_insert_exec(benchmark::State& state, backend b) {
  with_ref_db(state, b, [&](raw_db& db) {
    const approval_time now = now_ms();
    spec_source source{9};
    std::vector<std::string> sql(batch_of(b));
    batched(
        state, sql.size(),
        [&](std::string&) {
          for (auto& s : sql) {
            const ticket_spec t = source.next();
            s = "BEGIN IMMEDIATE; INSERT INTO ref_tickets (id, definition_id, status, origin, "
                "submitted_by, "
                "submitted_at, scope) VALUES ('" +
                t.id + "', '" + std::string{definition_id} + "', 'pending', '" +
                std::string{origin} + "', '" + submitter_name(t.submitter) + "', " +
                std::to_string(now.time_since_epoch().count()) + ", '" + t.scope + "'); COMMIT;";
          }
          return true;
        },
        [&](std::size_t i, std::string& err) {
          if (sqlite3_exec(db.get(), sql[i].c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
            err = std::string{"reference exec failed: "} + sqlite3_errmsg(db.get());
            return false;
          }
          return true;
        });
  });
}

// The SQLite floor of a read: a prepared point select by primary key of the 13 columns, read in
// place (no copies).
void BM_ref_sqlite_select(benchmark::State& state, backend b) {
  with_ref_db(state, b, [&](raw_db& db) {
    std::string why;
    sqlite3_stmt* ins = db.prepare(ref_insert_sql, why);
    sqlite3_stmt* sel = db.prepare(
        "SELECT id, definition_id, status, origin, submitted_by, submitted_at, reviewed_by, "
        "reviewed_at,"
        " review_comment, scope, consumed_at, consumed_by, expired_at FROM ref_tickets WHERE id = "
        "?1",
        why);
    if (ins == nullptr || sel == nullptr) {
      state.SkipWithError(why.c_str());
      return;
    }
    spec_source source{10};
    const ticket_spec t = source.next();
    if (!ref_insert(ins, t, now_ms())) {
      state.SkipWithError("reference insert failed");
      return;
    }
    const std::uint64_t before = allocations();
    for (auto _ : state) {
      const bool found = bind_text(sel, 1, t.id) && sqlite3_step(sel) == SQLITE_ROW;
      std::size_t bytes = 0;
      if (found) {
        for (int c = 0; c < 13; ++c) {
          benchmark::DoNotOptimize(sqlite3_column_text(sel, c));
          bytes += static_cast<std::size_t>(sqlite3_column_bytes(sel, c));
        }
      }
      sqlite3_reset(sel);
      if (!found || bytes == 0) {
        state.SkipWithError("the reference select did not find the row");
        break;
      }
    }
    finish(state, allocations() - before);
  });
}

// ---- registration -------------------------------------------------------------------------------

template <class Fn>
void add(std::string name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), std::move(fn))->UseRealTime();
}

bool register_all() {
  std::vector<backend> stores{backend::memory, backend::sqlite_tmp};
  std::vector<backend> sqlite{backend::sqlite_tmp};
  if (::access("/dev/shm", W_OK | X_OK) == 0) {
    stores.push_back(backend::sqlite_shm);
    sqlite.push_back(backend::sqlite_shm);
  }
  const auto named = [](std::string_view bm, backend b) {
    return std::string{bm} + "/" + std::string{name_of(b)};
  };
  for (const backend b : stores) {
    add(named("BM_store_mint", b) + "/pending:0",
        [b](benchmark::State& s) { BM_store_mint(s, b, 0); });
    add(named("BM_store_mint", b) + "/pending:1000",
        [b](benchmark::State& s) { BM_store_mint(s, b, baseline_pending); });
    add(named("BM_store_mint_dedup", b), [b](benchmark::State& s) { BM_store_mint_dedup(s, b); });
    add(named("BM_store_get", b), [b](benchmark::State& s) { BM_store_get(s, b); });
    add(named("BM_store_consume", b), [b](benchmark::State& s) { BM_store_consume(s, b); });
    add(named("BM_store_review", b), [b](benchmark::State& s) { BM_store_review(s, b); });
  }
  for (const backend b : stores) {
    add(named("BM_gate_mint", b), [b](benchmark::State& s) { BM_gate_mint(s, b); });
    add(named("BM_gate_recall_pending", b),
        [b](benchmark::State& s) { BM_gate_recall_pending(s, b); });
    add(named("BM_gate_consume", b), [b](benchmark::State& s) { BM_gate_consume(s, b); });
  }
  add("BM_ref_map_insert/memory", [](benchmark::State& s) { BM_ref_map_insert(s); });
  add("BM_ref_map_find_copy/memory", [](benchmark::State& s) { BM_ref_map_find_copy(s); });
  for (const backend b : sqlite) {
    add(named("BM_ref_sqlite_insert_prepared", b),
        [b](benchmark::State& s) { BM_ref_sqlite_insert_prepared(s, b); });
    add(named("BM_ref_sqlite_insert_exec", b),
        [b](benchmark::State& s) { BM_ref_sqlite_insert_exec(s, b); });
    add(named("BM_ref_sqlite_select", b), [b](benchmark::State& s) { BM_ref_sqlite_select(s, b); });
  }
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
