// SPDX-License-Identifier: Apache-2.0
// Tests of the approvals page: sign-in and sessions, the pages and what they escape, decisions,
// and the web defences (docs/approvals-page.md).
#include <mcpcore/governance/approvals_page.hpp>

#include <doctest/doctest.h>

#include "support/approval_tickets.hpp"

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/transport/http_endpoint.hpp>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

using approval_tickets::make_principal;

// Bearer tokens to principals; the test revokes principals through `revoked`.
struct token_table {
  std::map<std::string, principal, std::less<>> tokens;
  std::shared_ptr<std::set<std::string>> revoked = std::make_shared<std::set<std::string>>();

  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto h = req.header("Authorization");
    if (!h || !h->starts_with("Bearer ")) return std::nullopt;
    const auto it = tokens.find(h->substr(7));
    if (it == tokens.end()) return std::nullopt;
    return it->second;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& p) const {
    return revoked->contains(p.id) ? credential_verdict::revoked : credential_verdict::valid;
  }
};

using approval_tickets::approvers;

constexpr std::string_view id1 = "0123456789abcdef0123456789abcdef";
constexpr std::string_view id2 = "fedcba9876543210fedcba9876543210";

// The page over a memory store, a manual clock and four principals: alice submits (an agent),
// bob and carol approve, dave is an approver who also submits, mallory is no approver.
struct fixture {
  memory_approval_store store;
  manual_clock clock;
  approval_service service;
  token_table tokens;
  memory_audit_sink audit{64};
  std::unique_ptr<approvals_page> page;

  explicit fixture(approvals_page_options o = {}) : service(store, clock_ref{clock}) {
    clock.advance(1000ms);
    tokens.tokens.emplace("tok-alice", make_principal("alice", principal_kind::service, false));
    tokens.tokens.emplace("tok-bob", make_principal("bob", principal_kind::human_interactive, true, {"approver"}));
    tokens.tokens.emplace("tok-carol", make_principal("carol", principal_kind::human_interactive, true, {"approver"}));
    tokens.tokens.emplace("tok-dave", make_principal("dave", principal_kind::human_interactive, true, {"approver"}));
    tokens.tokens.emplace("tok-svc", make_principal("svc", principal_kind::service, true, {"approver"}));
    tokens.tokens.emplace("tok-mallory", make_principal("mallory", principal_kind::human_interactive, true));
    page = std::make_unique<approvals_page>(service, tokens, approvers(), std::move(o));
    page->set_audit(audit);
  }

  void mint(std::string_view id, std::string_view submitter = "alice", std::string_view scope = R"({"tag":"x"})") {
    approval_tickets::mint_pending(store, service, id, submitter, scope);
  }
};

// One request as a browser on http://127.0.0.1:8080 sends it.
struct request {
  std::string method = "GET";
  std::string target;
  std::string body;
  std::vector<std::pair<std::string, std::string>> fields{{"Host", "127.0.0.1:8080"}};
  std::string remote = "127.0.0.1:40000";

  request& header(std::string name, std::string value) {
    fields.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  [[nodiscard]] std::optional<http_response> send(const approvals_page& page) const {
    std::vector<http_header_view> views;
    views.reserve(fields.size());
    for (const auto& [n, v] : fields) views.push_back({n, v});
    http_request_view req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.headers = views;
    req.remote = remote;
    return page.handle(req);
  }
};

request get(std::string target) {
  request r;
  r.target = std::move(target);
  return r;
}

request post(std::string target, std::string body) {
  request r;
  r.method = "POST";
  r.target = std::move(target);
  r.body = std::move(body);
  r.header("Origin", "http://127.0.0.1:8080");
  r.header("Content-Type", "application/x-www-form-urlencoded");
  return r;
}

std::string header_of(const http_response& r, std::string_view name) {
  const auto h = r.header(name);
  return h ? std::string{*h} : std::string{};
}

std::vector<std::string> set_cookies(const http_response& r) {
  std::vector<std::string> out;
  for (const auto& h : r.headers) {
    if (h.name == "Set-Cookie") out.push_back(h.value);
  }
  return out;
}

// `name=value` out of a Set-Cookie value.
std::string cookie_pair(const std::string& set_cookie) { return set_cookie.substr(0, set_cookie.find(';')); }

// The value of the hidden `csrf` field of the form `form_id` in `html`.
std::string csrf_in(const std::string& html, std::string_view form_id = {}) {
  std::size_t from = 0;
  if (!form_id.empty()) {
    from = html.find(std::string{"<form id=\""} + std::string{form_id} + "\"");
    REQUIRE(from != std::string::npos);
  }
  constexpr std::string_view marker = "name=\"csrf\" value=\"";
  const auto at = html.find(marker, from);
  REQUIRE(at != std::string::npos);
  const auto start = at + marker.size();
  return html.substr(start, html.find('"', start) - start);
}

std::string form_encode(std::string_view s) {
  constexpr std::string_view hex = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' || u == '_') {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4U];
      out += hex[u & 0xFU];
    }
  }
  return out;
}

