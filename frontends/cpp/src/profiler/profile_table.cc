// Profiler::table and Profiler::memory_summary: the recorded events aggregated per op.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_map>

#include "loom/core/error.h"
#include "loom/profiler.h"

namespace loom::profiler {
namespace {

bool is_timed(EventKind kind) {
  return kind != EventKind::Memory;
}

std::string format_time(double ns) {
  char buf[32];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof(buf), "%.3f us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3f s", ns / 1e9);
  }
  return buf;
}

std::string format_bytes(double bytes) {
  char buf[32];
  const double a = bytes < 0 ? -bytes : bytes;
  if (a < 1024) {
    std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  } else if (a < 1024.0 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.2f KiB", bytes / 1024);
  } else if (a < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  }
  return buf;
}

struct Row {
  std::string name;
  std::string shapes;
  int64_t calls = 0;
  int64_t self_ns = 0;
  int64_t total_ns = 0;
  int64_t self_allocated = 0;
  int64_t allocated = 0;
  int64_t self_freed = 0;
};

// Each timed event's self time and self bytes: its own less its direct children's.
struct SelfCosts {
  std::unordered_map<uint64_t, int64_t> child_ns;
  std::unordered_map<uint64_t, int64_t> child_allocated;
  std::unordered_map<uint64_t, int64_t> child_freed;
};

SelfCosts self_costs(const std::vector<Event>& events) {
  SelfCosts c;
  for (const Event& e : events) {
    if (!is_timed(e.kind) || e.parent_id == 0) continue;
    c.child_ns[e.parent_id] += e.duration_ns();
    c.child_allocated[e.parent_id] += e.bytes_allocated;
    c.child_freed[e.parent_id] += e.bytes_freed;
  }
  return c;
}

int64_t lookup(const std::unordered_map<uint64_t, int64_t>& m, uint64_t id) {
  auto it = m.find(id);
  return it == m.end() ? 0 : it->second;
}

std::vector<Row> aggregate(const std::vector<Event>& events, bool by_shape) {
  SelfCosts c = self_costs(events);
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const Event& e : events) {
    if (!is_timed(e.kind)) continue;
    Row& r = rows[{e.name, by_shape ? e.input_shapes : std::string()}];
    r.name = e.name;
    r.shapes = by_shape ? e.input_shapes : "";
    ++r.calls;
    r.total_ns += e.duration_ns();
    r.self_ns += e.duration_ns() - lookup(c.child_ns, e.id);
    r.allocated += e.bytes_allocated;
    r.self_allocated += e.bytes_allocated - lookup(c.child_allocated, e.id);
    r.self_freed += e.bytes_freed - lookup(c.child_freed, e.id);
  }
  std::vector<Row> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

// The sort key of a row for one of the table's sort_by names.
using SortKey = double (*)(const Row&);
SortKey sort_key(std::string_view sort_by) {
  static const std::pair<std::string_view, SortKey> keys[] = {
      {"self_time", [](const Row& r) { return double(r.self_ns); }},
      {"self_cpu_time_total", [](const Row& r) { return double(r.self_ns); }},
      {"total_time", [](const Row& r) { return double(r.total_ns); }},
      {"cpu_time_total", [](const Row& r) { return double(r.total_ns); }},
      {"avg_time", [](const Row& r) { return double(r.total_ns) / double(r.calls); }},
      {"cpu_time", [](const Row& r) { return double(r.total_ns) / double(r.calls); }},
      {"calls", [](const Row& r) { return double(r.calls); }},
      {"count", [](const Row& r) { return double(r.calls); }},
      {"self_memory", [](const Row& r) { return double(r.self_allocated); }},
      {"self_cpu_memory_usage", [](const Row& r) { return double(r.self_allocated); }},
      {"memory", [](const Row& r) { return double(r.allocated); }},
      {"cpu_memory_usage", [](const Row& r) { return double(r.allocated); }},
  };
  for (const auto& [name, key] : keys) {
    if (name == sort_by) return key;
  }
  throw Error("profiler",
              str_cat("table: sort_by must be one of self_time, total_time, avg_time, calls, "
                      "self_memory, memory (or PyTorch's self_cpu_time_total, cpu_time_total, "
                      "cpu_time, count, self_cpu_memory_usage, cpu_memory_usage), found '",
                      sort_by, "'"));
}

