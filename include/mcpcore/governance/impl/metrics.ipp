// SPDX-License-Identifier: Apache-2.0
// The metrics registry: series registration and Prometheus text exposition (format 0.0.4).
#ifndef MCPCORE_IMPL_METRICS_IPP
#define MCPCORE_IMPL_METRICS_IPP

#include <mcpcore/governance/metrics.hpp>

#include <mcpcore/wire/json_writer.hpp>  // json::is_valid_utf8

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

enum class metric_type : std::uint8_t { counter, gauge };

// One series: its rendered label block ("" or `{a="x",b="y"}`) and its cell.
struct metric_series {
  std::string labels;
  void* cell;  // std::atomic<std::uint64_t>* or std::atomic<std::int64_t>*, by the family's type
};

struct metric_family {
  metric_type type;
  std::string help;
  std::vector<metric_series> series;                          // registration order
  std::map<std::string, std::size_t, std::less<>> by_labels;  // rendered labels -> index in series
};

constexpr bool metric_name_char(char c, bool first) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

constexpr bool valid_metric_name(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!metric_name_char(s[i], i == 0)) return false;
  }
  return true;
}

constexpr bool valid_label_name(std::string_view s) noexcept {
  if (s.empty() || s.starts_with("__")) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ':' || !metric_name_char(s[i], i == 0)) return false;
  }
  return true;
}

// Prometheus text format escapes: label values escape \ " and LF; help text escapes \ and LF.
MCPCORE_INTERNAL void append_prometheus_escaped(std::string& out, std::string_view s, bool quote) {
  for (const char c : s) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (quote && c == '"') {
      out.append("\\\"");
    } else {
      out.push_back(c);
    }
  }
}

// Renders a label set sorted by name; false when a name is invalid or repeated, or a value is
// not UTF-8.
MCPCORE_INTERNAL bool render_metric_labels(std::string& out, std::span<const metric_label> labels) {
  if (labels.empty()) return true;
  std::vector<metric_label> sorted{labels.begin(), labels.end()};
  // Sorted, so that one label set given in any order renders to one key and one series.
  std::sort(sorted.begin(), sorted.end(),
            [](const metric_label& a, const metric_label& b) { return a.name < b.name; });
  out.push_back('{');
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const metric_label& l = sorted[i];
    if (!valid_label_name(l.name) || !json::is_valid_utf8(l.value)) return false;
    if (i > 0) {
      if (sorted[i - 1].name == l.name) return false;
      out.push_back(',');
    }
    out.append(l.name);
    out.append("=\"");
    append_prometheus_escaped(out, l.value, true);
    out.push_back('"');
  }
  out.push_back('}');
  return true;
}

}  // namespace detail

struct metrics_registry::impl {
  mutable std::mutex mutex;
  std::map<std::string, detail::metric_family, std::less<>> families;  // guarded by mutex
  // A deque, because counter and gauge handles keep raw pointers to their cells for the registry's
  // life: emplace_back never moves the elements already there.
  std::deque<std::atomic<std::uint64_t>> counter_cells;  // guarded by mutex; elements never move
  std::deque<std::atomic<std::int64_t>> gauge_cells;     // guarded by mutex; elements never move
  // Counted with or without the lock (validation runs before it is taken): atomic.
  std::atomic<std::uint64_t> conflicts{0};

  // The cell of series name{labels} of type t, created at 0 when new; null when refused.
  void* find_or_add(const std::string& prefix, std::string_view name, std::string_view help,
                    std::span<const metric_label> labels, detail::metric_type t) {
    std::string full;
    full.reserve(prefix.size() + 1 + name.size());
    if (!prefix.empty()) {
      full.append(prefix);
      full.push_back('_');
    }
    full.append(name);
    std::string rendered;
    if (name.empty() || !detail::valid_metric_name(full) || !json::is_valid_utf8(help) ||
        !detail::render_metric_labels(rendered, labels)) {
      conflicts.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    // The registry lock: taken only at registration and by a scrape; handles never take it
    // (docs/sessions.md#what-never-happens-under-a-lock).
    const std::lock_guard lock{mutex};
    // A name keeps its first type and its first help text; a mismatch gets an inert handle.
    auto it = families.find(full);
    if (it == families.end()) {
      it = families.emplace(std::move(full), detail::metric_family{t, std::string{help}, {}, {}}).first;
    } else if (it->second.type != t) {
      conflicts.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    detail::metric_family& f = it->second;
    if (const auto s = f.by_labels.find(rendered); s != f.by_labels.end()) return f.series[s->second].cell;
    void* cell = nullptr;
    if (t == detail::metric_type::counter) {
      cell = &counter_cells.emplace_back(0);
    } else {
      cell = &gauge_cells.emplace_back(0);
    }
    f.series.push_back({rendered, cell});
    f.by_labels.emplace(std::move(rendered), f.series.size() - 1);
    return cell;
  }
};

MCPCORE_DECL metrics_registry::metrics_registry(std::string prefix)
    : prefix_(std::move(prefix)), impl_(new impl) {}

MCPCORE_DECL metrics_registry::~metrics_registry() { delete impl_; }

MCPCORE_DECL counter metrics_registry::make_counter(std::string_view name, std::string_view help,
                                                    std::span<const metric_label> labels) {
  return counter{static_cast<std::atomic<std::uint64_t>*>(
      impl_->find_or_add(prefix_, name, help, labels, detail::metric_type::counter))};
}

MCPCORE_DECL gauge metrics_registry::make_gauge(std::string_view name, std::string_view help,
                                                std::span<const metric_label> labels) {
  return gauge{static_cast<std::atomic<std::int64_t>*>(
      impl_->find_or_add(prefix_, name, help, labels, detail::metric_type::gauge))};
}

MCPCORE_DECL void metrics_registry::write_prometheus(std::string& out) const {
  // The lock guards the family and series lists; each value is one relaxed load of its cell,
  // taken while writers keep counting.
  const std::lock_guard lock{impl_->mutex};
  char num[24];
  for (const auto& [name, f] : impl_->families) {
    const bool is_counter = f.type == detail::metric_type::counter;
    out.append("# HELP ");
    out.append(name);
    out.push_back(' ');
    detail::append_prometheus_escaped(out, f.help, false);
    out.append("\n# TYPE ");
    out.append(name);
    out.append(is_counter ? " counter\n" : " gauge\n");
    for (const detail::metric_series& s : f.series) {
      out.append(name);
      out.append(s.labels);
      out.push_back(' ');
      const auto r = is_counter
                         ? std::to_chars(num, num + sizeof num,
                                         static_cast<std::atomic<std::uint64_t>*>(s.cell)->load(
                                             std::memory_order_relaxed))
                         : std::to_chars(num, num + sizeof num,
                                         static_cast<std::atomic<std::int64_t>*>(s.cell)->load(
                                             std::memory_order_relaxed));
      out.append(num, r.ptr);
      out.push_back('\n');
    }
  }
}

MCPCORE_DECL std::uint64_t metrics_registry::conflicts() const noexcept {
  return impl_->conflicts.load(std::memory_order_relaxed);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_METRICS_IPP
