// SPDX-License-Identifier: Apache-2.0
// The audit_sink plug-in point: audit rows, the null, in-memory and JSON-lines sinks, value sanitising.
#ifndef MCPCORE_AUDIT_HPP
#define MCPCORE_AUDIT_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// The outcome vocabulary of an audit row (docs/security.md#audit-and-the-one-cid-pattern).
enum class audit_result : std::uint8_t {
  success,    ///< "success": the action happened
  denied,     ///< "denied": a client-caused refusal (unknown tool, tier, read-only, schema, caps)
  failure,    ///< "failure": a server-side fault
  pending,    ///< "pending": an approval ticket was minted or deduplicated
  approved,   ///< "approved": an approval ticket was consumed
  not_found,  ///< "not_found": the target did not exist
};

/// "success", "denied", "failure", "pending", "approved" or "not_found"; "" for a value outside
/// the enumeration.
[[nodiscard]] constexpr std::string_view to_string(audit_result r) noexcept {
  switch (r) {
    case audit_result::success: return "success";
    case audit_result::denied: return "denied";
    case audit_result::failure: return "failure";
    case audit_result::pending: return "pending";
    case audit_result::approved: return "approved";
    case audit_result::not_found: return "not_found";
  }
  return {};
}

/// One audit row (docs/security.md#audit-and-the-one-cid-pattern), handed to a sink by reference.
///
/// The views are valid only during the `record` call: a sink that keeps the row copies it
/// (`make_audit_entry`).
struct audit_record {
  /// What happened, e.g. `mcp.<tool>`, `mcp.session.open`.
  std::string_view action{};
  /// The kind of target, e.g. `mcp_tool`, `McpSession`.
  std::string_view target_type{};
  /// Which target, e.g. the tool name.
  std::string_view target_id{};
  /// The authenticated caller's id; empty for the system itself.
  std::string_view principal_id{};
  /// The outcome.
  audit_result result = audit_result::success;
  /// Free text, space-separated `key=value` pairs; caller-controlled values inside it have been
  /// through `sanitize_audit_value`.
  std::string_view detail{};
  /// The correlation id of the request (the one-cid pattern: the same id as the error body).
  std::string_view correlation_id{};
  /// When it happened (wall clock, from the server's `clock_source`).
  std::chrono::system_clock::time_point time{};
};

/// Where audit rows go (docs/plugins.md `audit_sink`;
/// docs/security.md#audit-and-the-one-cid-pattern).
///
/// `s.record(r)` keeps one row and says whether it did.
///
/// Semantic requirements (not checked by the compiler):
/// 1. `true` means the row is kept as the sink's documented durability class promises
///    (docs/concepts/audit_sink.md#durability-classes): *persisted* (stored when `record`
///    returns, as durably as the sink promises) or *accepted* (taken into a bounded queue, then
///    stored or, when it cannot be, counted lost in `mcp_audit_write_failures_total`, never
///    dropped silently). `false` means it is not kept, and the server then signals the gap
///    (`audit_persisted:false`, a header or a counter) instead of failing the request.
/// 2. Thread-safe: called concurrently from any thread, on one shared sink.
/// 3. The views in `r` are valid only during the call; keep copies, not views.
/// 4. May throw; the server calls it inside a try/catch and treats an exception as `false`.
/// 5. Should return promptly: it runs on the request path.
///
/// @see null_audit_sink, memory_audit_sink, jsonl_audit_sink, docs/plugins.md
template <class S>
concept audit_sink = requires(S& s, const audit_record& r) {
  // Keeps one row; true = persisted or accepted (the sink's durability class), false = not kept.
  { s.record(r) } -> std::same_as<bool>;
};

namespace detail {
/// One type erasure of an `audit_sink`, shared by every component that writes rows (library use).
struct MCPCORE_API audit_base {
  virtual ~audit_base() = default;
  virtual bool record(const audit_record& r) = 0;
};
/// Holds a reference to `S`; the sink must outlive the model.
template <class S>
struct audit_model final : audit_base {
  explicit audit_model(S& s) : s_(&s) {}
  bool record(const audit_record& r) override { return s_->record(r); }
  S* s_;
};
}  // namespace detail

