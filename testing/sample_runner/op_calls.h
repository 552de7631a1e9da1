// Calling an op of the library on built samples, and finding its in-place and out=
// variants (named as ops/src/structured_schemas.cc derives them): shared by
// `loom conform`'s checks and the op sweep.
#pragma once

#include <string>
#include <vector>

#include "loom/call.h"
#include "loom/loom.h"
#include "sample_inputs.h"

namespace loom::conform {

// Every call is preceded by manual_seed(kSampleSeed), so random ops compare exactly.
inline constexpr uint64_t kSampleSeed = 20240601;

// "loom::add.Tensor(Tensor self, ...) -> Tensor" -> "loom::add.Tensor"
std::string op_name_of(std::string_view schema);

struct VariantNames {
  std::string inplace;  // loom::add_.Tensor
  std::string out;      // loom::add.out
};
VariantNames variant_names(const std::string& op);

bool is_defined(const std::string& op);
// Whether `variant` is defined and takes `op`'s arguments first (the name rule alone would
// take clamp.out, whose bounds are Scalars, for the out= variant of clamp.Tensor).
bool is_variant_defined(const std::string& op, const std::string& variant);

// Calls `op` on `b` (plus `extra` keywords) after seeding the generator; an op that returns
// nothing gives the arguments it writes instead.
std::vector<Value> run(const std::string& op, const Built& b, const Kwargs& extra = {});
// The tensors among the results, lists flattened.
std::vector<Tensor> tensors_of(const std::vector<Value>& results);

// Calls the out= variant `out_op` with outs shaped like `like`, on `device` in `layout`;
// returns the outs, and sets `failure` when the call returns other tensors than its outs.
std::vector<Tensor> run_out(const std::string& out_op, const Built& b,
                            const std::vector<Tensor>& like, Layout layout, Device device,
                            std::string& failure);

// Whether the in-place variant is defined and the result could be written to self.
bool inplace_applies(const std::string& inplace, const Built& b,
                     const std::vector<Tensor>& expected);

}  // namespace loom::conform
