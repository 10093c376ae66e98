// SPDX-License-Identifier: Apache-2.0
// The store-agnostic conformance suite of the approval_store concept (approval.hpp;
// docs/concepts/approval_store.md#valid-expressions, docs/approvals.md#the-flow,
// #what-the-machine-checks-in-order, #lifetime, #guarantees): every documented check order, the
// sweep, the caps, dedup, round-trips, retention, history, and the at-most-once consume race among threads
// and among processes. Every store model runs it.
#ifndef MCPCORE_TESTS_SUPPORT_APPROVAL_STORE_SUITE_HPP
#define MCPCORE_TESTS_SUPPORT_APPROVAL_STORE_SUITE_HPP

#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <latch>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mcpcore_test {

namespace approval_store_suite_detail {

using mcpcore::approval_consume_status;
using mcpcore::approval_mint_status;
using mcpcore::approval_review_status;
using mcpcore::approval_status;
using mcpcore::approval_ticket;
using mcpcore::approval_time;
using std::chrono::milliseconds;

// 2026-01-01T00:00:00.123Z: a millisecond part that a seconds-precision store would lose.
inline constexpr approval_time t0{milliseconds{1'767'225'600'123}};
// The reference lifetime (docs/approvals.md#lifetime: 7 days).
inline constexpr milliseconds lifetime = std::chrono::days{7};

// t0 + `ms` milliseconds.
inline approval_time at(milliseconds::rep ms) { return t0 + milliseconds{ms}; }

// The value of a store call; a store error fails the test with its message.
template <class T>
T must(mcpcore::result<T> r) {
  if (!r.has_value()) FAIL("approval store error: " << r.error().message() << " (" << r.error().code().category().name() << ")");
  return std::move(*r);
}

// A fresh ticket id from the library's CSPRNG source.
inline std::string fresh_id() {
  auto id = mcpcore::make_approval_id();
  REQUIRE(id.has_value());
  REQUIRE(mcpcore::is_approval_id(*id));
  return std::move(*id);
}

// The printable form of a time (doctest cannot print time points).
inline std::string show(approval_time t) { return std::to_string(t.time_since_epoch().count()) + "ms"; }
inline std::string show(const std::optional<approval_time>& t) { return t ? show(*t) : std::string{"(none)"}; }

// An `approval_mint_request` whose strings it owns; the defaults mint alice's `mcp.deploy`
// ticket for scope {"a":1} at t0 with the reference caps and lifetime, on server "s1".
struct mint_spec {
  std::string id = fresh_id();
  std::string definition_id = "mcp.deploy";
  std::string origin = "mcp";
  std::string submitted_by = "alice";
  std::string scope = R"({"a":1})";
  approval_time now = t0;
  milliseconds lifetime_ms = lifetime;
  std::size_t per_submitter_cap = 25;
  std::size_t global_cap = 1000;
  std::string server = "s1";

  [[nodiscard]] mcpcore::approval_mint_request request() const {
    return {id, definition_id, origin, submitted_by, scope, now, lifetime_ms, per_submitter_cap, global_cap, server};
  }
  // The ticket a successful mint stores.
  [[nodiscard]] approval_ticket ticket() const {
    approval_ticket t;
    t.id = id;
    t.definition_id = definition_id;
    t.status = approval_status::pending;
    t.origin = origin;
    t.submitted_by = submitted_by;
    t.submitted_at = now;
    t.scope = scope;
    t.server = server;
    return t;
  }
};

template <class S>
mcpcore::approval_mint_result mint(S& s, const mint_spec& m) {
  return must(s.mint(m.request()));
}

// Mints `m`, requiring a new ticket with the requested id.
template <class S>
std::string mint_created(S& s, const mint_spec& m) {
  const auto r = mint(s, m);
  REQUIRE(to_string(r.status) == "created");
  REQUIRE(r.id == m.id);
  return r.id;
}

template <class S>
approval_review_status review(S& s, std::string_view id, std::string_view reviewer, approval_status decision,
                              approval_time now, std::string_view comment = {}, milliseconds life = lifetime) {
  return must(s.review(mcpcore::approval_review_request{id, reviewer, decision, comment, now, life}));
}

template <class S>
approval_consume_status consume(S& s, std::string_view id, std::string_view consumer, approval_time now,
                                std::string_view origin = mcpcore::approval_origin_mcp,
                                milliseconds life = lifetime) {
  return must(s.consume(mcpcore::approval_consume_request{id, consumer, origin, now, life}));
}

// Ticket `id`, which must exist.
template <class S>
approval_ticket ticket(S& s, std::string_view id) {
  auto t = must(s.get(id));
  REQUIRE_MESSAGE(t.has_value(), "ticket " << std::string{id} << " is unknown");
  return std::move(*t);
}

template <class S>
std::vector<std::string> pending_ids(S& s, std::size_t limit) {
  std::vector<std::string> ids;
  for (const auto& t : must(s.pending(limit))) ids.push_back(t.id);
  return ids;
}

// A minter of tickets each of its own scope (`{"<key>":<n>}`, n counting up) at `now`, with caps
// no test reaches: no dedup, no cap refusal. What the retention and history suites fill stores with.
template <class S>
auto fresh_minter(S& s, std::string key) {
  return [&s, key = std::move(key), next = 0](approval_time now) mutable {
    mint_spec m;
    m.scope = "{\"" + key + "\":" + std::to_string(next++) + "}";
    m.now = now;
    m.per_submitter_cap = 1'000'000;
    m.global_cap = 1'000'000;
    return mint_created(s, m);
  };
}

// Field by field (readable failures). `reviewed_at` is compared once the ticket was reviewed:
// before that it is meaningless (approval.hpp).
inline void check_same(const approval_ticket& got, const approval_ticket& want) {
  INFO("ticket " << want.id);
  CHECK(got.id == want.id);
  CHECK(got.definition_id == want.definition_id);
  CHECK(to_string(got.status) == to_string(want.status));
  CHECK(got.origin == want.origin);
  CHECK(got.submitted_by == want.submitted_by);
  CHECK(show(got.submitted_at) == show(want.submitted_at));
  CHECK(got.reviewed_by == want.reviewed_by);
  if (!want.reviewed_by.empty()) CHECK(show(got.reviewed_at) == show(want.reviewed_at));
  CHECK(got.review_comment == want.review_comment);
  CHECK(got.scope == want.scope);
  CHECK(show(got.consumed_at) == show(want.consumed_at));
  CHECK(got.consumed_by == want.consumed_by);
  CHECK(show(got.expired_at) == show(want.expired_at));
  CHECK(got.server == want.server);
}

}  // namespace approval_store_suite_detail

