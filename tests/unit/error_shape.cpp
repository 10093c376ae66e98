// SPDX-License-Identifier: Apache-2.0
// Every fallible public call of the core and the SQLite stores fails with one shape, mcpcore::error:
// a code to branch on and a non-empty message (docs/errors.md#one-error-shape). The transport's
// calls are checked in tests/transport/error_shape.cpp.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>
#include <mcpcore/wire/json.hpp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"
#include "support/process.hpp"

#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

using namespace mcpcore;
namespace suite = mcpcore_test::approval_store_suite_detail;

namespace {

// The shape every converted call shares: `error()` is an mcpcore::error.
template <class R>
constexpr bool has_error_shape = std::is_same_v<typename R::error_type, error>;

}  // namespace

TEST_SUITE("error_shape") {
  TEST_CASE("error shape: the fallible public calls return result<T> with mcpcore::error") {
    static_assert(has_error_shape<decltype(std::declval<server_builder&>().build())>);
    static_assert(has_error_shape<decltype(make_approval_id())>);
    static_assert(has_error_shape<decltype(jsonl_audit_sink::open(""))>);
    static_assert(has_error_shape<decltype(sqlite_approval_store::open(""))>);
    static_assert(has_error_shape<decltype(sqlite_audit_sink::open(""))>);
    static_assert(has_error_shape<decltype(std::declval<memory_approval_store&>().pending(1))>);
    static_assert(has_error_shape<decltype(std::declval<json::document&>().parse(""))>);
    CHECK(make_approval_id().has_value());  // its failure (no entropy source) cannot be provoked here
  }

  TEST_CASE("error shape: server_builder::build refuses with build_refused and the offences") {
    server_builder b{{.name = "", .version = "1"}};
    auto r = b.build();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == library_errc::build_refused);
    CHECK(r.error().details() == std::vector<std::string>{"server_info.name is empty"});
    CHECK(r.error().message() == "server_info.name is empty");
  }

  TEST_CASE("error shape: jsonl_audit_sink::open names the file and keeps the OS code") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("missing/audit.jsonl");
    auto s = jsonl_audit_sink::open(path);
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error() == std::errc::no_such_file_or_directory);
    CHECK(s.error().message().starts_with("cannot open the audit log " + path + ": "));
  }

  TEST_CASE("error shape: the SQLite stores' open names the file and keeps the store code") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("missing/approvals.db");
    auto store = sqlite_approval_store::open(path);
    REQUIRE_FALSE(store.has_value());
    CHECK(store.error() == approval_store_errc::closed);
    CHECK(is_permanent_store_error(store.error()));
    CHECK(store.error().message().starts_with("cannot open the approval store " + path + ": "));

    auto sink = sqlite_audit_sink::open(path);
    REQUIRE_FALSE(sink.has_value());
    CHECK(sink.error() == sqlite_audit_errc::closed);
    CHECK(sink.error().message().starts_with("cannot open the audit database " + path + ": "));
  }

  TEST_CASE("error shape: a store call's error reads its message from the code") {
    memory_approval_store s;
    const suite::mint_spec a;
    suite::mint_created(s, a);
    suite::mint_spec clash;
    clash.id = a.id;
    clash.submitted_by = "bob";
    const auto r = s.mint(clash.request());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == approval_store_errc::internal);
    CHECK(r.error().message() == make_error_code(approval_store_errc::internal).message());
    CHECK_FALSE(r.error().message().empty());
  }
}
