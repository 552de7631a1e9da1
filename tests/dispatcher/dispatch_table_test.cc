// Dispatch table behaviour: precedence, RAII registration restore, fallbacks and
// fallthroughs, guards, redispatch, argument checks, error kernels, vendor slots.
#include <gtest/gtest.h>

#include "dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/local_dispatch_key_set.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::EntrySource;
using dispatch::OperatorHandle;
using dispatch::Registration;

const int64_t kCpu = 1, kExplicit = 2, kImplicit = 3, kFallback = 4, kNewer = 5, kVendor = 6,
              kQuantized = 7, kAutograd = 8;

struct DefinedOp {
  Registration definition;
  OperatorHandle op;
  explicit DefinedOp(const std::string& schema) {
    definition = Dispatcher::instance().define(schema, nullptr, &op);
  }
};

EntrySource source_of(OperatorHandle op, DispatchKey key) {
  for (const auto& row : Dispatcher::instance().dump_table(op)) {
    if (row.key == key) return row.source;
  }
  ADD_FAILURE() << "no row for key " << dispatch_key_name(key);
  return EntrySource::Missing;
}

TEST(DispatchTable, MissingKernelErrorNamesOpKeyAndKeysWithKernels) {
  DefinedOp d("tt::missing(Tensor self) -> int");
  TensorBase t = cpu_tensor({2});
  expect_error([&] { call_int(d.op, t); }, "tt::missing",
               {"no kernel for dispatch key CPU", "keys with kernels: none"});
  Registration meta =
      Dispatcher::instance().register_kernel(d.op, DispatchKey::Meta, id_kernel(kCpu));
  expect_error([&] { call_int(d.op, t); }, "tt::missing", {"keys with kernels: Meta"});
}

TEST(DispatchTable, PrecedenceKernelThenExplicitThenImplicitThenFallback) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::prec(Tensor self) -> int");
  TensorBase t = cpu_tensor({2});
  Registration fallback = disp.register_fallback(DispatchKey::CPU, id_kernel(kFallback));
  EXPECT_EQ(call_int(d.op, t), kFallback);
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::Fallback);
  Registration implicit =
      disp.register_kernel(d.op, DispatchKey::CompositeImplicit, id_kernel(kImplicit));
  EXPECT_EQ(call_int(d.op, t), kImplicit);
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::Decomposition);
  Registration explicit_k =
      disp.register_kernel(d.op, DispatchKey::CompositeExplicit, id_kernel(kExplicit));
  EXPECT_EQ(call_int(d.op, t), kExplicit);
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::CompositeExplicit);
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  EXPECT_EQ(call_int(d.op, t), kCpu);
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::Kernel);
  // Peeling registrations off restores each level below.
  cpu.reset();
  EXPECT_EQ(call_int(d.op, t), kExplicit);
  explicit_k.reset();
  EXPECT_EQ(call_int(d.op, t), kImplicit);
  implicit.reset();
  EXPECT_EQ(call_int(d.op, t), kFallback);
  fallback.reset();
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::Missing);
}

TEST(DispatchTable, NewestRegistrationWinsAndRemovalRestoresInAnyOrder) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::stack(Tensor self) -> int");
  TensorBase t = cpu_tensor({1});
  Registration first = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  Registration second = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kNewer));
  EXPECT_EQ(call_int(d.op, t), kNewer);
  first.reset();  // removing the hidden one changes nothing visible
  EXPECT_EQ(call_int(d.op, t), kNewer);
  second.reset();
  EXPECT_EQ(source_of(d.op, DispatchKey::CPU), EntrySource::Missing);

  Registration a = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  {
    Registration b = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kNewer));
    Registration moved = std::move(b);  // moving keeps exactly one owner
    EXPECT_EQ(call_int(d.op, t), kNewer);
  }
  EXPECT_EQ(call_int(d.op, t), kCpu);
}

