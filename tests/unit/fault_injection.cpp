// SPDX-License-Identifier: Apache-2.0
// Fault injection through the real server path (docs/security.md#testing-for-robustness,
// docs/approvals.md#every-answer-of-the-machine, docs/security.md#audit-and-the-one-cid-pattern):
// the SQLite approval store made busy, read-only, corrupt and full underneath a running server, at
// mint, at recall (the consume, and the read before it) and at review (the MCP approver tool and
// the HTTP approval route); audit sinks, and the SQLite audit sink, that fail under every kind of
// row.
//
// Faults that need a file system of their own (a full disk, a read-only mount) run in a child
// process with private user and mount namespaces (unshare(2)); where the kernel refuses those, the
// case says so and is not exercised.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/process.hpp"
#include "support/raw_sqlite.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/types.h>
#include <unistd.h>

using namespace mcpcore;
using namespace server_fixture;
using namespace std::chrono_literals;
using test_sqlite::raw_db;

namespace {

// ---- what the cases share ------------------------------------------------------------------------

constexpr std::string_view gated_schema =
    R"({"type":"object","properties":{"tag":{"type":"string"},"approval_id":{"type":"string"}},)"
    R"("required":["tag"],"additionalProperties":false})";

// The submitter: a supervised token (Tag:Delete is approval-gated for it) allowed to delete tags.
principal agent() { return {.id = "agent-1", .tier = "supervised", .roles = {"user"}}; }
// The approver: an assured human with Approval:Approve.
principal carol() {
  return {.id = "carol",
          .tier = "supervised",
          .kind = principal_kind::human_interactive,
          .roles = {"approver"},
          .assured = true};
}

// `Authorization: Bearer agent` is agent(), `Bearer carol` is carol().
struct bearer_principals {
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto a = req.header("Authorization");
    if (!a) return std::nullopt;
    if (*a == "Bearer agent") return agent();
    if (*a == "Bearer carol") return carol();
    return std::nullopt;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept {
    return credential_verdict::valid;
  }
};
static_assert(authenticator<bearer_principals>);

role_table_authorizer roles() {
  role_table_authorizer r;
  r.grant("user", "Tag", operation::delete_).grant("approver", "Approval", operation::approve);
  return r;
}

// A request the test owns (its view refers to it).
using http_request = http_endpoint_fixture::request;
using http_endpoint_fixture::header_of;

http_request mcp_post(std::string body, std::string_view token, std::string_view session = {}) {
  return http_endpoint_fixture::post(std::move(body), session, token);
}

http_request mcp_delete(std::string_view session, std::string_view token) {
  return http_endpoint_fixture::del(session, token);
}

http_request review_post(std::string_view id, std::string_view token, std::string_view action = "approve") {
  http_request r;
  r.target = "/api/v1/approvals/" + std::string{id} + "/" + std::string{action};
  r.headers = {{"Host", "localhost:8765"}, {"Authorization", "Bearer " + std::string{token}}};
  return r;
}

// The reply of a request to an endpoint without an executor (answered before `handle` returns).
http_reply send(http_endpoint& ep, const http_request& r) {
  std::optional<http_reply> got;
  int calls = 0;
  ep.handle(r.view(), [&](http_reply reply) {
    ++calls;
    got = std::move(reply);
  });
  REQUIRE_MESSAGE(got.has_value(), "no reply to " << r.method << " " << r.target);
  CHECK(calls == 1);
  return std::move(*got);
}

// "null", or the number, of error.data.retry_after_ms.
std::string retry_of(const answer& a) {
  const auto v = a.data()["retry_after_ms"];
  if (!v.exists()) return "<absent>";
  if (v.is_null()) return "null";
  return std::to_string(v.to_int64().value_or(-1));
}

// Every approval-gated host piece over one store: the service, the server (delete_tag, gated for
// supervised tokens; the approver tools), the approval route and the MCP HTTP endpoint in front.
template <class Store>
struct approvals_host {
  explicit approvals_host(Store& store)
      : service(store), srv(make_server()), approvals(service, roles()), http(srv, bearer_principals{}) {
    http.set_approvals(approvals);
  }
  approvals_host(const approvals_host&) = delete;
  approvals_host& operator=(const approvals_host&) = delete;

  server make_server() {
    server_builder b{{.name = "fault-injection", .version = "1"}};
    b.tool("delete_tag")
        .description("Deletes a tag.")
        .input_schema(std::string{gated_schema})
        .security("Tag", operation::delete_)
        .effect(tool_effect::destructive, true)
        .handler([this](call_context&, const arguments& args) {
          ++runs;
          return tool_result::text("deleted " + std::string{args["tag"].as_string()});
        });
    b.authorizer(roles()).audit(audit).metrics(metrics).approvals(service).approval_tools();
    return build(b);
  }

  answer call(const principal& who, std::int64_t id, std::string_view args) {
    connection c{who};
    return c.send(srv, call_tool(id, "delete_tag", args));
  }
  answer review(std::int64_t id, std::string_view approval_id) {
    connection c{carol()};
    return c.send(srv, call_tool(id, "approve_request", R"({"approval_id":")" + std::string{approval_id} + R"("})"));
  }
  [[nodiscard]] long long metric(std::string_view series) const { return series_value(metrics, series); }

