// SPDX-License-Identifier: Apache-2.0
// `detach`: hands a call's work over to the transport's record of the call, if it has one;
// `operation_handle::finish`: the work's final, checked like a direct result, then delivered.
#ifndef MCPCORE_IMPL_OPERATION_IPP
#define MCPCORE_IMPL_OPERATION_IPP

#include <mcpcore/dispatch/operation.hpp>

#include <mcpcore/dispatch/impl/tool_result_object.ipp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// Text of the fallback final (docs/sessions.md#projection-and-finals).
inline constexpr std::string_view fallback_final_text =
    "The work finished but its result is unavailable here; fetch it by execution id.";
/// `detail` of the fallback final's legacy top-level members.
inline constexpr std::string_view fallback_final_detail =
    "terminal counts are unavailable; fetch the result by execution id";

MCPCORE_DECL operation_final unchecked_final(const tool_result& r, std::string_view execution_id) {
  operation_final f;
  const auto invalid = [&](std::string_view message) {
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Report the correlation_id to the server's operator.";
    if (!execution_id.empty()) d.execution_id = std::optional{execution_id};
    f.error = make_error(errc::internal_error, message, d);
    return std::move(f);
  };
  if (r.input() != nullptr) return invalid(final_asks_for_input);
  json::document doc;
  json::value structured;
  if (!r.structured_json().empty()) {
    auto v = doc.parse(r.structured_json());
    if (!v || !v->is_object()) return invalid("The tool returned structured content that is not a JSON object");
    structured = *v;
  }
  json::writer w{f.result_json};
  write_tool_result_object(w, r, structured, execution_id);
  return f;
}

MCPCORE_DECL std::string fallback_final_result(std::string_view execution_id, bool legacy_members) {
  std::string out;
  json::writer w{out};
  w.begin_object().key("content").begin_array();
  w.begin_object().member("type", "text").member("text", fallback_final_text).end_object();
  w.end_array();
  // An error result: it needs no `structuredContent`, which a tool with an `outputSchema` must give
  // on success, and its result is not here (docs/sessions.md#projection-and-finals).
  w.member("isError", true);
  if (!execution_id.empty()) w.key("_meta").begin_object().member(execution_id_meta_key, execution_id).end_object();
  if (legacy_members) {
    if (!execution_id.empty()) w.member("execution_id", execution_id);
    w.member("status", "unknown").member("detail", fallback_final_detail);
  }
  w.end_object();
  return out;
}

}  // namespace detail

MCPCORE_DECL bool operation_handle::finish(const tool_result& final) {
  operation_final f = builder_ ? builder_->build(final, execution_id_) : detail::unchecked_final(final, execution_id_);
  if (!link_) return false;  // unbound: checked, delivered nowhere
  return link_->finish(std::move(f));
}

MCPCORE_DECL operation_handle detach(call_context& ctx, std::string execution_id) {
  std::shared_ptr<const detail::final_builder> builder = ctx.finals();
  call_link* link = ctx.link();
  if (link == nullptr) return operation_handle{nullptr, std::move(execution_id), std::move(builder)};
  std::shared_ptr<operation_link> record = link->detach(execution_id);  // the record keeps a copy of the id
  return operation_handle{std::move(record), std::move(execution_id), std::move(builder)};
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_OPERATION_IPP