std::string pad(const std::string& s, size_t width, bool left) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

std::string render(const std::vector<std::string>& header,
                   std::vector<std::vector<std::string>> body, const std::vector<bool>& left) {
  std::vector<size_t> widths(header.size());
  for (size_t i = 0; i < header.size(); ++i) widths[i] = header[i].size();
  for (const auto& row : body) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      out << (i == 0 ? "" : "  ") << pad(cells[i], widths[i], left[i]);
    }
    out << '\n';
  };
  size_t total = 0;
  for (size_t w : widths) total += w + 2;
  const std::string rule(total - 2, '-');
  out << rule << '\n';
  line(header);
  out << rule << '\n';
  for (const auto& row : body) line(row);
  out << rule << '\n';
  return out.str();
}

}  // namespace

std::string Profiler::table(std::string_view sort_by, int64_t limit,
                            bool group_by_input_shape) const {
  SortKey key = sort_key(sort_by);
  LOOM_CHECK(limit >= 0, "profiler", "table: limit must be >= 0 (0: every row), found ", limit);
  LOOM_CHECK(!group_by_input_shape || options_.record_shapes, "profiler",
             "table: group_by_input_shape needs a profiler started with record_shapes = true");
  std::vector<Row> rows = aggregate(events_, group_by_input_shape);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return key(a) > key(b); });
  int64_t all_self = 0;
  for (const Row& r : rows) all_self += r.self_ns;
  const size_t shown = limit == 0 ? rows.size() : std::min<size_t>(rows.size(), limit);

  std::vector<std::string> header = {"Name",       "Self %",   "Self time",
                                     "Total time", "Avg time", "Calls"};
  std::vector<bool> left = {true, false, false, false, false, false};
  if (options_.profile_memory) {
    header.insert(header.end(), {"Self alloc", "Alloc"});
    left.insert(left.end(), {false, false});
  }
  if (group_by_input_shape) {
    header.push_back("Input shapes");
    left.push_back(true);
  }
  std::vector<std::vector<std::string>> body;
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = rows[i];
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%.2f%%",
                  all_self > 0 ? 100.0 * double(r.self_ns) / double(all_self) : 0.0);
    std::vector<std::string> cells = {r.name,
                                      percent,
                                      format_time(double(r.self_ns)),
                                      format_time(double(r.total_ns)),
                                      format_time(double(r.total_ns) / double(r.calls)),
                                      std::to_string(r.calls)};
    if (options_.profile_memory) {
      cells.push_back(format_bytes(double(r.self_allocated)));
      cells.push_back(format_bytes(double(r.allocated)));
    }
    if (group_by_input_shape) cells.push_back(r.shapes);
    body.push_back(std::move(cells));
  }
  std::string out = render(header, std::move(body), left);
  out += str_cat("Self time total: ", format_time(double(all_self)), " (", rows.size(), " rows, ",
                 shown, " shown)\n");
  return out;
}