  approval_service service;
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  std::atomic<int> runs{0};
  server srv;
  approval_endpoint approvals;
  http_endpoint http;
};

std::string recall_args(std::string_view tag, std::string_view id) {
  return R"({"tag":")" + std::string{tag} + R"(","approval_id":")" + std::string{id} + R"("})";
}

// ---- the store-fault scenario (docs/approvals.md#every-answer-of-the-machine)
// --------------------------------------------------

// What the fault should look like to the client and in the audit trail.
struct store_fault {
  std::string_view name;
  bool transient = false;
  std::string_view store_message;  // approval_store_category's text of the error
  bool read_fails = false;         // the recall's read (get) fails too: binding unverified
};

// Collects the differences from what docs/approvals.md#every-answer-of-the-machine promises, as
// text (so that a child process can hand them to the test through a pipe), and a log of what the
// client saw.
struct findings {
  std::vector<std::string> failures;
  std::string log;
  void expect(bool ok, const std::string& what) {
    if (!ok) failures.push_back(what);
  }
  void expect_eq(const std::string& got, const std::string& want, const std::string& what) {
    if (got != want) failures.push_back(what + ": got [" + got + "], want [" + want + "]");
  }
  void saw(const std::string& line) { log += line + "\n"; }
  [[nodiscard]] std::string text() const {
    std::string s;
    for (const auto& f : failures) s += f + "\n";
    return s;
  }
};

// One whole run of docs/approvals.md#every-answer-of-the-machine against a real store: tickets are
// minted and one approved through `normal`; `fault_on()` breaks the store underneath `faulted`
// (which may be `normal` itself, or a second host over the same file); a mint, a recall (twice, as
// the remediation advises) and a review through the MCP tool and through HTTP each get the answer
// of the fault's class and change nothing; `fault_off()` repairs the store; then both tickets are
// as they were, nothing was minted, and the approved ticket redeems exactly once.
template <class Host>
findings run_store_fault(Host& normal, Host& faulted, const std::function<void()>& fault_on,
                         const std::function<void()>& fault_off, const store_fault& x) {
  findings f;
  const std::string name{x.name};
  // Before the fault: a ticket to recall (approved) and one to review (pending).
  const auto first = normal.call(agent(), 1, R"({"tag":"a"})");
  const std::string recalled = str(first.data()["approval_id"]);
  const auto second = normal.call(agent(), 2, R"({"tag":"b"})");
  const std::string reviewed = str(second.data()["approval_id"]);
  f.expect(first.code() == -32006 && is_approval_id(recalled), name + ": setup mint a: " + first.text);
  f.expect(second.code() == -32006 && is_approval_id(reviewed), name + ": setup mint b: " + second.text);
  const auto approved = normal.review(3, recalled);
  f.expect(approved.result().exists(), name + ": setup approve: " + approved.text);
  if (!f.failures.empty()) return f;

  const std::string retry = x.transient ? "5000" : "null";
  const std::string msg{x.store_message};
  const long long refused_before = faulted.metric(R"(t_mcp_approval_refused_total{tool="delete_tag"})");
  const long long masked_before = faulted.metric(R"(t_mcp_approval_masked_denials_total{tool="delete_tag"})");
  const long long failures_before = faulted.metric(R"(t_mcp_tool_calls_total{result="failure",tool="delete_tag"})");

  fault_on();

  // 1. Mint (docs/approvals.md#what-the-machine-checks-in-order, #every-answer-of-the-machine):
  // -32603 "failed to create approval request", no id.
  {
    const auto a = faulted.call(agent(), 10, R"({"tag":"c"})");
    f.saw(name + " mint: " + a.text);
    f.expect(a.code() == -32603, name + ": mint code: " + a.text);
    f.expect_eq(a.message(), "failed to create approval request", name + ": mint message");
    f.expect_eq(retry_of(a), retry, name + ": mint retry_after_ms");
    f.expect_eq(str(a.data()["remediation"]),
                x.transient ? "Retry the same call; no approval request was created."
                            : "This will not clear on retry; no approval request was created. Report the "
                              "correlation_id to the server's operator.",
                name + ": mint remediation");
    f.expect(!a.data()["approval_id"].exists() && !a.data()["status_url"].exists(), name + ": mint handed out an id");
    const auto rows = faulted.audit.entries();
    f.expect(!rows.empty() && rows.back().result == audit_result::failure &&
                 rows.back().detail == "approval submit failed: " + msg + " correlation_id=" + a.cid(),
             name + ": mint audit row: " + (rows.empty() ? std::string{"none"} : rows.back().detail));
  }
  // 2. Recall (docs/approvals.md#what-the-machine-checks-in-order, #every-answer-of-the-machine):
  // -32603, the ticket intact, the handler not run.
  const std::string message = x.transient ? "approval store temporarily unavailable" : "approval store unavailable";
  for (const std::int64_t id : {11, 12}) {  // retried unchanged: the same answer
    const auto a = faulted.call(agent(), id, recall_args("a", recalled));
    f.saw(name + " recall: " + a.text);
    f.expect(a.code() == -32603, name + ": recall code: " + a.text);
    f.expect_eq(a.message(), message, name + ": recall message");
    f.expect_eq(retry_of(a), retry, name + ": recall retry_after_ms");
    f.expect_eq(str(a.data()["remediation"]),
                x.transient ? "Retry the same call unchanged: the approval was not consumed; do not request a "
                              "fresh one. The approval's lifetime keeps running."
                            : "This will not clear on retry. The approval was not consumed; report the "
                              "correlation_id to the server's operator.",
                name + ": recall remediation");
    const auto rows = faulted.audit.entries();
    const std::string want_detail = "approval_id=" + recalled + " refused: store_error" +
                                    (x.read_fails ? " (origin/submitter unverified)" : "") + " " + msg +
                                    " correlation_id=" + a.cid();
    f.expect(!rows.empty() && rows.back().result == audit_result::failure && rows.back().detail == want_detail,
             name + ": recall audit row: " + (rows.empty() ? std::string{"none"} : rows.back().detail) +
                 ", want " + want_detail);
  }
  f.expect(faulted.runs == 0 && normal.runs == 0, name + ": the handler ran on a faulted recall");
  f.expect(faulted.metric(R"(t_mcp_approval_refused_total{tool="delete_tag"})") == refused_before + 2,
           name + ": refused counter");
  f.expect(faulted.metric(R"(t_mcp_approval_masked_denials_total{tool="delete_tag"})") ==
               masked_before + (x.read_fails ? 2 : 0),
           name + ": masked-denials counter");
  f.expect(faulted.metric(R"(t_mcp_tool_calls_total{result="failure",tool="delete_tag"})") == failures_before + 3,
           name + ": tool_calls failure counter");
  // 3. Review through the MCP approver tool: -32603, nothing reviewed.
  {
    const auto a = faulted.review(13, reviewed);
    f.saw(name + " review (MCP): " + a.text);
    f.expect(a.code() == -32603, name + ": MCP review code: " + a.text);
    f.expect_eq(a.message(), message, name + ": MCP review message");
    f.expect_eq(retry_of(a), retry, name + ": MCP review retry_after_ms");
    f.expect_eq(str(a.data()["remediation"]),
                x.transient ? "Retry the same call; nothing was reviewed."
                            : "This will not clear on retry; nothing was reviewed. Report the correlation_id to "
                              "the server's operator.",
                name + ": MCP review remediation");
  }
  // 4. Review through HTTP: 503 with Retry-After: 5, or 500 without.
  {
    const auto r = send(faulted.http, review_post(reviewed, "carol"));
    f.saw(name + " review (HTTP): " + std::to_string(r.head.status) + " Retry-After=" + header_of(r, "Retry-After") +
          " " + r.head.body);
    f.expect(r.head.status == (x.transient ? 503 : 500), name + ": HTTP review status " + std::to_string(r.head.status));
    f.expect_eq(header_of(r, "Retry-After"), x.transient ? "5" : "<absent>", name + ": HTTP review Retry-After");
    const auto body = parse(r.head.body);
    f.expect_eq(str(body.root["error"]), x.transient ? "store_temporarily_unavailable" : "store_unavailable",
                name + ": HTTP review error token");
  }

  fault_off();

  // 5. Nothing changed: the approved ticket is unconsumed, the pending one unreviewed, no new one.
  {
    const auto t = normal.service.get(recalled);
    f.expect(t && t->has_value() && (*t)->status == approval_status::approved && !(*t)->consumed_at &&
                 (*t)->consumed_by.empty(),
             name + ": the recalled ticket changed");
    const auto p = normal.service.get(reviewed);
    f.expect(p && p->has_value() && (*p)->status == approval_status::pending && (*p)->reviewed_by.empty(),
             name + ": the reviewed ticket changed");
    const auto queue = normal.service.pending(10);
    f.expect(queue && queue->size() == 1 && (*queue)[0].id == reviewed, name + ": a ticket was minted during the fault");
    f.saw(name + " after: recalled ticket " +
          (t && t->has_value() ? std::string{to_string((*t)->status)} + ((*t)->consumed_at ? " consumed" : " not consumed")
                               : std::string{"?"}) +
          ", reviewed ticket " + (p && p->has_value() ? std::string{to_string((*p)->status)} : std::string{"?"}));
  }
  // 6. The fault cleared: the recall runs the handler exactly once, a replay is refused.
  {
    const auto a = normal.call(agent(), 20, recall_args("a", recalled));
    f.saw(name + " recall after: " + a.text);
    f.expect(a.result().exists(), name + ": recall after the fault: " + a.text);
    const auto again = normal.call(agent(), 21, recall_args("a", recalled));
    f.expect_eq(again.message(), "approval already used (one-time ticket)", name + ": replay after the fault");
    const int runs = &normal == &faulted ? normal.runs.load() : normal.runs + faulted.runs;
    f.expect(runs == 1, name + ": the handler ran " + std::to_string(runs) + " times");
    const auto r = send(normal.http, review_post(reviewed, "carol"));
    f.expect(r.head.status == 200, name + ": HTTP review after the fault: " + r.head.body);
  }
  return f;
}

void report(const findings& f) {
  if (std::getenv("MCPCORE_FAULT_TRACE") != nullptr) std::fprintf(stderr, "%s", f.log.c_str());
  for (const auto& failure : f.failures) FAIL_CHECK(failure);
  CHECK(f.failures.empty());
}

sqlite_approval_store open_store(const std::string& path, sqlite_approval_store_options o = {}) {
  auto s = sqlite_approval_store::open(path, o);
  // The message is built lazily, also for a passing assertion under `-s`: read the error only when there is one.
  REQUIRE_MESSAGE(s.has_value(), "open " << path << ": " << (s ? std::string{} : s.error().message()));
  return std::move(*s);
}

// A short busy timeout: the busy cases wait it out on every write.
sqlite_approval_store_options quick() {
  sqlite_approval_store_options o;
  o.busy_timeout = 50ms;
  return o;
}

// ---- damage ---------------------------------------------------------------------------------------

// Overwrites the first page of table or index `name` in `path` with 0xA5 bytes, through a raw
// connection beside the store's, and gives the page back when repaired. The WAL is checkpointed
// into the file first (so the page on disk is the current one), and after each change, so the
// store's connection notices that the file changed and drops its page cache.
class page_damage {
 public:
  page_damage(std::string path, std::string name) : path_(std::move(path)), name_(std::move(name)) {}

