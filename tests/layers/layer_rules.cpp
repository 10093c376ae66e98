// SPDX-License-Identifier: Apache-2.0
// The layer table, the include scanner, the check and the picture (see layer_rules.hpp).
#include "layer_rules.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <ios>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace layer_check {
namespace {

// --- text helpers -----------------------------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    if (end == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string where(std::string_view file, std::size_t line) {
  return std::string(file) + ":" + std::to_string(line);
}

// --- the table --------------------------------------------------------------------------------

// The cells of a Markdown table row; a '|' inside a code span does not split.
std::vector<std::string_view> cells(std::string_view row) {
  row = trim(row);
  if (!row.empty() && row.front() == '|') row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  std::vector<std::string_view> out;
  bool code = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '`') code = !code;
    if (row[i] == '|' && !code) {
      out.push_back(trim(row.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(row.substr(start)));
  return out;
}

// The code spans of a cell: the machine-readable part (prose around them is for people).
std::vector<std::string> code_spans(std::string_view cell) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const auto open = cell.find('`', pos);
    if (open == std::string_view::npos) break;
    const auto close = cell.find('`', open + 1);
    if (close == std::string_view::npos) break;
    out.emplace_back(trim(cell.substr(open + 1, close - open - 1)));
    pos = close + 1;
  }
  return out;
}

bool is_separator_row(const std::vector<std::string_view>& row) {
  return std::all_of(row.begin(), row.end(), [](std::string_view c) {
    return !c.empty() && c.find_first_not_of("-: ") == std::string_view::npos;
  });
}

// The name in a layer cell, without Markdown emphasis or code marks.
std::string layer_name(std::string_view cell) {
  std::string out;
  for (const char c : cell) {
    if (c != '*' && c != '`') out += c;
  }
  return std::string(trim(out));
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_';
  });
}

struct columns {
  int layer = -1, folders = -1, headers = -1, may_include = -1, purpose = -1;
};

columns find_columns(const std::vector<std::string_view>& header) {
  columns c;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const auto h = lower(trim(header[i]));
    const int idx = static_cast<int>(i);
    if (h == "layer") c.layer = idx;
    else if (h == "folders") c.folders = idx;
    else if (h == "headers") c.headers = idx;
    else if (h == "may include") c.may_include = idx;
    else if (h.find("for") != std::string::npos) c.purpose = idx;
  }
  return c;
}

// The rows of the section's first table, with their line numbers; empty when there is none.
std::vector<std::pair<std::size_t, std::string_view>> section_table(std::string_view markdown,
                                                                    std::string_view doc,
                                                                    std::vector<std::string>& errors) {
  const auto lines = split_lines(markdown);
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]) != "## Layers") ++i;
  if (i == lines.size()) {
    errors.push_back(std::string(doc) + ": no \"## Layers\" section");
    return {};
  }
  std::vector<std::pair<std::size_t, std::string_view>> rows;
  bool fenced = false;
  for (++i; i < lines.size(); ++i) {
    const auto line = trim(lines[i]);
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced) continue;
    if (line.starts_with("# ") || line.starts_with("## ")) break;
    if (line.starts_with("|")) {
      rows.emplace_back(i + 1, line);
    } else if (!rows.empty()) {
      break;
    }
  }
  if (rows.size() < 3) errors.push_back(std::string(doc) + ": the \"## Layers\" section has no table of layers");
  return rows;
}

