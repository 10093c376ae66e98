// SPDX-License-Identifier: Apache-2.0
// mcpcore::sqlite: the SQLite approval store, audit sink and task store, compiled apart (only their users link SQLite).
#if defined(MCPCORE_HEADER_ONLY)
#  error "src/mcpcore_sqlite.cpp is for separate compilation"
#endif
#include <mcpcore/stores/impl/sqlite_approval_store.ipp>  // IWYU pragma: keep
#include <mcpcore/stores/impl/sqlite_audit_sink.ipp>      // IWYU pragma: keep
#include <mcpcore/stores/impl/sqlite_task_store.ipp>      // IWYU pragma: keep