  void damage() {
    raw_db raw(path_);
    REQUIRE(raw.integer("PRAGMA wal_checkpoint(TRUNCATE)") == 0);  // 0: not blocked
    page_size_ = raw.integer("PRAGMA page_size");
    const std::string q = "SELECT rootpage FROM sqlite_master WHERE name = '" + name_ + "'";
    root_ = raw.integer(q.c_str());
    REQUIRE(page_size_ > 0);
    REQUIRE(root_ > 1);
    saved_ = io(std::string(static_cast<std::size_t>(page_size_), static_cast<char>(0xA5)));
    REQUIRE(raw.integer("PRAGMA wal_checkpoint(TRUNCATE)") == 0);
  }
  void repair() {
    (void)io(saved_);
    raw_db raw(path_);
    REQUIRE(raw.integer("PRAGMA wal_checkpoint(TRUNCATE)") == 0);
  }

 private:
  // Writes `bytes` over the page; returns what was there.
  std::string io(const std::string& bytes) {
    std::FILE* file = std::fopen(path_.c_str(), "r+b");
    REQUIRE(file != nullptr);
    const long offset = static_cast<long>((root_ - 1) * page_size_);
    std::string old(bytes.size(), '\0');
    REQUIRE(std::fseek(file, offset, SEEK_SET) == 0);
    REQUIRE(std::fread(old.data(), 1, old.size(), file) == old.size());
    REQUIRE(std::fseek(file, offset, SEEK_SET) == 0);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size());
    REQUIRE(std::fclose(file) == 0);
    return old;
  }
  std::string path_;
  std::string name_;
  std::int64_t page_size_ = 0;
  std::int64_t root_ = 0;
  std::string saved_;
};