// Reads the rows into layers (no cross-row checks yet).
std::vector<layer> read_rows(const std::vector<std::pair<std::size_t, std::string_view>>& rows,
                             std::string_view doc, std::vector<std::string>& errors) {
  const auto header = cells(rows[0].second);
  const columns col = find_columns(header);
  for (const auto& [index, name] : {std::pair{col.layer, "layer"}, std::pair{col.folders, "folders"},
                                    std::pair{col.headers, "headers"}, std::pair{col.may_include, "may include"}}) {
    if (index < 0) errors.push_back(where(doc, rows[0].first) + ": the layers table has no \"" + name + "\" column");
  }
  if (!is_separator_row(cells(rows[1].second))) {
    errors.push_back(where(doc, rows[1].first) + ": the layers table has no |---| row under its header");
  }
  if (!errors.empty()) return {};
  std::vector<layer> out;
  for (std::size_t r = 2; r < rows.size(); ++r) {
    const auto row = cells(rows[r].second);
    const auto at = where(doc, rows[r].first);
    if (row.size() != header.size()) {
      errors.push_back(at + ": the row has " + std::to_string(row.size()) + " cells, the header " +
                       std::to_string(header.size()));
      continue;
    }
    layer l;
    l.line = rows[r].first;
    l.name = layer_name(row[static_cast<std::size_t>(col.layer)]);
    if (!valid_name(l.name)) {
      errors.push_back(at + ": \"" + l.name + "\" is not a layer name (lower case, digits, _)");
      continue;
    }
    l.paths = code_spans(row[static_cast<std::size_t>(col.folders)]);
    l.headers = code_spans(row[static_cast<std::size_t>(col.headers)]);
    l.may_include = code_spans(row[static_cast<std::size_t>(col.may_include)]);
    if (col.purpose >= 0) l.purpose = std::string(row[static_cast<std::size_t>(col.purpose)]);
    if (l.paths.empty()) errors.push_back(at + ": layer " + l.name + " has no folders");
    for (const auto& p : l.paths) {
      if (!(p.starts_with("include/") || p.starts_with("src/")) || p.find("..") != std::string::npos) {
        errors.push_back(at + ": layer " + l.name + ": \"" + p + "\" is not a path under include/ or src/");
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

// Resolves `may include` into table.allowed and checks the order and the closure.
void resolve(layer_table& t, std::string_view doc, std::vector<std::string>& errors) {
  const std::size_t n = t.layers.size();
  t.allowed.assign(n, std::vector<bool>(n, false));
  std::map<std::string, std::string> claimed;  // path -> layer
  for (std::size_t a = 0; a < n; ++a) {
    const auto& l = t.layers[a];
    const auto at = where(doc, l.line);
    t.allowed[a][a] = true;
    for (std::size_t b = 0; b < a; ++b) {
      if (t.layers[b].name == l.name) errors.push_back(at + ": layer " + l.name + " appears twice");
    }
    for (const auto& p : l.paths) {
      const auto [it, fresh] = claimed.emplace(p, l.name);
      if (!fresh) errors.push_back(at + ": " + p + " is claimed by " + it->second + " and " + l.name);
    }
    for (const auto& name : l.may_include) {
      if (name == "*") {
        for (std::size_t b = 0; b < a; ++b) t.allowed[a][b] = true;
        continue;
      }
      const int b = t.index_of(name);
      if (b < 0) {
        errors.push_back(at + ": layer " + l.name + " may include \"" + name + "\", which is not a layer");
      } else if (static_cast<std::size_t>(b) > a) {
        errors.push_back(at + ": layer " + l.name + " may include " + name +
                         ", which comes after it (the rows go bottom to top: that would allow a cycle)");
      } else {
        t.allowed[a][static_cast<std::size_t>(b)] = true;
      }
    }
  }
  // A layer that may include b includes, through b's headers, whatever b includes: say so.
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || !t.allowed[a][b]) continue;
      for (std::size_t c = 0; c < n; ++c) {
        if (t.allowed[b][c] && !t.allowed[a][c]) {
          errors.push_back(where(doc, t.layers[a].line) + ": layer " + t.layers[a].name + " may include " +
                           t.layers[b].name + ", which may include " + t.layers[c].name + ": list " +
                           t.layers[c].name + " for " + t.layers[a].name + " too");
        }
      }
    }
  }
}

// --- the scanner ------------------------------------------------------------------------------

// Whether the '\'' at s[i] is a digit separator (1'000) rather than a character literal.
bool digit_separator(std::string_view s, std::size_t i) {
  std::size_t b = i;
  while (b > 0 && (is_ident(s[b - 1]) || s[b - 1] == '.' || s[b - 1] == '\'')) --b;
  return b < i && is_digit(s[b]);
}

// The prefix of a raw string whose '"' is at s[i] (R, u8R, LR, uR, UR), if it is one.
bool raw_string_prefix(std::string_view s, std::size_t i) {
  std::size_t b = i;
  while (b > 0 && is_ident(s[b - 1])) --b;
  const auto prefix = s.substr(b, i - b);
  return prefix == "R" || prefix == "u8R" || prefix == "LR" || prefix == "uR" || prefix == "UR";
}

// `source` with comments and the bodies of raw strings blanked (newlines kept), so that a
// directive found at the start of a line is a real one. Ordinary literals are kept (an include
// may be spelled "mcpcore/...") but skipped over, so "/*" inside one opens no comment.
std::string blank_comments(std::string_view s) {
  std::string out(s);
  const auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (c == '/' && next == '/') {
      auto end = s.find('\n', i);
      if (end == std::string_view::npos) end = s.size();
      blank(i, end);
      i = end;
    } else if (c == '/' && next == '*') {
      auto end = s.find("*/", i + 2);
      end = end == std::string_view::npos ? s.size() : end + 2;
      blank(i, end);
      i = end;
    } else if (c == '"' && raw_string_prefix(s, i)) {
      const auto open = s.find('(', i);
      if (open == std::string_view::npos) break;
      const std::string close = ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
      auto end = s.find(close, open);
      end = end == std::string_view::npos ? s.size() : end + close.size();
      blank(i, end);
      i = end;
    } else if (c == '"' || (c == '\'' && !digit_separator(s, i))) {
      std::size_t k = i + 1;
      while (k < s.size() && s[k] != c && s[k] != '\n') k += s[k] == '\\' ? 2U : 1U;
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// --- the picture ------------------------------------------------------------------------------

std::string xml_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The words of a box's second line: the layer's paths, shortened.
std::vector<std::string> path_words(const layer& l) {
  std::vector<std::string> out;
  for (auto p : l.paths) {
    if (p.starts_with("include/mcpcore/")) p = p.substr(16);
    out.push_back(p);
  }
  return out;
}

// Words wrapped into lines of at most `width` characters, separated by ", ".
std::vector<std::string> wrap(const std::vector<std::string>& words, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (const auto& w : words) {
    if (!line.empty() && line.size() + 2 + w.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + w;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::optional<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << v;
  auto s = o.str();
  if (s.ends_with(".0")) s.resize(s.size() - 2);
  return s;
}

}  // namespace

// --- layer_table ------------------------------------------------------------------------------

int layer_table::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int layer_table::layer_of(std::string_view path) const {
  int best = -1;
  std::size_t best_length = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    for (const auto& p : layers[i].paths) {
      const bool folder = p.ends_with('/');
      const bool match = folder ? path.starts_with(p) : path == p;
      if (match && p.size() > best_length) {
        best = static_cast<int>(i);
        best_length = p.size();
      }
    }
  }
  return best;
}

parsed_table parse_table(std::string_view markdown, std::string_view doc) {
  parsed_table out;
  const auto rows = section_table(markdown, doc, out.errors);
  if (!out.errors.empty()) return out;
  auto layers = read_rows(rows, doc, out.errors);
  if (out.errors.empty() && layers.empty()) out.errors.push_back(std::string(doc) + ": the layers table has no rows");
  if (!out.errors.empty()) return out;
  out.table.layers = std::move(layers);
  resolve(out.table, doc, out.errors);
  if (!out.errors.empty()) out.table = {};
  return out;
}

std::vector<include_directive> mcpcore_includes(std::string_view source) {
  std::vector<include_directive> out;
  const std::string code = blank_comments(source);
  const auto lines = split_lines(code);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    auto l = trim(lines[n]);
    if (!l.starts_with('#')) continue;
    l = trim(l.substr(1));
    if (!l.starts_with("include")) continue;
    l = trim(l.substr(7));
    if (l.size() < 2 || (l[0] != '<' && l[0] != '"')) continue;
    const char close = l[0] == '<' ? '>' : '"';
    const auto end = l.find(close, 1);
    if (end == std::string_view::npos) continue;
    const auto target = l.substr(1, end - 1);
    const bool relative = !target.starts_with("mcpcore/");
    if (relative && close == '>') continue;
    include_directive d;
    d.line = n + 1;
    d.target = std::string(target);
    d.text = "#include " + std::string(l.substr(0, end + 1));
    d.relative = relative;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<source_file> read_tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::vector<source_file> out;
  for (const char* top : {"include", "src"}) {
    const auto dir = root / top;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      source_file f;
      f.path = entry.path().lexically_relative(root).generic_string();
      const auto ext = entry.path().extension().string();
      if (ext == ".hpp" || ext == ".ipp" || ext == ".cpp" || ext == ".h" || ext == ".cc") {
        f.text = read_file(entry.path()).value_or("");
      }
      out.push_back(std::move(f));
    }
  }
  std::sort(out.begin(), out.end(), [](const source_file& a, const source_file& b) { return a.path < b.path; });
  return out;
}

namespace {

// edges[a][b]: the first line by which layer a includes layer b (a != b), or empty.
using include_edges = std::vector<std::vector<std::string>>;

// Every include of `files` against the table; fills `edges`.
void check_includes(const layer_table& t, const std::vector<source_file>& files, const std::set<std::string>& paths,
                    std::string_view doc, include_edges& edges, std::vector<std::string>& problems) {
  for (const auto& f : files) {
    const int from = t.layer_of(f.path);
    if (from < 0) {
      problems.push_back(f.path + ": maps to no layer (give its folder a layer in " + std::string(doc) + ")");
      continue;
    }
    const auto a = static_cast<std::size_t>(from);
    const auto& name = t.layers[a].name;
    for (const auto& d : mcpcore_includes(f.text)) {
      std::string target = "include/" + d.target;
      if (d.relative) {
        target = (std::filesystem::path(f.path).parent_path() / d.target).lexically_normal().generic_string();
        if (!paths.contains(target)) continue;  // not a file of the tree: the compiler's business
      }
      const int to = t.layer_of(target);
      const auto at = where(f.path, d.line);
      if (to < 0) {
        problems.push_back(at + ": " + name + " includes a file of no layer: " + d.text);
        continue;
      }
      const auto b = static_cast<std::size_t>(to);
      if (!t.allowed[a][b]) problems.push_back(at + ": " + name + " includes " + t.layers[b].name + ": " + d.text);
      if (a != b && edges[a][b].empty()) edges[a][b] = at;
    }
  }
}

// The headers column must name exactly the public headers (include/mcpcore/**/*.hpp outside
// impl/), each in the row of its layer.
void check_headers(const layer_table& t, const std::set<std::string>& paths, std::string_view doc,
                   std::vector<std::string>& problems) {
  std::set<std::string> listed;
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    const auto& l = t.layers[i];
    for (const auto& h : l.headers) {
      const auto path = "include/mcpcore/" + h;
      listed.insert(path);
      const int owner = t.layer_of(path);
      const auto at = where(doc, l.line) + ": layer " + l.name + " lists header " + h;
      if (!paths.contains(path)) {
        problems.push_back(at + ", which does not exist");
      } else if (owner != static_cast<int>(i)) {
        problems.push_back(at + ", which is in " +
                           (owner < 0 ? std::string("no layer") : t.layers[static_cast<std::size_t>(owner)].name));
      }
    }
  }
  for (const auto& p : paths) {
    const int owner = t.layer_of(p);
    if (p.starts_with("include/mcpcore/") && p.ends_with(".hpp") && p.find("/impl/") == std::string::npos &&
        !listed.contains(p) && owner >= 0) {
      problems.push_back(p + ": a public header the layers table in " + std::string(doc) + " does not list (add " +
                         p.substr(16) + " to " + t.layers[static_cast<std::size_t>(owner)].name + ")");
    }
  }
}

// One line per cycle among the layers in `edges`, naming the layers and the include lines that
// close it. The table's order already forbids any cycle, so each is also reported as a forbidden
// include; it is named as a cycle too, since that is what must be broken.
void find_cycles(const layer_table& t, const include_edges& edges, std::vector<std::string>& problems) {
  const std::size_t n = t.layers.size();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) reach[a][b] = !edges[a][b].empty();
  }
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = 0; b < n; ++b) {
        if (reach[a][k] && reach[k][b]) reach[a][b] = true;
      }
    }
  }
  std::vector<bool> reported(n, false);
  for (std::size_t a = 0; a < n; ++a) {
    if (!reach[a][a] || reported[a]) continue;
    // The shortest way back to a, breadth first, over layers that can reach a again.
    std::vector<std::size_t> parent(n, n);
    std::vector<std::size_t> queue{a};
    std::size_t last = a;
    for (std::size_t q = 0; q < queue.size() && last == a; ++q) {
      const auto u = queue[q];
      if (u != a && !edges[u][a].empty()) {
        last = u;
        break;
      }
      for (std::size_t v = 0; v < n; ++v) {
        if (v != a && parent[v] == n && !edges[u][v].empty() && reach[v][a]) {
          parent[v] = u;
          queue.push_back(v);
        }
      }
    }
    std::vector<std::size_t> path{a};
    for (auto v = last; v != a; v = parent[v]) path.insert(path.begin() + 1, v);
    std::string names;
    std::string witnesses;
    for (std::size_t k = 0; k < path.size(); ++k) {
      const auto u = path[k];
      reported[u] = true;
      names += t.layers[u].name + " -> ";
      witnesses += (k == 0 ? "" : ", ") + edges[u][k + 1 < path.size() ? path[k + 1] : a];
    }
    problems.push_back("include cycle between layers: " + names + t.layers[a].name + " (" + witnesses + ")");
  }
}

}  // namespace

