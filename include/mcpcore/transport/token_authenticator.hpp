// SPDX-License-Identifier: Apache-2.0
// The bearer-token authenticator: principals from a token file of SHA-256 digests (docs/plugins.md
// `authenticator`).
#ifndef MCPCORE_TRANSPORT_TOKEN_AUTHENTICATOR_HPP
#define MCPCORE_TRANSPORT_TOKEN_AUTHENTICATOR_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

/// Largest token file `token_authenticator` reads, in bytes; a larger file is refused whole.
inline constexpr std::size_t max_token_file_bytes = std::size_t{1} << 20U;
/// Most entries one token file may hold. `authenticate` compares the presented token's digest
/// with every entry, so this also bounds the per-request cost.
inline constexpr std::size_t max_token_file_entries = 4096;
/// Longest bearer token `authenticate` considers, in bytes; a longer one is refused without
/// being hashed. Generated tokens are 43 bytes.
inline constexpr std::size_t max_bearer_token_bytes = 4096;
/// Entropy of a token made by `token_authenticator::generate_token`, in bytes (256 bits).
inline constexpr std::size_t generated_token_bytes = 32;
/// Length of `token_authenticator::token_digest`'s result: SHA-256 as lowercase hex.
inline constexpr std::size_t token_digest_hex_length = 64;

/// Something that did not prevent loading but deserves the operator's attention (a
/// world-readable file, a file without entries).
struct token_file_warning {
  std::size_t line = 0;  ///< 1-based line it concerns; 0 for the file as a whole
  std::string message{};  ///< what is wrong, in English
};

/// "line N: message" (or the message alone when `line` is 0).
[[nodiscard]] MCPCORE_API std::string to_string(const token_file_warning& w);

/// Bearer tokens from a token file (docs/plugins.md `authenticator`, shipped model;
/// docs/authentication.md).
///
/// The file holds one entry per line; blank lines and lines whose first non-blank character is
/// `#` are ignored; fields are separated by spaces or tabs:
///
///     sha256:<64 hex>  <principal id>  <tier>  <kind>  [roles=a,b] [assured] [name=<display name>]
///
/// - the digest is SHA-256 of the token (`token_digest`), hex digits in either case; tokens
///   themselves are never stored;
/// - the principal id is any run of visible characters (no space or tab, valid UTF-8);
/// - tier is `readonly`, `operator`, `supervised`, or `-` for none (`principal::tier` "");
/// - kind is `human_interactive`, `service` or `engine`;
/// - `roles=` takes a comma-separated list of non-empty, distinct role names; `assured` sets
///   `principal::assured`; `name=` must come last and takes the rest of the line (spaces
///   included, surrounding blanks removed) as `principal::display_name`. Each option at most once.
///
/// A file is refused whole (`token_file_error` naming the line) on a malformed line, an unknown
/// tier, kind or option, bad hex, a control character, invalid UTF-8, a digest listed twice, or
/// a principal id listed again with different attributes (the same id with identical attributes
/// may appear on several lines: one principal, several tokens, as during a rotation). A
/// world-readable or world-writable file, or one without entries, loads with a warning.
///
/// `authenticate` accepts exactly one `Authorization` field of the form `Bearer <token>` (scheme
/// case-insensitive, one or more spaces, the token in RFC 6750 §2.1 `b64token` syntax), hashes the
/// token and compares the digest with every entry in constant time; the presented token is never
/// logged nor stored. `revalidate` says `valid` while the current table still holds an entry for
/// that principal with identical attributes, and `revoked` once it does not (the table is local
/// and authoritative). `reload` re-reads the file, so that a token is revoked by deleting its line
/// (or changing its attributes) and reloading. Re-validation is per principal, not per token (a
/// `principal` carries no credential handle): while another line of the same principal stands,
/// that principal's open streams stay valid.
///
/// @par Sharing and thread safety
/// Copies share one table: a reload through any copy is seen by all of them (the HTTP endpoint
/// keeps its own copy). The table is an immutable snapshot swapped atomically by `reload` and
/// `reload_text`; every member may be called concurrently on the same object or on copies, except
/// assignment to and destruction of the object being used. A moved-from authenticator admits
/// nobody (`authenticate` → nullopt, `revalidate` → revoked) and cannot reload.
class token_authenticator {
 public:
  /// Reads and parses the token file at `path`; the path is kept for `reload`.
  /// Fails (without an authenticator) when the file cannot be read, is not a regular file, is
  /// larger than `max_token_file_bytes`, or any line is refused.
  ///
  /// Errors (docs/errors.md#one-error-shape): `code()` is the operating-system error of a failed
  /// open/stat/read, else `library_errc::token_file_refused`; `message()` says what is wrong and
  /// where ("<path>:<line>: ..." for a refused line, "line <n>: ..." for text). It never
  /// contains a secret: the offending field of a digest column is not quoted (it may be a token
  /// pasted by mistake).
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static result<token_authenticator> load(std::string path);
  /// Parses `text` in the token file format. `reload` then fails (there is no file);
  /// `reload_text` replaces the table.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static result<token_authenticator> from_text(std::string_view text);