/// The conformance suite of the `mcpcore::approval_store` concept: every rule approval.hpp
/// documents, one SUBCASE per rule. Call it inside a TEST_CASE.
///
/// `make()` returns an owning pointer-like handle (`std::unique_ptr<S>` or `std::shared_ptr<S>`)
/// to a fresh, EMPTY store, where `S` models `mcpcore::approval_store`. It is called once per
/// SUBCASE run, and the handle is destroyed at the end of that run. Times are explicit
/// (request fields), so the store needs no clock.
template <class MakeStore>
void approval_store_conformance(MakeStore make) {
  namespace d = approval_store_suite_detail;
  using d::at;
  using d::check_same;
  using d::consume;
  using d::lifetime;
  using d::mint;
  using d::mint_created;
  using d::mint_spec;
  using d::must;
  using d::pending_ids;
  using d::review;
  using d::show;
  using d::t0;
  using d::ticket;
  using mcpcore::approval_status;
  using mcpcore::approval_ticket;
  using std::chrono::milliseconds;
  using L = milliseconds::rep;
  const L life = lifetime.count();

  auto handle = make();
  REQUIRE(handle);
  auto& s = *handle;
  static_assert(mcpcore::approval_store<std::remove_reference_t<decltype(s)>>);
  REQUIRE(must(s.pending(1000)).empty());

  // ---- mint (docs/approvals.md#what-the-machine-checks-in-order, approval_mint_request) ----

  SUBCASE("concepts/approval_store.md/valid-expressions, approvals.md/what-the-machine-checks-in-order: mint creates a pending ticket with the request's id and fields") {
    const mint_spec m;
    const auto r = mint(s, m);
    CHECK(to_string(r.status) == "created");
    CHECK(r.id == m.id);
    check_same(ticket(s, m.id), m.ticket());
    CHECK(pending_ids(s, 10) == std::vector<std::string>{m.id});
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order, approvals.md/guarantees: the same definition, submitter, scope and origin is deduplicated") {
    const mint_spec a;
    mint_created(s, a);
    mint_spec b;
    b.now = at(1000);
    const auto r = mint(s, b);
    CHECK(to_string(r.status) == "deduped");
    CHECK(r.id == a.id);
    CHECK_FALSE(must(s.get(b.id)).has_value());  // the unused fresh id names nothing
    check_same(ticket(s, a.id), a.ticket());     // untouched, submitted_at included
    CHECK(pending_ids(s, 10) == std::vector<std::string>{a.id});
  }

  SUBCASE("approvals.md/several-servers: dedup ignores the server: a second mint of the same key from another server "
          "gets the first ticket, whose server stays the first one's") {
    const mint_spec a;  // server s1
    mint_created(s, a);
    mint_spec b;
    b.server = "s2";
    b.now = at(1000);
    const auto r = mint(s, b);
    CHECK(to_string(r.status) == "deduped");
    CHECK(r.id == a.id);
    CHECK_FALSE(must(s.get(b.id)).has_value());
    CHECK(ticket(s, a.id).server == "s1");
    check_same(ticket(s, a.id), a.ticket());
    CHECK(must(s.pending(10)).at(0).server == "s1");
  }

  SUBCASE("approvals.md/several-servers: the server of a minted ticket reads back from get and pending, "
          "an empty one as empty") {
    mint_spec a;
    a.server = "host-a.example:8765";
    mint_created(s, a);
    mint_spec b;
    b.scope = R"({"b":1})";
    b.now = at(1);
    b.server = "";
    mint_created(s, b);
    mint_spec c;
    c.scope = R"({"c":1})";
    c.now = at(2);
    c.server = std::string(mcpcore::max_server_id_bytes, '~');
    mint_created(s, c);
    CHECK(ticket(s, a.id).server == "host-a.example:8765");
    CHECK(ticket(s, b.id).server.empty());
    CHECK(ticket(s, c.id).server == c.server);
    const auto listed = must(s.pending(10));
    REQUIRE(listed.size() == 3);
    CHECK(listed[0].server == "host-a.example:8765");
    CHECK(listed[1].server.empty());
    CHECK(listed[2].server == c.server);
    // Reviews, consumes and expiry leave it as it was.
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(10))) == "reviewed");
    REQUIRE(to_string(consume(s, a.id, "alice", at(20))) == "consumed");
    REQUIRE(must(s.expire(at(2 + life), lifetime)) == 2);
    CHECK(ticket(s, a.id).server == "host-a.example:8765");
    CHECK(ticket(s, c.id).server == c.server);
  }

  SUBCASE("approvals.md/the-flow, approvals.md/what-the-machine-checks-in-order: another scope ({\"a\":1} vs {\"a\":1.0}), submitter, origin or definition "
          "mints a new ticket") {
    const mint_spec base;
    mint_created(s, base);
    mint_spec float_scope;
    float_scope.scope = R"({"a":1.0})";
    mint_created(s, float_scope);
    mint_spec other_submitter;
    other_submitter.submitted_by = "bob";
    mint_created(s, other_submitter);
    mint_spec other_origin;
    other_origin.origin = "instruction";
    mint_created(s, other_origin);
    mint_spec other_definition;
    other_definition.definition_id = "mcp.other";
    mint_created(s, other_definition);
    CHECK(must(s.pending(10)).size() == 5);
    const mint_spec again;
    const auto r = mint(s, again);
    CHECK(to_string(r.status) == "deduped");
    CHECK(r.id == base.id);
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: dedup matches only pending tickets (approved, rejected, consumed are not reused)") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(1))) == "reviewed");
    mint_spec b;
    b.now = at(2);
    mint_created(s, b);  // a is approved: a new ticket
    REQUIRE(to_string(review(s, b.id, "bob", approval_status::rejected, at(3))) == "reviewed");
    mint_spec c;
    c.now = at(4);
    mint_created(s, c);  // b is rejected: a new ticket
    REQUIRE(to_string(review(s, c.id, "bob", approval_status::approved, at(5))) == "reviewed");
    REQUIRE(to_string(consume(s, c.id, "alice", at(6))) == "consumed");
    mint_spec d;
    d.now = at(7);
    mint_created(s, d);  // c is consumed: a new ticket
    CHECK(pending_ids(s, 10) == std::vector<std::string>{d.id});
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order, approvals.md/lifetime: dedup ignores a ticket that the mint's own sweep expires") {
    const mint_spec a;
    mint_created(s, a);
    mint_spec b;
    b.now = at(life);  // a is exactly one lifetime old
    mint_created(s, b);
    auto expired = a.ticket();
    expired.status = approval_status::expired;
    expired.expired_at = b.now;
    check_same(ticket(s, a.id), expired);
    CHECK(pending_ids(s, 10) == std::vector<std::string>{b.id});
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: per-submitter cap: the cap-th pending ticket is refused, other submitters mint") {
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
      mint_spec m;
      m.scope = R"({"n":)" + std::to_string(i) + "}";
      m.per_submitter_cap = 3;
      ids.push_back(mint_created(s, m));
    }
    mint_spec over;
    over.scope = R"({"n":3})";
    over.per_submitter_cap = 3;
    auto r = mint(s, over);
    CHECK(to_string(r.status) == "submitter_cap");
    CHECK(r.id.empty());
    CHECK_FALSE(must(s.get(over.id)).has_value());
    CHECK(must(s.pending(10)).size() == 3);

    mint_spec bob;
    bob.submitted_by = "bob";
    bob.per_submitter_cap = 3;
    mint_created(s, bob);

    mint_spec repeat;  // dedup precedes the cap
    repeat.scope = R"({"n":0})";
    repeat.per_submitter_cap = 3;
    r = mint(s, repeat);
    CHECK(to_string(r.status) == "deduped");
    CHECK(r.id == ids[0]);

    // Only pending tickets count: one approved frees a slot.
    REQUIRE(to_string(review(s, ids[0], "bob", approval_status::approved, at(1))) == "reviewed");
    mint_spec after;
    after.scope = R"({"n":4})";
    after.per_submitter_cap = 3;
    after.now = at(2);
    mint_created(s, after);

    mint_spec zero;  // a cap of 0 refuses every new ticket
    zero.submitted_by = "carol";
    zero.per_submitter_cap = 0;
    CHECK(to_string(mint(s, zero).status) == "submitter_cap");
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: global cap: refused at global_cap pending tickets, after the submitter cap") {
    for (const char* who : {"alice", "bob", "carol"}) {
      mint_spec m;
      m.submitted_by = who;
      m.global_cap = 3;
      mint_created(s, m);
    }
    mint_spec dave;
    dave.submitted_by = "dave";
    dave.global_cap = 3;
    auto r = mint(s, dave);
    CHECK(to_string(r.status) == "global_cap");
    CHECK(r.id.empty());
    CHECK_FALSE(must(s.get(dave.id)).has_value());

    mint_spec repeat;  // dedup precedes the caps
    repeat.global_cap = 3;
    CHECK(to_string(mint(s, repeat).status) == "deduped");

    mint_spec both;  // both caps reached: the submitter cap is reported
    both.scope = R"({"b":2})";
    both.per_submitter_cap = 1;
    both.global_cap = 3;
    CHECK(to_string(mint(s, both).status) == "submitter_cap");

    // A finished ticket frees a global slot.
    const auto bobs = must(s.pending(10));
    REQUIRE(bobs.size() == 3);
    REQUIRE(to_string(review(s, bobs[1].id, "zed", approval_status::rejected, at(1))) == "reviewed");
    mint_spec dave2;
    dave2.submitted_by = "dave";
    dave2.global_cap = 3;
    dave2.now = at(2);
    mint_created(s, dave2);
  }

  SUBCASE("approvals.md/lifetime, approvals.md/what-the-machine-checks-in-order: the sweep at mint expires a pending ticket aged exactly the lifetime, "
          "not a younger one; nothing is deleted") {
    const mint_spec a;
    mint_created(s, a);
    mint_spec b;
    b.scope = R"({"a":2})";
    b.now = at(1);
    mint_created(s, b);
    mint_spec c;
    c.submitted_by = "bob";
    c.now = at(life);
    mint_created(s, c);

    auto a_expired = a.ticket();
    a_expired.status = approval_status::expired;
    a_expired.expired_at = c.now;
    check_same(ticket(s, a.id), a_expired);
    check_same(ticket(s, b.id), b.ticket());
    CHECK(pending_ids(s, 10) == std::vector<std::string>{b.id, c.id});

    mint_spec d;
    d.submitted_by = "carol";
    d.now = at(life + 1);
    mint_created(s, d);
    CHECK(to_string(ticket(s, b.id).status) == "expired");
    CHECK(show(ticket(s, b.id).expired_at) == show(d.now));
    CHECK(pending_ids(s, 10) == std::vector<std::string>{c.id, d.id});
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: the caps count pending tickets after the sweep") {
    mint_spec a;
    a.per_submitter_cap = 1;
    a.global_cap = 1;
    mint_created(s, a);
    mint_spec b;
    b.scope = R"({"a":2})";
    b.per_submitter_cap = 1;
    b.global_cap = 1;
    b.now = at(life);  // a expires first, so neither cap is reached
    mint_created(s, b);
    CHECK(to_string(ticket(s, a.id).status) == "expired");
  }

  SUBCASE("approvals.md/lifetime: the sweep at mint expires an approved unconsumed ticket a lifetime after its review") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(life - 1))) == "reviewed");
    mint_spec x;
    x.submitted_by = "bob";
    x.now = at(life);  // the pending clock would have run out; the review clock has not
    mint_created(s, x);
    CHECK(to_string(ticket(s, a.id).status) == "approved");
    mint_spec y;
    y.submitted_by = "carol";
    y.now = at(2 * life - 2);
    mint_created(s, y);
    CHECK(to_string(ticket(s, a.id).status) == "approved");
    CHECK_FALSE(ticket(s, a.id).expired_at.has_value());
    mint_spec z;
    z.submitted_by = "dave";
    z.now = at(2 * life - 1);
    mint_created(s, z);
    auto want = a.ticket();
    want.status = approval_status::expired;
    want.reviewed_by = "bob";
    want.reviewed_at = at(life - 1);
    want.expired_at = z.now;
    check_same(ticket(s, a.id), want);
  }

  SUBCASE("approvals.md/lifetime: consumed and rejected tickets never expire") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(1))) == "reviewed");
    REQUIRE(to_string(consume(s, a.id, "alice", at(2))) == "consumed");
    mint_spec b;
    b.scope = R"({"b":1})";
    mint_created(s, b);
    REQUIRE(to_string(review(s, b.id, "bob", approval_status::rejected, at(1), "no")) == "reviewed");
    mint_spec later;
    later.submitted_by = "carol";
    later.now = at(100 * life);
    mint_created(s, later);
    CHECK(must(s.expire(at(1000 * life), lifetime)) == 1);  // only `later`
    const auto ta = ticket(s, a.id);
    CHECK(to_string(ta.status) == "approved");
    CHECK(show(ta.consumed_at) == show(at(2)));
    CHECK_FALSE(ta.expired_at.has_value());
    const auto tb = ticket(s, b.id);
    CHECK(to_string(tb.status) == "rejected");
    CHECK_FALSE(tb.expired_at.has_value());
  }

  SUBCASE("approvals.md/lifetime: expire(now, lifetime) runs the sweep alone and returns how many tickets expired") {
    CHECK(must(s.expire(at(0), lifetime)) == 0);  // empty store
    mint_spec armed;
    armed.scope = R"({"armed":1})";
    mint_created(s, armed);
    REQUIRE(to_string(review(s, armed.id, "bob", approval_status::approved, at(1))) == "reviewed");
    mint_spec p1;
    p1.now = at(5);
    mint_created(s, p1);
    mint_spec p2;
    p2.submitted_by = "bob";
    p2.now = at(5);
    mint_created(s, p2);
    mint_spec done;
    done.submitted_by = "dave";
    mint_created(s, done);
    REQUIRE(to_string(review(s, done.id, "bob", approval_status::approved, at(1))) == "reviewed");
    REQUIRE(to_string(consume(s, done.id, "dave", at(2))) == "consumed");
    mint_spec young;
    young.submitted_by = "carol";
    young.now = at(life);
    mint_created(s, young);  // its own sweep expires nothing: p1, p2 at t0+5, armed reviewed at t0+1

    CHECK(must(s.expire(at(life + 5), lifetime)) == 3);  // p1, p2 and armed
    CHECK(must(s.expire(at(life + 5), lifetime)) == 0);  // idempotent
    for (const auto* m : {&armed, &p1, &p2}) {
      const auto t = ticket(s, m->id);  // still there: expiry never deletes
      CHECK(to_string(t.status) == "expired");
      CHECK(show(t.expired_at) == show(at(life + 5)));
    }
    CHECK(to_string(ticket(s, done.id).status) == "approved");
    CHECK(pending_ids(s, 10) == std::vector<std::string>{young.id});
  }

  // ---- consume (docs/approvals.md#what-the-machine-checks-in-order, approval_consume_request)
  // ----

  SUBCASE("approvals.md/what-the-machine-checks-in-order: consume of an unknown id is not_found") {
    mint_created(s, mint_spec{});
    CHECK(to_string(consume(s, d::fresh_id(), "alice", at(1))) == "not_found");
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: another origin is foreign_origin, reported before the submitter and status checks") {
    mint_spec inst;
    inst.origin = "instruction";
    mint_created(s, inst);
    REQUIRE(to_string(review(s, inst.id, "bob", approval_status::approved, at(1))) == "reviewed");
    const auto before = ticket(s, inst.id);
    CHECK(to_string(consume(s, inst.id, "alice", at(2))) == "foreign_origin");
    CHECK(to_string(consume(s, inst.id, "mallory", at(2))) == "foreign_origin");  // both foreign: origin wins
    check_same(ticket(s, inst.id), before);                                      // untouched
    mint_spec undeclared;  // an undeclared origin is foreign too
    undeclared.origin = "";
    mint_created(s, undeclared);
    CHECK(to_string(consume(s, undeclared.id, "mallory", at(2))) == "foreign_origin");  // pending, too
    CHECK(to_string(consume(s, inst.id, "alice", at(3), "instruction")) == "consumed");
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: another consumer is foreign_submitter, reported before the status check") {
    const mint_spec a;
    mint_created(s, a);
    CHECK(to_string(consume(s, a.id, "mallory", at(1))) == "foreign_submitter");  // still pending
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(2))) == "reviewed");
    const auto before = ticket(s, a.id);
    CHECK(to_string(consume(s, a.id, "mallory", at(3))) == "foreign_submitter");
    CHECK(to_string(consume(s, a.id, "bob", at(3))) == "foreign_submitter");  // even the reviewer
    check_same(ticket(s, a.id), before);
    CHECK(to_string(consume(s, a.id, "alice", at(4))) == "consumed");
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: pending, rejected and expired tickets are not_consumable and stay unchanged") {
    const mint_spec p;
    mint_created(s, p);
    CHECK(to_string(consume(s, p.id, "alice", at(1))) == "not_consumable");
    check_same(ticket(s, p.id), p.ticket());

    mint_spec r;
    r.scope = R"({"r":1})";
    mint_created(s, r);
    REQUIRE(to_string(review(s, r.id, "bob", approval_status::rejected, at(1), "no")) == "reviewed");
    const auto rejected = ticket(s, r.id);
    CHECK(to_string(consume(s, r.id, "alice", at(2))) == "not_consumable");
    check_same(ticket(s, r.id), rejected);

    mint_spec e;
    e.scope = R"({"e":1})";
    mint_created(s, e);
    REQUIRE(must(s.expire(at(life), lifetime)) == 2);  // p and e
    const auto expired = ticket(s, e.id);
    REQUIRE(to_string(expired.status) == "expired");
    CHECK(to_string(consume(s, e.id, "alice", at(life + 1))) == "not_consumable");
    check_same(ticket(s, e.id), expired);
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order, approvals.md/guarantees: a second consume is not_consumable; the first consumption is kept") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(1))) == "reviewed");
    REQUIRE(to_string(consume(s, a.id, "alice", at(2))) == "consumed");
    CHECK(to_string(consume(s, a.id, "alice", at(3))) == "not_consumable");
    const auto t = ticket(s, a.id);
    CHECK(show(t.consumed_at) == show(at(2)));
    CHECK(t.consumed_by == "alice");
  }

  SUBCASE("approvals.md/lifetime (enforced at consume): reviewed_at + lifetime is expired, status becomes expired; "
          "one millisecond earlier it is consumed") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(10))) == "reviewed");
    CHECK(to_string(consume(s, a.id, "alice", at(10 + life))) == "expired");
    auto want = a.ticket();
    want.status = approval_status::expired;
    want.reviewed_by = "bob";
    want.reviewed_at = at(10);
    want.expired_at = at(10 + life);
    check_same(ticket(s, a.id), want);
    CHECK(to_string(consume(s, a.id, "alice", at(11 + life))) == "not_consumable");

    mint_spec b;
    b.scope = R"({"b":1})";
    mint_created(s, b);
    REQUIRE(to_string(review(s, b.id, "bob", approval_status::approved, at(10))) == "reviewed");
    CHECK(to_string(consume(s, b.id, "alice", at(9 + life))) == "consumed");
  }

  SUBCASE("approvals.md/what-the-machine-checks-in-order: consume sets consumed_at = now and consumed_by; the status stays approved") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(1000), "ok")) == "reviewed");
    REQUIRE(to_string(consume(s, a.id, "alice", at(2345))) == "consumed");
    auto want = a.ticket();
    want.status = approval_status::approved;
    want.reviewed_by = "bob";
    want.reviewed_at = at(1000);
    want.review_comment = "ok";
    want.consumed_at = at(2345);
    want.consumed_by = "alice";
    check_same(ticket(s, a.id), want);
    CHECK(must(s.pending(10)).empty());
  }

  // ---- review (docs/approvals.md#lifetime, approval_review_request) ----

  SUBCASE("approvals.md/lifetime: review of an unknown id is not_found") {
    mint_created(s, mint_spec{});
    CHECK(to_string(review(s, d::fresh_id(), "bob", approval_status::approved, at(1))) == "not_found");
  }

  SUBCASE("approvals.md/lifetime: a reviewed ticket is already_reviewed (before the expiry and self-review checks); "
          "the first review is kept") {
    const mint_spec a;
    mint_created(s, a);
    REQUIRE(to_string(review(s, a.id, "bob", approval_status::approved, at(1))) == "reviewed");
    const auto approved = ticket(s, a.id);
    CHECK(to_string(review(s, a.id, "carol", approval_status::rejected, at(2), "late")) == "already_reviewed");
    CHECK(to_string(review(s, a.id, "carol", approval_status::approved, at(2))) == "already_reviewed");
    CHECK(to_string(review(s, a.id, "alice", approval_status::approved, at(2))) == "already_reviewed");
    CHECK(to_string(review(s, a.id, "carol", approval_status::approved, at(10 * life))) == "already_reviewed");
    check_same(ticket(s, a.id), approved);

    mint_spec r;
    r.scope = R"({"r":1})";
    mint_created(s, r);
    REQUIRE(to_string(review(s, r.id, "bob", approval_status::rejected, at(1))) == "reviewed");
    CHECK(to_string(review(s, r.id, "carol", approval_status::approved, at(2))) == "already_reviewed");
    CHECK(to_string(ticket(s, r.id).status) == "rejected");

    mint_spec e;
    e.scope = R"({"e":1})";
    mint_created(s, e);
    REQUIRE(must(s.expire(at(life), lifetime)) == 1);
    CHECK(to_string(review(s, e.id, "bob", approval_status::approved, at(life + 1))) == "already_reviewed");
    CHECK(to_string(ticket(s, e.id).status) == "expired");
  }

  SUBCASE("approvals.md/lifetime: a pending ticket reviewed at submitted_at + lifetime is expired (before self_review); "
          "one millisecond earlier it is reviewed") {
    const mint_spec a;
    mint_created(s, a);
    CHECK(to_string(review(s, a.id, "alice", approval_status::approved, at(life))) == "expired");
    auto want = a.ticket();
    want.status = approval_status::expired;
    want.expired_at = at(life);
    check_same(ticket(s, a.id), want);
    CHECK(must(s.pending(10)).empty());

    mint_spec b;
    b.scope = R"({"b":1})";
    b.now = at(life);
    mint_created(s, b);
    CHECK(to_string(review(s, b.id, "bob", approval_status::approved, at(2 * life - 1))) == "reviewed");
  }

  SUBCASE("approvals.md/lifetime, approvals.md/the-approver-tools: the submitter cannot review their own ticket (self_review); it stays pending") {
    const mint_spec a;
    mint_created(s, a);
    CHECK(to_string(review(s, a.id, "alice", approval_status::approved, at(1))) == "self_review");
    CHECK(to_string(review(s, a.id, "alice", approval_status::rejected, at(1), "x")) == "self_review");
    check_same(ticket(s, a.id), a.ticket());
    CHECK(pending_ids(s, 10) == std::vector<std::string>{a.id});
    CHECK(to_string(review(s, a.id, "bob", approval_status::approved, at(2))) == "reviewed");
  }

  SUBCASE("approvals.md/lifetime: approve sets status, reviewed_by, reviewed_at and the comment") {
    const mint_spec a;
    mint_created(s, a);
    CHECK(to_string(review(s, a.id, "bob", approval_status::approved, at(777), "fine")) == "reviewed");
    auto want = a.ticket();
    want.status = approval_status::approved;
    want.reviewed_by = "bob";
    want.reviewed_at = at(777);
    want.review_comment = "fine";
    check_same(ticket(s, a.id), want);
    CHECK(must(s.pending(10)).empty());
  }

  SUBCASE("approvals.md/lifetime: reject stores the comment; approve after reject is already_reviewed") {
    const mint_spec a;
    mint_created(s, a);
    CHECK(to_string(review(s, a.id, "bob", approval_status::rejected, at(5), "too broad")) == "reviewed");
    auto want = a.ticket();
    want.status = approval_status::rejected;
    want.reviewed_by = "bob";
    want.reviewed_at = at(5);
    want.review_comment = "too broad";
    check_same(ticket(s, a.id), want);
    CHECK(to_string(review(s, a.id, "carol", approval_status::approved, at(6))) == "already_reviewed");
    check_same(ticket(s, a.id), want);
  }

  // ---- get, pending, round-trips ----

  SUBCASE("concepts/approval_store.md/valid-expressions: get of an unknown id is std::nullopt, not an error") {
    mint_created(s, mint_spec{});
    CHECK_FALSE(must(s.get("0123456789abcdef0123456789abcdef")).has_value());
    CHECK_FALSE(must(s.get("")).has_value());
    CHECK_FALSE(must(s.get("not a ticket id")).has_value());
  }

  SUBCASE("concepts/approval_store.md/valid-expressions: pending(limit) lists pending tickets oldest first (submitted_at, then id), at most limit") {
    const auto mint_at = [&](std::string id, std::string who, L ms) {
      mint_spec m;
      m.id = std::move(id);
      m.submitted_by = std::move(who);
      m.now = at(ms);
      mint_created(s, m);
      return m.id;
    };
    const auto a = mint_at("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "alice", 2);
    const auto b = mint_at("cccccccccccccccccccccccccccccccc", "bob", 0);
    const auto c = mint_at("ffffffffffffffffffffffffffffffff", "carol", 1);
    const auto dd = mint_at("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "dave", 1);
    const auto e = mint_at("dddddddddddddddddddddddddddddddd", "erin", 1);
    REQUIRE(to_string(review(s, e, "bob", approval_status::approved, at(3))) == "reviewed");
    CHECK(pending_ids(s, 10) == std::vector<std::string>{b, dd, c, a});
    CHECK(pending_ids(s, 2) == std::vector<std::string>{b, dd});
    CHECK(pending_ids(s, 4) == std::vector<std::string>{b, dd, c, a});
    CHECK(pending_ids(s, 0).empty());
    for (const auto& t : must(s.pending(10))) check_same(t, ticket(s, t.id));
  }

  SUBCASE("concepts/approval_store.md/valid-expressions: every field round-trips exactly (unicode, quotes, backslashes, control characters, "
          "millisecond times)") {
    mint_spec m;
    m.definition_id = "mcp.d\xC3\xA9ployer-\xF0\x9F\x9A\x80 \"q\" 'x'";
    m.origin = "or\xC3\xADgin \"quoted\" 'single' \\";
    m.submitted_by = "usr:\xC5\xBD\xC5\xA0\\back\\slash'; DROP TABLE approvals; --";
    m.scope = R"({"k":"\u00e9\"q\"","v":[1,2.50,-0.0e+1],"z":"日本語 \\ "})";
    m.now = at(7);
    mint_created(s, m);
    check_same(ticket(s, m.id), m.ticket());
    check_same(must(s.pending(1)).at(0), m.ticket());

    const std::string reviewer = "r\xC3\xA9v\tiewer\n\"x\"\r";
    const std::string comment = "looks good \xF0\x9F\x91\x8D \xE2\x80\x94 \xC2\xABok\xC2\xBB\t\"'\\" + std::string(2000, 'x');
    REQUIRE(to_string(review(s, m.id, reviewer, approval_status::approved, at(3'601'001), comment)) == "reviewed");
    REQUIRE(to_string(consume(s, m.id, m.submitted_by, at(86'399'999), m.origin)) == "consumed");
    auto want = m.ticket();
    want.status = approval_status::approved;
    want.reviewed_by = reviewer;
    want.reviewed_at = at(3'601'001);
    want.review_comment = comment;
    want.consumed_at = at(86'399'999);
    want.consumed_by = m.submitted_by;
    const auto got = ticket(s, m.id);
    check_same(got, want);
    CHECK(got == want);

    mint_spec x;  // expired_at and a rejection's comment
    x.submitted_by = reviewer;
    x.scope = "{}";
    x.now = at(9);
    mint_created(s, x);
    REQUIRE(to_string(review(s, x.id, m.submitted_by, approval_status::rejected, at(11), comment)) == "reviewed");
    mint_spec y;
    y.submitted_by = "\xE6\x97\xA5\xE6\x9C\xAC";
    y.now = at(13);
    mint_created(s, y);
    REQUIRE(must(s.expire(at(13 + life), lifetime)) == 1);
    auto want_x = x.ticket();
    want_x.status = approval_status::rejected;
    want_x.reviewed_by = m.submitted_by;
    want_x.reviewed_at = at(11);
    want_x.review_comment = comment;
    check_same(ticket(s, x.id), want_x);
    auto want_y = y.ticket();
    want_y.status = approval_status::expired;
    want_y.expired_at = at(13 + life);
    check_same(ticket(s, y.id), want_y);
  }
}

