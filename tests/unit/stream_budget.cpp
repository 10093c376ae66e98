// SPDX-License-Identifier: Apache-2.0
// Tests of the stream budget (docs/sessions.md#get-attach-replay-resume, #takeover,
// #the-stream-budget: 128 global, 4 per principal per surface).
#include <mcpcore/session/stream_budget.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::string_view_literals;

namespace {

// Takes `n` enforce_caps leases, each of which must succeed.
std::vector<stream_lease> take(stream_budget& b, std::string_view surface, std::string_view principal,
                               std::size_t cap, std::size_t n) {
  std::vector<stream_lease> leases;
  for (std::size_t i = 0; i < n; ++i) {
    auto r = b.try_acquire(surface, principal, cap);
    REQUIRE(r.has_value());
    CHECK(static_cast<bool>(*r));
    leases.push_back(std::move(*r));
  }
  return leases;
}

}  // namespace

TEST_SUITE("stream_budget") {
  TEST_CASE("sessions.md: defaults are 128 global, surfaces are mcp_get and mcp_post") {
    const stream_budget b;
    CHECK(b.options().global_cap == 128);
    CHECK(stream_budget_options{}.global_cap == 128);
    CHECK(stream_surface_get == "mcp_get");
    CHECK(stream_surface_post == "mcp_post");
    CHECK(b.in_use() == 0);
    CHECK(b.entries() == 0);
    static_assert(!std::is_copy_constructible_v<stream_lease>);
    static_assert(std::is_nothrow_move_constructible_v<stream_lease>);
    static_assert(std::is_nothrow_move_assignable_v<stream_lease>);
    static_assert(!std::is_copy_constructible_v<stream_budget>);
    static_assert(!std::is_move_constructible_v<stream_budget>);
  }

  TEST_CASE("sessions.md/the-stream-budget: reject reasons are the wire strings") {
    CHECK(to_string(stream_budget_reject::global_stream_cap) == "global_stream_cap");
    CHECK(to_string(stream_budget_reject::per_principal_stream_cap) == "per_principal_stream_cap");
    CHECK(to_string(static_cast<stream_budget_reject>(0)).empty());
  }

  TEST_CASE("sessions.md/the-stream-budget: enforce_caps is refused exactly at the global cap, changing nothing") {
    stream_budget b{stream_budget_options{3}};
    auto held = take(b, stream_surface_get, "alice", 0, 2);
    auto bob = take(b, stream_surface_post, "bob", 0, 1);  // the third slot: at the cap, not over it
    CHECK(b.in_use() == 3);
    CHECK(b.entries() == 2);

    const auto r = b.try_acquire(stream_surface_get, "carol", 4);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::global_stream_cap);
    CHECK(b.in_use() == 3);
    CHECK(b.entries() == 2);  // no entry left behind for carol
    CHECK(b.in_use(stream_surface_get, "carol") == 0);
    CHECK(b.in_use(stream_surface_get, "alice") == 2);

    bob.clear();  // one slot back: the next enforce_caps acquire fits again
    CHECK(b.in_use() == 2);
    auto again = b.try_acquire(stream_surface_get, "carol", 4);
    CHECK(again.has_value());
    CHECK(b.in_use() == 3);
  }

  TEST_CASE("sessions.md/the-stream-budget: global_cap 0 refuses every enforce_caps acquire") {
    stream_budget b{stream_budget_options{0}};
    const auto r = b.try_acquire(stream_surface_get, "alice", 0);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::global_stream_cap);
    CHECK(b.in_use() == 0);
    CHECK(b.entries() == 0);
  }

  TEST_CASE("sessions.md/the-stream-budget: the per-principal cap is per (surface, principal)") {
    stream_budget b;
    auto alice_get = take(b, stream_surface_get, "alice", 4, 4);
    CHECK(b.in_use(stream_surface_get, "alice") == 4);

    const auto over = b.try_acquire(stream_surface_get, "alice", 4);
    REQUIRE_FALSE(over.has_value());
    CHECK(over.error() == stream_budget_reject::per_principal_stream_cap);
    CHECK(b.in_use() == 4);
    CHECK(b.in_use(stream_surface_get, "alice") == 4);
    CHECK(b.entries() == 1);

    SUBCASE("the same principal on another surface has its own count") {
      auto alice_post = take(b, stream_surface_post, "alice", 4, 4);
      CHECK(b.in_use(stream_surface_post, "alice") == 4);
      CHECK(b.entries() == 2);
      const auto r = b.try_acquire(stream_surface_post, "alice", 4);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == stream_budget_reject::per_principal_stream_cap);
    }
    SUBCASE("another principal on the same surface has its own count") {
      auto bob_get = take(b, stream_surface_get, "bob", 4, 4);
      CHECK(b.in_use(stream_surface_get, "bob") == 4);
      CHECK(b.in_use() == 8);
    }
    SUBCASE("the cap is the caller's per call: a larger one admits more") {
      auto r = b.try_acquire(stream_surface_get, "alice", 5);
      CHECK(r.has_value());
      CHECK(b.in_use(stream_surface_get, "alice") == 5);
    }
    SUBCASE("releasing one of the principal's slots admits one more") {
      alice_get.back().release();
      CHECK(b.in_use(stream_surface_get, "alice") == 3);
      auto r = b.try_acquire(stream_surface_get, "alice", 4);
      CHECK(r.has_value());
      CHECK(b.in_use(stream_surface_get, "alice") == 4);
    }
  }

  TEST_CASE("sessions.md/the-stream-budget: per-principal cap 0 is unlimited, the global cap still applies") {
    stream_budget b{stream_budget_options{10}};
    auto held = take(b, stream_surface_get, "alice", 0, 10);
    CHECK(b.in_use(stream_surface_get, "alice") == 10);
    const auto r = b.try_acquire(stream_surface_get, "alice", 0);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::global_stream_cap);
    CHECK(b.in_use() == 10);
  }

  TEST_CASE("sessions.md/the-stream-budget: the global cap is checked before the per-principal cap") {
    stream_budget b{stream_budget_options{2}};
    auto held = take(b, stream_surface_get, "alice", 2, 2);  // both caps reached at once
    const auto r = b.try_acquire(stream_surface_get, "alice", 2);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::global_stream_cap);
    CHECK(b.in_use() == 2);
    CHECK(b.in_use(stream_surface_get, "alice") == 2);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/takeover: a takeover is never refused but is counted") {
    stream_budget b{stream_budget_options{2}};
    auto held = take(b, stream_surface_get, "alice", 2, 2);  // global and per-principal caps reached

    auto t1 = b.try_acquire(stream_surface_get, "alice", 2, stream_budget_mode::takeover);
    REQUIRE(t1.has_value());
    auto t2 = b.try_acquire(stream_surface_get, "alice", 2, stream_budget_mode::takeover);
    REQUIRE(t2.has_value());
    auto t3 = b.try_acquire(stream_surface_post, "bob", 1, stream_budget_mode::takeover);  // new entry
    REQUIRE(t3.has_value());
    CHECK(b.in_use() == 5);  // over the global cap
    CHECK(b.in_use(stream_surface_get, "alice") == 4);  // over the per-principal cap
    CHECK(b.entries() == 2);

    // later enforce_caps traffic sees the higher count: refused until enough slots come back
    held.clear();
    CHECK(b.in_use() == 3);
    auto r = b.try_acquire(stream_surface_get, "carol", 0);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::global_stream_cap);
    t1->release();
    CHECK(b.in_use() == 2);
    r = b.try_acquire(stream_surface_get, "carol", 0);
    REQUIRE_FALSE(r.has_value());
    t2->release();
    CHECK(b.in_use() == 1);
    r = b.try_acquire(stream_surface_get, "carol", 0);
    CHECK(r.has_value());
    CHECK(b.in_use() == 2);
  }

  TEST_CASE("sessions.md/the-stream-budget: a takeover counts against the per-principal cap of later first attaches") {
    stream_budget b;
    auto held = take(b, stream_surface_get, "alice", 4, 3);
    auto t = b.try_acquire(stream_surface_get, "alice", 4, stream_budget_mode::takeover);
    REQUIRE(t.has_value());
    const auto r = b.try_acquire(stream_surface_get, "alice", 4);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == stream_budget_reject::per_principal_stream_cap);
  }

  TEST_CASE("sessions.md/takeover: release returns exactly one slot and is idempotent") {
    stream_budget b;
    auto held = take(b, stream_surface_get, "alice", 4, 3);
    held[0].release();
    CHECK_FALSE(static_cast<bool>(held[0]));
    CHECK(b.in_use() == 2);
    CHECK(b.in_use(stream_surface_get, "alice") == 2);
    held[0].release();  // again: nothing
    CHECK(b.in_use() == 2);
    held.erase(held.begin());  // destroying a released lease: nothing
    CHECK(b.in_use() == 2);
    CHECK(b.in_use(stream_surface_get, "alice") == 2);
    CHECK(static_cast<bool>(held[0]));
  }

  TEST_CASE("sessions.md/the-stream-budget: destruction releases the slot (RAII)") {
    stream_budget b;
    {
      auto r = b.try_acquire(stream_surface_get, "alice", 4);
      REQUIRE(r.has_value());
      CHECK(b.in_use() == 1);
    }
    CHECK(b.in_use() == 0);
    CHECK(b.entries() == 0);
  }

  TEST_CASE("sessions.md/the-stream-budget: a default lease holds nothing") {
    stream_lease l;
    CHECK_FALSE(static_cast<bool>(l));
    l.release();
    CHECK_FALSE(static_cast<bool>(l));
  }

  TEST_CASE("sessions.md/the-stream-budget: moves transfer the slot, the moved-from lease releases nothing") {
    stream_budget b;
    auto r = b.try_acquire(stream_surface_get, "alice", 4);
    REQUIRE(r.has_value());

    SUBCASE("move construction") {
      stream_lease moved{std::move(*r)};
      CHECK(static_cast<bool>(moved));
      CHECK_FALSE(static_cast<bool>(*r));  // NOLINT(bugprone-use-after-move): checking the moved-from state
      r->release();
      CHECK(b.in_use() == 1);
      moved.release();
      CHECK(b.in_use() == 0);
      CHECK(b.entries() == 0);
    }
    SUBCASE("move assignment into an empty lease") {
      stream_lease target;
      target = std::move(*r);
      CHECK(static_cast<bool>(target));
      CHECK_FALSE(static_cast<bool>(*r));  // NOLINT(bugprone-use-after-move)
      r->release();
      CHECK(b.in_use() == 1);
      target.release();
      CHECK(b.in_use() == 0);
    }
    SUBCASE("move assignment over a held lease releases the old slot first") {
      auto other = b.try_acquire(stream_surface_post, "bob", 4);
      REQUIRE(other.has_value());
      CHECK(b.in_use() == 2);
      *other = std::move(*r);
      CHECK(b.in_use() == 1);
      CHECK(b.in_use(stream_surface_post, "bob") == 0);
      CHECK(b.in_use(stream_surface_get, "alice") == 1);
      CHECK(b.entries() == 1);
      other->release();
      CHECK(b.in_use() == 0);
      CHECK(b.entries() == 0);
    }
    SUBCASE("self move assignment keeps the slot") {
      stream_lease& self = *r;
      *r = std::move(self);
      CHECK(static_cast<bool>(*r));
      CHECK(b.in_use() == 1);
    }
    SUBCASE("a lease moved between budgets' leases returns to its own budget") {
      stream_budget other_budget;
      auto o = other_budget.try_acquire(stream_surface_get, "alice", 4);
      REQUIRE(o.has_value());
      *o = std::move(*r);
      CHECK(other_budget.in_use() == 0);
      CHECK(b.in_use() == 1);
      o->release();
      CHECK(b.in_use() == 0);
    }
  }

  TEST_CASE("sessions.md/the-stream-budget: entries are erased at zero (bounded memory)") {
    stream_budget b;
    {
      std::vector<stream_lease> leases;
      for (int i = 0; i < 50; ++i) {
        auto r = b.try_acquire(stream_surface_get, "p" + std::to_string(i), 4);
        REQUIRE(r.has_value());
        leases.push_back(std::move(*r));
      }
      CHECK(b.entries() == 50);
      CHECK(b.in_use() == 50);
      leases.resize(10);
      CHECK(b.entries() == 10);
    }
    CHECK(b.entries() == 0);
    CHECK(b.in_use() == 0);
    CHECK(b.in_use(stream_surface_get, "p0") == 0);
  }

  TEST_CASE("sessions.md/the-stream-budget: in_use(surface, principal) counts one pair only") {
    stream_budget b;
    auto a = take(b, stream_surface_get, "alice", 0, 3);
    auto c = take(b, stream_surface_post, "alice", 0, 2);
    auto d = take(b, "api_events", "bob", 16, 1);
    CHECK(b.in_use(stream_surface_get, "alice") == 3);
    CHECK(b.in_use(stream_surface_post, "alice") == 2);
    CHECK(b.in_use("api_events", "bob") == 1);
    CHECK(b.in_use(stream_surface_get, "bob") == 0);
    CHECK(b.in_use("unknown", "alice") == 0);
    CHECK(b.in_use() == 6);
    CHECK(b.entries() == 3);
  }

  TEST_CASE("sessions.md/the-stream-budget: empty strings are keys, separators in the parts cannot collide") {
    stream_budget b;
    // empty surface and/or principal are ordinary, distinct keys
    auto e1 = take(b, "", "", 1, 1);
    auto e2 = take(b, "", "x", 1, 1);
    auto e3 = take(b, "x", "", 1, 1);
    CHECK(b.entries() == 3);
    CHECK(b.in_use("", "") == 1);
    CHECK(b.in_use("", "x") == 1);
    CHECK(b.in_use("x", "") == 1);

    // a NUL-separated key would make these two pairs one entry
    const auto a_surface = "a"sv;
    const auto a_principal = "b\0c"sv;
    const auto b_surface = "a\0b"sv;
    const auto b_principal = "c"sv;
    REQUIRE(a_principal.size() == 3);
    REQUIRE(b_surface.size() == 3);
    auto first = b.try_acquire(a_surface, a_principal, 1);
    REQUIRE(first.has_value());
    auto second = b.try_acquire(b_surface, b_principal, 1);  // cap 1: a shared entry would refuse
    REQUIRE(second.has_value());
    CHECK(b.in_use(a_surface, a_principal) == 1);
    CHECK(b.in_use(b_surface, b_principal) == 1);
    CHECK(b.entries() == 5);

    // nor can a length prefix be forged: ("1:a", "b") against ("1", ":ab") and ("", "1:ab")
    auto p1 = take(b, "1:a", "b", 1, 1);
    auto p2 = take(b, "1", ":ab", 1, 1);
    auto p3 = take(b, "", "1:ab", 1, 1);
    auto p4 = take(b, "1", "a", 1, 1);
    CHECK(b.entries() == 9);

    first->release();
    CHECK(b.in_use(a_surface, a_principal) == 0);
    CHECK(b.in_use(b_surface, b_principal) == 1);
  }
}
