// SPDX-License-Identifier: Apache-2.0
// The store-agnostic conformance suite of the task_store concept (task.hpp;
// docs/concepts/task_store.md#valid-expressions, #semantic-requirements): every numbered step of
// task_create_request and task_transition, the caps, seq, listings, expiry at its exact edge,
// terminal finality, abandon_unfinished, round-trips, and the races of requirement 1 and 5.
// Every store model runs it.
#ifndef MCPCORE_TESTS_SUPPORT_TASK_STORE_SUITE_HPP
#define MCPCORE_TESTS_SUPPORT_TASK_STORE_SUITE_HPP

#include <mcpcore/governance/task.hpp>

#include <doctest/doctest.h>

#include <mcpcore/governance/approval.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mcpcore_test {

namespace task_store_suite_detail {

using mcpcore::task_create_status;
using mcpcore::task_payload;
using mcpcore::task_record;
using mcpcore::task_status;
using mcpcore::task_time;
using mcpcore::task_transition_status;
using std::chrono::milliseconds;

// 2026-01-01T00:00:00.123Z: a millisecond part that a seconds-precision store would lose.
inline constexpr task_time t0{milliseconds{1'767'225'600'123}};
// The reference ttl of a task (an hour) and its poll interval.
inline constexpr milliseconds ttl = std::chrono::hours{1};
inline constexpr milliseconds poll = std::chrono::seconds{5};

// t0 + `ms` milliseconds.
inline task_time at(milliseconds::rep ms) { return t0 + milliseconds{ms}; }

// The value of a store call; a store error fails the test with its message.
template <class T>
T must(mcpcore::result<T> r) {
  if (!r.has_value()) {
    FAIL("task store error: " << r.error().message() << " (" << r.error().code().category().name() << ")");
  }
  return std::move(*r);
}

// A fresh task id from the library's CSPRNG source (task ids have the shape of approval ids).
inline std::string fresh_id() {
  auto id = mcpcore::make_approval_id();
  REQUIRE(id.has_value());
  REQUIRE(mcpcore::is_task_id(*id));
  return std::move(*id);
}

// The printable form of a time (doctest cannot print time points).
inline std::string show(task_time t) { return std::to_string(t.time_since_epoch().count()) + "ms"; }

// A `task_create_request` whose record and caps it owns; the defaults create alice's working
// `long_job` task at t0 with the reference ttl and generous caps.
struct task_spec {
  task_record record = [] {
    task_record r;
    r.id = fresh_id();
    r.owner = "alice";
    r.tool = "long_job";
    r.status = task_status::working;
    r.created_at = t0;
    r.updated_at = t0;
    r.ttl = ttl;
    r.poll_interval = poll;
    return r;
  }();
  std::size_t max_per_owner = 100;
  std::size_t max_total = 1000;
  task_time now = t0;