/// The retention capability (`mcpcore::approval_store_prunable`, docs/approvals.md#retention):
/// `prune(older_than, options)` removes consumed, rejected and expired tickets whose last change
/// is before `older_than`, batch by batch, keeps everything else, and counts what it removed.
/// `make()` as for `approval_store_conformance`. Call it inside a TEST_CASE.
template <class MakeStore>
void approval_store_prune_conformance(MakeStore make) {
  namespace d = approval_store_suite_detail;
  using d::at;
  using d::consume;
  using d::lifetime;
  using d::must;
  using d::review;
  using mcpcore::approval_prune_options;
  using mcpcore::approval_status;
  using L = std::chrono::milliseconds::rep;
  const L life = lifetime.count();

  auto handle = make();
  REQUIRE(handle);
  auto& s = *handle;
  static_assert(mcpcore::approval_store_prunable<std::remove_reference_t<decltype(s)>>);

  auto fresh = d::fresh_minter(s, "n");  // a ticket of its own scope minted at `now`
  auto consumed = [&](L t) {  // consumed at(t + 2)
    const auto id = fresh(at(t));
    REQUIRE(to_string(review(s, id, "bob", approval_status::approved, at(t + 1))) == "reviewed");
    REQUIRE(to_string(consume(s, id, "alice", at(t + 2))) == "consumed");
    return id;
  };
  auto rejected = [&](L t) {  // rejected at(t + 1)
    const auto id = fresh(at(t));
    REQUIRE(to_string(review(s, id, "bob", approval_status::rejected, at(t + 1), "no")) == "reviewed");
    return id;
  };
  auto known = [&](const std::string& id) { return must(s.get(id)).has_value(); };

  SUBCASE("approvals.md/retention: prune removes old consumed, rejected and expired tickets and keeps pending, approved and younger ones") {
    const auto old_consumed = consumed(0);   // last change at(2)
    const auto old_rejected = rejected(0);   // at(1)
    const auto old_expired = fresh(at(0));   // expired at(life) below
    REQUIRE(must(s.expire(at(life), lifetime)) == 1);
    // Live tickets, however old their submission: never pruned.
    const auto old_pending = fresh(at(life + 10));
    const auto old_approved = fresh(at(life + 10));
    REQUIRE(to_string(review(s, old_approved, "bob", approval_status::approved, at(life + 11))) == "reviewed");
    // Finished after the cut: kept.
    const auto young_consumed = consumed(2 * life);
    const auto young_rejected = rejected(2 * life);
    // A ticket whose last change is exactly the cut is not before it: kept.
    const auto edge = rejected(2 * life - 101);  // rejected at(2 * life - 100)

    CHECK(must(s.prune(at(2 * life - 100), approval_prune_options{})) == 3);
    CHECK_FALSE(known(old_consumed));
    CHECK_FALSE(known(old_rejected));
    CHECK_FALSE(known(old_expired));
    CHECK(known(old_pending));
    CHECK(known(old_approved));
    CHECK(known(young_consumed));
    CHECK(known(young_rejected));
    CHECK(known(edge));
    // Pruned ids are unknown; the live ones still work.
    CHECK(to_string(consume(s, old_consumed, "alice", at(2 * life))) == "not_found");
    CHECK(to_string(consume(s, old_approved, "alice", at(life + 20))) == "consumed");
    CHECK(d::pending_ids(s, 10) == std::vector<std::string>{old_pending});
    // Once consumed (at life + 20), the formerly live ticket is finished and old: pruned next.
    CHECK(must(s.prune(at(2 * life - 100), approval_prune_options{})) == 1);
    CHECK_FALSE(known(old_approved));
    CHECK(must(s.prune(at(2 * life - 100), approval_prune_options{})) == 0);
  }

  SUBCASE("approvals.md/retention: prune works in batches and removes every eligible ticket across several of them") {
    std::vector<std::string> old;
    for (int i = 0; i < 4; ++i) old.push_back(consumed(i * 10));
    for (int i = 0; i < 3; ++i) old.push_back(rejected(i * 10));
    const auto live = fresh(at(0));
    // 7 eligible rows, batches of 2: four batches (2, 2, 2, 1).
    CHECK(must(s.prune(at(life), approval_prune_options{2})) == 7);
    for (const auto& id : old) CHECK_FALSE(known(id));
    CHECK(known(live));
    // A batch of 0 counts as 1; exactly a multiple of the batch also stops.
    const auto a = rejected(100);
    const auto b = rejected(100);
    CHECK(must(s.prune(at(life), approval_prune_options{0})) == 2);
    CHECK_FALSE(known(a));
    CHECK_FALSE(known(b));
    CHECK(known(live));
  }
}