std::vector<std::string> check(const layer_table& t, const std::vector<source_file>& files, std::string_view doc) {
  std::vector<std::string> problems;
  std::set<std::string> paths;
  for (const auto& f : files) paths.insert(f.path);
  include_edges edges(t.layers.size(), std::vector<std::string>(t.layers.size()));
  check_includes(t, files, paths, doc, edges, problems);
  check_headers(t, paths, doc, problems);
  find_cycles(t, edges, problems);
  return problems;
}

namespace {

// The picture's geometry, in SVG user units (pixels).
constexpr double svg_width = 760;
constexpr double svg_margin = 20;
constexpr double box_height = 54;  // at least: a box grows with its wrapped path lines
constexpr double row_gap = 36;
constexpr double column_gap = 40;
constexpr double char_width = 6.7;  // of 11px monospace, for wrapping
constexpr std::array<const char*, 8> fills{"#ececec", "#dbe9f6", "#e2f0d9", "#fbe5cd",
                                           "#f7dbe3", "#e5ddf3", "#f8f0c4", "#ffffff"};

struct box {
  double x = 0, y = 0, w = 0, h = 0;
  std::vector<std::string> lines;  // the paths, wrapped
};

struct drawing {
  std::vector<box> boxes;  // by layer
  double legend_y = 0;
  double height = 0;
};

// The allowed includes that do not follow from two others: the arrows drawn.
std::vector<std::pair<std::size_t, std::size_t>> arrows_of(const layer_table& t) {
  const std::size_t n = t.layers.size();
  std::vector<std::pair<std::size_t, std::size_t>> arrows;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || !t.allowed[a][b]) continue;
      bool implied = false;
      for (std::size_t k = 0; k < n && !implied; ++k) {
        implied = k != a && k != b && t.allowed[a][k] && t.allowed[k][b];
      }
      if (!implied) arrows.emplace_back(a, b);
    }
  }
  return arrows;
}

