// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 request parser seam: libhttp-parser owns the grammar, this file the limits and the
// checks the library does not make (folding, chunk extensions, framing, versions, upgrades).
#include "http_head_parser.hpp"

#include <http_parser.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/http.hpp>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

namespace {

// RFC 9110 §5.6.2 tchar.
constexpr bool is_tchar(unsigned char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

// RFC 9110 §5.5 field-content bytes: VCHAR, SP, HTAB and obs-text; never NUL, CR, LF or other CTLs.
constexpr bool is_field_value_byte(unsigned char c) noexcept {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

using mcpcore::detail::ascii_iequals;

std::string_view trim_ows(std::string_view v) noexcept {
  while (!v.empty() && is_ows(v.front())) v.remove_prefix(1);
  while (!v.empty() && is_ows(v.back())) v.remove_suffix(1);
  return v;
}

// Whether `text` is 1*DIGIT with the value `value` (leading zeros allowed).
bool digits_equal(std::string_view text, std::uint64_t value) noexcept {
  if (text.empty()) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  return v == value;
}

/// Header fields room is made for at the first field of a head: an MCP client sends six to ten.
constexpr std::size_t expected_header_fields = 12;

// Reasons (static storage) for parse_failure.
constexpr std::string_view reason_malformed = "malformed request";
constexpr std::string_view reason_head_too_large = "request head too large";
constexpr std::string_view reason_too_many_fields = "too many header fields";
constexpr std::string_view reason_target_too_long = "request target too long";
constexpr std::string_view reason_body_too_large = "request content too large";
constexpr std::string_view reason_folding = "obsolete line folding";
constexpr std::string_view reason_field_name = "invalid header field name";
constexpr std::string_view reason_field_value = "invalid character in header field value";
constexpr std::string_view reason_field = "invalid character in header field";
constexpr std::string_view reason_chunk_line = "invalid chunk size line";
constexpr std::string_view reason_chunk_end = "chunk data not followed by CRLF";
constexpr std::string_view reason_bare_cr = "CR not followed by LF";
constexpr std::string_view reason_request_line = "malformed request line";
constexpr std::string_view reason_version = "HTTP version not supported";
constexpr std::string_view reason_preface = "HTTP/2 connection preface: only HTTP/1.x is served";
constexpr std::string_view reason_connect = "CONNECT is not supported";
constexpr std::string_view reason_upgrade = "protocol upgrade is not supported";
constexpr std::string_view reason_transfer_coding = "transfer coding not supported (only chunked)";
constexpr std::string_view reason_transfer_syntax = "Transfer-Encoding value not understood";
constexpr std::string_view reason_te_http10 = "Transfer-Encoding in an HTTP/1.0 request";
constexpr std::string_view reason_length_conflict =
    "Content-Length repeated or combined with Transfer-Encoding";
constexpr std::string_view reason_content_length = "invalid Content-Length";
constexpr std::string_view reason_method = "invalid method";
constexpr std::string_view reason_method_unknown = "method not implemented";
constexpr std::string_view reason_target = "invalid request target";
constexpr std::string_view reason_fragment = "fragment in the request target";
constexpr std::string_view reason_absolute = "absolute-form target not served (scheme, userinfo or empty authority)";
constexpr std::string_view reason_chunk_size = "chunk size too large";
constexpr std::string_view reason_out_of_memory = "out of memory";
constexpr std::string_view reason_internal = "request parser inconsistency";

// Scans the lines of a head (request line and header lines) or of a trailer section ahead of
// libhttp-parser, so that every verdict below depends only on the position of a byte in the
// stream, never on how the stream was cut into feed() calls (the library reports data in
// pieces that end wherever a read ended).
//
// Debian builds the library without HTTP_PARSER_STRICT: it accepts a CR followed by any byte as
// a line end (even as the end of the head), any four bytes in place of the `HTTP` of the
// version, and it silently joins folded lines. The scanner rejects:
//  - a CR not followed by LF (RFC 9112 §2.2): 400;
//  - a line starting with SP or HTAB after the request line: obsolete folding (§5.2): 400;
//  - a request line whose version part is not `HTTP/` DIGIT `.` DIGIT (§2.3, §3): 400, or is
//    another version than 1.0 and 1.1 (HTTP/0.9 included): 505; CONNECT: 501;
//  - a target longer than max_target_bytes: 414; more field lines than max_header_count: 431 (a
//    Host added for an absolute-form target counts as one);
// It also finds the empty line that ends the section, agreeing with the library on line ends
// (LF or CRLF), and skips empty lines before the request line (§2.2) as the library does.
//
// It classifies the method word too (method_word()), for when the library rejects the method:
// the library fails on the first byte that does not continue a method it knows (the `F` of
// `FOO`), so the seam settles 501 (a token, RFC 9110 §9.1) or 400 (not a token) only from the
// whole word, as this scanner sees it, whatever the feed() calls.
class line_scanner {
 public:
  enum class verdict : unsigned char {
    more,              // all bytes are fine; the section goes on
    end,               // the section ends with the LF before `length`
    fold,              // 400
    bare_cr,           // 400
    bad_request_line,  // 400
    bad_version,       // 505
    connect,           // 501
    target_too_long,   // 414
    too_many_fields,   // 431
  };
  struct result {
    std::size_t length;  // bytes to hand to the parser (a bad byte excluded; the end LF included)
    verdict what;
  };
  // The method word of the request line (RFC 9110 §9: method = token), as far as scanned. Final
  // from the byte that decides it: the SP after it, a byte that is not a tchar, or the byte one
  // beyond max_method_bytes.
  enum class method_state : unsigned char {
    open,       // no byte or only tchars so far, at most max_method_bytes: undecided
    token,      // 1 to max_method_bytes tchars, then SP
    too_long,   // more than max_method_bytes tchars (RFC 9112 §3: 501)
    malformed,  // empty (the line starts with SP), or a non-tchar (CR, LF, NUL...) before the SP
  };

  line_scanner(std::size_t max_target, std::size_t max_fields) noexcept
      : max_target_(max_target), max_fields_(max_fields) {}

  // A head: starts before the request line.
  void reset_head() noexcept { *this = line_scanner{max_target_, max_fields_}; }
  // A trailer section: starts at the beginning of its first line; its fields count on top of the
  // head's.
  void reset_trailers() noexcept {
    const std::size_t fields = fields_;
    reset_head();
    fields_ = fields;
    started_ = true;
    request_line_ = false;
  }

  result scan(std::string_view chunk) noexcept {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const char b = chunk[i];
      if (cr_pending_ && b != '\n') return {i, verdict::bare_cr};
      cr_pending_ = false;
      // Empty lines before the request line are skipped (the library does too).
      if (request_line_ && (started_ || (b != '\r' && b != '\n'))) note_method_byte(b);
      if (b == '\n') {
        const bool empty = line_len_ == 0;
        line_len_ = 0;
        if (!empty && request_line_) {
          request_line_ = false;
          const verdict v = request_line_verdict();
          if (v != verdict::more) return {i, v};
        }
        if (empty && started_) return {i + 1, verdict::end};
        continue;
      }
      if (b == '\r') {
        cr_pending_ = true;
        continue;
      }
      if (line_len_ == 0 && started_) {  // the first byte of a field line
        if (is_ows(b)) return {i, verdict::fold};
        if (++fields_ > max_fields_) return {i, verdict::too_many_fields};
      }
      started_ = true;
      ++line_len_;
      if (request_line_ && !note_request_line_byte(b)) return {i, verdict::target_too_long};
    }
    return {chunk.size(), verdict::more};
  }

  // The method as far as seen (up to 8 bytes), to recognise the HTTP/2 preface `PRI` and
  // CONNECT; empty when the request line starts with a space (the library fails on that first
  // byte).
  [[nodiscard]] std::string_view method_prefix() const noexcept {
    if (leading_space_) return {};
    return {method_.data(), method_len_};
  }

  [[nodiscard]] method_state method_word() const noexcept { return method_state_; }

 private:
  // Classifies one byte of the request line while the method word is undecided.
  void note_method_byte(char b) noexcept {
    if (method_state_ != method_state::open) return;
    if (b == ' ') {
      method_state_ = method_word_len_ == 0 ? method_state::malformed : method_state::token;
    } else if (!is_tchar(static_cast<unsigned char>(b))) {
      method_state_ = method_state::malformed;
    } else if (++method_word_len_ > max_method_bytes) {
      method_state_ = method_state::too_long;
    }
  }

  // False when the target grows beyond its cap.
  bool note_request_line_byte(char b) noexcept {
    if (b == ' ') {
      in_word_ = false;
      if (words_ == 0) leading_space_ = true;
    } else {
      if (!in_word_) {
        in_word_ = true;
        if (words_ < 3) ++words_;
      }
      if (words_ == 1 && method_len_ < method_.size()) method_[method_len_++] = b;
      if (words_ == 1) ++method_bytes_;
      if (words_ == 2 && ++target_len_ > max_target_) return false;
    }
    for (std::size_t j = 1; j < tail_.size(); ++j) tail_[j - 1] = tail_[j];
    tail_.back() = b;
    if (tail_len_ < tail_.size()) ++tail_len_;
    return true;
  }

  [[nodiscard]] verdict request_line_verdict() const noexcept {
    if (words_ < 2) return verdict::bad_request_line;
    if (words_ == 2) return verdict::bad_version;  // HTTP/0.9: no version part
    if (in_word_ == false || tail_len_ < tail_.size()) return verdict::bad_request_line;
    const std::string_view t{tail_.data(), tail_.size()};
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (t.substr(0, 5) != "HTTP/" || !digit(t[5]) || t[6] != '.' || !digit(t[7])) {
      return verdict::bad_request_line;
    }
    if (t[5] != '1' || (t[7] != '0' && t[7] != '1')) return verdict::bad_version;
    if (method_bytes_ == 7 && method_prefix() == "CONNECT") return verdict::connect;
    return verdict::more;
  }

  std::size_t max_target_;
  std::size_t max_fields_;
  std::size_t line_len_ = 0;    // bytes of the current line, CR and LF excluded
  std::size_t fields_ = 0;      // field lines begun (head and trailers)
  bool cr_pending_ = false;     // the previous byte was CR: LF must follow
  bool started_ = false;        // the request line began (always true for trailers)
  bool request_line_ = true;    // still in (or before) the request line
  bool in_word_ = false;        // inside a word of the request line (words are separated by SP)
  unsigned words_ = 0;          // words of the request line begun, saturating at 3
  bool leading_space_ = false;  // the request line starts with SP
  std::array<char, 8> method_{};
  std::size_t method_len_ = 0;
  std::size_t method_bytes_ = 0;
  std::size_t target_len_ = 0;
  std::array<char, 8> tail_{};  // the last bytes of the request line
  std::size_t tail_len_ = 0;
  method_state method_state_ = method_state::open;
  std::size_t method_word_len_ = 0;  // tchars of the method word while it is open
};

// Validates one chunk-size line (RFC 9112 §7.1, §7.1.1) ahead of libhttp-parser, which accepts
// any bytes, bare LF included, after `;`:
//   chunk-size [ chunk-ext ] CRLF
//   chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//   chunk-ext-name = token; chunk-ext-val = token / quoted-string
class chunk_line_scanner {
 public:
  enum class verdict : unsigned char { more, end, invalid };
  struct result {
    std::size_t length;  // bytes to hand to the parser (the bad byte excluded; the LF included)
    verdict what;
  };

  void reset() noexcept { *this = chunk_line_scanner{}; }

  result scan(std::string_view chunk) noexcept {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if (++line_len_ > max_chunk_line_bytes) return {i, verdict::invalid};
      const auto c = static_cast<unsigned char>(chunk[i]);
      if (!step(c)) return {i, verdict::invalid};
      if (state_ == st::done) return {i + 1, verdict::end};
    }
    return {chunk.size(), verdict::more};
  }

 private:
  enum class st : unsigned char {
    size_first,  // first hex digit
    size,        // more hex digits
    bws,         // BWS before ';' (after the size or an extension)
    name_bws,    // BWS after ';'
    name,        // extension name
    eq_bws,      // BWS after the name, before '='
    val_bws,     // BWS after '='
    token_val,   // token value
    quoted,      // inside a quoted-string value
    quoted_esc,  // after a backslash in a quoted-string
    cr,          // after CR: LF must follow
    done,
  };

  static constexpr bool is_hex(unsigned char c) noexcept {
    return mcpcore::detail::hex_value(static_cast<char>(c)) >= 0;
  }

  // Consumes one byte; false when it cannot continue a valid line.
  bool step(unsigned char c) noexcept {
    const bool ows = c == ' ' || c == '\t';
    switch (state_) {
      case st::size_first:
        if (!is_hex(c)) return false;
        state_ = st::size;
        return true;
      case st::size:
        if (is_hex(c)) return true;
        return after_element(c, ows);
      case st::bws:
        if (ows) return true;
        return after_element(c, false);
      case st::name_bws:
        if (ows) return true;
        if (!is_tchar(c)) return false;
        state_ = st::name;
        return true;
      case st::name:
        if (is_tchar(c)) return true;
        if (ows) {
          state_ = st::eq_bws;
          return true;
        }
        if (c == '=') {
          state_ = st::val_bws;
          return true;
        }
        return after_element(c, false);
      case st::eq_bws:
        if (ows) return true;
        if (c == '=') {
          state_ = st::val_bws;
          return true;
        }
        return after_element(c, false);
      case st::val_bws:
        if (ows) return true;
        if (c == '"') {
          state_ = st::quoted;
          return true;
        }
        if (!is_tchar(c)) return false;
        state_ = st::token_val;
        return true;
      case st::token_val:
        if (is_tchar(c)) return true;
        return after_element(c, ows);
      case st::quoted:
        if (c == '"') {
          state_ = st::bws;
          return true;
        }
        if (c == '\\') {
          state_ = st::quoted_esc;
          return true;
        }
        // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
        return c == '\t' || (c >= 0x20 && c != 0x7f);
      case st::quoted_esc:
        // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
        if (!(c == '\t' || (c >= 0x20 && c != 0x7f))) return false;
        state_ = st::quoted;
        return true;
      case st::cr:
        if (c != '\n') return false;
        state_ = st::done;
        return true;
      case st::done:
        return false;
    }
    return false;
  }

  // After a complete size, name or value: BWS, ';' (next extension) or CR (end of line).
  bool after_element(unsigned char c, bool ows) noexcept {
    if (ows) {
      state_ = st::bws;
      return true;
    }
    if (c == ';') {
      state_ = st::name_bws;
      return true;
    }
    if (c == '\r') {
      state_ = st::cr;
      return true;
    }
    return false;
  }

  st state_ = st::size_first;
  std::size_t line_len_ = 0;
};

}  // namespace