/// The history capability (`mcpcore::approval_store_history`, docs/approvals.md#recently-reviewed):
/// `recently_reviewed(limit)` lists every ticket a reviewer decided, whatever became of it since
/// (approved, rejected, consumed, expired after approval), newest `reviewed_at` first with ties by
/// id ascending, never a pending ticket nor one that expired unreviewed, up to
/// `min(limit, max_recently_reviewed)`. `make()` as for `approval_store_conformance`. Call it
/// inside a TEST_CASE.
template <class MakeStore>
void approval_store_history_conformance(MakeStore make) {
  namespace d = approval_store_suite_detail;
  using d::at;
  using d::check_same;
  using d::consume;
  using d::lifetime;
  using d::must;
  using d::review;
  using d::ticket;
  using mcpcore::approval_status;
  using mcpcore::approval_ticket;
  using mcpcore::max_recently_reviewed;
  using L = std::chrono::milliseconds::rep;
  const L life = lifetime.count();

  auto handle = make();
  REQUIRE(handle);
  auto& s = *handle;
  static_assert(mcpcore::approval_store_history<std::remove_reference_t<decltype(s)>>);

  auto fresh = d::fresh_minter(s, "h");  // a ticket of its own scope minted at `now`
  auto ids_of = [](const std::vector<approval_ticket>& list) {
    std::vector<std::string> ids;
    ids.reserve(list.size());
    for (const auto& t : list) ids.push_back(t.id);
    return ids;
  };
  auto listed = [&](std::size_t limit) { return ids_of(must(s.recently_reviewed(limit))); };

  SUBCASE("approvals.md/recently-reviewed: an empty store, or one holding only pending tickets, lists nothing") {
    CHECK(must(s.recently_reviewed(10)).empty());
    (void)fresh(at(0));
    (void)fresh(at(1));
    CHECK(must(s.recently_reviewed(10)).empty());
    CHECK(must(s.recently_reviewed(max_recently_reviewed)).empty());
  }

  SUBCASE("approvals.md/recently-reviewed: decided tickets newest review first, ties by id, whatever became of them, "
          "never pending or unreviewed-expired ones") {
    // Decided, then aged: approved at(1) and expired by the sweep at(1 + life), unconsumed.
    const auto aged = fresh(at(0));
    REQUIRE(to_string(review(s, aged, "bob", approval_status::approved, at(1))) == "reviewed");
    // Approved at(2), then consumed at(3): consumption keeps it listed at its review time.
    const auto used = fresh(at(0));
    REQUIRE(to_string(review(s, used, "carol", approval_status::approved, at(2))) == "reviewed");
    REQUIRE(to_string(consume(s, used, "alice", at(3))) == "consumed");
    // Rejected at(4).
    const auto refused = fresh(at(0));
    REQUIRE(to_string(review(s, refused, "bob", approval_status::rejected, at(4), "not now")) == "reviewed");
    // Never reviewed, expired by the same sweep: no reviewer, not listed.
    const auto lapsed = fresh(at(0));
    REQUIRE(must(s.expire(at(1 + life), lifetime)) == 2);  // `aged` and `lapsed`
    REQUIRE(to_string(ticket(s, aged).status) == "expired");
    REQUIRE(to_string(ticket(s, lapsed).status) == "expired");
    // After the sweep: approved at(life + 20), two decided in the same millisecond at(life + 30),
    // one left pending.
    const auto armed = fresh(at(life + 10));
    REQUIRE(to_string(review(s, armed, "bob", approval_status::approved, at(life + 20))) == "reviewed");
    const auto tie_a = fresh(at(life + 10));
    const auto tie_b = fresh(at(life + 10));
    REQUIRE(to_string(review(s, tie_a, "carol", approval_status::approved, at(life + 30))) == "reviewed");
    REQUIRE(to_string(review(s, tie_b, "dave", approval_status::rejected, at(life + 30))) == "reviewed");
    const auto waiting = fresh(at(life + 10));
    // Failed reviews decide nothing: a self-review of the pending ticket, a review of a decided one.
    REQUIRE(to_string(review(s, waiting, "alice", approval_status::approved, at(life + 40))) == "self_review");
    REQUIRE(to_string(review(s, refused, "dave", approval_status::approved, at(life + 40))) == "already_reviewed");

    const std::string first_tie = tie_a < tie_b ? tie_a : tie_b;
    const std::string second_tie = tie_a < tie_b ? tie_b : tie_a;
    const std::vector<std::string> newest_first{first_tie, second_tie, armed, refused, used, aged};
    const auto all = must(s.recently_reviewed(100));
    CHECK(ids_of(all) == newest_first);
    // Each entry is the ticket as stored: who decided, when, and what became of it.
    for (const auto& t : all) check_same(t, ticket(s, t.id));
    REQUIRE(all.size() == newest_first.size());
    CHECK(all[2].reviewed_by == "bob");
    CHECK(to_string(all[2].status) == "approved");
    CHECK_FALSE(all[2].consumed_at.has_value());
    CHECK(to_string(all[3].status) == "rejected");
    CHECK(all[3].review_comment == "not now");
    CHECK(all[4].reviewed_by == "carol");
    CHECK(to_string(all[4].status) == "approved");
    CHECK(d::show(all[4].consumed_at) == d::show(at(3)));
    CHECK(to_string(all[5].status) == "expired");
    CHECK(d::show(all[5].reviewed_at) == d::show(at(1)));
    CHECK(d::show(all[5].expired_at) == d::show(at(1 + life)));

    // The limit: a prefix of the same order; 0 lists nothing.
    CHECK(listed(0).empty());
    CHECK(listed(1) == std::vector<std::string>{first_tie});
    CHECK(listed(4) == std::vector<std::string>(newest_first.begin(), newest_first.begin() + 4));
    CHECK(listed(newest_first.size()) == newest_first);
    CHECK(listed(static_cast<std::size_t>(-1)) == newest_first);
    // Listing changes nothing.
    CHECK(listed(100) == newest_first);
    CHECK(d::pending_ids(s, 10) == std::vector<std::string>{waiting});
  }

  SUBCASE("approvals.md/recently-reviewed: a limit above max_recently_reviewed is cut to it") {
    // One more decided ticket than the cap, each reviewed a millisecond after the last.
    std::vector<std::string> ids;
    for (std::size_t i = 0; i <= max_recently_reviewed; ++i) {
      ids.push_back(fresh(at(0)));
      const auto decision = i % 2 == 0 ? approval_status::approved : approval_status::rejected;
      REQUIRE(to_string(review(s, ids.back(), "bob", decision, at(1 + static_cast<L>(i)))) == "reviewed");
    }
    const std::vector<std::string> newest(ids.rbegin(), ids.rbegin() + static_cast<std::ptrdiff_t>(max_recently_reviewed));
    for (const std::size_t limit : {max_recently_reviewed + 1, max_recently_reviewed * 10, static_cast<std::size_t>(-1)}) {
      CAPTURE(limit);
      const auto got = listed(limit);
      CHECK(got.size() == max_recently_reviewed);
      CHECK(got == newest);  // the oldest decision, ids[0], is the one left out
    }
    CHECK(listed(max_recently_reviewed) == newest);
    CHECK(listed(max_recently_reviewed - 1).size() == max_recently_reviewed - 1);
  }
}

