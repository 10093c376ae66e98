// SPDX-License-Identifier: Apache-2.0
// Fuzzes the approvals page (mcpcore::approvals_page, docs/approvals-page.md) with scripts of
// requests against a page whose approver is already signed in.
//
// The input is a script: requests separated by a line `===`. A request is a line `METHOD TARGET`,
// header lines `Name: value` up to an empty line, then the body. A request line `TICK <n>`
// advances the clock by n seconds (at most 3600) instead. In targets, header values and bodies,
// `$SESSION` becomes the signed-in approver's session cookie value, `$CSRF` that session's form
// token, `$NONCE` and `$SIGNIN` a fresh sign-in form's nonce cookie and its token, and `$T1`, `$T2`
// the two tickets' ids. The second ticket's arguments are the first line of the input, whatever
// its bytes.
//
// Invariants, for every answer:
//  - the page answers every target under its path, never throws, and only with 200, 303, 400,
//    401, 403, 404, 405, 413, 429, 500 or 503;
//  - every answer carries the Content-Security-Policy with frame-ancestors 'none' and
//    Cache-Control: no-store;
//  - an HTML answer holds no C0 control but LF, no DEL, no bidirectional override (U+202E) and no
//    `<script` but the page's own script element (untrusted text is escaped and shown visibly);
//  - a ticket changes state only through a POST to its approve or reject route whose body holds
//    the session's CSRF token and whose Origin, when present, is the page's own;
//  - the audit holds at most one row per POST to a decision route.
#include <mcpcore/governance/approvals_page.hpp>

#include "fuzz_check.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace mcpcore;

constexpr std::string_view t1 = "0123456789abcdef0123456789abcdef";
constexpr std::string_view t2 = "fedcba9876543210fedcba9876543210";
constexpr std::string_view own_script = "<script src=\"/approvals/static/app.js\" defer></script>";

struct tokens {
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto h = req.header("Authorization");
    if (!h || *h != "Bearer tok-bob") return std::nullopt;
    principal p;
    p.id = "bob";
    p.kind = principal_kind::human_interactive;
    p.assured = true;
    p.roles = {"approver"};
    return p;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const { return credential_verdict::valid; }
};

role_table_authorizer approvers() {
  role_table_authorizer a;
  a.grant("approver", "Approval", operation::approve);
  return a;
}

struct request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

http_response send(const approvals_page& page, const request& r) {
  std::vector<http_header_view> views;
  views.reserve(r.headers.size());
  for (const auto& [n, v] : r.headers) views.push_back({n, v});
  http_request_view req;
  req.method = r.method;
  req.target = r.target;
  req.body = r.body;
  req.headers = views;
  req.remote = "127.0.0.1:4000";
  std::optional<http_response> answer = page.handle(req);
  MCPCORE_FUZZ_CHECK(answer.has_value() == page.matches(r.target));
  return answer ? std::move(*answer) : http_response{};
}

std::string cookie_value(const http_response& r, std::string_view name) {
  for (const auto& h : r.headers) {
    if (h.name == "Set-Cookie" && h.value.starts_with(std::string{name} + "=")) {
      return h.value.substr(name.size() + 1, h.value.find(';') - name.size() - 1);
    }
  }
  return {};
}

std::string field(const std::string& html, std::string_view from) {
  constexpr std::string_view marker = "name=\"csrf\" value=\"";
  const auto at = html.find(marker, html.find(from));
  if (at == std::string::npos) return {};
  const auto start = at + marker.size();
  return html.substr(start, html.find('"', start) - start);
}

char lower_char(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

std::string lower(std::string_view s) {
  std::string out;
  for (const char c : s) out += lower_char(c);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The first header named `name` (ASCII case-insensitively), as the page reads it.
std::optional<std::string_view> first_header(const request& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (lower(n) == lower(name)) return trim(v);
  }
  return std::nullopt;
}

void replace_all(std::string& s, std::string_view what, std::string_view with) {
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) {
    s.replace(at, what.size(), with);
  }
}

void check_answer(const http_response& r) {
  constexpr int allowed[] = {200, 303, 400, 401, 403, 404, 405, 413, 429, 500, 503};
  bool known = false;
  for (const int s : allowed) known = known || r.status == s;
  MCPCORE_FUZZ_CHECK(known);
  const auto csp = r.header("Content-Security-Policy");
  MCPCORE_FUZZ_CHECK(csp && csp->find("frame-ancestors 'none'") != std::string_view::npos);
  MCPCORE_FUZZ_CHECK(r.header("Cache-Control") == std::optional<std::string_view>{"no-store"});
  const auto type = r.header("Content-Type");
  if (!type || !type->starts_with("text/html")) return;
  for (const char c : r.body) {
    const auto u = static_cast<unsigned char>(c);
    MCPCORE_FUZZ_CHECK(u >= 0x20 || u == '\n');
    MCPCORE_FUZZ_CHECK(u != 0x7F);
  }
  MCPCORE_FUZZ_CHECK(r.body.find("\xE2\x80\xAE") == std::string::npos);
  for (std::size_t at = r.body.find("<script"); at != std::string::npos; at = r.body.find("<script", at + 1)) {
    MCPCORE_FUZZ_CHECK(std::string_view{r.body}.substr(at).starts_with(own_script));
  }
}