// A signed-in browser: its session cookie and the forms' CSRF token.
struct browser {
  std::string cookie;  // "mcpcore_session=..."
  std::string csrf;
};

// Signs in with `token` from `remote`; REQUIREs success.
browser sign_in(fixture& f, std::string_view token, std::string remote = "127.0.0.1:40000") {
  request g = get("/approvals/login");
  g.remote = remote;
  const auto form = g.send(*f.page);
  REQUIRE(form);
  REQUIRE(form->status == 200);
  const auto signin_cookies = set_cookies(*form);
  REQUIRE(signin_cookies.size() == 1);
  request p = post("/approvals/login", "csrf=" + csrf_in(form->body) + "&credential=" + form_encode(token));
  p.remote = std::move(remote);
  p.header("Cookie", cookie_pair(signin_cookies[0]));
  const auto done = p.send(*f.page);
  REQUIRE(done);
  REQUIRE(done->status == 303);
  std::string session;
  for (const auto& c : set_cookies(*done)) {
    if (c.starts_with("mcpcore_session=")) session = cookie_pair(c);
  }
  REQUIRE(!session.empty());
  request q = get("/approvals");
  q.header("Cookie", session);
  const auto queue = q.send(*f.page);
  REQUIRE(queue);
  REQUIRE(queue->status == 200);
  return browser{session, csrf_in(queue->body, "logout")};
}

std::optional<http_response> get_as(const fixture& f, const browser& b, std::string target) {
  request r = get(std::move(target));
  r.header("Cookie", b.cookie);
  return r.send(*f.page);
}

std::optional<http_response> post_as(const fixture& f, const browser& b, std::string target, std::string body) {
  request r = post(std::move(target), std::move(body));
  r.header("Cookie", b.cookie);
  return r.send(*f.page);
}

std::string decide_target(std::string_view id, std::string_view action) {
  return "/approvals/tickets/" + std::string{id} + "/" + std::string{action};
}

}  // namespace

TEST_CASE("approvals page: it serves its path and below, and refuses a path it cannot mount") {
  fixture f;
  CHECK(f.page->matches("/approvals"));
  CHECK(f.page->matches("/approvals/login?x=1"));
  CHECK(f.page->matches("/approvals?x"));
  CHECK_FALSE(f.page->matches("/approvalsx"));
  CHECK_FALSE(f.page->matches("/api/v1/approvals/" + std::string{id1}));
  CHECK_FALSE(get("/mcp").send(*f.page).has_value());
  for (const std::string_view bad : {"", "/", "approvals", "/approvals/"}) {
    approvals_page_options o;
    o.path = bad;
    CHECK_THROWS_AS(approvals_page(f.service, f.tokens, approvers(), o), std::invalid_argument);
  }
  const auto unknown = get("/approvals/nothing").send(*f.page);
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
}

TEST_CASE("approvals page: every answer carries the strict policy and is never cached") {
  fixture f;
  for (const std::string_view target : {"/approvals/login", "/approvals", "/approvals/static/app.js", "/approvals/x"}) {
    const auto r = get(std::string{target}).send(*f.page);
    REQUIRE(r);
    const std::string csp = header_of(*r, "Content-Security-Policy");
    CHECK(csp.find("default-src 'none'") != std::string::npos);
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
    CHECK(header_of(*r, "Cache-Control") == "no-store");
    CHECK(header_of(*r, "X-Frame-Options") == "DENY");
    CHECK(header_of(*r, "X-Content-Type-Options") == "nosniff");
  }
  const auto js = get("/approvals/static/app.js").send(*f.page);
  CHECK(header_of(*js, "Content-Type").starts_with("text/javascript"));
  CHECK(js->body.find("getElementById('live')") != std::string::npos);
}

