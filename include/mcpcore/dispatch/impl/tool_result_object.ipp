// SPDX-License-Identifier: Apache-2.0
// A tool result as a `CallToolResult` object: the one writer of a direct result
// (docs/design.md#the-toolscall-pipeline) and of a detached call's final
// (docs/sessions.md#projection-and-finals).
#ifndef MCPCORE_IMPL_TOOL_RESULT_OBJECT_IPP
#define MCPCORE_IMPL_TOOL_RESULT_OBJECT_IPP

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// `error.message` of a detached call's final that asks for input: its work has nobody to ask.
inline constexpr std::string_view final_asks_for_input =
    "The tool's final result asks for input, which a detached operation cannot do";

// Writes `r` as one result object: `content` (when `r` has structured content and no content, its
// text twin: the same JSON as one text item, for clients that read only content), then
// `structuredContent` (`structured`, already parsed and checked to be an object, or absent), then
// `isError`; then, for a final of the per-request era (`per_request_meta` not empty: the members of
// the server's own `_meta`, docs/eras.md#results), `resultType` `complete`; then `_meta` carrying
// `execution_id` when one is given, and the server's members.
inline void write_tool_result_object(json::writer& w, const tool_result& r, json::value structured,
                                     std::string_view execution_id, std::string_view per_request_meta = {}) {
  w.begin_object().key("content").begin_array();
  if (r.content().empty() && structured.exists()) {
    std::string text;
    json::writer tw{text};
    tw.value(structured);
    w.begin_object().member("type", "text").member("text", text).end_object();
  }
  for (const auto& c : r.content()) c.write(w);
  w.end_array();
  if (structured.exists()) w.key("structuredContent").value(structured);
  if (r.is_error()) w.member("isError", true);
  if (!per_request_meta.empty()) w.member("resultType", "complete");
  if (!execution_id.empty() || !per_request_meta.empty()) {
    w.key("_meta").begin_object();
    if (!execution_id.empty()) w.member(execution_id_meta_key, execution_id);
    if (!per_request_meta.empty()) w.raw(per_request_meta);  // members, after a separator
    w.end_object();
  }
  w.end_object();
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_TOOL_RESULT_OBJECT_IPP
