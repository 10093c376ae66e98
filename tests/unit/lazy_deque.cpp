// SPDX-License-Identifier: Apache-2.0
// The queue that allocates on its first element (include/mcpcore/detail/lazy_deque.hpp;
// docs/performance.md#idle-memory).
#include <mcpcore/detail/lazy_deque.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using mcpcore::detail::lazy_deque;

TEST_CASE("performance.md/idle-memory: a lazy deque is an empty range until its first element, then a deque") {
  lazy_deque<std::string> q;
  CHECK(q.empty());
  CHECK(q.size() == 0);
  CHECK_FALSE(q.allocated());
  CHECK(q.begin() == q.end());
  const lazy_deque<std::string>& cq = q;
  CHECK(cq.begin() == cq.end());
  CHECK(std::lower_bound(q.begin(), q.end(), std::string{"b"}) == q.end());
  int visited = 0;
  for (const auto& s : cq) visited += static_cast<int>(s.size());
  CHECK(visited == 0);
  q.clear();  // nothing to clear: still not made
  CHECK_FALSE(q.allocated());

  q.push_back("a");
  q.emplace_back("c");
  CHECK(q.allocated());
  CHECK(q.size() == 2);
  CHECK(q.front() == "a");
  CHECK(q.back() == "c");
  CHECK(*std::lower_bound(q.begin(), q.end(), std::string{"b"}) == "c");
  q.erase(q.begin());
  CHECK(q.size() == 1);
  CHECK(q.front() == "c");
  q.pop_front();
  CHECK(q.empty());
  CHECK(q.allocated());  // emptied, the memory is kept for the next elements
  q.push_back("d");
  q.clear();
  CHECK(q.empty());
  CHECK(q.allocated());
  q.release();
  CHECK_FALSE(q.allocated());
  CHECK(q.begin() == q.end());
  q.push_back("e");
  CHECK(q.size() == 1);
}
