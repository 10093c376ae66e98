// SPDX-License-Identifier: Apache-2.0
// The bearer-token authenticator: token file parsing, SHA-256 digests and constant-time lookup (libcrypto).
#include <mcpcore/transport/token_authenticator.hpp>

#include "bearer_token.hpp"

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/http.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

namespace {

constexpr std::size_t digest_bytes = 32;  // SHA-256
using digest_t = std::array<unsigned char, digest_bytes>;

constexpr std::string_view digest_prefix = "sha256:";
constexpr std::string_view no_tier = "-";

struct token_entry {
  digest_t digest{};
  principal who;
  std::size_t line = 0;
};

struct token_table {
  std::vector<token_entry> entries;
  std::vector<token_file_warning> warnings;
};

// ---- small lexical helpers ----------------------------------------------------------------------

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

constexpr bool is_control(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20U || u == 0x7FU;
}

std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80U) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80U;
    unsigned char hi = 0xBFU;
    if (b0 >= 0xC2U && b0 <= 0xDFU) {
      len = 2;
    } else if (b0 >= 0xE0U && b0 <= 0xEFU) {
      len = 3;
      if (b0 == 0xE0U) lo = 0xA0U;
      if (b0 == 0xEDU) hi = 0x9FU;
    } else if (b0 >= 0xF0U && b0 <= 0xF4U) {
      len = 4;
      if (b0 == 0xF0U) lo = 0x90U;
      if (b0 == 0xF4U) hi = 0x8FU;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < lo || b1 > hi) return false;
    for (std::size_t k = 2; k < len; ++k) {
      const auto bk = static_cast<unsigned char>(s[i + k]);
      if (bk < 0x80U || bk > 0xBFU) return false;
    }
    i += len;
  }
  return true;
}

// A principal id or role name: visible characters only (no blank, no control), valid UTF-8.
bool valid_word(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s) {
    if (is_blank(c) || is_control(c)) return false;
  }
  return valid_utf8(s);
}

bool valid_tier(std::string_view tier) noexcept {
  return tier.empty() || tier == "readonly" || tier == "operator" || tier == "supervised";
}

std::optional<principal_kind> parse_kind(std::string_view s) noexcept {
  for (const principal_kind k :
       {principal_kind::human_interactive, principal_kind::service, principal_kind::engine}) {
    if (mcpcore::to_string(k) == s) return k;
  }
  return std::nullopt;
}

bool same_principal(const principal& a, const principal& b) noexcept {
  return a.id == b.id && a.tier == b.tier && a.kind == b.kind && a.display_name == b.display_name &&
         a.roles == b.roles && a.assured == b.assured;
}

// SHA-256 of `data`; false when libcrypto fails.
bool sha256(std::string_view data, digest_t& out) noexcept {
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1) return false;
  return len == digest_bytes;
}

// ---- the token file parser ----------------------------------------------------------------------

// Why a token file (or text) was refused, before it becomes the public `error`
// (docs/errors.md#one-error-shape). Never contains a secret.
struct token_file_error {
  std::size_t line = 0;      // 1-based line of the offending entry; 0 for the file as a whole
  std::string message{};     // what is wrong, without the line number
  std::error_code code{};    // the operating-system error of a failed open/stat/read
};

// "<where>:<line>: message" ("line <n>: message" without a path; the message alone for the file
// as a whole), then ": <OS error text>"; the code is the OS error, else token_file_refused.
error public_error(const token_file_error& e, std::string_view path) {
  std::string out;
  if (e.line != 0) {
    if (path.empty()) {
      out.append("line ").append(std::to_string(e.line));
    } else {
      out.append(path).append(":").append(std::to_string(e.line));
    }
    out.append(": ");
  }
  out.append(e.message);
  if (e.code) out.append(": ").append(e.code.message());
  return {e.code ? e.code : make_error_code(library_errc::token_file_refused), std::move(out)};
}

token_file_error line_error(std::size_t line, std::string message) {
  return token_file_error{line, std::move(message), {}};
}

