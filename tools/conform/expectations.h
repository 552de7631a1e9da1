// What a vendor expects of a run: expected failures per backend (--xfail FILE) and an
// earlier report to hold the line against (--baseline FILE).
#pragma once

#include <string>
#include <vector>

#include "conform_report.pb.h"

namespace loom::conform {

// Note [Expected failures]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A backend's expected failures live in their own JSON file, never in the samples:
//   {"backend": "cpu",
//    "xfail": [{"op": "loom::pow.Tensor_Scalar", "dtype": "float16", "check": "values",
//               "reason": "computes in float16; the reference rounds once"}]}
// `op` and `reason` are required; `dtype` and `check` narrow the entry (absent: any);
// `backend`, when given, must be the backend checked. Each entry covers the results of
// its (op, dtype, check): when any of them fails (FAIL, ERROR, CRASH, TIMEOUT) those
// become XFAIL with the reason; when none fails, the passing ones become XPASS, an
// unexpected pass that fails the run until the entry is removed. Every field is checked
// before the run: an unknown key, a wrong type, an op that is not in the library or a
// check that does not exist is an error naming the entry.
struct Expectation {
  std::string op;
  std::string dtype;  // "" = any
  std::string check;  // "" = any
  std::string reason;
};

// Parses and checks an expectation file; `backend` is the one being checked.
std::vector<Expectation> read_expectations(const std::string& path, const std::string& backend);

// Applies `expectations` to the results in place.
void apply_expectations(const std::vector<Expectation>& expectations, Report& report);

// A report written earlier by `loom conform` (JSON).
Report read_report(const std::string& path);

// The results that passed (PASS or XPASS) in `baseline` and do not now, one line each:
// "loom::add.Tensor float32 sample 2 values: PASS -> FAIL (...)".
std::vector<std::string> regressions(const Report& baseline, const Report& current);

// Statuses that fail a run without a baseline.
bool is_failure(Status status);

}  // namespace loom::conform
