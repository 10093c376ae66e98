// SPDX-License-Identifier: Apache-2.0
// mcpcore-admin: the host's approver and token tool (docs/host-server.md, "mcpcore-admin").
//
// It works on the data directory directly (the SQLite approval store, the audit database and
// the token file), never through MCP, so it runs on the host itself, beside or without a running
// server: the approval store is safe across processes, and the server reloads the token file
// when it changes. Being able to open the data directory (mode 0700, the server's own user) is
// the assurance that the person approving is a local administrator; `--as` names them.
#include "data_dir.hpp"
#include "db_stores.hpp"
#include "host_tools.hpp"
#include "token_file.hpp"

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#if MCPCORE_HOST_POSTGRES
#  include <mcpcore/session/postgres_event_bridge.hpp>
#endif

#include <CLI/App.hpp>
#include <CLI/CLI.hpp>  // IWYU pragma: keep (Config.hpp and Formatter.hpp define what App.hpp declares)
#include <CLI/Validators.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

constexpr std::string_view program = "mcpcore-admin";
/// Most pending tickets `pending` lists by default.
constexpr std::size_t default_pending_limit = 100;
/// Rows `audit` shows by default.
constexpr std::size_t default_audit_tail = 50;
/// Longest approver name `--as` accepts, in bytes.
constexpr std::size_t max_approver_name_bytes = 128;

/// Exit statuses: done, refused or failed, bad usage.
enum exit_code : int { ok = 0, failed = 1, usage = 2 };

/// One line on stderr, prefixed with the program's name.
template <typename... Args>
void say(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "{}: {}\n", program, fmt::format(format, std::forward<Args>(args)...));
}

struct options {
  std::string data_dir;
  /// PostgreSQL approvals and audit databases ("": the SQLite files of the data directory).
  std::string db;
  std::string audit_db;
  /// approve, reject: the PostgreSQL database and channel the hosts share events on (--events-db,
  /// --events-channel; "": nothing is sent, "" channel: the hosts' default).
  std::string events_db;
  std::string events_channel;
  bool json = false;
  bool yes = false;
  std::size_t limit = default_pending_limit;
  std::size_t tail = default_audit_tail;
  std::string id;
  std::string as;
  std::string comment;
  std::string principal_filter;
  // token mint
  std::string tier = "readonly";
  std::string kind = "service";
  std::string name;
  std::vector<std::string> roles;
  bool assured = false;
  // prune
  std::string older_than;
  std::size_t batch = mcpcore::default_approval_prune_batch;
};

mcpcore_host::data_paths paths_of(const options& o) { return mcpcore_host::data_paths::in(o.data_dir); }

/// Opens the approval store of the data directory (never creating one: a missing database means
/// the server never ran there, or --data-dir is wrong).
std::optional<mcpcore::sqlite_approval_store> open_approvals(const options& o) {
  const auto p = paths_of(o);
  mcpcore::sqlite_approval_store_options so;
  so.create = false;
  auto store = mcpcore::sqlite_approval_store::open(p.approvals_db, so);
  if (!store) {
    say("cannot open the approvals database {}: {} (has mcpcore-host run with --data-dir {}?)", p.approvals_db,
        store.error().message(), o.data_dir);
    return std::nullopt;
  }
  return std::move(*store);
}

/// The approval store `pending`, `show`, `approve` and `reject` work on: the PostgreSQL database of
/// --db when given, else the data directory's SQLite file (never created).
std::optional<mcpcore_host::approval_db> open_review_store(const options& o) {
  if (o.db.empty()) {
    auto store = open_approvals(o);
    if (!store) return std::nullopt;
    return mcpcore_host::approval_db{std::move(*store)};
  }
  auto store = mcpcore_host::open_approval_db(o.db, {}, false, "--db");
  if (!store) {
    say("{}", store.error());
    return std::nullopt;
  }
  return std::move(*store);
}

/// The tool a ticket is for: its definition id without the `mcp.` prefix.
std::string_view tool_of(const mcpcore::approval_ticket& t) {
  std::string_view d = t.definition_id;
  if (d.starts_with(mcpcore::approval_definition_prefix)) d.remove_prefix(mcpcore::approval_definition_prefix.size());
  return d;
}

/// Text from outside (a submitter's arguments, names, comments, audit rows) as the terminal
/// should show it: every control and invisible character a visible escape, so the person
/// approving sees exactly what is approved (docs/security.md#text-shown-to-people).
std::string shown(std::string_view untrusted) { return mcpcore::escape_for_display(untrusted); }