TEST_CASE("approvals page: signed out, the pages send to the sign-in and the polls answer 401") {
  fixture f;
  f.mint(id1);
  const auto queue = get("/approvals").send(*f.page);
  REQUIRE(queue);
  CHECK(queue->status == 303);
  CHECK(header_of(*queue, "Location") == "/approvals/login");
  const auto ticket = get("/approvals/tickets/" + std::string{id1}).send(*f.page);
  CHECK(ticket->status == 303);
  CHECK(ticket->body.find(id1) == std::string::npos);
  CHECK(get("/approvals/live").send(*f.page)->status == 401);
  CHECK(get("/approvals/tickets/" + std::string{id1} + "/live").send(*f.page)->status == 401);
  // A session cookie the page never issued is no session.
  request forged = get("/approvals");
  forged.header("Cookie", "mcpcore_session=0123456789abcdef");
  CHECK(forged.send(*f.page)->status == 303);
}

TEST_CASE("approvals page: an approver signs in and gets a strict session cookie") {
  fixture f;
  const auto form = get("/approvals/login").send(*f.page);
  REQUIRE(form);
  CHECK(form->body.find("<form id=\"signin\" method=\"post\" action=\"/approvals/login\">") != std::string::npos);
  const auto nonce = set_cookies(*form);
  REQUIRE(nonce.size() == 1);
  CHECK(nonce[0].starts_with("mcpcore_signin="));
  CHECK(nonce[0].find("; HttpOnly") != std::string::npos);
  CHECK(nonce[0].find("; SameSite=Strict") != std::string::npos);
  CHECK(nonce[0].find("; Path=/approvals") != std::string::npos);

  request p = post("/approvals/login", "csrf=" + csrf_in(form->body) + "&credential=tok-bob");
  p.header("Cookie", cookie_pair(nonce[0]));
  const auto done = p.send(*f.page);
  REQUIRE(done);
  CHECK(done->status == 303);
  CHECK(header_of(*done, "Location") == "/approvals");
  const auto cookies = set_cookies(*done);
  REQUIRE(cookies.size() == 2);
  CHECK(cookies[0].starts_with("mcpcore_session="));
  CHECK(cookies[0].size() > std::string_view{"mcpcore_session="}.size() + 60);
  CHECK(cookies[0].find("; HttpOnly; SameSite=Strict") != std::string::npos);
  CHECK(cookies[0].find("; Secure") == std::string::npos);
  CHECK(cookies[1].starts_with("mcpcore_signin=; "));  // the nonce is spent

  request q = get("/approvals");
  q.header("Cookie", cookie_pair(cookies[0]));
  const auto queue = q.send(*f.page);
  CHECK(queue->status == 200);
  CHECK(queue->body.find("<strong id=\"whoami\">bob</strong>") != std::string::npos);

  SUBCASE("under TLS the cookies are Secure") {
    approvals_page_options o;
    o.secure = true;
    fixture tls{o};
    const auto tls_form = get("/approvals/login").send(*tls.page);
    CHECK(set_cookies(*tls_form)[0].ends_with("; Secure"));
  }
}

TEST_CASE("approvals page: a sign-in is refused without the form's token, with a bad credential, or for a non-approver") {
  fixture f;
  const auto form = get("/approvals/login").send(*f.page);
  const std::string nonce = cookie_pair(set_cookies(*form)[0]);
  const std::string csrf = csrf_in(form->body);
  const auto attempt = [&](std::string body, std::string cookie) {
    request p = post("/approvals/login", std::move(body));
    if (!cookie.empty()) p.header("Cookie", cookie);
    const auto r = p.send(*f.page);
    REQUIRE(r);
    for (const auto& c : set_cookies(*r)) CHECK_FALSE(c.starts_with("mcpcore_session="));
    return *r;
  };
  CHECK(attempt("csrf=" + csrf + "&credential=tok-bob", "").status == 403);  // no nonce cookie
  CHECK(attempt("csrf=" + csrf + "&credential=tok-bob", "mcpcore_signin=other").status == 403);
  CHECK(attempt("csrf=" + csrf.substr(1) + "0&credential=tok-bob", nonce).status == 403);
  const http_response wrong = attempt("csrf=" + csrf + "&credential=tok-nobody", nonce);
  CHECK(wrong.status == 401);
  CHECK(wrong.body.find("id=\"signin-error\"") != std::string::npos);
  CHECK(attempt("csrf=" + csrf + "&credential=tok-mallory", nonce).status == 403);
  CHECK(attempt("csrf=" + csrf + "&credential=tok-alice", nonce).status == 403);
  CHECK(attempt("csrf=" + csrf + "&credential=tok%0Abob", nonce).status == 401);  // no control bytes
  CHECK(attempt("csrf=" + csrf + "&credential=tok-bob&credential=tok-bob", nonce).status == 400);
  CHECK(attempt("csrf=" + csrf + "&credential=tok-bob%G0", nonce).status == 400);
  // The page's own origin only.
  request cross = post("/approvals/login", "csrf=" + csrf + "&credential=tok-bob");
  cross.fields[1].second = "http://evil.example";
  cross.header("Cookie", nonce);
  CHECK(cross.send(*f.page)->status == 403);
}

