// SPDX-License-Identifier: Apache-2.0
// Tests of the approval HTTP endpoint: status URL, approve/reject, RBAC and assurance
// (docs/approvals.md#lifetime, #every-answer-of-the-machine, #the-approver-tools).
#include <mcpcore/governance/approval_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/approval_tickets.hpp"

#include "archetypes.hpp"
#include "support/wire_fixture.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/retry.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <expected>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

// ---- principals ---------------------------------------------------------------------------------

using approval_tickets::make_principal;

// The submitter: an MCP agent's service token, not an approver.
const principal alice = make_principal("alice", principal_kind::service, false);
// Approvers: human-interactive, assured, with the approver role.
const principal bob = make_principal("bob", principal_kind::human_interactive, true, {"approver"});
const principal carol = make_principal("carol", principal_kind::human_interactive, true, {"approver"});
// Holders of the approver role who fail assess_approver (docs/approvals.md#the-approver-tools).
const principal service_approver = make_principal("svc", principal_kind::service, true, {"approver"});
const principal engine_approver = make_principal("engine", principal_kind::engine, true, {"approver"});
const principal unassured_human = make_principal("erin", principal_kind::human_interactive, false, {"approver"});
// A human with no grant at all.
const principal mallory = make_principal("mallory", principal_kind::human_interactive, true, {"viewer"});

using approval_tickets::approvers;

// ---- ids and scopes -------------------------------------------------------------------------------

constexpr std::string_view id1 = "0123456789abcdef0123456789abcdef";
constexpr std::string_view id2 = "fedcba9876543210fedcba9876543210";
constexpr std::string_view unknown_id = "00000000000000000000000000000000";
constexpr std::string_view scope_x = R"({"tag":"x"})";

// ---- a store whose faults the test chooses --------------------------------------------------------

// A memory_approval_store that counts the calls it gets and fails `get` or `review` with the
// codes the test sets.
struct faulty_store {
  memory_approval_store inner;
  std::error_code get_error{};
  std::error_code review_error{};
  bool fail_get_only_after_review = false;  // `get` fails only once a review succeeded
  std::atomic<int> gets{0};
  std::atomic<int> reviews{0};
  std::atomic<bool> reviewed{false};

  result<approval_mint_result> mint(const approval_mint_request& m) { return inner.mint(m); }
  result<std::optional<approval_ticket>> get(std::string_view id) {
    ++gets;
    if (get_error && (!fail_get_only_after_review || reviewed.load())) return std::unexpected(get_error);
    return inner.get(id);
  }
  result<approval_consume_status> consume(const approval_consume_request& c) { return inner.consume(c); }
  result<approval_review_status> review(const approval_review_request& r) {
    ++reviews;
    if (review_error) return std::unexpected(review_error);
    auto out = inner.review(r);
    if (out && *out == approval_review_status::reviewed) reviewed = true;
    return out;
  }
  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) {
    return inner.expire(now, lifetime);
  }
  result<std::vector<approval_ticket>> pending(std::size_t limit) { return inner.pending(limit); }
};
static_assert(approval_store<faulty_store>);

// ---- fixture ---------------------------------------------------------------------------------

// A manual clock at 2026-01-01T00:00:01.234Z, a store, a service on both, and an endpoint with
// the role table above.
template <class Store = memory_approval_store>
struct basic_fixture {
  manual_clock clock;
  Store store;
  approval_service service;
  approval_endpoint endpoint;

  explicit basic_fixture(approval_endpoint_options eo = {}, approval_options so = {})
      : service(store, clock_ref{clock}, std::move(so)), endpoint(service, approvers(), std::move(eo)) {
    clock.advance(1234ms);
  }

  // Mints a pending ticket directly in the store (as the MCP surface would).
  void mint(std::string_view id, std::string_view submitter = "alice", std::string_view scope = scope_x,
            std::string_view definition_id = "mcp.delete_tag") {
    approval_tickets::mint_pending(store, service, id, submitter, scope, definition_id);
  }

  approval_ticket ticket(std::string_view id) {
    auto t = service.get(id);
    REQUIRE(t.has_value());
    REQUIRE(t->has_value());
    return **t;
  }
};
using fixture = basic_fixture<>;

// The headers every answer carries.
void check_common_headers(const http_response& r) {
  const auto ct = r.header("Content-Type");
  REQUIRE(ct.has_value());
  CHECK(*ct == "application/json");
  const auto cc = r.header("Cache-Control");
  REQUIRE(cc.has_value());
  CHECK(*cc == "no-store");
}

http_response call(const approval_endpoint& ep, std::string_view method, std::string_view target,
                   const principal* who, std::string_view body = {}) {
  auto r = ep.handle(http_request_view{.method = method, .target = target, .body = body}, who);
  REQUIRE(r.has_value());
  check_common_headers(*r);
  return std::move(*r);
}

std::string url(std::string_view id, std::string_view suffix = {}, std::string_view prefix = "/api/v1") {
  std::string s{prefix};
  s.append("/approvals/").append(id).append(suffix);
  return s;
}

std::string header_or_absent(const http_response& r, std::string_view name) {
  const auto v = r.header(name);
  return v ? std::string{*v} : std::string{"<absent>"};
}

// A parsed response body.
struct body_json : wire_fixture::json_object {
  using json_object::json_object;
  [[nodiscard]] std::string str(std::string_view key) const {
    const auto v = root[key];
    REQUIRE(v.exists());
    REQUIRE(v.is_string());
    return std::string{v.as_string()};
  }
  [[nodiscard]] bool is_null(std::string_view key) const {
    const auto v = root[key];
    REQUIRE(v.exists());
    return v.is_null();
  }
};

