// optim::ZeroRedundancyOptimizer: optimizer state sharded over the ranks (ZeRO stage 1).
// The partition is greedy by size (largest parameter first, to the rank holding the
// fewest elements so far; ties to the lower rank), so every rank computes the same one
// without talking. An empty partition gets a local optimizer over no parameters if the
// factory accepts that, else one over the first parameter that is never stepped; a rank
// with nothing to update skips its step.
//
// Note [Consolidated ZeRO state]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A checkpoint of a ZeRO run holds one optimizer state, as PyTorch's
// consolidate_state_dict(to) and state_dict() give it: each rank renames its local
// optimizer's entries from the local parameter index to the index in the constructor's
// list and sends them to rank `to` with point-to-point messages: a header (the size of a
// description and the number of entries), the description (each entry's key, dtype and
// shape) and then each tensor, all on the parameters' device (an nccl group moves CUDA
// tensors only). Rank `to` checks each description (key, owner, no repeats, a step count
// or the parameter's dtype and shape) before it allocates anything, and orders the
// entries by parameter as a plain optimizer's state_dict() does, so the result loads into
// a plain optimizer over the same parameters and back. A refused description leaves the
// sender's later messages unread, so their point-to-point messages no longer pair up:
// after that error, point-to-point messages need a new group. load_state_dict goes the
// other way: every rank reads the whole state, checks every entry's shape and its own
// partition's entries (field names included) with its optimizer, and the ranks agree
// with one all_reduce before any of them changes anything, so a state is loaded
// everywhere or refused everywhere.
#include "loom/optim/zero.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <string>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/tensor_io.h"

namespace loom::optim {

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const Factory& make,
                                                 distributed::Group group)
    : params_(std::move(params)), group_(group) {
  LOOM_CHECK(!params_.empty(), "optim::ZeroRedundancyOptimizer", "expected parameters, found none");
  LOOM_CHECK(make != nullptr, "optim::ZeroRedundancyOptimizer", "expected an optimizer factory");
  const int n = distributed::get_world_size(group);
  const int me = distributed::get_rank(group);
  LOOM_CHECK(me >= 0, "optim::ZeroRedundancyOptimizer", "this rank is not in process group ",
             group.id);
  std::vector<size_t> order(params_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params_[a].numel() > params_[b].numel(); });
  group_ranks_ = distributed::get_process_group_ranks(group);
  std::vector<int64_t> load(n, 0);
  owners_.assign(params_.size(), 0);
  for (size_t i : order) {
    const int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owners_[i] = r;
    load[r] += params_[i].numel();
  }
  std::vector<Tensor> mine;
  local_index_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] != me) continue;
    local_index_[i] = mine.size();
    mine.push_back(params_[i]);
  }
  if (mine.empty()) {
    // An optimizer over nothing where the factory takes one, else one over a parameter
    // this rank never steps, so that lr() and set_lr() work on every rank.
    try {
      local_ = make({});
    } catch (const Error&) {
      local_ = make({params_[0]});
      local_owns_nothing_ = true;
    }
  } else {
    local_ = make(std::move(mine));
  }
  LOOM_CHECK(local_ != nullptr, "optim::ZeroRedundancyOptimizer",
             "the factory returned no optimizer");
  LOOM_CHECK(local_->num_param_groups() == 1, "optim::ZeroRedundancyOptimizer",
             "expected the factory's optimizer to have one parameter group, found ",
             local_->num_param_groups());
}

void ZeroRedundancyOptimizer::step() {
  if (!local_owns_nothing_) local_->step();
  NoGradGuard no_grad;
  // Every parameter from its owner (a world rank for broadcast), all in flight at once.
  std::vector<distributed::Work> works;
  for (size_t i = 0; i < params_.size(); ++i) {
    works.push_back(distributed::broadcast(
        params_[i], group_ranks_[static_cast<size_t>(owners_[i])], group_, true));
  }
  for (distributed::Work& w : works) w.wait();
}

void ZeroRedundancyOptimizer::zero_grad(bool set_to_none) {
  autograd::clear_grads(params_, set_to_none);
}

