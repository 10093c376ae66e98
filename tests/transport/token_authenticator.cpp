// SPDX-License-Identifier: Apache-2.0
// Tests of the bearer-token authenticator: token file format, RFC 6750 §2.1 parsing, digests, revocation by reload.
#include <mcpcore/transport/token_authenticator.hpp>

#include <doctest/doctest.h>

#include "support/header_views.hpp"
#include "support/process.hpp"

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

using mcpcore::credential_verdict;
using mcpcore::http_header;
using mcpcore::http_request_view;
using mcpcore::principal;
using mcpcore::principal_kind;
using mcpcore::transport::token_authenticator;
using mcpcore::library_errc;

namespace {

// SHA-256 test vectors (FIPS 180-2 appendix B.1, and the empty message).
constexpr std::string_view sha256_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr std::string_view sha256_empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

constexpr std::string_view alice_token = "alice-token-0123456789";
constexpr std::string_view bob_token = "bob.token~with+slash/and=";

std::string entry(std::string_view token, std::string_view rest) {
  return "sha256:" + token_authenticator::token_digest(token) + "  " + std::string(rest) + "\n";
}

// A request carrying the given header fields; `view()` is valid while it lives.
struct request {
  std::vector<http_header> headers;
  test_support::header_views fields{};
  [[nodiscard]] http_request_view view() const {
    http_request_view v;
    v.method = "POST";
    v.target = "/mcp";
    v.headers = fields.of(headers);
    return v;
  }
};

request with_authorization(std::string_view value) {
  return request{{http_header{"Content-Type", "application/json"}, http_header{"Authorization", std::string(value)}}};
}

token_authenticator make(std::string_view text) {
  auto a = token_authenticator::from_text(text);
  REQUIRE_MESSAGE(a.has_value(), (a ? std::string() : a.error().message()));
  return *a;
}

std::string two_entries() {
  return "# the test tokens\n" + entry(alice_token, "alice operator human_interactive roles=ops,dev assured name=Alice Liddell") +
         entry(bob_token, "svc-bob - service");
}

std::optional<std::string> id_of(const token_authenticator& a, std::string_view authorization) {
  const request r = with_authorization(authorization);
  const auto p = a.authenticate(r.view());
  if (!p) return std::nullopt;
  return p->id;
}

void write_file(const std::string& path, std::string_view text, std::filesystem::perms perms) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
  }
  std::filesystem::permissions(path, perms, std::filesystem::perm_options::replace);
}

constexpr auto owner_rw = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

// Expects `text` to be refused on `line` with a message containing `needle`.
void check_refused(std::string_view text, std::size_t line, std::string_view needle) {
  const auto a = token_authenticator::from_text(text);
  REQUIRE_FALSE(a.has_value());
  CHECK(a.error() == library_errc::token_file_refused);
  const std::string message = a.error().message();
  CHECK_MESSAGE(message.starts_with("line " + std::to_string(line) + ": "), message);
  CHECK_MESSAGE(message.find(needle) != std::string::npos, message);
}

}  // namespace