TEST_CASE("approvals page: sign-in attempts are rate-limited per client address") {
  approvals_page_options o;
  o.signin_burst = 3;
  o.signin_refill = 10s;
  fixture f{o};
  const auto attempt = [&](std::string remote) {
    request p = post("/approvals/login", "credential=tok-nobody");
    p.remote = std::move(remote);
    return *p.send(*f.page);
  };
  for (int i = 0; i < 3; ++i) CHECK(attempt("10.0.0.1:1000").status != 429);
  const http_response limited = attempt("10.0.0.1:1001");  // another port, same address
  CHECK(limited.status == 429);
  CHECK(header_of(limited, "Retry-After") == "10");
  CHECK(attempt("10.0.0.2:1000").status != 429);
  CHECK(attempt("[::1]:5").status != 429);
  f.clock.advance(10s);
  CHECK(attempt("10.0.0.1:1000").status != 429);
  CHECK(attempt("10.0.0.1:1000").status == 429);
}

TEST_CASE("approvals page: the queue lists pending tickets and what others decided, and the poll sees changes") {
  fixture f;
  const browser bob = sign_in(f, "tok-bob");
  auto live = get_as(f, bob, "/approvals/live");
  REQUIRE(live);
  CHECK(live->status == 200);
  CHECK(live->body.find("id=\"no-pending\"") != std::string::npos);
  CHECK(live->body.find("id=\"no-recent\"") != std::string::npos);

  f.mint(id1);
  f.clock.advance(125s);
  live = get_as(f, bob, "/approvals/live");
  CHECK(live->body.find("<tr class=\"ticket\" data-id=\"" + std::string{id1} + "\">") != std::string::npos);
  CHECK(live->body.find("<td class=\"tool\">delete_tag</td><td class=\"submitter\">alice</td>") != std::string::npos);
  CHECK(live->body.find("<td class=\"age\">2 min</td>") != std::string::npos);
  CHECK(live->body.find("<td class=\"args\"><code>{tag: &quot;x&quot;}</code></td>") != std::string::npos);
  CHECK(live->body.find("<td class=\"left\">6 d 23 h</td>") != std::string::npos);

  // Decided elsewhere (the admin command, another approver): the next poll shows it.
  const principal carol = make_principal("carol", principal_kind::human_interactive, true, {"approver"});
  REQUIRE(f.service.reject(id1, carol, "not <now>").status == approval_review_status::reviewed);
  live = get_as(f, bob, "/approvals/live");
  CHECK(live->body.find("id=\"no-pending\"") != std::string::npos);
  CHECK(live->body.find("<tr class=\"decision\" data-id=\"" + std::string{id1} + "\" data-status=\"rejected\">") !=
        std::string::npos);
  CHECK(live->body.find("<td class=\"reviewer\">carol</td>") != std::string::npos);
  CHECK(live->body.find("<td class=\"comment\">not &lt;now&gt;</td>") != std::string::npos);

  const auto queue = get_as(f, bob, "/approvals");
  CHECK(queue->body.find("<div id=\"live\" aria-live=\"polite\" data-live-url=\"/approvals/live\" "
                         "data-interval-ms=\"2000\">") != std::string::npos);
}

