// SPDX-License-Identifier: Apache-2.0
// mcpcore-admin on a PostgreSQL approvals database shared by several hosts (--db;
// docs/host-server.md#several-hosts-on-postgresql): `pending` and `show` name the server each
// ticket came from, read from the ticket itself, and `prune --older-than ... --db` removes old
// finished tickets there (docs/approvals.md#retention). The real program runs against the test
// cluster of the ctest fixture (MCPCORE_TEST_PG), in a PostgreSQL schema of its own.
#include <doctest/doctest.h>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/postgres_approval_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <libpq-fe.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#if !defined(MCPCORE_ADMIN)
#  error "MCPCORE_ADMIN names the mcpcore-admin program under test"
#endif

namespace {

using std::chrono::days;

struct ran {
  int status = -1;
  std::string out;  // stdout and stderr
};

// `s` as one single-quoted shell word.
std::string shell_quoted(std::string_view s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

// Runs mcpcore-admin --db `conninfo` with `args` (already shell-quoted) and returns what it printed.
ran admin(const std::string& conninfo, const std::string& args) {
  const std::string command = shell_quoted(MCPCORE_ADMIN) + " --db " + shell_quoted(conninfo) + " " + args + " 2>&1";
  ran r;
  FILE* pipe = ::popen(command.c_str(), "r");  // NOLINT(cert-env33-c): the test's own program
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The fixture's cluster (never skipped: without it the test fails).
std::string base_conninfo() {
  const char* e = std::getenv("MCPCORE_TEST_PG");  // NOLINT(concurrency-mt-unsafe): read before any thread
  REQUIRE_MESSAGE(e != nullptr, "MCPCORE_TEST_PG is not set: run through ctest (fixture mcpcore_pg)");
  return e;
}

// Runs `sql` on `conn`, failing the test on an error.
void exec(PGconn* conn, const std::string& sql) {
  PGresult* r = PQexec(conn, sql.c_str());
  const auto st = PQresultStatus(r);
  const std::string err = PQresultErrorMessage(r);
  PQclear(r);
  REQUIRE_MESSAGE((st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK), sql << ": " << err);
}

// A PostgreSQL schema of this test's own, dropped at the end; `conninfo` selects it.
class scratch_schema {
 public:
  scratch_schema() : admin_(PQconnectdb(base_conninfo().c_str())) {
    REQUIRE_MESSAGE(PQstatus(admin_) == CONNECTION_OK, PQerrorMessage(admin_));
    name_ = "admin_" + std::to_string(::getpid());
    exec(admin_, "DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
    exec(admin_, "CREATE SCHEMA " + name_);
    conninfo_ = base_conninfo() + " options='-csearch_path=" + name_ + "'";
  }
  scratch_schema(const scratch_schema&) = delete;
  scratch_schema& operator=(const scratch_schema&) = delete;
  ~scratch_schema() {
    PQclear(PQexec(admin_, ("DROP SCHEMA IF EXISTS " + name_ + " CASCADE").c_str()));
    PQfinish(admin_);
  }
  [[nodiscard]] const std::string& conninfo() const { return conninfo_; }

 private:
  PGconn* admin_;
  std::string name_;
  std::string conninfo_;
};

// A ticket of scope {"n":<n>} minted through `server` at `at`; rejected at `at` when asked.
std::string ticket(mcpcore::postgres_approval_store& store, mcpcore::approval_time at, int n, std::string_view server,
                   bool reject) {
  auto fresh = mcpcore::make_approval_id();
  REQUIRE(fresh);
  const std::string scope = "{\"n\":" + std::to_string(n) + "}";
  mcpcore::approval_mint_request m;
  m.id = *fresh;
  m.definition_id = "mcp.delete_tag";
  m.origin = "mcp";
  m.submitted_by = "agent";
  m.scope = scope;
  m.now = at;
  m.lifetime = days{365};
  m.per_submitter_cap = 10;
  m.global_cap = 10;
  m.server = server;
  auto minted = store.mint(m);
  REQUIRE(minted);
  REQUIRE(minted->status == mcpcore::approval_mint_status::created);
  if (reject) {
    const mcpcore::approval_review_request r{*fresh, "alice", mcpcore::approval_status::rejected, "no", at, days{365}};
    auto reviewed = store.review(r);
    REQUIRE(reviewed);
    REQUIRE(*reviewed == mcpcore::approval_review_status::reviewed);
  }
  return *fresh;
}

TEST_CASE("host-server.md/several-hosts-on-postgresql: mcpcore-admin --db pending and show name the server each "
          "ticket came from, from the ticket") {
  const scratch_schema schema;
  auto store = mcpcore::postgres_approval_store::open(schema.conninfo());
  REQUIRE_MESSAGE(store, (store ? "" : store.error().message()));
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const std::string from_s1 = ticket(*store, now - days{1}, 1, "s1.example:8765", false);
  const std::string from_s2 = ticket(*store, now, 2, "s2.example:8765", false);
  const std::string unnamed = ticket(*store, now, 3, "", false);

  const auto text = admin(schema.conninfo(), "pending");
  CHECK_MESSAGE(text.status == 0, text.out);
  CHECK_MESSAGE(text.out.find(from_s1 + "  delete_tag") != std::string::npos, text.out);
  CHECK_MESSAGE(text.out.find("from server s1.example:8765") != std::string::npos, text.out);
  CHECK_MESSAGE(text.out.find("from server s2.example:8765") != std::string::npos, text.out);
  // s1's ticket is the oldest: listed, with its server, first.
  CHECK(text.out.find("from server s1.example:8765") < text.out.find("from server s2.example:8765"));

  const auto json = admin(schema.conninfo(), "pending --json");
  CHECK_MESSAGE(json.status == 0, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":"s1.example:8765")") != std::string::npos, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":"s2.example:8765")") != std::string::npos, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":null)") != std::string::npos, json.out);  // the unnamed one

  const auto shown = admin(schema.conninfo(), "show " + from_s2);
  CHECK_MESSAGE(shown.status == 0, shown.out);
  CHECK_MESSAGE(shown.out.find("from server s2.example:8765") != std::string::npos, shown.out);
  const auto shown_json = admin(schema.conninfo(), "show --json " + from_s2);
  CHECK_MESSAGE(shown_json.out.find(R"("server":"s2.example:8765")") != std::string::npos, shown_json.out);
  const auto none = admin(schema.conninfo(), "show " + unnamed);
  CHECK_MESSAGE(none.status == 0, none.out);
  CHECK_MESSAGE(none.out.find("from server") == std::string::npos, none.out);
}

TEST_CASE("approvals.md/retention: mcpcore-admin prune --older-than --db deletes old finished tickets on PostgreSQL") {
  const scratch_schema schema;
  auto store = mcpcore::postgres_approval_store::open(schema.conninfo());
  REQUIRE_MESSAGE(store, (store ? "" : store.error().message()));
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const std::string old_rejected = ticket(*store, now - days{40}, 1, "s1", true);
  const std::string young_rejected = ticket(*store, now - days{10}, 2, "s2", true);
  const std::string old_pending = ticket(*store, now - days{40}, 3, "s1", false);

  const auto bad = admin(schema.conninfo(), "prune --older-than 30x");
  CHECK(bad.status == 2);
  const auto pruned = admin(schema.conninfo(), "prune --older-than 30d");
  CHECK_MESSAGE(pruned.status == 0, pruned.out);
  CHECK_MESSAGE(pruned.out.find("pruned 1 finished approval ticket older than 30d") != std::string::npos, pruned.out);
  const auto gone = store->get(old_rejected);
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
  for (const auto& kept : {young_rejected, old_pending}) {
    const auto t = store->get(kept);
    REQUIRE(t);
    CHECK(t->has_value());
  }
  const auto again = admin(schema.conninfo(), "prune --older-than 5d --batch 1");
  CHECK_MESSAGE(again.status == 0, again.out);
  CHECK_MESSAGE(again.out.find("pruned 1 finished approval ticket older than 5d") != std::string::npos, again.out);

  // An unreachable database: a failure (exit 1) whose message does not repeat the connection string.
  const std::string secret = "host=/nonexistent-mcpcore-admin dbname=x user=postgres password=hunter2 connect_timeout=2";
  const auto down = admin(secret, "prune --older-than 30d");
  CHECK(down.status == 1);
  CHECK_MESSAGE(down.out.find("hunter2") == std::string::npos, down.out);
}

// A LISTEN connection on the fixture's cluster: the payloads NOTIFYed on its channels, read up to a
// mark it sends itself (PostgreSQL delivers notifications in commit order, so what was notified
// before the mark has arrived once the mark has).
class listener {
 public:
  explicit listener(const std::vector<std::string>& channels) : conn_(PQconnectdb(base_conninfo().c_str())) {
    REQUIRE_MESSAGE(PQstatus(conn_) == CONNECTION_OK, PQerrorMessage(conn_));
    for (const auto& c : channels) exec(conn_, "LISTEN " + c);
    channel_ = channels.front();
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  ~listener() { PQfinish(conn_); }

  // "<channel> <payload>" of each notification since the last call.
  std::vector<std::string> drain() {
    const std::string mark = "mark-" + std::to_string(++marks_);
    exec(conn_, "NOTIFY " + channel_ + ", '" + mark + "'");
    std::vector<std::string> got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    for (;;) {
      REQUIRE(PQconsumeInput(conn_) == 1);
      while (PGnotify* n = PQnotifies(conn_)) {
        const std::string payload = n->extra;
        const std::string line = std::string{n->relname} + " " + payload;
        PQfreemem(n);
        if (payload == mark) return got;
        got.push_back(line);
      }
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "the mark did not come back within 10 s");
      pollfd pfd{PQsocket(conn_), POLLIN, 0};
      (void)::poll(&pfd, 1, 100);
    }
  }