/// Keeps nothing and reports no gap: for hosts without an audit trail.
///
/// Stateless; thread-safe.
struct null_audit_sink {
  /// Drops the row; returns `true`.
  bool record(const audit_record& /*r*/) noexcept { return true; }
};

/// An owning copy of an `audit_record`, for sinks that keep rows.
struct audit_entry {
  std::string action{};        ///< as `audit_record::action`
  std::string target_type{};   ///< as `audit_record::target_type`
  std::string target_id{};     ///< as `audit_record::target_id`
  std::string principal_id{};  ///< as `audit_record::principal_id`
  audit_result result = audit_result::success;  ///< as `audit_record::result`
  std::string detail{};          ///< as `audit_record::detail`
  std::string correlation_id{};  ///< as `audit_record::correlation_id`
  std::chrono::system_clock::time_point time{};  ///< as `audit_record::time`
};

/// Copies `r` into an `audit_entry`.
[[nodiscard]] MCPCORE_DECL audit_entry make_audit_entry(const audit_record& r);

/// Keeps the last `capacity()` rows in memory (tests, diagnostics pages, small hosts).
///
/// When full, the oldest row is dropped to make room and `dropped()` counts it. `record` returns
/// `false` only when the row could not be copied (out of memory) or the sink was moved from.
///
/// @par Thread safety
/// Every member may be called concurrently, except assignment and destruction.
class memory_audit_sink {
 public:
  /// The capacity of a default-constructed sink.
  static constexpr std::size_t default_capacity = 1024;

  /// A sink keeping up to `capacity` rows (0 is taken as 1).
  MCPCORE_DECL explicit memory_audit_sink(std::size_t capacity = default_capacity);
  /// Takes `other`'s rows; `other` is left empty, and its `record` returns `false`.
  MCPCORE_DECL memory_audit_sink(memory_audit_sink&& other) noexcept;
  /// Takes `other`'s rows; `other` is left empty, and its `record` returns `false`.
  MCPCORE_DECL memory_audit_sink& operator=(memory_audit_sink&& other) noexcept;
  /// Frees the rows.
  MCPCORE_DECL ~memory_audit_sink();
  memory_audit_sink(const memory_audit_sink&) = delete;
  memory_audit_sink& operator=(const memory_audit_sink&) = delete;

  /// Copies the row in, dropping the oldest when full.
  MCPCORE_DECL bool record(const audit_record& r);
  /// A copy of the rows kept, oldest first.
  [[nodiscard]] MCPCORE_DECL std::vector<audit_entry> entries() const;
  /// How many rows were dropped to make room since construction or the last `clear`.
  [[nodiscard]] MCPCORE_DECL std::uint64_t dropped() const noexcept;
  /// How many rows at most are kept (0 after a move).
  [[nodiscard]] MCPCORE_DECL std::size_t capacity() const noexcept;
  /// Removes every row and resets `dropped()` to 0.
  MCPCORE_DECL void clear();

 private:
  struct impl;
  impl* impl_ = nullptr;
};

/// Appends one JSON object per row to a file (JSON Lines), for hosts without an audit store.
///
/// Each line is `append_audit_json`'s object plus `\n`:
/// `{"time":"2026-01-01T00:00:00.000Z","action":..,"target_type":..,"target_id":..,"principal":..,`
/// `"result":..,"detail":..,"correlation_id":..}`. The file is opened for appending (created if
/// missing with mode 0666 less the umask: create it beforehand to restrict who can read it;
/// close-on-exec where the C library supports it) and each row
/// is written with one call under a lock and flushed to the operating system (`fflush`, not
/// `fsync`): rows from concurrent calls never interleave, and a process crash loses none that
/// were reported persisted (a machine crash may).
///
/// `record` returns `false` when the write or the flush fails (disk full, I/O error, moved-from
/// sink); the server then reports `audit_persisted:false`. The row is not retried.
///
/// @par Thread safety
/// `record` may be called concurrently; moving and destruction must not race with it.
class jsonl_audit_sink {
 public:
  /// Opens `path` for appending.
  ///
  /// @return the sink, or the `errno` of the failed `fopen` in `std::generic_category()`
  ///         (e.g. `std::errc::no_such_file_or_directory`, `std::errc::permission_denied`).
  [[nodiscard]] MCPCORE_DECL static result<jsonl_audit_sink> open(const std::string& path);