TEST_CASE("approvals page: hostile arguments and comments are shown as inert, visible text") {
  fixture f;
  const std::string hostile =
      R"({"a":"<script>window.__pwned=1</script>","b":"\"'><img src=x onerror=alert(1)>","c":"x)"
      "\u202e"
      R"(gnp.exe","d":"\u0007\u001b[31m","e":"zero)"
      "\u200b"
      R"(width","f":"back\\slash","g":[1,true,null,{"h":"&amp;"}]})";
  f.mint(id1, "alice", hostile);
  const browser bob = sign_in(f, "tok-bob");
  for (const std::string& target : {std::string{"/approvals/live"}, "/approvals/tickets/" + std::string{id1}}) {
    const auto r = get_as(f, bob, target);
    REQUIRE(r);
    REQUIRE(r->status == 200);
    const std::string& html = r->body;
    CHECK(html.find("<script>window") == std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("&lt;script&gt;window.__pwned=1&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("\u202e") == std::string::npos);
    CHECK(html.find("\u200b") == std::string::npos);
    CHECK(html.find('\x1b') == std::string::npos);
    CHECK(html.find('\x07') == std::string::npos);
    CHECK(html.find("<span class=\"cc\">\\u202e</span>") != std::string::npos);
    CHECK(html.find("<span class=\"cc\">\\u200b</span>") != std::string::npos);
  }
  // The queue's one line: members and strings as they are, the controls boxed, nothing doubled.
  const auto queue = get_as(f, bob, "/approvals/live");
  CHECK(queue->body.find("d: &quot;<span class=\"cc\">\\u0007</span><span class=\"cc\">\\u001b</span>[31m&quot;") !=
        std::string::npos);
  CHECK(queue->body.find("b: &quot;&quot;&#39;&gt;&lt;img") != std::string::npos);
  f.mint(id2, "alice", R"({"long":")" + std::string(100, 'y') + R"(","many":[1,2,3,4,5,6,7,8,9,10],"deep":{"a":{"b":{"c":{"d":1}}}}})");
  const auto cut = get_as(f, bob, "/approvals/live");
  CHECK(cut->body.find("long: &quot;" + std::string(60, 'y') + "…&quot;") != std::string::npos);
  CHECK(cut->body.find("many: [1, 2, 3, 4, 5, 6, 7, 8, …]") != std::string::npos);
  CHECK(cut->body.find("deep: {a: {b: {c: {…}}}}") != std::string::npos);
  const auto ticket = get_as(f, bob, "/approvals/tickets/" + std::string{id1});
  const std::string& html = ticket->body;
  // Laid out: the members in order, strings quoted, the nested values as lists.
  CHECK(html.find("<dt>a</dt><dd><span class=\"str\">&quot;&lt;script&gt;") != std::string::npos);
  CHECK(html.find("&quot;&#39;&gt;&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(html.find("<span class=\"cc\">\\u0007</span><span class=\"cc\">\\u001b</span>[31m") != std::string::npos);
  CHECK(html.find("back<span class=\"cc\">\\\\</span>slash") != std::string::npos);
  CHECK(html.find("<ol class=\"arr\" start=\"0\"><li><span class=\"lit\">1</span></li>") != std::string::npos);
  CHECK(html.find("<dt>h</dt><dd><span class=\"str\">&quot;&amp;amp;&quot;</span>") != std::string::npos);

  // A reject comment is shown the same way.
  const auto rejected = post_as(f, bob, decide_target(id1, "reject"),
                                "csrf=" + bob.csrf + "&comment=" + form_encode("<b>no</b>\u202e"));
  CHECK(rejected->status == 303);
  const auto after = get_as(f, bob, "/approvals/tickets/" + std::string{id1});
  CHECK(after->body.find("<span id=\"review-comment\">&lt;b&gt;no&lt;/b&gt;<span class=\"cc\">\\u202e</span></span>") !=
        std::string::npos);
}

TEST_CASE("approvals page: an approver approves a ticket once, and the decision is audited via=web") {
  fixture f;
  f.mint(id1);
  const browser bob = sign_in(f, "tok-bob");
  const auto page = get_as(f, bob, "/approvals/tickets/" + std::string{id1});
  REQUIRE(page->status == 200);
  CHECK(page->body.find("<section id=\"decide\"") != std::string::npos);
  CHECK(page->body.find("<div id=\"ticket-state\" data-status=\"pending\">") != std::string::npos);
  CHECK(csrf_in(page->body, "approve") == bob.csrf);

  const auto done = post_as(f, bob, decide_target(id1, "approve"), "csrf=" + bob.csrf);
  REQUIRE(done);
  CHECK(done->status == 303);
  CHECK(header_of(*done, "Location") == "/approvals/tickets/" + std::string{id1} + "?result=approved");
  const auto t = f.service.get(id1);
  REQUIRE(t.has_value());
  REQUIRE(t->has_value());
  CHECK((*t)->status == approval_status::approved);
  CHECK((*t)->reviewed_by == "bob");

  const auto shown = get_as(f, bob, header_of(*done, "Location"));
  CHECK(shown->body.find("<p class=\"notice\" id=\"flash\" role=\"status\">You approved this request.</p>") !=
        std::string::npos);
  CHECK(shown->body.find("data-status=\"approved\"") != std::string::npos);
  CHECK(shown->body.find("<section id=\"decide\"") == std::string::npos);
  CHECK(shown->body.find("<strong id=\"reviewer\">bob</strong>") != std::string::npos);

  // A second decision is refused by the service, and says so.
  const auto again = post_as(f, bob, decide_target(id1, "reject"), "csrf=" + bob.csrf);
  CHECK(header_of(*again, "Location").ends_with("?result=already_reviewed"));

  const auto rows = f.audit.entries();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].action == "approval.approve");
  CHECK(rows[0].principal_id == "bob");
  CHECK(rows[0].result == audit_result::success);
  CHECK(rows[0].detail == "approval_id=" + std::string{id1} + " approved via=web");
  CHECK(rows[1].action == "approval.reject");
  CHECK(rows[1].result == audit_result::denied);
  CHECK(rows[1].detail == "approval_id=" + std::string{id1} + " refused: already_reviewed via=web");
}