// ---- private namespaces -------------------------------------------------------------------------

bool write_text(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// What a child in its own namespaces reported: its exit code (0: ran; 100: no namespaces here)
// and the text it wrote.
struct child_report {
  int code = -1;
  std::string text;
};

// Runs `body` in a child process with private user and mount namespaces (`unshare -rm`: root of
// its own user namespace, mounts invisible outside); `body` returns the text to report.
child_report in_private_mounts(const std::function<std::string()>& body) {
  int fds[2] = {-1, -1};
  REQUIRE(::pipe(fds) == 0);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = test_process::spawn([&] {
    ::close(fds[0]);
    const auto say = [&](const std::string& s) { return ::write(fds[1], s.data(), s.size()) >= 0; };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      (void)say(std::string{"unshare: "} + std::strerror(errno));
      return 100;
    }
    if (!write_text("/proc/self/setgroups", "deny") ||
        !write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1") ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      (void)say(std::string{"user namespace setup: "} + std::strerror(errno));
      return 100;
    }
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string{"exception: "} + e.what() + "\n";
    } catch (...) {
      out = "exception\n";
    }
    return say(out) ? 0 : 101;
  });
  ::close(fds[1]);
  child_report r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    r.text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  r.code = test_process::wait_exit(pid);
  return r;
}

// Checks a child's report: its failures (one per line), or why it could not run.
void check_child(const child_report& r, std::string_view what) {
  if (r.code == 100) {
    MESSAGE("no private user and mount namespaces here (" << r.text << "): " << what << " is not exercised");
    return;
  }
  CHECK_MESSAGE(r.code == 0, what << ": the child exited " << r.code << ": " << r.text);
  if (r.code == 0) CHECK_MESSAGE(r.text.empty(), what << ":\n" << r.text);
}

bool mount_tmpfs(const std::string& dir, std::string_view size) {
  const std::string options = "size=" + std::string{size} + ",mode=0700";
  return ::mount("mcpcore-test", dir.c_str(), "tmpfs", 0, options.c_str()) == 0;
}

// Fills the file system holding `path` with one file until it has no space left.
bool fill_disk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string chunk(4096, 'x');
  for (;;) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
  }
  const int err = errno;
  ::close(fd);
  return err == ENOSPC;
}

// A child's side of the store-fault scenario: its failures and, when traced, its log.
std::string child_text(const findings& f) {
  std::string s = f.text();
  if (std::getenv("MCPCORE_FAULT_TRACE") != nullptr) std::fprintf(stderr, "%s", f.log.c_str());
  return s;
}

// ---- audit sinks that fail --------------------------------------------------------------------

// Keeps rows while `mode` is ok; returns false or throws otherwise (audit_sink requirements 1, 4).
struct failing_audit {
  enum class mode : std::uint8_t { ok, refuse, throws };
  std::atomic<mode> now{mode::ok};
  std::atomic<int> lost{0};
  memory_audit_sink kept;
  bool record(const audit_record& r) {
    switch (now.load()) {
      case mode::ok: return kept.record(r);
      case mode::refuse: ++lost; return false;
      case mode::throws: ++lost; throw std::runtime_error("audit store down");
    }
    return false;
  }
};
static_assert(audit_sink<failing_audit>);

