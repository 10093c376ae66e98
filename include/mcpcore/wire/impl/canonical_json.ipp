// SPDX-License-Identifier: Apache-2.0
// Canonical JSON writer: sorted keys at every depth over one reusable scratch stack.
#ifndef MCPCORE_IMPL_CANONICAL_JSON_IPP
#define MCPCORE_IMPL_CANONICAL_JSON_IPP

#include <mcpcore/wire/canonical_json.hpp>

#include <algorithm>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// Every object level appends its members to the shared scratch vector, sorts its own segment,
// writes it, and truncates back: one allocation amortized over the whole document.
MCPCORE_INTERNAL void write_canonical_rec(json::writer& w, json::value v, std::vector<json::member>& scratch) {
  switch (v.kind()) {
    case json::kind::array:
      w.begin_array();
      for (json::value e : v.elements()) write_canonical_rec(w, e, scratch);
      w.end_array();
      return;
    case json::kind::object: {
      const std::size_t base = scratch.size();
      for (json::member m : v.members()) scratch.push_back(m);
      // Ties (duplicate keys, when a document allows them) keep document order: a member's
      // value node lies later in the tape than every earlier member's.
      std::sort(scratch.begin() + static_cast<std::ptrdiff_t>(base), scratch.end(),
                [](const json::member& a, const json::member& b) {
                  return a.key < b.key || (a.key == b.key && a.value_node < b.value_node);
                });
      w.begin_object();
      // By index, not iterator: the recursion appends to `scratch` and may reallocate it.
      for (std::size_t i = base; i < base + v.size(); ++i) {
        w.key(scratch[i].key);
        write_canonical_rec(w, scratch[i].value(), scratch);
      }
      w.end_object();
      scratch.resize(base);
      return;
    }
    default: w.value(v); return;
  }
}

}  // namespace detail

MCPCORE_DECL void write_canonical(json::writer& w, json::value v) {
  MCPCORE_ASSERT(v.exists());
  std::vector<json::member> scratch;
  detail::write_canonical_rec(w, v, scratch);
}

MCPCORE_DECL result<std::string> canonical_json(std::string_view text, const json::parse_options& options) {
  json::document doc{options};
  auto root = doc.parse(text);
  if (!root) return fail(root.error());
  std::string out;
  out.reserve(text.size());
  json::writer w{out};
  write_canonical(w, *root);
  return out;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_CANONICAL_JSON_IPP