TEST_CASE("approvals page: a browser's own form post passes with its Origin, or with a null Origin from the same origin") {
  fixture f;
  f.mint(id1);
  f.mint(id2, "alice", R"({"tag":"y"})");
  const browser bob = sign_in(f, "tok-bob");
  request same = post(decide_target(id1, "approve"), "csrf=" + bob.csrf);
  same.header("Sec-Fetch-Site", "same-origin");
  same.header("Cookie", bob.cookie);
  CHECK(same.send(*f.page)->status == 303);
  CHECK((*f.service.get(id1))->status == approval_status::approved);
  request opaque = post(decide_target(id2, "reject"), "csrf=" + bob.csrf);
  opaque.fields[1].second = "null";
  opaque.header("Sec-Fetch-Site", "same-origin");
  opaque.header("Cookie", bob.cookie);
  CHECK(opaque.send(*f.page)->status == 303);
  CHECK((*f.service.get(id2))->status == approval_status::rejected);
  const auto r = get("/approvals/login").send(*f.page);
  CHECK(header_of(*r, "Referrer-Policy") == "same-origin");
}

TEST_CASE("approvals page: a submitter gets no decision forms on their own ticket, and the service refuses them") {
  fixture f;
  f.mint(id1, "dave");
  const browser dave = sign_in(f, "tok-dave");
  const auto page = get_as(f, dave, "/approvals/tickets/" + std::string{id1});
  CHECK(page->body.find("id=\"own-ticket\"") != std::string::npos);
  CHECK(page->body.find("<section id=\"decide\"") == std::string::npos);
  CHECK(page->body.find("id=\"approve-submit\"") == std::string::npos);
  const auto forced = post_as(f, dave, decide_target(id1, "approve"), "csrf=" + dave.csrf);
  CHECK(header_of(*forced, "Location").ends_with("?result=self_review"));
  CHECK((*f.service.get(id1))->status == approval_status::pending);

  // An approver who is not a human-interactive principal may read but not decide.
  const browser svc = sign_in(f, "tok-svc");
  const auto svc_page = get_as(f, svc, "/approvals/tickets/" + std::string{id1});
  CHECK(svc_page->body.find("id=\"cannot-decide\"") != std::string::npos);
  CHECK(svc_page->body.find("<section id=\"decide\"") == std::string::npos);
  const auto svc_forced = post_as(f, svc, decide_target(id1, "approve"), "csrf=" + svc.csrf);
  CHECK(header_of(*svc_forced, "Location").ends_with("?result=approver_assurance_required:non_human_principal"));
  CHECK((*f.service.get(id1))->status == approval_status::pending);
}

TEST_CASE("approvals page: a decision from another origin, or without the session's token, does nothing") {
  fixture f;
  f.mint(id1);
  const browser bob = sign_in(f, "tok-bob");
  SUBCASE("another Origin") {
    request r = post(decide_target(id1, "approve"), "csrf=" + bob.csrf);
    r.fields[1].second = "http://127.0.0.1:9999";
    r.header("Cookie", bob.cookie);
    CHECK(r.send(*f.page)->status == 403);
    CHECK(f.audit.entries().at(0).detail.find("refused: cross_origin") != std::string::npos);
  }
  SUBCASE("https where the page is http") {
    request r = post(decide_target(id1, "approve"), "csrf=" + bob.csrf);
    r.fields[1].second = "https://127.0.0.1:8080";
    r.header("Cookie", bob.cookie);
    CHECK(r.send(*f.page)->status == 403);
  }
  SUBCASE("no Origin, and a cross-site fetch") {
    request r = post(decide_target(id1, "approve"), "csrf=" + bob.csrf);
    r.fields.erase(r.fields.begin() + 1);
    r.header("Sec-Fetch-Site", "cross-site");
    r.header("Cookie", bob.cookie);
    CHECK(r.send(*f.page)->status == 403);
  }
  SUBCASE("an opaque null Origin with a cross-site or no Sec-Fetch-Site") {
    for (const std::string_view site : {"cross-site", "same-site", ""}) {
      request r = post(decide_target(id1, "approve"), "csrf=" + bob.csrf);
      r.fields[1].second = "null";
      if (!site.empty()) r.header("Sec-Fetch-Site", std::string{site});
      r.header("Cookie", bob.cookie);
      CHECK(r.send(*f.page)->status == 403);
    }
  }
  SUBCASE("a wrong token") {
    CHECK(post_as(f, bob, decide_target(id1, "approve"), "csrf=" + std::string(64, '0'))->status == 403);
    CHECK(post_as(f, bob, decide_target(id1, "approve"), "")->status == 403);
    CHECK(f.audit.entries().at(0).detail.find("refused: csrf") != std::string::npos);
  }
  SUBCASE("another approver's token") {
    const browser carol = sign_in(f, "tok-carol");
    CHECK(post_as(f, bob, decide_target(id1, "approve"), "csrf=" + carol.csrf)->status == 403);
  }
  CHECK((*f.service.get(id1))->status == approval_status::pending);
}

