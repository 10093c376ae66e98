// SPDX-License-Identifier: Apache-2.0
// The approvals page: sign-in sessions, rendering, decisions (docs/approvals-page.md).
#ifndef MCPCORE_IMPL_APPROVALS_PAGE_IPP
#define MCPCORE_IMPL_APPROVALS_PAGE_IPP

#include <mcpcore/governance/approvals_page.hpp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/random.hpp>
#include <mcpcore/detail/sha256.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/retry.hpp>
// The review core and the audit row shared with the approval routes, and the display escapes of
// the audit layer. In compiled mode this is the single translation unit of src/mcpcore.cpp.
#include <mcpcore/governance/impl/approval_endpoint.ipp>
#include <mcpcore/governance/impl/audit.ipp>

#include <array>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::approvals_web {

inline constexpr std::string_view session_cookie = "mcpcore_session";
inline constexpr std::string_view signin_cookie = "mcpcore_signin";
/// Longest credential read from the sign-in form.
inline constexpr std::size_t max_credential_bytes = 8192;
/// Deepest nesting of arguments laid out as lists; deeper values are shown as their JSON text.
inline constexpr int max_layout_depth = 32;
/// The queue shows a ticket's arguments on one line, cut: at most this many members or elements
/// per object or array, bytes per string, and levels (the ticket's page shows them all).
inline constexpr std::size_t queue_members_shown = 8;
inline constexpr std::size_t queue_string_bytes = 60;
inline constexpr int queue_depth_shown = 4;
/// Bytes shown of arguments that are not JSON.
inline constexpr std::size_t queue_arguments_bytes = 160;
/// How long the sign-in form's CSRF nonce cookie lives.
inline constexpr std::chrono::seconds signin_form_lifetime{std::chrono::hours{1}};

inline constexpr std::string_view content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

// ---- text ---------------------------------------------------------------------------------------

inline void append_escaped_html(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
}

// Untrusted text as HTML content: escaped, and every control, invisible or bidirectional
// character, ill-formed byte and backslash shown as its visible escape in a marked element
// (docs/security.md#text-shown-to-people).
inline void append_text(std::string& out, std::string_view s) {
  for_each_display_piece(
      s, [&out](std::string_view plain) { append_escaped_html(out, plain); },
      [&out](std::string_view escape) {
        out += R"(<span class="cc">)";
        append_escaped_html(out, escape);
        out += "</span>";
      });
}

// Untrusted text as an attribute value (inside double quotes): escaped, escapes shown unmarked.
inline void append_attr(std::string& out, std::string_view s) {
  const auto plain = [&out](std::string_view piece) { append_escaped_html(out, piece); };
  for_each_display_piece(s, plain, plain);
}

// `s` cut to at most `n` bytes, never inside a UTF-8 sequence.
[[nodiscard]] inline std::string_view utf8_prefix(std::string_view s, std::size_t n) noexcept {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0U) == 0x80U) --n;
  return s.substr(0, n);
}

// "3 s", "12 min", "2 h 5 min", "3 d 4 h".
inline void append_duration(std::string& out, std::chrono::milliseconds d) {
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(d).count();
  if (s < 60) {
    out.append(std::to_string(s < 0 ? 0 : s)).append(" s");
  } else if (s < 3600) {
    out.append(std::to_string(s / 60)).append(" min");
  } else if (s < 86400) {
    out.append(std::to_string(s / 3600)).append(" h ").append(std::to_string((s % 3600) / 60)).append(" min");
  } else {
    out.append(std::to_string(s / 86400)).append(" d ").append(std::to_string((s % 86400) / 3600)).append(" h");
  }
}

inline void append_time(std::string& out, approval_time t) {
  const std::string iso = to_rfc3339(t);
  out.append(R"(<time datetime=")").append(iso).append(R"(">)").append(iso).append("</time>");
}

[[nodiscard]] inline std::string_view tool_of(const approval_ticket& t) noexcept {
  std::string_view tool = t.definition_id;
  if (tool.starts_with(approval_definition_prefix)) tool.remove_prefix(approval_definition_prefix.size());
  return tool;
}

// ---- requests -----------------------------------------------------------------------------------

// application/x-www-form-urlencoded `value` decoded: '+' is a space, then the percent escapes
// (detail::percent_decode; a '+' written as %2B stays a '+'). `std::nullopt` on a bad escape.
[[nodiscard]] inline std::optional<std::string> form_decode(std::string_view value) {
  std::string spaced{value};
  for (char& c : spaced) {
    if (c == '+') c = ' ';
  }
  return percent_decode(spaced);
}

// The form's fields the page reads; others are ignored. A repeated field, or a bad escape in one
// of these, makes the form unreadable.
struct form {
  std::optional<std::string> csrf;
  std::optional<std::string> credential;
  std::optional<std::string> comment;
};

[[nodiscard]] inline std::optional<form> parse_form(std::string_view body) {
  form f;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    std::optional<std::string>* slot = nullptr;
    if (name == "csrf") slot = &f.csrf;
    if (name == "credential") slot = &f.credential;
    if (name == "comment") slot = &f.comment;
    if (slot == nullptr) continue;
    if (slot->has_value()) return std::nullopt;
    std::optional<std::string> value = form_decode(raw);
    if (!value) return std::nullopt;
    *slot = std::move(value);
  }
  return f;
}

// The value of cookie `name`; `std::nullopt` when absent, or present more than once (a second
// copy may have been planted by a sibling site; neither is trusted).
[[nodiscard]] inline std::optional<std::string_view> find_cookie(const http_request_view& req, std::string_view name) {
  std::optional<std::string_view> found;
  for (const http_header_view& h : req.headers) {
    if (!ascii_iequals(h.name, "Cookie")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const auto semi = rest.find(';');
      std::string_view item = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      const auto eq = item.find('=');
      if (eq == std::string_view::npos || item.substr(0, eq) != name) continue;
      if (found) return std::nullopt;
      found = item.substr(eq + 1);
    }
  }
  return found;
}

// The query parameter `name`'s raw value, or "".
[[nodiscard]] inline std::string_view query_param(std::string_view target, std::string_view name) noexcept {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
  }
  return {};
}

