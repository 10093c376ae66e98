// SPDX-License-Identifier: Apache-2.0
// A plain SQLite connection of a test's own, beside a store's or a sink's: schema checks, locks
// held by "another process", damage.
#ifndef MCPCORE_TESTS_SUPPORT_RAW_SQLITE_HPP
#define MCPCORE_TESTS_SUPPORT_RAW_SQLITE_HPP

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace test_sqlite {

/// One connection, closed at the end of its scope.
class raw_db {
 public:
  explicit raw_db(const std::string& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) == SQLITE_OK);
  }
  raw_db(const raw_db&) = delete;
  raw_db& operator=(const raw_db&) = delete;
  ~raw_db() { sqlite3_close(db_); }
  /// Runs `sql` (any number of statements); the SQLite result code.
  int exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  /// The first column of the first row as text ("" when there is no row).
  std::string text(const char* sql) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      const auto* p = sqlite3_column_text(s, 0);
      const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s, 0));
      if (p != nullptr) out.assign(reinterpret_cast<const char*>(p), n);
    }
    sqlite3_finalize(s);
    return out;
  }
  /// The first column of the first row as an integer (-1 when there is no row).
  std::int64_t integer(const char* sql) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK);
    std::int64_t out = -1;
    if (sqlite3_step(s) == SQLITE_ROW) out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

/// Overwrites the root page of `table` in the closed database file at `path` with garbage; page 1
/// (the header and the schema) stays intact, so the file still opens and the damage shows when
/// the table is read.
inline void damage_table_root_page(const std::string& path, const std::string& table) {
  std::int64_t page_size = 0;
  std::int64_t root = 0;
  {
    raw_db raw(path);
    page_size = raw.integer("PRAGMA page_size");
    root = raw.integer(("SELECT rootpage FROM sqlite_master WHERE name = '" + table + "'").c_str());
  }
  REQUIRE(page_size > 0);
  REQUIRE(root > 1);
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  REQUIRE(f != nullptr);
  REQUIRE(std::fseek(f, static_cast<long>((root - 1) * page_size), SEEK_SET) == 0);
  for (std::int64_t i = 0; i < page_size; ++i) std::fputc(0xA5, f);
  std::fclose(f);
}

}  // namespace test_sqlite

#endif  // MCPCORE_TESTS_SUPPORT_RAW_SQLITE_HPP
