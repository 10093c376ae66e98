// SPDX-License-Identifier: Apache-2.0
// Tables that change at run time (docs/server.md#tables-that-change): a registration validated as
// at build, then a new version of the tables swapped in whole; removals; the list-change event.
#ifndef MCPCORE_IMPL_RUN_TIME_TABLES_IPP
#define MCPCORE_IMPL_RUN_TIME_TABLES_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/impl/server_builder.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/expected.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// One change of the tables: `edit` changes a copy of the current version (returns false when it
/// changed nothing); the copy, reindexed and with its capabilities rendered, then replaces the
/// current version, unless it breaks a cap (`offences`). Changes are serialised; readers are never
/// blocked by one for longer than the pointer swap.
template <class Edit>
bool change_tables(server::impl& s, list_kind kind, Edit edit, offence_list& offences) {
  const std::lock_guard serial{s.change_mutex};
  auto next = std::make_shared<tables>(*s.tables());
  if (!edit(*next)) return false;
  check_table_caps(*next, s.options, offences);
  if (!offences.empty()) return false;
  ++next->generation[static_cast<std::size_t>(kind)];
  if (kind == list_kind::resources || kind == list_kind::templates) {  // one URI namespace: both may change
    ++next->generation[static_cast<std::size_t>(list_kind::resources)];
    ++next->generation[static_cast<std::size_t>(list_kind::templates)];
  }
  next->reindex();
  render_capabilities(*next, s.options, s.tasks != nullptr);
  std::shared_ptr<const tables> old;  // released after unlocking
  {
    const std::lock_guard lock{s.tables_mutex};
    old = std::exchange(s.current, std::move(next));
  }
  return true;
}

/// Replaces the entry `matches` finds in `list`, in its place, or appends `entry`.
template <class List, class Entry, class Match>
void replace_or_append(List& list, Entry entry, Match matches) {
  const auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return matches(*e); });
  if (it != list.end()) {
    *it = std::move(entry);
  } else {
    list.push_back(std::move(entry));
  }
}

/// Removes the entry `matches` finds in `list`; whether there was one.
template <class List, class Match>
bool remove_entry(List& list, Match matches) {
  return std::erase_if(list, [&](const auto& e) { return matches(*e); }) != 0;
}

inline result<void> refused(offence_list offences) {
  std::sort(offences.begin(), offences.end());
  return fail(error(library_errc::build_refused, std::move(offences)));
}

}  // namespace detail

MCPCORE_DECL result<void> server::commit(detail::tool_def&& d) {
  using namespace detail;
  impl& s = *impl_;
  offence_list offences;
  std::vector<std::string> warnings;  // run time: an unclassified tool is annotated, not reported
  std::set<std::string, std::less<>> names;  // a name already served is replaced, not refused
  const registration_rules rules{s.options, s.securables, *s.policy, s.approvals, s.tasks != nullptr};
  std::shared_ptr<compiled_tool> t = validate_tool(d, rules, names, warnings, offences);
  if (!t) return refused(std::move(offences));
  if (s.metrics) bind_tool_metrics(*t, *s.metrics);
  const bool changed = change_tables(s, list_kind::tools, [&](tables& next) {
    const std::string& name = t->def.name;
    replace_or_append(next.tools, t, [&](const compiled_tool& e) { return e.def.name == name; });
    return true;
  }, offences);
  if (!changed) return refused(std::move(offences));
  publish(server_event{server_event_kind::tools_list_changed, {}});
  return {};
}

MCPCORE_DECL result<void> server::commit(detail::resource_def&& d) {
  using namespace detail;
  impl& s = *impl_;
  offence_list offences;
  std::set<std::string, std::less<>> uris;
  std::shared_ptr<const compiled_resource> r = validate_resource(d, uris, offences);
  if (!r) return refused(std::move(offences));
  // One URI namespace for both kinds (docs/design.md#registration-validation): a template
  // replaces a fixed resource of the same text, and the other way round.
  const bool changed = change_tables(s, r->def.is_template ? list_kind::templates : list_kind::resources,
                                     [&](tables& next) {
    const std::string& uri = r->def.uri;
    auto same = [&](const compiled_resource& e) { return e.def.uri == uri; };
    if (r->def.is_template) {
      (void)remove_entry(next.resources, same);
      replace_or_append(next.templates, r, same);
    } else {
      (void)remove_entry(next.templates, same);
      replace_or_append(next.resources, r, same);
    }
    return true;
  }, offences);
  if (!changed) return refused(std::move(offences));
  publish(server_event{server_event_kind::resources_list_changed, {}});
  return {};
}

MCPCORE_DECL result<void> server::commit(detail::prompt_def&& d) {
  using namespace detail;
  impl& s = *impl_;
  offence_list offences;
  std::set<std::string, std::less<>> names;
  std::shared_ptr<const compiled_prompt> p = validate_prompt(d, names, offences);
  if (!p) return refused(std::move(offences));
  const bool changed = change_tables(s, list_kind::prompts, [&](tables& next) {
    const std::string& name = p->def.name;
    replace_or_append(next.prompts, p, [&](const compiled_prompt& e) { return e.def.name == name; });
    return true;
  }, offences);
  if (!changed) return refused(std::move(offences));
  publish(server_event{server_event_kind::prompts_list_changed, {}});
  return {};
}

MCPCORE_DECL bool server::remove_tool(std::string_view name) {
  detail::offence_list none;
  const bool removed = detail::change_tables(*impl_, detail::list_kind::tools, [&](detail::tables& next) {
    return detail::remove_entry(next.tools, [&](const detail::compiled_tool& e) { return e.def.name == name; });
  }, none);
  if (removed) publish(server_event{server_event_kind::tools_list_changed, {}});
  return removed;
}

MCPCORE_DECL bool server::remove_resource(std::string_view uri) {
  detail::offence_list none;
  const bool removed = detail::change_tables(*impl_, detail::list_kind::resources, [&](detail::tables& next) {
    return detail::remove_entry(next.resources, [&](const detail::compiled_resource& e) { return e.def.uri == uri; });
  }, none);
  if (removed) publish(server_event{server_event_kind::resources_list_changed, {}});
  return removed;
}

MCPCORE_DECL bool server::remove_resource_template(std::string_view uri_template) {
  detail::offence_list none;
  const bool removed = detail::change_tables(*impl_, detail::list_kind::templates, [&](detail::tables& next) {
    return detail::remove_entry(next.templates,
                                [&](const detail::compiled_resource& e) { return e.def.uri == uri_template; });
  }, none);
  if (removed) publish(server_event{server_event_kind::resources_list_changed, {}});
  return removed;
}

MCPCORE_DECL bool server::remove_prompt(std::string_view name) {
  detail::offence_list none;
  const bool removed = detail::change_tables(*impl_, detail::list_kind::prompts, [&](detail::tables& next) {
    return detail::remove_entry(next.prompts, [&](const detail::compiled_prompt& e) { return e.def.name == name; });
  }, none);
  if (removed) publish(server_event{server_event_kind::prompts_list_changed, {}});
  return removed;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_RUN_TIME_TABLES_IPP