  [[nodiscard]] mcpcore::task_create_request request() const { return {record, max_per_owner, max_total, now}; }
  // The same task under another owner, created at `when` (created_at, updated_at and now).
  task_spec& by(std::string owner) {
    record.owner = std::move(owner);
    return *this;
  }
  task_spec& when(task_time t) {
    record.created_at = t;
    record.updated_at = t;
    now = t;
    return *this;
  }
  task_spec& lasting(milliseconds t) {
    record.ttl = t;
    return *this;
  }
};

template <class S>
mcpcore::task_create_result create(S& s, const task_spec& t) {
  return must(s.create(t.request()));
}

// Creates `t`, requiring a new task; its seq.
template <class S>
std::uint64_t create_ok(S& s, const task_spec& t) {
  const auto r = create(s, t);
  REQUIRE(to_string(r.status) == "created");
  REQUIRE(r.seq > 0);
  return r.seq;
}

template <class S>
std::optional<task_record> get(S& s, std::string_view id, task_time now) {
  return must(s.get(id, now));
}

// Task `id`, which must be there at `now`.
template <class S>
task_record task(S& s, std::string_view id, task_time now) {
  auto t = get(s, id, now);
  REQUIRE_MESSAGE(t.has_value(), "task " << std::string{id} << " is unknown");
  return std::move(*t);
}

template <class S>
task_transition_status transition(S& s, std::string_view id, task_status to, task_time now,
                                  std::string_view message = {}, task_payload kind = task_payload::none,
                                  std::string_view payload = {}) {
  return must(s.transition(mcpcore::task_transition{id, to, message, kind, payload, now}));
}

template <class S>
std::vector<std::string> list_ids(S& s, std::string_view owner, std::uint64_t after, std::size_t limit,
                                  task_time now = t0) {
  std::vector<std::string> ids;
  for (const auto& t : must(s.list(mcpcore::task_list_request{owner, after, limit, now}))) ids.push_back(t.id);
  return ids;
}

// Field by field (readable failures); `seq` when the wanted one is known (not 0).
inline void check_same(const task_record& got, const task_record& want) {
  INFO("task " << want.id);
  CHECK(got.id == want.id);
  CHECK(got.owner == want.owner);
  CHECK(got.tool == want.tool);
  CHECK(to_string(got.status) == to_string(want.status));
  CHECK(got.status_message == want.status_message);
  CHECK(show(got.created_at) == show(want.created_at));
  CHECK(show(got.updated_at) == show(want.updated_at));
  CHECK(got.ttl.count() == want.ttl.count());
  CHECK(got.poll_interval.count() == want.poll_interval.count());
  CHECK(to_string(got.payload_kind) == to_string(want.payload_kind));
  CHECK(got.payload == want.payload);
  if (want.seq != 0) CHECK(got.seq == want.seq);
}

// `r` after a transition to `to` at `now` with the given message and payload.
inline task_record moved(task_record r, task_status to, task_time now, std::string_view message = {},
                         task_payload kind = task_payload::none, std::string_view payload = {}) {
  r.status = to;
  r.status_message = std::string{message};
  r.updated_at = now;
  r.payload_kind = kind;
  r.payload = std::string{payload};
  return r;
}

inline constexpr std::array<task_status, 5> all_statuses{task_status::working, task_status::input_required,
                                                         task_status::completed, task_status::failed,
                                                         task_status::cancelled};

}  // namespace task_store_suite_detail

