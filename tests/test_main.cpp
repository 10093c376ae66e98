// SPDX-License-Identifier: Apache-2.0
// The doctest main, compiled once and shared by every test executable.
//
// A run that names test cases (`--test-case=` / `-tc=`, as every ctest entry made by
// doctest_discover_tests does) and selects none of them fails: a test whose name the discovery
// split or mangled (a `;` in it, say) must not pass by running nothing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

/// How many test cases the run selected, reported by the listener below.
unsigned& selected_test_cases() {
  static unsigned n = 0;
  return n;
}

struct selection_listener : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions& /*options*/) {}
  void report_query(const doctest::QueryData& /*data*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selected_test_cases() = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData& /*data*/) override {}
  void test_case_reenter(const doctest::TestCaseData& /*data*/) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& /*stats*/) override {}
  void test_case_exception(const doctest::TestCaseException& /*e*/) override {}
  void subcase_start(const doctest::SubcaseSignature& /*signature*/) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& /*data*/) override {}
  void log_message(const doctest::MessageData& /*data*/) override {}
  void test_case_skipped(const doctest::TestCaseData& /*data*/) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("selection", 1, selection_listener);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;  // --help, --list-test-cases and the like
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a{argv[i]};
    filtered = filtered || a.starts_with("--test-case=") || a.starts_with("-tc=");
  }
  if (rc == 0 && filtered && selected_test_cases() == 0) {
    std::fprintf(stderr, "test_main: the --test-case filter selected no test case (a name mangled by discovery?)\n");
    return 1;
  }
  return rc;
}
