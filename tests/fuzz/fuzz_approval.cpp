// SPDX-License-Identifier: Apache-2.0
// Fuzzes the approval surfaces that read hostile input: the machine's reading of tool arguments
// (approval_service::gate, canonical_arguments) and the sans-I/O status endpoint.
//
// Input: the first byte picks the HTTP method, the bytes up to the first '\n' are the request
// target, up to the second '\n' the request body, and the rest is a tools/call `arguments` text.
//
// Invariants:
//  - nothing crashes, leaks or reads out of bounds (ASan/UBSan);
//  - canonical_arguments is a fixed point: its output parses, and canonicalising it again gives
//    the same bytes; it never contains a top-level "approval_id" member;
//  - the gate's verdict for the first call of an argument object without approval_id is a mint
//    (minted) and a second identical call deduplicates to the same id; with an approval_id that
//    is not 32 lowercase hex it is bad_id and the store is unchanged;
//  - the endpoint answers only statuses from its documented set, always with a JSON body, and
//    std::nullopt exactly when `matches` is false.
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/wire/json.hpp>

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

bool documented_status(int s) {
  switch (s) {
    case 200: case 400: case 401: case 403: case 404: case 405: case 409: case 413: case 500: case 503: return true;
    default: return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mcpcore;
  if (size == 0) return 0;
  std::string_view in{reinterpret_cast<const char*>(data), size};
  static constexpr std::string_view methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "get"};
  const std::string_view method = methods[static_cast<unsigned char>(in.front()) % std::size(methods)];
  in.remove_prefix(1);
  const auto cut = [&in]() {
    const auto nl = in.find('\n');
    const std::string_view head = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
    return head;
  };
  const std::string_view target = cut();
  const std::string_view body = cut();
  const std::string_view args_text = in;

  memory_approval_store store;
  approval_service service{store};
  const principal human{.id = "carol", .kind = principal_kind::human_interactive, .assured = true};
  const principal agent{.id = "agent", .tier = "supervised"};

  // The machine's reading of arguments.
  json::document doc;
  if (auto args = doc.parse(args_text); args && args->is_object()) {
    const std::string canon = canonical_arguments(*args);
    json::document again;
    auto reparsed = again.parse(canon);
    MCPCORE_FUZZ_CHECK(reparsed.has_value());
    MCPCORE_FUZZ_CHECK(canonical_arguments(*reparsed) == canon);
    MCPCORE_FUZZ_CHECK(!(*reparsed)["approval_id"].exists());

    const auto aid = (*args)["approval_id"];
    const auto first = service.gate("t", agent, *args);
    if (!aid.exists()) {
      MCPCORE_FUZZ_CHECK(first.verdict == approval_verdict::minted);
      const auto second = service.gate("t", agent, *reparsed);  // same canonical arguments
      MCPCORE_FUZZ_CHECK(second.verdict == approval_verdict::deduped);
      MCPCORE_FUZZ_CHECK(second.approval_id == first.approval_id);
    } else if (!aid.is_string() || !is_approval_id(aid.as_string())) {
      MCPCORE_FUZZ_CHECK(first.verdict == approval_verdict::bad_id);
      MCPCORE_FUZZ_CHECK(store.size() == 0);
    } else {
      MCPCORE_FUZZ_CHECK(first.verdict == approval_verdict::mismatch);  // the store is empty
    }
  }

  // The status endpoint, with a real ticket in the store so that some ids resolve.
  const approval_mint_request known{"0123456789abcdef0123456789abcdef", "mcp.t", "mcp", "agent", R"({"tag":"a"})",
                                    service.now(), service.options().ticket_lifetime, 25, 1000};
  MCPCORE_FUZZ_CHECK(store.mint(known).has_value());
  const approval_endpoint endpoint{service, allow_all_authorizer{}};
  const http_request_view req{method, target, body};
  for (const principal* who : {&human, &agent, static_cast<const principal*>(nullptr)}) {
    const auto r = endpoint.handle(req, who);
    MCPCORE_FUZZ_CHECK(r.has_value() == endpoint.matches(target));
    if (!r) continue;
    MCPCORE_FUZZ_CHECK(documented_status(r->status));
    json::document answer;
    MCPCORE_FUZZ_CHECK(answer.parse(r->body).has_value());
  }
  return 0;
}