TEST_SUITE("token_authenticator") {
  TEST_CASE("plugins.md: the digest helper is SHA-256 in lowercase hex (FIPS 180-2 test vectors)") {
    CHECK(token_authenticator::token_digest("abc") == sha256_abc);
    CHECK(token_authenticator::token_digest("") == sha256_empty);
    CHECK(token_authenticator::token_digest(alice_token).size() == mcpcore::transport::token_digest_hex_length);
  }

  TEST_CASE("plugins.md: a file entry holding the digest of \"abc\" admits the token abc") {
    const auto a = make("sha256:" + std::string(sha256_abc) + " abc-user readonly service\n");
    CHECK(id_of(a, "Bearer abc") == "abc-user");
    CHECK(id_of(a, "Bearer abd") == std::nullopt);
    // Hex digits in either case denote the same digest.
    std::string upper(sha256_abc);
    for (char& c : upper) c = (c >= 'a' && c <= 'f') ? static_cast<char>(c - 'a' + 'A') : c;
    const auto b = make("sha256:" + upper + " abc-user readonly service\n");
    CHECK(id_of(b, "Bearer abc") == "abc-user");
  }

  TEST_CASE("generated tokens are 32 CSPRNG bytes in base64url, valid bearer tokens, all different") {
    const auto t1 = token_authenticator::generate_token();
    const auto t2 = token_authenticator::generate_token();
    REQUIRE(t1.has_value());
    REQUIRE(t2.has_value());
    CHECK(t1->size() == 43);
    CHECK(token_authenticator::is_valid_token(*t1));
    CHECK(t1->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == std::string::npos);
    CHECK(*t1 != *t2);
  }

  TEST_CASE("RFC 6750 §2.1: b64token syntax") {
    CHECK(token_authenticator::is_valid_token("abc"));
    CHECK(token_authenticator::is_valid_token("A-Z.a_z~0+9/"));
    CHECK(token_authenticator::is_valid_token("abc=="));
    CHECK_FALSE(token_authenticator::is_valid_token(""));
    CHECK_FALSE(token_authenticator::is_valid_token("="));
    CHECK_FALSE(token_authenticator::is_valid_token("a=b"));
    CHECK_FALSE(token_authenticator::is_valid_token("a b"));
    CHECK_FALSE(token_authenticator::is_valid_token("a,b"));
    CHECK_FALSE(token_authenticator::is_valid_token("a\"b"));
    CHECK_FALSE(token_authenticator::is_valid_token("caf\xC3\xA9"));
    CHECK(token_authenticator::is_valid_token(std::string(mcpcore::transport::max_bearer_token_bytes, 'a')));
    CHECK_FALSE(token_authenticator::is_valid_token(std::string(mcpcore::transport::max_bearer_token_bytes + 1, 'a')));
  }

  TEST_CASE("plugins.md: an entry yields the principal's id, tier, kind, roles, display name and assurance") {
    const auto a = make(two_entries());
    CHECK(a.size() == 2);
    CHECK(a.warnings().empty());
    CHECK(a.path().empty());

    const request r = with_authorization("Bearer " + std::string(alice_token));
    const auto alice = a.authenticate(r.view());
    REQUIRE(alice.has_value());
    CHECK(alice->id == "alice");
    CHECK(alice->tier == "operator");
    CHECK(alice->kind == principal_kind::human_interactive);
    CHECK(alice->roles == std::vector<std::string>{"ops", "dev"});
    CHECK(alice->display_name == "Alice Liddell");
    CHECK(alice->assured);

    const request rb = with_authorization("Bearer " + std::string(bob_token));
    const auto bob = a.authenticate(rb.view());
    REQUIRE(bob.has_value());
    CHECK(bob->id == "svc-bob");
    CHECK(bob->tier.empty());  // "-": not an MCP token
    CHECK(bob->kind == principal_kind::service);
    CHECK(bob->roles.empty());
    CHECK(bob->display_name.empty());
    CHECK_FALSE(bob->assured);
  }

  TEST_CASE("token file format: comments, blank lines, tabs, CRLF and a byte order mark are accepted") {
    const std::string text = "\xEF\xBB\xBF# header comment\r\n"
                             "\r\n"
                             "   \t  \n"
                             "  # indented comment with sha256:nothing\n"
                             "\tsha256:" +
                             token_authenticator::token_digest("t1") +
                             "\tone\tsupervised\tengine\t\r\n"
                             "sha256:" +
                             token_authenticator::token_digest("t2") +
                             "   two   readonly   service   name=  Two   Spaced  Words  ";  // no final newline
    const auto a = make(text);
    CHECK(a.size() == 2);
    const request r1 = with_authorization("Bearer t1");
    const auto one = a.authenticate(r1.view());
    REQUIRE(one.has_value());
    CHECK(one->id == "one");
    CHECK(one->tier == "supervised");
    CHECK(one->kind == principal_kind::engine);
    const request r2 = with_authorization("Bearer t2");
    const auto two = a.authenticate(r2.view());
    REQUIRE(two.has_value());
    CHECK(two->display_name == "Two   Spaced  Words");
  }

  TEST_CASE("token file format: malformed lines are refused naming the line") {
    const std::string d = token_authenticator::token_digest("x");
    const std::string ok = "sha256:" + token_authenticator::token_digest("ok") + " ok readonly service\n";
    const std::string pre = "# comment\n\n" + ok;  // the bad entry is then on line 4
    check_refused(pre + "x-raw-token-pasted-by-mistake alice readonly service\n", 4, "sha256:");
    check_refused(pre + "SHA256:" + d + " alice readonly service\n", 4, "sha256:");
    check_refused(pre + "sha256:" + d.substr(1) + " alice readonly service\n", 4, "64 hex");
    check_refused(pre + "sha256:" + d + "0 alice readonly service\n", 4, "64 hex");
    check_refused(pre + "sha256:" + d.substr(1) + "g alice readonly service\n", 4, "hex digit");
    check_refused(pre + "sha256:" + d + "\n", 4, "four fields");
    check_refused(pre + "sha256:" + d + " alice readonly\n", 4, "four fields");
    check_refused(pre + "sha256:" + d + " alice admin service\n", 4, "unknown tier");
    check_refused(pre + "sha256:" + d + " alice Operator service\n", 4, "unknown tier");
    check_refused(pre + "sha256:" + d + " alice readonly human\n", 4, "unknown kind");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=\n", 4, "at least one role");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=a,,b\n", 4, "empty role");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=a,\n", 4, "empty role");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=a,b,a\n", 4, "twice");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=a roles=b\n", 4, "twice");
    check_refused(pre + "sha256:" + d + " alice readonly service assured assured\n", 4, "twice");
    check_refused(pre + "sha256:" + d + " alice readonly service asured\n", 4, "unknown option");
    check_refused(pre + "sha256:" + d + " alice readonly service # trailing comment\n", 4, "unknown option");
    check_refused(pre + "sha256:" + d + " alice readonly service name=\n", 4, "display name");
    check_refused(pre + "sha256:" + d + " alice readonly service name=   \n", 4, "display name");
    check_refused(pre + "sha256:" + d + " alice readonly service name=A\x01Z\n", 4, "control character");
    check_refused(pre + "sha256:" + d + " alice readonly service name=A\rZ\n", 4, "control character");
    check_refused(pre + "sha256:" + d + " al\xFFice readonly service\n", 4, "UTF-8");
    check_refused(pre + "sha256:" + d + " alice readonly service roles=\xC0\xAF\n", 4, "UTF-8");
    check_refused(pre + "sha256:" + d + " alice readonly service name=\xED\xA0\x80\n", 4, "UTF-8");
    check_refused(pre + "sha256:" + d + " alice readonly service" + std::string(1, '\0') + "\n", 4, "control character");
  }

  TEST_CASE("token file format: a later error is reported on its own line, the first error wins") {
    std::string text;
    for (int i = 0; i < 9; ++i) text += entry("tok" + std::to_string(i), "user" + std::to_string(i) + " readonly service");
    text += "garbage\nmore garbage\n";
    check_refused(text, 10, "sha256:");
  }

  TEST_CASE("token file format: a digest listed twice is refused, whatever the hex case") {
    const std::string d = token_authenticator::token_digest("same");
    std::string upper = d;
    for (char& c : upper) c = (c >= 'a' && c <= 'f') ? static_cast<char>(c - 'a' + 'A') : c;
    check_refused("sha256:" + d + " alice readonly service\n\nsha256:" + upper + " bob readonly service\n", 3,
                  "already on line 1");
  }

  TEST_CASE("token file format: one principal may hold several tokens, with identical attributes only") {
    const auto a = make(entry("old", "alice operator service roles=r1 name=Alice") +
                        entry("new", "alice operator service roles=r1 name=Alice"));
    CHECK(a.size() == 2);
    CHECK(id_of(a, "Bearer old") == "alice");
    CHECK(id_of(a, "Bearer new") == "alice");

    const std::string first = entry("old", "alice operator service roles=r1 name=Alice");
    check_refused(first + entry("new", "alice supervised service roles=r1 name=Alice"), 2, "different attributes");
    check_refused(first + entry("new", "alice operator engine roles=r1 name=Alice"), 2, "different attributes");
    check_refused(first + entry("new", "alice operator service roles=r2 name=Alice"), 2, "different attributes");
    check_refused(first + entry("new", "alice operator service roles=r1 name=Alicia"), 2, "different attributes");
    check_refused(first + entry("new", "alice operator service roles=r1 assured name=Alice"), 2, "different attributes");
  }

  TEST_CASE("token file format: an empty file loads with a warning and admits nobody") {
    const auto a = make("# nothing yet\n");
    CHECK(a.size() == 0);
    REQUIRE(a.warnings().size() == 1);
    CHECK(a.warnings()[0].message.find("no token") != std::string::npos);
    CHECK(id_of(a, "Bearer abc") == std::nullopt);
  }

  TEST_CASE("token file format: at most max_token_file_entries entries") {
    std::string text;
    for (std::size_t i = 0; i <= mcpcore::transport::max_token_file_entries; ++i) {
      text += entry("t" + std::to_string(i), "u" + std::to_string(i) + " - service");
    }
    check_refused(text, mcpcore::transport::max_token_file_entries + 1, "too many entries");
  }

  TEST_CASE("RFC 6750 §2.1: the Authorization field is Bearer, 1*SP, b64token") {
    const auto a = make(two_entries());
    const std::string t(alice_token);
    CHECK(id_of(a, "Bearer " + t) == "alice");
    CHECK(id_of(a, "bearer " + t) == "alice");  // the scheme is case-insensitive (RFC 9110 §11.1)
    CHECK(id_of(a, "BEARER " + t) == "alice");
    CHECK(id_of(a, "Bearer    " + t) == "alice");       // one space or more
    CHECK(id_of(a, "  Bearer " + t + " \t") == "alice");  // surrounding OWS left by a lenient host
    CHECK(id_of(a, "Bearer " + std::string(bob_token)) == "svc-bob");  // '+', '/', '~', '.', trailing '='

    CHECK(id_of(a, "Basic " + t) == std::nullopt);
    CHECK(id_of(a, "Bearer\t" + t) == std::nullopt);  // only SP separates
    CHECK(id_of(a, "Bearer" + t) == std::nullopt);
    CHECK(id_of(a, "Bearerx " + t) == std::nullopt);
    CHECK(id_of(a, t) == std::nullopt);
    CHECK(id_of(a, "Bearer") == std::nullopt);    // empty token
    CHECK(id_of(a, "Bearer ") == std::nullopt);   // empty token
    CHECK(id_of(a, "Bearer    ") == std::nullopt);
    CHECK(id_of(a, "Bearer " + t + " extra") == std::nullopt);
    CHECK(id_of(a, "Bearer " + t + ",") == std::nullopt);
    CHECK(id_of(a, "Bearer " + t + ", Bearer " + t) == std::nullopt);
    CHECK(id_of(a, "Bearer \"" + t + "\"") == std::nullopt);
    CHECK(id_of(a, "Bearer " + t.substr(0, 5) + "=" + t.substr(5)) == std::nullopt);
    CHECK(id_of(a, "Bearer " + t + "\xC3\xA9") == std::nullopt);
    CHECK(id_of(a, "Bearer " + t.substr(1)) == std::nullopt);  // a prefix of a known token
    CHECK(id_of(a, "Bearer " + t + "x") == std::nullopt);
    CHECK(id_of(a, "Bearer " + std::string(mcpcore::transport::max_bearer_token_bytes + 1, 'a')) == std::nullopt);
  }

  TEST_CASE("plugins.md: every entry is compared, each token yields its own principal, wherever it sits") {
    std::string text;
    constexpr int n = 7;
    for (int i = 0; i < n; ++i) text += entry("tok-" + std::to_string(i), "user-" + std::to_string(i) + " readonly service");
    const auto a = make(text);
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(id_of(a, "Bearer tok-" + std::to_string(i)) == "user-" + std::to_string(i));
    }
    CHECK(id_of(a, "Bearer tok-" + std::to_string(n)) == std::nullopt);
  }

  TEST_CASE("RFC 6750 §2.1: exactly one Authorization field, its name is case-insensitive") {
    const auto a = make(two_entries());
    const std::string value = "Bearer " + std::string(alice_token);

    const request none{{http_header{"Content-Type", "application/json"}}};
    CHECK_FALSE(a.authenticate(none.view()).has_value());
    CHECK_FALSE(a.authenticate(http_request_view{}).has_value());

    const request lower{{http_header{"authorization", value}}};
    CHECK(a.authenticate(lower.view()).has_value());

    const request twice{{http_header{"Authorization", value}, http_header{"Authorization", value}}};
    CHECK_FALSE(a.authenticate(twice.view()).has_value());
    const request twice_mixed{{http_header{"Authorization", value}, http_header{"AUTHORIZATION", "Basic eDp5"}}};
    CHECK_FALSE(a.authenticate(twice_mixed.view()).has_value());
  }

  TEST_CASE("sessions.md/credential-re-validation: revalidate is valid while the principal's entry stands, revoked otherwise") {
    auto a = make(two_entries());
    const request r = with_authorization("Bearer " + std::string(alice_token));
    const auto alice = a.authenticate(r.view());
    REQUIRE(alice.has_value());
    CHECK(a.revalidate(*alice) == credential_verdict::valid);

    principal changed = *alice;
    changed.tier = "supervised";
    CHECK(a.revalidate(changed) == credential_verdict::revoked);
    changed = *alice;
    changed.roles.emplace_back("extra");
    CHECK(a.revalidate(changed) == credential_verdict::revoked);
    CHECK(a.revalidate(principal{.id = "nobody"}) == credential_verdict::revoked);

    // The entry's attributes change: the principal of the old attributes no longer stands.
    REQUIRE(a.reload_text(entry(alice_token, "alice readonly human_interactive roles=ops,dev assured name=Alice Liddell")));
    CHECK(a.revalidate(*alice) == credential_verdict::revoked);
    const auto downgraded = a.authenticate(r.view());
    REQUIRE(downgraded.has_value());
    CHECK(downgraded->tier == "readonly");
    CHECK(a.revalidate(*downgraded) == credential_verdict::valid);
  }

  TEST_CASE("sessions.md/credential-re-validation: deleting a line and reloading the file revokes the token, in every copy") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("tokens");
    write_file(path, two_entries(), owner_rw);

    auto loaded = token_authenticator::load(path);
    REQUIRE_MESSAGE(loaded.has_value(), (loaded ? std::string() : loaded.error().message()));
    token_authenticator a = *loaded;
    const token_authenticator endpoint_copy = a;  // what an endpoint keeps by value
    CHECK(a.path() == path);
    CHECK(a.warnings().empty());

    const request r = with_authorization("Bearer " + std::string(alice_token));
    const auto alice = endpoint_copy.authenticate(r.view());
    REQUIRE(alice.has_value());
    CHECK(endpoint_copy.revalidate(*alice) == credential_verdict::valid);

    write_file(path, entry(bob_token, "svc-bob - service"), owner_rw);
    CHECK(endpoint_copy.revalidate(*alice) == credential_verdict::valid);  // not re-read yet
    REQUIRE(a.reload());
    CHECK(endpoint_copy.size() == 1);
    CHECK(endpoint_copy.revalidate(*alice) == credential_verdict::revoked);
    CHECK_FALSE(endpoint_copy.authenticate(r.view()).has_value());
    CHECK(id_of(endpoint_copy, "Bearer " + std::string(bob_token)) == "svc-bob");
  }

  TEST_CASE("a failed reload keeps the table in force and reports the error") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("tokens");
    write_file(path, two_entries(), owner_rw);
    auto loaded = token_authenticator::load(path);
    REQUIRE(loaded.has_value());
    token_authenticator a = *loaded;

    write_file(path, two_entries() + "sha256:nothex alice readonly service\n", owner_rw);
    const auto bad = a.reload();
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error() == library_errc::token_file_refused);
    CHECK(bad.error().message().starts_with(path + ":4: "));
    CHECK(a.size() == 2);
    CHECK(id_of(a, "Bearer " + std::string(alice_token)) == "alice");

    std::filesystem::remove(path);
    const auto gone = a.reload();
    REQUIRE_FALSE(gone.has_value());
    CHECK(gone.error() == std::errc::no_such_file_or_directory);
    CHECK(gone.error().message().starts_with("cannot open the token file " + path + ": "));
    CHECK(id_of(a, "Bearer " + std::string(alice_token)) == "alice");

    CHECK_FALSE(a.reload_text("broken\n").has_value());
    CHECK(a.size() == 2);
  }

  TEST_CASE("file permissions: world-readable warns, world-writable is refused") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("tokens");
    write_file(path, two_entries(), owner_rw | std::filesystem::perms::group_read | std::filesystem::perms::others_read);
    auto loaded = token_authenticator::load(path);
    REQUIRE(loaded.has_value());
    REQUIRE(loaded->warnings().size() == 1);
    CHECK(loaded->warnings()[0].line == 0);
    CHECK(loaded->warnings()[0].message.find("world-readable") != std::string::npos);
    CHECK(loaded->size() == 2);

    token_authenticator a = *loaded;
    std::filesystem::permissions(path, owner_rw, std::filesystem::perm_options::replace);
    REQUIRE(a.reload());
    CHECK(a.warnings().empty());  // the warnings are those of the table in force

    std::filesystem::permissions(path, owner_rw | std::filesystem::perms::others_write,
                                 std::filesystem::perm_options::replace);
    const auto refused = token_authenticator::load(path);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error() == library_errc::token_file_refused);
    CHECK(refused.error().message().find("world-writable") != std::string::npos);
    CHECK_FALSE(a.reload().has_value());
    CHECK(a.size() == 2);
  }

  TEST_CASE("load: a missing file, a directory and an oversized file are refused") {
    const test_process::temp_dir dir;
    const auto missing = token_authenticator::load(dir.file("absent"));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error() == std::errc::no_such_file_or_directory);
    CHECK(missing.error().message().find("absent") != std::string::npos);

    const auto directory = token_authenticator::load(dir.path());
    REQUIRE_FALSE(directory.has_value());
    CHECK(directory.error().message().find("not a regular file") != std::string::npos);

    const std::string big = dir.file("big");
    write_file(big, std::string(mcpcore::transport::max_token_file_bytes + 1, '#'), owner_rw);
    const auto oversized = token_authenticator::load(big);
    REQUIRE_FALSE(oversized.has_value());
    CHECK(oversized.error().message().find("max_token_file_bytes") != std::string::npos);

    const auto empty_path = token_authenticator::load("");
    CHECK_FALSE(empty_path.has_value());
  }

  TEST_CASE("an authenticator made from text cannot reload a file but can reload text") {
    auto a = make(two_entries());
    const auto r = a.reload();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == library_errc::token_file_refused);
    CHECK(r.error().message() == "no token file to read (made from text)");
    CHECK(a.size() == 2);
    REQUIRE(a.reload_text(entry("fresh", "fresh-user - engine")));
    CHECK(a.size() == 1);
    CHECK(id_of(a, "Bearer fresh") == "fresh-user");
    CHECK(id_of(a, "Bearer " + std::string(alice_token)) == std::nullopt);
  }

  TEST_CASE("a moved-from authenticator admits nobody") {
    auto a = make(two_entries());
    const token_authenticator b = std::move(a);
    CHECK(id_of(b, "Bearer " + std::string(alice_token)) == "alice");
    // NOLINTBEGIN(bugprone-use-after-move,clang-analyzer-cplusplus.Move): the documented moved-from state
    CHECK(id_of(a, "Bearer " + std::string(alice_token)) == std::nullopt);
    CHECK(a.revalidate(principal{.id = "alice"}) == credential_verdict::revoked);
    CHECK(a.size() == 0);
    CHECK_FALSE(a.reload().has_value());
    // NOLINTEND(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
  }

  TEST_CASE("token_file_line writes an entry that loads back as the same principal") {
    const auto token = token_authenticator::generate_token();
    REQUIRE(token.has_value());
    const principal who{.id = "carol@example",
                        .tier = "supervised",
                        .kind = principal_kind::human_interactive,
                        .display_name = "Carol  van der Berg",
                        .roles = {"approver", "ops"},
                        .assured = true};
    const auto line = token_authenticator::token_file_line(*token, who);
    REQUIRE(line.has_value());
    CHECK(line->starts_with("sha256:" + token_authenticator::token_digest(*token) + "  carol@example  supervised"));
    CHECK(line->find(*token) == std::string::npos);  // never the token itself

    const auto a = make(*line + "\n");
    const request r = with_authorization("Bearer " + *token);
    const auto got = a.authenticate(r.view());
    REQUIRE(got.has_value());
    CHECK(got->id == who.id);
    CHECK(got->tier == who.tier);
    CHECK(got->kind == who.kind);
    CHECK(got->display_name == who.display_name);
    CHECK(got->roles == who.roles);
    CHECK(got->assured == who.assured);
    CHECK(a.revalidate(who) == credential_verdict::valid);

    const principal minimal{.id = "svc"};
    const auto plain = token_authenticator::token_file_line("tok", minimal);
    REQUIRE(plain.has_value());
    CHECK(*plain == "sha256:" + token_authenticator::token_digest("tok") + "  svc  -  service");
  }

  TEST_CASE("token_file_line refuses what the file could not carry") {
    const principal ok{.id = "svc"};
    CHECK_FALSE(token_authenticator::token_file_line("", ok).has_value());
    CHECK_FALSE(token_authenticator::token_file_line("a b", ok).has_value());
    const auto bad = [](auto mutate) {
      principal p{.id = "svc"};
      mutate(p);
      return token_authenticator::token_file_line("tok", p).has_value();
    };
    CHECK_FALSE(bad([](principal& p) { p.id.clear(); }));
    CHECK_FALSE(bad([](principal& p) { p.id = "two words"; }));
    CHECK_FALSE(bad([](principal& p) { p.id = "tab\tbed"; }));
    CHECK_FALSE(bad([](principal& p) { p.id = "bad\xFF"; }));
    CHECK_FALSE(bad([](principal& p) { p.tier = "admin"; }));
    CHECK_FALSE(bad([](principal& p) { p.kind = static_cast<principal_kind>(42); }));
    CHECK_FALSE(bad([](principal& p) { p.roles = {""}; }));
    CHECK_FALSE(bad([](principal& p) { p.roles = {"a,b"}; }));
    CHECK_FALSE(bad([](principal& p) { p.roles = {"a", "a"}; }));
    CHECK_FALSE(bad([](principal& p) { p.roles = {"a b"}; }));
    CHECK_FALSE(bad([](principal& p) { p.display_name = " padded"; }));
    CHECK_FALSE(bad([](principal& p) { p.display_name = "line\nbreak"; }));
    CHECK(bad([](principal& p) { p.display_name = "Zo\xC3\xAB #1"; }));
  }

  TEST_CASE("to_string of warnings names the line") {
    CHECK(to_string(mcpcore::transport::token_file_warning{0, "careful"}) == "careful");
    CHECK(to_string(mcpcore::transport::token_file_warning{2, "careful"}) == "line 2: careful");
  }

  TEST_CASE("thread safety: authenticate and revalidate run concurrently with reloads (bounded)") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("tokens");
    const std::string table_a = entry(alice_token, "alice operator service");
    const std::string table_b = table_a + entry(bob_token, "svc-bob - service");
    write_file(path, table_a, owner_rw);
    auto loaded = token_authenticator::load(path);
    REQUIRE(loaded.has_value());
    token_authenticator writer = *loaded;
    const token_authenticator reader = writer;

    constexpr int reloads = 200;
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::atomic<long> bob_seen{0};
    const request ra = with_authorization("Bearer " + std::string(alice_token));
    const request rb = with_authorization("Bearer " + std::string(bob_token));
    const principal alice{.id = "alice", .tier = "operator"};

    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          const auto a = reader.authenticate(ra.view());  // present in both tables
          if (!a || a->id != "alice") failures.fetch_add(1);
          if (reader.revalidate(alice) != credential_verdict::valid) failures.fetch_add(1);
          const auto b = reader.authenticate(rb.view());  // present in one table only
          if (b) {
            if (b->id != "svc-bob") failures.fetch_add(1);
            bob_seen.fetch_add(1);
          }
          const std::size_t n = reader.size();
          if (n != 1 && n != 2) failures.fetch_add(1);
        }
      });
    }
    for (int i = 0; i < reloads; ++i) {
      if (i % 2 == 0) {
        REQUIRE(writer.reload_text(table_b));
      } else {
        write_file(path, (i % 4 == 1) ? table_a : table_b, owner_rw);
        REQUIRE(writer.reload());
      }
    }
    stop.store(true);
    for (std::thread& t : readers) t.join();
    CHECK(failures.load() == 0);
    CHECK(reader.size() == 2);  // the last reload (i = 199, i % 4 == 3) installed table_b
    CHECK(id_of(reader, "Bearer " + std::string(bob_token)) == "svc-bob");
  }
}