// Parses one non-blank, non-comment line (already trimmed) into `e`.
result<void, token_file_error> parse_entry(std::string_view text, std::size_t line, token_entry& e) {
  // The fields: runs of non-blank characters. `name=` takes the rest of the line.
  std::size_t pos = 0;
  const auto next_field = [&]() -> std::string_view {
    while (pos < text.size() && is_blank(text[pos])) ++pos;
    const std::size_t begin = pos;
    while (pos < text.size() && !is_blank(text[pos])) ++pos;
    return text.substr(begin, pos - begin);
  };

  const std::string_view digest = next_field();
  if (!digest.starts_with(digest_prefix)) {
    return fail(line_error(line,
                           "the first field must be sha256:<64 hex digits>, the SHA-256 of the token "
                           "(a token file never holds the tokens themselves)"));
  }
  const std::string_view hex = digest.substr(digest_prefix.size());
  if (hex.size() != token_digest_hex_length) {
    return fail(line_error(line, "the digest must be exactly 64 hex digits after sha256:"));
  }
  for (std::size_t i = 0; i < digest_bytes; ++i) {
    const int h = mcpcore::detail::hex_value(hex[2 * i]);
    const int l = mcpcore::detail::hex_value(hex[(2 * i) + 1]);
    if (h < 0 || l < 0) return fail(line_error(line, "the digest contains a character that is not a hex digit"));
    e.digest[i] = static_cast<unsigned char>((h << 4) | l);
  }

  const std::string_view id = next_field();
  const std::string_view tier = next_field();
  const std::string_view kind = next_field();
  if (kind.empty()) {
    return fail(line_error(line, "expected at least four fields: sha256:<digest> <principal id> <tier> <kind>"));
  }
  if (!valid_utf8(id)) return fail(line_error(line, "the principal id is not valid UTF-8"));
  e.who.id = std::string(id);
  if (tier != no_tier && !valid_tier(tier)) {
    return fail(line_error(line, "unknown tier (expected readonly, operator, supervised or -)"));
  }
  e.who.tier = tier == no_tier ? std::string() : std::string(tier);
  const auto k = parse_kind(kind);
  if (!k) return fail(line_error(line, "unknown kind (expected human_interactive, service or engine)"));
  e.who.kind = *k;

  bool seen_roles = false;
  for (std::string_view opt = next_field(); !opt.empty(); opt = next_field()) {
    if (opt == "assured") {
      if (e.who.assured) return fail(line_error(line, "the option assured is given twice"));
      e.who.assured = true;
    } else if (opt.starts_with("roles=")) {
      if (seen_roles) return fail(line_error(line, "the option roles= is given twice"));
      seen_roles = true;
      std::string_view list = opt.substr(6);
      if (list.empty()) return fail(line_error(line, "roles= needs at least one role name"));
      while (true) {
        const std::size_t comma = list.find(',');
        const std::string_view role = list.substr(0, comma);
        if (role.empty()) return fail(line_error(line, "roles= has an empty role name"));
        if (!valid_utf8(role)) return fail(line_error(line, "a role name is not valid UTF-8"));
        for (const std::string& r : e.who.roles) {
          if (r == role) return fail(line_error(line, "roles= names a role twice"));
        }
        e.who.roles.emplace_back(role);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (opt.starts_with("name=")) {
      // The rest of the line (already right-trimmed), spaces included.
      const std::size_t begin = pos - opt.size() + 5;
      const std::string_view name = trim_blanks(text.substr(begin));
      if (name.empty()) return fail(line_error(line, "name= needs a display name"));
      if (!valid_utf8(name)) return fail(line_error(line, "the display name is not valid UTF-8"));
      e.who.display_name = std::string(name);
      break;
    } else {
      return fail(line_error(line, "unknown option (expected roles=<a,b>, assured or name=<display name>)"));
    }
  }
  return {};
}

result<std::shared_ptr<const token_table>, token_file_error> parse_table(std::string_view text) {
  auto table = std::make_shared<token_table>();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  std::size_t line = 0;
  while (!text.empty()) {
    ++line;
    const std::size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (raw.ends_with('\r')) raw.remove_suffix(1);
    for (const char c : raw) {
      if (is_control(c) && c != '\t') return fail(line_error(line, "the line contains a control character"));
    }
    const std::string_view body = trim_blanks(raw);
    if (body.empty() || body.front() == '#') continue;
    if (table->entries.size() == max_token_file_entries) {
      return fail(line_error(line, "too many entries (max_token_file_entries is " +
                                       std::to_string(max_token_file_entries) + ")"));
    }
    token_entry e;
    e.line = line;
    if (auto parsed = parse_entry(body, line, e); !parsed) return fail(std::move(parsed.error()));
    for (const token_entry& other : table->entries) {
      // Digests are public (the file holds them); no constant time needed here.
      if (other.digest == e.digest) {
        return fail(line_error(line, "the same digest (the same token) is already on line " + std::to_string(other.line)));
      }
      if (other.who.id == e.who.id && !same_principal(other.who, e.who)) {
        return fail(line_error(line, "principal \"" + e.who.id + "\" is already on line " + std::to_string(other.line) +
                                         " with different attributes (tier, kind, roles, assured, name)"));
      }
    }
    table->entries.push_back(std::move(e));
  }
  if (table->entries.empty()) {
    table->warnings.push_back(token_file_warning{0, "no token entries: every request will be refused"});
  }
  return std::shared_ptr<const token_table>(std::move(table));
}

// ---- reading the file ---------------------------------------------------------------------------

struct file_contents {
  std::string text;
  std::vector<token_file_warning> warnings;
};

token_file_error os_error(std::string message, int err) {
  return token_file_error{0, std::move(message), std::error_code(err, std::generic_category())};
}

class fd_guard {
 public:
  explicit fd_guard(int fd) noexcept : fd_(fd) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

result<file_contents, token_file_error> read_token_file(const std::string& path) {
  if (path.empty()) return fail(token_file_error{0, "no token file to read (made from text)", {}});
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);  // NOLINT(cppcoreguidelines-pro-type-vararg)
  if (fd < 0) return fail(os_error("cannot open the token file " + path, errno));
  const fd_guard guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(os_error("cannot stat the token file " + path, errno));
  if (!S_ISREG(st.st_mode)) return fail(token_file_error{0, "the token file " + path + " is not a regular file", {}});
  if ((st.st_mode & S_IWOTH) != 0) {
    return fail(token_file_error{0, "the token file " + path + " is world-writable: anyone could add a token (chmod o-w)", {}});
  }
  file_contents out;
  if ((st.st_mode & S_IROTH) != 0) {
    out.warnings.push_back(token_file_warning{
        0, "the token file " + path + " is world-readable (chmod o-r): digests of weak tokens can be guessed offline"});
  }
  // Read at most one byte past the cap (the file may grow after fstat).
  std::array<char, 8192> buf{};
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(os_error("cannot read the token file " + path, errno));
    }
    if (n == 0) break;
    out.text.append(buf.data(), static_cast<std::size_t>(n));
    if (out.text.size() > max_token_file_bytes) {
      return fail(token_file_error{0, "the token file " + path + " is larger than max_token_file_bytes (" +
                                          std::to_string(max_token_file_bytes) + ")", {}});
    }
  }
  return out;
}

