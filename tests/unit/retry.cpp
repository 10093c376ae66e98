// SPDX-License-Identifier: Apache-2.0
// Tests of the named retry floors (docs/errors.md#retry-floors-retryhpp).
#include <mcpcore/wire/retry.hpp>

#include <doctest/doctest.h>

#include <type_traits>

using namespace mcpcore;
using std::chrono::milliseconds;

TEST_SUITE("retry") {
  TEST_CASE("each floor has errors.md/retry-floors-retryhpp's value") {
    static_assert(retry::store_fault == milliseconds{5000});
    static_assert(retry::store_fault_short == milliseconds{2000});
    static_assert(retry::provider_warmup == milliseconds{5000});
    static_assert(retry::result_poll == milliseconds{2000});
    static_assert(retry::approval_poll == milliseconds{30000});
    static_assert(retry::stream_cap == milliseconds{5000});
    static_assert(retry::handover == milliseconds{5000});
    static_assert(retry::streamed_post == milliseconds{30000});
    static_assert(retry::approval_store_transient == milliseconds{5000});
    static_assert(retry::dispatch_queue_full == milliseconds{1000});  // mcpcore's own (stdio queue)
    CHECK(true);
  }

  TEST_CASE("floors with equal values are still distinct symbols (errors.md/retry-floors-retryhpp)") {
    static_assert(std::is_same_v<decltype(retry::store_fault), const milliseconds>);
    CHECK(&retry::store_fault != &retry::provider_warmup);
    CHECK(&retry::store_fault != &retry::approval_store_transient);
    CHECK(&retry::stream_cap != &retry::handover);
    CHECK(&retry::approval_poll != &retry::streamed_post);
    CHECK(&retry::store_fault_short != &retry::result_poll);
  }

  TEST_CASE("the streamed-POST floor is a quarter of the 120 s response cap (errors.md/retry-floors-retryhpp rationale)") {
    static_assert(retry::streamed_post * 4 == std::chrono::seconds{120});
    CHECK(true);
  }

  TEST_CASE("Retry-After seconds round up (errors.md/the-errordata-envelope)") {
    static_assert(retry::header_seconds(retry::stream_cap) == 5);
    static_assert(retry::header_seconds(retry::streamed_post) == 30);
    CHECK(retry::header_seconds(milliseconds{1}) == 1);
    CHECK(retry::header_seconds(milliseconds{1000}) == 1);
    CHECK(retry::header_seconds(milliseconds{1001}) == 2);
    CHECK(retry::header_seconds(milliseconds{0}) == 0);
    CHECK(retry::header_seconds(milliseconds{-10}) == 0);
  }
}
