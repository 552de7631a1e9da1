// Report writers (report_writers.h, Note [Conformance reports]).
#include "report_writers.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "loom/core/error.h"

namespace loom::conform {
namespace {

// Higher is worse (Note [Conformance reports]).
int severity(Status s) {
  switch (s) {
    case CRASH:
      return 8;
    case TIMEOUT:
      return 7;
    case ERROR:
      return 6;
    case FAIL:
      return 5;
    case XPASS:
      return 4;
    case XFAIL:
      return 3;
    case MISSING:
      return 2;
    case PASS:
      return 1;
    default:
      return 0;  // SKIPPED
  }
}

const Status kShown[] = {PASS, FAIL, ERROR, CRASH, TIMEOUT, MISSING, SKIPPED, XFAIL, XPASS};

std::string html_escape(const std::string& text) {
  return absl::StrReplaceAll(text,
                             {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string markdown_cell(const std::string& text) {
  std::string s = absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}});
  if (s.size() > 300) s = s.substr(0, 297) + "...";
  return s;
}

std::vector<std::string> dtypes_of(
    const std::map<std::pair<std::string, std::string>, Status>& cells) {
  static const std::vector<std::string> order = {
      "bool",     "uint8",   "int8",    "int16",     "int32",      "int64", "float16",
      "bfloat16", "float32", "float64", "complex64", "complex128", "none"};
  std::set<std::string> present;
  for (const auto& [key, status] : cells) present.insert(key.second);
  std::vector<std::string> out;
  for (const std::string& d : order) {
    if (present.erase(d)) out.push_back(d);
  }
  out.insert(out.end(), present.begin(), present.end());
  return out;
}

std::string counts_line(const Report& report) {
  std::string line;
  for (Status s : kShown) {
    auto it = report.counts().find(status_name(s));
    if (it == report.counts().end() || it->second == 0) continue;
    line += str_cat(line.empty() ? "" : ", ", it->second, " ", status_name(s));
  }
  return line;
}

}  // namespace

std::string status_name(Status status) {
  return absl::AsciiStrToLower(Status_Name(status));
}

std::string status_glyph(Status status) {
  switch (status) {
    case PASS:
      return "✅";
    case FAIL:
      return "❌";
    case ERROR:
      return "⚠️";
    case CRASH:
      return "💥";
    case TIMEOUT:
      return "⏱️";
    case MISSING:
      return "➖";
    case SKIPPED:
      return "⏭️";
    case XFAIL:
      return "🟡";
    case XPASS:
      return "❗";
    default:
      return "?";
  }
}

std::map<std::pair<std::string, std::string>, Status> coverage_cells(const Report& report) {
  std::map<std::pair<std::string, std::string>, Status> cells;
  for (const CheckResult& r : report.results()) {
    if (r.dtype().empty()) continue;  // op-level (availability; a crash before any sample)
    auto [it, inserted] = cells.try_emplace({r.op(), r.dtype()}, r.status());
    if (!inserted && severity(r.status()) > severity(it->second)) it->second = r.status();
  }
  // An op without a single dtype result (missing, crashed at once) gets its op-level status.
  std::set<std::string> with_cells;
  for (const auto& [key, s] : cells) with_cells.insert(key.first);
  for (const CheckResult& r : report.results()) {
    if (with_cells.count(r.op()) || !r.dtype().empty()) continue;
    auto [it, inserted] = cells.try_emplace({r.op(), "none"}, r.status());
    if (!inserted && severity(r.status()) > severity(it->second)) it->second = r.status();
  }
  return cells;
}

std::string to_json(const Report& report) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  const auto status = google::protobuf::util::MessageToJsonString(report, &out, options);
  if (!status.ok()) throw Error("conform", "cannot write the report as JSON: " + status.ToString());
  return out;
}

std::string to_markdown(const Report& report) {
  const auto cells = coverage_cells(report);
  const std::vector<std::string> dtypes = dtypes_of(cells);
  std::ostringstream md;
  md << "# loom conform: backend `" << report.backend() << "`\n\n";
  md << "Plugins: " << (report.plugins().empty() ? "none" : "");
  for (int i = 0; i < report.plugins_size(); ++i)
    md << (i ? ", " : "") << "`" << report.plugins(i) << "`";
  md << ". Started " << report.started() << ", " << report.ops_size() << " ops, "
     << report.results_size() << " results in "
     << str_cat(static_cast<int>(report.wall_seconds() * 10) / 10.0) << " s with " << report.jobs()
     << " jobs; gradients "
     << (report.gradients_checked() ? "checked" : "not checked (no autograd plugin)") << ".\n\n";
  md << "**" << counts_line(report) << "**\n\n";
  md << "Legend:";
  for (Status s : kShown) md << " " << status_glyph(s) << " " << status_name(s);
  md << "\n\n| op | availability |";
  for (const std::string& d : dtypes) md << " " << d << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < dtypes.size(); ++i) md << ":-:|";
  md << "\n";
  for (const OpCoverage& op : report.ops()) {
    md << "| `" << op.op() << "` | " << op.availability() << " |";
    for (const std::string& d : dtypes) {
      auto it = cells.find({op.op(), d});
      md << " " << (it == cells.end() ? "" : status_glyph(it->second)) << " |";
    }
    md << "\n";
  }
  md << "\n## Results other than pass and skipped\n\n";
  md << "| op | dtype | sample | check | status | message |\n|---|---|---|---|---|---|\n";
  for (const CheckResult& r : report.results()) {
    if (r.status() == PASS || r.status() == SKIPPED) continue;
    md << "| `" << r.op() << "` | " << r.dtype() << " | "
       << (r.sample() < 0 ? "" : str_cat(r.sample())) << " | " << r.check() << " | "
       << status_glyph(r.status()) << " " << status_name(r.status()) << " | "
       << markdown_cell(r.xfail_reason().empty() ? r.message()
                                                 : r.xfail_reason() + "; observed: " + r.message())
       << " |\n";
  }
  return md.str();
}