/// The at-most-once race of `approval_store` requirement 1
/// (docs/approvals.md#what-the-machine-checks-in-order, #guarantees): for each of a few tickets,
/// minted and approved, `threads` threads released together by one latch each call `consume` with
/// the same consumer. Exactly one sees `consumed`, all the others `not_consumable`, and the ticket
/// records the winner's time once.
///
/// `make_connection()` returns an owning pointer-like handle (`std::unique_ptr<S>` or
/// `std::shared_ptr<S>`) to the SAME underlying store on every call: a new connection to it
/// (a database file opened again: the race then crosses connections, as processes do) or a
/// shared handle to one object (a `std::shared_ptr` copy, for an in-process store). All calls
/// happen on the calling thread: per ticket, one handle mints and approves, then one handle
/// per thread is made before the threads start; every handle is destroyed on the calling
/// thread after the threads joined. The store may already hold tickets: each ticket has a fresh
/// id and its own scope, and the caps are large. A store error in a racing thread fails the
/// test (a store shared by connections must wait for its locks, e.g. with a busy timeout).
template <class MakeConnection>
void approval_store_consume_race(MakeConnection make_connection, int threads) {
  namespace d = approval_store_suite_detail;
  using mcpcore::approval_consume_request;
  using mcpcore::approval_consume_status;
  using std::chrono::milliseconds;
  REQUIRE(threads >= 2);
  const auto n = static_cast<std::size_t>(threads);
  constexpr int tickets = 4;

  for (int round = 0; round < tickets; ++round) {
    CAPTURE(round);
    auto setup = make_connection();
    REQUIRE(setup);
    d::mint_spec m;
    m.submitted_by = "racer";
    m.scope = R"({"race":")" + m.id + R"("})";
    m.per_submitter_cap = 1'000'000;
    m.global_cap = 1'000'000;
    d::mint_created(*setup, m);
    REQUIRE(to_string(d::review(*setup, m.id, "race-approver", mcpcore::approval_status::approved, d::at(1))) ==
            "reviewed");

    std::vector<decltype(make_connection())> handles;
    handles.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      handles.push_back(make_connection());
      REQUIRE(handles.back());
    }
    std::vector<mcpcore::result<approval_consume_status>> outcomes(n);
    std::vector<char> threw(n, 0);
    {
      std::latch start{static_cast<std::ptrdiff_t>(n)};
      std::vector<std::jthread> workers;
      workers.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        workers.emplace_back([&, i] {
          // Each racer consumes at its own time, so the stored consumed_at names the winner.
          const approval_consume_request c{m.id, m.submitted_by, m.origin,
                                           d::at(100 + static_cast<milliseconds::rep>(i)), d::lifetime};
          start.arrive_and_wait();
          try {
            outcomes[i] = handles[i]->consume(c);
          } catch (...) {
            threw[i] = 1;
          }
        });
      }
    }  // joined

    std::size_t winners = 0;
    std::size_t winner = n;
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(i);
      REQUIRE_FALSE(threw[i]);
      const auto& o = outcomes[i];
      if (!o.has_value()) FAIL("approval store error in a racing consume: " << o.error().message());
      if (*o == approval_consume_status::consumed) {
        ++winners;
        winner = i;
      } else {
        CHECK(to_string(*o) == "not_consumable");
      }
    }
    CHECK(winners == 1);
    REQUIRE(winner < n);
    const auto t = d::ticket(*setup, m.id);
    CHECK(to_string(t.status) == "approved");
    CHECK(d::show(t.consumed_at) == d::show(d::at(100 + static_cast<milliseconds::rep>(winner))));
    CHECK(t.consumed_by == m.submitted_by);
    CHECK(to_string(d::consume(*setup, m.id, m.submitted_by, d::at(1000))) == "not_consumable");
    handles.clear();
  }
}

