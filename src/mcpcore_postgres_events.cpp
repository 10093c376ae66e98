// SPDX-License-Identifier: Apache-2.0
// mcpcore::postgres, session layer part: the PostgreSQL event bridge (it includes dispatch, which the
// stores layer of src/mcpcore_postgres.cpp may not; docs/architecture.md#layers).
#if defined(MCPCORE_HEADER_ONLY)
#  error "src/mcpcore_postgres_events.cpp is for separate compilation"
#endif
#include <mcpcore/session/impl/postgres_event_bridge.ipp>  // IWYU pragma: keep
