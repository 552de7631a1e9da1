// Tests of loom::TensorBase: factories (empty, empty_strided, from_blob), metadata, 0-dim and
// zero-size tensors, reference counting and storage lifetime, and every metadata-only view
// op. Views are checked by sizes, strides, offset, aliasing and by reading the elements
// they address out of a base tensor filled with 0, 1, 2, ...
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "loom/core/allocator.h"
#include "loom/core/error.h"
#include "loom/core/tensor_base.h"
#include "loom/core/warning.h"
#include "loom_error_assertions.h"

namespace loom {
namespace {

using Shape = std::vector<int64_t>;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

Shape ToVec(IntArrayRef r) {
  return Shape(r.begin(), r.end());
}

// A contiguous float32 CPU tensor holding 0, 1, 2, ... in row-major order.
TensorBase Arange(const Shape& sizes) {
  TensorBase t = empty(sizes, ScalarType::Float32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}

// Visits every index of `sizes` in row-major order.
void ForEachIndex(const Shape& sizes, const std::function<void(const Shape&)>& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Shape idx(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    fn(idx);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// The elements `t` addresses, in row-major order, read through data<float>() + strides.
std::vector<float> Values(const TensorBase& t) {
  std::vector<float> out;
  const float* base = t.data<float>();
  ForEachIndex(ToVec(t.sizes()), [&](const Shape& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    out.push_back(base[off]);
  });
  return out;
}

// The values `fn(index)` over `sizes` in row-major order.
std::vector<float> Expected(const Shape& sizes, const std::function<int64_t(const Shape&)>& fn) {
  std::vector<float> out;
  ForEachIndex(sizes, [&](const Shape& idx) { out.push_back(static_cast<float>(fn(idx))); });
  return out;
}

// Asserts the metadata of a view of `base`.
void ExpectView(const TensorBase& view, const TensorBase& base, const Shape& sizes,
                const Shape& strides, int64_t offset) {
  EXPECT_EQ(ToVec(view.sizes()), sizes);
  EXPECT_EQ(ToVec(view.strides()), strides);
  EXPECT_EQ(view.storage_offset(), offset);
  EXPECT_TRUE(view.is_alias_of(base));
  EXPECT_EQ(view.dtype(), base.dtype());
  EXPECT_EQ(view.device(), base.device());
}

// Counts the free events of one pointer through an allocation observer.
class FreeCounter {
 public:
  FreeCounter() {
    id_ = AllocatorRegistry::instance().add_observer([this](const AllocationEvent& e) {
      if (e.is_free) {
        frees_.push_back(e.ptr);
      } else {
        allocs_.push_back(e);
      }
    });
  }
  ~FreeCounter() { AllocatorRegistry::instance().remove_observer(id_); }
  int frees_of(const void* p) const {
    int n = 0;
    for (const void* q : frees_) n += q == p;
    return n;
  }
  const std::vector<AllocationEvent>& allocs() const { return allocs_; }

 private:
  uint64_t id_;
  std::vector<const void*> frees_;
  std::vector<AllocationEvent> allocs_;
};

// ---------------------------------------------------------------------------------------
// Creation and metadata

TEST(TensorCreation, EmptyIsContiguousRowMajor) {
  TensorBase t = empty(Shape{2, 3, 4}, ScalarType::Float32);
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(ToVec(t.sizes()), (Shape{2, 3, 4}));
  EXPECT_EQ(ToVec(t.strides()), (Shape{12, 4, 1}));
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.dtype(), ScalarType::Float32);
  EXPECT_EQ(t.device(), (Device{kCPU, -1}));
  EXPECT_EQ(t.key_set(), DispatchKeySet::for_tensor_on(DispatchKey::CPU));
  EXPECT_EQ(t.impl()->storage()->nbytes(), 24u * 4u);
  ASSERT_NE(t.data_ptr(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);  // core allocator aligns
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(1), 4);
  EXPECT_EQ(t.stride(-3), 12);
  EXPECT_EQ(t.describe(), "Tensor(sizes=[2, 3, 4], dtype=float32, device=cpu)");
  EXPECT_EQ(TensorBase().describe(), "Tensor(undefined)");
  EXPECT_FALSE(TensorBase().defined());
}

TEST(TensorCreation, EmptyStorageSizeFollowsDtype) {
  for (ScalarType t : {ScalarType::Bool, ScalarType::Int16, ScalarType::Int64, ScalarType::BFloat16,
                       ScalarType::Float64, ScalarType::QInt32}) {
    TensorBase x = empty(Shape{5, 3}, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.impl()->storage()->nbytes(), 15 * element_size(t)) << scalar_type_name(t);
  }
  EXPECT_TRUE(empty(Shape{2}, ScalarType::QInt8).key_set().has(DispatchKey::Quantized));
  EXPECT_FALSE(empty(Shape{2}, ScalarType::Int8).key_set().has(DispatchKey::Quantized));
}

TEST(TensorCreation, EmptyWithExplicitCpuIndex) {
  TensorBase t = empty(Shape{3}, ScalarType::Int32, Device{kCPU, 0});
  EXPECT_EQ(t.device(), (Device{kCPU, 0}));
  EXPECT_EQ(t.describe(), "Tensor(sizes=[3], dtype=int32, device=cpu:0)");
}

TEST(TensorCreation, EmptyRejectsNegativeSizesAndOverflow) {
  EXPECT_LOOM_ERROR(empty(Shape{2, -1}, ScalarType::Float32), "empty",
                    "sizes must be non-negative, found [2, -1]");
  const int64_t big = int64_t{1} << 40;
  EXPECT_LOOM_ERROR(empty(Shape{big, big}, ScalarType::Float32), "empty",
                    "overflow the element count");
  // No elements, but the strides of the outer dims still overflow int64.
  EXPECT_LOOM_ERROR(empty(Shape{0, big, big}, ScalarType::Float32), "tensor",
                    "sizes [0, 1099511627776, 1099511627776] overflow the strides");
}

TEST(TensorCreation, EmptyStrided) {
  TensorBase col = empty_strided(Shape{2, 3}, Shape{1, 2}, ScalarType::Float32);  // column-major
  EXPECT_EQ(ToVec(col.strides()), (Shape{1, 2}));
  EXPECT_FALSE(col.is_contiguous());
  EXPECT_EQ(col.impl()->storage()->nbytes(), 6u * 4u);

  TensorBase gaps = empty_strided(Shape{2, 3}, Shape{10, 1}, ScalarType::Float32);  // padded rows
  EXPECT_FALSE(gaps.is_contiguous());
  EXPECT_EQ(gaps.impl()->storage()->nbytes(), 13u * 4u);  // 1 + 10 + 2 elements

  TensorBase bcast = empty_strided(Shape{4, 3}, Shape{0, 1}, ScalarType::Float64);
  EXPECT_EQ(bcast.numel(), 12);
  EXPECT_EQ(bcast.impl()->storage()->nbytes(), 3u * 8u);

  // Size-1 dims may have any stride and stay contiguous.
  EXPECT_TRUE(empty_strided(Shape{1, 3}, Shape{100, 1}, ScalarType::Float32).is_contiguous());
  EXPECT_TRUE(empty_strided(Shape{3, 1}, Shape{1, 7}, ScalarType::Float32).is_contiguous());
  // Zero-size tensors are contiguous whatever their strides.
  TensorBase none = empty_strided(Shape{0, 3}, Shape{1, 7}, ScalarType::Float32);
  EXPECT_TRUE(none.is_contiguous());
  EXPECT_EQ(none.impl()->storage()->nbytes(), 0u);

  EXPECT_LOOM_ERROR(empty_strided(Shape{2, 3}, Shape{1}, ScalarType::Float32), "empty_strided",
                    "sizes [2, 3] and strides [1] differ in length");
  EXPECT_LOOM_ERROR(empty_strided(Shape{2, 3}, Shape{3, -1}, ScalarType::Float32), "empty_strided",
                    "strides must be non-negative, found [3, -1]");
  // A huge stride must not wrap around to a small allocation.
  EXPECT_LOOM_ERROR(empty_strided(Shape{5}, Shape{int64_t{1} << 62}, ScalarType::Float32),
                    "empty_strided", "beyond the int64 range");
  EXPECT_LOOM_ERROR(empty_strided(Shape{2}, Shape{int64_t{1} << 61}, ScalarType::Float64),
                    "empty_strided", "overflows the byte count");
}

struct BlobDeleterState {
  int calls = 0;
  void* last_data = nullptr;
};
void CountingDeleter(void* ctx, void* data) {
  auto* state = static_cast<BlobDeleterState*>(ctx);
  ++state->calls;
  state->last_data = data;
}

TEST(TensorCreation, FromBlobDeleterRunsExactlyOnceWhenLastViewDies) {
  float buffer[6] = {10, 11, 12, 13, 14, 15};
  BlobDeleterState state;
  {
    TensorBase t = from_blob(buffer, Shape{2, 3}, Shape{3, 1}, ScalarType::Float32, Device{},
                             CountingDeleter, &state);
    EXPECT_EQ(t.data_ptr(), buffer);
    EXPECT_EQ(t.impl()->storage()->nbytes(), sizeof(buffer));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_THAT(Values(t), ElementsAre(10, 11, 12, 13, 14, 15));
    TensorBase copy = t;
    TensorBase view = t.transpose(0, 1);
    EXPECT_THAT(Values(view), ElementsAre(10, 13, 11, 14, 12, 15));
    t = TensorBase();
    copy = TensorBase();
    EXPECT_EQ(state.calls, 0);  // the transpose still holds the storage
    TensorBase sub = view.select(0, 2);
    view = TensorBase();
    EXPECT_EQ(state.calls, 0);
    EXPECT_THAT(Values(sub), ElementsAre(12, 15));
  }
  EXPECT_EQ(state.calls, 1);
  EXPECT_EQ(state.last_data, buffer);
}

TEST(TensorCreation, FromBlobStridedAndWithoutDeleter) {
  float buffer[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  FreeCounter observer;
  {
    TensorBase t = from_blob(buffer, Shape{2, 2}, Shape{4, 2}, ScalarType::Float32, Device{},
                             nullptr, nullptr);
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.impl()->storage()->nbytes(), 7u * 4u);  // up to element 6
    EXPECT_THAT(Values(t), ElementsAre(0, 2, 4, 6));
    // as_strided is bounded by the wrapped extent.
    EXPECT_LOOM_ERROR(t.as_strided(Shape{8}, Shape{1}), "as_strided", "storage holds 7 elements");
  }
  EXPECT_TRUE(observer.allocs().empty());  // wrapped memory is not an allocation
  EXPECT_EQ(observer.frees_of(buffer), 0);
  EXPECT_EQ(buffer[7], 7);

  EXPECT_LOOM_ERROR(
      from_blob(buffer, Shape{2}, Shape{1, 1}, ScalarType::Float32, Device{}, nullptr, nullptr),
      "from_blob", "differ in length");
  EXPECT_LOOM_ERROR(
      from_blob(buffer, Shape{-2}, Shape{1}, ScalarType::Float32, Device{}, nullptr, nullptr),
      "from_blob", "sizes must be non-negative");
  EXPECT_LOOM_ERROR(from_blob(buffer, Shape{3}, Shape{int64_t{1} << 62}, ScalarType::Float32,
                              Device{}, nullptr, nullptr),
                    "from_blob", "beyond the int64 range");
}

TEST(TensorCreation, ZeroDimTensor) {
  TensorBase s = empty(Shape{}, ScalarType::Float32);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_TRUE(s.sizes().empty());
  EXPECT_TRUE(s.strides().empty());
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.impl()->storage()->nbytes(), 4u);
  *s.data<float>() = 42.5f;
  EXPECT_THAT(Values(s), ElementsAre(42.5f));
  EXPECT_EQ(s.describe(), "Tensor(sizes=[], dtype=float32, device=cpu)");
  // A 0-dim tensor has no size or stride to read, not even at dim 0 or -1.
  EXPECT_LOOM_ERROR(s.size(0), "size", "no dims");
  EXPECT_LOOM_ERROR(s.size(-1), "size", "no dims");
  EXPECT_LOOM_ERROR(s.stride(0), "stride", "no dims");
}

TEST(TensorCreation, ZeroSizeTensors) {
  TensorBase a = empty(Shape{0, 3}, ScalarType::Float32);
  EXPECT_EQ(a.numel(), 0);
  EXPECT_EQ(ToVec(a.strides()), (Shape{3, 1}));
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(a.impl()->storage()->nbytes(), 0u);

  TensorBase b = empty(Shape{2, 0, 3}, ScalarType::Float32);
  EXPECT_EQ(b.numel(), 0);
  EXPECT_EQ(ToVec(b.strides()), (Shape{3, 3, 1}));  // size-0 dims count as 1 for strides

  // Views of zero-size tensors.
  EXPECT_EQ(ToVec(b.view(Shape{0}).sizes()), (Shape{0}));
  EXPECT_EQ(ToVec(b.view(Shape{-1, 3}).sizes()), (Shape{0, 3}));
  EXPECT_EQ(ToVec(b.view(Shape{3, -1}).sizes()), (Shape{3, 0}));
  EXPECT_LOOM_ERROR(b.view(Shape{-1, 0}), "view", "invalid for a tensor of 0 elements");
  EXPECT_EQ(ToVec(b.transpose(0, 2).sizes()), (Shape{3, 0, 2}));
  EXPECT_EQ(ToVec(b.select(0, 1).sizes()), (Shape{0, 3}));
  EXPECT_EQ(ToVec(b.slice(1, 0, 5).sizes()), (Shape{2, 0, 3}));
  EXPECT_EQ(ToVec(empty(Shape{1, 3}, ScalarType::Float32).expand(Shape{0, 3}).sizes()),
            (Shape{0, 3}));
  EXPECT_EQ(b.flatten_as_view()->numel(), 0);
  EXPECT_TRUE(Values(b).empty());
}

// ---------------------------------------------------------------------------------------
// Reference counting and storage lifetime

TEST(TensorRefcount, CopiesShareTheImpl) {
  TensorBase a = empty(Shape{2}, ScalarType::Float32);
  EXPECT_EQ(a.impl()->use_count(), 1u);
  {
    TensorBase b = a;
    EXPECT_EQ(b.impl(), a.impl());
    EXPECT_EQ(a.impl()->use_count(), 2u);
    b.data<float>()[1] = 3.0f;
    EXPECT_EQ(a.data<float>()[1], 3.0f);
    TensorBase c;
    c = b;
    EXPECT_EQ(a.impl()->use_count(), 3u);
  }
  EXPECT_EQ(a.impl()->use_count(), 1u);

  TensorImpl* raw = a.impl();
  TensorBase moved = std::move(a);
  EXPECT_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved.impl(), raw);
  EXPECT_EQ(raw->use_count(), 1u);

  TensorBase borrowed = TensorBase::borrow(raw);
  EXPECT_EQ(raw->use_count(), 2u);
  TensorImpl* released = borrowed.release();
  EXPECT_FALSE(borrowed.defined());
  EXPECT_EQ(released, raw);
  EXPECT_EQ(raw->use_count(), 2u);  // release hands the reference out, it does not drop it
  TensorBase adopted = TensorBase::adopt(released);
  EXPECT_EQ(raw->use_count(), 2u);
  adopted = TensorBase();
  EXPECT_EQ(raw->use_count(), 1u);
}

TEST(TensorRefcount, ViewsShareStorageNotImpl) {
  TensorBase a = Arange({2, 3});
  TensorBase v = a.view(Shape{6});
  EXPECT_NE(v.impl(), a.impl());
  EXPECT_EQ(v.impl()->storage().get(), a.impl()->storage().get());
  EXPECT_TRUE(v.is_alias_of(a));
  EXPECT_TRUE(a.is_alias_of(v));
  EXPECT_EQ(a.impl()->storage()->use_count(), 2u);
  EXPECT_FALSE(Arange({2, 3}).is_alias_of(a));
  v.data<float>()[4] = -1.0f;  // writes through a view land in the base
  EXPECT_EQ(a.data<float>()[4], -1.0f);
}

TEST(TensorRefcount, StorageFreedWhenLastViewDies) {
  FreeCounter observer;
  TensorBase base = empty(Shape{4, 4}, ScalarType::Float32);
  const void* ptr = base.data_ptr();
  ASSERT_EQ(observer.allocs().size(), 1u);
  EXPECT_EQ(observer.allocs()[0].ptr, ptr);
  EXPECT_EQ(observer.allocs()[0].nbytes, 64u);
  EXPECT_FALSE(observer.allocs()[0].is_free);

  TensorBase row = base.select(0, 2);
  TensorBase col = base.t().select(0, 1);
  base = TensorBase();
  EXPECT_EQ(observer.frees_of(ptr), 0);
  row = TensorBase();
  EXPECT_EQ(observer.frees_of(ptr), 0);
  TensorBase copy_of_col = col;
  col = TensorBase();
  EXPECT_EQ(observer.frees_of(ptr), 0);
  copy_of_col = TensorBase();
  EXPECT_EQ(observer.frees_of(ptr), 1);
}

// ---------------------------------------------------------------------------------------
// View ops

TEST(TensorView, ViewContiguous) {
  TensorBase a = Arange({2, 3, 4});
  TensorBase v = a.view(Shape{6, 4});
  ExpectView(v, a, {6, 4}, {4, 1}, 0);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(Values(v), Expected({24}, [](const Shape& i) { return i[0]; }));

  ExpectView(a.view(Shape{-1}), a, {24}, {1}, 0);
  ExpectView(a.view(Shape{4, -1}), a, {4, 6}, {6, 1}, 0);
  ExpectView(a.view(Shape{2, -1, 2}), a, {2, 6, 2}, {12, 2, 1}, 0);
  ExpectView(a.view(Shape{1, 24, 1}), a, {1, 24, 1}, {24, 1, 1}, 0);
  EXPECT_EQ(Values(a.view(Shape{4, -1})), Expected({24}, [](const Shape& i) { return i[0]; }));
}

TEST(TensorView, ViewOfZeroDimAndBack) {
  TensorBase s = Arange({});
  *s.data<float>() = 7.0f;
  TensorBase one = s.view(Shape{1});
  ExpectView(one, s, {1}, {1}, 0);
  ExpectView(s.view(Shape{-1}), s, {1}, {1}, 0);
  TensorBase back = one.view(Shape{});
  ExpectView(back, s, {}, {}, 0);
  EXPECT_THAT(Values(back), ElementsAre(7.0f));
}

TEST(TensorView, ViewOfNonContiguousWhenStridesAllow) {
  // Columns 0..3 of a [4, 6] tensor: rows are not adjacent, but each row can be split.
  TensorBase a = Arange({4, 6});
  TensorBase cols = a.slice(1, 0, 4);
  ASSERT_FALSE(cols.is_contiguous());
  TensorBase v = cols.view(Shape{4, 2, 2});
  ExpectView(v, a, {4, 2, 2}, {6, 2, 1}, 0);
  EXPECT_EQ(Values(v),
            Expected({4, 2, 2}, [](const Shape& i) { return i[0] * 6 + i[1] * 2 + i[2]; }));
  // Rows 1..2 of it are contiguous again, at an offset.
  TensorBase rows = a.slice(0, 1, 3);
  TensorBase flat = rows.view(Shape{12});
  ExpectView(flat, a, {12}, {1}, 6);
  EXPECT_EQ(Values(flat), Expected({12}, [](const Shape& i) { return 6 + i[0]; }));
  // A merged dim across the row gap is impossible.
  EXPECT_LOOM_ERROR(cols.view(Shape{16}), "view", "the strides do not allow it");
}

TEST(TensorView, ViewIgnoresStridesOfSizeOneDims) {
  // [2, 1, 3] laid out row-major except for the size-1 dim's stride, which never moves.
  TensorBase a = Arange({6});
  TensorBase odd = a.as_strided(Shape{2, 1, 3}, Shape{3, 100, 1});
  EXPECT_TRUE(odd.is_contiguous());
  TensorBase flat = odd.view(Shape{6});
  ExpectView(flat, a, {6}, {1}, 0);
  EXPECT_THAT(Values(flat), ElementsAre(0, 1, 2, 3, 4, 5));
  TensorBase regrouped = odd.view(Shape{3, 2});
  ExpectView(regrouped, a, {3, 2}, {2, 1}, 0);
  EXPECT_TRUE(odd.reshape_as_view(Shape{6}).has_value());
}

TEST(TensorView, ViewOfTransposedFails) {
  TensorBase t = Arange({2, 3}).t();
  EXPECT_LOOM_ERROR(t.view(Shape{6}), "view",
                    "cannot view a tensor of sizes [3, 2] and strides [1, 3] as [6]");
  EXPECT_LOOM_ERROR(t.view(Shape{2, 3}), "view", "the strides do not allow it");
  // Inserting size-1 dims is always possible.
  TensorBase v = t.view(Shape{3, 1, 2});
  EXPECT_EQ(ToVec(v.sizes()), (Shape{3, 1, 2}));
  EXPECT_EQ(v.stride(0), 1);
  EXPECT_EQ(v.stride(2), 3);
  EXPECT_EQ(Values(v), Values(t));
}

TEST(TensorView, ViewRejectsBadShapes) {
  TensorBase a = Arange({2, 3, 4});
  EXPECT_LOOM_ERROR(a.view(Shape{-1, -1}), "view", "only one dimension can be -1, found [-1, -1]");
  EXPECT_LOOM_ERROR(a.view(Shape{5, 5}), "view",
                    "shape [5, 5] is invalid for a tensor of 24 elements");
  EXPECT_LOOM_ERROR(a.view(Shape{5, -1}), "view", "shape [5, -1] is invalid for a tensor of 24");
  EXPECT_LOOM_ERROR(a.view(Shape{-2, 12}), "view", "invalid size -2 in [-2, 12]");
}

TEST(TensorView, ReshapeAsView) {
  TensorBase a = Arange({2, 3});
  std::optional<TensorBase> v = a.reshape_as_view(Shape{3, -1});
  ASSERT_TRUE(v.has_value());
  ExpectView(*v, a, {3, 2}, {2, 1}, 0);
  EXPECT_EQ(Values(*v), Expected({6}, [](const Shape& i) { return i[0]; }));

  TensorBase t = a.t();
  EXPECT_FALSE(t.reshape_as_view(Shape{6}).has_value());  // needs a copy
  EXPECT_FALSE(t.reshape_as_view(Shape{-1}).has_value());
  std::optional<TensorBase> same = t.reshape_as_view(Shape{3, 2});
  ASSERT_TRUE(same.has_value());
  ExpectView(*same, a, {3, 2}, {1, 3}, 0);
  EXPECT_LOOM_ERROR(a.reshape_as_view(Shape{4, 2}), "reshape", "shape [4, 2] is invalid");
  EXPECT_LOOM_ERROR(a.reshape_as_view(Shape{-1, -1}), "reshape", "only one dimension can be -1");
}

TEST(TensorView, Permute) {
  TensorBase a = Arange({2, 3, 4});
  TensorBase p = a.permute(Shape{2, 0, 1});
  ExpectView(p, a, {4, 2, 3}, {1, 12, 4}, 0);
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_EQ(Values(p),
            Expected({4, 2, 3}, [](const Shape& i) { return i[1] * 12 + i[2] * 4 + i[0]; }));
  TensorBase q = a.permute(Shape{-1, 0, -2});
  ExpectView(q, a, {4, 2, 3}, {1, 12, 4}, 0);
  TensorBase id = a.permute(Shape{0, 1, 2});
  ExpectView(id, a, {2, 3, 4}, {12, 4, 1}, 0);
  EXPECT_TRUE(id.is_contiguous());
  TensorBase s = Arange({});
  ExpectView(s.permute(Shape{}), s, {}, {}, 0);  // 0-dim: the empty permutation

  EXPECT_LOOM_ERROR(a.permute(Shape{0, 1}), "permute",
                    "expected 3 dims for a tensor of sizes [2, 3, 4], found [0, 1]");
  EXPECT_LOOM_ERROR(a.permute(Shape{0, 1, 0}), "permute", "dim 0 repeats in [0, 1, 0]");
  EXPECT_LOOM_ERROR(a.permute(Shape{0, 1, -3}), "permute", "dim 0 repeats");
  EXPECT_LOOM_ERROR(a.permute(Shape{0, 1, 3}), "permute",
                    "dim 3 is out of range for a tensor of 3 dims (expected -3..2)");
}

TEST(TensorView, Transpose) {
  TensorBase a = Arange({2, 3, 4});
  TensorBase t = a.transpose(0, 2);
  ExpectView(t, a, {4, 3, 2}, {1, 4, 12}, 0);
  EXPECT_EQ(Values(t),
            Expected({4, 3, 2}, [](const Shape& i) { return i[2] * 12 + i[1] * 4 + i[0]; }));
  ExpectView(a.transpose(-1, 0), a, {4, 3, 2}, {1, 4, 12}, 0);
  ExpectView(a.transpose(1, 1), a, {2, 3, 4}, {12, 4, 1}, 0);
  // Transposing twice restores the layout.
  EXPECT_EQ(Values(t.transpose(2, 0)), Values(a));
  EXPECT_LOOM_ERROR(a.transpose(0, 3), "transpose", "dim 3 is out of range");
  EXPECT_LOOM_ERROR(a.transpose(-4, 0), "transpose", "dim -4 is out of range");
  TensorBase s = Arange({});
  EXPECT_EQ(s.transpose(0, -1).impl(), s.impl());
}

TEST(TensorView, T) {
  TensorBase a = Arange({2, 3});
  TensorBase t = a.t();
  ExpectView(t, a, {3, 2}, {1, 3}, 0);
  EXPECT_EQ(Values(t), Expected({3, 2}, [](const Shape& i) { return i[1] * 3 + i[0]; }));
  TensorBase v = Arange({5});
  EXPECT_EQ(v.t().impl(), v.impl());  // 1-D: itself
  TensorBase s = Arange({});
  EXPECT_EQ(s.t().impl(), s.impl());
  EXPECT_LOOM_ERROR(Arange({2, 2, 2}).t(), "t", "expects a tensor with <= 2 dims, found 3");
}

TEST(TensorView, Expand) {
  TensorBase a = Arange({3, 1});
  TensorBase e = a.expand(Shape{2, 3, 4});
  ExpectView(e, a, {2, 3, 4}, {0, 1, 0}, 0);
  EXPECT_EQ(e.numel(), 24);
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_EQ(Values(e), Expected({2, 3, 4}, [](const Shape& i) { return i[1]; }));

  TensorBase keep = a.expand(Shape{-1, 5});
  ExpectView(keep, a, {3, 5}, {1, 0}, 0);
  EXPECT_EQ(Values(keep), Expected({3, 5}, [](const Shape& i) { return i[0]; }));

  TensorBase same = a.expand(Shape{3, 1});  // no stretching: strides kept
  ExpectView(same, a, {3, 1}, {1, 1}, 0);

  TensorBase row = Arange({4}).slice(0, 1, 4);  // offset 1
  TensorBase rows = row.expand(Shape{2, -1});
  ExpectView(rows, row, {2, 3}, {0, 1}, 1);
  EXPECT_EQ(Values(rows), Expected({2, 3}, [](const Shape& i) { return 1 + i[1]; }));

  TensorBase s = Arange({});
  *s.data<float>() = 9;
  TensorBase filled = s.expand(Shape{2, 2});
  ExpectView(filled, s, {2, 2}, {0, 0}, 0);
  EXPECT_THAT(Values(filled), ElementsAre(9, 9, 9, 9));

  EXPECT_LOOM_ERROR(a.expand(Shape{3}), "expand", "cannot expand sizes [3, 1] to [3]");
  EXPECT_LOOM_ERROR(a.expand(Shape{4, 4}), "expand",
                    "shape [3, 1] cannot be broadcast to [4, 4] (dim 0: 3 vs 4)");
  EXPECT_LOOM_ERROR(a.expand(Shape{-1, 3, 4}), "expand",
                    "-1 is not allowed for new leading dim 0 in [-1, 3, 4]");
}

TEST(TensorView, Slice) {
  TensorBase a = Arange({10});
  TensorBase s = a.slice(0, 2, 8, 2);
  ExpectView(s, a, {3}, {2}, 2);
  EXPECT_THAT(Values(s), ElementsAre(2, 4, 6));

  ExpectView(a.slice(0, -3, std::nullopt), a, {3}, {1}, 7);
  EXPECT_THAT(Values(a.slice(0, -3, std::nullopt)), ElementsAre(7, 8, 9));
  EXPECT_THAT(Values(a.slice(0, std::nullopt, -8)), ElementsAre(0, 1));
  EXPECT_THAT(Values(a.slice(-1, -100, 100)), ElementsAreArray(Values(a)));  // clamped
  EXPECT_THAT(Values(a.slice(0, 5, 100, 3)), ElementsAre(5, 8));
  EXPECT_THAT(Values(a.slice(0, 9, std::nullopt, 5)), ElementsAre(9));
  // A huge step takes just the first element.
  EXPECT_THAT(Values(a.slice(0, 1, std::nullopt, std::numeric_limits<int64_t>::max())),
              ElementsAre(1));
  TensorBase empty_slice = a.slice(0, 8, 3);  // end before start
  EXPECT_EQ(ToVec(empty_slice.sizes()), (Shape{0}));
  EXPECT_TRUE(empty_slice.is_alias_of(a));
  EXPECT_EQ(ToVec(a.slice(0, 10, std::nullopt).sizes()), (Shape{0}));

  TensorBase m = Arange({4, 5});
  TensorBase cols = m.slice(1, 1, 4);
  ExpectView(cols, m, {4, 3}, {5, 1}, 1);
  EXPECT_EQ(Values(cols), Expected({4, 3}, [](const Shape& i) { return i[0] * 5 + i[1] + 1; }));
  TensorBase nested = cols.slice(0, 1, 4, 2);  // offsets accumulate
  ExpectView(nested, m, {2, 3}, {10, 1}, 6);
  EXPECT_EQ(Values(nested),
            Expected({2, 3}, [](const Shape& i) { return 5 + i[0] * 10 + i[1] + 1; }));

  EXPECT_LOOM_ERROR(a.slice(0, 0, 5, 0), "slice", "step must be positive, found 0");
  EXPECT_LOOM_ERROR(a.slice(0, 0, 5, -1), "slice", "step must be positive, found -1");
  EXPECT_LOOM_ERROR(a.slice(1, 0, 5), "slice", "dim 1 is out of range");
  EXPECT_LOOM_ERROR(Arange({}).slice(0, 0, 1), "slice", "cannot slice a 0-dim tensor");
}

TEST(TensorView, Narrow) {
  TensorBase m = Arange({4, 5});
  TensorBase rows = m.narrow(0, 1, 2);
  ExpectView(rows, m, {2, 5}, {5, 1}, 5);
  EXPECT_EQ(Values(rows), Expected({2, 5}, [](const Shape& i) { return 5 + i[0] * 5 + i[1]; }));
  TensorBase last_cols = m.narrow(-1, -2, 2);  // negative dim and start
  ExpectView(last_cols, m, {4, 2}, {5, 1}, 3);
  EXPECT_EQ(Values(last_cols),
            Expected({4, 2}, [](const Shape& i) { return i[0] * 5 + 3 + i[1]; }));
  EXPECT_EQ(ToVec(m.narrow(1, 5, 0).sizes()), (Shape{4, 0}));

  EXPECT_LOOM_ERROR(m.narrow(0, 3, 2), "narrow", "start 3 + length 2 exceeds dim 0 of size 4");
  EXPECT_LOOM_ERROR(m.narrow(0, 1, -1), "narrow", "length -1");
  EXPECT_LOOM_ERROR(m.narrow(0, -5, 1), "narrow", "exceeds dim 0 of size 4");
  EXPECT_LOOM_ERROR(m.narrow(2, 0, 1), "narrow", "dim 2 is out of range");
  EXPECT_LOOM_ERROR(Arange({}).narrow(0, 0, 1), "narrow", "cannot narrow a 0-dim tensor");
}

TEST(TensorView, Select) {
  TensorBase a = Arange({2, 3, 4});
  TensorBase s = a.select(1, 2);
  ExpectView(s, a, {2, 4}, {12, 1}, 8);
  EXPECT_EQ(Values(s), Expected({2, 4}, [](const Shape& i) { return i[0] * 12 + 8 + i[1]; }));
  ExpectView(a.select(1, -1), a, {2, 4}, {12, 1}, 8);
  ExpectView(a.select(-3, -2), a, {3, 4}, {4, 1}, 0);
  TensorBase last = a.select(2, 3);
  ExpectView(last, a, {2, 3}, {12, 4}, 3);
  EXPECT_EQ(Values(last),
            Expected({2, 3}, [](const Shape& i) { return i[0] * 12 + i[1] * 4 + 3; }));
  // Selecting down to a 0-dim tensor.
  TensorBase v = Arange({5});
  TensorBase elem = v.select(0, 3);
  ExpectView(elem, v, {}, {}, 3);
  EXPECT_THAT(Values(elem), ElementsAre(3));
  EXPECT_EQ(*elem.data<float>(), 3);

  EXPECT_LOOM_ERROR(a.select(1, 3), "select", "index 3 is out of range for dim 1 of size 3");
  EXPECT_LOOM_ERROR(a.select(1, -4), "select", "index -4 is out of range for dim 1 of size 3");
  EXPECT_LOOM_ERROR(a.select(3, 0), "select", "dim 3 is out of range");
  EXPECT_LOOM_ERROR(Arange({}).select(0, 0), "select", "cannot select on a 0-dim tensor");
}

TEST(TensorView, Squeeze) {
  TensorBase a = Arange({1, 3, 1, 2});
  ASSERT_EQ(ToVec(a.strides()), (Shape{6, 2, 2, 1}));
  TensorBase all = a.squeeze();
  ExpectView(all, a, {3, 2}, {2, 1}, 0);
  EXPECT_EQ(Values(all), Expected({6}, [](const Shape& i) { return i[0]; }));
  ExpectView(a.squeeze(0), a, {3, 1, 2}, {2, 2, 1}, 0);
  ExpectView(a.squeeze(-2), a, {1, 3, 2}, {6, 2, 1}, 0);
  ExpectView(a.squeeze(1), a, {1, 3, 1, 2}, {6, 2, 2, 1}, 0);  // size 3: unchanged

  // Squeezing a view keeps its offset.
  TensorBase col = Arange({3, 4}).slice(1, 2, 3);  // [3, 1] at offset 2
  TensorBase sq = col.squeeze();
  EXPECT_EQ(ToVec(sq.sizes()), (Shape{3}));
  EXPECT_EQ(sq.storage_offset(), 2);
  EXPECT_THAT(Values(sq), ElementsAre(2, 6, 10));

  TensorBase ones = Arange({1, 1});
  TensorBase scalar = ones.squeeze();
  ExpectView(scalar, ones, {}, {}, 0);
  TensorBase s = Arange({});
  ExpectView(s.squeeze(), s, {}, {}, 0);
  ExpectView(s.squeeze(0), s, {}, {}, 0);
  ExpectView(s.squeeze(-1), s, {}, {}, 0);

  EXPECT_LOOM_ERROR(a.squeeze(4), "squeeze", "dim 4 is out of range for a tensor of 4 dims");
  EXPECT_LOOM_ERROR(s.squeeze(1), "squeeze", "dim 1 is out of range for a tensor of 0 dims");
}

TEST(TensorView, Unsqueeze) {
  TensorBase a = Arange({2, 3});
  ExpectView(a.unsqueeze(0), a, {1, 2, 3}, {6, 3, 1}, 0);
  ExpectView(a.unsqueeze(1), a, {2, 1, 3}, {3, 3, 1}, 0);
  ExpectView(a.unsqueeze(2), a, {2, 3, 1}, {3, 1, 1}, 0);
  ExpectView(a.unsqueeze(-1), a, {2, 3, 1}, {3, 1, 1}, 0);
  ExpectView(a.unsqueeze(-3), a, {1, 2, 3}, {6, 3, 1}, 0);
  EXPECT_TRUE(a.unsqueeze(1).is_contiguous());
  EXPECT_EQ(Values(a.unsqueeze(1)), Values(a));
  // On a transposed tensor the new dim's stride still lets the result be viewed back.
  TensorBase t = a.t().unsqueeze(1);
  ExpectView(t, a, {3, 1, 2}, {1, 6, 3}, 0);  // stride of the new dim: 2 * 3
  EXPECT_EQ(Values(t), Values(a.t()));
  TensorBase s = Arange({});
  ExpectView(s.unsqueeze(0), s, {1}, {1}, 0);
  ExpectView(s.unsqueeze(-1), s, {1}, {1}, 0);

  EXPECT_LOOM_ERROR(a.unsqueeze(3), "unsqueeze", "dim 3 is out of range");
  EXPECT_LOOM_ERROR(a.unsqueeze(-4), "unsqueeze", "dim -4 is out of range");
  EXPECT_LOOM_ERROR(s.unsqueeze(1), "unsqueeze", "dim 1 is out of range");
}

TEST(TensorView, Diagonal) {
  TensorBase m = Arange({3, 4});
  TensorBase d = m.diagonal();
  ExpectView(d, m, {3}, {5}, 0);
  EXPECT_THAT(Values(d), ElementsAre(0, 5, 10));
  TensorBase up = m.diagonal(1);
  ExpectView(up, m, {3}, {5}, 1);
  EXPECT_THAT(Values(up), ElementsAre(1, 6, 11));
  TensorBase up3 = m.diagonal(3);
  ExpectView(up3, m, {1}, {5}, 3);
  EXPECT_THAT(Values(up3), ElementsAre(3));
  TensorBase down = m.diagonal(-1);
  ExpectView(down, m, {2}, {5}, 4);
  EXPECT_THAT(Values(down), ElementsAre(4, 9));
  TensorBase beyond = m.diagonal(5);
  ExpectView(beyond, m, {0}, {5}, 0);
  EXPECT_EQ(beyond.numel(), 0);
  EXPECT_EQ(m.diagonal(-3).numel(), 0);

  // Swapped dims: the diagonal of the transpose.
  EXPECT_THAT(Values(m.diagonal(0, 1, 0)), ElementsAre(0, 5, 10));
  TensorBase swapped_up = m.diagonal(1, 1, 0);
  ExpectView(swapped_up, m, {2}, {5}, 4);
  EXPECT_THAT(Values(swapped_up), ElementsAre(4, 9));
  EXPECT_EQ(Values(m.diagonal(1, -1, -2)), Values(m.t().diagonal(1)));

  // Batched: the diagonal dim goes last, other dims keep their order.
  TensorBase b = Arange({2, 3, 3});
  TensorBase bd = b.diagonal(0, 1, 2);
  ExpectView(bd, b, {2, 3}, {9, 4}, 0);
  EXPECT_EQ(Values(bd), Expected({2, 3}, [](const Shape& i) { return i[0] * 9 + i[1] * 4; }));
  TensorBase outer = b.diagonal(0, 0, 2);
  ExpectView(outer, b, {3, 2}, {3, 10}, 0);
  EXPECT_EQ(Values(outer), Expected({3, 2}, [](const Shape& i) { return i[0] * 3 + i[1] * 10; }));
  // dim1 = 2, dim2 = 0, below the diagonal: element (j, k) is b[k][j][k + 1].
  TensorBase outer_off = b.diagonal(-1, -1, 0);
  ExpectView(outer_off, b, {3, 2}, {3, 10}, 1);
  EXPECT_EQ(Values(outer_off),
            Expected({3, 2}, [](const Shape& i) { return i[1] * 9 + i[0] * 3 + i[1] + 1; }));

  EXPECT_LOOM_ERROR(Arange({4}).diagonal(), "diagonal", "expects a tensor with >= 2 dims, found 1");
  EXPECT_LOOM_ERROR(m.diagonal(0, 1, 1), "diagonal", "dim1 and dim2 must differ, both are 1");
  EXPECT_LOOM_ERROR(m.diagonal(0, 0, -2), "diagonal", "dim1 and dim2 must differ");
  EXPECT_LOOM_ERROR(m.diagonal(0, 0, 2), "diagonal", "dim 2 is out of range");
}

TEST(TensorView, FlattenAsView) {
  TensorBase a = Arange({2, 3, 4});
  std::optional<TensorBase> all = a.flatten_as_view();
  ASSERT_TRUE(all.has_value());
  ExpectView(*all, a, {24}, {1}, 0);
  ExpectView(*a.flatten_as_view(1, 2), a, {2, 12}, {12, 1}, 0);
  ExpectView(*a.flatten_as_view(0, 1), a, {6, 4}, {4, 1}, 0);
  ExpectView(*a.flatten_as_view(1, 1), a, {2, 3, 4}, {12, 4, 1}, 0);
  ExpectView(*a.flatten_as_view(-2, -1), a, {2, 12}, {12, 1}, 0);

  // Every other [3, 2] block of a [4, 3, 2]... as [4, 2, 3] sliced on dim 0 with step 2.
  TensorBase b = Arange({4, 2, 3});
  TensorBase every_other = b.slice(0, 0, 4, 2);
  ASSERT_EQ(ToVec(every_other.strides()), (Shape{12, 3, 1}));
  std::optional<TensorBase> inner = every_other.flatten_as_view(1, 2);
  ASSERT_TRUE(inner.has_value());
  ExpectView(*inner, b, {2, 6}, {12, 1}, 0);
  EXPECT_EQ(Values(*inner), Expected({2, 6}, [](const Shape& i) { return i[0] * 12 + i[1]; }));
  EXPECT_FALSE(every_other.flatten_as_view(0, 1).has_value());
  EXPECT_FALSE(every_other.flatten_as_view().has_value());
  EXPECT_FALSE(Arange({2, 3}).t().flatten_as_view().has_value());

  TensorBase s = Arange({});
  std::optional<TensorBase> one = s.flatten_as_view();
  ASSERT_TRUE(one.has_value());
  ExpectView(*one, s, {1}, {1}, 0);

  EXPECT_LOOM_ERROR(a.flatten_as_view(2, 1), "flatten", "start_dim 2 comes after end_dim 1");
  EXPECT_LOOM_ERROR(a.flatten_as_view(0, 3), "flatten", "dim 3 is out of range");
}

TEST(TensorView, AsStrided) {
  TensorBase m = Arange({3, 4});
  TensorBase w = m.as_strided(Shape{2, 2}, Shape{4, 1}, 1);
  ExpectView(w, m, {2, 2}, {4, 1}, 1);
  EXPECT_THAT(Values(w), ElementsAre(1, 2, 5, 6));
  TensorBase overlap = m.as_strided(Shape{3, 3}, Shape{1, 1}, 0);  // sliding windows
  EXPECT_THAT(Values(overlap), ElementsAre(0, 1, 2, 1, 2, 3, 2, 3, 4));
  TensorBase last = m.as_strided(Shape{}, Shape{}, 11);
  EXPECT_THAT(Values(last), ElementsAre(11));
  TensorBase whole = m.as_strided(Shape{12}, Shape{1}, 0);
  EXPECT_EQ(Values(whole), Expected({12}, [](const Shape& i) { return i[0]; }));

  // Without an offset, the tensor's own offset is used.
  TensorBase row = m.select(0, 2);
  TensorBase pair = row.as_strided(Shape{2}, Shape{2});
  ExpectView(pair, m, {2}, {2}, 8);
  EXPECT_THAT(Values(pair), ElementsAre(8, 10));
  // Zero elements need no storage, whatever the offset.
  EXPECT_EQ(m.as_strided(Shape{0, 5}, Shape{5, 1}, 100).numel(), 0);

  EXPECT_LOOM_ERROR(m.as_strided(Shape{3, 4}, Shape{4, 1}, 1), "as_strided",
                    "view of sizes [3, 4], strides [4, 1] at offset 1 needs element 12 but the "
                    "storage holds 12 elements");
  EXPECT_LOOM_ERROR(row.as_strided(Shape{2}, Shape{4}), "as_strided", "needs element 12");
  EXPECT_LOOM_ERROR(m.as_strided(Shape{2}, Shape{1, 1}), "as_strided",
                    "sizes [2] and strides [1, 1] differ in length");
  EXPECT_LOOM_ERROR(m.as_strided(Shape{2}, Shape{1}, -1), "as_strided",
                    "storage offset must be non-negative, found -1");
  EXPECT_LOOM_ERROR(m.as_strided(Shape{2, 2}, Shape{-1, 1}, 5), "as_strided",
                    "strides must be non-negative, found [-1, 1]");
  EXPECT_LOOM_ERROR(m.as_strided(Shape{-1}, Shape{1}), "as_strided", "sizes must be non-negative");
  // A stride whose extent overflows int64 must not wrap around past the bounds check.
  EXPECT_LOOM_ERROR(m.as_strided(Shape{3}, Shape{int64_t{1} << 62}, 0), "as_strided",
                    "beyond the int64 range");
  EXPECT_LOOM_ERROR(m.as_strided(Shape{2}, Shape{std::numeric_limits<int64_t>::max()}, 1),
                    "as_strided", "beyond the int64 range");
}

TEST(TensorView, ChainedViewsAddressTheRightElements) {
  // permute -> select -> slice -> unsqueeze -> expand, compared against index arithmetic.
  TensorBase a = Arange({3, 4, 5});
  TensorBase v = a.permute(Shape{2, 0, 1})     // [5, 3, 4]: v[i][j][k] = a[j][k][i]
                     .select(1, 2)             // [5, 4]:    a[2][k][i]
                     .slice(0, 1, 5, 2)        // [2, 4]:    i = 1 + 2 * r
                     .unsqueeze(0)             // [1, 2, 4]
                     .expand(Shape{3, 2, 4});  // [3, 2, 4]
  EXPECT_TRUE(v.is_alias_of(a));
  EXPECT_EQ(ToVec(v.sizes()), (Shape{3, 2, 4}));
  EXPECT_EQ(ToVec(v.strides()), (Shape{0, 2, 5}));
  EXPECT_EQ(v.storage_offset(), 40 + 1);
  EXPECT_EQ(Values(v),
            Expected({3, 2, 4}, [](const Shape& i) { return 2 * 20 + i[2] * 5 + (1 + 2 * i[1]); }));
}

TEST(TensorErrors, FromBlobOnUnregisteredDeviceThrowsWithoutRunningTheDeleter) {
  float buffer[2] = {1, 2};
  BlobDeleterState state;
  std::vector<int64_t> sizes{2}, strides{1};
  EXPECT_TRUE(ThrowsLoomError(
      [&] {
        from_blob(buffer, sizes, strides, ScalarType::Float32, Device{60, 0}, &CountingDeleter,
                  &state);
      },
      "from_blob", "not registered"));
  EXPECT_EQ(state.calls, 0);  // the caller still owns the memory
}

TEST(TensorErrors, ZeroDimTransposeChecksDimsAndExpandRejectsNegativeSizes) {
  TensorBase scalar = empty(std::vector<int64_t>{}, ScalarType::Float32);
  EXPECT_TRUE(ThrowsLoomError([&] { scalar.transpose(5, 7); }, "transpose", "out of range"));
  EXPECT_EQ(scalar.transpose(0, -1).dim(), 0);
  TensorBase t = empty(std::vector<int64_t>{3}, ScalarType::Float32);
  std::vector<int64_t> bad{-2, 3};
  EXPECT_TRUE(ThrowsLoomError([&] { t.expand(bad); }, "expand", "invalid size -2"));
}

// --- resize_contiguous (out= resizing) and warnings ---

TEST(TensorResize, GrowsTheStorageKeepingTheBytesAndShrinksInPlace) {
  TensorBase t = Arange({2, 2});
  TensorBase view = t.view(Shape{4});  // shares the storage: sees the grown block
  t.impl()->resize_contiguous(Shape{3, 3});
  EXPECT_THAT(ToVec(t.sizes()), ElementsAre(3, 3));
  EXPECT_THAT(ToVec(t.strides()), ElementsAre(3, 1));
  EXPECT_GE(t.impl()->storage()->nbytes(), 9 * sizeof(float));
  EXPECT_EQ(view.data<float>(), t.data<float>());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.data<float>()[i], static_cast<float>(i));
  void* data = t.data_ptr();
  t.impl()->resize_contiguous(Shape{2});
  EXPECT_EQ(t.numel(), 2);
  EXPECT_EQ(t.data_ptr(), data);
  t.impl()->resize_contiguous(Shape{0, 5});
  EXPECT_EQ(t.numel(), 0);
}

TEST(TensorResize, MemoryOwnedElsewhereCannotGrow) {
  float buffer[4] = {};
  TensorBase t =
      from_blob(buffer, Shape{4}, Shape{1}, ScalarType::Float32, Device{}, nullptr, nullptr);
  EXPECT_LOOM_ERROR(t.impl()->resize_contiguous(Shape{8}), "resize", "owned elsewhere");
  EXPECT_EQ(t.numel(), 4);                   // unchanged
  t.impl()->resize_contiguous(Shape{2, 2});  // fits: no growth needed
  EXPECT_THAT(ToVec(t.sizes()), ElementsAre(2, 2));
}

TEST(Warnings, HandlerReceivesThemAndCanBeRestored) {
  std::vector<std::string> seen;
  WarningHandler previous =
      set_warning_handler([&](const Warning& w) { seen.push_back(w.component + "|" + w.message); });
  EXPECT_FALSE(previous);  // the default
  warn("loom::op", "something happened: ", 3);
  EXPECT_THAT(seen, ElementsAre("loom::op|[loom::op] something happened: 3"));
  set_warning_handler(nullptr);
  testing::internal::CaptureStderr();
  warn("loom::op", "printed once");
  warn("loom::op", "printed once");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "loom warning: [loom::op] printed once\n");
}

}  // namespace
}  // namespace loom