// The client's address without its port (`127.0.0.1:5312` → `127.0.0.1`, `[::1]:5312` → `::1`):
// the key of its sign-in bucket.
[[nodiscard]] inline std::string_view client_address(std::string_view remote) noexcept {
  if (remote.starts_with('[')) {
    const auto close = remote.find(']');
    return close == std::string_view::npos ? remote : remote.substr(1, close - 1);
  }
  const auto colon = remote.rfind(':');
  if (colon == std::string_view::npos || remote.find(':') != colon) return remote;
  return remote.substr(0, colon);
}

// What a path under the page names.
enum class route_kind : std::uint8_t {
  unknown, queue, queue_live, login, logout, script, style, ticket, ticket_live, approve, reject
};
struct route {
  route_kind kind = route_kind::unknown;
  std::string_view id;
};

[[nodiscard]] constexpr route parse_route(std::string_view rest) noexcept {
  if (rest.empty()) return {route_kind::queue, {}};
  if (rest == "/live") return {route_kind::queue_live, {}};
  if (rest == "/login") return {route_kind::login, {}};
  if (rest == "/logout") return {route_kind::logout, {}};
  if (rest == "/static/app.js") return {route_kind::script, {}};
  if (rest == "/static/app.css") return {route_kind::style, {}};
  constexpr std::string_view tickets = "/tickets/";
  if (!rest.starts_with(tickets)) return {};
  rest.remove_prefix(tickets.size());
  const auto slash = rest.find('/');
  const std::string_view id = rest.substr(0, slash);
  if (id.empty()) return {};
  if (slash == std::string_view::npos) return {route_kind::ticket, id};
  const std::string_view action = rest.substr(slash + 1);
  if (action == "live") return {route_kind::ticket_live, id};
  if (action == "approve") return {route_kind::approve, id};
  if (action == "reject") return {route_kind::reject, id};
  return {};
}

// Spaces and tabs around a field value gone.
[[nodiscard]] constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[nodiscard]] constexpr std::size_t at_least_one(std::size_t n) noexcept { return n > 0 ? n : 1; }

[[nodiscard]] constexpr std::string_view allowed_methods(route_kind k) noexcept {
  switch (k) {
    case route_kind::login: return "GET, POST";
    case route_kind::logout:
    case route_kind::approve:
    case route_kind::reject: return "POST";
    default: return "GET";
  }
}

[[nodiscard]] inline std::string hex_of(const sha256_digest& d) {
  constexpr std::string_view hex = "0123456789abcdef";
  std::string out;
  out.reserve(d.size() * 2);
  for (const std::uint8_t b : d) {
    out += hex[b >> 4U];
    out += hex[b & 0xFU];
  }
  return out;
}

// ---- the page's script and style ----------------------------------------------------------------

// Polls the live region's URL and swaps in what changed; once a ticket is no longer pending,
// removes its decision forms. The fragments are rendered (and escaped) by the server.
inline constexpr std::string_view app_js = R"js('use strict';
(() => {
  const live = document.getElementById('live');
  if (!live) return;
  const url = live.dataset.liveUrl;
  const every = Number(live.dataset.intervalMs) || 2000;
  const settle = () => {
    const state = document.getElementById('ticket-state');
    const decide = document.getElementById('decide');
    if (state && decide && state.dataset.status !== 'pending') decide.remove();
  };
  let last = null;
  let busy = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      const r = await fetch(url, { credentials: 'same-origin', cache: 'no-store', redirect: 'error' });
      if (r.status === 401) { window.location.reload(); return; }
      if (!r.ok) return;
      const html = await r.text();
      if (html === last) return;
      last = html;
      const doc = new DOMParser().parseFromString('<div id="x">' + html + '</div>', 'text/html');
      live.replaceChildren(...doc.getElementById('x').childNodes);
      settle();
    } catch (e) {
      // the next poll tries again
    } finally {
      busy = false;
    }
  };
  settle();
  window.setInterval(poll, every);
})();
)js";