std::string Profiler::memory_summary() const {
  LOOM_CHECK(options_.profile_memory, "profiler",
             "memory_summary: the profiler was started without profile_memory = true, so no "
             "memory was recorded");
  struct DeviceTotals {
    int64_t in_use = 0, peak = 0, allocated = 0, freed = 0, blocks = 0, frees = 0;
  };
  std::vector<const Event*> memory;
  for (const Event& e : events_) {
    if (e.kind == EventKind::Memory) memory.push_back(&e);
  }
  std::stable_sort(memory.begin(), memory.end(),
                   [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  std::map<std::pair<int16_t, int16_t>, DeviceTotals> devices;
  for (const Event* e : memory) {
    DeviceTotals& d = devices[{e->device.type, e->device.index}];
    d.in_use += e->bytes;
    d.peak = std::max(d.peak, d.in_use);
    if (e->bytes >= 0) {
      d.allocated += e->bytes;
      ++d.blocks;
    } else {
      d.freed -= e->bytes;
      ++d.frees;
    }
  }
  std::ostringstream out;
  out << "Memory since recording began, per device:\n";
  if (devices.empty()) out << "  (no allocations recorded)\n";
  for (const auto& [key, d] : devices) {
    Event probe;
    probe.device = Device{key.first, key.second};
    const std::string name = probe.device_name();
    out << "  " << name << ": peak " << format_bytes(double(d.peak)) << ", allocated "
        << format_bytes(double(d.allocated)) << " in " << d.blocks << " blocks, freed "
        << format_bytes(double(d.freed)) << " in " << d.frees << " frees, in use at stop "
        << format_bytes(double(d.in_use)) << "\n";
  }
  out << allocator_summary();
  std::vector<Row> rows = aggregate(events_, false);
  rows.erase(
      std::remove_if(rows.begin(), rows.end(),
                     [](const Row& r) { return r.self_allocated == 0 && r.self_freed == 0; }),
      rows.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.self_allocated > b.self_allocated; });
  if (rows.size() > 10) rows.resize(10);
  std::vector<std::vector<std::string>> body;
  for (const Row& r : rows) {
    body.push_back({r.name, std::to_string(r.calls), format_bytes(double(r.self_allocated)),
                    format_bytes(double(r.self_freed)), format_bytes(double(r.allocated))});
  }
  out << "Ops by bytes allocated (self):\n";
  out << render({"Name", "Calls", "Self alloc", "Self freed", "Alloc"}, std::move(body),
                {true, false, false, false, false});
  return out.str();
}

std::string Profiler::allocator_summary() const {
  // Each device's first and last sample and the most reserved at any sample.
  struct Span {
    const AllocatorSample* first = nullptr;
    const AllocatorSample* last = nullptr;
    int64_t most_reserved = 0;
  };
  std::map<std::pair<int16_t, int16_t>, Span> devices;
  for (const AllocatorSample& a : allocator_samples_) {
    Span& span = devices[{a.device.type, a.device.index}];
    if (span.first == nullptr) span.first = &a;
    span.last = &a;
    span.most_reserved = std::max(span.most_reserved, a.stats.reserved_bytes);
  }
  if (devices.empty()) return "";
  std::ostringstream out;
  out << "Caching allocators, first to last sample (start, steps, stop):\n";
  for (const auto& [key, span] : devices) {
    Event probe;
    probe.device = span.first->device;
    const MemoryStats& a = span.first->stats;
    const MemoryStats& b = span.last->stats;
    const int64_t served = b.allocations - a.allocations, hits = b.cache_hits - a.cache_hits;
    out << "  " << probe.device_name() << ": allocated " << format_bytes(double(a.allocated_bytes))
        << " -> " << format_bytes(double(b.allocated_bytes)) << ", reserved "
        << format_bytes(double(a.reserved_bytes)) << " -> "
        << format_bytes(double(b.reserved_bytes)) << " (most "
        << format_bytes(double(span.most_reserved)) << "); " << served << " requests, " << hits
        << " from the cache";
    if (served > 0) {
      char rate[32];
      std::snprintf(rate, sizeof(rate), " (%.1f%%)", 100.0 * double(hits) / double(served));
      out << rate;
    }
    out << ", " << (b.driver_allocations - a.driver_allocations) << " driver allocations, "
        << (b.driver_frees - a.driver_frees) << " driver frees\n";
  }
  return out.str();
}

}  // namespace loom::profiler