TEST_CASE("approvals page: a decision needs a fresh sign-in, and sessions end when idle, old or revoked") {
  approvals_page_options o;
  o.fresh_sign_in = 5min;
  o.session_idle_timeout = 15min;
  o.session_lifetime = 1h;
  fixture f{o};
  f.mint(id1);
  browser bob = sign_in(f, "tok-bob");

  SUBCASE("stale for deciding, still good for reading") {
    f.clock.advance(6min);
    const auto r = post_as(f, bob, decide_target(id1, "approve"), "csrf=" + bob.csrf);
    CHECK(r->status == 303);
    CHECK(header_of(*r, "Location") == "/approvals/login?reauth=1");
    CHECK((*f.service.get(id1))->status == approval_status::pending);
    CHECK(f.audit.entries().at(0).detail.find("refused: sign_in_not_fresh") != std::string::npos);
    const auto notice = get("/approvals/login?reauth=1").send(*f.page);
    CHECK(notice->body.find("id=\"reauth-notice\"") != std::string::npos);
    CHECK(get_as(f, bob, "/approvals")->status == 200);
    // Signing in again makes a new session, and the old cookie stops working.
    const browser again = sign_in(f, "tok-bob");
    CHECK(again.cookie != bob.cookie);
    CHECK(post_as(f, again, decide_target(id1, "approve"), "csrf=" + again.csrf)->status == 303);
    CHECK((*f.service.get(id1))->status == approval_status::approved);
  }
  SUBCASE("polls do not keep a session alive") {
    for (int i = 0; i < 14; ++i) {
      f.clock.advance(1min);
      CHECK(get_as(f, bob, "/approvals/live")->status == 200);
    }
    f.clock.advance(1min);
    CHECK(get_as(f, bob, "/approvals/live")->status == 401);
    CHECK(get_as(f, bob, "/approvals")->status == 303);
  }
  SUBCASE("use keeps it alive until its lifetime") {
    for (int i = 0; i < 5; ++i) {
      f.clock.advance(10min);
      CHECK(get_as(f, bob, "/approvals")->status == 200);
    }
    f.clock.advance(10min);
    CHECK(get_as(f, bob, "/approvals")->status == 303);
  }
  SUBCASE("a revoked credential ends it") {
    f.tokens.revoked->insert("bob");
    CHECK(get_as(f, bob, "/approvals")->status == 303);
    f.tokens.revoked->clear();
    CHECK(get_as(f, bob, "/approvals")->status == 303);  // ended, not suspended
  }
  SUBCASE("signing out ends it") {
    CHECK(post_as(f, bob, "/approvals/logout", "csrf=" + bob.csrf)->status == 303);
    CHECK(get_as(f, bob, "/approvals")->status == 303);
  }
}

TEST_CASE("approvals page: the sessions held are bounded, the least recently used going first") {
  approvals_page_options o;
  o.max_sessions = 2;
  fixture f{o};
  const browser bob = sign_in(f, "tok-bob");
  f.clock.advance(1s);
  const browser carol = sign_in(f, "tok-carol");
  f.clock.advance(1s);
  CHECK(get_as(f, bob, "/approvals")->status == 200);  // bob is now the more recently used
  f.clock.advance(1s);
  const browser dave = sign_in(f, "tok-dave");
  CHECK(get_as(f, bob, "/approvals")->status == 200);
  CHECK(get_as(f, dave, "/approvals")->status == 200);
  CHECK(get_as(f, carol, "/approvals")->status == 303);
}

