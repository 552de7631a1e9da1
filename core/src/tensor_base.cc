// TensorBase handles, factories and the metadata-only view ops.
#include "loom/core/tensor_base.h"

#include <algorithm>

#include "loom/core/error.h"
#include "loom/core/quantizer.h"
#include "loom/core/read_section.h"
#include "loom/core/str_cat.h"
#include "loom/core/type_promotion.h"

namespace loom {
namespace {

// Resolves a single -1 in `sizes` so the product equals numel.
DimVector infer_size(IntArrayRef sizes, int64_t numel, std::string_view op) {
  DimVector out(sizes.begin(), sizes.end());
  int64_t product = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      LOOM_CHECK(!infer, std::string(op), "only one dimension can be -1, found ",
                 shape_to_string(sizes));
      infer = i;
    } else {
      LOOM_CHECK(sizes[i] >= 0, std::string(op), "invalid size ", sizes[i], " in ",
                 shape_to_string(sizes));
      product *= sizes[i];
    }
  }
  if (infer) {
    LOOM_CHECK(product != 0 && numel % product == 0, std::string(op), "shape ",
               shape_to_string(sizes), " is invalid for a tensor of ", numel, " elements");
    out[*infer] = numel / product;
  } else {
    LOOM_CHECK(product == numel, std::string(op), "shape ", shape_to_string(sizes),
               " is invalid for a tensor of ", numel, " elements");
  }
  return out;
}

// Strides that let (old_sizes, old_strides) be seen as new_sizes, if any exist.
std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                      IntArrayRef new_sizes, int64_t numel) {
  DimVector new_strides(new_sizes.size());
  if (numel == 0) return contiguous_strides(new_sizes);
  DimVector sizes(old_sizes.begin(), old_sizes.end());
  DimVector strides(old_strides.begin(), old_strides.end());
  if (sizes.empty()) {
    sizes.push_back(1);
    strides.push_back(1);
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    // A chunk ends where the next-outer dim is not laid out right after this one.
    bool chunk_ends =
        d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
      new_strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_sizes[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

// Index of the furthest element that (sizes, strides) address from `offset`, for a
// non-empty tensor. Throws on negative strides or when the index overflows int64 (a huge
// stride must not wrap around and pass a bounds check).
int64_t last_element_index(IntArrayRef sizes, IntArrayRef strides, int64_t offset, const char* op) {
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(strides[i] >= 0, op, "strides must be non-negative, found ",
               shape_to_string(strides));
    int64_t step = 0;
    bool overflow = __builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
                    __builtin_add_overflow(last, step, &last);
    LOOM_CHECK(!overflow, op, "sizes ", shape_to_string(sizes), " and strides ",
               shape_to_string(strides), " address elements beyond the int64 range");
  }
  return last;
}

// Bytes a tensor needs whose furthest element is `last` (one past it); throws on overflow.
size_t bytes_through(int64_t last, ScalarType dtype, const char* op) {
  int64_t bytes = 0;
  bool overflow = __builtin_add_overflow(last, 1, &bytes) ||
                  __builtin_mul_overflow(bytes, static_cast<int64_t>(element_size(dtype)), &bytes);
  LOOM_CHECK(!overflow, op, "a tensor reaching element ", last, " of ", scalar_type_name(dtype),
             " overflows the byte count");
  return static_cast<size_t>(bytes);
}

}  // namespace

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // 0-d tensors accept dim 0 and -1
  LOOM_CHECK(dim >= -n && dim < n, std::string(op), "dim ", dim,
             " is out of range for a tensor of ", ndim, " dims (expected ", -n, "..", n - 1, ")");
  return dim < 0 ? dim + n : dim;
}

TensorBase empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  ReadSection section;  // the registered allocator may be replaced concurrently
  return empty_strided(sizes, strides, dtype, device,
                       AllocatorRegistry::instance().get(device.type));
}

TensorBase empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                         Allocator& allocator) {
  LOOM_CHECK(sizes.size() == strides.size(), "empty_strided", "sizes ", shape_to_string(sizes),
             " and strides ", shape_to_string(strides), " differ in length");
  int64_t numel = checked_numel(sizes, "empty_strided");
  // Bytes needed: one past the furthest element.
  size_t nbytes = numel == 0 ? 0
                             : bytes_through(last_element_index(sizes, strides, 0, "empty_strided"),
                                             dtype, "empty_strided");
  Ref<Storage> storage = Storage::allocate(nbytes, device, allocator);
  return TensorBase(Ref<TensorImpl>::adopt(
      new TensorImpl(std::move(storage), DimVector(sizes.begin(), sizes.end()),
                     DimVector(strides.begin(), strides.end()), 0, dtype)));
}

