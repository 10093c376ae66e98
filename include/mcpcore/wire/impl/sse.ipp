// SPDX-License-Identifier: Apache-2.0
// SSE event and comment framing; Last-Event-ID parsing.
#ifndef MCPCORE_IMPL_SSE_IPP
#define MCPCORE_IMPL_SSE_IPP

#include <mcpcore/wire/sse.hpp>

#include <charconv>

MCPCORE_BEGIN_NAMESPACE
namespace sse {
namespace detail {

// Calls f(line) for each line of `text`, split at CRLF, LF or CR. A trailing terminator yields
// a final empty line, as the SSE parser would see it.
// Every line break an SSE parser honours is split here, so a payload can never end its `data:`
// line early and inject a field of its own.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\n' && c != '\r') continue;
    f(text.substr(start, i - start));
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  f(text.substr(start));
}

MCPCORE_INTERNAL void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace detail

MCPCORE_DECL void write_event(std::string& out, const event& e) {
  // 0 is never an event id: frames outside the ring carry none (docs/sessions.md#sse-frames).
  if (e.id != 0) {
    out.append("id: ");
    detail::append_uint(out, e.id);
    out.push_back('\n');
  }
  if (!e.type.empty()) {
    std::size_t n = e.type.size();
    if (n > max_event_type_bytes) {
      n = max_event_type_bytes;
      // Do not cut through a UTF-8 sequence: back up over continuation bytes.
      while (n > 0 && (static_cast<unsigned char>(e.type[n]) & 0xC0) == 0x80) --n;
    }
    out.append("event: ");
    for (std::size_t i = 0; i < n; ++i) {
      const char c = e.type[i];
      // A line break in the type would end the field and start one of the sender's choosing.
      out.push_back(c == '\r' || c == '\n' ? '_' : c);
    }
    out.push_back('\n');
  }
  if (e.retry) {
    out.append("retry: ");
    detail::append_uint(out, e.retry->count() < 0 ? 0 : static_cast<std::uint64_t>(e.retry->count()));
    out.push_back('\n');
  }
  detail::for_each_line(e.data, [&](std::string_view line) {
    out.append("data: ");
    out.append(line);
    out.push_back('\n');
  });
  out.push_back('\n');
}

MCPCORE_DECL void write_comment(std::string& out, std::string_view text) {
  detail::for_each_line(text, [&](std::string_view line) {
    out.push_back(':');
    if (!line.empty()) {
      out.push_back(' ');
      out.append(line);
    }
    out.push_back('\n');
  });
  out.push_back('\n');
}

MCPCORE_DECL std::uint64_t parse_last_event_id(std::string_view header) noexcept {
  // from_chars on an unsigned type takes digits only (no sign, no space); anything it leaves
  // unread, an empty header and an overflow all read as "no cursor".
  std::uint64_t v = 0;
  const auto r = std::from_chars(header.data(), header.data() + header.size(), v);
  if (r.ec != std::errc{} || r.ptr != header.data() + header.size()) return 0;
  return v;
}

}  // namespace sse
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SSE_IPP