inline constexpr std::string_view app_css = R"css(:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0 auto; max-width: 64rem; padding: 0 1rem 2rem; line-height: 1.45; }
header { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .5rem; border-bottom: 1px solid #8884; }
header h1 { font-size: 1.25rem; margin: .75rem 0; }
header form { display: inline; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.5rem; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #8883; }
td.args code, #arguments { overflow-wrap: anywhere; }
.cc { border: 1px solid #c00; border-radius: 3px; color: #c00; padding: 0 2px; font-family: monospace; }
.status { font-weight: bold; }
.status-pending { color: #a60; } .status-approved { color: #070; } .status-rejected, .status-expired { color: #b00; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.facts dt { font-weight: bold; }
dl.obj { margin: 0; padding-left: 1rem; border-left: 2px solid #8884; }
dl.obj > dt { font-family: monospace; font-weight: bold; }
dl.obj > dd { margin: 0 0 .25rem 1rem; }
ol.arr { margin: 0; padding-left: 2rem; font-family: monospace; }
.str, .lit { font-family: monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
#decide { display: flex; flex-wrap: wrap; gap: 2rem; margin-top: 1.5rem; padding-top: 1rem; border-top: 1px solid #8884; }
#decide form { display: flex; flex-direction: column; gap: .5rem; min-width: 16rem; }
textarea { min-height: 5rem; font: inherit; }
button { font: inherit; padding: .4rem 1rem; cursor: pointer; }
button:focus-visible, a:focus-visible, textarea:focus-visible, input:focus-visible { outline: 3px solid #36c; outline-offset: 2px; }
.notice { padding: .5rem .75rem; border-left: 4px solid #36c; background: #36c1; }
.error { padding: .5rem .75rem; border-left: 4px solid #c00; background: #c001; }
@media (max-width: 40rem) {
  table, thead, tbody, tr, th, td { display: block; }
  thead { display: none; }
  tr { border-bottom: 1px solid #8884; padding: .5rem 0; }
  td { border: 0; padding: .1rem 0; }
}
)css";

// ---- state --------------------------------------------------------------------------------------

struct session {
  principal who;
  std::string csrf;  // the forms' token
  approval_time signed_in_at{};
  approval_time last_used{};
};

// What a request's session establishes, copied out of the lock.
struct signed_in {
  principal who;
  std::string csrf;
  approval_time signed_in_at{};
  std::string key;  // the session's key in the table (the digest of its cookie)
};

}  // namespace detail::approvals_web

namespace detail {
struct approvals_page_state {
  std::mutex mutex;
  std::string key;  // HMAC key of the sign-in form tokens, random per page
  // By the SHA-256 of the cookie value, so the table holds no usable cookie.
  std::unordered_map<std::string, approvals_web::session> sessions;
  // Sign-in attempts per client address: the theoretical arrival time of the generic cell rate
  // algorithm (a full bucket once it is in the past).
  std::unordered_map<std::string, approval_time> signin_tat;
};
}  // namespace detail

namespace detail::approvals_web {

// ---- responses ----------------------------------------------------------------------------------

[[nodiscard]] inline http_response base_response(int status, std::string_view content_type) {
  http_response r;
  r.status = status;
  r.headers.reserve(10);
  r.headers.push_back({"Content-Type", std::string{content_type}});
  r.headers.push_back({"Cache-Control", "no-store"});
  r.headers.push_back({"Content-Security-Policy", std::string{content_security_policy}});
  r.headers.push_back({"X-Frame-Options", "DENY"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.headers.push_back({"Referrer-Policy", "same-origin"});
  r.headers.push_back({"Cross-Origin-Opener-Policy", "same-origin"});
  r.headers.push_back({"Cross-Origin-Resource-Policy", "same-origin"});
  return r;
}

[[nodiscard]] inline http_response redirect(std::string location) {
  http_response r = base_response(303, "text/plain; charset=utf-8");
  r.headers.push_back({"Location", std::move(location)});
  return r;
}

// The cookie `name=value` scoped to the page, `max_age` seconds (0 clears it).
[[nodiscard]] inline std::string cookie(std::string_view name, std::string_view value, const approvals_page_options& o,
                                        std::chrono::seconds max_age) {
  std::string c{name};
  c.append("=").append(value).append("; Path=").append(o.path).append("; Max-Age=");
  c.append(std::to_string(max_age.count())).append("; HttpOnly; SameSite=Strict");
  if (o.secure) c.append("; Secure");
  return c;
}

// The page's frame: head, the header with who is signed in, then `main`.
struct frame {
  const approvals_page_options& o;
  const signed_in* who = nullptr;  // null: signed out

  void open(std::string& out, std::string_view title, std::string_view main_attrs) const {
    out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           R"(<meta name="viewport" content="width=device-width, initial-scale=1"><title>)";
    append_text(out, title);
    out += R"( — Approvals</title><link rel="stylesheet" href=")";
    append_attr(out, o.path);
    out += R"(/static/app.css"><script src=")";
    append_attr(out, o.path);
    out += "/static/app.js\" defer></script></head>\n<body><header><h1><a href=\"";
    append_attr(out, o.path);
    out += R"(">Approvals</a></h1>)";
    if (who != nullptr) {
      out += R"(<div class="who">Signed in as <strong id="whoami">)";
      append_text(out, who->who.id);
      out += R"(</strong> <form id="logout" method="post" action=")";
      append_attr(out, o.path);
      out += R"(/logout"><input type="hidden" name="csrf" value=")";
      append_attr(out, who->csrf);
      out += R"("><button id="logout-submit" type="submit">Sign out</button></form></div>)";
    }
    out += "</header>\n<main ";
    out += main_attrs;
    out += ">\n";
  }
  static void close(std::string& out) { out += "\n</main></body></html>\n"; }
};

// A page saying one thing: errors, refusals.
[[nodiscard]] inline http_response message_page(const approvals_page_options& o, const signed_in* who, int status,
                                                std::string_view title, std::string_view message) {
  http_response r = base_response(status, "text/html; charset=utf-8");
  const frame f{o, who};
  f.open(r.body, title, R"(id="message")");
  r.body += "<h2>";
  append_text(r.body, title);
  r.body += R"(</h2><p class="error" id="error">)";
  append_text(r.body, message);
  r.body += R"(</p><p><a href=")";
  append_attr(r.body, o.path);
  r.body += R"(">Back to the approvals</a></p>)";
  frame::close(r.body);
  return r;
}

[[nodiscard]] inline http_response store_error_page(const approvals_page_options& o, const signed_in* who,
                                                    std::error_code ec) {
  if (is_permanent_store_error(ec)) {
    return message_page(o, who, 500, "Store unavailable",
                        "The approval store is unavailable; this will not clear on retry. Tell an operator.");
  }
  http_response r = message_page(o, who, 503, "Store busy", "The approval store is busy; try again in a moment.");
  r.headers.push_back({"Retry-After", std::to_string(retry::header_seconds(retry::approval_store_transient))});
  return r;
}

// ---- the arguments, laid out ----------------------------------------------------------------------

inline void append_json_text(std::string& out, json::value v) {
  std::string text;
  json::writer w{text};
  w.value(v);
  append_text(out, text);
}

inline void layout(std::string& out, json::value v, int depth) {
  if (depth >= max_layout_depth) {
    out += R"(<span class="lit">)";
    append_json_text(out, v);
    out += "</span>";
    return;
  }
  if (v.is_object()) {
    if (v.size() == 0) {
      out += R"(<span class="lit">{}</span>)";
      return;
    }
    out += R"(<dl class="obj">)";
    for (const json::member m : v.members()) {
      out += "<dt>";
      append_text(out, m.key);
      out += "</dt><dd>";
      layout(out, m.value(), depth + 1);
      out += "</dd>";
    }
    out += "</dl>";
    return;
  }
  if (v.is_array()) {
    if (v.size() == 0) {
      out += R"(<span class="lit">[]</span>)";
      return;
    }
    out += R"(<ol class="arr" start="0">)";
    for (const json::value e : v.elements()) {
      out += "<li>";
      layout(out, e, depth + 1);
      out += "</li>";
    }
    out += "</ol>";
    return;
  }
  if (v.is_string()) {
    out += R"(<span class="str">&quot;)";
    append_text(out, v.as_string());
    out += "&quot;</span>";
    return;
  }
  out += R"(<span class="lit">)";
  append_json_text(out, v);
  out += "</span>";
}

// `v` on one line for the queue, cut (`queue_members_shown`, `queue_string_bytes`,
// `queue_depth_shown`; a cut is marked `…`): strings quoted, their text escaped and shown visibly.
inline void append_compact(std::string& out, json::value v, int depth) {
  if ((v.is_object() || v.is_array()) && depth >= queue_depth_shown) {
    out += v.is_object() ? "{…}" : "[…]";
    return;
  }
  if (v.is_object() || v.is_array()) {
    const bool object = v.is_object();
    out += object ? '{' : '[';
    std::size_t n = 0;
    if (object) {
      for (const json::member m : v.members()) {
        if (n == queue_members_shown) break;
        if (n > 0) out += ", ";
        append_text(out, m.key);
        out += ": ";
        append_compact(out, m.value(), depth + 1);
        ++n;
      }
    } else {
      for (const json::value e : v.elements()) {
        if (n == queue_members_shown) break;
        if (n > 0) out += ", ";
        append_compact(out, e, depth + 1);
        ++n;
      }
    }
    if (n < v.size()) out += ", …";
    out += object ? '}' : ']';
    return;
  }
  if (v.is_string()) {
    const std::string_view text = v.as_string();
    const std::string_view shown = utf8_prefix(text, queue_string_bytes);
    out += "&quot;";
    append_text(out, shown);
    if (shown.size() < text.size()) out += "…";
    out += "&quot;";
    return;
  }
  append_json_text(out, v);
}

// A ticket's arguments on one line for the queue; a scope that is not JSON as its cut text.
inline void append_queue_arguments(std::string& out, std::string_view scope) {
  json::document doc;
  if (const auto parsed = doc.parse(scope)) {
    append_compact(out, *parsed, 0);
    return;
  }
  const std::string_view shown = utf8_prefix(scope, queue_arguments_bytes);
  append_text(out, shown);
  if (shown.size() < scope.size()) out += "…";
}

// The ticket's canonical arguments, laid out; a scope that is not JSON is shown as its text.
inline void append_arguments(std::string& out, std::string_view scope) {
  json::document doc;
  const auto parsed = doc.parse(scope);
  if (parsed) {
    layout(out, *parsed, 0);
  } else {
    out += R"(<span class="str">)";
    append_text(out, scope);
    out += "</span>";
  }
}

// ---- rendering ----------------------------------------------------------------------------------

inline void append_ticket_link(std::string& out, const approvals_page_options& o, std::string_view id) {
  out += R"(<a class="open" href=")";
  append_attr(out, o.path);
  out += "/tickets/";
  append_attr(out, id);
  out += R"(">)";
}

[[nodiscard]] inline approval_time expires_at(const approval_service& s, const approval_ticket& t) {
  return t.submitted_at + std::chrono::duration_cast<std::chrono::milliseconds>(s.options().ticket_lifetime);
}

// The inside of the queue's live region; false with `error` set when the store failed.
[[nodiscard]] inline bool render_queue_live(std::string& out, approval_service& service,
                                            const approvals_page_options& o, std::error_code& error) {
  const approval_time now = service.now();
  auto pending = service.pending(o.pending_listed < max_pending_listed ? o.pending_listed : max_pending_listed);
  if (!pending) {
    error = pending.error().code();
    return false;
  }
  out += "<h2>Pending</h2>";
  if (pending->empty()) {
    out += R"(<p id="no-pending">Nothing is waiting for a decision.</p>)";
  } else {
    out += R"(<table id="pending"><thead><tr><th>Tool</th><th>Submitted by</th><th>Age</th><th>Time left</th>)"
           "<th>Arguments</th><th></th></tr></thead><tbody>";
    for (const approval_ticket& t : *pending) {
      out += R"(<tr class="ticket" data-id=")";
      append_attr(out, t.id);
      out += R"("><td class="tool">)";
      append_text(out, tool_of(t));
      out += R"(</td><td class="submitter">)";
      append_text(out, t.submitted_by);
      out += R"(</td><td class="age">)";
      append_duration(out, now - t.submitted_at);
      out += R"(</td><td class="left">)";
      append_duration(out, expires_at(service, t) - now);
      out += R"(</td><td class="args"><code>)";
      append_queue_arguments(out, t.scope);
      out += "</code></td><td>";
      append_ticket_link(out, o, t.id);
      out += "Review</a></td></tr>";
    }
    out += "</tbody></table>";
  }
  out += "<h2>Recent decisions</h2>";
  if (!service.has_history()) {
    out += R"(<p id="no-history">This approval store keeps no list of decisions.</p>)";
    return true;
  }
  auto recent = service.recently_reviewed(o.recent_listed);
  if (!recent) {
    error = recent.error().code();
    return false;
  }
  if (recent->empty()) {
    out += R"(<p id="no-recent">No decisions yet.</p>)";
    return true;
  }
  out += R"(<table id="recent"><thead><tr><th>Tool</th><th>Decision</th><th>By</th><th>When</th><th>Comment</th>)"
         "</tr></thead><tbody>";
  for (const approval_ticket& t : *recent) {
    const bool approved = t.status == approval_status::approved;
    const std::string_view decision = approved || t.consumed_at ? "approved" : "rejected";
    out += R"(<tr class="decision" data-id=")";
    append_attr(out, t.id);
    out += R"(" data-status=")";
    out += decision;
    out += R"("><td class="tool">)";
    append_ticket_link(out, o, t.id);
    append_text(out, tool_of(t));
    out += R"(</a></td><td class="status status-)";
    out += decision;
    out += R"(">)";
    out += decision;
    if (t.consumed_at) out += ", used";
    out += R"(</td><td class="reviewer">)";
    append_text(out, t.reviewed_by);
    out += R"(</td><td class="when">)";
    append_duration(out, now - t.reviewed_at);
    out += R"( ago</td><td class="comment">)";
    append_text(out, t.review_comment);
    out += "</td></tr>";
  }
  out += "</tbody></table>";
  return true;
}

