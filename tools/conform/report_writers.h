// The reports of `loom conform`: JSON (the Report message), a Markdown coverage matrix
// and one self-contained HTML page (Note [Conformance reports]).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "conform_report.pb.h"

namespace loom::conform {

// Note [Conformance reports]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The matrix has one row per op and one column per dtype; a cell shows the worst status
// of the op's results in that dtype, in the order crash, timeout, error, fail, xpass,
// xfail, missing, pass, skipped (a skipped cell is a dtype the backend does not claim).
// The Markdown file is the matrix with a legend and the list of every result that is not
// a pass; the HTML page holds the summary counts and a table of every result that a
// text box filters and a click on a column header sorts, with its script and styles
// inline so the one file can be published as it is.
std::string status_name(Status status);  // "pass", "fail", ...
std::string status_glyph(Status status);

// (op, dtype) -> the cell's status, for every dtype result.
std::map<std::pair<std::string, std::string>, Status> coverage_cells(const Report& report);

std::string to_json(const Report& report);
std::string to_markdown(const Report& report);
std::string to_html(const Report& report);

}  // namespace loom::conform