 private:
  PGconn* conn_;
  std::string channel_;
  int marks_ = 0;
};

// The status of ticket `id` in `store`.
mcpcore::approval_status status_of(mcpcore::postgres_approval_store& store, const std::string& id) {
  auto t = store.get(id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  return (*t)->status;
}

TEST_CASE("host-server.md#approval-tickets-as-resources: mcpcore-admin approve and reject --events-db notify "
          "host://approvals/<id> once on the channel, a refused review nothing") {
  const scratch_schema schema;
  auto store = mcpcore::postgres_approval_store::open(schema.conninfo());
  REQUIRE_MESSAGE(store, (store ? "" : store.error().message()));
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const std::string to_approve = ticket(*store, now, 1, "s1", false);
  const std::string to_reject = ticket(*store, now, 2, "s2", false);
  const std::string quiet = ticket(*store, now, 3, "s1", false);
  const std::string on_default = ticket(*store, now, 4, "s1", false);
  const std::string channel = "t_admin_" + std::to_string(::getpid());
  listener heard{{channel, "mcpcore_events"}};
  const std::string events = " --events-db " + shell_quoted(base_conninfo()) + " --events-channel " + channel;
  // Each line's channel, kind and URI (the origin is fresh for each notify).
  const auto shown = [](const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const auto& l : lines) {
      const auto space = l.find(' ');
      mcpcore::json::document doc;
      const auto p = doc.parse(std::string_view{l}.substr(space + 1));
      REQUIRE_MESSAGE(p.has_value(), l);
      CHECK(p->find("o").is_string());
      out.push_back(l.substr(0, space) + " " + std::string{p->find("k").as_string()} + " " +
                    std::string{p->find("u").as_string()});
    }
    return out;
  };

  const auto approved = admin(schema.conninfo(), "approve " + to_approve + " --as alice --yes" + events);
  CHECK_MESSAGE(approved.status == 0, approved.out);
  CHECK(status_of(*store, to_approve) == mcpcore::approval_status::approved);
  CHECK(shown(heard.drain()) == std::vector<std::string>{channel + " resource_updated host://approvals/" + to_approve});

  const auto rejected =
      admin(schema.conninfo(), "reject " + to_reject + " --as alice --comment no --yes" + events);
  CHECK_MESSAGE(rejected.status == 0, rejected.out);
  CHECK(status_of(*store, to_reject) == mcpcore::approval_status::rejected);
  CHECK(shown(heard.drain()) == std::vector<std::string>{channel + " resource_updated host://approvals/" + to_reject});

  // Refused (reviewed already): exit 1, nothing notified.
  const auto again = admin(schema.conninfo(), "reject " + to_approve + " --as bob --yes" + events);
  CHECK_MESSAGE(again.status == 1, again.out);
  CHECK(heard.drain().empty());

  // Without --events-db nothing is sent, on the default channel either.
  const auto silent = admin(schema.conninfo(), "approve " + quiet + " --as alice --yes");
  CHECK_MESSAGE(silent.status == 0, silent.out);
  CHECK(heard.drain().empty());

  // --events-db alone: the default channel, mcpcore_events (the host's).
  const auto defaulted =
      admin(schema.conninfo(), "approve " + on_default + " --as alice --yes --events-db " + shell_quoted(base_conninfo()));
  CHECK_MESSAGE(defaulted.status == 0, defaulted.out);
  CHECK(shown(heard.drain()) == std::vector<std::string>{"mcpcore_events resource_updated host://approvals/" + on_default});
}

TEST_CASE("host-server.md#approval-tickets-as-resources: mcpcore-admin refuses a bad --events-channel before "
          "reviewing, and a notify that fails leaves the decision made (a warning, exit 0)") {
  const scratch_schema schema;
  auto store = mcpcore::postgres_approval_store::open(schema.conninfo());
  REQUIRE_MESSAGE(store, (store ? "" : store.error().message()));
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  const std::string id = ticket(*store, now, 1, "s1", false);

  for (const std::string& bad : {std::string{"--events-channel mcpcore_events"},  // without --events-db
                                 "--events-db " + shell_quoted(base_conninfo()) + " --events-channel Bad-Name",
                                 "--events-db " + shell_quoted(base_conninfo()) + " --events-channel 9lives"}) {
    const auto refused = admin(schema.conninfo(), "approve " + id + " --as alice --yes " + bad);
    CHECK_MESSAGE(refused.status == 2, bad << ": " << refused.out);
    CHECK(status_of(*store, id) == mcpcore::approval_status::pending);
  }

  const std::string secret = "host=/nonexistent-mcpcore-admin dbname=x user=postgres password=hunter2 connect_timeout=2";
  const auto down = admin(schema.conninfo(), "approve " + id + " --as alice --yes --events-db " + shell_quoted(secret));
  CHECK_MESSAGE(down.status == 0, down.out);
  CHECK_MESSAGE(down.out.find("warning: approval " + id + " was approved, but the hosts were not told") !=
                    std::string::npos,
                down.out);
  CHECK_MESSAGE(down.out.find("hunter2") == std::string::npos, down.out);
  CHECK(status_of(*store, id) == mcpcore::approval_status::approved);
}

}  // namespace