// What a ticket's status reads as on the page: pending, approved (used or not), rejected, expired.
[[nodiscard]] inline std::string_view shown_status(const approval_ticket& t) noexcept {
  if (t.consumed_at) return "approved";
  return to_string(t.status);
}

inline void render_ticket_live(std::string& out, const approval_service& service, const approval_ticket& t) {
  const approval_time now = service.now();
  const std::string_view status = shown_status(t);
  out += R"(<div id="ticket-state" data-status=")";
  out += status;
  out += R"("><p class="status status-)";
  out += status;
  out += R"(">)";
  if (t.status == approval_status::pending) {
    out += "Waiting for a decision";
  } else if (t.consumed_at) {
    out += "Approved, and used";
  } else if (t.status == approval_status::approved) {
    out += "Approved, not used yet";
  } else if (t.status == approval_status::rejected) {
    out += "Rejected";
  } else {
    out += "Expired";
  }
  out += R"(</p></div><dl class="facts"><dt>Tool</dt><dd id="ticket-tool">)";
  append_text(out, tool_of(t));
  out += R"(</dd><dt>Submitted by</dt><dd id="ticket-submitter">)";
  append_text(out, t.submitted_by);
  out += "</dd><dt>Submitted</dt><dd>";
  append_time(out, t.submitted_at);
  out += " (";
  append_duration(out, now - t.submitted_at);
  out += " ago)</dd>";
  if (t.status == approval_status::pending) {
    out += R"(<dt>Time left</dt><dd id="ticket-left">)";
    append_duration(out, expires_at(service, t) - now);
    out += "</dd>";
  }
  out += "<dt>Ticket</dt><dd><code>";
  append_text(out, t.id);
  out += "</code></dd></dl>";
  if (!t.reviewed_by.empty()) {
    out += R"(<div id="decision"><p>Decided by <strong id="reviewer">)";
    append_text(out, t.reviewed_by);
    out += "</strong> at ";
    append_time(out, t.reviewed_at);
    out += ".</p>";
    if (!t.review_comment.empty()) {
      out += R"(<p>Comment: <span id="review-comment">)";
      append_text(out, t.review_comment);
      out += "</span></p>";
    }
    out += "</div>";
  }
  out += R"(<h2>Arguments</h2><div id="arguments">)";
  append_arguments(out, t.scope);
  out += "</div>";
}

