// SPDX-License-Identifier: Apache-2.0
// Umbrella header for applications; the library and its tests include specific headers.
#ifndef MCPCORE_MCPCORE_HPP
#define MCPCORE_MCPCORE_HPP

#include <mcpcore/accept.hpp>
#include <mcpcore/approval.hpp>
#include <mcpcore/approval_endpoint.hpp>
#include <mcpcore/authenticator.hpp>
#include <mcpcore/audit.hpp>
#include <mcpcore/canonical_json.hpp>
#include <mcpcore/clock.hpp>
#include <mcpcore/correlation_id.hpp>
#include <mcpcore/error.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/fwd.hpp>
#include <mcpcore/http.hpp>
#include <mcpcore/http_endpoint.hpp>
#include <mcpcore/json.hpp>
#include <mcpcore/json_writer.hpp>
#include <mcpcore/jsonrpc.hpp>
#include <mcpcore/memory_approval_store.hpp>
#include <mcpcore/metrics.hpp>
#include <mcpcore/policy.hpp>
#include <mcpcore/retry.hpp>
#include <mcpcore/schema.hpp>
#include <mcpcore/progress_bridge.hpp>
#include <mcpcore/server.hpp>
#include <mcpcore/session_metrics.hpp>
#include <mcpcore/session_registry.hpp>
#include <mcpcore/session_stream.hpp>
#include <mcpcore/sse.hpp>
#include <mcpcore/stdio.hpp>
#include <mcpcore/stream_admission.hpp>
#include <mcpcore/stream_budget.hpp>
#include <mcpcore/stream_pump.hpp>
#include <mcpcore/tool.hpp>
#include <mcpcore/version.hpp>

#endif  // MCPCORE_MCPCORE_HPP
