// SPDX-License-Identifier: Apache-2.0
// Every non-template definition of the library, compiled once into mcpcore::mcpcore.
#ifndef MCPCORE_IMPL_SRC_HPP
#define MCPCORE_IMPL_SRC_HPP

#if defined(MCPCORE_HEADER_ONLY)
#  error "impl/src.hpp is for separate compilation; a header-only build must not compile it"
#endif
#if !defined(MCPCORE_SEPARATE_COMPILATION)
#  error "compile the library with MCPCORE_SEPARATE_COMPILATION defined"
#endif

#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/operation.ipp>
#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/schema_compile.ipp>
#include <mcpcore/dispatch/impl/schema_regex.ipp>
#include <mcpcore/dispatch/impl/schema_tables.ipp>
#include <mcpcore/dispatch/impl/schema_validate.ipp>
#include <mcpcore/dispatch/impl/server.ipp>
#include <mcpcore/dispatch/impl/server_builder.ipp>
#include <mcpcore/dispatch/impl/server_methods.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/tool.ipp>
#include <mcpcore/dispatch/impl/tools_call.ipp>
#include <mcpcore/dispatch/impl/waiting_call.ipp>
#include <mcpcore/governance/impl/approval.ipp>
#include <mcpcore/governance/impl/approval_endpoint.ipp>
#include <mcpcore/governance/impl/approvals_page.ipp>
#include <mcpcore/governance/impl/audit.ipp>
#include <mcpcore/governance/impl/metrics.ipp>
#include <mcpcore/governance/impl/policy.ipp>
#include <mcpcore/governance/impl/task.ipp>
#include <mcpcore/impl/expected.ipp>
#include <mcpcore/impl/random.ipp>
#include <mcpcore/session/impl/progress_bridge.ipp>
#include <mcpcore/session/impl/progress_bridge_table.ipp>
#include <mcpcore/session/impl/session_metrics.ipp>
#include <mcpcore/session/impl/session_registry.ipp>
#include <mcpcore/session/impl/session_stream.ipp>
#include <mcpcore/session/impl/stream_admission.ipp>
#include <mcpcore/session/impl/stream_budget.ipp>
#include <mcpcore/session/impl/stream_pump.ipp>
#include <mcpcore/session/impl/stream_types.ipp>
#include <mcpcore/stores/impl/memory_approval_store.ipp>
#include <mcpcore/stores/impl/memory_task_store.ipp>
#include <mcpcore/transport/impl/blocking_adapter.ipp>
#include <mcpcore/transport/impl/http_endpoint.ipp>
#include <mcpcore/transport/impl/http_get_stream.ipp>
#include <mcpcore/transport/impl/http_post_stream.ipp>
#include <mcpcore/transport/impl/http_pumped_stream.ipp>
#include <mcpcore/transport/impl/stdio.ipp>
#include <mcpcore/wire/impl/accept.ipp>
#include <mcpcore/wire/impl/canonical_json.ipp>
#include <mcpcore/wire/impl/correlation_id.ipp>
#include <mcpcore/wire/impl/era.ipp>
#include <mcpcore/wire/impl/error.ipp>
#include <mcpcore/wire/impl/http.ipp>
#include <mcpcore/wire/impl/json.ipp>
#include <mcpcore/wire/impl/json_writer.ipp>
#include <mcpcore/wire/impl/jsonrpc.ipp>
#include <mcpcore/wire/impl/sse.ipp>

#endif  // MCPCORE_IMPL_SRC_HPP