TEST(DispatchTable, FunctionalityKeysFallThroughUnlessTheyHaveKernels) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::func(Tensor self) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  TensorBase t = cpu_tensor({1});
  t.impl()->add_key(DispatchKey::Autograd);
  EXPECT_EQ(source_of(d.op, DispatchKey::Autograd), EntrySource::Fallthrough);
  EXPECT_EQ(call_int(d.op, t), kCpu);  // Autograd has nothing: falls through to CPU
  Registration autograd = disp.register_kernel(d.op, DispatchKey::Autograd, id_kernel(kAutograd));
  EXPECT_EQ(call_int(d.op, t), kAutograd);
  TensorBase plain = cpu_tensor({1});
  EXPECT_EQ(call_int(d.op, plain), kCpu);  // no Autograd key on this tensor
}

TEST(DispatchTable, DecompositionServesAutogradOnlyWithoutBackendKernels) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::decomp(Tensor self) -> int");
  Registration implicit =
      disp.register_kernel(d.op, DispatchKey::CompositeImplicit, id_kernel(kImplicit));
  EXPECT_EQ(source_of(d.op, DispatchKey::Autograd), EntrySource::Decomposition);
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  EXPECT_EQ(source_of(d.op, DispatchKey::Autograd), EntrySource::Fallthrough);
  TensorBase t = cpu_tensor({1});
  t.impl()->add_key(DispatchKey::Autograd);
  EXPECT_EQ(call_int(d.op, t), kCpu);
}

TEST(DispatchTable, IncludeGuardRoutesToFallbackWhichRedispatches) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::traced(Tensor self) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  std::atomic<int> traced{0};
  uint64_t seen_keys = 0;
  KernelBody tracer = [&](const LoomKernelCall* call) {
    ++traced;
    seen_keys = call->key_set;
    EXPECT_EQ(call->dispatch_key, static_cast<uint32_t>(LOOM_KEY_TRACER));
    disp.redispatch(OperatorHandle::from_abi(call->op), DispatchKeySet(call->key_set), call->args,
                    call->num_args, call->returns, call->num_returns);
  };
  Registration fallback = disp.register_fallback(DispatchKey::Tracer, body_kernel(tracer));
  TensorBase t = cpu_tensor({1});
  EXPECT_EQ(call_int(d.op, t), kCpu);
  EXPECT_EQ(traced.load(), 0);  // Tracer not in the key set
  {
    dispatch::IncludeDispatchKeyGuard include(DispatchKey::Tracer);
    EXPECT_EQ(call_int(d.op, t), kCpu);
    EXPECT_EQ(traced.load(), 1);
    // The kernel got the keys below Tracer: no Tracer bit, backend still there.
    EXPECT_FALSE(DispatchKeySet(seen_keys).has(DispatchKey::Tracer));
    EXPECT_TRUE(DispatchKeySet(seen_keys).has(DispatchKey::CPU));
    {
      dispatch::ExcludeDispatchKeyGuard exclude(DispatchKey::Tracer);
      EXPECT_EQ(call_int(d.op, t), kCpu);
      EXPECT_EQ(traced.load(), 1);
    }
    EXPECT_EQ(call_int(d.op, t), kCpu);
    EXPECT_EQ(traced.load(), 2);
  }
  EXPECT_EQ(dispatch::local_dispatch_key_set().included, 0u);  // guard restored
  EXPECT_EQ(call_int(d.op, t), kCpu);
  EXPECT_EQ(traced.load(), 2);
}

TEST(DispatchTable, FallthroughRegistrationHidesFallbackUntilRemoved) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::ft(Tensor self) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  Registration prof = disp.register_fallback(DispatchKey::Profiler, id_kernel(kFallback));
  dispatch::IncludeDispatchKeyGuard include(DispatchKey::Profiler);
  TensorBase t = cpu_tensor({1});
  EXPECT_EQ(call_int(d.op, t), kFallback);
  {
    Registration skip = disp.register_fallthrough(DispatchKey::Profiler);
    EXPECT_EQ(source_of(d.op, DispatchKey::Profiler), EntrySource::Fallthrough);
    EXPECT_EQ(call_int(d.op, t), kCpu);
  }
  EXPECT_EQ(call_int(d.op, t), kFallback);
  expect_error([&] { disp.register_fallthrough(DispatchKey::CPU); }, "dispatcher",
               {"only functionality keys"});
}

