// SPDX-License-Identifier: Apache-2.0
// Forward declarations of mcpcore's public types.
#ifndef MCPCORE_FWD_HPP
#define MCPCORE_FWD_HPP

#include <mcpcore/detail/config.hpp>

#include <cstdint>

MCPCORE_BEGIN_NAMESPACE

enum class errc : std::int32_t;
struct error_data;
struct error_object;
class correlation_id;
class request_id_view;
class request_id;
enum class message_kind : std::uint8_t;
struct message;
struct message_error;

namespace json {
enum class json_errc : int;
enum class kind : std::uint8_t;
struct parse_options;
class value;
struct member;
class document;
class writer;
}  // namespace json

namespace sse {
struct event;
}  // namespace sse

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_FWD_HPP
