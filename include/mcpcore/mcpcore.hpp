// SPDX-License-Identifier: Apache-2.0
// Umbrella header for applications; the library and its tests include specific headers.
#ifndef MCPCORE_MCPCORE_HPP
#define MCPCORE_MCPCORE_HPP

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/fwd.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/approvals_page.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/transport/blocking_adapter.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/version.hpp>
#include <mcpcore/wire/accept.hpp>
#include <mcpcore/wire/canonical_json.hpp>
#include <mcpcore/wire/client_capability.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/log_level.hpp>
#include <mcpcore/wire/retry.hpp>
#include <mcpcore/wire/sse.hpp>

#endif  // MCPCORE_MCPCORE_HPP
