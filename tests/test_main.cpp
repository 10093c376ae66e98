// SPDX-License-Identifier: Apache-2.0
// The doctest main, compiled once and shared by every test executable.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