// The answer's JSON with what legitimately differs between two runs made comparable: correlation
// ids and the given ticket ids are replaced by placeholders, `audit_persisted` is left out.
void normalise(json::value v, json::writer& w) {
  if (v.is_object()) {
    w.begin_object();
    for (const auto& m : v.members()) {
      if (m.key == "audit_persisted" || m.key == "mcpcore/auditPersisted") continue;
      w.key(m.key);
      if ((m.key == "correlation_id" || m.key == "mcpcore/correlationId") && m.value().is_string()) {
        w.value("<cid>");
      } else {
        normalise(m.value(), w);
      }
    }
    w.end_object();
  } else if (v.is_array()) {
    w.begin_array();
    for (const auto e : v.elements()) normalise(e, w);
    w.end_array();
  } else {
    w.value(v);
  }
}
std::string normalised(std::string text, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (id.empty()) continue;
    for (auto at = text.find(id); at != std::string::npos; at = text.find(id)) text.replace(at, id.size(), "<id>");
  }
  if (text.empty()) return text;
  const auto p = parse(text);
  std::string out;
  json::writer w{out};
  normalise(p.root, w);
  return out;
}

// A server for the audit cases: a read tool, a write tool, one that throws, one that answers
// isError, one with an invalid structured result, and the approval-gated delete_tag, over a
// memory approval store. `audit` is any sink.
template <class Audit>
struct audited_server {
  explicit audited_server(Audit& audit) : service(store), srv(make(audit)) {}

  server make(Audit& audit) {
    server_builder b{{.name = "audit-faults", .version = "1"}};
    b.tool("echo").description("Echoes.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("echoed"); });
    b.tool("write").description("Writes.").security("Thing", operation::write).effect(tool_effect::additive, false)
        .input_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false})")
        .handler([](call_context&, const arguments&) { return tool_result::text("written"); });
    b.tool("secret").description("Needs a role.").security("Vault", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("secret"); });
    b.tool("boom").description("Throws.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) -> tool_result { throw std::runtime_error("boom"); });
    b.tool("soft").description("isError.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::error("soft failure"); });
    b.tool("garbled").description("Bad result.").security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::structured("[1,2]"); });
    b.tool("delete_tag")
        .description("Deletes a tag.")
        .input_schema(std::string{gated_schema})
        .security("Tag", operation::delete_)
        .effect(tool_effect::destructive, true)
        .handler([this](call_context&, const arguments&) {
          ++runs;
          return tool_result::text("deleted");
        });
    role_table_authorizer r;
    r.grant("user", "Thing", operation::read)
        .grant("user", "Thing", operation::write)
        .grant("user", "Tag", operation::delete_)
        .grant("approver", "Approval", operation::approve);
    b.authorizer(std::move(r)).audit(audit).metrics(metrics).approvals(service).approval_tools();
    return build(b);
  }

  memory_approval_store store;
  approval_service service;
  metrics_registry metrics{"t"};
  std::atomic<int> runs{0};
  server srv;
};

// One step of the audit sequence: the request, who sends it, and whether the answer carries
// error.data (where `audit_persisted:false` must appear when the row was lost).
struct audit_step {
  std::string label;
  principal who;
  std::string request;
  bool error_data = true;  // the answer is a JSON-RPC error with error.data
  int rows = 1;            // audit rows the step writes
  bool audit_persisted_field = true;  // the error reports a lost row in error.data
};

// Every kind of row of the dispatch core (docs/security.md#audit-and-the-one-cid-pattern): success,
// each pre-dispatch denial, a handler failure, an isError result, the approval machine's minted,
// deduped, polled (no row), reviewed, consumed (approved + the handler's row) and replayed tickets,
// an approver refusal. `{T}` in a request is the ticket id minted by the first approval step.
std::vector<audit_step> audit_sequence() {
  const principal user{.id = "u1", .tier = "supervised", .roles = {"user"}};
  const principal reader{.id = "r1", .tier = "readonly", .roles = {"user"}};
  const principal stranger{.id = "s1", .tier = "supervised"};
  const principal approver = carol();
  return {
      {"success", user, call_tool(1, "echo"), false},
      {"unknown tool", user, call_tool(2, "nope")},
      {"tier", reader, call_tool(3, "write", R"({"n":1})")},
      {"schema", user, call_tool(4, "write", R"({"n":"x"})"), false},  // a tool result: errors.md#argument-errors
      {"rbac", stranger, call_tool(5, "secret")},
      {"handler exception", user, call_tool(6, "boom")},
      {"isError result", user, call_tool(7, "soft"), false},
      {"invalid result", user, call_tool(8, "garbled"), true, 1, false},
      {"approval minted", user, call_tool(9, "delete_tag", R"({"tag":"a"})")},
      {"approval deduped", user, call_tool(10, "delete_tag", R"({"tag":"a"})")},
      {"approval polled", user, call_tool(11, "delete_tag", R"({"tag":"a","approval_id":"{T}"})"), true, 0, false},
      {"approver refused (self review)", principal{.id = "u1", .tier = "supervised",
                                                   .kind = principal_kind::human_interactive,
                                                   .roles = {"approver"}, .assured = true},
       call_tool(12, "approve_request", R"({"approval_id":"{T}"})")},
      {"review", approver, call_tool(13, "approve_request", R"({"approval_id":"{T}"})"), false},
      {"approval consumed", user, call_tool(14, "delete_tag", R"({"tag":"a","approval_id":"{T}"})"), false, 2},
      {"approval replayed", user, call_tool(15, "delete_tag", R"({"tag":"a","approval_id":"{T}"})")},
  };
}