// Every op's output comes through here, so the common case is one pass over the sizes
// (strides, element count and bytes with overflow checks); anything unusual takes the
// checked general path, which reports it.
TensorBase empty(IntArrayRef sizes, ScalarType dtype, Device device) {
  DimVector strides(sizes.size());
  int64_t numel = 1;
  int64_t running = 1;
  bool unusual = false;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    unusual |= sizes[i] < 0;
    unusual |= __builtin_mul_overflow(numel, sizes[i], &numel);
    unusual |= __builtin_mul_overflow(running, std::max<int64_t>(sizes[i], 1), &running);
  }
  int64_t nbytes = 0;
  unusual |= __builtin_mul_overflow(numel, static_cast<int64_t>(element_size(dtype)), &nbytes);
  if (unusual) [[unlikely]] {
    checked_numel(sizes, "empty");  // before the strides, which would overflow with it
    DimVector checked_strides = contiguous_strides(sizes);
    return empty_strided(sizes, checked_strides, dtype, device);
  }
  Ref<Storage> storage = Storage::allocate(static_cast<size_t>(nbytes), device);
  return TensorBase(Ref<TensorImpl>::adopt(
      new TensorImpl(std::move(storage), DimVector(sizes.begin(), sizes.end()), std::move(strides),
                     dtype, TensorImpl::Contiguous{numel})));
}

TensorBase from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                     Device device, void (*deleter)(void* ctx, void* data), void* ctx) {
  LOOM_CHECK(DeviceTypeRegistry::instance().is_registered(device.type), "from_blob", "device type ",
             device.type, " is not registered");
  LOOM_CHECK(sizes.size() == strides.size(), "from_blob", "sizes ", shape_to_string(sizes),
             " and strides ", shape_to_string(strides), " differ in length");
  int64_t numel = checked_numel(sizes, "from_blob");
  size_t nbytes = numel == 0 ? 0
                             : bytes_through(last_element_index(sizes, strides, 0, "from_blob"),
                                             dtype, "from_blob");
  Ref<Storage> storage = Storage::wrap(data, nbytes, device, deleter, ctx);
  return TensorBase(Ref<TensorImpl>::adopt(
      new TensorImpl(std::move(storage), DimVector(sizes.begin(), sizes.end()),
                     DimVector(strides.begin(), strides.end()), 0, dtype)));
}

// wrap_dim accepts dim 0 and -1 for 0-dim tensors, but they have no size to read.
int64_t TensorBase::size(int64_t d) const {
  LOOM_CHECK(dim() > 0, "size", "dim ", d, " was given but the tensor has no dims");
  return sizes()[wrap_dim(d, dim(), "size")];
}
int64_t TensorBase::stride(int64_t d) const {
  LOOM_CHECK(dim() > 0, "stride", "dim ", d, " was given but the tensor has no dims");
  return strides()[wrap_dim(d, dim(), "stride")];
}

bool TensorBase::is_pinned() const {
  const Allocator* allocator = impl_->storage()->allocator();
  return device().type == kCPU && allocator != nullptr && allocator->pins_host_memory();
}

std::string TensorBase::describe() const {
  if (!defined()) return "Tensor(undefined)";
  return str_cat("Tensor(sizes=", shape_to_string(sizes()), ", dtype=", scalar_type_name(dtype()),
                 ", device=", device().to_string(), ")");
}

// Note [View bases]
// ~~~~~~~~~~~~~~~~~
// Every view remembers the tensor it views (for a view of a view, the first one's base),
// as PyTorch's `_base`: an in-place write through a view changes its base, and autograd
// must give the base that history (the ABI hands the base to plugins in
// LoomTensorView::view_base). `detached_alias` makes the one view without a base: the
// alias autograd keeps of a tensor it saves for backward, which must not keep the tensor
// itself (and its history, which may lead back to the saving node) alive.
TensorBase TensorBase::detached_alias() const {
  Ref<TensorImpl> impl = Ref<TensorImpl>::adopt(
      new TensorImpl(impl_->storage(), DimVector(impl_->sizes().begin(), impl_->sizes().end()),
                     DimVector(impl_->strides().begin(), impl_->strides().end()),
                     impl_->storage_offset(), dtype()));
  return TensorBase(std::move(impl));
}