result<std::shared_ptr<const token_table>, token_file_error> load_table(const std::string& path) {
  auto contents = read_token_file(path);
  if (!contents) return fail(std::move(contents.error()));
  auto table = parse_table(contents->text);
  if (!table) return fail(std::move(table.error()));
  if (contents->warnings.empty()) return table;
  // Prepend the file's own warnings to the parser's.
  auto merged = std::make_shared<token_table>(**table);
  contents->warnings.insert(contents->warnings.end(), merged->warnings.begin(), merged->warnings.end());
  merged->warnings = std::move(contents->warnings);
  return std::shared_ptr<const token_table>(std::move(merged));
}

constexpr std::string_view base64url_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url(const unsigned char* data, std::size_t size) {
  std::string out;
  out.reserve(((size * 4) + 2) / 3);
  std::size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const std::uint32_t v = (std::uint32_t{data[i]} << 16U) | (std::uint32_t{data[i + 1]} << 8U) | data[i + 2];
    out += base64url_alphabet[(v >> 18U) & 63U];
    out += base64url_alphabet[(v >> 12U) & 63U];
    out += base64url_alphabet[(v >> 6U) & 63U];
    out += base64url_alphabet[v & 63U];
  }
  if (size - i == 1) {
    const std::uint32_t v = std::uint32_t{data[i]} << 16U;
    out += base64url_alphabet[(v >> 18U) & 63U];
    out += base64url_alphabet[(v >> 12U) & 63U];
  } else if (size - i == 2) {
    const std::uint32_t v = (std::uint32_t{data[i]} << 16U) | (std::uint32_t{data[i + 1]} << 8U);
    out += base64url_alphabet[(v >> 18U) & 63U];
    out += base64url_alphabet[(v >> 12U) & 63U];
    out += base64url_alphabet[(v >> 6U) & 63U];
  }
  return out;
}

}  // namespace

