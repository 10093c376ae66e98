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

#include "support/admin_program.hpp"
#include "support/pg_cluster.hpp"
#include "support/store_opener.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace {

using admin_program::ran;
using admin_program::shell_quoted;
using std::chrono::days;
using test_pg::base_conninfo;

// Runs mcpcore-admin --db `conninfo` with `args` (already shell-quoted) and returns what it printed.
ran admin(const std::string& conninfo, const std::string& args) {
  return admin_program::run("--db " + shell_quoted(conninfo) + " " + args);
}

// A PostgreSQL schema of the test's own (dropped at the end) with an approval store in it, and
// the time the test began.
struct approvals_db {
  test_pg::scratch_schemas schemas{"admin_"};
  std::string conninfo = schemas.make();
  mcpcore::postgres_approval_store store = mcpcore_test::open_or_fail<mcpcore::postgres_approval_store>(conninfo);
  mcpcore::approval_time now = admin_program::now();
};

// A ticket of scope {"n":<n>} minted through `server` at `at`; rejected at `at` when asked.
std::string ticket(mcpcore::postgres_approval_store& store, mcpcore::approval_time at, int n, std::string_view server,
                   bool reject) {
  return admin_program::mint(store, {.definition_id = "mcp.delete_tag",
                                     .submitted_by = "agent",
                                     .scope = "{\"n\":" + std::to_string(n) + "}",
                                     .at = at,
                                     .server = std::string{server},
                                     .reject = reject});
}

TEST_CASE("host-server.md/several-hosts-on-postgresql: mcpcore-admin --db pending and show name the server each "
          "ticket came from, from the ticket") {
  approvals_db db;
  const std::string from_s1 = ticket(db.store, db.now - days{1}, 1, "s1.example:8765", false);
  const std::string from_s2 = ticket(db.store, db.now, 2, "s2.example:8765", false);
  const std::string unnamed = ticket(db.store, db.now, 3, "", false);

  const auto text = admin(db.conninfo, "pending");
  CHECK_MESSAGE(text.status == 0, text.out);
  CHECK_MESSAGE(text.out.find(from_s1 + "  delete_tag") != std::string::npos, text.out);
  CHECK_MESSAGE(text.out.find("from server s1.example:8765") != std::string::npos, text.out);
  CHECK_MESSAGE(text.out.find("from server s2.example:8765") != std::string::npos, text.out);
  // s1's ticket is the oldest: listed, with its server, first.
  CHECK(text.out.find("from server s1.example:8765") < text.out.find("from server s2.example:8765"));

  const auto json = admin(db.conninfo, "pending --json");
  CHECK_MESSAGE(json.status == 0, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":"s1.example:8765")") != std::string::npos, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":"s2.example:8765")") != std::string::npos, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":null)") != std::string::npos, json.out);  // the unnamed one

  const auto shown = admin(db.conninfo, "show " + from_s2);
  CHECK_MESSAGE(shown.status == 0, shown.out);
  CHECK_MESSAGE(shown.out.find("from server s2.example:8765") != std::string::npos, shown.out);
  const auto shown_json = admin(db.conninfo, "show --json " + from_s2);
  CHECK_MESSAGE(shown_json.out.find(R"("server":"s2.example:8765")") != std::string::npos, shown_json.out);
  const auto none = admin(db.conninfo, "show " + unnamed);
  CHECK_MESSAGE(none.status == 0, none.out);
  CHECK_MESSAGE(none.out.find("from server") == std::string::npos, none.out);
}