TEST(DispatchTable, QuantizedTensorsReachTheQuantizedKernelFirst) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::quant(Tensor self) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  Registration q = disp.register_kernel(d.op, DispatchKey::Quantized, id_kernel(kQuantized));
  EXPECT_EQ(call_int(d.op, cpu_tensor({2}, ScalarType::QInt8)), kQuantized);
  EXPECT_EQ(call_int(d.op, cpu_tensor({2}, ScalarType::Float32)), kCpu);
}

TEST(DispatchTable, ArgumentChecksRejectWrongArityTagsAndNullTensors) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::args(Tensor self, int n, float x, Scalar s, int[2] k, Tensor? o) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  TensorBase t = cpu_tensor({1});
  LoomValue ret[1];
  const int64_t k[] = {3, 4};
  LoomValue ok[] = {dispatch::box(t),    dispatch::box(int64_t{1}),     dispatch::box(int64_t{2}),
                    dispatch::box(true), dispatch::box(IntArrayRef(k)), dispatch::none()};
  disp.call(d.op, ok, 6, ret, 1);  // float accepts int; None for Tensor?
  EXPECT_EQ(ret[0].u.i, kCpu);
  expect_error([&] { disp.call(d.op, ok, 5, ret, 1); }, "tt::args",
               {"expected 6 arguments but got 5"});
  expect_error([&] { disp.call(d.op, ok, 6, ret, 0); }, "tt::args", {"room for 1 returns"});
  LoomValue bad[] = {dispatch::box(int64_t{1}),     dispatch::box(int64_t{1}),
                     dispatch::box(int64_t{2}),     dispatch::box(true),
                     dispatch::box(IntArrayRef(k)), dispatch::none()};
  expect_error([&] { disp.call(d.op, bad, 6, ret, 1); }, "tt::args",
               {"argument 0 'self' expected Tensor but got int"});
  LoomValue null_tensor[] = {dispatch::box(t),   dispatch::box(int64_t{1}),     dispatch::box(2.0),
                             dispatch::box(1.5), dispatch::box(IntArrayRef(k)), dispatch::none()};
  null_tensor[0].u.tensor = nullptr;
  expect_error([&] { disp.call(d.op, null_tensor, 6, ret, 1); }, "tt::args", {"null tensor"});
  LoomValue wrong_bool[] = {dispatch::box(t),   dispatch::box(true),           dispatch::box(2.0),
                            dispatch::box(1.5), dispatch::box(IntArrayRef(k)), dispatch::none()};
  expect_error([&] { disp.call(d.op, wrong_bool, 6, ret, 1); }, "tt::args",
               {"argument 1 'n' expected int but got bool"});
  // A boxed int[2] is a list: the typed frontend expands a single int.
  LoomValue single_int[] = {dispatch::box(t),   dispatch::box(int64_t{1}), dispatch::box(2.0),
                            dispatch::box(1.5), dispatch::box(int64_t{3}), dispatch::none()};
  expect_error([&] { disp.call(d.op, single_int, 6, ret, 1); }, "tt::args",
               {"argument 4 'k' expected int[2] but got int"});
}

LoomError* returns_none(void*, const LoomKernelCall*) {
  return nullptr;
}
std::atomic<int> g_errors_destroyed{0};
LoomError* returns_error(void*, const LoomKernelCall*) {
  static char message[] = "[kerr] the value must be even";
  return new LoomError{sizeof(LoomError), LOOM_STATUS_INVALID_ARGUMENT, message, [](LoomError* e) {
                         ++g_errors_destroyed;
                         delete e;
                       }};
}

TEST(DispatchTable, KernelErrorsAndBadReturnsBecomeLoomErrors) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::kerr(Tensor self) -> int");
  TensorBase t = cpu_tensor({1});
  {
    Registration r = disp.register_kernel(d.op, DispatchKey::CPU, {&returns_error, nullptr});
    expect_error([&] { call_int(d.op, t); }, "tt::kerr",
                 {"the value must be even", "kernel for CPU from 'app'"});
    EXPECT_EQ(g_errors_destroyed.load(), 1);  // the error object was freed by its creator
  }
  {
    Registration r = disp.register_kernel(d.op, DispatchKey::CPU, {&returns_none, nullptr});
    expect_error([&] { call_int(d.op, t); }, "tt::kerr", {"returned None for return 0", "int"});
  }
}