// ---- shared state -------------------------------------------------------------------------------

struct token_authenticator::shared_state {
  explicit shared_state(std::string p, std::shared_ptr<const token_table> t)
      : path(std::move(p)), table(std::move(t)) {}

  [[nodiscard]] std::shared_ptr<const token_table> snapshot() const {
    const std::lock_guard lock(table_mutex);
    return table;
  }
  void install(std::shared_ptr<const token_table> t) {
    const std::lock_guard lock(table_mutex);
    table.swap(t);
  }  // the previous table is released here, outside the lock

  const std::string path;
  std::mutex reload_mutex;                   // serialises reloads
  mutable std::mutex table_mutex;            // guards `table` (the pointer, not the table)
  std::shared_ptr<const token_table> table;  // never null
};

token_authenticator::token_authenticator(std::shared_ptr<shared_state> state) noexcept : state_(std::move(state)) {}

result<token_authenticator> token_authenticator::load(std::string path) {
  auto table = load_table(path);
  if (!table) return fail(public_error(table.error(), path));
  return token_authenticator(std::make_shared<shared_state>(std::move(path), std::move(*table)));
}

result<token_authenticator> token_authenticator::from_text(std::string_view text) {
  auto table = parse_table(text);
  if (!table) return fail(public_error(table.error(), {}));
  return token_authenticator(std::make_shared<shared_state>(std::string(), std::move(*table)));
}

std::optional<principal> token_authenticator::authenticate(const http_request_view& req) const noexcept {
  try {
    if (!state_) return std::nullopt;
    const std::optional<std::string_view> bearer = detail::bearer_token(req);
    if (!bearer) return std::nullopt;
    const std::string_view token = *bearer;
    if (!is_valid_token(token)) return std::nullopt;

    digest_t presented{};
    if (!sha256(token, presented)) return std::nullopt;
    const std::shared_ptr<const token_table> table = state_->snapshot();
    // Compare with every entry, without an early exit and without a data-dependent branch.
    std::size_t match = 0;
    std::size_t found = 0;
    const std::vector<token_entry>& entries = table->entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto diff = static_cast<unsigned int>(CRYPTO_memcmp(presented.data(), entries[i].digest.data(), digest_bytes));
      // 1 when diff == 0, else 0: the top bit of (diff | -diff) is set exactly when diff != 0.
      const std::size_t equal = ((diff | (0U - diff)) >> (sizeof(unsigned int) * CHAR_BIT - 1U)) ^ 1U;
      const std::size_t mask = std::size_t{0} - equal;
      match = (match & ~mask) | (i & mask);
      found |= equal;
    }
    OPENSSL_cleanse(presented.data(), presented.size());
    if (found == 0) return std::nullopt;
    return entries[match].who;
  } catch (...) {
    return std::nullopt;
  }
}

