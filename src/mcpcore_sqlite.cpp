// SPDX-License-Identifier: Apache-2.0
// mcpcore::sqlite: the SQLite approval store, compiled apart so that only its users link SQLite.
#if defined(MCPCORE_HEADER_ONLY)
#  error "src/mcpcore_sqlite.cpp is for separate compilation"
#endif
#include <mcpcore/impl/sqlite_approval_store.ipp>  // IWYU pragma: keep