// One row of boxes per height (one above the highest layer a layer may include), the top row
// first; the layers of one height side by side, in table order.
drawing lay_out(const layer_table& t) {
  const std::size_t n = t.layers.size();
  std::vector<std::size_t> level(n, 0);
  std::size_t top = 0;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (t.allowed[a][b]) level[a] = std::max(level[a], level[b] + 1);
    }
    top = std::max(top, level[a]);
  }
  drawing d;
  d.boxes.resize(n);
  double y = svg_margin;
  for (std::size_t lv = top + 1; lv-- > 0;) {
    std::vector<std::size_t> row;
    for (std::size_t a = 0; a < n; ++a) {
      if (level[a] == lv) row.push_back(a);
    }
    if (row.empty()) continue;
    const auto count = static_cast<double>(row.size());
    const double w = (svg_width - 2 * svg_margin - (count - 1) * column_gap) / count;
    double h = box_height;
    for (const auto a : row) {
      d.boxes[a].lines = wrap(path_words(t.layers[a]), static_cast<std::size_t>((w - 20) / char_width));
      h = std::max(h, 36 + 14 * static_cast<double>(d.boxes[a].lines.size()));
    }
    for (std::size_t k = 0; k < row.size(); ++k) {
      auto& b = d.boxes[row[k]];
      b.x = svg_margin + static_cast<double>(k) * (w + column_gap);
      b.y = y;
      b.w = w;
      b.h = h;
    }
    y += h + row_gap;
  }
  d.legend_y = y - row_gap + 28;
  d.height = d.legend_y + 16;
  return d;
}

