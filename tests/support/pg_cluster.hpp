// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL test cluster of the ctest fixture `mcpcore_pg` (scripts/pg-test-cluster,
// cmake/mcpcore_pg_fixture.cmake): its connection string MCPCORE_TEST_PG, a plain libpq
// connection of a test's own beside a store's, scratch schemas a test's stores live in, and the
// cluster script (a restart under a running store).
#ifndef MCPCORE_TESTS_SUPPORT_PG_CLUSTER_HPP
#define MCPCORE_TESTS_SUPPORT_PG_CLUSTER_HPP

#include <doctest/doctest.h>

#include <libpq-fe.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace test_pg {

/// The fixture cluster's connection string (MCPCORE_TEST_PG). Unset, the test fails: a
/// PostgreSQL test is never skipped.
inline std::string base_conninfo() {
  const char* e = std::getenv("MCPCORE_TEST_PG");  // NOLINT(concurrency-mt-unsafe): nothing sets it
  REQUIRE_MESSAGE(e != nullptr, "MCPCORE_TEST_PG is not set: run through ctest (fixture mcpcore_pg), or "
                                "scripts/pg-test-cluster start");
  return e;
}

/// One libpq connection, closed at the end of its scope. A statement that fails fails the test
/// with PostgreSQL's message.
class connection {
 public:
  explicit connection(const std::string& conninfo = base_conninfo()) : c_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) {
      const std::string err = PQerrorMessage(c_);
      PQfinish(c_);
      FAIL("connection failed: " << err);
    }
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { PQfinish(c_); }
  [[nodiscard]] PGconn* get() const noexcept { return c_; }

  /// Runs one statement, `params` bound to $1, $2, ...; every row it returned, its columns
  /// joined by '|'.
  std::vector<std::string> rows(const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* r = PQexecParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    const auto st = PQresultStatus(r);
    const std::string err = PQresultErrorMessage(r);
    std::vector<std::string> out;
    if (st == PGRES_TUPLES_OK) {
      for (int i = 0; i < PQntuples(r); ++i) {
        std::string line;
        for (int k = 0; k < PQnfields(r); ++k) {
          if (k != 0) line += '|';
          line += PQgetvalue(r, i, k);
        }
        out.push_back(std::move(line));
      }
    }
    PQclear(r);
    REQUIRE_MESSAGE((st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK), sql << ": " << err);
    return out;
  }
  /// Runs one statement; its first row ("" when it returned none).
  std::string exec(const std::string& sql, const std::vector<std::string>& params = {}) {
    auto r = rows(sql, params);
    return r.empty() ? std::string{} : std::move(r.front());
  }
  /// The one row the statement must return.
  std::string one(const std::string& sql, const std::vector<std::string>& params = {}) {
    auto r = rows(sql, params);
    REQUIRE_MESSAGE(r.size() == 1, sql << ": " << r.size() << " rows");
    return std::move(r.front());
  }

 private:
  PGconn* c_;
};

/// Fresh, empty PostgreSQL schemas of a test's own, dropped at the end of its scope. A store's
/// connection string selects its schema through search_path.
class scratch_schemas {
 public:
  /// Schemas named `<prefix><pid>_<n>`.
  explicit scratch_schemas(std::string prefix = "t") : prefix_(std::move(prefix)) {}
  scratch_schemas(const scratch_schemas&) = delete;
  scratch_schemas& operator=(const scratch_schemas&) = delete;
  ~scratch_schemas() {
    // A connection of its own, errors ignored: a test may have restarted the server under `admin()`.
    PGconn* c = PQconnectdb(base_.c_str());
    for (const auto& s : names_) PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + s + " CASCADE").c_str()));
    PQfinish(c);
  }

  /// A new schema; the connection string of a session in it, `extra` (more keywords) appended.
  std::string make(std::string_view extra = {}) {
    std::string name = prefix_ + std::to_string(::getpid()) + "_" + std::to_string(names_.size());
    admin().exec("DROP SCHEMA IF EXISTS " + name + " CASCADE");
    admin().exec("CREATE SCHEMA " + name);
    names_.push_back(std::move(name));
    return conninfo(extra);
  }
  /// The schema `make` made last.
  [[nodiscard]] const std::string& name() const {
    REQUIRE_FALSE(names_.empty());
    return names_.back();
  }
  /// The connection string of a session in the schema `make` made last.
  [[nodiscard]] std::string conninfo(std::string_view extra = {}) const {
    std::string c = base_ + " options='-csearch_path=" + name() + "'";
    if (!extra.empty()) c.append(" ").append(extra);
    return c;
  }
  /// A connection to the database, outside the schemas (search_path as the server has it).
  connection& admin() {
    if (!admin_) admin_.emplace(base_);
    return *admin_;
  }

 private:
  std::string prefix_;
  std::string base_ = base_conninfo();
  std::optional<connection> admin_;  // made on first use
  std::vector<std::string> names_;
};

#if defined(MCPCORE_PG_TEST_CLUSTER)
/// The cluster's directory: the connection string's host (its socket directory).
inline std::string cluster_dir() {
  const std::string c = base_conninfo();
  const auto at = c.find("host=");
  REQUIRE(at != std::string::npos);
  const auto end = c.find(' ', at);
  return c.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
}

/// Runs scripts/pg-test-cluster `command` (start, stop, restart) on the fixture's cluster; its
/// exit status.
inline int run_cluster_script(const std::string& command) {
  const std::string cmd = std::string("bash ") + MCPCORE_PG_TEST_CLUSTER + " " + command + " " + cluster_dir();
  return std::system(cmd.c_str());  // NOLINT(concurrency-mt-unsafe,cert-env33-c): the test's own script
}
#endif

}  // namespace test_pg

#endif  // MCPCORE_TESTS_SUPPORT_PG_CLUSTER_HPP