TensorBase TensorBase::as_strided(IntList size_list, IntList stride_list,
                                  std::optional<int64_t> storage_offset) const {
  IntArrayRef sizes = size_list, strides = stride_list;
  LOOM_CHECK(sizes.size() == strides.size(), "as_strided", "sizes ", shape_to_string(sizes),
             " and strides ", shape_to_string(strides), " differ in length");
  int64_t offset = storage_offset.value_or(impl_->storage_offset());
  LOOM_CHECK(offset >= 0, "as_strided", "storage offset must be non-negative, found ", offset);
  int64_t numel = checked_numel(sizes, "as_strided");
  if (numel > 0) {
    int64_t last = last_element_index(sizes, strides, offset, "as_strided");
    int64_t capacity = static_cast<int64_t>(impl_->storage()->nbytes() / element_size(dtype()));
    LOOM_CHECK(last < capacity, "as_strided", "view of sizes ", shape_to_string(sizes),
               ", strides ", shape_to_string(strides), " at offset ", offset, " needs element ",
               last, " but the storage holds ", capacity, " elements");
  }
  Ref<TensorImpl> view = Ref<TensorImpl>::adopt(
      new TensorImpl(impl_->storage(), DimVector(sizes.begin(), sizes.end()),
                     DimVector(strides.begin(), strides.end()), offset, dtype()));
  TensorImpl* base = impl_->view_base() != nullptr ? impl_->view_base() : impl_.get();
  view->set_view_base(Ref<TensorImpl>::retain(base));
  if (const Ref<Quantizer>& q = impl_->quantizer()) {
    // A view maps its integers as its base does; per channel, only while the channel
    // axis stays where it is with all its channels.
    if (q->scheme() == QScheme::PerChannelAffine) {
      const int64_t axis = q->axis();
      LOOM_CHECK(view->dim() == dim() && view->sizes()[axis] == impl_->sizes()[axis] &&
                     view->strides()[axis] == impl_->strides()[axis],
                 "as_strided",
                 "a view of a per-channel quantized tensor must keep its channel axis ", axis, " (",
                 impl_->sizes()[axis], " channels); dequantize() it first");
    }
    view->set_quantizer(q);
  }
  return TensorBase(std::move(view));
}

// Note [Complex views]
// ~~~~~~~~~~~~~~~~~~~~~
// A complex64 element is two float32 in a row (real, imaginary), so a complex tensor of
// sizes S and element strides T is the float tensor of sizes S + [2] and strides 2T + [1]
// at twice the offset: view_as_real. view_as_complex is its inverse, for a float32 or
// float64 tensor whose last dim holds 2 elements with stride 1 and whose other strides and
// offset are even, as PyTorch requires. Both share the storage, so real ops on the parts
// (and the FFT's decompositions) read and write complex tensors.
TensorBase TensorBase::view_as_real() const {
  LOOM_CHECK(is_complex(dtype()), "view_as_real", "expected a complex tensor, found ",
             scalar_type_name(dtype()));
  DimVector sizes(impl_->sizes().begin(), impl_->sizes().end());
  DimVector strides;
  for (int64_t s : impl_->strides()) strides.push_back(2 * s);
  sizes.push_back(2);
  strides.push_back(1);
  Ref<TensorImpl> view =
      Ref<TensorImpl>::adopt(new TensorImpl(impl_->storage(), std::move(sizes), std::move(strides),
                                            2 * impl_->storage_offset(), real_part_type(dtype())));
  TensorImpl* base = impl_->view_base() != nullptr ? impl_->view_base() : impl_.get();
  view->set_view_base(Ref<TensorImpl>::retain(base));
  return TensorBase(std::move(view));
}

TensorBase TensorBase::view_as_complex() const {
  const char* op = "view_as_complex";
  LOOM_CHECK(dtype() == ScalarType::Float32 || dtype() == ScalarType::Float64, op,
             "expected a float32 or float64 tensor, found ", scalar_type_name(dtype()));
  const int64_t n = dim();
  LOOM_CHECK(n >= 1 && impl_->sizes()[n - 1] == 2, op,
             "expected a last dimension of size 2, found sizes ", shape_to_string(impl_->sizes()));
  LOOM_CHECK(impl_->strides()[n - 1] == 1, op, "expected a last dimension with stride 1, found ",
             impl_->strides()[n - 1]);
  DimVector sizes(impl_->sizes().begin(), impl_->sizes().end() - 1);
  DimVector strides;
  for (int64_t d = 0; d + 1 < n; ++d) {
    const int64_t s = impl_->strides()[d];
    LOOM_CHECK(s % 2 == 0, op, "expected even strides in all but the last dimension, found ",
               shape_to_string(impl_->strides()));
    strides.push_back(s / 2);
  }
  LOOM_CHECK(impl_->storage_offset() % 2 == 0, op, "expected an even storage offset, found ",
             impl_->storage_offset());
  Ref<TensorImpl> view =
      Ref<TensorImpl>::adopt(new TensorImpl(impl_->storage(), std::move(sizes), std::move(strides),
                                            impl_->storage_offset() / 2, complex_type_of(dtype())));
  TensorImpl* base = impl_->view_base() != nullptr ? impl_->view_base() : impl_.get();
  view->set_view_base(Ref<TensorImpl>::retain(base));
  return TensorBase(std::move(view));
}

