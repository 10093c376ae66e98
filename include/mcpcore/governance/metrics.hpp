// SPDX-License-Identifier: Apache-2.0
// The metrics_sink plug-in point: counter and gauge handles, the null sink, a Prometheus registry.
#ifndef MCPCORE_METRICS_HPP
#define MCPCORE_METRICS_HPP

#include <mcpcore/detail/config.hpp>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// A handle to one counter series: a monotonically increasing 64-bit count.
///
/// A default-constructed handle is inert: `inc` does nothing and `value` is 0. A live handle points
/// at a cell owned by a metrics sink and is valid while that sink lives. Copies share the cell.
///
/// @par Thread safety
/// Lock-free: `inc` and `value` may be called concurrently from any thread (relaxed atomics; a
/// reader sees every increment eventually, in no particular order with other memory). The count
/// wraps modulo 2^64.
class counter {
 public:
  /// An inert handle.
  constexpr counter() noexcept = default;
  /// A handle on `cell` (null gives an inert handle).
  explicit constexpr counter(std::atomic<std::uint64_t>* cell) noexcept : cell_(cell) {}

  /// Adds `n`.
  void inc(std::uint64_t n = 1) const noexcept {
    if (cell_ != nullptr) cell_->fetch_add(n, std::memory_order_relaxed);
  }
  /// The current count; 0 when inert.
  [[nodiscard]] std::uint64_t value() const noexcept {
    return cell_ != nullptr ? cell_->load(std::memory_order_relaxed) : 0;
  }
  /// Whether this handle counts nothing.
  [[nodiscard]] bool inert() const noexcept { return cell_ == nullptr; }

 private:
  std::atomic<std::uint64_t>* cell_ = nullptr;
};

/// A handle to one gauge series: a signed 64-bit level that goes up and down.
///
/// A default-constructed handle is inert: `set` and `add` do nothing and `value` is 0. A live
/// handle points at a cell owned by a metrics sink and is valid while that sink lives.
///
/// @par Thread safety
/// Lock-free, as `counter`. `add` wraps modulo 2^64 (two's complement).
class gauge {
 public:
  /// An inert handle.
  constexpr gauge() noexcept = default;
  /// A handle on `cell` (null gives an inert handle).
  explicit constexpr gauge(std::atomic<std::int64_t>* cell) noexcept : cell_(cell) {}

  /// Sets the level to `v`.
  void set(std::int64_t v) const noexcept {
    if (cell_ != nullptr) cell_->store(v, std::memory_order_relaxed);
  }
  /// Adds `d` (negative to decrease).
  void add(std::int64_t d) const noexcept {
    if (cell_ != nullptr) cell_->fetch_add(d, std::memory_order_relaxed);
  }
  /// The current level; 0 when inert.
  [[nodiscard]] std::int64_t value() const noexcept {
    return cell_ != nullptr ? cell_->load(std::memory_order_relaxed) : 0;
  }
  /// Whether this handle measures nothing.
  [[nodiscard]] bool inert() const noexcept { return cell_ == nullptr; }

 private:
  std::atomic<std::int64_t>* cell_ = nullptr;
};

/// One label of a series, e.g. `{"reason", "global_stream_cap"}`. Views: valid during the call.
///
/// Label values are closed, static literals chosen by the code that registers the series, never
/// text derived from a request (docs/metrics.md#names-and-registration).
struct metric_label {
  std::string_view name{};   ///< [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"
  std::string_view value{};  ///< any UTF-8
};