// Runs the sequence against a server whose sink is in `mode` from the start; returns the
// normalised answers, and checks the gap signalling step by step.
template <class Sink>
std::vector<std::string> run_audit_sequence(audited_server<Sink>& s, bool rows_lost) {
  std::vector<std::string> out;
  std::string ticket;
  for (const auto& step : audit_sequence()) {
    CAPTURE(step.label);
    std::string req = step.request;
    if (const auto at = req.find("{T}"); at != std::string::npos) req.replace(at, 3, ticket);
    const long long lost_before = series_value(s.metrics, "t_mcp_audit_write_failures_total");
    connection c{step.who};
    const auto a = c.send(s.srv, req);
    if (ticket.empty() && a.code() == -32006) ticket = str(a.data()["approval_id"]);
    CHECK_MESSAGE(a.error().exists() == step.error_data, a.text);
    if (!step.error_data && a.result()["_meta"]["mcpcore/correlationId"].exists()) {
      // an argument error is a tool result: the gap is signalled in its _meta (errors.md#argument-errors)
      const auto field = a.result()["_meta"]["mcpcore/auditPersisted"];
      if (rows_lost) {
        REQUIRE_MESSAGE(field.is_bool(), a.text);
        CHECK_FALSE(field.as_bool());
      } else {
        CHECK_MESSAGE(!field.exists(), a.text);
      }
    }
    if (step.error_data) {
      const auto field = a.data()["audit_persisted"];
      if (rows_lost && step.audit_persisted_field) {
        REQUIRE_MESSAGE(field.is_bool(), a.text);
        CHECK_FALSE(field.as_bool());
      } else {
        CHECK_MESSAGE(!field.exists(), a.text);  // only the gap is reported
      }
    }
    CHECK(series_value(s.metrics, "t_mcp_audit_write_failures_total") - lost_before == (rows_lost ? step.rows : 0));
    out.push_back(normalised(a.text, {ticket}));
  }
  CHECK(s.runs == 1);  // the consumed ticket ran the handler once, whatever the audit did
  return out;
}

}  // namespace

TEST_SUITE("fault injection") {

// ---- the approval store under a running server (docs/approvals.md#every-answer-of-the-machine)
// ---------------------------------

TEST_CASE("approvals.md/every-answer-of-the-machine: a store locked by another connection past the busy timeout: transient at mint, recall and review, ticket intact") {
  const test_process::temp_dir dir;
  auto store = open_store(dir.file(), quick());
  approvals_host host{store};
  raw_db locker(dir.file());
  const auto on = [&] { REQUIRE(locker.exec("BEGIN IMMEDIATE") == SQLITE_OK); };
  const auto off = [&] { REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK); };
  report(run_store_fault(host, host, on, off,
                         {.name = "busy", .transient = true,
                          .store_message = "approval store busy (locked past the busy timeout)"}));
}

TEST_CASE("approvals.md/every-answer-of-the-machine: an index page of the store overwritten between calls: permanent at mint, consume and review, ticket intact once repaired") {
  const test_process::temp_dir dir;
  auto store = open_store(dir.file());
  approvals_host host{store};
  // The index of approved, unconsumed tickets: the mint's sweep, the consume and an approval
  // touch it; the recall's read (by id) does not.
  page_damage damage{dir.file(), "mcpcore_approvals_redeemable"};
  report(run_store_fault(host, host, [&] { damage.damage(); }, [&] { damage.repair(); },
                         {.name = "corrupt index", .store_message = "approval store is corrupt or not a database"}));
}

TEST_CASE("approvals.md/every-answer-of-the-machine: the table page of the store overwritten between calls: the recall's read fails (binding unverified), permanent") {
  const test_process::temp_dir dir;
  auto store = open_store(dir.file());
  approvals_host host{store};
  page_damage damage{dir.file(), "mcpcore_approvals"};
  report(run_store_fault(host, host, [&] { damage.damage(); }, [&] { damage.repair(); },
                         {.name = "corrupt table", .store_message = "approval store is corrupt or not a database",
                          .read_fails = true}));
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a server whose store is opened read-only (SQLite read-only open): permanent at mint, consume and review") {
  const test_process::temp_dir dir;
  auto store = open_store(dir.file());
  approvals_host host{store};
  sqlite_approval_store_options ro;
  ro.read_only = true;
  // Opened on the migrated file, beside the writable one (a host restarted with a read-only
  // database): the same tickets, every write refused.
  std::optional<sqlite_approval_store> read_only;
  std::optional<approvals_host<sqlite_approval_store>> faulted;
  read_only.emplace(open_store(dir.file(), ro));
  faulted.emplace(*read_only);
  report(run_store_fault(host, *faulted, [] {}, [] {},
                         {.name = "read-only open", .store_message = "approval store is read-only"}));
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a store on a read-only mount (private namespace): SQLite opens it read-only underneath, permanent") {
  const test_process::temp_dir dir;
  const std::string data = dir.path() + "/data";
  const std::string view = dir.path() + "/view";
  std::filesystem::create_directories(data);
  std::filesystem::create_directories(view);
  const auto r = in_private_mounts([&]() -> std::string {
    // The host writes through `data`; `view` is the same directory mounted read-only. The
    // writable host's connection keeps the WAL files, which a read-only opener needs.
    auto store = sqlite_approval_store::open(data + "/approvals.db");
    if (!store) return "open data: " + store.error().message() + "\n";
    approvals_host host{*store};
    if (::mount(data.c_str(), view.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, view.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      return std::string{"read-only bind mount: "} + std::strerror(errno) + "\n";
    }
    if (::access((view + "/approvals.db").c_str(), W_OK) == 0 || errno != EROFS) return "the view is writable\n";
    auto read_only = sqlite_approval_store::open(view + "/approvals.db");
    if (!read_only) return "open view: " + read_only.error().message() + "\n";
    approvals_host faulted{*read_only};
    return child_text(run_store_fault(host, faulted, [] {}, [] {},
                                      {.name = "read-only mount", .store_message = "approval store is read-only"}));
  });
  check_child(r, "the read-only mount");
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a store on a full file system (tmpfs, private namespace): permanent at mint, consume and review, intact once space is freed") {
  const test_process::temp_dir dir;
  const auto r = in_private_mounts([&]() -> std::string {
    if (!mount_tmpfs(dir.path(), "1m")) return std::string{"tmpfs: "} + std::strerror(errno) + "\n";
    auto store = sqlite_approval_store::open(dir.file());
    if (!store) return "open: " + store.error().message() + "\n";
    approvals_host host{*store};
    const std::string filler = dir.file("filler");
    std::string setup;
    const auto on = [&] {
      if (!fill_disk(filler)) setup = "the disk did not fill\n";
    };
    const auto off = [&] { std::filesystem::remove(filler); };
    const auto found = run_store_fault(host, host, on, off, {.name = "disk full", .store_message = "approval store is full"});
    return setup + child_text(found);
  });
  check_child(r, "the full disk");
}

// ---- audit failures never fail a request (docs/security.md#audit-and-the-one-cid-pattern,
// audit_sink requirements 1 and 4) ------

TEST_CASE("security.md/audit-and-the-one-cid-pattern: a sink returning false or throwing changes no answer of tools/call, every lost row is signalled") {
  failing_audit good;
  audited_server<failing_audit> baseline{good};
  const auto expected = run_audit_sequence(baseline, false);
  CHECK(good.lost == 0);
  for (const auto mode : {failing_audit::mode::refuse, failing_audit::mode::throws}) {
    CAPTURE(static_cast<int>(mode));
    failing_audit sink;
    sink.now = mode;
    audited_server<failing_audit> s{sink};
    const auto got = run_audit_sequence(s, true);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(audit_sequence()[i].label);
      CHECK(got[i] == expected[i]);
    }
    CHECK(sink.kept.entries().empty());
    CHECK(sink.lost > 0);
  }
}