std::optional<TensorBase> TensorBase::reshape_as_view(IntList size_list) const {
  IntArrayRef sizes = size_list;
  DimVector shape = infer_size(sizes, numel(), "reshape");
  std::optional<DimVector> strides = view_strides(this->sizes(), this->strides(), shape, numel());
  if (!strides) return std::nullopt;
  return as_strided(shape, *strides);
}

TensorBase TensorBase::view(IntList size_list) const {
  IntArrayRef sizes = size_list;
  DimVector shape = infer_size(sizes, numel(), "view");
  std::optional<DimVector> strides = view_strides(this->sizes(), this->strides(), shape, numel());
  LOOM_CHECK(strides.has_value(), "view", "cannot view a tensor of sizes ",
             shape_to_string(this->sizes()), " and strides ", shape_to_string(this->strides()),
             " as ", shape_to_string(shape), ": the strides do not allow it (use reshape)");
  return as_strided(shape, *strides);
}

TensorBase TensorBase::permute(IntList dim_list) const {
  IntArrayRef dims = dim_list;
  int64_t n = dim();
  LOOM_CHECK(static_cast<int64_t>(dims.size()) == n, "permute", "expected ", n,
             " dims for a tensor of sizes ", shape_to_string(sizes()), ", found ",
             shape_to_string(dims));
  DimVector new_sizes(n), new_strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    LOOM_CHECK(!seen[d], "permute", "dim ", d, " repeats in ", shape_to_string(dims));
    seen[d] = true;
    new_sizes[i] = sizes()[d];
    new_strides[i] = strides()[d];
  }
  return as_strided(new_sizes, new_strides);
}

TensorBase TensorBase::transpose(int64_t dim0, int64_t dim1) const {
  int64_t n = dim();
  if (n == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return *this;
  }
  int64_t a = wrap_dim(dim0, n, "transpose"), b = wrap_dim(dim1, n, "transpose");
  DimVector new_sizes(sizes().begin(), sizes().end());
  DimVector new_strides(strides().begin(), strides().end());
  std::swap(new_sizes[a], new_sizes[b]);
  std::swap(new_strides[a], new_strides[b]);
  return as_strided(new_sizes, new_strides);
}

TensorBase TensorBase::t() const {
  LOOM_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dims, found ", dim(), " dims");
  return dim() < 2 ? *this : transpose(0, 1);
}

TensorBase TensorBase::expand(IntList target_list) const {
  IntArrayRef target = target_list;
  LOOM_CHECK(target.size() >= sizes().size(), "expand", "cannot expand sizes ",
             shape_to_string(sizes()), " to ", shape_to_string(target),
             " (the target has fewer dims)");
  size_t lead = target.size() - sizes().size();
  DimVector resolved(target.begin(), target.end());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      LOOM_CHECK(i >= lead, "expand", "-1 is not allowed for new leading dim ", i, " in ",
                 shape_to_string(target));
      resolved[i] = sizes()[i - lead];
    }
    LOOM_CHECK(resolved[i] >= 0, "expand", "invalid size ", target[i], " at dim ", i, " in ",
               shape_to_string(target), " (expected -1 or a non-negative size)");
  }
  DimVector strides = broadcast_strides(sizes(), this->strides(), resolved, "expand");
  return as_strided(resolved, strides);
}

