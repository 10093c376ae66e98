// SPDX-License-Identifier: Apache-2.0
// Concurrency test of the approvals page (docs/approvals-page.md): sign-ins, polls, page views and
// decisions from many threads on one page, with the session table at its cap; run under TSan by the
// tsan preset.
#include <mcpcore/governance/approvals_page.hpp>

#include <doctest/doctest.h>

#include "support/approval_tickets.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace mcpcore;

// Tokens `tok-<n>` are approvers `approver-<n>`, human-interactive and assured.
struct numbered_tokens {
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto h = req.header("Authorization");
    if (!h || !h->starts_with("Bearer tok-")) return std::nullopt;
    return approval_tickets::make_principal("approver-" + std::string{h->substr(11)},
                                            principal_kind::human_interactive, true, {"approver"});
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const { return credential_verdict::valid; }
};

struct exchange {
  std::string method = "GET";
  std::string target;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  [[nodiscard]] http_response send(const approvals_page& page) const {
    std::vector<http_header_view> views;
    for (const auto& [n, v] : headers) views.push_back({n, v});
    http_request_view req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.headers = views;
    req.remote = "10.1.2.3:5000";
    auto r = page.handle(req);
    REQUIRE(r.has_value());
    return std::move(*r);
  }
};

std::string cookie_of(const http_response& r, std::string_view name) {
  for (const auto& h : r.headers) {
    if (h.name == "Set-Cookie" && h.value.starts_with(std::string{name} + "=")) {
      return h.value.substr(0, h.value.find(';'));
    }
  }
  return {};
}

std::string csrf_of(const std::string& html, std::string_view form) {
  constexpr std::string_view marker = "name=\"csrf\" value=\"";
  const auto at = html.find(marker, html.find(form));
  if (at == std::string::npos) return {};
  const auto start = at + marker.size();
  return html.substr(start, html.find('"', start) - start);
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("approvals page: 8 threads sign in, poll, view and decide at once, and each ticket is decided once") {
    memory_approval_store store;
    approval_service service{store};
    approvals_page_options o;
    o.max_sessions = 4;           // the threads' sign-ins push one another out
    o.signin_burst = 1000;        // one client address for all of them
    memory_audit_sink audit{4096};
    approvals_page page{service, numbered_tokens{}, approval_tickets::approvers(), o};
    page.set_audit(audit);  // before serving

    constexpr int tickets = 16;
    std::vector<std::string> ids;
    for (int i = 0; i < tickets; ++i) {
      ids.push_back(approval_tickets::tid(static_cast<unsigned>(i + 1)));
      const std::string scope = R"({"n":)" + std::to_string(i) + "}";
      approval_tickets::mint_pending(store, service, ids.back(), "agent", scope);
    }

    constexpr int threads = 8;
    std::atomic<int> decided{0};
    std::atomic<int> failures{0};
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int round = 0; round < 6; ++round) {
          const http_response form = exchange{"GET", "/approvals/login", {}, {}}.send(page);
          exchange signin{"POST", "/approvals/login",
                          "csrf=" + csrf_of(form.body, "id=\"signin\"") + "&credential=tok-" + std::to_string(t),
                          {{"Cookie", cookie_of(form, "mcpcore_signin")}}};
          const http_response in = signin.send(page);
          if (in.status != 303) {
            ++failures;
            continue;
          }
          const std::string session = cookie_of(in, "mcpcore_session");
          const http_response queue = exchange{"GET", "/approvals", {}, {{"Cookie", session}}}.send(page);
          if (queue.status != 200) continue;  // pushed out by another thread's sign-in: fine
          const std::string csrf = csrf_of(queue.body, "id=\"logout\"");
          (void)exchange{"GET", "/approvals/live", {}, {{"Cookie", session}}}.send(page);
          for (int k = 0; k < tickets; k += 3) {
            const std::string& id = ids[static_cast<std::size_t>((k + t + round) % tickets)];
            const std::string action = (k + t) % 2 == 0 ? "/approve" : "/reject";
            const http_response r =
                exchange{"POST", "/approvals/tickets/" + id + action, "csrf=" + csrf + "&comment=r" + std::to_string(t),
                         {{"Cookie", session}}}
                    .send(page);
            if (r.status == 303) {
              const auto location = r.header("Location");
              if (location && (location->ends_with("?result=approved") || location->ends_with("?result=rejected"))) {
                ++decided;
              }
            }
            (void)exchange{"GET", "/approvals/tickets/" + id + "/live", {}, {{"Cookie", session}}}.send(page);
          }
        }
      });
    }
    pool.clear();  // joins

    CHECK(failures.load() == 0);
    // Every ticket decided at most once, and every success the page reported is one reviewed ticket.
    int reviewed = 0;
    for (const std::string& id : ids) {
      const auto t = service.get(id);
      REQUIRE(t.has_value());
      REQUIRE(t->has_value());
      if (!(*t)->reviewed_by.empty()) ++reviewed;
    }
    CHECK(decided.load() == reviewed);
    CHECK(reviewed > 0);
    std::size_t successes = 0;
    for (const audit_entry& e : audit.entries()) {
      if (e.result == audit_result::success) ++successes;
    }
    CHECK(successes == static_cast<std::size_t>(reviewed));
  }
}