void print_ticket_text(const mcpcore::approval_ticket& t) {
  fmt::print("{}  {:<24}  {}  submitted by {} at {}\n    arguments: {}\n", shown(t.id), shown(tool_of(t)),
             to_string(t.status), shown(t.submitted_by), mcpcore::to_rfc3339(t.submitted_at), shown(t.scope));
  if (!t.reviewed_by.empty()) {
    fmt::print("    reviewed by {} at {}{}{}\n", shown(t.reviewed_by), mcpcore::to_rfc3339(t.reviewed_at),
               t.review_comment.empty() ? "" : ": ", shown(t.review_comment));
  }
  if (t.consumed_at) fmt::print("    used at {}\n", mcpcore::to_rfc3339(*t.consumed_at));
  if (!t.server.empty()) fmt::print("    from server {}\n", shown(t.server));
}

/// Appends `t` as the approval endpoint's ticket JSON (`mcpcore::append_ticket_json`) with one more
/// member, `"server"`: the server that minted it, `null` when it names none
/// (docs/host-server.md#mcpcore-admin).
void append_admin_ticket_json(std::string& out, const mcpcore::approval_ticket& t, std::string_view status_url) {
  std::string ticket;
  mcpcore::append_ticket_json(ticket, t, status_url);
  mcpcore::json::document doc;  // alive while its members are written
  const auto parsed = doc.parse(ticket);
  mcpcore::json::writer w{out};
  w.begin_object();
  if (parsed && parsed->is_object()) {
    for (const auto member : parsed->members()) w.key(member.key).value(member.value());
  }
  w.key("server");
  if (t.server.empty()) {
    w.null();
  } else {
    w.value(t.server);
  }
  w.end_object();
}

int cmd_pending(const options& o) {
  auto store = open_review_store(o);
  if (!store) return failed;
  mcpcore::approval_service service{*store};
  // What ran out of time is not pending any more; a failed sweep still lists what is stored.
  if (auto expired = service.expire(); !expired) say("warning: the expiry sweep failed: {}", expired.error().message());
  auto list = service.pending(o.limit);
  if (!list) {
    say("cannot read pending approvals: {}", list.error().message());
    return failed;
  }
  if (o.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (i != 0) out += ',';
      append_admin_ticket_json(out, (*list)[i], service.status_url((*list)[i].id));
    }
    out += "]\n";
    std::fputs(out.c_str(), stdout);
    return ok;
  }
  if (list->empty()) fmt::print("no pending approvals\n");
  for (const auto& t : *list) print_ticket_text(t);
  return ok;
}

/// Ticket `id`, or nothing (said: a store failure, or no such ticket).
std::optional<mcpcore::approval_ticket> read_ticket(mcpcore::approval_service& service, const std::string& id) {
  auto got = service.get(id);
  if (!got) {
    say("cannot read approval {}: {}", shown(id), got.error().message());
    return std::nullopt;
  }
  std::optional<mcpcore::approval_ticket> t = std::move(*got);
  if (!t) say("no approval {}", shown(id));
  return t;
}

int cmd_show(const options& o) {
  auto store = open_review_store(o);
  if (!store) return failed;
  mcpcore::approval_service service{*store};
  const auto ticket = read_ticket(service, o.id);
  if (!ticket) return failed;
  if (o.json) {
    std::string out;
    append_admin_ticket_json(out, *ticket, service.status_url(o.id));
    out += '\n';
    std::fputs(out.c_str(), stdout);
  } else {
    print_ticket_text(*ticket);
  }
  return ok;
}

