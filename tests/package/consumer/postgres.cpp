// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of mcpcore::postgres (or, header-only, of the PostgreSQL headers and
// libpq): opens an approval store on a server that cannot exist (a unix-socket directory that is
// not there) and expects the transient error of an unreachable server
// (docs/concepts/approval_store.md#shipped-models). No server is needed: the program proves that
// the library and libpq link, and that the call runs through libpq.
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/postgres_approval_store.hpp>

#include <cstdio>

#if defined(CONSUMER_EXPECT_HEADER_ONLY) != defined(MCPCORE_HEADER_ONLY)
#  error "the linked target did not select the expected compile mode"
#endif

int main() {
  auto store = mcpcore::postgres_approval_store::open("host=/nonexistent dbname=x connect_timeout=1", {});
  if (store) {
    std::fprintf(stderr, "opened a store on a server that does not exist\n");
    return 1;
  }
  const auto message = store.error().message();
  std::printf("refused as expected: %s\n", message.c_str());
  return !message.empty() && !mcpcore::is_permanent_store_error(store.error()) ? 0 : 1;
}
