// SPDX-License-Identifier: Apache-2.0
// `detach`: hands a call's work over to the transport's record of the call, if it has one.
#ifndef MCPCORE_IMPL_OPERATION_IPP
#define MCPCORE_IMPL_OPERATION_IPP

#include <mcpcore/dispatch/operation.hpp>

MCPCORE_BEGIN_NAMESPACE

MCPCORE_DECL operation_handle detach(call_context& ctx, std::string execution_id) {
  call_link* link = ctx.link();
  if (link == nullptr) return operation_handle{nullptr, std::move(execution_id)};
  std::shared_ptr<operation_link> record = link->detach(execution_id);  // the record keeps a copy of the id
  return operation_handle{std::move(record), std::move(execution_id)};
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_OPERATION_IPP
