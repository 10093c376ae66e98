// SPDX-License-Identifier: Apache-2.0
// Tests of scope_map: OAuth scopes as tiers and roles, and the scope a refused call lacks
// (docs/oauth.md#scopes, docs/oauth.md#step-up).
#include <mcpcore/governance/scopes.hpp>

#include <doctest/doctest.h>

#include <mcpcore/governance/policy.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;

namespace {

scope_map yuzu_map() {
  std::vector<scope_grant> g{{.scope = "mcp:read", .tier = "readonly", .roles = {"viewer"}},
                             {.scope = "mcp:operate", .tier = "operator", .roles = {"ops"}},
                             {.scope = "mcp:supervise", .tier = "supervised", .roles = {}},
                             {.scope = "tags", .tier = "", .roles = {"tagger", "viewer"}}};
  REQUIRE_FALSE(scope_map::check(g).has_value());
  return scope_map{std::move(g)};
}

}  // namespace

TEST_CASE("oauth.md/scopes: the tier is the last listed grant the token holds, the roles every grant's") {
  const scope_map m = yuzu_map();
  principal p{.id = "alice"};
  m.apply({"mcp:operate", "tags", "mcp:read"}, p);
  CHECK(p.tier == "operator");
  CHECK(p.roles == std::vector<std::string>{"viewer", "ops", "tagger"});
  CHECK(p.scopes == std::vector<std::string>{"mcp:operate", "tags", "mcp:read"});
  m.apply({"mcp:read"}, p);
  CHECK(p.tier == "readonly");
  CHECK(p.roles == std::vector<std::string>{"viewer"});
}

TEST_CASE("oauth.md/scopes: a token without a tier scope is unscoped, and bad or repeated scopes are dropped") {
  const scope_map m = yuzu_map();
  principal p{.id = "bob", .tier = "supervised"};
  m.apply({"tags", "tags", "bad\"scope", "", "openid"}, p);
  CHECK(p.tier == unscoped_tier);
  CHECK(p.scopes == std::vector<std::string>{"tags", "openid"});
  CHECK(p.roles == std::vector<std::string>{"tagger", "viewer"});
  std::vector<std::string> many;
  for (std::size_t i = 0; i < max_principal_scopes + 5; ++i) many.push_back("s" + std::to_string(i));
  const std::vector<std::string_view> views(many.begin(), many.end());
  m.apply(views, p);
  CHECK(p.scopes.size() == max_principal_scopes);
  CHECK_FALSE(is_scope_token(std::string(max_scope_bytes + 1, 'a')));
  CHECK(is_scope_token(std::string(max_scope_bytes, 'a')));
}

TEST_CASE("oauth.md/scopes: a map refuses a repeated scope, a non-token and too many grants") {
  CHECK(scope_map::check({{.scope = "a"}, {.scope = "a"}}).has_value());
  CHECK(scope_map::check({{.scope = "has space"}}).has_value());
  CHECK(scope_map::check({{.scope = ""}}).has_value());
  std::vector<scope_grant> g(max_scope_grants + 1);
  for (std::size_t i = 0; i < g.size(); ++i) g[i].scope = "s" + std::to_string(i);
  CHECK(scope_map::check(g).has_value());
  g.pop_back();
  CHECK_FALSE(scope_map::check(g).has_value());
}

TEST_CASE("oauth.md/step-up: the first grant the token lacks whose tier the policy allows is the missing scope") {
  const scope_map m = yuzu_map();
  const yuzu_tier_policy policy;
  principal p{.id = "carol"};
  m.apply({"mcp:read"}, p);
  // Tag:Write needs operator or above: mcp:operate is listed first.
  CHECK(m.step_up(policy, p, "Tag", operation::write) == std::optional<std::string_view>{"mcp:operate"});
  // Policy:Write is only supervised's (through approval): mcp:supervise.
  CHECK(m.step_up(policy, p, "Policy", operation::write) == std::optional<std::string_view>{"mcp:supervise"});
  m.apply({"mcp:supervise"}, p);
  CHECK_FALSE(m.step_up(policy, p, "Policy", operation::write).has_value());  // already held
  m.apply({"tags"}, p);  // unscoped: even a read needs a scope
  CHECK(m.step_up(policy, p, "Device", operation::read) == std::optional<std::string_view>{"mcp:read"});
  const principal static_token{.id = "svc", .tier = "readonly"};  // not an OAuth principal
  CHECK_FALSE(m.step_up(policy, static_token, "Tag", operation::write).has_value());
  CHECK_FALSE(scope_map{}.step_up(policy, p, "Tag", operation::write).has_value());
}