TEST(DispatchTable, UndefinedOpsErrorAndKernelsMayPrecedeTheDefinition) {
  Dispatcher& disp = Dispatcher::instance();
  OperatorHandle op = disp.get_or_create("tt::late");
  Registration cpu = disp.register_kernel(op, DispatchKey::CPU, id_kernel(kCpu));
  TensorBase t = cpu_tensor({1});
  expect_error([&] { call_int(op, t); }, "tt::late", {"not defined"});
  expect_error([&] { disp.find_defined("tt::late"); }, "dispatcher",
               {"unknown operator 'tt::late'"});
  {
    DefinedOp d("tt::late(Tensor self) -> int");
    EXPECT_EQ(d.op.entry(), op.entry());
    EXPECT_EQ(call_int(op, t), kCpu);
  }
  expect_error([&] { call_int(op, t); }, "tt::late", {"not defined"});
}

TEST(DispatchTable, DuplicateDefinitionNamesBothOwners) {
  DefinedOp d("tt::dup(Tensor self) -> int");
  dispatch::Registrant other{"other_plugin", "/x/libloom_plugin_other_plugin.so"};
  expect_error([&] { Dispatcher::instance().define("tt::dup(Tensor self) -> int", &other); },
               "dispatcher",
               {"'tt::dup' is already defined by app", "other_plugin cannot define it"});
  expect_error([&] { Dispatcher::instance().define("tt::bad(Tensr self) -> int"); }, "schema",
               {"column"});
}