  /// Takes `other`'s file; `other`'s `record` then returns `false`.
  MCPCORE_DECL jsonl_audit_sink(jsonl_audit_sink&& other) noexcept;
  /// Closes this sink's file and takes `other`'s.
  MCPCORE_DECL jsonl_audit_sink& operator=(jsonl_audit_sink&& other) noexcept;
  /// Closes the file.
  MCPCORE_DECL ~jsonl_audit_sink();
  jsonl_audit_sink(const jsonl_audit_sink&) = delete;
  jsonl_audit_sink& operator=(const jsonl_audit_sink&) = delete;

  /// Writes and flushes one line; `true` when both succeeded.
  MCPCORE_DECL bool record(const audit_record& r);

 private:
  struct impl;
  explicit jsonl_audit_sink(impl* p) noexcept : impl_(p) {}
  impl* impl_ = nullptr;
};

/// Appends `r` to `out` as one compact JSON object, the line format of `jsonl_audit_sink`
/// (without the newline). `time` is RFC 3339 in UTC with milliseconds
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`, truncated towards the past); strings are escaped by the JSON
/// writer, which replaces invalid UTF-8 with U+FFFD.
MCPCORE_DECL void append_audit_json(std::string& out, const audit_record& r);

/// `t` as the audit rows write times: RFC 3339 in UTC with milliseconds
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`), truncated towards the past.
[[nodiscard]] MCPCORE_DECL std::string to_rfc3339(std::chrono::system_clock::time_point t);

/// Longest value `sanitize_audit_value` returns, in bytes.
inline constexpr std::size_t max_audit_value_bytes = 256;

/// Makes a caller-controlled value safe to embed in an audit `detail`
/// (docs/security.md#audit-and-the-one-cid-pattern).
///
/// - `;`, `=`, CR, LF, every other C0 control (U+0000-U+001F), DEL (U+007F) and the C1 controls
///   (U+0080-U+009F) each become `_`, so a value can neither forge a `key=value` pair nor a line;
/// - each maximal ill-formed UTF-8 subsequence becomes U+FFFD (the Unicode Standard's
///   "substitution of maximal subparts", as `json::append_escaped` does);
/// - the result is cut to at most `max_audit_value_bytes` bytes, never inside a UTF-8 sequence.
///
/// - the invisible characters that reorder or hide text (bidirectional controls such as U+202E,
///   the line and paragraph separators U+2028 and U+2029, zero-width and other format characters
///   such as U+200B and U+FEFF, tag characters; the list: docs/security.md#text-shown-to-people)
///   become a visible escape, `\u202e` (lower-case hex, 4 digits, or 6 beyond U+FFFF).
///
/// Spaces are kept: without `=`, a value cannot forge a `key=value` pair whatever else it holds.
[[nodiscard]] MCPCORE_DECL std::string sanitize_audit_value(std::string_view v);

/// Untrusted text made safe to show a person on a terminal, with nothing hidden
/// (docs/security.md#text-shown-to-people): every C0 control, DEL, C1 control and invisible
/// character (the list of `sanitize_audit_value`) becomes a visible escape (`\u001b`, `\u009b`,
/// `\u202e`), a backslash becomes `\\` (so an escape in the text cannot pass for one made
/// here), and each ill-formed UTF-8 byte becomes `\xNN`. Everything else is kept as it is; the
/// result is never cut.
[[nodiscard]] MCPCORE_DECL std::string escape_for_display(std::string_view text);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/audit.ipp>
#endif

#endif  // MCPCORE_AUDIT_HPP
