// Expected failures and baselines (expectations.h, Note [Expected failures]).
#include "expectations.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "loom/core/error.h"
#include "loom/core/scalar_type.h"
#include "loom/ops/op_library.h"
#include "op_calls.h"

namespace loom::conform {
namespace {

const std::set<std::string> kChecks = {"availability", "errors",  "claims",   "values",
                                       "variants",     "strided", "gradients"};

std::string read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("conform", str_cat("cannot read the ", what, " file '", path, "'"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool matches(const Expectation& e, const CheckResult& r) {
  return r.op() == e.op && (e.dtype.empty() || r.dtype() == e.dtype) &&
         (e.check.empty() || r.check() == e.check);
}

std::string key_of(const CheckResult& r) {
  return str_cat(r.op(), " ", r.dtype().empty() ? "-" : r.dtype(), " sample ", r.sample(), " ",
                 r.check());
}

}  // namespace

bool is_failure(Status status) {
  return status == FAIL || status == ERROR || status == CRASH || status == TIMEOUT ||
         status == XPASS;
}

std::vector<Expectation> read_expectations(const std::string& path, const std::string& backend) {
  const std::string where = str_cat("expectation file '", path, "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path, "expectation"));
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("conform", str_cat(where, ": expected JSON, found a syntax error: ", e.what()));
  }
  if (!doc.is_object()) throw Error("conform", where + ": expected a JSON object at the top");
  for (const auto& [key, value] : doc.items()) {
    if (key != "backend" && key != "xfail") {
      throw Error("conform", str_cat(where, ": unknown key '", key, "' (expected backend, xfail)"));
    }
  }
  if (doc.contains("backend")) {
    if (!doc["backend"].is_string()) throw Error("conform", where + ": 'backend' must be a string");
    if (doc["backend"] != backend) {
      throw Error("conform",
                  str_cat(where, ": written for backend '", doc["backend"].get<std::string>(),
                          "', but the backend checked is '", backend, "'"));
    }
  }
  if (!doc.contains("xfail") || !doc["xfail"].is_array()) {
    throw Error("conform", where + ": expected an array 'xfail'");
  }
  std::set<std::string> library;
  for (const OpDefinition& def : standard_ops()) library.insert(op_name_of(def.schema));
  std::vector<Expectation> out;
  for (size_t i = 0; i < doc["xfail"].size(); ++i) {
    const nlohmann::json& entry = doc["xfail"][i];
    const std::string at = str_cat(where, ", xfail entry ", i);
    if (!entry.is_object()) throw Error("conform", at + ": expected an object");
    Expectation e;
    for (const auto& [key, value] : entry.items()) {
      if (!value.is_string()) throw Error("conform", str_cat(at, ": '", key, "' must be a string"));
      const std::string text = value.get<std::string>();
      if (key == "op") {
        e.op = text;
      } else if (key == "dtype") {
        e.dtype = text == "none" ? text : std::string(scalar_type_name(parse_scalar_type(text)));
      } else if (key == "check") {
        e.check = text;
      } else if (key == "reason") {
        e.reason = text;
      } else {
        throw Error("conform",
                    str_cat(at, ": unknown key '", key, "' (expected op, dtype, check, reason)"));
      }
    }
    if (e.op.empty()) throw Error("conform", at + ": expected an 'op'");
    if (!library.count(e.op)) {
      throw Error("conform", str_cat(at, ": '", e.op, "' is not an op of the library"));
    }
    if (!e.check.empty() && !kChecks.count(e.check)) {
      throw Error("conform",
                  str_cat(at, ": unknown check '", e.check,
                          "' (expected availability, errors, claims, values, distribution, "
                          "variants, strided or gradients)"));
    }
    if (e.reason.empty()) throw Error("conform", at + ": expected a non-empty 'reason'");
    out.push_back(std::move(e));
  }
  return out;
}

void apply_expectations(const std::vector<Expectation>& expectations, Report& report) {
  for (const Expectation& e : expectations) {
    bool failed = false;
    for (const CheckResult& r : report.results()) {
      failed = failed || (matches(e, r) && is_failure(r.status()));
    }
    for (CheckResult& r : *report.mutable_results()) {
      if (!matches(e, r)) continue;
      if (failed && is_failure(r.status())) {
        r.set_status(XFAIL);
        r.set_xfail_reason(e.reason);
      } else if (!failed && r.status() == PASS) {
        r.set_status(XPASS);
        r.set_xfail_reason(e.reason);
      }
    }
  }
}

Report read_report(const std::string& path) {
  Report report;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status =
      google::protobuf::util::JsonStringToMessage(read_file(path, "baseline"), &report, options);
  if (!status.ok()) {
    throw Error("conform",
                str_cat("baseline '", path,
                        "': expected a report of loom conform, found: ", status.ToString()));
  }
  return report;
}

std::vector<std::string> regressions(const Report& baseline, const Report& current) {
  std::map<std::string, Status> now;
  std::map<std::string, const CheckResult*> by_key;
  for (const CheckResult& r : current.results()) {
    now[key_of(r)] = r.status();
    by_key[key_of(r)] = &r;
  }
  std::vector<std::string> out;
  for (const CheckResult& was : baseline.results()) {
    if (was.status() != PASS && was.status() != XPASS) continue;
    auto it = now.find(key_of(was));
    if (it == now.end() || it->second == PASS || it->second == XPASS) continue;
    const CheckResult& r = *by_key.at(key_of(was));
    out.push_back(str_cat(key_of(was), ": ", Status_Name(was.status()), " -> ",
                          Status_Name(r.status()),
                          r.message().empty() ? "" : " (" + r.message() + ")"));
  }
  return out;
}

}  // namespace loom::conform