/// Where metrics go (docs/plugins.md `metrics_sink`; docs/metrics.md#names-and-registration).
///
/// `m.make_counter(name, help, labels)` and `m.make_gauge(name, help, labels)` register one series
/// and return its handle. `name` is the metric name without any namespace prefix (e.g.
/// "mcp_tool_args_invalid_total"); the sink decides the prefix.
///
/// Semantic requirements (not checked by the compiler):
/// 1. Called at build time for every series the server will touch: registering a series
///    pre-seeds it at 0, so closed label sets are visible to `absent()`/`rate()` alerts before
///    the first event (docs/metrics.md#names-and-registration).
/// 2. The returned handle stays valid for the sink's lifetime; the sink must outlive the server.
/// 3. The same name and label set (in any label order) return a handle on the same cell.
/// 4. Thread-safe: registration may happen concurrently with itself, with handle updates and
///    with exposition.
/// 5. A sink that refuses a series (bad name, type clash) returns an inert handle rather than
///    throwing or failing the caller.
///
/// @see null_metrics, metrics_registry, docs/plugins.md
template <class M>
concept metrics_sink = requires(M& m, std::string_view name, std::string_view help,
                                std::span<const metric_label> labels) {
  // Registers (or finds) a counter series and returns its handle.
  { m.make_counter(name, help, labels) } -> std::same_as<counter>;
  // Registers (or finds) a gauge series and returns its handle.
  { m.make_gauge(name, help, labels) } -> std::same_as<gauge>;
};

/// Records nothing: every handle is inert. Stateless; thread-safe.
struct null_metrics {
  /// An inert counter.
  counter make_counter(std::string_view /*name*/, std::string_view /*help*/,
                       std::span<const metric_label> /*labels*/ = {}) noexcept {
    return {};
  }
  /// An inert gauge.
  gauge make_gauge(std::string_view /*name*/, std::string_view /*help*/,
                   std::span<const metric_label> /*labels*/ = {}) noexcept {
    return {};
  }
};

/// The `Content-Type` of `metrics_registry::write_prometheus` output.
inline constexpr std::string_view prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// The built-in metrics sink, with Prometheus text exposition (format 0.0.4).
///
/// Series are named `<prefix>_<name>` (just `<name>` when the prefix is empty). The default prefix
/// "mcpcore" gives `mcpcore_mcp_tool_args_invalid_total`; "yuzu" gives Yuzu's names exactly
/// (`yuzu_mcp_tool_args_invalid_total`, docs/metrics.md#names-and-registration).
///
/// Registration rules (a refused registration returns an inert handle and increments
/// `conflicts()`; it never throws except `std::bad_alloc`):
/// - the full metric name must match `[a-zA-Z_:][a-zA-Z0-9_:]*`;
/// - label names must match `[a-zA-Z_][a-zA-Z0-9_]*`, must not start with `__` (reserved by
///   Prometheus) and must not repeat within one series; label values and help text must be
///   valid UTF-8;
/// - a name is one family of one type: registering it again with the other type is refused;
/// - the first help text of a family is kept; later registrations with another help are not
///   refused.
///
/// Exposition is deterministic: families sorted by full name (bytewise), each with `# HELP` and
/// `# TYPE` lines, then its series in registration order, each series' labels sorted by name.
/// Label values escape `\`, `"` and newline; help text escapes `\` and newline.
///
/// Cells never move: handles stay valid for the registry's lifetime, which is why the registry
/// can be neither copied nor moved.
///
/// @par Thread safety
/// Every member may be called concurrently. Registration and exposition share one mutex; handle
/// updates are lock-free and never wait for a scrape.
class metrics_registry {
 public:
  /// A registry naming its series `<prefix>_<name>`.
  MCPCORE_DECL explicit metrics_registry(std::string prefix = "mcpcore");
  /// Frees every cell: handles from this registry must no longer be used.
  MCPCORE_DECL ~metrics_registry();
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

  /// Registers (or finds) the counter series `name{labels}`, at 0 when new.
  MCPCORE_DECL counter make_counter(std::string_view name, std::string_view help,
                                                  std::span<const metric_label> labels = {});
  /// Registers (or finds) the gauge series `name{labels}`, at 0 when new.
  MCPCORE_DECL gauge make_gauge(std::string_view name, std::string_view help,
                                              std::span<const metric_label> labels = {});

  /// Appends the exposition of every registered series to `out`.
  MCPCORE_DECL void write_prometheus(std::string& out) const;

  /// How many registrations were refused.
  [[nodiscard]] MCPCORE_DECL std::uint64_t conflicts() const noexcept;

  /// The prefix given at construction.
  [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }

 private:
  struct impl;
  std::string prefix_;
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/metrics.ipp>
#endif

#endif  // MCPCORE_METRICS_HPP
