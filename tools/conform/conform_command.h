// `loom conform`: runs the conformance checks of every op of the library (or those
// --ops matches) on one backend, each op isolated in a child process, and writes the
// reports (README "Conformance"; Notes [Conformance checks], [Conformance isolation],
// [Expected failures], [Conformance reports]).
#pragma once

#include <string>

namespace loom::conform {

struct ConformOptions {
  std::string manifest;    // "" = the default manifest
  std::string backend;     // device type: cpu, npu_sim, ...; quantized: the Quantized key
  std::string ops;         // ECMAScript regex over op names, matched whole; "" = all
  std::string dtypes;      // comma-separated; "" = all
  std::string report_dir;  // "" = no files, the summary only
  std::string baseline;    // an earlier report.json
  std::string xfail;       // the backend's expectation file
  int jobs = 1;
  double timeout_seconds = 60;  // per op
};

// Returns the exit status: 0 when nothing failed (with a baseline: nothing regressed),
// 1 otherwise. Bad options or files throw loom::Error("[conform] ...").
int run_conform(const ConformOptions& options);

}  // namespace loom::conform
