// SPDX-License-Identifier: Apache-2.0
// The in-memory and JSON-lines audit sinks, the audit line format and audit value sanitising.
#ifndef MCPCORE_IMPL_AUDIT_IPP
#define MCPCORE_IMPL_AUDIT_IPP

#include <mcpcore/governance/audit.hpp>

#include <mcpcore/wire/json_writer.hpp>
// json::detail::utf8_sequence, the UTF-8 classifier append_escaped repairs with. In compiled
// mode this is the single translation unit of src/mcpcore.cpp, which includes it anyway; in
// header-only mode json_writer.hpp already included it.
#include <mcpcore/wire/impl/json_writer.ipp>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// Appends v in decimal, left-padded with zeros to `width` digits. @pre v >= 0.
MCPCORE_INTERNAL void audit_append_padded(std::string& out, long long v, int width) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  for (auto n = static_cast<int>(r.ptr - buf); n < width; ++n) out.push_back('0');
  out.append(buf, r.ptr);
}

// YYYY-MM-DDTHH:MM:SS.mmmZ (RFC 3339 §5.6 with the UTC "Z"), truncated to the millisecond below.
// Shared with the approval endpoint, which includes this file for it.
MCPCORE_INTERNAL void append_rfc3339(std::string& out, std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(t);
  const auto day = floor<days>(ms);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{ms - day};
  audit_append_padded(out, static_cast<int>(ymd.year()), 4);
  out.push_back('-');
  audit_append_padded(out, static_cast<unsigned>(ymd.month()), 2);
  out.push_back('-');
  audit_append_padded(out, static_cast<unsigned>(ymd.day()), 2);
  out.push_back('T');
  audit_append_padded(out, hms.hours().count(), 2);
  out.push_back(':');
  audit_append_padded(out, hms.minutes().count(), 2);
  out.push_back(':');
  audit_append_padded(out, hms.seconds().count(), 2);
  out.push_back('.');
  audit_append_padded(out, hms.subseconds().count(), 3);
  out.push_back('Z');
}

}  // namespace detail

MCPCORE_DECL audit_entry make_audit_entry(const audit_record& r) {
  return audit_entry{.action = std::string{r.action},
                     .target_type = std::string{r.target_type},
                     .target_id = std::string{r.target_id},
                     .principal_id = std::string{r.principal_id},
                     .result = r.result,
                     .detail = std::string{r.detail},
                     .correlation_id = std::string{r.correlation_id},
                     .time = r.time};
}

// ---- memory_audit_sink ------------------------------------------------------------------------

struct memory_audit_sink::impl {
  explicit impl(std::size_t cap) : capacity(cap == 0 ? 1 : cap) {}
  mutable std::mutex mutex;
  std::deque<audit_entry> rows;  // guarded by mutex; oldest first
  const std::size_t capacity;
  // Written under `mutex`; atomic so that `dropped()` reads it without the lock.
  std::atomic<std::uint64_t> dropped{0};
};

MCPCORE_DECL memory_audit_sink::memory_audit_sink(std::size_t capacity) : impl_(new impl(capacity)) {}
MCPCORE_DECL memory_audit_sink::memory_audit_sink(memory_audit_sink&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}
MCPCORE_DECL memory_audit_sink& memory_audit_sink::operator=(memory_audit_sink&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}
MCPCORE_DECL memory_audit_sink::~memory_audit_sink() { delete impl_; }