bool list_has_token(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view element = trim_ows(list.substr(0, comma));
    if (ascii_iequals(element, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view to_string(parse_state state) noexcept {
  switch (state) {
    case parse_state::need_more:
      return "need_more";
    case parse_state::headers_done:
      return "headers_done";
    case parse_state::complete:
      return "complete";
    case parse_state::error:
      return "error";
  }
  return "unknown";
}

struct http_head_parser::impl {
  // Which part of a request the next bytes belong to. libhttp-parser is paused at every boundary
  // (head complete, chunk size line parsed, chunk data complete, message complete), so that each
  // execute() call covers one region and the scanners see exactly that region's bytes.
  enum class region : unsigned char {
    head,        // request line and header lines (line_scanner)
    head_tail,   // the LF that ends the head (the library pauses just before consuming it)
    identity,    // Content-Length content
    chunk_line,  // a chunk-size line (chunk_line_scanner)
    chunk_data,  // chunk data
    chunk_crlf,  // the CRLF after chunk data (checked here: the library takes any two bytes)
    trailers,    // the trailer section after the last chunk (line_scanner)
    method,      // the library rejected the method: the rest of the word decides (line_scanner)
    done,        // complete or failed
  };

  explicit impl(head_limits limits)
      : limits_(limits), lines_(limits.max_target_bytes, limits.max_header_count) {
    restart();
  }

  void restart() noexcept {
    http_parser_init(&parser_, HTTP_REQUEST);
    parser_.data = this;
    req_ = parsed_request{};
    state_ = parse_state::need_more;
    failure_ = parse_failure{};
    own_failure_ = false;
    region_ = region::head;
    after_head_ = region::done;
    head_bytes_ = 0;
    field_count_ = 0;
    declared_ = 0;
    chunk_remaining_ = 0;
    crlf_seen_ = 0;
    in_field_name_ = false;
    request_line_done_ = false;
    lines_.reset_head();
    chunk_.reset();
  }

  // Consumes one region's worth (or less) of `rest`; returns the bytes consumed.
  std::size_t step(std::string_view rest) noexcept {
    switch (region_) {
      case region::head:
      case region::trailers:
        return step_lines(rest);
      case region::head_tail: {
        const std::size_t n = execute(rest.substr(0, 1));
        // The head's final LF is consumed and no message-complete pause came: the body begins.
        if (n == 1 && region_ == region::head_tail && state_ == parse_state::headers_done) {
          region_ = after_head_;
        }
        return n;
      }
      case region::identity:
        return execute(rest);
      case region::chunk_data: {
        const std::size_t n = execute(rest.substr(0, chunk_remaining_));
        chunk_remaining_ -= n;
        if (chunk_remaining_ == 0 && region_ == region::chunk_data) {
          region_ = region::chunk_crlf;
          crlf_seen_ = 0;
        }
        return n;
      }
      case region::chunk_crlf:
        return step_chunk_crlf(rest);
      case region::chunk_line:
        return step_chunk_line(rest);
      case region::method:
        return step_method(rest);
      case region::done:
        return 0;
    }
    return 0;
  }

  std::size_t step_lines(std::string_view rest) noexcept {
    if (head_bytes_ >= limits_.max_header_bytes) {
      fail(431, reason_head_too_large);
      return 0;
    }
    const region section = region_;
    const std::string_view chunk = rest.substr(0, limits_.max_header_bytes - head_bytes_);
    const line_scanner::result scanned = lines_.scan(chunk);
    const std::size_t n = execute(chunk.substr(0, scanned.length));
    if (region_ == region::method) {
      // The library rejected the method. The scanner has seen all of `chunk` (an undecided
      // method word stops it nowhere): consume it, then settle, now or from the next bytes.
      head_bytes_ += scanned.length;
      settle_method(scanned.what);
      return scanned.length;
    }
    head_bytes_ += n;
    if (state_ == parse_state::error) return n;
    const bool at_end = scanned.what == line_scanner::verdict::end;
    if (region_ != section) {
      // The library ended the section: where the scanner did (it pauses before the head's final
      // LF, and after the trailer section's).
      const std::size_t expected = section == region::head ? scanned.length - 1 : scanned.length;
      if (!at_end || n != expected) fail(400, reason_internal);
      return n;
    }
    // The library took every byte up to the scanner's stop without pausing or failing.
    switch (scanned.what) {
      case line_scanner::verdict::more:
        break;
      case line_scanner::verdict::fold:
        fail(400, reason_folding);
        break;
      case line_scanner::verdict::bare_cr:
        fail(400, reason_bare_cr);
        break;
      case line_scanner::verdict::bad_request_line:
        fail(400, reason_request_line);
        break;
      case line_scanner::verdict::bad_version:
        fail(505, reason_version);
        break;
      case line_scanner::verdict::connect:
        fail(501, reason_connect);
        break;
      case line_scanner::verdict::target_too_long:
        fail(414, reason_target_too_long);
        break;
      case line_scanner::verdict::too_many_fields:
        fail(431, reason_too_many_fields);
        break;
      case line_scanner::verdict::end:
        fail(400, reason_internal);  // the library did not see the section end where we did
        break;
    }
    return n;
  }

  // After the library rejected the method: only the scanner reads on, to the end of the word.
  // The bytes count toward max_header_bytes as any head bytes do.
  std::size_t step_method(std::string_view rest) noexcept {
    if (head_bytes_ >= limits_.max_header_bytes) {
      fail(431, reason_head_too_large);
      return 0;
    }
    const std::string_view chunk = rest.substr(0, limits_.max_header_bytes - head_bytes_);
    const line_scanner::result scanned = lines_.scan(chunk);
    head_bytes_ += scanned.length;
    settle_method(scanned.what);
    return scanned.length;
  }

  // The library rejected the method (HPE_INVALID_METHOD): the verdict on the method word, once
  // the scanner has seen the byte that decides it (until then the bytes are consumed and the
  // state stays need_more):
  //  - a token (RFC 9110 §9: method = token) the library does not know: 501 (RFC 9110 §9.1),
  //    except `PRI`, the start of the HTTP/2 connection preface (RFC 9113 §3.4): 505;
  //  - more than max_method_bytes tchars: 501 (RFC 9112 §3: a method longer than any implemented
  //    SHOULD be 501), decided at the byte beyond the cap, so an undecided word is never longer;
  //  - not a token (empty, or a non-tchar such as HTAB, CR, LF or NUL before the SP): 400.
  // `what` is the scanner's verdict on the bytes it just scanned.
  void settle_method(line_scanner::verdict what) noexcept {
    switch (lines_.method_word()) {
      case line_scanner::method_state::open:
        // Every other verdict comes from a byte (SP, CR, LF) that decides the method first.
        if (what != line_scanner::verdict::more) fail(400, reason_internal);
        return;
      case line_scanner::method_state::token:
        if (lines_.method_prefix() == "PRI") {
          fail(505, reason_preface);
        } else {
          fail(501, reason_method_unknown);
        }
        return;
      case line_scanner::method_state::too_long:
        fail(501, reason_method_unknown);
        return;
      case line_scanner::method_state::malformed:
        fail(400, reason_method);
        return;
    }
    fail(400, reason_internal);
  }

  std::size_t step_chunk_line(std::string_view rest) noexcept {
    const chunk_line_scanner::result scanned = chunk_.scan(rest);
    const std::size_t n = execute(rest.substr(0, scanned.length));
    if (state_ == parse_state::error) return n;
    const bool at_end = scanned.what == chunk_line_scanner::verdict::end;
    if (region_ != region::chunk_line) {  // the library parsed the line: where the scanner ended it
      if (!at_end || n != scanned.length) fail(400, reason_internal);
      return n;
    }
    if (scanned.what == chunk_line_scanner::verdict::invalid) {
      fail(400, reason_chunk_line);
    } else if (at_end) {
      fail(400, reason_internal);
    }
    return n;
  }

  std::size_t step_chunk_crlf(std::string_view rest) noexcept {
    constexpr std::string_view crlf = "\r\n";
    std::size_t valid = 0;
    while (valid < rest.size() && crlf_seen_ + valid < crlf.size() &&
           rest[valid] == crlf[crlf_seen_ + valid]) {
      ++valid;
    }
    const bool bad = valid < rest.size() && crlf_seen_ + valid < crlf.size();
    const std::size_t n = execute(rest.substr(0, valid));
    crlf_seen_ += n;
    if (state_ == parse_state::error) return n;
    if (region_ != region::chunk_crlf) {  // the library ended the chunk: after its CRLF
      if (crlf_seen_ != crlf.size()) fail(400, reason_internal);
      return n;
    }
    if (bad) {
      fail(400, reason_chunk_end);
    } else if (crlf_seen_ == crlf.size()) {
      fail(400, reason_internal);  // the library did not end the chunk where we did
    }
    return n;
  }

  // Runs libhttp-parser over `bytes` (never empty: an empty call means end of stream to it).
  std::size_t execute(std::string_view bytes) noexcept {
    if (bytes.empty()) return 0;
    const std::size_t n = http_parser_execute(&parser_, &settings, bytes.data(), bytes.size());
    const auto err = static_cast<http_errno>(parser_.http_errno);
    if (err == HPE_PAUSED) {
      http_parser_pause(&parser_, 0);
      return n;
    }
    if (err == HPE_INVALID_METHOD && !own_failure_ && region_ == region::head) {
      region_ = region::method;  // settled on the whole method word (settle_method)
      return n;
    }
    if (err != HPE_OK) {
      if (!own_failure_) fail_from_library(err);
      state_ = parse_state::error;
      region_ = region::done;
      return n;
    }
    if (n != bytes.size()) fail(400, reason_internal);  // unreachable with libhttp-parser 2.9
    return n;
  }

  void fail(int status, std::string_view reason) noexcept {
    if (state_ == parse_state::error) return;  // the first failure wins
    failure_ = parse_failure{status, reason};
    own_failure_ = true;
    state_ = parse_state::error;
    region_ = region::done;
  }

  void fail_from_library(http_errno err) noexcept {
    switch (err) {
      case HPE_HEADER_OVERFLOW:
        failure_ = {431, reason_head_too_large};
        break;
      case HPE_INVALID_VERSION:
        failure_ = {505, reason_version};
        break;
      case HPE_INVALID_METHOD:  // in the head, settle_method decides instead
        failure_ = {400, reason_method};
        break;
      case HPE_INVALID_URL:
      case HPE_INVALID_HOST:
      case HPE_INVALID_PORT:
      case HPE_INVALID_PATH:
      case HPE_INVALID_QUERY_STRING:
      case HPE_INVALID_FRAGMENT:
        failure_ = {400, reason_target};
        break;
      case HPE_INVALID_HEADER_TOKEN:
        failure_ = {400, reason_field};
        break;
      case HPE_UNEXPECTED_CONTENT_LENGTH:
        failure_ = {400, reason_length_conflict};
        break;
      case HPE_INVALID_CONTENT_LENGTH:
        // In a chunk-size line the library reports a size beyond 64 bits this way.
        failure_ = region_ == region::chunk_line ? parse_failure{413, reason_chunk_size}
                                                 : parse_failure{400, reason_content_length};
        break;
      case HPE_INVALID_CHUNK_SIZE:
        failure_ = {400, reason_chunk_line};
        break;
      case HPE_INVALID_TRANSFER_ENCODING:
        failure_ = {501, reason_transfer_coding};
        break;
      default:
        failure_ = {400, reason_malformed};
        break;
    }
  }

  // --- helpers run from the callbacks ---------------------------------------------------------

  // The request line is complete once the first header field (or the end of the head) arrives.
  bool finish_request_line() {
    if (request_line_done_) return true;
    request_line_done_ = true;
    req_.method = http_method_str(static_cast<http_method>(parser_.method));
    if (parser_.http_major != 1 || parser_.http_minor > 1) {
      fail(505, reason_version);
      return false;
    }
    req_.version_minor = parser_.http_minor;
    if (parser_.method == HTTP_CONNECT) {
      fail(501, reason_connect);
      return false;
    }
    return true;
  }

  // Trims the value of the header field just completed.
  void finish_field() {
    if (region_ != region::head || req_.headers.empty()) return;
    std::string& v = req_.headers.back().value;
    const std::string_view trimmed = trim_ows(v);
    if (trimmed.size() != v.size()) {
      const auto first = static_cast<std::size_t>(trimmed.data() - v.data());
      v = std::string{v.substr(first, trimmed.size())};
    }
  }

  // RFC 9112 §3.2.2: an absolute-form target (`http://authority/path?query`) becomes origin-form;
  // its authority replaces the Host fields. Other forms are left as they are.
  bool absolute_to_origin_form() {
    std::string& t = req_.target;
    if (t.empty() || t.front() == '/' || t == "*") return true;
    const auto sep = t.find("://");
    if (sep == std::string::npos) return true;  // the library's grammar decided already
    const std::string_view scheme{t.data(), sep};
    if (!ascii_iequals(scheme, "http") && !ascii_iequals(scheme, "https")) {
      fail(400, reason_absolute);
      return false;
    }
    const std::size_t start = sep + 3;
    const std::size_t end = t.find_first_of("/?", start);
    const std::string authority = t.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (authority.empty() || authority.find('@') != std::string::npos) {
      fail(400, reason_absolute);
      return false;
    }
    std::string origin = end == std::string::npos ? std::string{"/"} : t.substr(end);
    if (origin.front() == '?') origin.insert(0, 1, '/');
    t = std::move(origin);
    std::vector<mcpcore::http_header> fields;
    fields.reserve(req_.headers.size() + 1);
    bool placed = false;
    for (mcpcore::http_header& h : req_.headers) {
      if (!ascii_iequals(h.name, "host")) {
        fields.push_back(std::move(h));
      } else if (!placed) {
        fields.push_back(mcpcore::http_header{"Host", authority});
        placed = true;
      }
    }
    if (!placed) {
      // The added Host is a field like any other: it must fit under max_header_count.
      if (fields.size() >= limits_.max_header_count) {
        fail(431, reason_too_many_fields);
        return false;
      }
      fields.push_back(mcpcore::http_header{"Host", authority});
    }
    req_.headers = std::move(fields);
    return true;
  }

  bool headers_complete() {
    if (!finish_request_line()) return false;
    finish_field();
    if (!absolute_to_origin_form()) return false;

    std::size_t cl_fields = 0;
    std::string_view cl_value;
    std::size_t te_fields = 0;
    std::string_view te_value;
    bool upgrade = false;
    bool close = false;
    bool keep_alive = false;
    bool expect_continue = false;
    for (const mcpcore::http_header& h : req_.headers) {
      if (ascii_iequals(h.name, "content-length")) {
        ++cl_fields;
        cl_value = h.value;
      } else if (ascii_iequals(h.name, "transfer-encoding")) {
        ++te_fields;
        te_value = h.value;
      } else if (ascii_iequals(h.name, "upgrade")) {
        upgrade = true;
      } else if (ascii_iequals(h.name, "connection")) {
        close = close || list_has_token(h.value, "close");
        keep_alive = keep_alive || list_has_token(h.value, "keep-alive");
      } else if (ascii_iequals(h.name, "expect")) {
        expect_continue = expect_continue || ascii_iequals(h.value, "100-continue");
      }
    }
    if (upgrade || parser_.upgrade != 0) {
      fail(501, reason_upgrade);
      return false;
    }
    const bool chunked = te_fields != 0;
    if (chunked) {
      if (req_.version_minor == 0) {
        fail(400, reason_te_http10);
        return false;
      }
      if (te_fields != 1 || !ascii_iequals(te_value, "chunked")) {
        fail(501, reason_transfer_coding);
        return false;
      }
      if ((parser_.flags & F_CHUNKED) == 0) {
        // The library frames only what it recognised as chunked (it takes SP, not HTAB, around
        // the coding): never read a body it would frame differently.
        fail(400, reason_transfer_syntax);
        return false;
      }
    }
    // The library rejects a repeated Content-Length and one beside Transfer-Encoding; check that
    // it framed the message on the field we see (1*DIGIT, RFC 9110 §8.6).
    if (cl_fields > 1 || (cl_fields == 1) != ((parser_.flags & F_CONTENTLENGTH) != 0)) {
      fail(400, reason_length_conflict);
      return false;
    }
    if (cl_fields == 1 && !digits_equal(cl_value, parser_.content_length)) {
      fail(400, reason_content_length);
      return false;
    }
    if ((parser_.flags & F_CONTENTLENGTH) != 0) {
      declared_ = parser_.content_length > SIZE_MAX
                      ? SIZE_MAX
                      : static_cast<std::size_t>(parser_.content_length);
      if (declared_ > limits_.max_body_bytes) {
        fail(413, reason_body_too_large);
        return false;
      }
    }
    req_.keep_alive = req_.version_minor == 1 ? !close : (keep_alive && !close);
    req_.expect_continue = req_.version_minor == 1 && expect_continue;

    constexpr std::size_t initial_body_reserve = std::size_t{64} * 1024;
    if (declared_ > 0) {
      req_.body.reserve(declared_ < initial_body_reserve ? declared_ : initial_body_reserve);
    }
    after_head_ = chunked ? region::chunk_line : (declared_ > 0 ? region::identity : region::done);
    region_ = region::head_tail;
    state_ = parse_state::headers_done;
    return true;
  }

  // --- libhttp-parser callbacks (C callers: nothing may throw through them) ------------------

  static impl& self(http_parser* p) noexcept { return *static_cast<impl*>(p->data); }

  // Runs `f` (returning false on a rejected request); maps an exception to 500. Returns the
  // library's convention: 0 to go on, -1 to stop with an error.
  template <class F>
  static int guarded(impl& s, F&& f) noexcept {
    try {
      return std::forward<F>(f)() ? 0 : -1;
    } catch (const std::bad_alloc&) {
      s.fail(500, reason_out_of_memory);
    } catch (...) {
      s.fail(500, reason_internal);
    }
    return -1;
  }

  static int on_url(http_parser* p, const char* at, std::size_t len) noexcept {
    impl& s = self(p);
    return guarded(s, [&] {
      if (len > s.limits_.max_target_bytes - s.req_.target.size()) {
        s.fail(414, reason_target_too_long);
        return false;
      }
      // RFC 9112 §3.2: visible ASCII only (the non-strict library also takes obs-text and HTAB).
      for (std::size_t i = 0; i < len; ++i) {
        const auto c = static_cast<unsigned char>(at[i]);
        if (c <= 0x20 || c >= 0x7f) {
          s.fail(400, reason_target);
          return false;
        }
        if (c == '#') {  // RFC 9112 §3.2: a fragment is never sent
          s.fail(400, reason_fragment);
          return false;
        }
      }
      s.req_.target.append(at, len);
      return true;
    });
  }

  static int on_header_field(http_parser* p, const char* at, std::size_t len) noexcept {
    impl& s = self(p);
    return guarded(s, [&] {
      if (!s.finish_request_line()) return false;
      const bool trailer = s.region_ == region::trailers;
      if (!s.in_field_name_) {
        s.finish_field();
        if (++s.field_count_ > s.limits_.max_header_count) {
          s.fail(431, reason_too_many_fields);
          return false;
        }
        if (!trailer) {
          // One allocation for an ordinary head rather than one per doubling (1, 2, 4, 8).
          if (s.req_.headers.empty()) s.req_.headers.reserve(expected_header_fields);
          s.req_.headers.emplace_back();
        }
        s.in_field_name_ = true;
      }
      for (std::size_t i = 0; i < len; ++i) {
        if (!is_tchar(static_cast<unsigned char>(at[i]))) {
          s.fail(400, reason_field_name);
          return false;
        }
      }
      if (!trailer) s.req_.headers.back().name.append(at, len);
      return true;
    });
  }

  static int on_header_value(http_parser* p, const char* at, std::size_t len) noexcept {
    impl& s = self(p);
    return guarded(s, [&] {
      s.in_field_name_ = false;
      for (std::size_t i = 0; i < len; ++i) {
        if (!is_field_value_byte(static_cast<unsigned char>(at[i]))) {
          s.fail(400, reason_field_value);
          return false;
        }
      }
      if (s.region_ != region::trailers && !s.req_.headers.empty()) {
        s.req_.headers.back().value.append(at, len);
      }
      return true;
    });
  }

  static int on_headers_complete(http_parser* p) noexcept {
    impl& s = self(p);
    const int rc = guarded(s, [&] { return s.headers_complete(); });
    if (rc == 0) http_parser_pause(p, 1);
    return rc;
  }

  static int on_body(http_parser* p, const char* at, std::size_t len) noexcept {
    impl& s = self(p);
    return guarded(s, [&] {
      if (len > s.limits_.max_body_bytes - s.req_.body.size()) {
        s.fail(413, reason_body_too_large);
        return false;
      }
      s.req_.body.append(at, len);
      return true;
    });
  }

  static int on_chunk_header(http_parser* p) noexcept {
    impl& s = self(p);
    const std::uint64_t size = p->content_length;
    if (size == 0) {
      s.region_ = region::trailers;
      s.lines_.reset_trailers();
      s.in_field_name_ = false;
    } else {
      if (size > s.limits_.max_body_bytes - s.req_.body.size()) {
        s.fail(413, reason_body_too_large);
        return -1;
      }
      s.region_ = region::chunk_data;
      s.chunk_remaining_ = static_cast<std::size_t>(size);
    }
    http_parser_pause(p, 1);
    return 0;
  }

  static int on_chunk_complete(http_parser* p) noexcept {
    impl& s = self(p);
    if (s.region_ != region::chunk_crlf) return 0;  // the end of the trailer section
    s.region_ = region::chunk_line;
    s.chunk_.reset();
    http_parser_pause(p, 1);
    return 0;
  }

  static int on_message_complete(http_parser* p) noexcept {
    impl& s = self(p);
    s.state_ = parse_state::complete;
    s.region_ = region::done;
    http_parser_pause(p, 1);
    return 0;
  }

  static const http_parser_settings settings;

  head_limits limits_;
  http_parser parser_{};
  parsed_request req_;
  parse_state state_ = parse_state::need_more;
  parse_failure failure_;
  bool own_failure_ = false;  // failure_ was set by our checks, not mapped from the library
  region region_ = region::head;
  region after_head_ = region::done;
  std::size_t head_bytes_ = 0;       // head and trailer bytes consumed (max_header_bytes)
  std::size_t field_count_ = 0;      // header and trailer fields seen (max_header_count)
  std::size_t declared_ = 0;         // Content-Length, 0 when absent
  std::size_t chunk_remaining_ = 0;  // data bytes of the current chunk still to come
  std::size_t crlf_seen_ = 0;        // bytes of the CRLF after chunk data seen
  bool in_field_name_ = false;       // the last header callback delivered part of a field name
  bool request_line_done_ = false;   // method and version checked
  line_scanner lines_;               // after limits_: built from it
  chunk_line_scanner chunk_;
};

// Constant-initialised: usable from any static initialiser.
constexpr http_parser_settings http_head_parser::impl::settings = {
    .on_message_begin = nullptr,
    .on_url = &impl::on_url,
    .on_status = nullptr,
    .on_header_field = &impl::on_header_field,
    .on_header_value = &impl::on_header_value,
    .on_headers_complete = &impl::on_headers_complete,
    .on_body = &impl::on_body,
    .on_message_complete = &impl::on_message_complete,
    .on_chunk_header = &impl::on_chunk_header,
    .on_chunk_complete = &impl::on_chunk_complete,
};

http_head_parser::http_head_parser(head_limits limits) : impl_(std::make_unique<impl>(limits)) {}
http_head_parser::~http_head_parser() = default;
http_head_parser::http_head_parser(http_head_parser&&) noexcept = default;
http_head_parser& http_head_parser::operator=(http_head_parser&&) noexcept = default;

namespace {

// Steps `s` over `data` while it is in a state `go_on` accepts; the bytes consumed.
template <class Parser, class GoOn>
std::size_t feed_while(Parser& s, std::string_view data, GoOn go_on) noexcept {
  std::size_t total = 0;
  while (total < data.size() && go_on(s.state_)) {
    const auto before = s.region_;
    const std::size_t n = s.step(data.substr(total));
    total += n;
    if (n == 0 && s.region_ == before && s.state_ != parse_state::error) {
      s.fail(500, reason_internal);  // no progress: unreachable, but never loop forever
    }
  }
  return total;
}

}  // namespace

std::size_t http_head_parser::feed(std::string_view data) noexcept {
  return feed_while(*impl_, data, [](parse_state st) {
    return st == parse_state::need_more || st == parse_state::headers_done;
  });
}

std::size_t http_head_parser::feed_head(std::string_view data) noexcept {
  return feed_while(*impl_, data, [](parse_state st) { return st == parse_state::need_more; });
}

parse_state http_head_parser::state() const noexcept { return impl_->state_; }

const parsed_request& http_head_parser::peek() const noexcept { return impl_->req_; }

parsed_request http_head_parser::take() {
  MCPCORE_ASSERT(impl_->state_ == parse_state::complete);
  parsed_request out = std::move(impl_->req_);
  impl_->restart();
  return out;
}

parse_failure http_head_parser::failure() const noexcept { return impl_->failure_; }

std::size_t http_head_parser::body_declared() const noexcept { return impl_->declared_; }

bool http_head_parser::body_chunked() const noexcept { return impl_->after_head_ == impl::region::chunk_line; }

}  // namespace transport::detail

MCPCORE_END_NAMESPACE