/// The conformance suite of the `mcpcore::task_store` concept: every rule task.hpp documents,
/// one SUBCASE per rule. Call it inside a TEST_CASE.
///
/// `make()` returns an owning pointer-like handle (`std::unique_ptr<S>` or `std::shared_ptr<S>`)
/// to a fresh, EMPTY store, where `S` models `mcpcore::task_store`. It is called once per
/// SUBCASE run, and the handle is destroyed at the end of that run. Times are explicit (request
/// fields), so the store needs no clock.
template <class MakeStore>
void task_store_conformance(MakeStore make) {
  namespace d = task_store_suite_detail;
  using d::at;
  using d::check_same;
  using d::create;
  using d::create_ok;
  using d::list_ids;
  using d::moved;
  using d::must;
  using d::show;
  using d::t0;
  using d::task_spec;
  using d::transition;
  using mcpcore::task_payload;
  using mcpcore::task_record;
  using mcpcore::task_status;
  using mcpcore::task_time;
  using std::chrono::milliseconds;
  using L = milliseconds::rep;
  const L ttl = d::ttl.count();

  auto handle = make();
  REQUIRE(handle);
  auto& s = *handle;
  static_assert(mcpcore::task_store<std::remove_reference_t<decltype(s)>>);
  REQUIRE(list_ids(s, "alice", 0, 1000).empty());

  // ---- create (task_create_request) ----

  SUBCASE("concepts/task_store.md/valid-expressions: create step 5 stores the record as given under a store-assigned seq, get returns it with its payload") {
    task_spec t;
    t.record.status = task_status::input_required;
    t.record.status_message = "waiting for you";
    t.record.updated_at = at(7);
    t.record.payload_kind = task_payload::input_requests;
    t.record.payload = R"({"confirm":{"method":"elicitation/create"}})";
    t.record.seq = 999'999;  // ignored: the store assigns seqs
    const auto r = create(s, t);
    CHECK(to_string(r.status) == "created");
    CHECK(r.seq > 0);
    task_record want = t.record;
    want.seq = r.seq;
    check_same(d::task(s, t.record.id, t0), want);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: create step 2: an id in use is duplicate_id, before the caps, and the stored task is unchanged") {
    task_spec a;
    const auto seq = create_ok(s, a);
    task_spec dup;
    dup.record.id = a.record.id;
    dup.by("bob").when(at(5));
    dup.record.tool = "other";
    dup.max_total = 1;      // the store is full
    dup.max_per_owner = 0;  // and bob may hold none
    const auto r = create(s, dup);
    CHECK(to_string(r.status) == "duplicate_id");
    task_record want = a.record;
    want.seq = seq;
    check_same(d::task(s, a.record.id, at(5)), want);
    CHECK(list_ids(s, "bob", 0, 10, at(5)).empty());
  }

  SUBCASE("concepts/task_store.md/valid-expressions: create step 3: at max_total tasks the next create is global_cap, whoever asks, before the owner cap") {
    for (const char* owner : {"alice", "alice", "bob"}) {
      task_spec t;
      t.by(owner).max_total = 3;
      create_ok(s, t);
    }
    task_spec carol;
    carol.by("carol").max_total = 3;
    CHECK(to_string(create(s, carol).status) == "global_cap");
    task_spec alice;
    alice.max_total = 3;
    alice.max_per_owner = 2;  // alice is at her cap too: the global cap is reported
    CHECK(to_string(create(s, alice).status) == "global_cap");
    alice.max_total = 4;
    CHECK(to_string(create(s, alice).status) == "owner_cap");
    carol.max_total = 4;
    create_ok(s, carol);
    CHECK(d::get(s, alice.record.id, t0) == std::nullopt);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: create step 4: an owner at max_per_owner is owner_cap, terminal tasks count, other owners still create") {
    task_spec a;
    a.max_per_owner = 2;
    create_ok(s, a);
    task_spec b;
    b.max_per_owner = 2;
    create_ok(s, b);
    REQUIRE(to_string(transition(s, a.record.id, task_status::completed, at(1), "done", task_payload::result,
                                 R"({"content":[]})")) == "updated");
    REQUIRE(to_string(transition(s, b.record.id, task_status::cancelled, at(1))) == "updated");
    task_spec c;
    c.max_per_owner = 2;
    c.when(at(2));
    CHECK(to_string(create(s, c).status) == "owner_cap");
    CHECK(d::get(s, c.record.id, at(2)) == std::nullopt);
    task_spec bob;
    bob.by("bob").when(at(2)).max_per_owner = 2;
    create_ok(s, bob);
    c.max_per_owner = 3;
    create_ok(s, c);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: max_per_owner 0 or max_total 0 refuses every create") {
    task_spec a;
    a.max_total = 0;
    CHECK(to_string(create(s, a).status) == "global_cap");
    a.max_total = 10;
    a.max_per_owner = 0;
    CHECK(to_string(create(s, a).status) == "owner_cap");
    CHECK(list_ids(s, "alice", 0, 10).empty());
  }

  SUBCASE("concepts/task_store.md/valid-expressions: create step 1 sweeps first: an expired task's id is free again and it no longer counts against the caps") {
    task_spec old;
    old.lasting(milliseconds{10});
    const auto old_seq = create_ok(s, old);
    task_spec other;
    other.by("bob").lasting(milliseconds{10});
    create_ok(s, other);
    // At created_at + ttl both are expired: alice may create again with the same id under
    // caps that count only unexpired tasks.
    task_spec again;
    again.record.id = old.record.id;
    again.when(at(10)).max_total = 1;
    again.max_per_owner = 1;
    const auto seq = create_ok(s, again);
    CHECK(seq > old_seq);
    task_record want = again.record;
    want.seq = seq;
    check_same(d::task(s, again.record.id, at(10)), want);
    CHECK(must(s.expire(at(10))) == 0);  // the create's sweep deleted both already
  }

  SUBCASE("concepts/task_store.md/valid-expressions: one millisecond before created_at + ttl a task still counts against the caps and its id") {
    task_spec a;
    a.lasting(milliseconds{10});
    create_ok(s, a);
    task_spec b;
    b.record.id = a.record.id;
    b.when(at(9));
    CHECK(to_string(create(s, b).status) == "duplicate_id");
    task_spec c;
    c.when(at(9)).max_per_owner = 1;
    CHECK(to_string(create(s, c).status) == "owner_cap");
  }

  SUBCASE("concepts/task_store.md/valid-expressions: seq strictly increases across creates and owners, also after the newest task was deleted") {
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 6; ++i) {
      task_spec t;
      t.by(i % 2 == 0 ? "alice" : "bob").lasting(milliseconds{10});
      seqs.push_back(create_ok(s, t));
    }
    for (std::size_t i = 1; i < seqs.size(); ++i) CHECK(seqs[i] > seqs[i - 1]);
    REQUIRE(must(s.expire(at(10))) == 6);  // every task, the newest included, is gone
    task_spec later;
    later.when(at(11));
    CHECK(create_ok(s, later) > seqs.back());
  }

  // ---- get, expiry ----

  SUBCASE("concepts/task_store.md/valid-expressions: get of an unknown id is std::nullopt, not an error") {
    CHECK(d::get(s, d::fresh_id(), t0) == std::nullopt);
    CHECK(d::get(s, "", t0) == std::nullopt);
    CHECK(d::get(s, "not a task id; DROP TABLE x", t0) == std::nullopt);
  }

  SUBCASE("concepts/task_store.md/semantic-requirements: requirement 4: at exactly created_at + ttl a task is never returned and never changed, one millisecond before it is") {
    task_spec a;
    a.lasting(milliseconds{ttl});
    const auto seq = create_ok(s, a);
    task_record want = a.record;
    want.seq = seq;
    check_same(d::task(s, a.record.id, at(ttl - 1)), want);
    CHECK(list_ids(s, "alice", 0, 10, at(ttl - 1)) == std::vector<std::string>{a.record.id});
    CHECK(d::get(s, a.record.id, at(ttl)) == std::nullopt);
    CHECK(list_ids(s, "alice", 0, 10, at(ttl)).empty());
    CHECK(to_string(transition(s, a.record.id, task_status::completed, at(ttl), "late", task_payload::result,
                               "{}")) == "not_found");
    CHECK(must(s.abandon_unfinished(at(ttl), "restart", task_payload::none, "")) == 0);
    // Not swept yet: seen from before its expiry it is either gone or exactly as it was.
    if (const auto before = d::get(s, a.record.id, at(ttl - 1))) check_same(*before, want);
    CHECK(must(s.expire(at(ttl))) == 1);
    CHECK(d::get(s, a.record.id, at(ttl - 1)) == std::nullopt);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: a task created with ttl 0 is expired at once: created, never returned, swept by expire") {
    task_spec a;
    a.lasting(milliseconds{0});
    create_ok(s, a);
    CHECK(d::get(s, a.record.id, t0) == std::nullopt);
    CHECK(list_ids(s, "alice", 0, 10).empty());
    CHECK(to_string(transition(s, a.record.id, task_status::working, t0, "x")) == "not_found");
    CHECK(must(s.expire(t0)) == 1);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: a ttl at the edge of the clock's range neither overflows nor expires early, a negative one is expired") {
    task_spec forever;
    forever.lasting(milliseconds::max());
    const auto seq = create_ok(s, forever);
    const auto far = t0 + std::chrono::years{1000};
    task_record want = forever.record;
    want.seq = seq;
    check_same(d::task(s, forever.record.id, far), want);
    CHECK(must(s.expire(far)) == 0);
    task_spec gone;
    gone.lasting(milliseconds::min());
    create_ok(s, gone);
    CHECK(d::get(s, gone.record.id, t0) == std::nullopt);
    CHECK(must(s.expire(t0)) == 1);
    CHECK(d::get(s, forever.record.id, t0).has_value());
  }

  // ---- transition (task_transition) ----

  SUBCASE("concepts/task_store.md/valid-expressions: transition of an unknown id is not_found") {
    CHECK(to_string(transition(s, d::fresh_id(), task_status::completed, t0)) == "not_found");
    CHECK(to_string(transition(s, "", task_status::working, t0)) == "not_found");
  }

  SUBCASE("concepts/task_store.md/valid-expressions: transition step 3: a live task takes status, message, payload and updated_at, nothing else, working to working included") {
    task_spec a;
    const auto seq = create_ok(s, a);
    task_record want = a.record;
    want.seq = seq;
    const std::string asks = R"({"name":{"method":"elicitation/create","params":{}}})";
    const std::string answer = R"({"content":[{"type":"text","text":"ok"}],"isError":false})";
    REQUIRE(to_string(transition(s, a.record.id, task_status::working, at(1), "step 1 of 3")) == "updated");
    want = moved(want, task_status::working, at(1), "step 1 of 3");
    check_same(d::task(s, a.record.id, at(1)), want);
    REQUIRE(to_string(transition(s, a.record.id, task_status::input_required, at(2), "", task_payload::input_requests,
                                 asks)) == "updated");
    want = moved(want, task_status::input_required, at(2), "", task_payload::input_requests, asks);
    check_same(d::task(s, a.record.id, at(2)), want);
    REQUIRE(to_string(transition(s, a.record.id, task_status::working, at(3), "resumed")) == "updated");
    want = moved(want, task_status::working, at(3), "resumed");
    check_same(d::task(s, a.record.id, at(3)), want);
    REQUIRE(to_string(transition(s, a.record.id, task_status::completed, at(4), "", task_payload::result, answer)) ==
            "updated");
    want = moved(want, task_status::completed, at(4), "", task_payload::result, answer);
    check_same(d::task(s, a.record.id, at(4)), want);
  }

  SUBCASE("concepts/task_store.md/semantic-requirements: transition step 2: after completed, failed or cancelled every transition is terminal and nothing changes, ever") {
    for (const auto end : {task_status::completed, task_status::failed, task_status::cancelled}) {
      CAPTURE(to_string(end));
      task_spec a;
      const auto seq = create_ok(s, a);
      const std::string payload = end == task_status::cancelled ? "" : R"({"code":-32603,"message":"x"})";
      const auto kind = end == task_status::cancelled ? task_payload::none : task_payload::error;
      REQUIRE(to_string(transition(s, a.record.id, end, at(1), "the end", kind, payload)) == "updated");
      task_record want = moved(a.record, end, at(1), "the end", kind, payload);
      want.seq = seq;
      for (const auto to : d::all_statuses) {
        CAPTURE(to_string(to));
        CHECK(to_string(transition(s, a.record.id, to, at(2), "again", task_payload::result, "{}")) == "terminal");
      }
      CHECK(must(s.abandon_unfinished(at(3), "restart", task_payload::none, "")) == 0);
      check_same(d::task(s, a.record.id, at(3)), want);
    }
  }

  // ---- list (task_list_request) ----

  SUBCASE("concepts/task_store.md/valid-expressions: list gives the owner's tasks in seq order without payload, paged by after_seq and limit") {
    std::vector<std::string> mine;
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 5; ++i) {
      task_spec t;
      t.record.payload_kind = task_payload::input_requests;
      t.record.payload = R"({"big":"payload"})";
      t.record.status = task_status::input_required;
      mine.push_back(t.record.id);
      seqs.push_back(create_ok(s, t));
      task_spec other;
      other.by("bob");
      create_ok(s, other);
    }
    const auto page = must(s.list(mcpcore::task_list_request{"alice", 0, 100, t0}));
    REQUIRE(page.size() == 5);
    for (std::size_t i = 0; i < page.size(); ++i) {
      CAPTURE(i);
      CHECK(page[i].id == mine[i]);
      CHECK(page[i].seq == seqs[i]);
      CHECK(page[i].owner == "alice");
      CHECK(page[i].tool == "long_job");
      CHECK(to_string(page[i].status) == "input_required");
      CHECK(to_string(page[i].payload_kind) == "input_requests");  // what there is, ...
      CHECK(page[i].payload.empty());                               // ... without it
      CHECK(show(page[i].created_at) == show(t0));
      CHECK(page[i].ttl.count() == ttl);
      CHECK(page[i].poll_interval.count() == d::poll.count());
    }
    CHECK(list_ids(s, "alice", 0, 2) == std::vector<std::string>{mine[0], mine[1]});
    CHECK(list_ids(s, "alice", seqs[1], 2) == std::vector<std::string>{mine[2], mine[3]});
    CHECK(list_ids(s, "alice", seqs[3], 2) == std::vector<std::string>{mine[4]});
    CHECK(list_ids(s, "alice", seqs[3] + 1, 2) == std::vector<std::string>{mine[4]});  // a seq of bob's
    CHECK(list_ids(s, "alice", seqs[4], 2).empty());
    CHECK(list_ids(s, "alice", 0, 0).empty());
    CHECK(list_ids(s, "alice", std::numeric_limits<std::uint64_t>::max(), 10).empty());
    CHECK(list_ids(s, "alice", 0, std::numeric_limits<std::size_t>::max()) == mine);
  }

  SUBCASE("concepts/task_store.md/valid-expressions: list is per owner: a prefix, a longer name, another case or the empty owner matches nothing else") {
    for (const char* owner : {"alice", "alic", "alice2", "Alice", ""}) {
      task_spec t;
      t.by(owner);
      create_ok(s, t);
    }
    for (const char* owner : {"alice", "alic", "alice2", "Alice", ""}) {
      CAPTURE(owner);
      const auto page = must(s.list(mcpcore::task_list_request{owner, 0, 100, t0}));
      REQUIRE(page.size() == 1);
      CHECK(page[0].owner == owner);
    }
    CHECK(list_ids(s, "nobody", 0, 100).empty());
  }

  SUBCASE("concepts/task_store.md/semantic-requirements: requirement 4: list skips expired tasks that no sweep has deleted, and the limit counts only those listed") {
    std::vector<std::string> ids;
    for (const L life : {L{10}, L{50}, L{10}, L{50}, L{50}}) {
      task_spec t;
      t.lasting(milliseconds{life});
      ids.push_back(t.record.id);
      create_ok(s, t);
    }
    CHECK(list_ids(s, "alice", 0, 10, at(9)).size() == 5);
    CHECK(list_ids(s, "alice", 0, 2, at(10)) == std::vector<std::string>{ids[1], ids[3]});
    CHECK(list_ids(s, "alice", 0, 10, at(10)) == std::vector<std::string>{ids[1], ids[3], ids[4]});
  }

  // ---- expire ----

  SUBCASE("concepts/task_store.md/semantic-requirements: requirement 4: expire deletes every task expired at now, live and terminal alike, and returns how many") {
    task_spec a;
    a.lasting(milliseconds{10});
    create_ok(s, a);
    task_spec b;
    b.by("bob").lasting(milliseconds{10});
    create_ok(s, b);
    REQUIRE(to_string(transition(s, b.record.id, task_status::completed, at(1), "", task_payload::result, "{}")) ==
            "updated");
    task_spec c;
    c.lasting(milliseconds{20});
    create_ok(s, c);
    CHECK(must(s.expire(at(9))) == 0);
    CHECK(must(s.expire(at(10))) == 2);
    CHECK(must(s.expire(at(10))) == 0);
    CHECK(d::get(s, a.record.id, at(5)) == std::nullopt);  // deleted, not hidden
    CHECK(d::get(s, b.record.id, at(5)) == std::nullopt);
    CHECK(d::get(s, c.record.id, at(10)).has_value());
    CHECK(must(s.expire(at(20))) == 1);
    CHECK(must(s.expire(at(1'000'000))) == 0);
  }

  // ---- abandon_unfinished ----

  SUBCASE("concepts/task_store.md/semantic-requirements: requirement 6: abandon_unfinished fails working and input_required tasks, leaves terminal and expired ones, returns how many") {
    task_spec working;
    const auto working_seq = create_ok(s, working);
    task_spec asking;
    asking.by("bob");
    asking.record.status = task_status::input_required;
    asking.record.payload_kind = task_payload::input_requests;
    asking.record.payload = R"({"q":{}})";
    const auto asking_seq = create_ok(s, asking);
    task_spec done;
    const auto done_seq = create_ok(s, done);
    REQUIRE(to_string(transition(s, done.record.id, task_status::completed, at(1), "", task_payload::result,
                                 R"({"content":[]})")) == "updated");
    task_spec old;
    old.lasting(milliseconds{10});
    create_ok(s, old);
    const std::string lost = R"({"code":-32603,"message":"the server restarted"})";
    CHECK(must(s.abandon_unfinished(at(50), "the server restarted", task_payload::error, lost)) == 2);
    task_record want = moved(working.record, task_status::failed, at(50), "the server restarted", task_payload::error,
                             lost);
    want.seq = working_seq;
    check_same(d::task(s, working.record.id, at(50)), want);
    want = moved(asking.record, task_status::failed, at(50), "the server restarted", task_payload::error, lost);
    want.seq = asking_seq;
    check_same(d::task(s, asking.record.id, at(50)), want);
    want = moved(done.record, task_status::completed, at(1), "", task_payload::result, R"({"content":[]})");
    want.seq = done_seq;
    check_same(d::task(s, done.record.id, at(50)), want);
    if (const auto expired = d::get(s, old.record.id, at(5))) {  // not swept: unchanged
      CHECK(to_string(expired->status) == "working");
      CHECK(show(expired->updated_at) == show(t0));
    }
    CHECK(must(s.abandon_unfinished(at(51), "again", task_payload::none, "")) == 0);
    CHECK(to_string(transition(s, working.record.id, task_status::completed, at(52))) == "terminal");
  }

  // ---- round-trips ----

  SUBCASE("concepts/task_store.md/valid-expressions: every field round-trips exactly: Unicode, quotes, SQL text, control characters, NUL bytes, empty strings, a 1 MiB payload") {
    task_spec t;
    t.record.owner = "o'brien \"x\" \\ ; DROP TABLE mcpcore_tasks; -- \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    t.record.tool = std::string("tool\x01\t\n\0end", 11);
    t.record.status_message = "";
    t.record.created_at = task_time{milliseconds{1}};
    t.record.updated_at = task_time{milliseconds{-5}};  // before the epoch
    t.record.ttl = std::chrono::years{200};
    t.record.poll_interval = milliseconds{0};
    t.record.payload_kind = task_payload::result;
    t.record.payload = "{\"text\":\"" + std::string(1 << 20, 'x') + "\"}";
    t.now = task_time{milliseconds{1}};
    const auto seq = create_ok(s, t);
    task_record want = t.record;
    want.seq = seq;
    check_same(d::task(s, t.record.id, t0), want);
    const auto page = must(s.list(mcpcore::task_list_request{t.record.owner, 0, 10, t0}));
    REQUIRE(page.size() == 1);
    CHECK(page[0].tool == t.record.tool);
    const std::string message = "\xe2\x9c\x93 done \"quoted\" \\ \n next line";
    REQUIRE(to_string(transition(s, t.record.id, task_status::failed, t0, message, task_payload::error,
                                 std::string("{\"a\":\"\0\"}", 9))) == "updated");
    want = moved(want, task_status::failed, t0, message, task_payload::error, std::string("{\"a\":\"\0\"}", 9));
    check_same(d::task(s, t.record.id, t0), want);
  }
}

