// SPDX-License-Identifier: Apache-2.0
// A shared object that links mcpcore's static core (docs/configuration.md#shared-and-static-libraries).
#ifndef CONSUMER_PLUGIN_HPP
#define CONSUMER_PLUGIN_HPP

/// 0 when a server built inside the shared object answers `ping`.
__attribute__((visibility("default"))) int consumer_plugin_ping();

#endif
