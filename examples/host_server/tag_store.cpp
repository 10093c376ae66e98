// SPDX-License-Identifier: Apache-2.0
// The host's tags in SQLite.
#include "tag_store.hpp"

#include <mcpcore/expected.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpcore_host {

namespace {

using mcpcore::fail;

constexpr std::string_view schema_sql =
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS host_tags (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL,"
    " updated_by TEXT NOT NULL, updated_at INTEGER NOT NULL);";

/// A prepared statement, finalized on scope exit.
class statement {
 public:
  statement(sqlite3* db, std::string_view sql) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  [[nodiscard]] bool ok() const noexcept { return rc_ == SQLITE_OK; }
  void bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  int step() noexcept { return sqlite3_step(stmt_); }
  [[nodiscard]] std::string text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    const int n = sqlite3_column_bytes(stmt_, column);
    if (p == nullptr || n <= 0) return {};
    return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};  // NOLINT: SQLite text is char data
  }
  [[nodiscard]] std::int64_t integer(int column) const noexcept { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

}  // namespace

struct tag_store::impl {
  sqlite3* db = nullptr;
  std::string path;
  std::size_t max_tags = default_max_tags;
  mutable std::mutex mutex;

  ~impl() { sqlite3_close_v2(db); }

  [[nodiscard]] std::string error(std::string_view what) const {
    std::string e = "tags database ";
    e += path;
    e += ": ";
    e += what;
    e += ": ";
    e += sqlite3_errmsg(db);
    return e;
  }
  /// Runs a statement without results.
  [[nodiscard]] bool exec(std::string_view sql) const {
    return sqlite3_exec(db, std::string{sql}.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  }
};

tag_store::tag_store(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
tag_store::tag_store(tag_store&&) noexcept = default;
tag_store& tag_store::operator=(tag_store&&) noexcept = default;
tag_store::~tag_store() = default;

mcpcore::result<tag_store, std::string> tag_store::open(const std::string& path, std::size_t max_tags) {
  auto p = std::make_unique<impl>();
  p->path = path;
  p->max_tags = max_tags;
  const int rc = sqlite3_open_v2(path.c_str(), &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) return fail(p->error("cannot open"));
  sqlite3_busy_timeout(p->db, tag_store_busy_timeout_ms);
  if (!p->exec(schema_sql)) return fail(p->error("cannot create the table"));
  return tag_store{std::move(p)};
}

mcpcore::result<std::vector<tag>, std::string> tag_store::list() const {
  const std::scoped_lock lock{impl_->mutex};
  statement st{impl_->db, "SELECT key, value, updated_by, updated_at FROM host_tags ORDER BY key"};
  if (!st.ok()) return fail(impl_->error("cannot read"));
  std::vector<tag> out;
  int rc = SQLITE_ROW;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back({st.text(0), st.text(1), st.text(2), st.integer(3)});
  if (rc != SQLITE_DONE) return fail(impl_->error("cannot read"));
  return out;
}

mcpcore::result<set_outcome, std::string> tag_store::set(std::string_view key, std::string_view value,
                                                         std::string_view by, std::int64_t now_ms) {
  if (value.size() > max_tag_value_bytes) {
    return fail("a tag value holds at most " + std::to_string(max_tag_value_bytes) + " bytes of UTF-8; this one has " +
                std::to_string(value.size()));
  }
  const std::scoped_lock lock{impl_->mutex};
  if (!impl_->exec("BEGIN IMMEDIATE")) return fail(impl_->error("cannot write"));
  const auto rollback = [this](std::string_view what) {
    auto e = impl_->error(what);
    (void)impl_->exec("ROLLBACK");
    return e;
  };
  set_outcome outcome = set_outcome::created;
  {
    statement find{impl_->db, "SELECT value FROM host_tags WHERE key = ?1"};
    if (!find.ok()) return fail(rollback("cannot read"));
    find.bind(1, key);
    const int rc = find.step();
    if (rc == SQLITE_ROW) {
      if (find.text(0) == value) {
        (void)impl_->exec("ROLLBACK");
        return set_outcome::unchanged;
      }
      outcome = set_outcome::updated;
    } else if (rc != SQLITE_DONE) {
      return fail(rollback("cannot read"));
    }
  }
  if (outcome == set_outcome::created) {
    statement count{impl_->db, "SELECT count(*) FROM host_tags"};
    if (!count.ok() || count.step() != SQLITE_ROW) return fail(rollback("cannot count"));
    if (static_cast<std::size_t>(count.integer(0)) >= impl_->max_tags) {
      (void)impl_->exec("ROLLBACK");
      return set_outcome::cap_reached;
    }
  }
  statement upsert{impl_->db,
                   "INSERT INTO host_tags (key, value, updated_by, updated_at) VALUES (?1, ?2, ?3, ?4) "
                   "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by, "
                   "updated_at = excluded.updated_at"};
  if (!upsert.ok()) return fail(rollback("cannot write"));
  upsert.bind(1, key);
  upsert.bind(2, value);
  upsert.bind(3, by);
  upsert.bind(4, now_ms);
  if (upsert.step() != SQLITE_DONE) return fail(rollback("cannot write"));
  if (!impl_->exec("COMMIT")) return fail(rollback("cannot commit"));
  return outcome;
}

mcpcore::result<bool, std::string> tag_store::remove(std::string_view key) {
  const std::scoped_lock lock{impl_->mutex};
  statement del{impl_->db, "DELETE FROM host_tags WHERE key = ?1"};
  if (!del.ok()) return fail(impl_->error("cannot delete"));
  del.bind(1, key);
  if (del.step() != SQLITE_DONE) return fail(impl_->error("cannot delete"));
  return sqlite3_changes(impl_->db) > 0;
}

}  // namespace mcpcore_host
