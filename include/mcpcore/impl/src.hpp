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

#include <mcpcore/impl/accept.ipp>
#include <mcpcore/impl/approval.ipp>
#include <mcpcore/impl/approval_endpoint.ipp>
#include <mcpcore/impl/audit.ipp>
#include <mcpcore/impl/canonical_json.ipp>
#include <mcpcore/impl/correlation_id.ipp>
#include <mcpcore/impl/error.ipp>
#include <mcpcore/impl/http.ipp>
#include <mcpcore/impl/http_endpoint.ipp>
#include <mcpcore/impl/json.ipp>
#include <mcpcore/impl/json_writer.ipp>
#include <mcpcore/impl/jsonrpc.ipp>
#include <mcpcore/impl/memory_approval_store.ipp>
#include <mcpcore/impl/metrics.ipp>
#include <mcpcore/impl/policy.ipp>
#include <mcpcore/impl/progress_bridge.ipp>
#include <mcpcore/impl/random.ipp>
#include <mcpcore/impl/schema.ipp>
#include <mcpcore/impl/server.ipp>
#include <mcpcore/impl/session_metrics.ipp>
#include <mcpcore/impl/session_registry.ipp>
#include <mcpcore/impl/session_stream.ipp>
#include <mcpcore/impl/sse.ipp>
#include <mcpcore/impl/stdio.ipp>
#include <mcpcore/impl/stream_admission.ipp>
#include <mcpcore/impl/stream_budget.ipp>
#include <mcpcore/impl/stream_pump.ipp>
#include <mcpcore/impl/tool.ipp>

#endif  // MCPCORE_IMPL_SRC_HPP