/// Asks on the terminal; `--yes` answers for a script. Without a terminal and without `--yes`,
/// nothing is decided.
bool confirmed(const options& o, const std::string& question) {
  if (o.yes) return true;
  if (::isatty(STDIN_FILENO) == 0) {
    say("not confirming without a terminal: pass --yes to {}", question);
    return false;
  }
  fmt::print(stderr, "{}? [y/N] ", question);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

/// Records the decision in the audit database; a failure is reported, not fatal (the decision
/// stands, as a request never fails for its audit row).
void audit_review(const options& o, std::string_view action, const mcpcore::approval_ticket* t,
                  mcpcore::audit_result result, const std::string& detail) {
  const auto p = paths_of(o);
  const std::string full =
      t == nullptr ? fmt::format("{} via=mcpcore-admin", detail)
                   : fmt::format("{} tool={} submitted_by={} via=mcpcore-admin", detail,
                                 mcpcore::sanitize_audit_value(tool_of(*t)), mcpcore::sanitize_audit_value(t->submitted_by));
  mcpcore::audit_record r;
  r.action = action;
  r.target_type = "approval";
  r.target_id = o.id;
  r.principal_id = o.as;
  r.result = result;
  r.detail = full;
  r.time = std::chrono::system_clock::now();
  if (!o.audit_db.empty()) {
    // PostgreSQL (--audit-db): the row is queued, then written before the sink closes at the end of
    // this scope (postgres_audit_sink's close_timeout bounds the wait).
    auto shared = mcpcore_host::open_audit_db(o.audit_db, {}, "mcpcore-admin");
    if (!shared || !shared->record(r)) {
      say("warning: the decision was not recorded in the PostgreSQL audit database{}{}", shared ? "" : ": ",
          shared ? "" : shared.error());
    }
    return;
  }
  auto sink = mcpcore::sqlite_audit_sink::open(p.audit_db);
  if (!sink || !sink->record(r)) say("warning: the decision was not recorded in the audit database {}", p.audit_db);
}

/// Whether `name` is a channel the hosts' event bridge accepts: 1-63 of `a-z`, `0-9`, `_`, not
/// starting with a digit (mcpcore::postgres_event_bridge_options::channel).
bool valid_events_channel(std::string_view name) {
  if (name.empty() || name.size() > 63 || (name.front() >= '0' && name.front() <= '9')) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

/// Why --events-db / --events-channel cannot be used, or "": checked before anything is decided.
std::string events_flags_problem(const options& o) {
  if (o.events_db.empty()) return o.events_channel.empty() ? std::string{} : "--events-channel needs --events-db";
  if (!mcpcore_host::postgres_available) return mcpcore_host::postgres_unavailable("--events-db");
  if (!o.events_channel.empty() && !valid_events_channel(o.events_channel)) {
    return "--events-channel takes 1-63 of a-z, 0-9 and _, not starting with a digit";
  }
  return {};
}

/// Tells the hosts sharing --events-db that ticket `o.id` was decided: one NOTIFY saying
/// `host://approvals/<id>` was updated, which each host's event bridge hands to the clients
/// subscribed to it (docs/host-server.md#approval-tickets-as-resources). Nothing without --events-db.
/// A failure is a warning: the decision stands, and the hosts' clients see it when they read the
/// ticket again.
void announce_decision(const options& o, std::string_view decided) {
  if (o.events_db.empty()) return;
#if MCPCORE_HOST_POSTGRES
  mcpcore::postgres_event_bridge_options eo;
  if (!o.events_channel.empty()) eo.channel = o.events_channel;
  const std::string uri = mcpcore_host::approval_uri(o.id);
  mcpcore::server_event e;
  e.kind = mcpcore::server_event_kind::resource_updated;
  e.uri = uri;
  // The error never repeats the connection string, which may hold a password.
  if (auto sent = mcpcore::postgres_event_bridge::notify(o.events_db, e, eo); !sent) {
    std::string why = sent.error().message();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    say("warning: approval {} was {}, but the hosts were not told (--events-db, channel {}); their clients see "
        "the decision when they read {} again. {}",
        shown(o.id), decided, eo.channel, uri, why);
  }
#else
  (void)decided;
#endif
}

int cmd_review(const options& o, bool approve) {
  if (o.as.empty() || o.as.size() > max_approver_name_bytes ||
      o.as.find_first_of(std::string_view{" \t\r\n", 4}) != std::string::npos) {
    say("--as takes the approver's name: 1-128 characters, no blanks");
    return usage;
  }
  if (const auto problem = events_flags_problem(o); !problem.empty()) {
    say("{}", problem);
    return usage;
  }
  auto store = open_review_store(o);
  if (!store) return failed;
  mcpcore::approval_service service{*store};
  const auto found = read_ticket(service, o.id);
  if (!found) return failed;
  const mcpcore::approval_ticket& t = *found;
  print_ticket_text(t);
  if (t.status != mcpcore::approval_status::pending) {
    say("approval {} is {}, not pending", shown(o.id), to_string(t.status));
    return failed;
  }
  const std::string verb = approve ? "approve" : "reject";
  if (!confirmed(o, fmt::format("{} this request as {}", verb, shown(o.as)))) return failed;

  mcpcore::principal reviewer;
  reviewer.id = o.as;
  reviewer.display_name = o.as;
  reviewer.kind = mcpcore::principal_kind::human_interactive;
  reviewer.assured = true;  // a local administrator at the host's terminal (see the file comment)
  const auto outcome = approve ? service.approve(o.id, reviewer) : service.reject(o.id, reviewer, o.comment);
  const std::string action = approve ? "approval.approve" : "approval.reject";
  if (outcome.error) {
    say("cannot {}: the approval store failed: {}", verb, outcome.error.message());
    audit_review(o, action, &t, mcpcore::audit_result::failure, "store_error");
    return failed;
  }
  if (outcome.comment_too_long) {
    say("the comment is too long");
    return usage;
  }
  if (!outcome.ok()) {
    const auto status = outcome.status;
    std::string why{to_string(status)};
    if (status == mcpcore::approval_review_status::self_review) why = "the submitter cannot review their own request";
    if (status == mcpcore::approval_review_status::expired) why = "the ticket ran past its lifetime";
    say("not {}: {}", approve ? "approved" : "rejected", why);
    audit_review(o, action, &t,
                 status == mcpcore::approval_review_status::not_found ? mcpcore::audit_result::not_found
                                                                      : mcpcore::audit_result::denied,
                 fmt::format("outcome={}", to_string(status)));
    return failed;
  }
  audit_review(o, action, &t, mcpcore::audit_result::success,
               approve ? std::string{"outcome=approved"}
                       : fmt::format("outcome=rejected comment={}", mcpcore::sanitize_audit_value(o.comment)));
  fmt::print("{} {} as {}; the submitter may now call {} again with approval_id {}\n", shown(o.id),
             approve ? "approved" : "rejected", shown(o.as), shown(tool_of(t)), shown(o.id));
  std::fflush(stdout);
  announce_decision(o, approve ? "approved" : "rejected");
  return ok;
}

/// A retention age: a positive whole number and a unit, `d` (days), `h`, `m` or `s` ("30d",
/// "12h"); std::nullopt when malformed or beyond a century.
std::optional<std::chrono::milliseconds> parse_age(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  const char unit = text.back();
  text.remove_suffix(1);
  std::int64_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9' || n > 1'000'000'000) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  std::chrono::milliseconds age{};
  switch (unit) {
    case 'd': age = std::chrono::days{n}; break;
    case 'h': age = std::chrono::hours{n}; break;
    case 'm': age = std::chrono::minutes{n}; break;
    case 's': age = std::chrono::seconds{n}; break;
    default: return std::nullopt;
  }
  if (n <= 0 || age > std::chrono::days{36525}) return std::nullopt;
  return age;
}

/// Retention (docs/approvals.md#retention): removes the consumed, rejected and expired tickets
/// whose last change is older than `--older-than`, in batches; pending and approved unconsumed
/// tickets are never removed.
int cmd_prune(const options& o) {
  const auto age = parse_age(o.older_than);
  if (!age) {
    say("--older-than takes a positive age with a unit d, h, m or s (e.g. 30d, 12h), not {}", shown(o.older_than));
    return usage;
  }
  auto store = open_review_store(o);  // --db: the hosts' shared PostgreSQL database
  if (!store) return failed;
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const auto removed = store->prune(now - *age, mcpcore::approval_prune_options{o.batch});
  if (!removed) {
    say("cannot prune the approvals database: {}", removed.error().message());
    return failed;
  }
  fmt::print("pruned {} finished approval ticket{} older than {}\n", *removed, *removed == 1 ? "" : "s",
             o.older_than);
  return ok;
}

/// The newest `o.tail` audit rows, oldest first: the PostgreSQL database of --audit-db, or the
/// data directory's SQLite file.
std::optional<std::vector<mcpcore::audit_entry>> read_audit_tail(const options& o) {
  if (!o.audit_db.empty()) {
#if MCPCORE_HOST_POSTGRES
    auto rows = mcpcore_host::postgres_audit_tail(o.audit_db, o.tail);
    if (!rows) {
      say("{}", rows.error());
      return std::nullopt;
    }
    return std::move(*rows);
#else
    say("{}", mcpcore_host::postgres_unavailable("--audit-db"));
    return std::nullopt;
#endif
  }
  const auto p = paths_of(o);
  mcpcore::sqlite_audit_sink_options so;
  so.read_only = true;
  auto sink = mcpcore::sqlite_audit_sink::open(p.audit_db, so);
  if (!sink) {
    say("cannot open the audit database {}: {}", p.audit_db, sink.error().message());
    return std::nullopt;
  }
  auto rows = sink->tail(o.tail);
  if (!rows) {
    say("cannot read the audit database {}: {}", p.audit_db, rows.error().message());
    return std::nullopt;
  }
  return std::move(*rows);
}

int cmd_audit(const options& o) {
  auto rows = read_audit_tail(o);
  if (!rows) return failed;
  std::string out = o.json ? "[" : "";
  bool first = true;
  for (const auto& e : *rows) {
    if (!o.principal_filter.empty() && e.principal_id != o.principal_filter) continue;
    const mcpcore::audit_record r{e.action, e.target_type, e.target_id, e.principal_id, e.result,
                                  e.detail, e.correlation_id, e.time};
    if (o.json) {
      if (!first) out += ',';
      mcpcore::append_audit_json(out, r);
    } else {
      out += fmt::format("{}  {}  {}  principal={}  {}/{}", mcpcore::to_rfc3339(e.time), shown(e.action),
                     to_string(e.result), e.principal_id.empty() ? "-" : shown(e.principal_id), shown(e.target_type),
                     shown(e.target_id));
      if (!e.detail.empty()) out += fmt::format("  {}", shown(e.detail));
      if (!e.correlation_id.empty()) out += fmt::format("  cid={}", shown(e.correlation_id));
      out += '\n';
    }
    first = false;
  }
  if (o.json) out += "]\n";
  std::fputs(out.c_str(), stdout);
  return ok;
}

int cmd_token_mint(const options& o) {
  mcpcore::principal who;
  who.id = o.id;
  who.tier = o.tier;
  who.kind = o.kind == "human_interactive" ? mcpcore::principal_kind::human_interactive
             : o.kind == "engine"          ? mcpcore::principal_kind::engine
                                           : mcpcore::principal_kind::service;
  who.display_name = o.name;
  who.roles = o.roles;
  who.assured = o.assured;
  const auto p = paths_of(o);
  auto token = mcpcore_host::mint_token(p.token_file, who);
  if (!token) {
    say("{}", token.error());
    return failed;
  }
  // The token alone on stdout (scripts capture it); how to use it on stderr.
  fmt::print("{}\n", *token);
  std::fflush(stdout);
  say("minted a {} token for {} in {}; it is shown only now. A running mcpcore-host loads it within one "
      "maintenance tick.",
      o.tier, o.id, p.token_file);
  return ok;
}

int cmd_token_revoke(const options& o) {
  const auto p = paths_of(o);
  auto removed = mcpcore_host::revoke_tokens(p.token_file, o.id);
  if (!removed) {
    say("{}", removed.error());
    return failed;
  }
  if (*removed == 0) {
    say("no token of {} in {}", o.id, p.token_file);
    return failed;
  }
  fmt::print("revoked {} token{} of {}; a running mcpcore-host drops them within one maintenance tick\n", *removed,
             *removed == 1 ? "" : "s", o.id);
  return ok;
}

int cmd_token_list(const options& o) {
  auto entries = mcpcore_host::list_tokens(paths_of(o).token_file);
  if (!entries) {
    say("{}", entries.error());
    return failed;
  }
  std::string out;
  if (o.json) {
    mcpcore::json::writer w{out};
    w.begin_array();
    for (const auto& e : *entries) {
      w.begin_object()
          .member("line", static_cast<std::uint64_t>(e.line))
          .member("digest_prefix", e.digest_prefix)
          .member("principal", e.principal_id)
          .member("tier", e.tier)
          .member("kind", e.kind)
          .member("options", e.options)
          .end_object();
    }
    w.end_array();
    out += '\n';
  } else {
    for (const auto& e : *entries) {
      out += fmt::format("sha256:{}...  {}  {}  {}{}{}\n", shown(e.digest_prefix), shown(e.principal_id),
                     shown(e.tier), shown(e.kind), e.options.empty() ? "" : "  ", shown(e.options));
    }
  }
  std::fputs(out.c_str(), stdout);
  return ok;
}

int run(int argc, char** argv) {
  CLI::App app{"Approve or reject mcpcore-host's pending requests as a named human, read its audit trail, and "
               "mint or revoke its tokens. Works on the data directory directly (run it on the host).",
               std::string{program}};
  app.require_subcommand(1);
  options o;
  o.data_dir = mcpcore_host::default_data_dir();
  app.add_option("--data-dir", o.data_dir, "mcpcore-host's data directory")->capture_default_str();
  app.add_option("--db", o.db,
                 "The hosts' shared PostgreSQL approvals database (libpq connection string or postgres:// URI; "
                 "default: approvals.db in the data directory)");
  app.add_option("--audit-db", o.audit_db,
                 "The hosts' shared PostgreSQL audit database (default: audit.db in the data directory)");

  auto* pending = app.add_subcommand("pending", "List pending approvals with their tool and canonical arguments");
  pending->add_flag("--json", o.json, "As a JSON array of tickets");
  pending->add_option("--limit", o.limit, "At most this many, oldest first")->capture_default_str();

  auto* show = app.add_subcommand("show", "Show one approval ticket");
  show->add_option("id", o.id, "The approval_id")->required();
  show->add_flag("--json", o.json, "As JSON");

  auto* approve = app.add_subcommand("approve", "Approve a pending request as a named human");
  approve->add_option("id", o.id, "The approval_id")->required();
  approve->add_option("--as", o.as, "Your name, recorded as the reviewer (must differ from the submitter)")
      ->required();
  approve->add_flag("--yes,-y", o.yes, "Do not ask for confirmation");
  const auto add_events = [&o](CLI::App* review) {
    review->add_option("--events-db", o.events_db,
                       "Tell the hosts sharing events on this PostgreSQL database (their --events-db) of the decision: "
                       "their clients subscribed to host://approvals/<id> are notified (default: none)");
    review->add_option("--events-channel", o.events_channel,
                       "The hosts' --events-channel (1-63 of a-z, 0-9, _; default mcpcore_events)");
  };
  add_events(approve);

  auto* reject = app.add_subcommand("reject", "Reject a pending request as a named human");
  reject->add_option("id", o.id, "The approval_id")->required();
  reject->add_option("--as", o.as, "Your name, recorded as the reviewer")->required();
  reject->add_option("--comment", o.comment, "Why (shown to the submitter's status page)");
  reject->add_flag("--yes,-y", o.yes, "Do not ask for confirmation");
  add_events(reject);

  auto* audit = app.add_subcommand("audit", "Show the newest audit rows, oldest first");
  audit->add_option("--tail", o.tail, "How many rows")->capture_default_str();
  audit->add_option("--principal", o.principal_filter, "Only rows of this principal");
  audit->add_flag("--json", o.json, "As a JSON array");

  auto* prune = app.add_subcommand("prune", "Delete consumed, rejected and expired approvals older than an age");
  prune->add_option("--older-than", o.older_than, "Age of the last change, e.g. 30d, 12h, 90m")->required();
  prune->add_option("--batch", o.batch, "Rows deleted per short transaction")->capture_default_str();

  auto* token = app.add_subcommand("token", "Mint, revoke or list bearer tokens");
  token->require_subcommand(1);
  auto* mint = token->add_subcommand("mint", "Add a fresh token (printed once on stdout)");
  mint->add_option("--id", o.id, "Principal id (audit rows, approval submitter)")->required();
  mint->add_option("--tier", o.tier, "MCP tier")
      ->check(CLI::IsMember({"readonly", "operator", "supervised"}))
      ->capture_default_str();
  mint->add_option("--kind", o.kind, "Kind of principal")
      ->check(CLI::IsMember({"service", "human_interactive", "engine"}))
      ->capture_default_str();
  mint->add_option("--name", o.name, "Display name");
  mint->add_option("--role", o.roles, "A role (repeatable; \"approver\" may approve through the HTTP routes)");
  mint->add_flag("--assured", o.assured, "The holder is a strongly authenticated human (may approve over HTTP)");
  auto* revoke = token->add_subcommand("revoke", "Remove every token of a principal");
  revoke->add_option("--id", o.id, "Principal id")->required();
  auto* list = token->add_subcommand("list", "List the token file's entries (digest prefixes only)");
  list->add_flag("--json", o.json, "As JSON");

  CLI11_PARSE(app, argc, argv);
  if (pending->parsed()) return cmd_pending(o);
  if (show->parsed()) return cmd_show(o);
  if (approve->parsed()) return cmd_review(o, true);
  if (reject->parsed()) return cmd_review(o, false);
  if (audit->parsed()) return cmd_audit(o);
  if (prune->parsed()) return cmd_prune(o);
  if (mint->parsed()) return cmd_token_mint(o);
  if (revoke->parsed()) return cmd_token_revoke(o);
  if (list->parsed()) return cmd_token_list(o);
  return usage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    say("fatal: {}", e.what());
  } catch (...) {
    say("fatal: unknown exception");
  }
  return failed;
}
