// SPDX-License-Identifier: Apache-2.0
// Tests of the in-memory approval store: the approval_store conformance suite
// (docs/approvals.md#the-flow), the prune and history suites, its history bound and its own errors.
#include <mcpcore/stores/memory_approval_store.hpp>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json.hpp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

using namespace mcpcore;
namespace suite = mcpcore_test::approval_store_suite_detail;

static_assert(approval_store<memory_approval_store>);
static_assert(approval_store_history<memory_approval_store>);

TEST_CASE("memory_approval_store passes the approval_store conformance suite (concepts/approval_store.md/valid-expressions, approvals.md/the-flow, approvals.md/what-the-machine-checks-in-order, approvals.md/lifetime)") {
  mcpcore_test::approval_store_conformance([] { return std::make_unique<memory_approval_store>(); });
}

TEST_CASE("approvals.md/retention: memory_approval_store passes the prune suite") {
  mcpcore_test::approval_store_prune_conformance([] { return std::make_unique<memory_approval_store>(); });
}

TEST_CASE("approvals.md/recently-reviewed: memory_approval_store passes the history suite") {
  mcpcore_test::approval_store_history_conformance([] { return std::make_unique<memory_approval_store>(); });
}

TEST_CASE("approvals.md/recently-reviewed: a memory ticket forgotten by max_history or removed by prune is no longer "
          "listed, the others keep their order") {
  memory_approval_store s{memory_approval_store_options{.max_history = 2}};
  int next = 0;
  const auto decided = [&](approval_status decision, long ms) {
    suite::mint_spec m;
    m.scope = R"({"n":)" + std::to_string(next++) + "}";
    const auto id = suite::mint_created(s, m);
    REQUIRE(to_string(suite::review(s, id, "bob", decision, suite::at(ms))) == "reviewed");
    return id;
  };
  const auto listed = [&] {
    std::vector<std::string> ids;
    for (const auto& t : suite::must(s.recently_reviewed(100))) ids.push_back(t.id);
    return ids;
  };
  // Approved unconsumed tickets are never forgotten; finished ones beyond max_history are.
  const auto armed = decided(approval_status::approved, 1);
  const auto r1 = decided(approval_status::rejected, 2);
  const auto r2 = decided(approval_status::rejected, 3);
  CHECK(listed() == std::vector<std::string>{r2, r1, armed});
  const auto r3 = decided(approval_status::rejected, 4);  // r1 finished first: forgotten
  CHECK_FALSE(suite::must(s.get(r1)).has_value());
  CHECK(listed() == std::vector<std::string>{r3, r2, armed});
  // Consumption finishes `armed` (r2 is forgotten): it stays listed at its review time.
  REQUIRE(to_string(suite::consume(s, armed, "alice", suite::at(5))) == "consumed");
  CHECK(listed() == std::vector<std::string>{r3, armed});
  // Prune removes the finished tickets changed before at(5): r3 (rejected at 4), not armed
  // (consumed at 5).
  CHECK(suite::must(s.prune(suite::at(5))) == 1);
  CHECK(listed() == std::vector<std::string>{armed});
  CHECK(suite::must(s.prune(suite::at(6))) == 1);
  CHECK(listed().empty());
  CHECK(s.size() == 0);
  // The index is empty as well as the map: new decisions list alone.
  const auto fresh = decided(approval_status::approved, 7);
  CHECK(listed() == std::vector<std::string>{fresh});
}

TEST_CASE("memory_approval_store: size() counts pending, approved and finished tickets") {
  memory_approval_store s;
  CHECK(s.size() == 0);
  const suite::mint_spec a;
  suite::mint_created(s, a);
  CHECK(s.size() == 1);
  CHECK(to_string(suite::mint(s, suite::mint_spec{}).status) == "deduped");
  CHECK(s.size() == 1);  // dedup stores nothing
  suite::mint_spec capped;
  capped.scope = R"({"a":2})";
  capped.per_submitter_cap = 1;
  CHECK(to_string(suite::mint(s, capped).status) == "submitter_cap");
  CHECK(s.size() == 1);  // nor does a refusal
  suite::mint_spec b;
  b.submitted_by = "bob";
  suite::mint_created(s, b);
  REQUIRE(to_string(suite::review(s, a.id, "bob", approval_status::approved, suite::at(1))) == "reviewed");
  REQUIRE(to_string(suite::consume(s, a.id, "alice", suite::at(2))) == "consumed");
  REQUIRE(suite::must(s.expire(suite::at(suite::lifetime.count()), suite::lifetime)) == 1);
  CHECK(s.size() == 2);  // expiry and consumption keep the tickets
}