MCPCORE_DECL bool memory_audit_sink::record(const audit_record& r) {
  // A moved-from sink records nothing and reports the gap.
  if (impl_ == nullptr) return false;
  try {
    audit_entry e = make_audit_entry(r);  // copy outside the lock
    const std::lock_guard lock{impl_->mutex};
    impl_->rows.push_back(std::move(e));  // push first: a failed push drops nothing
    if (impl_->rows.size() > impl_->capacity) {
      impl_->rows.pop_front();
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

MCPCORE_DECL std::vector<audit_entry> memory_audit_sink::entries() const {
  if (impl_ == nullptr) return {};
  const std::lock_guard lock{impl_->mutex};
  return {impl_->rows.begin(), impl_->rows.end()};
}

MCPCORE_DECL std::uint64_t memory_audit_sink::dropped() const noexcept {
  return impl_ == nullptr ? 0 : impl_->dropped.load(std::memory_order_relaxed);
}

MCPCORE_DECL std::size_t memory_audit_sink::capacity() const noexcept {
  return impl_ == nullptr ? 0 : impl_->capacity;
}

MCPCORE_DECL void memory_audit_sink::clear() {
  if (impl_ == nullptr) return;
  const std::lock_guard lock{impl_->mutex};
  impl_->rows.clear();
  impl_->dropped.store(0, std::memory_order_relaxed);
}

// ---- jsonl_audit_sink -------------------------------------------------------------------------

struct jsonl_audit_sink::impl {
  explicit impl(std::FILE* f) noexcept : file(f) {}
  ~impl() {
    if (file != nullptr) std::fclose(file);  // NOLINT(cert-err33-c): nothing to report it to
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  std::mutex mutex;
  std::FILE* file;  // guarded by mutex
};

MCPCORE_DECL result<jsonl_audit_sink> jsonl_audit_sink::open(const std::string& path) {
#if defined(__GLIBC__)
  // Append mode: every write lands at the end of the file, whoever else appends to it.
  constexpr const char* mode = "ae";  // 'e': O_CLOEXEC, so child processes do not inherit the log
#else
  constexpr const char* mode = "a";
#endif
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (f == nullptr) {
    const int e = errno;
    const std::error_code ec{e != 0 ? e : EIO, std::generic_category()};
    return fail(error(ec, "cannot open the audit log " + path + ": " + ec.message()));
  }
  auto* p = new (std::nothrow) impl(f);
  if (p == nullptr) {
    std::fclose(f);  // NOLINT(cert-err33-c): the allocation failure is what is reported
    return fail(std::make_error_code(std::errc::not_enough_memory));
  }
  return jsonl_audit_sink{p};
}

MCPCORE_DECL jsonl_audit_sink::jsonl_audit_sink(jsonl_audit_sink&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}
MCPCORE_DECL jsonl_audit_sink& jsonl_audit_sink::operator=(jsonl_audit_sink&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}
MCPCORE_DECL jsonl_audit_sink::~jsonl_audit_sink() { delete impl_; }

MCPCORE_DECL bool jsonl_audit_sink::record(const audit_record& r) {
  if (impl_ == nullptr) return false;
  std::string line;
  try {
    line.reserve(256);
    append_audit_json(line, r);
    line.push_back('\n');
  } catch (const std::bad_alloc&) {
    return false;
  }
  const std::lock_guard lock{impl_->mutex};
  // One write and one flush per row, under the lock: rows of this sink never interleave,
  // and `true` means the line reached the operating system, not merely the FILE buffer.
  std::FILE* f = impl_->file;
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size() && std::fflush(f) == 0;
  // The error indicator is sticky: clear it so that the next row gets its own chance.
  if (!ok) std::clearerr(f);
  return ok;
}

// ---- formatting and sanitising ----------------------------------------------------------------

MCPCORE_DECL std::string to_rfc3339(std::chrono::system_clock::time_point t) {
  std::string out;
  out.reserve(24);
  detail::append_rfc3339(out, t);
  return out;
}

MCPCORE_DECL void append_audit_json(std::string& out, const audit_record& r) {
  std::string time;
  detail::append_rfc3339(time, r.time);
  json::writer w{out};
  w.begin_object()
      .member("time", std::string_view{time})
      .member("action", r.action)
      .member("target_type", r.target_type)
      .member("target_id", r.target_id)
      .member("principal", r.principal_id)
      .member("result", to_string(r.result))
      .member("detail", r.detail)
      .member("correlation_id", r.correlation_id)
      .end_object();
}

namespace detail {

// The characters that change how the text around them is shown, or that show nothing at all
// (docs/security.md#text-shown-to-people): Unicode's format characters (general category Cf:
// bidirectional controls, zero-width characters, the byte order mark, tag characters, ...), the
// line and paragraph separators, and the fillers that render as blanks. Ranges, sorted.
struct code_point_range {
  char32_t first;
  char32_t last;
};
inline constexpr code_point_range invisible_ranges[] = {
    {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x115F, 0x1160},   {0x17B4, 0x17B5},
    {0x180B, 0x180F},   {0x200B, 0x200F},   {0x2028, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
    {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF9, 0xFFFB},
    {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
    {0xE0000, 0xE0FFF},
};

[[nodiscard]] constexpr bool invisible_code_point(char32_t c) noexcept {
  for (const auto& r : invisible_ranges) {
    if (c < r.first) return false;
    if (c <= r.last) return true;
  }
  return false;
}

// The code point of a well-formed UTF-8 sequence of `length` bytes at `p`.
[[nodiscard]] inline char32_t decode_utf8(const unsigned char* p, std::size_t length) noexcept {
  constexpr unsigned char lead_bits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t c = p[0] & lead_bits[length];
  for (std::size_t i = 1; i < length; ++i) c = (c << 6U) | (p[i] & 0x3FU);  // NOLINT: bytes of the text
  return c;
}

// `\uXXXX` (4 lower-case hex digits, 6 beyond U+FFFF).
inline void append_code_point_escape(std::string& out, char32_t c) {
  constexpr std::string_view hex = "0123456789abcdef";
  out += "\\u";
  const int digits = c > 0xFFFF ? 6 : 4;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += hex[(c >> static_cast<unsigned>(shift)) & 0xFU];
}

}  // namespace detail

MCPCORE_DECL std::string sanitize_audit_value(std::string_view v) {
  constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(v.size() < max_audit_value_bytes ? v.size() : max_audit_value_bytes);
  std::string escape;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());  // NOLINT: bytes of the text
  const auto* const end = p + v.size();
  while (p < end) {
    const unsigned char c = *p;
    std::string_view piece;
    std::size_t consumed = 1;
    if (c < 0x80) {
      // `;`, `=` and line breaks would let a value forge a `key=value` pair or a whole row
      // (docs/security.md#audit-and-the-one-cid-pattern).
      const bool unsafe = c < 0x20 || c == 0x7F || c == ';' || c == '=';
      piece = unsafe ? std::string_view{"_"} : std::string_view{reinterpret_cast<const char*>(p), 1};  // NOLINT
    } else {
      const auto step = json::detail::utf8_sequence(p, end);
      consumed = step.length;
      if (!step.valid) {
        piece = replacement;
      } else if (c == 0xC2 && p[1] < 0xA0) {
        piece = "_";  // C1 control U+0080-U+009F
      } else if (const char32_t cp = detail::decode_utf8(p, step.length); detail::invisible_code_point(cp)) {
        escape.clear();
        detail::append_code_point_escape(escape, cp);
        piece = escape;
      } else {
        piece = {reinterpret_cast<const char*>(p), step.length};  // NOLINT: bytes of the text
      }
    }
    if (out.size() + piece.size() > max_audit_value_bytes) break;  // never cut inside a sequence
    out.append(piece);
    p += consumed;
  }
  return out;
}

namespace detail {

// `text` cut into the pieces a person may be shown (docs/security.md#text-shown-to-people): runs
// of plain text go to `plain`, and each C0 control, DEL, C1 control and invisible character
// (`\u202e`), each ill-formed UTF-8 byte (`\xNN`) and each backslash (`\\`) goes to `escape` as
// its visible escape. `escape_for_display` joins them; the approvals page wraps the escapes in a
// marked element.
template <class Plain, class Escape>
void for_each_display_piece(std::string_view text, Plain&& plain, Escape&& escape) {
  constexpr std::string_view hex = "0123456789abcdef";
  std::string esc;
  const auto* const begin = reinterpret_cast<const unsigned char*>(text.data());  // NOLINT: bytes of the text
  const auto* p = begin;
  const auto* const end = p + text.size();
  const auto* run = p;  // the start of the plain run not yet handed on
  const auto flush = [&](const unsigned char* upto) {
    if (upto != run) plain(text.substr(static_cast<std::size_t>(run - begin), static_cast<std::size_t>(upto - run)));
  };
  while (p < end) {
    const unsigned char c = *p;
    std::size_t length = 1;
    esc.clear();
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) {
        append_code_point_escape(esc, c);
      } else if (c == '\\') {
        esc = "\\\\";
      }
    } else {
      const auto step = json::detail::utf8_sequence(p, end);
      length = step.length;
      if (!step.valid) {
        for (std::size_t i = 0; i < step.length; ++i) {  // each byte of the ill-formed part
          esc += "\\x";
          esc += hex[p[i] >> 4U];    // NOLINT: bytes of the text
          esc += hex[p[i] & 0xFU];   // NOLINT: bytes of the text
        }
      } else if (const char32_t cp = decode_utf8(p, step.length);
                 (cp >= 0x80 && cp <= 0x9F) || invisible_code_point(cp)) {
        append_code_point_escape(esc, cp);
      }
    }
    if (!esc.empty()) {
      flush(p);
      escape(std::string_view{esc});
      run = p + length;
    }
    p += length;
  }
  flush(end);
}

}  // namespace detail

MCPCORE_DECL std::string escape_for_display(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto append = [&out](std::string_view piece) { out.append(piece); };
  detail::for_each_display_piece(text, append, append);
  return out;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_AUDIT_IPP