// The arrows, from the bottom edge of the including layer's box to the top edge of the included
// one's, spread along each edge.
void write_arrows(std::ostream& o, const layer_table& t, const drawing& d) {
  const auto arrows = arrows_of(t);
  const std::size_t n = t.layers.size();
  std::vector<std::size_t> out_count(n, 0);
  std::vector<std::size_t> in_count(n, 0);
  for (const auto& [a, b] : arrows) {
    ++out_count[a];
    ++in_count[b];
  }
  std::vector<std::size_t> out_seen(n, 0);
  std::vector<std::size_t> in_seen(n, 0);
  for (const auto& [a, b] : arrows) {
    const auto& from = d.boxes[a];
    const auto& to = d.boxes[b];
    const double x1 = from.x + from.w * static_cast<double>(++out_seen[a]) / static_cast<double>(out_count[a] + 1);
    const double x2 = to.x + to.w * static_cast<double>(++in_seen[b]) / static_cast<double>(in_count[b] + 1);
    o << "  <line x1=\"" << num(x1) << "\" y1=\"" << num(from.y + from.h) << "\" x2=\"" << num(x2) << "\" y2=\""
      << num(to.y - 1) << "\" stroke=\"#333333\" stroke-width=\"1.5\" marker-end=\"url(#arrow)\">"
      << "<title>" << xml_escape(t.layers[a].name) << " may include " << xml_escape(t.layers[b].name)
      << "</title></line>\n";
  }
}