TEST_CASE("memory_approval_store: max_history forgets the earliest-finished tickets, never pending or approved ones") {
  memory_approval_store s{memory_approval_store_options{.max_history = 2}};
  const auto mint_n = [&](int n, suite::approval_time now = suite::t0) {
    suite::mint_spec m;
    m.scope = R"({"n":)" + std::to_string(n) + "}";
    m.now = now;
    return suite::mint_created(s, m);
  };
  const auto reject = [&](const std::string& id, long ms) {
    REQUIRE(to_string(suite::review(s, id, "bob", approval_status::rejected, suite::at(ms))) == "reviewed");
  };
  const auto known = [&](const std::string& id) { return suite::must(s.get(id)).has_value(); };

  const auto p1 = mint_n(1);
  const auto p2 = mint_n(2);
  const auto armed = mint_n(3);
  REQUIRE(to_string(suite::review(s, armed, "bob", approval_status::approved, suite::at(1))) == "reviewed");
  // Submitted in the order old, young; finished in the order young, old.
  const auto old = mint_n(4);
  const auto young = mint_n(5, suite::at(10));
  reject(young, 20);
  reject(old, 21);
  CHECK(s.size() == 5);
  CHECK(known(young));
  CHECK(known(old));

  const auto consumed = mint_n(6);
  REQUIRE(to_string(suite::review(s, consumed, "bob", approval_status::approved, suite::at(22))) == "reviewed");
  REQUIRE(to_string(suite::consume(s, consumed, "alice", suite::at(23))) == "consumed");
  CHECK_FALSE(known(young));  // finished first, forgotten first
  CHECK(known(old));
  CHECK(known(consumed));
  CHECK(s.size() == 5);  // p1, p2, armed + two finished
  for (const auto& id : {p1, p2, armed}) CHECK(known(id));
  std::vector<std::string> pending{p1, p2};  // same submitted_at: ordered by id
  std::sort(pending.begin(), pending.end());
  CHECK(suite::pending_ids(s, 10) == pending);

  // A forgotten ticket is unknown to every operation.
  CHECK(to_string(suite::consume(s, young, "alice", suite::at(24))) == "not_found");
  CHECK(to_string(suite::review(s, young, "bob", approval_status::approved, suite::at(24))) == "not_found");

  // Expiry finishes p1, p2 and armed: only the last two finished stay.
  REQUIRE(suite::must(s.expire(suite::at(1 + suite::lifetime.count()), suite::lifetime)) == 3);
  CHECK(s.size() == 2);
  CHECK_FALSE(known(old));
  CHECK_FALSE(known(consumed));
}

TEST_CASE("memory_approval_store: max_history 0 keeps no finished ticket, consumption stays at most once") {
  memory_approval_store s{memory_approval_store_options{.max_history = 0}};
  const suite::mint_spec a;
  suite::mint_created(s, a);
  REQUIRE(to_string(suite::review(s, a.id, "bob", approval_status::approved, suite::at(1))) == "reviewed");
  CHECK(s.size() == 1);  // approved, unconsumed: kept
  REQUIRE(to_string(suite::consume(s, a.id, "alice", suite::at(2))) == "consumed");
  CHECK(s.size() == 0);
  CHECK(to_string(suite::consume(s, a.id, "alice", suite::at(3))) == "not_found");
  CHECK(to_string(suite::mint(s, suite::mint_spec{}).status) == "created");
  CHECK(s.size() == 1);
}

TEST_CASE("memory_approval_store: a mint whose id is in use fails with internal and changes nothing (not even "
          "the sweep)") {
  memory_approval_store s;
  const suite::mint_spec a;
  suite::mint_created(s, a);
  suite::mint_spec clash;
  clash.id = a.id;
  clash.submitted_by = "bob";
  clash.now = suite::at(suite::lifetime.count());  // would expire a
  const auto r = s.mint(clash.request());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == make_error_code(approval_store_errc::internal));
  CHECK(is_permanent_store_error(r.error()));
  suite::check_same(suite::ticket(s, a.id), a.ticket());
  CHECK(s.size() == 1);
  // The same id is fine when the mint deduplicates (the id is then unused).
  suite::mint_spec dedup;
  dedup.id = a.id;
  CHECK(to_string(suite::mint(s, dedup).status) == "deduped");
}

