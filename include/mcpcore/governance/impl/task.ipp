// SPDX-License-Identifier: Apache-2.0
// Spellings of the task record's enums (docs/concepts/task_store.md).
#ifndef MCPCORE_IMPL_TASK_IPP
#define MCPCORE_IMPL_TASK_IPP

#include <mcpcore/governance/task.hpp>

#include <array>
#include <optional>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

inline constexpr std::array<std::pair<task_status, std::string_view>, 5> task_status_names{{
    {task_status::working, "working"},
    {task_status::input_required, "input_required"},
    {task_status::completed, "completed"},
    {task_status::failed, "failed"},
    {task_status::cancelled, "cancelled"},
}};

inline constexpr std::array<std::pair<task_payload, std::string_view>, 4> task_payload_names{{
    {task_payload::none, "none"},
    {task_payload::input_requests, "input_requests"},
    {task_payload::result, "result"},
    {task_payload::error, "error"},
}};

template <class E, std::size_t N>
constexpr std::string_view task_enum_name(const std::array<std::pair<E, std::string_view>, N>& names, E e) noexcept {
  for (const auto& [value, name] : names) {
    if (value == e) return name;
  }
  return "unknown";
}

template <class E, std::size_t N>
constexpr std::optional<E> task_enum_parse(const std::array<std::pair<E, std::string_view>, N>& names,
                                      std::string_view text) noexcept {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace detail

MCPCORE_DECL std::string_view to_string(task_status s) noexcept { return detail::task_enum_name(detail::task_status_names, s); }

MCPCORE_DECL std::optional<task_status> parse_task_status(std::string_view text) noexcept {
  return detail::task_enum_parse(detail::task_status_names, text);
}

MCPCORE_DECL std::string_view to_string(task_payload p) noexcept { return detail::task_enum_name(detail::task_payload_names, p); }

MCPCORE_DECL std::optional<task_payload> parse_task_payload(std::string_view text) noexcept {
  return detail::task_enum_parse(detail::task_payload_names, text);
}

MCPCORE_DECL std::string_view to_string(task_create_status s) noexcept {
  switch (s) {
    case task_create_status::created:
      return "created";
    case task_create_status::duplicate_id:
      return "duplicate_id";
    case task_create_status::global_cap:
      return "global_cap";
    case task_create_status::owner_cap:
      return "owner_cap";
  }
  return "unknown";
}

MCPCORE_DECL std::string_view to_string(task_transition_status s) noexcept {
  switch (s) {
    case task_transition_status::updated:
      return "updated";
    case task_transition_status::not_found:
      return "not_found";
    case task_transition_status::terminal:
      return "terminal";
  }
  return "unknown";
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_TASK_IPP