void write_boxes(std::ostream& o, const layer_table& t, const drawing& d) {
  for (std::size_t a = 0; a < t.layers.size(); ++a) {
    const auto& b = d.boxes[a];
    const double cx = b.x + b.w / 2;
    o << "  <g>\n"
      << "    <title>" << xml_escape(t.layers[a].name) << "</title>\n"
      << "    <rect x=\"" << num(b.x) << "\" y=\"" << num(b.y) << "\" width=\"" << num(b.w) << "\" height=\""
      << num(b.h) << "\" rx=\"6\" fill=\"" << fills[a % fills.size()] << "\" stroke=\"#444444\"/>\n"
      << "    <text x=\"" << num(cx) << "\" y=\"" << num(b.y + 22) << "\" text-anchor=\"middle\" font-size=\"15\""
      << " font-weight=\"bold\" fill=\"#111111\">" << xml_escape(t.layers[a].name) << "</text>\n";
    for (std::size_t k = 0; k < b.lines.size(); ++k) {
      o << "    <text x=\"" << num(cx) << "\" y=\"" << num(b.y + 40 + 14 * static_cast<double>(k))
        << "\" text-anchor=\"middle\" font-size=\"11\" font-family=\"monospace\" fill=\"#333333\">"
        << xml_escape(b.lines[k]) << "</text>\n";
    }
    o << "  </g>\n";
  }
}

}  // namespace

