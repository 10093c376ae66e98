// SPDX-License-Identifier: Apache-2.0
// docs/concepts/authenticator.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/authenticator.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace authenticator_doc {

// ---- docs/concepts/authenticator.md snippet (keep identical) ----
// Principals from an `X-Api-Key` header, for a host that issues keys of its own. Every entry
// is compared, in time independent of where the keys differ (requirement 3); a key revoked
// while a stream is open closes that stream at its next tick (`revalidate` says `revoked`).
// The endpoint keeps its own copy, so the table is shared behind a shared_ptr.
class api_key_authenticator {
 public:
  struct entry {
    std::string key;  // kept in memory for brevity; token_authenticator keeps SHA-256 digests only
    mcpcore::principal who;
  };

  explicit api_key_authenticator(std::vector<entry> entries) : table_(std::make_shared<table>()) {
    table_->entries = std::move(entries);
  }

  std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    const auto key = req.header("X-Api-Key");
    if (!key || req.header_repeated("X-Api-Key")) return std::nullopt;
    const std::shared_lock lock{table_->mutex};
    const entry* found = nullptr;
    for (const auto& e : table_->entries) {  // no early exit
      if (same_secret(e.key, *key)) found = &e;
    }
    if (found == nullptr) return std::nullopt;
    return found->who;
  }

  mcpcore::credential_verdict revalidate(const mcpcore::principal& p) const {
    const std::shared_lock lock{table_->mutex};
    for (const auto& e : table_->entries) {
      if (e.who.id == p.id) return mcpcore::credential_verdict::valid;
    }
    return mcpcore::credential_verdict::revoked;
  }

  void revoke(std::string_view principal_id) {
    const std::unique_lock lock{table_->mutex};
    std::erase_if(table_->entries, [&](const entry& e) { return e.who.id == principal_id; });
  }

 private:
  // Reads all of `expected` whatever `given` holds: the time depends on the key's length only.
  static bool same_secret(std::string_view expected, std::string_view given) noexcept {
    unsigned diff = expected.size() == given.size() ? 0U : 1U;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const char g = i < given.size() ? given[i] : '\0';
      diff |= static_cast<unsigned>(static_cast<unsigned char>(expected[i]) ^ static_cast<unsigned char>(g));
    }
    return diff == 0U;
  }

  struct table {
    mutable std::shared_mutex mutex;
    std::vector<entry> entries;
  };
  std::shared_ptr<table> table_;
};
static_assert(mcpcore::authenticator<api_key_authenticator>);
// ---- end of snippet ----

}  // namespace authenticator_doc

namespace {

struct captured {
  std::optional<mcpcore::http_reply> reply;
};

mcpcore::http_reply send(mcpcore::http_endpoint& ep, std::vector<mcpcore::http_header> headers, std::string body) {
  headers.push_back({"Host", "localhost:8765"});
  headers.push_back({"Content-Type", "application/json"});
  headers.push_back({"Accept", "application/json, text/event-stream"});
  mcpcore::http_request_view v;
  v.method = "POST";
  v.target = "/mcp";
  v.body = body;
  std::vector<mcpcore::http_header_view> fields;
  for (const auto& h : headers) fields.push_back({h.name, h.value});
  v.headers = fields;
  v.local = mcpcore::parse_local_address("127.0.0.1:8765");
  captured c;
  ep.handle(v, [&c](mcpcore::http_reply r) { c.reply = std::move(r); });  // no executor: inline
  REQUIRE(c.reply.has_value());
  return std::move(*c.reply);
}

}  // namespace

TEST_CASE("docs/concepts/authenticator.md: an API-key authenticator behind the HTTP endpoint") {
  using authenticator_doc::api_key_authenticator;
  api_key_authenticator keys{{{.key = "k-alice-0123456789", .who = {.id = "alice"}},
                              {.key = "k-bob-9876543210", .who = {.id = "bob"}}}};

  mcpcore::server_builder b{{.name = "keys", .version = "1.0.0"}};
  auto srv = server_fixture::build(b);
  mcpcore::http_endpoint ep{srv, keys};  // a copy that shares the table

  const std::string init = server_fixture::initialize(1);
  const auto anonymous = send(ep, {}, init);
  CHECK(anonymous.head.status == 401);
  CHECK(anonymous.head.header("WWW-Authenticate").value_or("") == "Bearer");
  CHECK(send(ep, {{"X-Api-Key", "k-alice-012345678"}}, init).head.status == 401);    // one byte short
  CHECK(send(ep, {{"X-Api-Key", "k-alice-0123456789x"}}, init).head.status == 401);  // one byte long
  CHECK(send(ep, {{"X-Api-Key", "k-bob-9876543210"}, {"X-Api-Key", "k-bob-9876543210"}}, init).head.status == 401);

  const auto ok = send(ep, {{"X-Api-Key", "k-alice-0123456789"}}, init);
  CHECK(ok.head.status == 200);
  CHECK(ok.head.header("Mcp-Session-Id").has_value());

  CHECK(keys.revalidate({.id = "alice"}) == mcpcore::credential_verdict::valid);
  keys.revoke("alice");  // through the host's copy: the endpoint's copy sees it
  CHECK(keys.revalidate({.id = "alice"}) == mcpcore::credential_verdict::revoked);
  CHECK(send(ep, {{"X-Api-Key", "k-alice-0123456789"}}, init).head.status == 401);
  CHECK(send(ep, {{"X-Api-Key", "k-bob-9876543210"}}, init).head.status == 200);
}
