// SPDX-License-Identifier: Apache-2.0
// Forward declarations of mcpcore's public types.
#ifndef MCPCORE_FWD_HPP
#define MCPCORE_FWD_HPP

#include <mcpcore/detail/config.hpp>

#include <cstdint>

MCPCORE_BEGIN_NAMESPACE

// base
class error;
enum class library_errc : int;
// wire
enum class errc : std::int32_t;
struct error_data;
struct error_object;
class correlation_id;
class request_id_view;
class request_id;
enum class message_kind : std::uint8_t;
struct message;
struct message_error;

// governance plug-ins
enum class operation : std::uint8_t;
enum class principal_kind : std::uint8_t;
struct principal;
struct host_context;
enum class tier_decision : std::uint8_t;
struct yuzu_tier_policy;
struct open_tier_policy;
struct allow_all_authorizer;
class role_table_authorizer;
enum class audit_result : std::uint8_t;
struct audit_record;
struct null_audit_sink;
class memory_audit_sink;
class jsonl_audit_sink;
class counter;
class gauge;
struct metric_label;
struct null_metrics;
class metrics_registry;
struct system_clock_source;
class manual_clock;

// dispatch core
enum class log_level : std::uint8_t;
class content_block;
class tool_result;
class resource_result;
class prompt_result;
class call_context;
class call_link;
class operation_link;
class operation_handle;
class client_reply;
enum class client_request_errc : std::uint8_t;
enum class tool_effect : std::uint8_t;
struct server_info;
struct server_options;
class kill_switches;
class message_sink;
struct client_capabilities;
class peer;
struct dispatch_context;
class uri_variables;
class prompt_arguments;
class tool_builder;
class resource_builder;
class prompt_builder;
class server_builder;
class server;
struct server_event;
struct stdio_options;
class stdio_transport;
// approvals
enum class approval_status : std::uint8_t;
struct approval_ticket;
struct approval_mint_request;
enum class approval_mint_status : std::uint8_t;
struct approval_mint_result;
struct approval_consume_request;
enum class approval_consume_status : std::uint8_t;
struct approval_review_request;
enum class approval_review_status : std::uint8_t;
enum class approval_store_errc : std::uint8_t;
enum class approval_store_fault : std::uint8_t;
struct approval_options;
enum class approver_assurance : std::uint8_t;
enum class approval_verdict : std::uint8_t;
enum class approval_refusal : std::uint8_t;
struct approval_gate_outcome;
class approval_precondition_ref;
struct approval_review_outcome;
class approval_service;
struct memory_approval_store_options;
class memory_approval_store;
struct sqlite_approval_store_options;
class sqlite_approval_store;
enum class sqlite_audit_errc : std::uint8_t;
struct sqlite_audit_sink_options;
class sqlite_audit_sink;
struct approval_endpoint_options;
class approval_endpoint;
struct approvals_page_options;
class approvals_page;
// sans-I/O HTTP
struct http_header;
struct http_header_view;
struct http_local_address;
struct http_request_view;
struct http_response;
struct http_reply;
struct cors_options;
struct http_endpoint_options;
class http_stream;
class http_endpoint;
class http_executor_binding;
class fixed_authenticator;
// session layer
struct stream_budget_options;
enum class stream_budget_reject : std::uint8_t;
enum class stream_budget_mode : std::uint8_t;
class stream_lease;
class stream_budget;
enum class close_reason : std::uint8_t;
enum class stream_reject : std::uint8_t;
enum class session_reject : std::uint8_t;
enum class cancel_outcome : std::uint8_t;
enum class bridge_reject : std::uint8_t;
enum class bridge_degrade : std::uint8_t;
enum class expire_disposition : std::uint8_t;
struct session_metrics;
struct session_stream_options;
struct stream_frame;
class stream_sink;
enum class attach_status : std::uint8_t;
struct attach_result;
struct session_stream_stats;
class session_stream;
struct session_registry_options;
class session;
class session_registry;
enum class credential_verdict : std::uint8_t;
struct revalidation_options;
class revalidation_grace;
struct get_pump_options;
class get_pump;
struct progress_bridge_options;
struct bridge_refusal;
enum class bridge_record_state : std::uint8_t;
enum class bridge_delivery : std::uint8_t;
enum class arm_outcome : std::uint8_t;
struct post_batch;
class progress_call;
class progress_bridge;
struct stream_refusal;
struct get_attach;
enum class post_mode : std::uint8_t;
struct post_mode_inputs;
struct post_admission;
enum class post_dispatch_failure : std::uint8_t;
struct post_pump_options;
class post_pump;

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

namespace schema {
struct compile_options;
struct compile_error;
struct violation;
class compiled_schema;
}  // namespace schema

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_FWD_HPP
