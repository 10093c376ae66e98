// SPDX-License-Identifier: Apache-2.0
// mcpcore::postgres: the PostgreSQL approval store and audit sink, compiled apart (only their users
// link libpq).
#if defined(MCPCORE_HEADER_ONLY)
#  error "src/mcpcore_postgres.cpp is for separate compilation"
#endif
#include <mcpcore/stores/impl/postgres_approval_store.ipp>  // IWYU pragma: keep
#include <mcpcore/stores/impl/postgres_audit_sink.ipp>      // IWYU pragma: keep