namespace task_store_suite_detail {

// Runs `racers` threads released together by one latch; racer i calls `call(i)` and its result
// (or whether it threw) is kept. All joined on return.
template <class R, class Call>
std::vector<mcpcore::result<R>> race(std::size_t racers, Call call, std::vector<char>& threw) {
  std::vector<mcpcore::result<R>> outcomes(racers);
  threw.assign(racers, 0);
  std::latch start{static_cast<std::ptrdiff_t>(racers)};
  std::vector<std::jthread> workers;
  workers.reserve(racers);
  for (std::size_t i = 0; i < racers; ++i) {
    workers.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        outcomes[i] = call(i);
      } catch (...) {
        threw[i] = 1;
      }
    });
  }
  workers.clear();  // joins
  return outcomes;
}

}  // namespace task_store_suite_detail

/// Requirement 1 of `mcpcore::task_store`: for each of a few fresh working tasks, `threads`
/// threads released together by one latch each transition it to a terminal state (completed,
/// failed and cancelled in turn, as a cancel races the completion). Exactly one sees `updated`,
/// all the others `terminal`, and the task holds the winner's status, message and time.
///
/// `make_connection()` returns an owning pointer-like handle (`std::unique_ptr<S>` or
/// `std::shared_ptr<S>`) to the SAME underlying store on every call: a new connection to it (a
/// database file opened again: the race then crosses connections, as processes do) or a shared
/// handle to one object. All calls of `make_connection` happen on the calling thread; every
/// handle is destroyed there after the threads joined. The store may already hold tasks: the
/// caps are large. A store error in a racing thread fails the test.
template <class MakeConnection>
void task_store_terminal_race(MakeConnection make_connection, int threads) {
  namespace d = task_store_suite_detail;
  using mcpcore::task_status;
  using mcpcore::task_transition_status;
  using std::chrono::milliseconds;
  REQUIRE(threads >= 2);
  const auto n = static_cast<std::size_t>(threads);
  constexpr int tasks = 4;
  constexpr std::array<task_status, 3> ends{task_status::completed, task_status::failed, task_status::cancelled};

  for (int round = 0; round < tasks; ++round) {
    CAPTURE(round);
    auto setup = make_connection();
    REQUIRE(setup);
    d::task_spec t;
    t.by("racer").max_per_owner = 1'000'000;
    t.max_total = 1'000'000;
    d::create_ok(*setup, t);
    std::vector<decltype(make_connection())> handles;
    handles.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      handles.push_back(make_connection());
      REQUIRE(handles.back());
    }
    std::vector<std::string> messages(n);
    for (std::size_t i = 0; i < n; ++i) messages[i] = "racer " + std::to_string(i);
    std::vector<char> threw;
    const auto outcomes = d::race<task_transition_status>(
        n,
        [&](std::size_t i) {
          // Each racer ends the task its own way at its own time, so the record names the winner.
          return handles[i]->transition(mcpcore::task_transition{t.record.id, ends[i % ends.size()], messages[i],
                                                                 mcpcore::task_payload::none, "",
                                                                 d::at(100 + static_cast<milliseconds::rep>(i))});
        },
        threw);
    std::size_t winners = 0;
    std::size_t winner = n;
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(i);
      REQUIRE_FALSE(threw[i]);
      const auto& o = outcomes[i];
      if (!o.has_value()) FAIL("task store error in a racing transition: " << o.error().message());
      if (*o == task_transition_status::updated) {
        ++winners;
        winner = i;
      } else {
        CHECK(to_string(*o) == "terminal");
      }
    }
    CHECK(winners == 1);
    REQUIRE(winner < n);
    const auto r = d::task(*setup, t.record.id, d::at(1000));
    CHECK(to_string(r.status) == to_string(ends[winner % ends.size()]));
    CHECK(r.status_message == messages[winner]);
    CHECK(d::show(r.updated_at) == d::show(d::at(100 + static_cast<milliseconds::rep>(winner))));
    CHECK(to_string(d::transition(*setup, t.record.id, task_status::working, d::at(1000))) == "terminal");
    handles.clear();
  }
}