namespace {

constexpr const char* kZero = "optim::ZeroRedundancyOptimizer";

// A description of entries: per entry its key's length and bytes, dtype, rank and sizes.
std::string describe_entries(const NamedTensors& entries) {
  std::string out;
  const auto put = [&out](const auto& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  for (const auto& [key, t] : entries) {
    put(static_cast<uint32_t>(key.size()));
    out += key;
    put(static_cast<int8_t>(t.dtype()));
    put(static_cast<int32_t>(t.dim()));
    for (int64_t d : t.sizes()) put(d);
  }
  return out;
}

struct EntryShape {
  std::string key;
  ScalarType dtype;
  std::vector<int64_t> sizes;
};

// describe_entries' output read back; every field is checked before it is used.
std::vector<EntryShape> read_description(const std::string& bytes, int64_t count, int from) {
  std::vector<EntryShape> out;
  size_t at = 0;
  const auto take = [&](auto& v) {
    LOOM_CHECK(at + sizeof v <= bytes.size(), kZero, "consolidate_state_dict: rank ", from,
               " sent a description of ", bytes.size(), " bytes that ends inside entry ",
               out.size(), " (expected ", sizeof v, " more bytes at byte ", at, ")");
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
  };
  for (int64_t e = 0; e < count; ++e) {
    EntryShape entry;
    uint32_t length = 0;
    take(length);
    LOOM_CHECK(length <= bytes.size() - at, kZero, "consolidate_state_dict: rank ", from,
               " sent a key of ", length, " bytes, expected at most the ", bytes.size() - at,
               " bytes left of its description");
    entry.key.assign(bytes.data() + at, length);
    at += length;
    int8_t dtype = 0;
    int32_t ndim = 0;
    take(dtype);
    take(ndim);
    LOOM_CHECK(dtype >= 0 && dtype < kNumScalarTypes && ndim >= 0 && ndim <= 64, kZero,
               "consolidate_state_dict: rank ", from, " sent entry '", entry.key,
               "' with dtype code ", int{dtype}, " and ", ndim, " dims, expected a code in [0, ",
               kNumScalarTypes, ") and at most 64 dims");
    entry.dtype = static_cast<ScalarType>(dtype);
    for (int32_t d = 0; d < ndim; ++d) {
      int64_t size = 0;
      take(size);
      LOOM_CHECK(size >= 0, kZero, "consolidate_state_dict: rank ", from, " sent entry '",
                 entry.key, "' with a negative size");
      entry.sizes.push_back(size);
    }
    out.push_back(std::move(entry));
  }
  LOOM_CHECK(at == bytes.size(), kZero, "consolidate_state_dict: rank ", from, " sent ",
             bytes.size() - at, " bytes past its entries");
  return out;
}

}  // namespace

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  const int n = static_cast<int>(group_ranks_.size());
  LOOM_CHECK(to >= 0 && to < n, kZero,
             "consolidate_state_dict: expected a rank of the group in [0, ", n, "), found ", to);
  const int me = distributed::get_rank(group_);
  const Device device = params_[0].device();
  // This rank's entries, keyed by the parameters' indices in params_.
  std::vector<size_t> global_of_local;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] == me) global_of_local.push_back(i);
  }
  NamedTensors mine;
  Tensor lr_entry;
  for (auto& [key, value] : local_->state_dict()) {
    const std::vector<std::string> parts = detail::state_key_parts(key);
    if (parts[0] == "param_groups") {
      lr_entry = value;
      continue;
    }
    if (local_owns_nothing_) continue;
    const size_t i = global_of_local[detail::state_key_index(parts[2], key, kZero)];
    mine.emplace_back(str_cat("state.0.", i, ".", parts[3]), value);
  }
  NoGradGuard no_grad;
  if (me != to) {
    const std::string description = describe_entries(mine);
    Tensor header =
        loom::tensor({static_cast<int64_t>(description.size()), static_cast<int64_t>(mine.size())})
            .to(device);
    Tensor described = loom::empty({static_cast<int64_t>(description.size())},
                                   TensorOptions().dtype(ScalarType::UInt8));
    if (!description.empty()) {
      std::memcpy(described.data<uint8_t>(), description.data(), description.size());
    }
    const int dst = group_ranks_[static_cast<size_t>(to)];
    distributed::send(header, dst, group_);
    if (!description.empty()) distributed::send(described.to(device), dst, group_);
    for (const auto& [key, value] : mine) {
      distributed::send(value.to(device).contiguous(), dst, group_);
    }
    consolidated_.reset();
    return;
  }
  std::vector<NamedTensors> by_parameter(params_.size());
  std::set<std::string> keys;
  // Checks an entry group rank r sent, before anything is allocated for it: a state key of
  // a parameter r owns, not seen before, holding a step count or the parameter's dtype and
  // shape. Returns the parameter's index.
  const auto check_entry = [&](const EntryShape& e, int r) {
    const int from = group_ranks_[static_cast<size_t>(r)];
    const std::vector<std::string> parts = detail::state_key_parts(e.key);
    LOOM_CHECK(parts.size() == 4 && parts[0] == "state" && parts[1] == "0", kZero,
               "consolidate_state_dict: rank ", from, " sent key '", e.key,
               "', expected state.0.<parameter>.<field>");
    const size_t i = detail::state_key_index(parts[2], e.key, kZero);
    LOOM_CHECK(i < params_.size() && owners_[i] == r, kZero, "consolidate_state_dict: rank ", from,
               " sent '", e.key, "', a parameter it does not own");
    LOOM_CHECK(keys.insert(e.key).second, kZero, "consolidate_state_dict: rank ", from, " sent '",
               e.key, "' twice");
    const Tensor& param = params_[i];
    const bool count = e.sizes.empty() && is_integral(e.dtype, /*include_bool=*/false);
    LOOM_CHECK(count || (std::ranges::equal(e.sizes, param.sizes()) && e.dtype == param.dtype()),
               kZero, "consolidate_state_dict: rank ", from, " sent '", e.key, "' as ",
               scalar_type_name(e.dtype), " ", shape_to_string(e.sizes),
               ", expected an integer step count or ", scalar_type_name(param.dtype()), " ",
               shape_to_string(param.sizes()), " (its parameter's)");
    return i;
  };
  for (const auto& [key, value] : mine) {
    const size_t i =
        check_entry({key, value.dtype(), {value.sizes().begin(), value.sizes().end()}}, me);
    by_parameter[i].emplace_back(key, value);
  }
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    const int src = group_ranks_[static_cast<size_t>(r)];
    Tensor header = loom::empty({2}, TensorOptions().dtype(ScalarType::Int64).device(device));
    distributed::recv(header, src, group_);
    const Tensor sizes = header.to("cpu");
    const int64_t bytes = sizes.data<int64_t>()[0], count = sizes.data<int64_t>()[1];
    LOOM_CHECK(bytes >= 0 && count >= 0 && bytes < (int64_t{1} << 30), kZero,
               "consolidate_state_dict: rank ", src, " announced ", count, " entries in ", bytes,
               " bytes, expected a count >= 0 and under 1 GiB");
    std::string description(static_cast<size_t>(bytes), '\0');
    if (bytes > 0) {
      Tensor described =
          loom::empty({bytes}, TensorOptions().dtype(ScalarType::UInt8).device(device));
      distributed::recv(described, src, group_);
      std::memcpy(description.data(), described.to("cpu").data<uint8_t>(), description.size());
    }
    const std::vector<EntryShape> entries = read_description(description, count, src);
    std::vector<size_t> owners_of_entries;
    for (const EntryShape& e : entries) owners_of_entries.push_back(check_entry(e, r));
    for (size_t k = 0; k < entries.size(); ++k) {
      const EntryShape& e = entries[k];
      Tensor value = loom::empty(e.sizes, TensorOptions().dtype(e.dtype).device(device));
      distributed::recv(value, src, group_);
      // Step counts live on the host, as a plain optimizer's state_dict() gives them.
      if (value.dim() == 0) value = value.to("cpu");
      by_parameter[owners_of_entries[k]].emplace_back(e.key, value);
    }
  }
  NamedTensors whole;
  whole.emplace_back("param_groups.0.lr", lr_entry);
  for (NamedTensors& entries : by_parameter) {
    for (auto& entry : entries) whole.push_back(std::move(entry));
  }
  consolidated_ = std::move(whole);
}