// The outcome named by `?result=` after a decision, as a sentence; "" for anything else (the
// query is never echoed).
[[nodiscard]] inline std::string_view result_sentence(std::string_view token) noexcept {
  if (token == "approved") return "You approved this request.";
  if (token == "rejected") return "You rejected this request.";
  if (token == "already_reviewed") return "Someone else decided this request first.";
  if (token == "expired") return "This request expired before it was decided.";
  if (token == "self_review") return "You submitted this request; another approver must decide it.";
  if (token == "comment_too_long") return "The comment is too long; nothing was decided.";
  if (token == "not_found") return "No such request.";
  if (token.starts_with("approver_assurance_required")) {
    return "Your sign-in cannot decide: approvers must be assured, human-interactive principals.";
  }
  return {};
}

}  // namespace detail::approvals_web

// ---- approvals_page -------------------------------------------------------------------------------

MCPCORE_DECL approvals_page::approvals_page(approval_service& service, approvals_page_options options)
    : service_(&service), options_(std::move(options)) {
  const std::string& p = options_.path;
  if (p.size() < 2 || p.front() != '/' || p.back() == '/' || p.find_first_of("?#") != std::string::npos) {
    throw std::invalid_argument("approvals_page: the path must start with '/', not be '/', and not end with '/'");
  }
  auto key = detail::random_hex(32);
  if (!key) throw std::runtime_error("approvals_page: the system's random source failed");
  state_ = new detail::approvals_page_state;
  state_->key = std::move(*key);
}

MCPCORE_DECL approvals_page::~approvals_page() {
  delete state_;
  delete authn_;
  delete authz_;
  delete audit_;
}

MCPCORE_DECL void approvals_page::set_audit(detail::audit_base* audit) noexcept {
  delete audit_;
  audit_ = audit;
}

MCPCORE_DECL bool approvals_page::matches(std::string_view target) const noexcept {
  const std::string_view path = detail::approval_http::path_of(target);
  if (!path.starts_with(options_.path)) return false;
  return path.size() == options_.path.size() || path[options_.path.size()] == '/';
}

MCPCORE_DECL std::optional<http_response> approvals_page::check_head(const http_request_view& head) const {
  if (!matches(head.target)) return std::nullopt;
  if (head.method == "POST" && head.declared_length && *head.declared_length > options_.max_form_bytes) {
    return detail::approvals_web::message_page(options_, nullptr, 413, "Too large", "The form is too large.");
  }
  return std::nullopt;
}

namespace detail::approvals_web {

// Everything `approvals_page::handle` needs, for one request.
class request_handler {
 public:
  request_handler(approval_service& service, const authenticator_base& authn, const authorizer_base& authz,
                  audit_base* audit, approvals_page_state& st, const approvals_page_options& o,
                  const http_request_view& req)
      : service_(service), authn_(authn), authz_(authz), audit_(audit), st_(st), o_(o), req_(req) {}

  [[nodiscard]] http_response serve(route r) {
    now_ = service_.now();
    switch (r.kind) {
      case route_kind::script: return static_file(app_js, "text/javascript; charset=utf-8");
      case route_kind::style: return static_file(app_css, "text/css; charset=utf-8");
      case route_kind::login: return req_.method == "GET" ? signin_form(200, {}) : signin();
      case route_kind::logout: return signout();
      case route_kind::approve:
      case route_kind::reject: return decide(r);
      default: break;
    }
    const bool fragment = r.kind == route_kind::queue_live || r.kind == route_kind::ticket_live;
    const std::optional<signed_in> who = current(!fragment);  // a poll is no use of the session
    if (!who) {
      if (fragment) return base_response(401, "text/plain; charset=utf-8");
      return redirect(o_.path + "/login");
    }
    switch (r.kind) {
      case route_kind::queue: return queue(*who);
      case route_kind::queue_live: return queue_live(*who);
      case route_kind::ticket: return ticket(*who, r.id, false);
      default: return ticket(*who, r.id, true);
    }
  }

 private:
  [[nodiscard]] static http_response static_file(std::string_view body, std::string_view type) {
    http_response r = base_response(200, type);
    r.body = body;
    return r;
  }