TEST(DispatchTable, VendorBackendSlotsAreAssignedByNameAndRouteTensorsAndDevices) {
  Dispatcher& disp = Dispatcher::instance();
  uint64_t reg1 = 0, reg2 = 0;
  DispatchKey key = disp.register_backend("tt_vendor", nullptr, &reg1);
  EXPECT_EQ(disp.register_backend("tt_vendor", nullptr, &reg2), key);  // same name, same slot
  EXPECT_GE(static_cast<int>(key), static_cast<int>(DispatchKey::Vendor0));
  EXPECT_EQ(dispatch_key_name(key), "tt_vendor");
  EXPECT_EQ(dispatch::parse_dispatch_key("tt_vendor"), key);
  EXPECT_EQ(dispatch::key_from_abi(dispatch::key_to_abi(key)), key);

  DeviceType type = DeviceTypeRegistry::instance().register_type("ttvendordev", key);
  DefinedOp d("tt::vend(Tensor self) -> int");
  DefinedOp f("tt::factory(Device device) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  Registration vend = disp.register_kernel(d.op, key, id_kernel(kVendor));
  Registration fcpu = disp.register_kernel(f.op, DispatchKey::CPU, id_kernel(kCpu));
  Registration fvend = disp.register_kernel(f.op, key, id_kernel(kVendor));
  int64_t x = 0;
  TensorBase vt = from_blob(&x, IntArrayRef(), IntArrayRef(), ScalarType::Int64, Device{type, 0},
                            nullptr, nullptr);
  EXPECT_EQ(call_int(d.op, vt), kVendor);
  LoomValue dev[] = {dispatch::box(Device{type, 0})};
  LoomValue ret[1];
  disp.call(f.op, dev, 1, ret, 1);
  EXPECT_EQ(ret[0].u.i, kVendor);
  LoomValue cpu_dev[] = {dispatch::box(Device{kCPU, -1})};
  disp.call(f.op, cpu_dev, 1, ret, 1);
  EXPECT_EQ(ret[0].u.i, kCpu);
  disp.deregister(reg1);
  disp.deregister(reg2);
  EXPECT_FALSE(disp.find_backend("tt_vendor").has_value());
}

TEST(DispatchTable, AtLeastEightVendorSlotsThenAClearError) {
  Dispatcher& disp = Dispatcher::instance();
  std::vector<uint64_t> regs;
  int assigned = 0;
  std::string error;
  for (int i = 0; i < 20; ++i) {
    uint64_t reg = 0;
    try {
      disp.register_backend("slot_" + std::to_string(i), nullptr, &reg);
      regs.push_back(reg);
      ++assigned;
    } catch (const Error& e) {
      error = e.what();
      break;
    }
  }
  EXPECT_GE(assigned, 8);
  EXPECT_NE(error.find("vendor backend slots are taken"), std::string::npos) << error;
  for (uint64_t reg : regs) disp.deregister(reg);
  uint64_t reg = 0;
  disp.register_backend("slot_again", nullptr, &reg);  // freed slots are reusable
  disp.deregister(reg);
}

TEST(DispatchTable, TableDumpShowsProviderAndDebugName) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::dump(Tensor self) -> int");
  Registration cpu =
      disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu), nullptr, "my_cpu_kernel");
  bool found = false;
  for (const auto& row : disp.dump_table(d.op)) {
    if (row.key == DispatchKey::CPU) {
      found = true;
      EXPECT_EQ(row.source, EntrySource::Kernel);
      EXPECT_EQ(row.provider, "app");
      EXPECT_EQ(row.debug, "my_cpu_kernel");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(disp.defined_by(d.op), "app");
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

// Kernels that remove registrations (their own included) while running: the removal is
// deferred, nothing they still use is freed under them, and two threads doing it at
// once do not wait for each other.
TEST(DispatchTable, KernelsMayDeregisterThemselvesConcurrently) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::selfdereg(Tensor self) -> int");
  const int64_t kBase = 100;
  Registration base = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kBase));
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    std::vector<Registration> mine(2);
    KernelBody bodies[2];
    for (int i = 0; i < 2; ++i) {
      bodies[i] = [&, i](const LoomKernelCall* call) {
        ++ran;
        mine[i].reset();  // removes this very kernel while it runs
        call->returns[0].tag = LOOM_VALUE_INT;
        call->returns[0].u.i = i;
      };
    }
    DefinedOp per_round("tt::selfdereg_r" + std::to_string(round) + "(Tensor self) -> int");
    Registration k0 = disp.register_kernel(per_round.op, DispatchKey::CPU, body_kernel(bodies[0]));
    DefinedOp other("tt::selfdereg_s" + std::to_string(round) + "(Tensor self) -> int");
    Registration k1 = disp.register_kernel(other.op, DispatchKey::CPU, body_kernel(bodies[1]));
    mine[0] = std::move(k0);
    mine[1] = std::move(k1);
    TensorBase t = cpu_tensor({1});
    std::thread a([&] { EXPECT_EQ(call_int(per_round.op, t), 0); });
    std::thread b([&] { EXPECT_EQ(call_int(other.op, t), 1); });
    a.join();
    b.join();
    EXPECT_EQ(ran.load(), 2);
    expect_error([&] { call_int(per_round.op, t); }, per_round.op.name(), {"no kernel"});
  }
  EXPECT_EQ(call_int(d.op, cpu_tensor({1})), kBase);
}

TEST(DispatchTable, KeySetsFromOutsideAreMaskedToValidKeys) {
  Dispatcher& disp = Dispatcher::instance();
  DefinedOp d("tt::masked(Tensor self) -> int");
  Registration cpu = disp.register_kernel(d.op, DispatchKey::CPU, id_kernel(kCpu));
  TensorBase t = cpu_tensor({1});
  LoomValue args[] = {dispatch::box(t)};
  LoomValue ret[1];
  // Bit 40 names no runtime key: it must not index past the table.
  disp.redispatch(d.op,
                  DispatchKeySet::for_backend(DispatchKey::CPU) | DispatchKeySet(uint64_t{1} << 40),
                  args, 1, ret, 1);
  EXPECT_EQ(ret[0].u.i, kCpu);
  dispatch::IncludeDispatchKeyGuard alias(DispatchKeySet(uint64_t{1} << 41));
  EXPECT_EQ(call_int(d.op, t), kCpu);
}

}  // namespace
}  // namespace loom::testing