TEST_CASE("security.md/audit-and-the-one-cid-pattern: session rows of the HTTP endpoint (open, reject, close, shutdown, bridge) lost by the sink change no answer and are counted") {
  for (const auto mode : {failing_audit::mode::ok, failing_audit::mode::refuse, failing_audit::mode::throws}) {
    CAPTURE(static_cast<int>(mode));
    failing_audit sink;
    sink.now = mode;
    const bool lost = mode != failing_audit::mode::ok;
    metrics_registry metrics{"t"};
    server_builder b{{.name = "audit-sessions", .version = "1"}};
    b.tool("echo").description("Echoes.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("echoed"); });
    b.audit(sink).metrics(metrics);
    auto srv = build(b);
    http_endpoint_options o;
    o.session.max_sessions_per_principal = 1;
    o.session.evict_idle_at_principal_cap = false;  // the cap refuses: a reject row
    http_endpoint ep{srv, bearer_principals{}, o};
    ep.set_metrics(metrics);  // one registry: the server's and the session layer's gaps in one family
    ep.set_audit(sink);
    const auto gaps = [&] { return series_value(metrics, "t_mcp_audit_write_failures_total"); };

    // mcp.session.open
    const auto init = send(ep, mcp_post(initialize(1), "agent"));
    CHECK(init.head.status == 200);
    const std::string sid = header_of(init, "Mcp-Session-Id");
    CHECK(sid.size() == session_id_length);
    CHECK(gaps() == (lost ? 1 : 0));
    // mcp.session.reject (the per-principal cap): 429, as with a working sink
    const auto refused = send(ep, mcp_post(initialize(2), "agent"));
    CHECK(refused.head.status == 429);
    CHECK(gaps() == (lost ? 2 : 0));
    // mcp.session.reject (an unknown session id), written by the endpoint itself
    const auto unknown = send(ep, mcp_post(call_tool(3, "echo"), "agent", std::string(32, 'f')));
    CHECK(unknown.head.status == 404);
    CHECK(gaps() == (lost ? 3 : 0));
    // the dispatch core's own row, through the endpoint
    const auto call = send(ep, mcp_post(call_tool(4, "echo"), "agent", sid));
    CHECK(call.head.status == 200);
    CHECK(str(at(parse(call.head.body).root["result"]["content"], 0)["text"]) == "echoed");
    CHECK(gaps() == (lost ? 4 : 0));
    // mcp.session.close reason=deleted
    CHECK(send(ep, mcp_delete(sid, "agent")).head.status == 200);
    CHECK(gaps() == (lost ? 5 : 0));
    // shutdown: a second session's close row (reason=shutdown) and the bridge's shutdown_reap row
    const auto again = send(ep, mcp_post(initialize(5), "agent"));
    CHECK(again.head.status == 200);
    CHECK(gaps() == (lost ? 6 : 0));
    ep.begin_shutdown();
    CHECK(gaps() == (lost ? 8 : 0));
    if (!lost) {
      std::vector<std::string> actions;
      for (const auto& e : sink.kept.entries()) actions.push_back(e.action);
      CHECK(actions == std::vector<std::string>{"mcp.session.open", "mcp.session.reject", "mcp.session.reject",
                                                "mcp.echo", "mcp.session.close", "mcp.session.open",
                                                "mcp.session.close", "mcp.bridge.shutdown_reap"});
    }
  }
}

TEST_CASE("security.md/audit-and-the-one-cid-pattern: the SQLite audit sink opened read-only: denials carry audit_persisted:false, successes and sessions are counted") {
  const test_process::temp_dir dir;
  { REQUIRE(sqlite_audit_sink::open(dir.file("audit.db")).has_value()); }  // create and migrate
  sqlite_audit_sink_options o;
  o.read_only = true;
  auto sink = sqlite_audit_sink::open(dir.file("audit.db"), o);
  REQUIRE(sink.has_value());
  audited_server<sqlite_audit_sink> s{*sink};
  connection c{{.id = "u1", .tier = "supervised", .roles = {"user"}}};
  const auto denied = c.send(s.srv, call_tool(1, "nope"));
  CHECK(denied.code() == -32602);
  REQUIRE(denied.data()["audit_persisted"].is_bool());
  CHECK_FALSE(denied.data()["audit_persisted"].as_bool());
  const auto ok = c.send(s.srv, call_tool(2, "echo"));
  CHECK(str(at(ok.result()["content"], 0)["text"]) == "echoed");
  CHECK(series_value(s.metrics, "t_mcp_audit_write_failures_total") == 2);
  http_endpoint ep{s.srv, bearer_principals{}};
  ep.set_metrics(s.metrics);
  ep.set_audit(*sink);
  CHECK(send(ep, mcp_post(initialize(3), "agent")).head.status == 200);
  CHECK(series_value(s.metrics, "t_mcp_audit_write_failures_total") == 3);
  const auto rows = sink->tail(10);
  REQUIRE(rows.has_value());
  CHECK(rows->empty());
}

TEST_CASE("security.md/audit-and-the-one-cid-pattern: the SQLite audit sink locked past its busy timeout: the denial answers with audit_persisted:false, then the sink recovers") {
  const test_process::temp_dir dir;
  sqlite_audit_sink_options o;
  o.busy_timeout = 20ms;
  auto sink = sqlite_audit_sink::open(dir.file("audit.db"), o);
  REQUIRE(sink.has_value());
  audited_server<sqlite_audit_sink> s{*sink};
  connection c{{.id = "u1", .tier = "readonly", .roles = {"user"}}};
  raw_db locker(dir.file("audit.db"));
  REQUIRE(locker.exec("BEGIN IMMEDIATE") == SQLITE_OK);
  const auto locked = c.send(s.srv, call_tool(1, "write", R"({"n":1})"));
  CHECK(locked.code() == -32004);
  CHECK(locked.message() == "MCP tier does not allow this operation");
  REQUIRE(locked.data()["audit_persisted"].is_bool());
  CHECK_FALSE(locked.data()["audit_persisted"].as_bool());
  CHECK(series_value(s.metrics, "t_mcp_audit_write_failures_total") == 1);
  REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK);
  const auto unlocked = c.send(s.srv, call_tool(2, "write", R"({"n":1})"));
  CHECK(unlocked.code() == -32004);
  CHECK_FALSE(unlocked.data()["audit_persisted"].exists());
  CHECK(series_value(s.metrics, "t_mcp_audit_write_failures_total") == 1);
  const auto rows = sink->tail(10);
  REQUIRE(rows.has_value());
  REQUIRE(rows->size() == 1);  // only the row written after the lock went
  CHECK((*rows)[0].correlation_id == unlocked.cid());
}