credential_verdict token_authenticator::revalidate(const principal& p) const noexcept {
  try {
    if (!state_) return credential_verdict::revoked;
    const std::shared_ptr<const token_table> table = state_->snapshot();
    for (const token_entry& e : table->entries) {
      if (same_principal(e.who, p)) return credential_verdict::valid;
    }
    return credential_verdict::revoked;
  } catch (...) {
    return credential_verdict::indeterminate;
  }
}

result<void> token_authenticator::reload() {
  if (!state_) return fail(error(library_errc::moved_from, std::string("the authenticator was moved from")));
  const std::lock_guard lock(state_->reload_mutex);
  auto table = load_table(state_->path);
  if (!table) return fail(public_error(table.error(), state_->path));
  state_->install(std::move(*table));
  return {};
}

result<void> token_authenticator::reload_text(std::string_view text) {
  if (!state_) return fail(error(library_errc::moved_from, std::string("the authenticator was moved from")));
  const std::lock_guard lock(state_->reload_mutex);
  auto table = parse_table(text);
  if (!table) return fail(public_error(table.error(), {}));
  state_->install(std::move(*table));
  return {};
}

std::vector<token_file_warning> token_authenticator::warnings() const {
  if (!state_) return {};
  return state_->snapshot()->warnings;
}

std::size_t token_authenticator::size() const noexcept {
  try {
    if (!state_) return 0;
    return state_->snapshot()->entries.size();
  } catch (...) {
    return 0;
  }
}

std::string token_authenticator::path() const {
  if (!state_) return {};
  return state_->path;
}

std::string token_authenticator::token_digest(std::string_view token) {
  digest_t d{};
  if (!sha256(token, d)) return {};
  constexpr std::string_view hex = "0123456789abcdef";
  std::string out;
  out.reserve(token_digest_hex_length);
  for (const unsigned char b : d) {
    out += hex[b >> 4U];
    out += hex[b & 0x0FU];
  }
  return out;
}

std::optional<std::string> token_authenticator::generate_token() {
  std::array<unsigned char, generated_token_bytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) return std::nullopt;
  std::string token = base64url(bytes.data(), bytes.size());
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return token;
}

bool token_authenticator::is_valid_token(std::string_view token) noexcept {
  return token.size() <= max_bearer_token_bytes && detail::is_b64token(token);
}

std::optional<std::string> token_authenticator::token_file_line(std::string_view token, const principal& who) {
  if (!is_valid_token(token) || !valid_word(who.id) || !valid_tier(who.tier)) return std::nullopt;
  const std::string_view kind = mcpcore::to_string(who.kind);
  if (kind.empty()) return std::nullopt;
  for (std::size_t i = 0; i < who.roles.size(); ++i) {
    const std::string& role = who.roles[i];
    if (!valid_word(role) || role.find(',') != std::string::npos) return std::nullopt;
    for (std::size_t j = 0; j < i; ++j) {
      if (who.roles[j] == role) return std::nullopt;
    }
  }
  const std::string& name = who.display_name;
  if (!name.empty()) {
    if (trim_blanks(name).size() != name.size() || !valid_utf8(name)) return std::nullopt;
    for (const char c : name) {
      if (is_control(c)) return std::nullopt;
    }
  }
  const std::string digest = token_digest(token);
  if (digest.empty()) return std::nullopt;

  std::string line;
  line.append(digest_prefix).append(digest).append("  ").append(who.id).append("  ");
  line.append(who.tier.empty() ? no_tier : std::string_view(who.tier)).append("  ").append(kind);
  if (!who.roles.empty()) {
    line.append("  roles=");
    for (std::size_t i = 0; i < who.roles.size(); ++i) {
      if (i != 0) line += ',';
      line.append(who.roles[i]);
    }
  }
  if (who.assured) line.append("  assured");
  if (!name.empty()) line.append("  name=").append(name);
  return line;
}

std::string to_string(const token_file_warning& w) {
  std::string out;
  if (w.line != 0) out.append("line ").append(std::to_string(w.line)).append(": ");
  out.append(w.message);
  return out;
}

}  // namespace transport

MCPCORE_END_NAMESPACE
