// SPDX-License-Identifier: Apache-2.0
// The host's token file: created on first run, checked at start, edited by mcpcore-admin.
//
// The format is mcpcore::transport::token_authenticator's (docs/authentication.md): one
// `sha256:<digest> <principal id> <tier> <kind> [options]` line per token. Only digests are
// stored; a minted token is shown once.
#ifndef MCPCORE_HOST_TOKEN_FILE_HPP
#define MCPCORE_HOST_TOKEN_FILE_HPP

#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace mcpcore_host {

/// The principal the token created on first run authenticates as.
inline constexpr const char* first_run_principal_id = "local-operator";

/// Why the file at `path` may not be used as a token file: not a regular file, or readable or
/// writable by group or others (the message says how to fix it). Empty when it is fine.
[[nodiscard]] std::string token_file_permission_problem(const std::string& path);

/// Creates the token file at `path` (mode 0600, refusing to overwrite an existing file) with one
/// fresh operator token for `first_run_principal_id`; returns the token, to be shown once.
[[nodiscard]] mcpcore::result<std::string, std::string> create_first_run_token_file(const std::string& path);

/// Adds a fresh token for `who` to the token file (creating it, mode 0600, when missing) and
/// returns the token, to be shown once. The new file is checked by the same parser the server
/// uses before it replaces the old one (written beside it and renamed), so a refused entry (an id
/// already listed with other attributes, say) leaves the file untouched. Concurrent editors are
/// serialised by an advisory lock on `<path>.lock`.
[[nodiscard]] mcpcore::result<std::string, std::string> mint_token(const std::string& path,
                                                                   const mcpcore::principal& who);

/// Removes every token of principal `id` from the token file; returns how many lines went. A
/// running server stops accepting them at its next maintenance tick (it reloads the file when it
/// changes), and closes their open streams as `credential_revoked`.
[[nodiscard]] mcpcore::result<std::size_t, std::string> revoke_tokens(const std::string& path, const std::string& id);

/// One entry of the token file, without its secret.
struct token_entry {
  std::size_t line = 0;       ///< 1-based line in the file
  std::string digest_prefix;  ///< the first 12 hex digits of the digest (to tell tokens apart)
  std::string principal_id;
  std::string tier;  ///< "-" for none
  std::string kind;
  std::string options;  ///< the rest of the line: roles=, assured, name=
};

/// The entries of the token file, in file order (the file is parsed by the server's parser
/// first: a file it refuses is an error here too).
[[nodiscard]] mcpcore::result<std::vector<token_entry>, std::string> list_tokens(const std::string& path);

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_TOKEN_FILE_HPP