// An error answer: `status`, body exactly {"error":token,"message":<non-empty string>}.
void check_error(const http_response& r, int status, std::string_view token) {
  CHECK(r.status == status);
  const body_json j{r.body};
  CHECK(j.root.size() == 2);
  CHECK(j.str("error") == token);
  CHECK_FALSE(j.str("message").empty());
}

}  // namespace

TEST_SUITE("approval_endpoint") {
  // ---- matching -----------------------------------------------------------------------------

  TEST_CASE("approvals.md: matches() is true exactly for paths under <prefix>/approvals/") {
    fixture f;
    const auto& ep = f.endpoint;
    CHECK(ep.matches("/api/v1/approvals/"));
    CHECK(ep.matches(url(id1)));
    CHECK(ep.matches(url(id1, "/approve")));
    CHECK(ep.matches(url(id1, "/anything/else")));
    CHECK(ep.matches(url(id1) + "?x=1"));
    CHECK(ep.matches("/api/v1/approvals/?"));
    CHECK_FALSE(ep.matches("/api/v1/approvals"));
    CHECK_FALSE(ep.matches("/api/v1/approvals?x=/"));
    CHECK_FALSE(ep.matches("/api/v1/approvalsX/" + std::string{id1}));
    CHECK_FALSE(ep.matches("/api/v2/approvals/" + std::string{id1}));
    CHECK_FALSE(ep.matches("/API/V1/approvals/" + std::string{id1}));  // paths are case-sensitive
    CHECK_FALSE(ep.matches("/api/v1//approvals/" + std::string{id1}));
    CHECK_FALSE(ep.matches("/other?/api/v1/approvals/" + std::string{id1}));  // only the path counts
    CHECK_FALSE(ep.matches("api/v1/approvals/" + std::string{id1}));
    CHECK_FALSE(ep.matches(""));
    CHECK_FALSE(ep.matches("/"));
    CHECK_FALSE(ep.matches("/mcp/v1/"));
  }

  TEST_CASE("approvals.md: handle() returns nullopt for a target outside the endpoint, authenticated or not") {
    fixture f;
    for (const std::string_view target : {"/mcp/v1/", "/api/v1/approvals", "/api/v1/other/x", "/"}) {
      CAPTURE(target);
      CHECK_FALSE(f.endpoint.handle({.method = "GET", .target = target, .body = {}}, &bob).has_value());
      CHECK_FALSE(f.endpoint.handle({.method = "POST", .target = target, .body = {}}, nullptr).has_value());
    }
  }

  // ---- 401 --------------------------------------------------------------------------------------

  TEST_CASE("approvals.md: no caller → 401 with WWW-Authenticate: Bearer, before routing, store untouched") {
    basic_fixture<faulty_store> f;
    f.mint(id1);
    for (const auto& [method, target] : std::vector<std::pair<std::string_view, std::string>>{
             {"GET", url(id1)},
             {"POST", url(id1, "/approve")},
             {"POST", url(id1, "/reject")},
             {"GET", "/api/v1/approvals/"},
             {"DELETE", url(id1)},
             {"GET", url("not-an-id")}}) {
      CAPTURE(method);
      CAPTURE(target);
      const auto r = call(f.endpoint, method, target, nullptr, R"({"comment":"x"})");
      check_error(r, 401, "unauthenticated");
      CHECK(header_or_absent(r, "WWW-Authenticate") == "Bearer");
      CHECK(header_or_absent(r, "Allow") == "<absent>");
    }
    CHECK(f.store.gets.load() == 0);
    CHECK(f.store.reviews.load() == 0);
    CHECK(f.ticket(id1).status == approval_status::pending);
  }

  // ---- 404 routing ------------------------------------------------------------------------------

  TEST_CASE("approvals.md: paths under the prefix that are not a route → 404, for any method") {
    basic_fixture<faulty_store> f;
    f.mint(id1);
    const std::string id{id1};
    for (const std::string& target :
         {std::string{"/api/v1/approvals/"}, url(id1, "/"), url(id1, "/approve/"), url(id1, "/reject/"),
          url(id1, "/approve/x"), url(id1, "/other"), url(id1, "/APPROVE"), std::string{"/api/v1/approvals//approve"},
          std::string{"/api/v1/approvals//reject"}, std::string{"/api/v1/approvals//"}, url(id1, "//approve"),
          std::string{"/api/v1/approvals/approve"} + "/" + id}) {
      for (const std::string_view method : {"GET", "POST", "PUT"}) {
        CAPTURE(target);
        CAPTURE(method);
        const auto r = call(f.endpoint, method, target, &bob);
        check_error(r, 404, "not_found");
        CHECK(header_or_absent(r, "Allow") == "<absent>");
      }
    }
    CHECK(f.store.gets.load() == 0);
    CHECK(f.store.reviews.load() == 0);
  }

  TEST_CASE("approvals.md: a malformed id → 404 without touching the store (GET, and POST by an approver)") {
    basic_fixture<faulty_store> f;
    for (const std::string_view bad :
         {"0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef0",
          "0123456789abcdef0123456789abcdeg", "%30123456789abcdef0123456789abcde", "-"}) {
      CAPTURE(bad);
      check_error(call(f.endpoint, "GET", url(bad), &bob), 404, "not_found");
      check_error(call(f.endpoint, "GET", url(bad), &alice), 404, "not_found");
      check_error(call(f.endpoint, "POST", url(bad, "/approve"), &bob), 404, "not_found");
      check_error(call(f.endpoint, "POST", url(bad, "/reject"), &bob, R"({"comment":"no"})"), 404, "not_found");
    }
    CHECK(f.store.gets.load() == 0);
    CHECK(f.store.reviews.load() == 0);
  }

  // ---- 405 --------------------------------------------------------------------------------------

  TEST_CASE("RFC 9110 §15.5.6: a wrong method on a known route → 405 with Allow, store untouched") {
    basic_fixture<faulty_store> f;
    f.mint(id1);
    struct row {
      std::string_view method;
      std::string target;
      std::string_view allow;
    };
    for (const row& c : std::vector<row>{{"POST", url(id1), "GET"},
                                         {"HEAD", url(id1), "GET"},
                                         {"DELETE", url(id1), "GET"},
                                         {"get", url(id1), "GET"},  // methods are case-sensitive
                                         {"GET", url(id1, "/approve"), "POST"},
                                         {"PUT", url(id1, "/approve"), "POST"},
                                         {"post", url(id1, "/reject"), "POST"},
                                         {"GET", url(id1, "/reject"), "POST"},
                                         {"PATCH", url("zz", "/reject"), "POST"}}) {
      CAPTURE(c.method);
      CAPTURE(c.target);
      const auto r = call(f.endpoint, c.method, c.target, &bob);
      check_error(r, 405, "method_not_allowed");
      CHECK(header_or_absent(r, "Allow") == c.allow);
    }
    CHECK(f.store.gets.load() == 0);
    CHECK(f.store.reviews.load() == 0);
    CHECK(f.ticket(id1).status == approval_status::pending);
  }

  // ---- GET ------------------------------------------------------------------------------------------

  TEST_CASE("approvals.md: GET answers the submitter with the whole ticket JSON, byte for byte") {
    fixture f;
    f.mint(id1);
    const auto r = call(f.endpoint, "GET", url(id1), &alice);
    CHECK(r.status == 200);
    CHECK(r.body ==
          R"({"approval_id":"0123456789abcdef0123456789abcdef","status":"pending","tool":"delete_tag",)"
          R"("definition_id":"mcp.delete_tag","arguments":{"tag":"x"},"submitted_by":"alice",)"
          R"("submitted_at":"2026-01-01T00:00:01.234Z","reviewed_by":null,"reviewed_at":null,)"
          R"("review_comment":null,"consumed":false,"consumed_at":null,"expired_at":null,)"
          R"("status_url":"/api/v1/approvals/0123456789abcdef0123456789abcdef"})");
    CHECK(header_or_absent(r, "Retry-After") == "<absent>");
    CHECK(header_or_absent(r, "WWW-Authenticate") == "<absent>");
    // append_ticket_json writes the same object, for approvers' tools outside HTTP.
    std::string out = "[";
    append_ticket_json(out, f.ticket(id1), f.service.status_url(id1));
    CHECK(out == "[" + r.body);
  }

  TEST_CASE("approvals.md: GET is visible to approvers (RBAC alone, whatever their assurance)") {
    fixture f;
    f.mint(id1);
    for (const principal* p : {&bob, &carol, &service_approver, &engine_approver, &unassured_human}) {
      CAPTURE(p->id);
      const auto r = call(f.endpoint, "GET", url(id1), p);
      CHECK(r.status == 200);
      const body_json j{r.body};
      CHECK(j.str("approval_id") == id1);
      CHECK(j.str("submitted_by") == "alice");
    }
  }

  TEST_CASE("approvals.md: GET by neither submitter nor approver → 404 identical to an unknown id (no oracle)") {
    fixture f;
    f.mint(id1);
    const auto hidden = call(f.endpoint, "GET", url(id1), &mallory);
    const auto unknown = call(f.endpoint, "GET", url(unknown_id), &mallory);
    const auto unknown_for_approver = call(f.endpoint, "GET", url(unknown_id), &bob);
    const auto malformed = call(f.endpoint, "GET", url("nope"), &mallory);
    check_error(hidden, 404, "not_found");
    for (const http_response* other : {&unknown, &unknown_for_approver, &malformed}) {
      CHECK(other->status == hidden.status);
      CHECK(other->body == hidden.body);
      REQUIRE(other->headers.size() == hidden.headers.size());
      for (std::size_t i = 0; i < hidden.headers.size(); ++i) {
        CHECK(other->headers[i].name == hidden.headers[i].name);
        CHECK(other->headers[i].value == hidden.headers[i].value);
      }
    }
  }

  TEST_CASE("approvals.md: a principal with an empty id does not see tickets whose submitter is empty") {
    fixture f;
    f.mint(id1, "");
    const principal anonymous = make_principal("", principal_kind::service, false);
    check_error(call(f.endpoint, "GET", url(id1), &anonymous), 404, "not_found");
    CHECK(call(f.endpoint, "GET", url(id1), &bob).status == 200);
  }

  TEST_CASE("approvals.md: the query string is ignored by GET and POST") {
    fixture f;
    f.mint(id1);
    const auto g = call(f.endpoint, "GET", url(id1) + "?status=approved&x=/approve", &alice);
    CHECK(g.status == 200);
    CHECK(body_json{g.body}.str("status") == "pending");
    const auto p = call(f.endpoint, "POST", url(id1, "/reject") + "?comment=ignored", &bob);
    CHECK(p.status == 200);
    const body_json j{p.body};
    CHECK(j.str("status") == "rejected");
    CHECK(j.is_null("review_comment"));
    check_error(call(f.endpoint, "GET", url(id1, "/") + "?x", &alice), 404, "not_found");
  }

  TEST_CASE("approvals.md: the tool field drops the mcp. prefix, or shows a foreign definition id whole") {
    fixture f;
    f.mint(id1, "alice", scope_x, "mcp.delete_tag");
    f.mint(id2, "alice", scope_x, "host.rotate");
    const body_json a{call(f.endpoint, "GET", url(id1), &alice).body};
    CHECK(a.str("tool") == "delete_tag");
    CHECK(a.str("definition_id") == "mcp.delete_tag");
    const body_json b{call(f.endpoint, "GET", url(id2), &alice).body};
    CHECK(b.str("tool") == "host.rotate");
    CHECK(b.str("definition_id") == "host.rotate");
  }

  TEST_CASE("approvals.md/the-flow: arguments embed the canonical scope as JSON, a non-JSON scope as a string") {
    fixture f;
    f.mint(id1, "alice", R"({"a":[1,1.0,"1",{"b":null}],"z":true})");
    f.mint(id2, "alice", "not json {");
    const body_json a{call(f.endpoint, "GET", url(id1), &alice).body};
    const auto args = a.root["arguments"];
    REQUIRE(args.is_object());
    CHECK(args["z"].is_bool());
    REQUIRE(args["a"].is_array());
    CHECK(args["a"].size() == 4);
    // Numbers keep their spelling (1 and 1.0 differ, docs/approvals.md#the-flow).
    CHECK(call(f.endpoint, "GET", url(id1), &alice).body.find(R"("arguments":{"a":[1,1.0,"1",{"b":null}],"z":true})") !=
          std::string::npos);
    const body_json b{call(f.endpoint, "GET", url(id2), &alice).body};
    CHECK(b.str("arguments") == "not json {");
  }

  // ---- POST approve / reject --------------------------------------------------------------------

  TEST_CASE("approvals.md: an assured human approver approves → 200 with the re-read ticket") {
    fixture f;
    f.mint(id1);
    f.clock.advance(1s);
    const auto r = call(f.endpoint, "POST", url(id1, "/approve"), &bob);
    CHECK(r.status == 200);
    const body_json j{r.body};
    CHECK(j.str("approval_id") == id1);
    CHECK(j.str("status") == "approved");
    CHECK(j.str("reviewed_by") == "bob");
    CHECK(j.str("reviewed_at") == "2026-01-01T00:00:02.234Z");
    CHECK(j.str("submitted_at") == "2026-01-01T00:00:01.234Z");
    CHECK(j.is_null("review_comment"));
    CHECK(j.root["consumed"].is_bool());
    CHECK_FALSE(j.root["consumed"].as_bool());
    CHECK(j.str("status_url") == url(id1));
    const auto t = f.ticket(id1);
    CHECK(t.status == approval_status::approved);
    CHECK(t.reviewed_by == "bob");
    // The submitter now sees it approved.
    CHECK(body_json{call(f.endpoint, "GET", url(id1), &alice).body}.str("status") == "approved");
  }

  TEST_CASE("approvals.md: reject records the comment, approve accepts a comment but does not record it") {
    fixture f;
    f.mint(id1);
    f.mint(id2, "alice", R"({"tag":"y"})");
    const auto rj = call(f.endpoint, "POST", url(id1, "/reject"), &bob, R"({"comment":"too risky \"now\""})");
    CHECK(rj.status == 200);
    const body_json a{rj.body};
    CHECK(a.str("status") == "rejected");
    CHECK(a.str("review_comment") == R"(too risky "now")");
    CHECK(f.ticket(id1).review_comment == R"(too risky "now")");

    const auto ap = call(f.endpoint, "POST", url(id2, "/approve"), &bob, R"({"comment":"fine"})");
    CHECK(ap.status == 200);
    const body_json b{ap.body};
    CHECK(b.str("status") == "approved");
    CHECK(b.is_null("review_comment"));
    CHECK(f.ticket(id2).review_comment.empty());
  }

  TEST_CASE("approvals.md: the body may be empty, JSON whitespace, {}, or carry unknown members") {
    for (const std::string_view body : {"", " \r\n\t", "{}", R"({"reason":"x","comment":"c","n":[1]})", " {} "}) {
      CAPTURE(body);
      fixture f;
      f.mint(id1);
      const auto r = call(f.endpoint, "POST", url(id1, "/reject"), &bob, body);
      CHECK(r.status == 200);
      CHECK(f.ticket(id1).status == approval_status::rejected);
    }
  }

  TEST_CASE("approvals.md: a body that is not a JSON object, or a non-string comment → 400, ticket untouched") {
    for (const std::string_view body :
         {"{", "[]", R"("comment")", "null", "1", "true", R"({"comment":1})", R"({"comment":null})",
          R"({"comment":["x"]})", R"({"comment":{"text":"x"}})", R"({"comment":"a","comment":"b"})", "{} {}",
          "\xEF\xBB\xBF{}", R"({"comment":"\ud800"})", "\v"}) {
      for (const std::string_view action : {"/approve", "/reject"}) {
        CAPTURE(body);
        CAPTURE(action);
        basic_fixture<faulty_store> f;
        f.mint(id1);
        check_error(call(f.endpoint, "POST", url(id1, action), &bob, body), 400, "bad_request");
        CHECK(f.store.reviews.load() == 0);
        CHECK(f.ticket(id1).status == approval_status::pending);
      }
    }
  }

  TEST_CASE("approvals.md: a body larger than max_body_bytes → 413 before parsing, exactly the cap is accepted") {
    basic_fixture<faulty_store> f{approval_endpoint_options{.max_body_bytes = 32}};
    f.mint(id1);
    std::string at_cap = R"({"comment":"ok"})";
    at_cap.resize(32, ' ');
    std::string over_cap = at_cap + " ";
    std::string malformed_over(33, '{');
    check_error(call(f.endpoint, "POST", url(id1, "/reject"), &bob, over_cap), 413, "payload_too_large");
    check_error(call(f.endpoint, "POST", url(id1, "/approve"), &bob, malformed_over), 413, "payload_too_large");
    CHECK(f.store.reviews.load() == 0);
    CHECK(f.ticket(id1).status == approval_status::pending);
    // RBAC comes first: a non-approver gets 403 whatever the body.
    check_error(call(f.endpoint, "POST", url(id1, "/reject"), &mallory, over_cap), 403, "forbidden");
    const auto ok = call(f.endpoint, "POST", url(id1, "/reject"), &bob, at_cap);
    CHECK(ok.status == 200);
    CHECK(body_json{ok.body}.str("review_comment") == "ok");
  }

  TEST_CASE("approvals.md: the default body cap is 8192 bytes") {
    fixture f;
    f.mint(id1);
    check_error(call(f.endpoint, "POST", url(id1, "/approve"), &bob, std::string(8193, ' ')), 413,
                "payload_too_large");
    CHECK(call(f.endpoint, "POST", url(id1, "/approve"), &bob, std::string(8192, ' ')).status == 200);
  }

  TEST_CASE("approvals.md: a comment longer than the service's cap → 400 comment_too_long, ticket pending") {
    approval_options so;
    so.max_review_comment_bytes = 8;
    fixture f{{}, so};
    f.mint(id1);
    check_error(call(f.endpoint, "POST", url(id1, "/reject"), &bob, R"({"comment":"123456789"})"), 400,
                "comment_too_long");
    CHECK(f.ticket(id1).status == approval_status::pending);
    const auto ok = call(f.endpoint, "POST", url(id1, "/reject"), &bob, R"({"comment":"12345678"})");
    CHECK(ok.status == 200);
    CHECK(body_json{ok.body}.str("review_comment") == "12345678");
  }

  TEST_CASE("approvals.md/the-approver-tools: callers without Approval:Approve → 403 forbidden, store untouched") {
    basic_fixture<faulty_store> f;
    f.mint(id1);
    for (const principal* p : {&mallory, &alice}) {
      for (const std::string_view action : {"/approve", "/reject"}) {
        CAPTURE(p->id);
        CAPTURE(action);
        check_error(call(f.endpoint, "POST", url(id1, action), p), 403, "forbidden");
        // RBAC precedes the id check: a non-approver learns nothing about ids either.
        check_error(call(f.endpoint, "POST", url("bad", action), p), 403, "forbidden");
        check_error(call(f.endpoint, "POST", url(unknown_id, action), p), 403, "forbidden");
      }
    }
    CHECK(f.store.reviews.load() == 0);
    CHECK(f.store.gets.load() == 0);
    CHECK(f.ticket(id1).status == approval_status::pending);
  }

  TEST_CASE("approvals.md/the-approver-tools: approvers must be assured humans → 403 approver_assurance_required:<reason>") {
    struct row {
      const principal* who;
      std::string_view token;
    };
    for (const row& c : {row{&service_approver, "approver_assurance_required:non_human_principal"},
                         row{&engine_approver, "approver_assurance_required:engine_principal"},
                         row{&unassured_human, "approver_assurance_required:non_interactive_session"}}) {
      for (const std::string_view action : {"/approve", "/reject"}) {
        CAPTURE(c.who->id);
        CAPTURE(action);
        fixture f;
        f.mint(id1);
        check_error(call(f.endpoint, "POST", url(id1, action), c.who, R"({"comment":"x"})"), 403, c.token);
        const auto t = f.ticket(id1);
        CHECK(t.status == approval_status::pending);
        CHECK(t.reviewed_by.empty());
      }
    }
  }

  TEST_CASE("approvals.md/lifetime: the submitter cannot review their own ticket → 403 self_review") {
    fixture f;
    const principal dave = make_principal("dave", principal_kind::human_interactive, true, {"approver"});
    f.mint(id1, "dave");
    for (const std::string_view action : {"/approve", "/reject"}) {
      CAPTURE(action);
      const auto r = call(f.endpoint, "POST", url(id1, action), &dave);
      check_error(r, 403, "self_review");
      CHECK(body_json{r.body}.str("message") == "the reviewer must differ from the submitter");
    }
    CHECK(f.ticket(id1).status == approval_status::pending);
    // Another approver can.
    CHECK(call(f.endpoint, "POST", url(id1, "/approve"), &bob).status == 200);
  }

  TEST_CASE("approvals.md/lifetime: a second review → 409 already_reviewed, the first decision stands") {
    fixture f;
    f.mint(id1);
    CHECK(call(f.endpoint, "POST", url(id1, "/approve"), &bob).status == 200);
    for (const auto& [who, action] : std::vector<std::pair<const principal*, std::string_view>>{
             {&carol, "/reject"}, {&carol, "/approve"}, {&bob, "/approve"}, {&bob, "/reject"}}) {
      CAPTURE(who->id);
      CAPTURE(action);
      const auto r = call(f.endpoint, "POST", url(id1, action), who, R"({"comment":"late"})");
      check_error(r, 409, "already_reviewed");
      CHECK(body_json{r.body}.str("message") == "already reviewed by another user");
    }
    const auto t = f.ticket(id1);
    CHECK(t.status == approval_status::approved);
    CHECK(t.reviewed_by == "bob");
    CHECK(t.review_comment.empty());
  }

  TEST_CASE("approvals.md/lifetime: a ticket past its 7-day lifetime → 409 expired, GET then shows it expired") {
    fixture f;
    f.mint(id1);
    f.clock.advance(std::chrono::days{7});
    check_error(call(f.endpoint, "POST", url(id1, "/approve"), &bob), 409, "expired");
    const auto r = call(f.endpoint, "GET", url(id1), &alice);
    CHECK(r.status == 200);
    const body_json j{r.body};
    CHECK(j.str("status") == "expired");
    CHECK(j.str("expired_at") == "2026-01-08T00:00:01.234Z");
    CHECK(j.is_null("reviewed_by"));
    CHECK(j.is_null("reviewed_at"));
    // Once expired, a further review is refused as not pending.
    check_error(call(f.endpoint, "POST", url(id1, "/reject"), &bob), 409, "already_reviewed");
  }

  TEST_CASE("approvals.md/lifetime: one millisecond before the lifetime ends the review still succeeds") {
    fixture f;
    f.mint(id1);
    f.clock.advance(std::chrono::days{7} - 1ms);
    CHECK(call(f.endpoint, "POST", url(id1, "/approve"), &bob).status == 200);
  }

  TEST_CASE("approvals.md: reviewing an unknown (well-formed) id → 404") {
    fixture f;
    check_error(call(f.endpoint, "POST", url(unknown_id, "/approve"), &bob), 404, "not_found");
    check_error(call(f.endpoint, "POST", url(unknown_id, "/reject"), &bob, R"({"comment":"x"})"), 404, "not_found");
  }

  TEST_CASE("concepts/approval_store.md/valid-expressions: GET shows a consumed ticket as approved with consumed and consumed_at") {
    fixture f;
    f.mint(id1);
    f.clock.advance(1s);
    REQUIRE(call(f.endpoint, "POST", url(id1, "/approve"), &bob).status == 200);
    f.clock.advance(2s);
    const auto c = f.store.consume(approval_consume_request{.id = id1,
                                                            .consumer = "alice",
                                                            .origin = approval_origin_mcp,
                                                            .now = f.service.now(),
                                                            .lifetime = f.service.options().ticket_lifetime});
    REQUIRE(c.has_value());
    REQUIRE(*c == approval_consume_status::consumed);
    const body_json j{call(f.endpoint, "GET", url(id1), &alice).body};
    CHECK(j.str("status") == "approved");
    CHECK(j.root["consumed"].as_bool());
    CHECK(j.str("consumed_at") == "2026-01-01T00:00:04.234Z");
    CHECK(j.str("reviewed_at") == "2026-01-01T00:00:02.234Z");
    CHECK(j.is_null("expired_at"));
  }

  // ---- store faults (docs/approvals.md#every-answer-of-the-machine)
  // ---------------------------------------------------------

  TEST_CASE("approvals.md/every-answer-of-the-machine: a transient store fault on GET → 503 with Retry-After: 5") {
    for (const std::error_code ec : {make_error_code(approval_store_errc::busy),
                                     make_error_code(approval_store_errc::io_error),
                                     std::make_error_code(std::errc::resource_unavailable_try_again)}) {
      CAPTURE(ec.message());
      basic_fixture<faulty_store> f;
      f.mint(id1);
      f.store.get_error = ec;
      const auto r = call(f.endpoint, "GET", url(id1), &alice);
      check_error(r, 503, "store_temporarily_unavailable");
      CHECK(header_or_absent(r, "Retry-After") == "5");
      CHECK(retry::header_seconds(retry::approval_store_transient) == 5);
    }
  }

  TEST_CASE("approvals.md/every-answer-of-the-machine: a permanent store fault on GET → 500 without Retry-After") {
    for (const auto e : {approval_store_errc::closed, approval_store_errc::corrupt, approval_store_errc::read_only,
                         approval_store_errc::full, approval_store_errc::schema_too_new,
                         approval_store_errc::internal}) {
      CAPTURE(static_cast<int>(e));
      basic_fixture<faulty_store> f;
      f.mint(id1);
      f.store.get_error = make_error_code(e);
      const auto r = call(f.endpoint, "GET", url(id1), &bob);
      check_error(r, 500, "store_unavailable");
      CHECK(header_or_absent(r, "Retry-After") == "<absent>");
    }
  }

  TEST_CASE("approvals.md/every-answer-of-the-machine: store faults during a review → 503 (transient) or 500 (permanent), ticket intact") {
    {
      basic_fixture<faulty_store> f;
      f.mint(id1);
      f.store.review_error = make_error_code(approval_store_errc::busy);
      const auto r = call(f.endpoint, "POST", url(id1, "/approve"), &bob);
      check_error(r, 503, "store_temporarily_unavailable");
      CHECK(header_or_absent(r, "Retry-After") == "5");
      CHECK(f.store.reviews.load() == 1);
      f.store.review_error = {};
      CHECK(f.ticket(id1).status == approval_status::pending);
      CHECK(call(f.endpoint, "POST", url(id1, "/approve"), &bob).status == 200);  // retry unchanged
    }
    {
      basic_fixture<faulty_store> f;
      f.mint(id1);
      f.store.review_error = make_error_code(approval_store_errc::read_only);
      const auto r = call(f.endpoint, "POST", url(id1, "/reject"), &bob, R"({"comment":"no"})");
      check_error(r, 500, "store_unavailable");
      CHECK(header_or_absent(r, "Retry-After") == "<absent>");
    }
  }

  TEST_CASE("approvals.md: the review happened but the re-read failed → 200 with approval_id and status only") {
    for (const std::string_view action : {"/approve", "/reject"}) {
      CAPTURE(action);
      basic_fixture<faulty_store> f;
      f.mint(id1);
      f.store.get_error = make_error_code(approval_store_errc::busy);
      f.store.fail_get_only_after_review = true;
      const auto r = call(f.endpoint, "POST", url(id1, action), &bob);
      CHECK(r.status == 200);
      const body_json j{r.body};
      CHECK(j.root.size() == 2);
      CHECK(j.str("approval_id") == id1);
      CHECK(j.str("status") == (action == "/approve" ? "approved" : "rejected"));
      CHECK(header_or_absent(r, "Retry-After") == "<absent>");
    }
  }

  // ---- authorizers and options ----------------------------------------------------------------

  TEST_CASE("approvals.md/the-approver-tools: RBAC asks the authorizer for Approve on approver_securable") {
    struct call_log {
      std::vector<std::pair<std::string, operation>> calls;
    };
    struct recording_authorizer {
      call_log* log;
      bool allowed(const principal& who, std::string_view securable, operation op) const {
        log->calls.emplace_back(std::string{securable}, op);
        return who.id == "bob";
      }
    };
    fixture f;
    f.mint(id1);
    call_log log;
    approval_endpoint ep{f.service, recording_authorizer{&log},
                         approval_endpoint_options{.approver_securable = "Tickets"}};
    CHECK(call(ep, "GET", url(id1), &mallory).status == 404);
    REQUIRE(log.calls.size() == 1);
    CHECK(log.calls[0].first == "Tickets");
    CHECK(log.calls[0].second == operation::approve);
    check_error(call(ep, "POST", url(id1, "/approve"), &carol), 403, "forbidden");  // carol's role is not consulted
    CHECK(call(ep, "POST", url(id1, "/approve"), &bob).status == 200);
    for (const auto& [securable, op] : log.calls) {
      CHECK(securable == "Tickets");
      CHECK(op == operation::approve);
    }
  }

  TEST_CASE("approvals.md/the-approver-tools: a role table grant on another operation or securable does not make an approver") {
    fixture f;
    f.mint(id1);
    mcpcore::role_table_authorizer table;
    table.grant("approver", "Approval", operation::write).grant("approver", "Tag", operation::approve);
    approval_endpoint ep{f.service, table};
    check_error(call(ep, "POST", url(id1, "/approve"), &bob), 403, "forbidden");
    check_error(call(ep, "GET", url(id1), &bob), 404, "not_found");
    CHECK(call(ep, "GET", url(id1), &alice).status == 200);  // the submitter always sees it

    mcpcore::role_table_authorizer wildcard;
    wildcard.grant("approver", "*", operation::approve);
    approval_endpoint ep2{f.service, wildcard};
    CHECK(call(ep2, "POST", url(id1, "/approve"), &bob).status == 200);
  }

  TEST_CASE("policy.hpp authorizer requirement 4: an authorizer that throws denies") {
    struct throwing_authorizer {
      bool allowed(const principal&, std::string_view, operation) const { throw std::runtime_error{"role store down"}; }
    };
    fixture f;
    f.mint(id1);
    approval_endpoint ep{f.service, throwing_authorizer{}};
    check_error(call(ep, "GET", url(id1), &bob), 404, "not_found");
    CHECK(call(ep, "GET", url(id1), &alice).status == 200);
    check_error(call(ep, "POST", url(id1, "/approve"), &bob), 403, "forbidden");
    CHECK(f.ticket(id1).status == approval_status::pending);
  }

  TEST_CASE("approvals.md: with allow_all_authorizer, assurance and separation of duties still hold") {
    fixture f;
    f.mint(id1);
    approval_endpoint ep{f.service, allow_all_authorizer{}};
    CHECK(call(ep, "GET", url(id1), &mallory).status == 200);
    check_error(call(ep, "POST", url(id1, "/approve"), &alice), 403,
                "approver_assurance_required:non_human_principal");
    const principal human_alice = make_principal("alice", principal_kind::human_interactive, true);
    check_error(call(ep, "POST", url(id1, "/approve"), &human_alice), 403, "self_review");
    CHECK(call(ep, "POST", url(id1, "/approve"), &mallory).status == 200);
  }

  TEST_CASE("the archetype authorizer (denies everything) is accepted, only the submitter sees tickets") {
    fixture f;
    f.mint(id1);
    approval_endpoint ep{f.service, archetypes::authorizer{}};
    CHECK(call(ep, "GET", url(id1), &alice).status == 200);
    check_error(call(ep, "GET", url(id1), &bob), 404, "not_found");
    check_error(call(ep, "POST", url(id1, "/approve"), &bob), 403, "forbidden");
  }

  TEST_CASE("approvals.md: the prefix is configurable, the status URL follows the service's prefix") {
    approval_options so;
    so.status_url_prefix = "/admin";
    fixture f{approval_endpoint_options{.prefix = "/admin"}, so};
    f.mint(id1);
    CHECK(f.endpoint.matches(url(id1, {}, "/admin")));
    CHECK_FALSE(f.endpoint.matches(url(id1)));
    CHECK_FALSE(f.endpoint.handle({.method = "GET", .target = url(id1), .body = {}}, &alice).has_value());
    const auto r = call(f.endpoint, "GET", url(id1, {}, "/admin"), &alice);
    CHECK(r.status == 200);
    CHECK(body_json{r.body}.str("status_url") == "/admin/approvals/" + std::string{id1});
    CHECK(call(f.endpoint, "POST", url(id1, "/approve", "/admin"), &bob).status == 200);

    fixture root{approval_endpoint_options{.prefix = ""}};
    root.mint(id1);
    CHECK(root.endpoint.matches("/approvals/" + std::string{id1}));
    CHECK_FALSE(root.endpoint.matches(url(id1)));
    CHECK(call(root.endpoint, "GET", "/approvals/" + std::string{id1}, &alice).status == 200);
  }

  // ---- concurrency ------------------------------------------------------------------------------

  // ---- audit (docs/security.md#audit-and-the-one-cid-pattern,
  // docs/approvals.md#the-approver-tools)
  // --------------------------------------------------------------

  TEST_CASE("security.md/audit-and-the-one-cid-pattern, approvals.md/the-approver-tools: every review request writes one row: approve, reject, each refusal, a store fault") {
    basic_fixture<faulty_store> f;
    memory_audit_sink sink;
    f.endpoint.set_audit(sink);
    f.mint(id1);
    f.mint(id2, "bob");  // bob's own request
    struct step {
      const principal* who;
      std::string target;
      std::string body;
      int status;
      std::string_view action;
      audit_result result;
      std::string_view detail;
    };
    const std::string long_comment(f.service.options().max_review_comment_bytes + 1, 'c');
    const std::vector<step> steps{
        {&mallory, url(id1, "/approve"), "", 403, "approval.approve", audit_result::denied, "refused: forbidden"},
        {&bob, url("not-an;id=x", "/approve"), "", 404, "approval.approve", audit_result::not_found,
         "refused: malformed_id"},
        {&bob, url(unknown_id, "/reject"), "", 404, "approval.reject", audit_result::not_found, "refused: not_found"},
        {&bob, url(id1, "/reject"), "[1]", 400, "approval.reject", audit_result::denied, "refused: bad_request"},
        {&bob, url(id1, "/reject"), R"({"comment":")" + long_comment + R"("})", 400, "approval.reject",
         audit_result::denied, "refused: comment_too_long"},
        {&service_approver, url(id1, "/approve"), "", 403, "approval.approve", audit_result::denied,
         "refused: approver_assurance_required:"},
        {&bob, url(id2, "/approve"), "", 403, "approval.approve", audit_result::denied, "refused: self_review"},
        {&bob, url(id1, "/approve"), "", 200, "approval.approve", audit_result::success, "approved"},
        {&carol, url(id1, "/reject"), "", 409, "approval.reject", audit_result::denied, "refused: already_reviewed"},
    };
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const step& st = steps[i];
      CAPTURE(st.target);
      const auto r = call(f.endpoint, "POST", st.target, st.who, st.body);
      CHECK(r.status == st.status);
      const auto rows = sink.entries();
      REQUIRE(rows.size() == i + 1);  // exactly one row per request
      const audit_entry& row = rows.back();
      CHECK(row.action == st.action);
      CHECK(row.target_type == "approval");
      CHECK(row.principal_id == st.who->id);
      CHECK(row.result == st.result);
      CAPTURE(row.detail);
      CHECK(row.detail.find(st.detail) != std::string::npos);
      CHECK(row.detail.ends_with(" via=http"));
      CHECK(row.time == f.service.now());
      if (is_approval_id(st.target.substr(std::string_view{"/api/v1/approvals/"}.size(), 32))) {
        CHECK(row.target_id == st.target.substr(std::string_view{"/api/v1/approvals/"}.size(), 32));
        CHECK(row.detail.starts_with("approval_id=" + row.target_id + " "));
      } else {
        CHECK(row.target_id == "malformed");
        CHECK(row.detail.starts_with("approval_id=not-an_id_x "));  // sanitised: no `;`, no `=`
      }
    }
    // A store fault is a failure row; nothing was reviewed.
    f.mint("11111111111111111111111111111111");
    f.store.review_error = make_error_code(approval_store_errc::busy);
    const auto r = call(f.endpoint, "POST", url("11111111111111111111111111111111", "/approve"), &bob);
    CHECK(r.status == 503);
    const auto rows = sink.entries();
    REQUIRE(rows.size() == steps.size() + 1);
    CHECK(rows.back().result == audit_result::failure);
    CHECK(rows.back().detail.find("review failed: ") != std::string::npos);
    // GET writes nothing: reads are not audited.
    (void)call(f.endpoint, "GET", url(id1), &bob);
    CHECK(sink.entries().size() == steps.size() + 1);
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: a review whose audit sink refuses or throws answers exactly as without a sink") {
    struct refusing {
      bool throws = false;
      int calls = 0;
      bool record(const audit_record&) {
        ++calls;
        if (throws) throw std::runtime_error("audit store down");
        return false;
      }
    };
    static_assert(audit_sink<refusing>);
    for (const bool throws : {false, true}) {
      CAPTURE(throws);
      fixture plain;
      fixture audited;
      refusing sink{.throws = throws};
      audited.endpoint.set_audit(sink);
      for (fixture* f : {&plain, &audited}) f->mint(id1);
      for (const auto& [who, target] : std::vector<std::pair<const principal*, std::string>>{
               {&mallory, url(id1, "/approve")}, {&bob, url(id1, "/approve")}, {&carol, url(id1, "/reject")}}) {
        const auto a = call(plain.endpoint, "POST", target, who);
        const auto b = call(audited.endpoint, "POST", target, who);
        CHECK(a.status == b.status);
        CHECK(a.body == b.body);
      }
      CHECK(sink.calls == 3);
      CHECK(audited.ticket(id1).status == approval_status::approved);
    }
  }

  TEST_CASE("approvals.md/lifetime: concurrent reviews of one ticket through one endpoint: exactly one wins") {
    fixture f;
    f.mint(id1);
    constexpr int n = 8;
    std::vector<principal> reviewers;
    for (int i = 0; i < n; ++i) {
      reviewers.push_back(
          make_principal("reviewer" + std::to_string(i), principal_kind::human_interactive, true, {"approver"}));
    }
    std::atomic<int> ok{0};
    std::atomic<int> conflict{0};
    std::atomic<int> other{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        const auto r = f.endpoint.handle(
            {.method = "POST", .target = url(id1, i % 2 == 0 ? "/approve" : "/reject"), .body = {}},
            &reviewers[static_cast<std::size_t>(i)]);
        const int status = r ? r->status : -1;
        (status == 200 ? ok : status == 409 ? conflict : other).fetch_add(1);
        // Readers run alongside the reviewers.
        const auto g = f.endpoint.handle({.method = "GET", .target = url(id1), .body = {}}, &alice);
        if (!g || g->status != 200) other.fetch_add(1);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(ok.load() == 1);
    CHECK(conflict.load() == n - 1);
    CHECK(other.load() == 0);
    const auto t = f.ticket(id1);
    CHECK(t.reviewed_by.starts_with("reviewer"));
    CHECK(t.status != approval_status::pending);
  }
}