TEST_CASE("memory_approval_store: a review decision other than approved or rejected fails with internal") {
  memory_approval_store s;
  const suite::mint_spec a;
  suite::mint_created(s, a);
  for (const auto decision : {approval_status::pending, approval_status::expired}) {
    const auto r = s.review(approval_review_request{a.id, "bob", decision, "", suite::at(1), suite::lifetime});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == make_error_code(approval_store_errc::internal));
  }
  suite::check_same(suite::ticket(s, a.id), a.ticket());
}

TEST_CASE("memory_approval_store: lifetimes at the edges of the time range do not overflow (approvals.md/lifetime)") {
  memory_approval_store s;
  const suite::mint_spec a;
  suite::mint_created(s, a);
  // A huge lifetime expires nothing, a negative one everything still in a clock.
  CHECK(suite::must(s.expire(suite::at(1), std::chrono::milliseconds::max())) == 0);
  CHECK(suite::must(s.expire(approval_time{std::chrono::milliseconds::min()}, std::chrono::milliseconds::max())) == 0);
  CHECK(suite::must(s.expire(approval_time{std::chrono::milliseconds::max()}, std::chrono::milliseconds::min())) == 1);
  CHECK(to_string(suite::ticket(s, a.id).status) == "expired");
}

// ---- the machine over this store: the server id (docs/approvals.md#several-servers) ----------------

namespace {
// The ticket `gate` minted for `caller` with `args` (which must mint or dedup).
approval_ticket minted_by(approval_service& svc, memory_approval_store& s, const principal& caller,
                          const char* args) {
  json::document doc;
  auto parsed = doc.parse(args);
  REQUIRE(parsed);
  const auto g = svc.gate("deploy", caller, *parsed);
  REQUIRE((g.verdict == approval_verdict::minted || g.verdict == approval_verdict::deduped));
  auto t = s.get(g.approval_id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  return t->value();
}
}  // namespace

TEST_CASE("approvals.md/several-servers: approval_service stamps approval_options::server_id on every ticket it mints, and "
          "a second service with another id dedups to the first ticket") {
  memory_approval_store s;
  manual_clock clock;
  approval_options o1;
  o1.server_id = "s1.example:8765";
  approval_service one{s, clock_ref<manual_clock>{clock}, o1};
  approval_options o2;
  o2.server_id = "s2.example:8765";
  approval_service two{s, clock_ref<manual_clock>{clock}, o2};
  approval_service none{s, clock_ref<manual_clock>{clock}};
  principal alice;
  alice.id = "alice";
  const auto a = minted_by(one, s, alice, R"({"n":1})");
  CHECK(a.server == "s1.example:8765");
  const auto again = minted_by(two, s, alice, R"({"n":1})");  // the retry the balancer sent elsewhere
  CHECK(again.id == a.id);
  CHECK(again.server == "s1.example:8765");
  CHECK(minted_by(two, s, alice, R"({"n":2})").server == "s2.example:8765");
  CHECK(minted_by(none, s, alice, R"({"n":3})").server.empty());
}

TEST_CASE("approvals.md/several-servers: approval_service refuses a server_id longer than max_server_id_bytes or "
          "outside printable ASCII at construction") {
  memory_approval_store s;
  CHECK(is_valid_server_id(""));
  CHECK(is_valid_server_id("host-1.example:8765 (eu)"));
  CHECK(is_valid_server_id(std::string(max_server_id_bytes, 'x')));
  CHECK_FALSE(is_valid_server_id(std::string(max_server_id_bytes + 1, 'x')));
  for (const std::string& bad : {std::string(max_server_id_bytes + 1, 'x'), std::string{"s1\n"},
                                 std::string{"tab\there"}, std::string{"del\x7f"}, std::string{"caf\xC3\xA9"},
                                 std::string{"nul\0", 4}}) {
    CAPTURE(bad);
    approval_options o;
    o.server_id = bad;
    CHECK_FALSE(is_valid_server_id(bad));
    CHECK_THROWS_AS(approval_service(s, o), std::invalid_argument);
  }
  approval_options ok;
  ok.server_id = std::string(max_server_id_bytes, '~');
  approval_service svc{s, ok};
  CHECK(svc.options().server_id.size() == max_server_id_bytes);
}