std::string to_html(const Report& report) {
  std::ostringstream h;
  h << R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>loom conform: )"
    << html_escape(report.backend()) << R"(</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 8px; }
.meta { color: #555; margin-bottom: 12px; }
.counts { display: flex; gap: 8px; flex-wrap: wrap; margin: 12px 0; }
.count { padding: 6px 10px; border-radius: 6px; background: #f1f3f5; cursor: pointer; border: 1px solid #ddd; }
.count.active { outline: 2px solid #1971c2; }
.count b { font-size: 16px; }
input { font: inherit; padding: 6px 8px; width: 360px; margin-bottom: 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #e9ecef; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f8f9fa; cursor: pointer; user-select: none; position: sticky; top: 0; }
th.asc::after { content: " \25B2"; } th.desc::after { content: " \25BC"; }
td.msg { font-family: ui-monospace, monospace; font-size: 12px; max-width: 720px; word-break: break-word; }
.s-pass { color: #2b8a3e; } .s-fail, .s-crash, .s-timeout, .s-error, .s-xpass { color: #c92a2a; font-weight: 600; }
.s-missing, .s-skipped { color: #868e96; } .s-xfail { color: #e67700; }
td[class^="s-"] { white-space: nowrap; }
i { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px; background: currentColor; }
</style></head><body>
<h1>loom conform: backend <code>)"
    << html_escape(report.backend()) << R"(</code></h1>
<div class="meta">)";
  for (int i = 0; i < report.plugins_size(); ++i) {
    h << (i ? ", " : "Plugins: ") << html_escape(report.plugins(i));
  }
  h << " &middot; started " << html_escape(report.started()) << " &middot; " << report.ops_size()
    << " ops, " << report.results_size() << " results &middot; "
    << str_cat(static_cast<int>(report.wall_seconds() * 10) / 10.0) << " s, " << report.jobs()
    << " jobs &middot; gradients " << (report.gradients_checked() ? "checked" : "not checked")
    << "</div>\n<div class=\"counts\">";
  for (Status s : kShown) {
    auto it = report.counts().find(status_name(s));
    const int n = it == report.counts().end() ? 0 : it->second;
    h << "<span class=\"count s-" << status_name(s) << "\" data-status=\"" << status_name(s)
      << "\"><i></i>" << status_name(s) << " <b>" << n << "</b></span>";
  }
  h << "</div>\n<input id=\"filter\" placeholder=\"filter: op, dtype, check, status or message\">\n"
       "<table id=\"results\"><thead><tr><th>op</th><th>dtype</th><th>sample</th><th>check</th>"
       "<th>status</th><th>max abs error</th><th>message</th></tr></thead><tbody>\n";
  for (const CheckResult& r : report.results()) {
    const std::string message =
        r.xfail_reason().empty() ? r.message() : r.xfail_reason() + "; observed: " + r.message();
    h << "<tr data-status=\"" << status_name(r.status()) << "\"><td>" << html_escape(r.op())
      << "</td><td>" << html_escape(r.dtype()) << "</td><td>"
      << (r.sample() < 0 ? "" : str_cat(r.sample())) << "</td><td>" << html_escape(r.check())
      << "</td><td class=\"s-" << status_name(r.status()) << "\"><i></i>" << status_name(r.status())
      << "</td><td>" << (r.max_abs_error() > 0 ? str_cat(r.max_abs_error()) : "")
      << "</td><td class=\"msg\" title=\"" << html_escape(r.sample_text()) << "\">"
      << html_escape(r.worst_element().empty() || r.status() == PASS ? message : r.worst_element())
      << "</td></tr>\n";
  }
  h << R"(</tbody></table>
<script>
const rows = Array.from(document.querySelectorAll('#results tbody tr'));
const filter = document.getElementById('filter');
let statusFilter = '';
function apply() {
  const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const row of rows) {
    const text = row.textContent.toLowerCase();
    const shown = words.every(w => text.includes(w)) &&
                  (!statusFilter || row.dataset.status === statusFilter);
    row.style.display = shown ? '' : 'none';
  }
}
filter.addEventListener('input', apply);
// report.html#filter=words opens with the filter filled in (a link to a view).
if (location.hash.startsWith('#filter=')) {
  filter.value = decodeURIComponent(location.hash.slice(8));
  apply();
}
for (const chip of document.querySelectorAll('.count')) {
  chip.addEventListener('click', () => {
    statusFilter = statusFilter === chip.dataset.status ? '' : chip.dataset.status;
    for (const c of document.querySelectorAll('.count')) c.classList.toggle('active', c.dataset.status === statusFilter);
    apply();
  });
}
document.querySelectorAll('#results th').forEach((th, column) => {
  th.addEventListener('click', () => {
    const ascending = !th.classList.contains('asc');
    document.querySelectorAll('#results th').forEach(o => o.classList.remove('asc', 'desc'));
    th.classList.add(ascending ? 'asc' : 'desc');
    const key = r => r.children[column].textContent;
    const numeric = rows.every(r => key(r) === '' || !isNaN(Number(key(r))));
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      const order = numeric ? (Number(x || -1) - Number(y || -1)) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    const body = document.querySelector('#results tbody');
    for (const r of rows) body.appendChild(r);
  });
});
</script>
</body></html>
)";
  return h.str();
}

}  // namespace loom::conform