TEST_CASE("security.md/audit-and-the-one-cid-pattern: the SQLite audit sink on a full file system (tmpfs, private namespace): answers unchanged, the gap signalled, rows again once space is freed") {
  const test_process::temp_dir dir;
  const auto r = in_private_mounts([&]() -> std::string {
    std::string out;
    const auto expect = [&](bool ok, const std::string& what) {
      if (!ok) out += what + "\n";
    };
    if (!mount_tmpfs(dir.path(), "1m")) return std::string{"tmpfs: "} + std::strerror(errno) + "\n";
    auto sink = sqlite_audit_sink::open(dir.file("audit.db"));
    if (!sink) return "open: " + sink.error().message() + "\n";
    audited_server<sqlite_audit_sink> s{*sink};
    http_endpoint ep{s.srv, bearer_principals{}};
    ep.set_metrics(s.metrics);
    ep.set_audit(*sink);
    connection c{{.id = "u1", .tier = "supervised", .roles = {"user"}}};
    const auto gaps = [&] { return series_value(s.metrics, "t_mcp_audit_write_failures_total"); };
    expect(fill_disk(dir.file("filler")), "the disk did not fill");
    const auto denied = c.send(s.srv, call_tool(1, "nope"));
    expect(denied.code() == -32602 && denied.message() == "Unknown tool: nope", "denial: " + denied.text);
    expect(denied.data()["audit_persisted"].is_bool() && !denied.data()["audit_persisted"].as_bool(),
           "denial without audit_persisted:false: " + denied.text);
    const auto ok = c.send(s.srv, call_tool(2, "echo"));
    expect(str(at(ok.result()["content"], 0)["text"]) == "echoed", "success: " + ok.text);
    const auto init = send(ep, mcp_post(initialize(3), "agent"));
    expect(init.head.status == 200 && header_of(init, "Mcp-Session-Id").size() == session_id_length,
           "initialize: " + std::to_string(init.head.status));
    expect(gaps() == 3, "gaps while full: " + std::to_string(gaps()));
    std::filesystem::remove(dir.file("filler"));
    const auto later = c.send(s.srv, call_tool(4, "nope"));
    expect(!later.data()["audit_persisted"].exists(), "after freeing space: " + later.text);
    expect(gaps() == 3, "gaps after freeing space: " + std::to_string(gaps()));
    const auto rows = sink->tail(10);
    expect(rows.has_value() && rows->size() == 1 && (*rows)[0].correlation_id == later.cid(),
           "rows after freeing space");
    return out;
  });
  check_child(r, "the full disk under the audit sink");
}

}  // TEST_SUITE