/// When each racing process of `approval_store_consume_process_race` opens its store.
enum class race_connect : std::uint8_t {
  after_start,   ///< after the start: the opening races too (a file store's open is cheap)
  before_start,  ///< before the start: the race is the consume alone (a server's connect is slow)
};

/// The at-most-once race of `approval_store` requirement 1 across processes
/// (docs/approvals.md#guarantees): one ticket, minted and approved, then `processes` forked
/// children, released together by one start gate, each consume it through a store of its own.
/// Exactly one child sees `consumed`, every other `not_consumable`, and the ticket records one
/// consume, by its submitter.
///
/// `open()` returns `mcpcore::result<S>`, a new connection to the SAME underlying store (a
/// database file, a connection string) on every call. The calling process holds no connection
/// when it forks (a child must not inherit one), and no other thread runs. Call it inside a
/// TEST_CASE.
template <class Open>
void approval_store_consume_process_race(Open open, int processes, race_connect when) {
  namespace d = approval_store_suite_detail;
  REQUIRE(processes >= 2);
  d::mint_spec m;
  {
    auto setup = open();
    REQUIRE_MESSAGE(setup.has_value(), (setup ? std::string{} : setup.error().message()));
    d::mint_created(*setup, m);
    REQUIRE(to_string(d::review(*setup, m.id, "bob", mcpcore::approval_status::approved, d::at(1))) == "reviewed");
  }  // closed before the fork
  const mcpcore::approval_consume_request request{m.id, m.submitted_by, m.origin, d::at(100), d::lifetime};
  // A child's exit code: 0 consumed, 1 not_consumable, 10 no store, 11 a store error, 12 another answer.
  const auto consume_once = [&](auto& store) {
    const auto r = store.consume(request);
    if (!r) return 11;
    if (*r == mcpcore::approval_consume_status::consumed) return 0;
    return *r == mcpcore::approval_consume_status::not_consumable ? 1 : 12;
  };
  std::vector<pid_t> children;
  {
    test_process::start_gate gate;
    for (int i = 0; i < processes; ++i) {
      children.push_back(test_process::spawn([&] {
        if (when == race_connect::before_start) {
          auto s = open();
          gate.wait();
          return s ? consume_once(*s) : 10;
        }
        gate.wait();
        auto s = open();
        return s ? consume_once(*s) : 10;
      }));
    }
    if (when == race_connect::before_start) std::this_thread::sleep_for(std::chrono::milliseconds{300});  // connect
    gate.open();
  }
  int winners = 0;
  int losers = 0;
  for (const pid_t pid : children) {
    const int code = test_process::wait_exit(pid);
    CAPTURE(code);
    CHECK((code == 0 || code == 1));
    winners += code == 0 ? 1 : 0;
    losers += code == 1 ? 1 : 0;
  }
  CHECK(winners == 1);
  CHECK(losers == processes - 1);
  auto s = open();
  REQUIRE_MESSAGE(s.has_value(), (s ? std::string{} : s.error().message()));
  const auto t = d::ticket(*s, m.id);
  CHECK(t.consumed_at.has_value());
  CHECK(t.consumed_by == m.submitted_by);
}

}  // namespace mcpcore_test

#endif  // MCPCORE_TESTS_SUPPORT_APPROVAL_STORE_SUITE_HPP
