// SPDX-License-Identifier: Apache-2.0
// Tests of the authenticator concept (docs/plugins.md), fixed_authenticator, external_authenticator
// and the endpoint's type erasure.
#include <mcpcore/governance/authenticator.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using mcpcore::credential_verdict;
using mcpcore::http_header_view;
using mcpcore::http_request_view;
using mcpcore::principal;
using mcpcore::principal_kind;

namespace {

// ---- concept conformance ----------------------------------------------------------------------

// Minimal `mcpcore::authenticator` (docs/authentication.md): a const `authenticate` returning
// `std::optional<principal>` and a const `revalidate` returning `credential_verdict`; noexcept is
// not required by the concept (a throw counts as a failed authentication / `indeterminate`).
struct authenticator_archetype {
  std::optional<principal> authenticate(const http_request_view& /*req*/) const { return std::nullopt; }
  credential_verdict revalidate(const principal& /*p*/) const { return credential_verdict::revoked; }
};

struct no_members {};
struct missing_revalidate {
  std::optional<principal> authenticate(const http_request_view&) const { return std::nullopt; }
};
struct missing_authenticate {
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct authenticate_returns_principal {
  principal authenticate(const http_request_view&) const { return {}; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct authenticate_returns_pointer {
  const principal* authenticate(const http_request_view&) const { return nullptr; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct authenticate_returns_optional_string {
  std::optional<std::string> authenticate(const http_request_view&) const { return std::nullopt; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct revalidate_returns_bool {
  std::optional<principal> authenticate(const http_request_view&) const { return std::nullopt; }
  bool revalidate(const principal&) const { return true; }
};
struct revalidate_returns_int {
  std::optional<principal> authenticate(const http_request_view&) const { return std::nullopt; }
  int revalidate(const principal&) const { return 0; }
};
struct authenticate_not_const {
  std::optional<principal> authenticate(const http_request_view&) { return std::nullopt; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct revalidate_not_const {
  std::optional<principal> authenticate(const http_request_view&) const { return std::nullopt; }
  credential_verdict revalidate(const principal&) { return credential_verdict::valid; }
};
struct authenticate_takes_mutable_request {
  std::optional<principal> authenticate(http_request_view&) const { return std::nullopt; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};
struct revalidate_takes_mutable_principal {
  std::optional<principal> authenticate(const http_request_view&) const { return std::nullopt; }
  credential_verdict revalidate(principal&) const { return credential_verdict::valid; }
};
struct authenticate_takes_string_view {
  std::optional<principal> authenticate(std::string_view) const { return std::nullopt; }
  credential_verdict revalidate(const principal&) const { return credential_verdict::valid; }
};

static_assert(mcpcore::authenticator<authenticator_archetype>);
static_assert(mcpcore::authenticator<mcpcore::fixed_authenticator>);
static_assert(!mcpcore::authenticator<int>);
static_assert(!mcpcore::authenticator<no_members>);
static_assert(!mcpcore::authenticator<missing_revalidate>);
static_assert(!mcpcore::authenticator<missing_authenticate>);
static_assert(!mcpcore::authenticator<authenticate_returns_principal>);  // must be able to say "nobody"
static_assert(!mcpcore::authenticator<authenticate_returns_pointer>);
static_assert(!mcpcore::authenticator<authenticate_returns_optional_string>);
static_assert(!mcpcore::authenticator<revalidate_returns_bool>);  // four verdicts, not two
static_assert(!mcpcore::authenticator<revalidate_returns_int>);
static_assert(!mcpcore::authenticator<authenticate_not_const>);  // called through a const reference
static_assert(!mcpcore::authenticator<revalidate_not_const>);
static_assert(!mcpcore::authenticator<authenticate_takes_mutable_request>);
static_assert(!mcpcore::authenticator<revalidate_takes_mutable_principal>);
static_assert(!mcpcore::authenticator<authenticate_takes_string_view>);  // the whole request, not one field

principal alice() {
  return principal{.id = "alice",
                   .tier = "supervised",
                   .kind = principal_kind::human_interactive,
                   .display_name = "Alice",
                   .roles = {"approver"},
                   .assured = true};
}

bool same(const principal& a, const principal& b) {
  return a.id == b.id && a.tier == b.tier && a.kind == b.kind && a.display_name == b.display_name &&
         a.roles == b.roles && a.assured == b.assured;
}

// Counts calls, to show the type erasure forwards each one exactly once.
struct counting_authenticator {
  std::shared_ptr<int> authenticated = std::make_shared<int>(0);
  std::shared_ptr<int> revalidated = std::make_shared<int>(0);
  std::optional<principal> authenticate(const http_request_view& req) const {
    ++*authenticated;
    if (req.header("Authorization") == std::optional<std::string_view>("let me in")) return alice();
    return std::nullopt;
  }
  credential_verdict revalidate(const principal& p) const {
    ++*revalidated;
    return p.id == "alice" ? credential_verdict::valid_stale : credential_verdict::indeterminate;
  }
};
static_assert(mcpcore::authenticator<counting_authenticator>);

}  // namespace

TEST_SUITE("authenticator") {
  TEST_CASE("plugins.md: fixed_authenticator admits every request as its principal") {
    const mcpcore::fixed_authenticator a{alice()};
    const auto none = a.authenticate(http_request_view{});
    REQUIRE(none.has_value());
    CHECK(same(*none, alice()));

    const std::vector<http_header_view> headers{{"Authorization", "Bearer anything"}, {"Cookie", "x=y"}};
    http_request_view req;
    req.method = "POST";
    req.headers = headers;
    const auto with_credentials = a.authenticate(req);
    REQUIRE(with_credentials.has_value());
    CHECK(same(*with_credentials, alice()));
  }

  TEST_CASE("plugins.md: external_authenticator establishes nobody from headers and re-validates through the host's callable") {
    static_assert(mcpcore::authenticator<mcpcore::external_authenticator<>>);
    const std::vector<http_header_view> headers{{"Authorization", "Bearer anything"}};
    http_request_view req;
    req.headers = headers;
    const mcpcore::external_authenticator none;
    CHECK_FALSE(none.authenticate(req).has_value());
    CHECK(none.revalidate(alice()) == credential_verdict::valid);

    struct session_ctx final : mcpcore::host_context {
      explicit session_ctx(int n) : number(n) {}
      int number;
    };
    const mcpcore::external_authenticator host{[](const principal& p) {
      const auto* c = dynamic_cast<const session_ctx*>(p.context.get());
      if (c == nullptr) return credential_verdict::indeterminate;
      return c->number == 7 ? credential_verdict::valid : credential_verdict::revoked;
    }};
    CHECK_FALSE(host.authenticate(req).has_value());
    principal p = alice();
    CHECK(host.revalidate(p) == credential_verdict::indeterminate);
    p.context = std::make_shared<const session_ctx>(7);
    CHECK(host.revalidate(p) == credential_verdict::valid);
    const principal copy = p;  // a copy shares the context
    CHECK(copy.context == p.context);
    p.context = std::make_shared<const session_ctx>(8);
    CHECK(host.revalidate(p) == credential_verdict::revoked);
    CHECK(host.revalidate(copy) == credential_verdict::valid);
  }

  TEST_CASE("sessions.md/credential-re-validation: fixed_authenticator never revokes") {
    const mcpcore::fixed_authenticator a{alice()};
    CHECK(a.revalidate(alice()) == credential_verdict::valid);
    CHECK(a.revalidate(principal{.id = "someone-else"}) == credential_verdict::valid);
    const principal p = alice();
    static_assert(noexcept(a.revalidate(p)));
  }

  TEST_CASE("the type erasure forwards authenticate and revalidate unchanged") {
    const counting_authenticator model;
    const std::unique_ptr<mcpcore::detail::authenticator_base> erased =
        std::make_unique<mcpcore::detail::authenticator_model<counting_authenticator>>(model);

    const std::vector<http_header_view> ok{{"Authorization", "let me in"}};
    http_request_view req;
    req.headers = ok;
    const auto p = erased->authenticate(req);
    REQUIRE(p.has_value());
    CHECK(same(*p, alice()));
    CHECK_FALSE(erased->authenticate(http_request_view{}).has_value());
    CHECK(*model.authenticated == 2);

    CHECK(erased->revalidate(alice()) == credential_verdict::valid_stale);
    CHECK(erased->revalidate(principal{.id = "bob"}) == credential_verdict::indeterminate);
    CHECK(*model.revalidated == 2);
  }
}