/// Requirements 1 and 5 of `mcpcore::task_store` under contention: `threads` threads released
/// together each try `per_thread` creates, alternating between two owners, against caps most of
/// them exceed. First the owner caps alone (5 and 7, the global cap out of reach): exactly 5 and
/// 7 are created, every other create is `owner_cap`. Then the global cap alone (12 more tasks
/// than the store holds, owner caps out of reach): exactly 12 more are created, every other
/// create is `global_cap`. No cap is overrun by a race, and the created seqs are distinct.
///
/// `make_connection()` as for `task_store_terminal_race`, to a store that is EMPTY at the start;
/// `threads * per_thread` must be at least 24.
template <class MakeConnection>
void task_store_create_race(MakeConnection make_connection, int threads, int per_thread) {
  namespace d = task_store_suite_detail;
  using mcpcore::task_create_result;
  using mcpcore::task_create_status;
  REQUIRE(threads >= 2);
  REQUIRE(threads * per_thread >= 24);
  const auto n = static_cast<std::size_t>(threads);
  const auto attempts = n * static_cast<std::size_t>(per_thread);
  auto setup = make_connection();
  REQUIRE(setup);
  std::vector<decltype(make_connection())> handles;
  handles.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    handles.push_back(make_connection());
    REQUIRE(handles.back());
  }
  std::vector<std::uint64_t> seqs;

  // One round: owner `a` under cap `cap_a`, owner `b` under `cap_b`, `max_total` for both.
  const auto round = [&](const char* a, std::size_t cap_a, const char* b, std::size_t cap_b, std::size_t max_total,
                         task_create_status refusal) {
    CAPTURE(a);
    std::vector<char> threw;
    const auto outcomes = d::race<std::vector<task_create_result>>(
        n,
        [&](std::size_t i) -> mcpcore::result<std::vector<task_create_result>> {
          std::vector<task_create_result> out;
          for (int k = 0; k < per_thread; ++k) {
            d::task_spec t;
            const bool first = (i + static_cast<std::size_t>(k)) % 2 == 0;
            t.by(first ? a : b).max_per_owner = first ? cap_a : cap_b;
            t.max_total = max_total;
            auto r = handles[i]->create(t.request());
            if (!r) return mcpcore::fail(r.error());
            out.push_back(*r);
          }
          return out;
        },
        threw);
    std::size_t created = 0;
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(i);
      REQUIRE_FALSE(threw[i]);
      if (!outcomes[i].has_value()) FAIL("task store error in a racing create: " << outcomes[i].error().message());
      for (const auto& r : *outcomes[i]) {
        if (r.status == task_create_status::created) {
          seqs.push_back(r.seq);
          ++created;
        } else {
          CHECK(to_string(r.status) == to_string(refusal));
        }
      }
    }
    return created;
  };

  CHECK(round("cap-a", 5, "cap-b", 7, 1'000'000, task_create_status::owner_cap) == 12);
  CHECK(d::list_ids(*setup, "cap-a", 0, 1000).size() == 5);
  CHECK(d::list_ids(*setup, "cap-b", 0, 1000).size() == 7);
  CHECK(round("cap-c", attempts, "cap-d", attempts, 24, task_create_status::global_cap) == 12);
  CHECK(d::list_ids(*setup, "cap-c", 0, 1000).size() + d::list_ids(*setup, "cap-d", 0, 1000).size() == 12);
  std::sort(seqs.begin(), seqs.end());
  CHECK(std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end());
  handles.clear();
}

}  // namespace mcpcore_test

#endif  // MCPCORE_TESTS_SUPPORT_TASK_STORE_SUITE_HPP