  [[nodiscard]] bool is_approver(const principal& p) const noexcept {
    return approval_http::is_approver(authz_, p, o_.approver_securable);
  }

  // The request's session, if it has a live one whose principal still stands and is still an
  // approver; `touch` counts the request as use (polls do not).
  [[nodiscard]] std::optional<signed_in> current(bool touch) {
    const std::optional<std::string_view> cookie_value = find_cookie(req_, session_cookie);
    if (!cookie_value || cookie_value->empty()) return std::nullopt;
    std::string key = hex_of(sha256{}.update(*cookie_value).finish());
    signed_in out;
    {
      const std::lock_guard<std::mutex> lock(st_.mutex);
      const auto it = st_.sessions.find(key);
      if (it == st_.sessions.end()) return std::nullopt;
      session& s = it->second;
      const bool idle = now_ - s.last_used >= o_.session_idle_timeout;
      const bool old = now_ - s.signed_in_at >= o_.session_lifetime;
      const bool expired = std::chrono::system_clock::time_point{now_} >= s.who.expires;
      if (idle || old || expired) {
        st_.sessions.erase(it);
        return std::nullopt;
      }
      if (touch) s.last_used = now_;
      out.who = s.who;
      out.csrf = s.csrf;
      out.signed_in_at = s.signed_in_at;
    }
    out.key = std::move(key);
    credential_verdict verdict = credential_verdict::indeterminate;
    try {
      verdict = authn_.revalidate(out.who);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a throw counts as indeterminate (authenticator requirement 3)
    }
    if (verdict == credential_verdict::revoked || !is_approver(out.who)) {
      end_session(out.key);
      return std::nullopt;
    }
    return out;
  }

  void end_session(const std::string& key) {
    const std::lock_guard<std::mutex> lock(st_.mutex);
    st_.sessions.erase(key);
  }

  // A POST's `Origin` says it came from this page's origin; without one, or with the opaque
  // `null` a browser sends under some referrer policies and from sandboxed frames, `Sec-Fetch-Site`
  // decides: a `null` origin needs `same-origin`, an absent one only no other value (a client that
  // is not a browser sends neither: the CSRF token and the SameSite cookie still apply).
  [[nodiscard]] bool same_origin() const {
    const auto origin = req_.header("Origin");
    const auto site = req_.header("Sec-Fetch-Site");
    if (origin && trim(*origin) != "null") {
      const auto host = req_.header("Host");
      if (!host) return false;
      const std::string_view scheme = o_.secure ? "https://" : "http://";
      const std::string_view h = trim(*host);
      const std::string_view v = trim(*origin);
      return v.size() == scheme.size() + h.size() && ascii_iequals(v.substr(0, scheme.size()), scheme) &&
             ascii_iequals(v.substr(scheme.size()), h);
    }
    if (site) return trim(*site) == "same-origin";
    return !origin;
  }

  [[nodiscard]] http_response cross_origin(const signed_in* who) const {
    return message_page(o_, who, 403, "Refused", "A request from another site was refused; nothing was done.");
  }

  [[nodiscard]] std::string signin_token(std::string_view nonce) const {
    std::string message{"signin:"};
    message.append(nonce);
    return hex_of(hmac_sha256(st_.key, message));
  }