approval_status status_of(approval_service& s, std::string_view id) {
  const auto t = s.get(id);
  MCPCORE_FUZZ_CHECK(t.has_value() && t->has_value());
  return (*t)->status;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input{reinterpret_cast<const char*>(data), size};
  memory_approval_store store;
  manual_clock clock;
  clock.advance(std::chrono::seconds{1});
  approval_service service{store, clock_ref{clock}};
  memory_audit_sink audit{1024};
  approvals_page page{service, tokens{}, approvers()};
  page.set_audit(audit);

  const auto mint = [&](std::string_view id, std::string_view scope) {
    const auto r = store.mint(approval_mint_request{.id = id,
                                                    .definition_id = "mcp.delete_tag",
                                                    .origin = approval_origin_mcp,
                                                    .submitted_by = "alice",
                                                    .scope = scope,
                                                    .now = service.now(),
                                                    .lifetime = service.options().ticket_lifetime,
                                                    .per_submitter_cap = 25,
                                                    .global_cap = 1000});
    MCPCORE_FUZZ_CHECK(r.has_value());
  };
  mint(t1, R"({"tag":"x"})");
  mint(t2, std::string_view{input}.substr(0, input.find('\n')));

  // The approver signs in as a browser would.
  const http_response form = send(page, {"GET", "/approvals/login", {}, {}});
  const std::string nonce = cookie_value(form, "mcpcore_signin");
  const std::string signin = field(form.body, "id=\"signin\"");
  const http_response signed_in =
      send(page, {"POST", "/approvals/login", {{"Cookie", "mcpcore_signin=" + nonce}}, "csrf=" + signin + "&credential=tok-bob"});
  MCPCORE_FUZZ_CHECK(signed_in.status == 303);
  const std::string session = cookie_value(signed_in, "mcpcore_session");
  const http_response queue = send(page, {"GET", "/approvals", {{"Cookie", "mcpcore_session=" + session}}, {}});
  const std::string csrf = field(queue.body, "id=\"logout\"");
  MCPCORE_FUZZ_CHECK(!session.empty() && !csrf.empty());
  const http_response fresh_form = send(page, {"GET", "/approvals/login", {}, {}});
  const std::string fresh_nonce = cookie_value(fresh_form, "mcpcore_signin");
  const std::string fresh_signin = field(fresh_form.body, "id=\"signin\"");

  const auto expand = [&](std::string s) {
    replace_all(s, "$SESSION", session);
    replace_all(s, "$CSRF", csrf);
    replace_all(s, "$NONCE", fresh_nonce);
    replace_all(s, "$SIGNIN", fresh_signin);
    replace_all(s, "$T1", t1);
    replace_all(s, "$T2", t2);
    return s;
  };

  std::size_t decision_posts = 0;
  std::string_view rest{input};
  rest = rest.substr(rest.find('\n') == std::string_view::npos ? rest.size() : rest.find('\n') + 1);
  for (int n = 0; n < 64 && !rest.empty(); ++n) {
    const auto end = rest.find("\n===\n");
    std::string_view chunk = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 5);
    const auto line_end = chunk.find('\n');
    const std::string_view first = chunk.substr(0, line_end);
    chunk = line_end == std::string_view::npos ? std::string_view{} : chunk.substr(line_end + 1);
    if (first.starts_with("TICK ")) {
      unsigned seconds = 0;
      for (const char c : first.substr(5)) {
        if (c < '0' || c > '9') break;
        seconds = seconds * 10 + static_cast<unsigned>(c - '0');
        if (seconds > 3600) break;
      }
      clock.advance(std::chrono::seconds{seconds > 3600 ? 3600 : seconds});
      continue;
    }
    request r;
    const auto space = first.find(' ');
    r.method = std::string{first.substr(0, space)};
    r.target = expand(space == std::string_view::npos ? std::string{"/approvals"} : std::string{first.substr(space + 1)});
    if (!r.target.starts_with('/')) r.target.insert(0, "/approvals/");
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const std::string_view line = chunk.substr(0, nl);
      chunk = nl == std::string_view::npos ? std::string_view{} : chunk.substr(nl + 1);
      if (line.empty()) break;
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view value = line.substr(colon + 1);
      while (value.starts_with(' ')) value.remove_prefix(1);
      r.headers.emplace_back(std::string{line.substr(0, colon)}, expand(std::string{value}));
    }
    r.body = expand(std::string{chunk});

    const approval_status before1 = status_of(service, t1);
    const approval_status before2 = status_of(service, t2);
    const http_response answer = send(page, r);
    if (page.matches(r.target)) check_answer(answer);
    const bool decision = r.method == "POST" &&
                          (r.target.ends_with("/approve") || r.target.ends_with("/reject"));
    if (decision) ++decision_posts;
    for (const auto& [id, before] : {std::pair{t1, before1}, std::pair{t2, before2}}) {
      if (status_of(service, id) == before) continue;
      MCPCORE_FUZZ_CHECK(decision);
      MCPCORE_FUZZ_CHECK(r.target.find(id) != std::string::npos);
      MCPCORE_FUZZ_CHECK(r.body.find(csrf) != std::string::npos);
      if (const auto origin = first_header(r, "Origin")) {
        const auto host = first_header(r, "Host");
        MCPCORE_FUZZ_CHECK(host.has_value());
        MCPCORE_FUZZ_CHECK(lower(*origin) == "http://" + lower(trim(*host)));
      }
    }
  }
  MCPCORE_FUZZ_CHECK(audit.entries().size() <= decision_posts);
  return 0;
}