TEST_CASE("approvals.md/retention: mcpcore-admin prune --older-than --db deletes old finished tickets on PostgreSQL") {
  approvals_db db;
  const std::string old_rejected = ticket(db.store, db.now - days{40}, 1, "s1", true);
  const std::string young_rejected = ticket(db.store, db.now - days{10}, 2, "s2", true);
  const std::string old_pending = ticket(db.store, db.now - days{40}, 3, "s1", false);

  const auto bad = admin(db.conninfo, "prune --older-than 30x");
  CHECK(bad.status == 2);
  const auto pruned = admin(db.conninfo, "prune --older-than 30d");
  CHECK_MESSAGE(pruned.status == 0, pruned.out);
  CHECK_MESSAGE(pruned.out.find("pruned 1 finished approval ticket older than 30d") != std::string::npos, pruned.out);
  const auto gone = db.store.get(old_rejected);
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
  for (const auto& kept : {young_rejected, old_pending}) {
    const auto t = db.store.get(kept);
    REQUIRE(t);
    CHECK(t->has_value());
  }
  const auto again = admin(db.conninfo, "prune --older-than 5d --batch 1");
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
  explicit listener(const std::vector<std::string>& channels) {
    for (const auto& c : channels) conn_.exec("LISTEN " + c);
    channel_ = channels.front();
  }

  // "<channel> <payload>" of each notification since the last call.
  std::vector<std::string> drain() {
    const std::string mark = "mark-" + std::to_string(++marks_);
    conn_.exec("NOTIFY " + channel_ + ", '" + mark + "'");
    std::vector<std::string> got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    for (;;) {
      REQUIRE(PQconsumeInput(conn_.get()) == 1);
      while (PGnotify* n = PQnotifies(conn_.get())) {
        const std::string payload = n->extra;
        const std::string line = std::string{n->relname} + " " + payload;
        PQfreemem(n);
        if (payload == mark) return got;
        got.push_back(line);
      }
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "the mark did not come back within 10 s");
      pollfd pfd{PQsocket(conn_.get()), POLLIN, 0};
      (void)::poll(&pfd, 1, 100);
    }
  }

 private:
  test_pg::connection conn_;
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
  approvals_db db;
  const std::string to_approve = ticket(db.store, db.now, 1, "s1", false);
  const std::string to_reject = ticket(db.store, db.now, 2, "s2", false);
  const std::string quiet = ticket(db.store, db.now, 3, "s1", false);
  const std::string on_default = ticket(db.store, db.now, 4, "s1", false);
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

  const auto approved = admin(db.conninfo, "approve " + to_approve + " --as alice --yes" + events);
  CHECK_MESSAGE(approved.status == 0, approved.out);
  CHECK(status_of(db.store, to_approve) == mcpcore::approval_status::approved);
  CHECK(shown(heard.drain()) == std::vector<std::string>{channel + " resource_updated host://approvals/" + to_approve});

  const auto rejected =
      admin(db.conninfo, "reject " + to_reject + " --as alice --comment no --yes" + events);
  CHECK_MESSAGE(rejected.status == 0, rejected.out);
  CHECK(status_of(db.store, to_reject) == mcpcore::approval_status::rejected);
  CHECK(shown(heard.drain()) == std::vector<std::string>{channel + " resource_updated host://approvals/" + to_reject});

  // Refused (reviewed already): exit 1, nothing notified.
  const auto again = admin(db.conninfo, "reject " + to_approve + " --as bob --yes" + events);
  CHECK_MESSAGE(again.status == 1, again.out);
  CHECK(heard.drain().empty());

  // Without --events-db nothing is sent, on the default channel either.
  const auto silent = admin(db.conninfo, "approve " + quiet + " --as alice --yes");
  CHECK_MESSAGE(silent.status == 0, silent.out);
  CHECK(heard.drain().empty());

  // --events-db alone: the default channel, mcpcore_events (the host's).
  const auto defaulted =
      admin(db.conninfo, "approve " + on_default + " --as alice --yes --events-db " + shell_quoted(base_conninfo()));
  CHECK_MESSAGE(defaulted.status == 0, defaulted.out);
  CHECK(shown(heard.drain()) == std::vector<std::string>{"mcpcore_events resource_updated host://approvals/" + on_default});
}

TEST_CASE("host-server.md#approval-tickets-as-resources: mcpcore-admin refuses a bad --events-channel before "
          "reviewing, and a notify that fails leaves the decision made (a warning, exit 0)") {
  approvals_db db;
  const std::string id = ticket(db.store, db.now, 1, "s1", false);

  for (const std::string& bad : {std::string{"--events-channel mcpcore_events"},  // without --events-db
                                 "--events-db " + shell_quoted(base_conninfo()) + " --events-channel Bad-Name",
                                 "--events-db " + shell_quoted(base_conninfo()) + " --events-channel 9lives"}) {
    const auto refused = admin(db.conninfo, "approve " + id + " --as alice --yes " + bad);
    CHECK_MESSAGE(refused.status == 2, bad << ": " << refused.out);
    CHECK(status_of(db.store, id) == mcpcore::approval_status::pending);
  }

  const std::string secret = "host=/nonexistent-mcpcore-admin dbname=x user=postgres password=hunter2 connect_timeout=2";
  const auto down = admin(db.conninfo, "approve " + id + " --as alice --yes --events-db " + shell_quoted(secret));
  CHECK_MESSAGE(down.status == 0, down.out);
  CHECK_MESSAGE(down.out.find("warning: approval " + id + " was approved, but the hosts were not told") !=
                    std::string::npos,
                down.out);
  CHECK_MESSAGE(down.out.find("hunter2") == std::string::npos, down.out);
  CHECK(status_of(db.store, id) == mcpcore::approval_status::approved);
}

}  // namespace