  // The sign-in page; `error` (when not empty) says why the last attempt failed, and `?reauth=1`
  // (where a stale decision is sent) adds the notice that deciding needs a fresh sign-in.
  [[nodiscard]] http_response signin_form(int status, std::string_view error) {
    auto nonce = random_hex(16);
    if (!nonce) return message_page(o_, nullptr, 503, "Unavailable", "The system's random source failed.");
    http_response r = base_response(status, "text/html; charset=utf-8");
    r.headers.push_back({"Set-Cookie", cookie(signin_cookie, *nonce, o_, signin_form_lifetime)});
    const frame f{o_, nullptr};
    f.open(r.body, "Sign in", R"(id="signin-page")");
    r.body += "<h2>Sign in to decide approvals</h2>";
    if (query_param(req_.target, "reauth") == "1") {
      r.body += R"(<p class="notice" id="reauth-notice">Deciding needs a recent sign-in. Sign in again, then )"
                "decide.</p>";
    }
    if (!error.empty()) {
      r.body += R"(<p class="error" id="signin-error" role="alert">)";
      append_text(r.body, error);
      r.body += "</p>";
    }
    r.body += R"(<form id="signin" method="post" action=")";
    append_attr(r.body, o_.path);
    r.body += R"(/login"><input type="hidden" name="csrf" value=")";
    r.body += signin_token(*nonce);
    r.body += R"("><p><label for="credential">Your access token</label><br>)"
              R"(<input id="credential" name="credential" type="password" autocomplete="current-password" )"
              R"(required autofocus></p><p><button id="signin-submit" type="submit">Sign in</button></p></form>)";
    frame::close(r.body);
    return r;
  }

  // One sign-in attempt from this client address, by the generic cell rate algorithm; the wait
  // before the next one when refused.
  [[nodiscard]] std::optional<std::chrono::milliseconds> take_signin_attempt() {
    using std::chrono::milliseconds;
    const milliseconds refill = o_.signin_refill.count() > 0 ? o_.signin_refill : milliseconds{1};
    const std::size_t burst = o_.signin_burst > 0 ? o_.signin_burst : 1;
    const milliseconds tolerance = refill * static_cast<milliseconds::rep>(burst - 1);
    const std::string address{client_address(req_.remote)};
    const std::lock_guard<std::mutex> lock(st_.mutex);
    auto it = st_.signin_tat.find(address);
    if (it == st_.signin_tat.end()) {
      if (st_.signin_tat.size() >= at_least_one(o_.max_signin_clients)) {
        // Full buckets first (they hold nothing); then any one, so the table stays bounded.
        std::erase_if(st_.signin_tat, [this](const auto& e) { return e.second <= now_; });
        if (st_.signin_tat.size() >= at_least_one(o_.max_signin_clients)) {
          std::string any;
          for (const auto& e : st_.signin_tat) {
            any = e.first;
            break;
          }
          st_.signin_tat.erase(any);
        }
      }
      it = st_.signin_tat.emplace(address, now_).first;
    }
    const approval_time tat = it->second > now_ ? it->second : now_;
    if (tat - now_ > tolerance) return std::chrono::duration_cast<milliseconds>(tat - now_ - tolerance);
    it->second = tat + refill;
    return std::nullopt;
  }

  [[nodiscard]] http_response signin() {
    if (!same_origin()) return cross_origin(nullptr);
    if (const auto wait = take_signin_attempt()) {
      http_response r = signin_form(429, "Too many sign-in attempts from your address; wait a moment.");
      r.headers.push_back({"Retry-After", std::to_string((wait->count() + 999) / 1000)});
      return r;
    }
    if (req_.body.size() > o_.max_form_bytes) return message_page(o_, nullptr, 413, "Too large", "The form is too large.");
    const std::optional<form> f = parse_form(req_.body);
    if (!f || !f->csrf || !f->credential) {
      return signin_form(400, "The sign-in form was not understood; try again.");
    }
    const std::optional<std::string_view> nonce = find_cookie(req_, signin_cookie);
    if (!nonce || nonce->empty() || !constant_time_equals(signin_token(*nonce), *f->csrf)) {
      return signin_form(403, "The sign-in form expired; try again.");
    }
    const std::string& credential = *f->credential;
    bool printable = !credential.empty() && credential.size() <= max_credential_bytes;
    for (const char c : credential) printable = printable && c > 0x20 && c < 0x7F;
    std::optional<principal> who;
    if (printable) {
      const std::string authorization = "Bearer " + credential;
      const std::array<http_header_view, 1> headers{http_header_view{"Authorization", authorization}};
      http_request_view probe;
      probe.method = "GET";
      probe.target = req_.target;
      probe.headers = headers;
      probe.remote = req_.remote;
      probe.local = req_.local;
      try {
        who = authn_.authenticate(probe);
      } catch (...) {
        who.reset();  // a throw is a failed authentication (authenticator requirement 3)
      }
    }
    if (!who || who->id.empty()) return signin_form(401, "That credential was not accepted.");
    if (!is_approver(*who)) return signin_form(403, "This page is for approvers; your credential is not one.");
    auto sid = random_hex(32);
    auto csrf = random_hex(32);
    if (!sid || !csrf) return message_page(o_, nullptr, 503, "Unavailable", "The system's random source failed.");
    const std::string key = hex_of(sha256{}.update(*sid).finish());
    const std::optional<std::string_view> previous = find_cookie(req_, session_cookie);
    {
      const std::lock_guard<std::mutex> lock(st_.mutex);
      if (previous) st_.sessions.erase(hex_of(sha256{}.update(*previous).finish()));  // a new id at each sign-in
      std::erase_if(st_.sessions, [this](const auto& e) {
        return now_ - e.second.last_used >= o_.session_idle_timeout || now_ - e.second.signed_in_at >= o_.session_lifetime;
      });
      if (st_.sessions.size() >= at_least_one(o_.max_sessions)) {
        // The least recently used, erased by key (an iterator erase here trips GCC 12's
        // -Wnull-dereference at -O2, though the table is not empty).
        std::string oldest;
        approval_time oldest_use = approval_time::max();
        for (const auto& [k, s] : st_.sessions) {
          if (s.last_used < oldest_use) {
            oldest = k;
            oldest_use = s.last_used;
          }
        }
        st_.sessions.erase(oldest);
      }
      st_.sessions.insert_or_assign(key, session{std::move(*who), std::move(*csrf), now_, now_});
    }
    const auto lifetime = std::chrono::duration_cast<std::chrono::seconds>(o_.session_lifetime);
    http_response r = redirect(o_.path);
    r.headers.push_back({"Set-Cookie", cookie(session_cookie, *sid, o_, lifetime)});
    r.headers.push_back({"Set-Cookie", cookie(signin_cookie, "", o_, std::chrono::seconds{0})});
    return r;
  }

  [[nodiscard]] http_response signout() {
    std::optional<signed_in> who = current(false);
    if (!same_origin()) return cross_origin(who ? &*who : nullptr);
    if (!who) return redirect(o_.path + "/login");
    const std::optional<form> f = req_.body.size() <= o_.max_form_bytes ? parse_form(req_.body) : std::nullopt;
    if (!f || !f->csrf || !constant_time_equals(*f->csrf, who->csrf)) {
      return message_page(o_, &*who, 403, "Refused", "The form's token did not match; nothing was done.");
    }
    end_session(who->key);
    http_response r = redirect(o_.path + "/login");
    r.headers.push_back({"Set-Cookie", cookie(session_cookie, "", o_, std::chrono::seconds{0})});
    return r;
  }

  [[nodiscard]] http_response queue(const signed_in& who) {
    http_response r = base_response(200, "text/html; charset=utf-8");
    const frame f{o_, &who};
    std::string live;
    std::error_code ec;
    if (!render_queue_live(live, service_, o_, ec)) return store_error_page(o_, &who, ec);
    f.open(r.body, "Pending approvals", R"(id="queue")");
    live_region(r.body, o_.path + "/live");
    r.body += live;
    r.body += "</div>";
    frame::close(r.body);
    return r;
  }

  void live_region(std::string& out, const std::string& url) const {
    out += R"(<div id="live" aria-live="polite" data-live-url=")";
    append_attr(out, url);
    out += R"(" data-interval-ms=")";
    out += std::to_string(o_.poll_interval.count() > 0 ? o_.poll_interval.count() : 1);
    out += R"(">)";
  }

  [[nodiscard]] http_response queue_live(const signed_in& who) {
    http_response r = base_response(200, "text/html; charset=utf-8");
    std::error_code ec;
    if (!render_queue_live(r.body, service_, o_, ec)) return store_error_page(o_, &who, ec);
    return r;
  }

  [[nodiscard]] http_response not_found_page(const signed_in* who) const {
    return message_page(o_, who, 404, "Not found", "There is no such approval request.");
  }

  [[nodiscard]] http_response ticket(const signed_in& who, std::string_view id, bool fragment) {
    if (!is_approval_id(id)) return fragment ? base_response(404, "text/plain; charset=utf-8") : not_found_page(&who);
    auto found = service_.get(id);
    if (!found) return store_error_page(o_, &who, found.error().code());
    const std::optional<approval_ticket>& maybe = *found;
    if (!maybe) return fragment ? base_response(404, "text/plain; charset=utf-8") : not_found_page(&who);
    const approval_ticket& t = *maybe;
    http_response r = base_response(200, "text/html; charset=utf-8");
    if (fragment) {
      render_ticket_live(r.body, service_, t);
      return r;
    }
    std::string attrs = R"(id="ticket-page" data-id=")";
    append_attr(attrs, t.id);
    attrs += R"(")";
    const frame f{o_, &who};
    std::string title{"Request for "};
    title.append(tool_of(t));
    f.open(r.body, title, attrs);
    if (const std::string_view sentence = result_sentence(query_param(req_.target, "result")); !sentence.empty()) {
      r.body += R"(<p class="notice" id="flash" role="status">)";
      append_text(r.body, sentence);
      r.body += "</p>";
    }
    r.body += "<h2>";
    append_text(r.body, title);
    r.body += "</h2>";
    std::string url = o_.path + "/tickets/";
    url.append(t.id).append("/live");
    live_region(r.body, url);
    render_ticket_live(r.body, service_, t);
    r.body += "</div>";
    if (t.status == approval_status::pending) decision_forms(r.body, who, t);
    frame::close(r.body);
    return r;
  }

  void decision_forms(std::string& out, const signed_in& who, const approval_ticket& t) const {
    if (who.who.id == t.submitted_by) {
      out += R"(<p class="notice" id="own-ticket">You submitted this request, so another approver must decide )"
             "it.</p>";
      return;
    }
    if (const approver_assurance a = assess_approver(who.who); a != approver_assurance::ok) {
      out += R"(<p class="notice" id="cannot-decide">Your sign-in may read but not decide ()";
      append_text(out, to_string(a));
      out += "): approvers must be assured, human-interactive principals.</p>";
      return;
    }
    const auto form_open = [&](std::string_view id, std::string_view action) {
      out += R"(<form id=")";
      out += id;
      out += R"(" method="post" action=")";
      append_attr(out, o_.path);
      out += "/tickets/";
      append_attr(out, t.id);
      out += "/";
      out += action;
      out += R"("><input type="hidden" name="csrf" value=")";
      append_attr(out, who.csrf);
      out += R"(">)";
    };
    out += R"(<section id="decide" aria-label="Decide">)";
    form_open("approve", "approve");
    out += R"(<p>Run exactly these arguments, once.</p><button id="approve-submit" type="submit">Approve</button>)"
           "</form>";
    form_open("reject", "reject");
    out += R"(<label for="comment">Why (shown to the submitter)</label><textarea id="comment" name="comment" )"
           R"(maxlength=")";
    out += std::to_string(service_.options().max_review_comment_bytes);
    out += R"("></textarea><button id="reject-submit" type="submit">Reject</button></form></section>)";
  }

  [[nodiscard]] http_response decide(route r) {
    std::optional<signed_in> who = current(true);
    const bool approve = r.kind == route_kind::approve;
    approval_http::review_row row;
    const auto audited = [&](http_response resp) {
      if (who) approval_http::audit_review(audit_, service_, approve, r.id, who->who, row, "web");
      return resp;
    };
    if (!same_origin()) {
      approval_http::refused(row, "cross_origin");
      return audited(cross_origin(who ? &*who : nullptr));
    }
    if (!who) return redirect(o_.path + "/login");
    if (req_.body.size() > o_.max_form_bytes) {
      approval_http::refused(row, "payload_too_large");
      return audited(message_page(o_, &*who, 413, "Too large", "The form is too large."));
    }
    const std::optional<form> f = parse_form(req_.body);
    if (!f || !f->csrf || !constant_time_equals(*f->csrf, who->csrf)) {
      approval_http::refused(row, "csrf");
      return audited(message_page(o_, &*who, 403, "Refused", "The form's token did not match; nothing was done."));
    }
    if (!is_approval_id(r.id)) {
      approval_http::refused(row, "malformed_id", audit_result::not_found);
      return audited(not_found_page(&*who));
    }
    if (now_ - who->signed_in_at >= o_.fresh_sign_in) {
      approval_http::refused(row, "sign_in_not_fresh");
      return audited(redirect(o_.path + "/login?reauth=1"));
    }
    const std::string_view comment = f->comment ? std::string_view{*f->comment} : std::string_view{};
    const approval_http::review_verdict v = approval_http::decide(service_, approve, r.id, comment, who->who, row);
    if (v.store_error) return audited(store_error_page(o_, &*who, v.store_error));
    std::string location = o_.path + "/tickets/";
    location.append(r.id).append("?result=");
    location.append(v.status == 200 ? (approve ? "approved" : "rejected") : std::string_view{v.token});
    return audited(redirect(std::move(location)));
  }

  approval_service& service_;
  const authenticator_base& authn_;
  const authorizer_base& authz_;
  audit_base* audit_;
  approvals_page_state& st_;
  const approvals_page_options& o_;
  const http_request_view& req_;
  approval_time now_{};
};

}  // namespace detail::approvals_web

MCPCORE_DECL std::optional<http_response> approvals_page::handle(const http_request_view& req) const {
  namespace w = detail::approvals_web;
  if (!matches(req.target)) return std::nullopt;
  const std::string_view path = detail::approval_http::path_of(req.target);
  const w::route r = w::parse_route(path.substr(options_.path.size()));
  if (r.kind == w::route_kind::unknown) {
    return w::message_page(options_, nullptr, 404, "Not found", "There is no such page.");
  }
  const std::string_view allowed = w::allowed_methods(r.kind);
  const bool allowed_method = req.method == "GET" ? allowed.starts_with("GET") : req.method == "POST" && allowed.ends_with("POST");
  if (!allowed_method) {
    http_response resp = w::message_page(options_, nullptr, 405, "Method not allowed", "That method is not served here.");
    resp.headers.push_back({"Allow", std::string{allowed}});
    return resp;
  }
  w::request_handler h{*service_, *authn_, *authz_, audit_, *state_, options_, req};
  return h.serve(r);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_APPROVALS_PAGE_IPP
