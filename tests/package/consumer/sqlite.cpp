// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of mcpcore::sqlite: opens an approval store in memory.
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <cstdio>

int main() {
  auto store = mcpcore::sqlite_approval_store::open(":memory:");
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message().c_str());
    return 1;
  }
  const auto pending = store->pending(10);
  return pending && pending->empty() ? 0 : 1;
}