  /// The principal of the request's bearer token, or `std::nullopt` when the request has no
  /// `Authorization` field, more than one, another scheme, a malformed or over-long token, or a
  /// token whose digest is not in the table. Reads only the `Authorization` field.
  /// Thread-safe; never throws (an internal failure refuses the request).
  [[nodiscard]] MCPCORE_API std::optional<principal> authenticate(const http_request_view& req) const noexcept;

  /// `valid` while the current table holds an entry whose principal equals `p` in every field
  /// (id, tier, kind, display name, roles in order, assured); `revoked` otherwise;
  /// `indeterminate` only if an internal failure prevents the lookup. Thread-safe.
  [[nodiscard]] MCPCORE_API credential_verdict revalidate(const principal& p) const noexcept;

  /// Re-reads the file given to `load` and, if it parses, makes it the table of this
  /// authenticator and of every copy. On failure the previous table stays in force and the
  /// error is returned. Reloads are serialised; `authenticate` and `revalidate` run concurrently
  /// and see either the old table or the new one, never a mixture.
  /// A moved-from authenticator fails with `library_errc::moved_from`.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API result<void> reload();
  /// As `reload`, from `text` in the token file format instead of the file (for hosts that
  /// keep the entries elsewhere, and for tests). `path()` is unchanged.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API result<void> reload_text(std::string_view text);

  /// The warnings of the table in force (the last successful load or reload).
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API std::vector<token_file_warning> warnings() const;
  /// How many entries the table in force holds.
  [[nodiscard]] MCPCORE_API std::size_t size() const noexcept;
  /// The file `reload` re-reads; empty for an authenticator made by `from_text`.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API std::string path() const;

  /// SHA-256 of `token` as 64 lowercase hex digits: the digest column of a token file entry.
  /// Returns "" only if the digest cannot be computed (libcrypto failure). Does not keep `token`.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static std::string token_digest(std::string_view token);

  /// A fresh token: `generated_token_bytes` bytes from OpenSSL's CSPRNG (`RAND_bytes`), encoded
  /// base64url without padding (43 characters, valid `b64token` syntax). `std::nullopt` when the
  /// CSPRNG fails. The caller shows it once and stores only `token_digest` of it.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static std::optional<std::string> generate_token();

  /// Whether `token` may be presented as `Authorization: Bearer <token>`: RFC 6750 §2.1
  /// `b64token` (1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=") and at most
  /// `max_bearer_token_bytes` long.
  [[nodiscard]] MCPCORE_API static bool is_valid_token(std::string_view token) noexcept;

  /// The token file line (without a newline) that makes `token` authenticate as `who`:
  /// `sha256:<digest>  <id>  <tier or ->  <kind>` then `roles=...`, `assured`, `name=...` as
  /// needed. `std::nullopt` when the line could not be loaded back as `who`: `token` is not
  /// `is_valid_token`, `who.id` is empty or contains a space, tab or control character, the
  /// tier is not "", "readonly", "operator" or "supervised", a role is empty, repeated or
  /// contains a comma, space, tab or control character, the display name contains a control
  /// character or has surrounding blanks, or a field is not valid UTF-8.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_API static std::optional<std::string> token_file_line(std::string_view token, const principal& who);

 private:
  struct shared_state;
  explicit token_authenticator(std::shared_ptr<shared_state> state) noexcept;
  std::shared_ptr<shared_state> state_;
};

static_assert(authenticator<token_authenticator>);

}  // namespace transport

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_TOKEN_AUTHENTICATOR_HPP
