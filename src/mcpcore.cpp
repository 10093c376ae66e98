// SPDX-License-Identifier: Apache-2.0
// The compiled library: one translation unit holding every impl/*.ipp.
#include <mcpcore/impl/src.hpp>  // IWYU pragma: keep