std::string render_svg(const layer_table& t) {
  const auto d = lay_out(t);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    // (No double hyphen may appear in an XML comment, hence no option name here.)
    << "<!-- Drawn by tests/layers/layer_check from the layers table in docs/architecture.md;"
       " redraw it rather than edit it. -->\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(svg_width) << "\" height=\"" << num(d.height)
    << "\" viewBox=\"0 0 " << num(svg_width) << ' ' << num(d.height) << "\" font-family=\"sans-serif\">\n"
    << "  <defs>\n"
    << "    <marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\""
       " orient=\"auto-start-reverse\">\n"
    << "      <path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#333333\"/>\n"
    << "    </marker>\n"
    << "  </defs>\n"
    << "  <rect x=\"0\" y=\"0\" width=\"" << num(svg_width) << "\" height=\"" << num(d.height)
    << "\" fill=\"#ffffff\"/>\n";
  write_arrows(o, t, d);  // first, so that the boxes are drawn over their ends
  write_boxes(o, t, d);
  o << "  <text x=\"" << num(svg_width / 2) << "\" y=\"" << num(d.legend_y)
    << "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333333\">An arrow reads \"may include\". A layer may"
       " include itself and every layer its arrows reach, and nothing else.</text>\n"
    << "</svg>\n";
  return o.str();
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::filesystem::path root = ".";
  std::string doc = "docs/architecture.md";
  std::string write_svg;
  std::string check_svg;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--root" && has_value) {
      root = args[++i];
    } else if (args[i] == "--doc" && has_value) {
      doc = args[++i];
    } else if (args[i] == "--write-svg" && has_value) {
      write_svg = args[++i];
    } else if (args[i] == "--check-svg" && has_value) {
      check_svg = args[++i];
    } else {
      err << "usage: layer_check [--root DIR] [--doc FILE] [--write-svg FILE | --check-svg FILE]\n";
      return 2;
    }
  }
  const auto markdown = read_file(root / doc);
  if (!markdown) {
    err << "layer_check: cannot read " << (root / doc).string() << "\n";
    return 1;
  }
  const auto parsed = parse_table(*markdown, doc);
  if (!parsed.errors.empty()) {
    for (const auto& e : parsed.errors) out << e << "\n";
    out << "layer_check: the layers table in " << doc << " is malformed\n";
    return 1;
  }
  if (!write_svg.empty()) {
    std::ofstream file(root / write_svg, std::ios::binary);
    file << render_svg(parsed.table);
    if (!file.flush()) {
      err << "layer_check: cannot write " << (root / write_svg).string() << "\n";
      return 1;
    }
    return 0;
  }
  if (!check_svg.empty()) {
    if (read_file(root / check_svg) != render_svg(parsed.table)) {
      out << check_svg << " is not what the layers table in " << doc
          << " draws: run `layer_check --root <repository> --write-svg " << check_svg << "`\n";
      return 1;
    }
    out << "layer_check: " << check_svg << " is what the table draws\n";
    return 0;
  }
  const auto files = read_tree(root);
  const auto problems = check(parsed.table, files, doc);
  for (const auto& p : problems) out << p << "\n";
  std::size_t includes = 0;
  for (const auto& f : files) includes += mcpcore_includes(f.text).size();
  out << "layer_check: " << files.size() << " files, " << includes << " includes, "
      << problems.size() << (problems.size() == 1 ? " problem\n" : " problems\n");
  return problems.empty() ? 0 : 1;
}

}  // namespace layer_check