NamedTensors ZeroRedundancyOptimizer::state_dict() const {
  LOOM_CHECK(consolidated_.has_value(), kZero,
             "state_dict: this rank holds no consolidated state; call "
             "consolidate_state_dict(to) on every rank of the group first, then state_dict() "
             "on rank `to`");
  return *consolidated_;
}

void ZeroRedundancyOptimizer::load_state_dict(const NamedTensors& state) {
  const int me = distributed::get_rank(group_);
  std::optional<Error> refused;
  NamedTensors local;
  try {
    size_t lrs = 0;
    for (const auto& [key, value] : state) {
      LOOM_CHECK(value.defined(), kZero, "state key '", key, "': the tensor is undefined");
      const std::vector<std::string> parts = detail::state_key_parts(key);
      if (parts.size() == 3 && parts[0] == "param_groups" && parts[2] == "lr") {
        LOOM_CHECK(parts[1] == "0", kZero, "state key '", key,
                   "': expected the one parameter group 0 of a ZeRO optimizer");
        LOOM_CHECK(value.numel() == 1, kZero, "state key '", key, "': expected a scalar, found ",
                   shape_to_string(value.sizes()));
        ++lrs;
        local.emplace_back(key, value);
        continue;
      }
      LOOM_CHECK(parts.size() == 4 && parts[0] == "state", kZero, "unexpected state key '", key,
                 "'");
      LOOM_CHECK(parts[1] == "0", kZero, "state key '", key,
                 "': expected the one parameter group 0 of a ZeRO optimizer");
      const size_t i = detail::state_key_index(parts[2], key, kZero);
      LOOM_CHECK(i < params_.size(), kZero, "state key '", key, "' names parameter ", i,
                 "; the optimizer has ", params_.size());
      const Tensor& param = params_[i];
      const bool count = value.dim() == 0 && !is_floating_point(value.dtype());
      LOOM_CHECK(count || (std::ranges::equal(value.sizes(), param.sizes()) &&
                           value.dtype() == param.dtype()),
                 kZero, "state key '", key, "': expected an integer step count or ",
                 scalar_type_name(param.dtype()), " ", shape_to_string(param.sizes()),
                 " (its parameter's), found ", scalar_type_name(value.dtype()), " ",
                 shape_to_string(value.sizes()));
      if (owners_[i] == me && !local_owns_nothing_) {
        local.emplace_back(str_cat("state.0.", local_index_[i], ".", parts[3]), value);
      }
    }
    LOOM_CHECK(lrs == 1, kZero, "expected one learning rate (param_groups.0.lr), found ", lrs);
  } catch (const Error& e) {
    refused = e;
  }
  if (!refused && !local_owns_nothing_) {
    try {
      local_->check_state_dict(local);
    } catch (const Error& e) {
      refused = Error(kZero, str_cat("this rank's partition of the state was refused (its keys "
                                     "renumbered for the local optimizer): ",
                                     e.what()));
    }
  }
  // Loaded on every rank or on none (Note [Consolidated ZeRO state]).
  Tensor accepted = loom::full(
      {1}, refused ? 0 : 1, TensorOptions().dtype(ScalarType::Int32).device(params_[0].device()));
  distributed::all_reduce(accepted, distributed::ReduceOp::Min, group_);
  if (refused) throw *refused;
  LOOM_CHECK(accepted.to("cpu").item<int64_t>() == 1, kZero,
             "load_state_dict: another rank of the group refused the state (its error names the "
             "entry); nothing was loaded");
  if (local_owns_nothing_) {
    for (const auto& [key, value] : local) local_->set_lr(value.item<double>());
    return;
  }
  local_->load_state_dict(local);
}

}  // namespace loom::optim