TensorBase TensorBase::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                             int64_t step) const {
  LOOM_CHECK(dim() > 0, "slice", "cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  LOOM_CHECK(step > 0, "slice", "step must be positive, found ", step);
  int64_t len = sizes()[d];
  auto clamp = [len](int64_t v) {
    if (v < 0) v += len;
    return std::clamp<int64_t>(v, 0, len);
  };
  int64_t s = clamp(start.value_or(0));
  int64_t e = std::max(s, clamp(end.value_or(len)));
  DimVector new_sizes(sizes().begin(), sizes().end());
  DimVector new_strides(strides().begin(), strides().end());
  new_sizes[d] = e > s ? (e - s - 1) / step + 1 : 0;  // no overflow for a huge step
  // Only a dim of size <= 1 can overflow here; its stride never moves the address.
  if (__builtin_mul_overflow(new_strides[d], step, &new_strides[d])) new_strides[d] = strides()[d];
  int64_t offset = storage_offset() + (new_sizes[d] > 0 ? s * strides()[d] : 0);
  return as_strided(new_sizes, new_strides, offset);
}

TensorBase TensorBase::narrow(int64_t d, int64_t start, int64_t length) const {
  LOOM_CHECK(dim() > 0, "narrow", "cannot narrow a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  int64_t len = sizes()[d];
  if (start < 0) start += len;
  LOOM_CHECK(start >= 0 && length >= 0 && length <= len - start, "narrow", "start ", start,
             " + length ", length, " exceeds dim ", d, " of size ", len);
  return slice(d, start, start + length, 1);
}

TensorBase TensorBase::select(int64_t d, int64_t index) const {
  LOOM_CHECK(dim() > 0, "select", "cannot select on a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  int64_t len = sizes()[d];
  LOOM_CHECK(index >= -len && index < len, "select", "index ", index, " is out of range for dim ",
             d, " of size ", len);
  if (index < 0) index += len;
  DimVector new_sizes(sizes().begin(), sizes().end());
  DimVector new_strides(strides().begin(), strides().end());
  int64_t offset = storage_offset() + index * strides()[d];
  new_sizes.erase(new_sizes.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return as_strided(new_sizes, new_strides, offset);
}

TensorBase TensorBase::squeeze() const {
  DimVector new_sizes, new_strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (sizes()[i] != 1) {
      new_sizes.push_back(sizes()[i]);
      new_strides.push_back(strides()[i]);
    }
  }
  return as_strided(new_sizes, new_strides);
}

TensorBase TensorBase::squeeze(int64_t d) const {
  if (dim() == 0) {
    wrap_dim(d, 0, "squeeze");
    return *this;
  }
  d = wrap_dim(d, dim(), "squeeze");
  if (sizes()[d] != 1) return *this;
  DimVector new_sizes(sizes().begin(), sizes().end());
  DimVector new_strides(strides().begin(), strides().end());
  new_sizes.erase(new_sizes.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return as_strided(new_sizes, new_strides);
}

TensorBase TensorBase::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector new_sizes(sizes().begin(), sizes().end());
  DimVector new_strides(strides().begin(), strides().end());
  int64_t stride = d < dim() ? sizes()[d] * strides()[d] : 1;
  new_sizes.insert(new_sizes.begin() + d, 1);
  new_strides.insert(new_strides.begin() + d, stride);
  return as_strided(new_sizes, new_strides);
}

TensorBase TensorBase::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  LOOM_CHECK(dim() >= 2, "diagonal", "expects a tensor with >= 2 dims, found ", dim());
  int64_t a = wrap_dim(dim1, dim(), "diagonal"), b = wrap_dim(dim2, dim(), "diagonal");
  LOOM_CHECK(a != b, "diagonal", "dim1 and dim2 must differ, both are ", a);
  int64_t len = offset >= 0 ? std::min(sizes()[a], sizes()[b] - offset)
                            : std::min(sizes()[a] + offset, sizes()[b]);
  len = std::max<int64_t>(len, 0);
  int64_t start = storage_offset();
  if (len > 0) start += offset >= 0 ? offset * strides()[b] : -offset * strides()[a];
  DimVector new_sizes, new_strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i == a || i == b) continue;
    new_sizes.push_back(sizes()[i]);
    new_strides.push_back(strides()[i]);
  }
  new_sizes.push_back(len);
  new_strides.push_back(strides()[a] + strides()[b]);
  return as_strided(new_sizes, new_strides, start);
}

std::optional<TensorBase> TensorBase::flatten_as_view(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape_as_view(std::vector<int64_t>{1});
  int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  LOOM_CHECK(s <= e, "flatten", "start_dim ", s, " comes after end_dim ", e);
  DimVector shape;
  for (int64_t i = 0; i < s; ++i) shape.push_back(sizes()[i]);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= sizes()[i];
  shape.push_back(merged);
  for (int64_t i = e + 1; i < dim(); ++i) shape.push_back(sizes()[i]);
  return reshape_as_view(shape);
}

}  // namespace loom