TEST_CASE("approvals page: methods, forms and sizes are checked") {
  fixture f;
  f.mint(id1);
  const browser bob = sign_in(f, "tok-bob");
  request put = get("/approvals");
  put.method = "PUT";
  const auto r = put.send(*f.page);
  CHECK(r->status == 405);
  CHECK(header_of(*r, "Allow") == "GET");
  const auto g = get_as(f, bob, decide_target(id1, "approve"));
  CHECK(g->status == 405);
  CHECK(header_of(*g, "Allow") == "POST");
  request p = get("/approvals/login");
  p.method = "POS";
  CHECK(p.send(*f.page)->status == 405);

  const auto big = post_as(f, bob, decide_target(id1, "approve"), "csrf=" + bob.csrf + "&comment=" + std::string(9000, 'x'));
  CHECK(big->status == 413);
  http_request_view head;
  head.method = "POST";
  head.target = "/approvals/login";
  head.declared_length = 8193;
  const auto early = f.page->check_head(head);
  REQUIRE(early);
  CHECK(early->status == 413);
  head.declared_length = 100;
  CHECK_FALSE(f.page->check_head(head));

  // A comment is decoded: '+' is a space, %XX a byte.
  const auto rejected = post_as(f, bob, decide_target(id1, "reject"), "csrf=" + bob.csrf + "&comment=too+risky%21");
  CHECK(rejected->status == 303);
  CHECK((*f.service.get(id1))->review_comment == "too risky!");
  CHECK(post_as(f, bob, decide_target(id2, "approve"), "csrf=" + bob.csrf + "&comment=%")->status == 403);
  CHECK(header_of(*post_as(f, bob, decide_target(id2, "approve"), "csrf=" + bob.csrf), "Location")
            .ends_with("?result=not_found"));
  CHECK(post_as(f, bob, decide_target("nothex", "approve"), "csrf=" + bob.csrf)->status == 404);
  CHECK(get_as(f, bob, "/approvals/tickets/" + std::string{id2})->status == 404);
}

namespace {

// A store without the history capability.
struct plain_store {
  memory_approval_store inner;
  result<approval_mint_result> mint(const approval_mint_request& m) { return inner.mint(m); }
  result<std::optional<approval_ticket>> get(std::string_view id) { return inner.get(id); }
  result<approval_consume_status> consume(const approval_consume_request& c) { return inner.consume(c); }
  result<approval_review_status> review(const approval_review_request& r) { return inner.review(r); }
  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) { return inner.expire(now, lifetime); }
  result<std::vector<approval_ticket>> pending(std::size_t limit) { return inner.pending(limit); }
};

}  // namespace

TEST_CASE("approvals page: a store that keeps no history shows no recent decisions, and says so") {
  plain_store store;
  approval_service service{store};
  token_table tokens;
  tokens.tokens.emplace("tok-bob", make_principal("bob", principal_kind::human_interactive, true, {"approver"}));
  const approvals_page page{service, tokens, approvers()};
  request g = get("/approvals/login");
  const auto form = g.send(page);
  request p = post("/approvals/login", "csrf=" + csrf_in(form->body) + "&credential=tok-bob");
  p.header("Cookie", cookie_pair(set_cookies(*form)[0]));
  const auto done = p.send(page);
  REQUIRE(done->status == 303);
  request live = get("/approvals/live");
  live.header("Cookie", cookie_pair(set_cookies(*done)[0]));
  const auto r = live.send(page);
  REQUIRE(r->status == 200);
  CHECK(r->body.find("id=\"no-history\"") != std::string::npos);
}

TEST_CASE("approvals page: mounted on the HTTP endpoint, behind its Host check") {
  fixture f;
  server_info info;
  info.name = "page-test";
  info.version = "1.0.0";
  server_builder b{info};
  server srv = server_fixture::build(b);
  http_endpoint endpoint{srv, f.tokens};
  endpoint.set_approvals_page(*f.page);
  CHECK(endpoint.matches("/approvals/login"));
  const auto send = [&](std::string_view host) {
    const std::array<http_header_view, 1> headers{http_header_view{"Host", host}};
    http_request_view req;
    req.method = "GET";
    req.target = "/approvals/login";
    req.headers = headers;
    std::optional<http_reply> got;
    endpoint.handle(req, [&got](http_reply r) { got = std::move(r); });
    REQUIRE(got);
    return std::move(got->head);
  };
  const http_response ok = send("127.0.0.1:8080");
  CHECK(ok.status == 200);
  CHECK(ok.body.find("id=\"signin\"") != std::string::npos);
  CHECK(send("rebound.example").status == 403);

  const std::array<http_header_view, 1> headers{http_header_view{"Host", "127.0.0.1"}};
  http_request_view head;
  head.method = "POST";
  head.target = "/approvals/login";
  head.headers = headers;
  head.declared_length = 1U << 20U;
  const auto early = endpoint.check_head(head);
  REQUIRE(early);
  CHECK(early->status == 413);
}
