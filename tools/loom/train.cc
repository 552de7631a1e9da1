// `loom train`: the models (the small CNN and an MLP), the loop, and the progress
// display.
#include "train.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "classifier.h"
#include "loom/checkpoint.h"
#include "loom/compile.h"
#include "loom/data.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"
#include "loom/quantization.h"

namespace loom::cli {
namespace {

constexpr const char* kWhat = "loom train";
// `capturable`: Adam and AdamW keep their step counts in tensors, for a compiled step.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name,
                                                 std::vector<Tensor> params, double lr,
                                                 bool capturable) {
  if (name == "adam") {
    return std::make_unique<optim::Adam>(params, optim::AdamOptions(lr).capturable(capturable));
  }
  if (name == "adamw") {
    return std::make_unique<optim::AdamW>(
        params, optim::AdamOptions(lr).weight_decay(0.01).capturable(capturable));
  }
  if (name == "sgd") {
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(lr).momentum(0.9));
  }
  if (name == "rmsprop") return std::make_unique<optim::RMSprop>(params, optim::RMSpropOptions(lr));
  if (name == "adafactor") {
    return std::make_unique<optim::Adafactor>(params, optim::AdafactorOptions(lr));
  }
  fail(kWhat, "--optimizer: expected adam, adamw, sgd, rmsprop or adafactor, found '", name, "'");
}

data::TensorDataset first(const data::TensorDataset& ds, int64_t limit) {
  if (limit <= 0 || limit >= ds.size()) return ds;
  return data::TensorDataset(loom::narrow(ds.data(), 0, 0, limit),
                             loom::narrow(ds.targets(), 0, 0, limit));
}

// One line per report: a bar redrawn in place on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(int64_t epoch, int64_t epochs, int64_t batches)
      : epoch_(epoch), epochs_(epochs), batches_(batches), tty_(isatty(STDOUT_FILENO) != 0) {}

  void update(int64_t batch, double loss, double accuracy, double samples_per_s, bool last) {
    const bool every = tty_ || last || batch % std::max<int64_t>(batches_ / 4, 1) == 0;
    if (!every) return;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * batch / std::max<int64_t>(batches_, 1));
      std::printf("\repoch %lld/%lld [%s%s] %lld/%lld loss %.4f acc %.2f%% %.0f samples/s",
                  static_cast<long long>(epoch_), static_cast<long long>(epochs_),
                  std::string(filled, '=').c_str(), std::string(kWidth - filled, ' ').c_str(),
                  static_cast<long long>(batch), static_cast<long long>(batches_), loss,
                  100 * accuracy, samples_per_s);
      if (last) std::printf("\n");
    } else {
      std::printf("epoch %lld/%lld batch %lld/%lld loss %.4f acc %.2f%% %.0f samples/s\n",
                  static_cast<long long>(epoch_), static_cast<long long>(epochs_),
                  static_cast<long long>(batch), static_cast<long long>(batches_), loss,
                  100 * accuracy, samples_per_s);
    }
    std::fflush(stdout);
  }

 private:
  int64_t epoch_, epochs_, batches_;
  bool tty_;
};

// QAT trains the prepared copies of the layers (fused forms included): their float
// weights go back into the model they came from.
void copy_back(const quantization::Prepared& prepared, nn::Sequential& net) {
  NoGradGuard no_grad;
  for (const auto& step : prepared->steps()) {
    std::shared_ptr<nn::Module> source = (*net)[std::stoul(step.name)];
    std::shared_ptr<nn::Module> trained = step.layer;
    if (auto c = std::dynamic_pointer_cast<quantization::ConvReLU2dImpl>(trained))
      trained = c->conv.ptr();
    if (auto l = std::dynamic_pointer_cast<quantization::LinearReLUImpl>(trained))
      trained = l->linear.ptr();
    auto from = trained->parameters(), to = source->parameters();
    for (size_t i = 0; i < from.size() && i < to.size(); ++i) to[i].copy_(from[i]);
  }
}

double test_accuracy(nn::Sequential& net, data::DataLoader& loader, const std::string& device) {
  net->eval();
  const double accuracy = accuracy_of([&](const Tensor& x) { return net(x); }, loader, device);
  net->train();
  return accuracy;
}

}  // namespace

namespace {

// Note [Profiling a run]
// ~~~~~~~~~~~~~~~~~~~~~~
// --profile FILE records steps kProfileFirstStep .. +kProfileSteps of the run (after
// warm-up steps, like torch.profiler's schedule), with shapes and memory, writes their
// Chrome trace to FILE and prints the ops that took the most self time, the peak memory
// in use per device over those steps and, on a device with a caching allocator, the
// allocator's figures. Each step's forward, backward and optimizer step are user ranges,
// so the trace groups its ops.
constexpr int64_t kProfileWait = 2, kProfileWarmup = 2, kProfileSteps = 4;

std::unique_ptr<profiler::Profiler> make_profiler(const std::string& path) {
  if (path.empty()) return nullptr;
  {
    std::ofstream probe(path, std::ios::app);
    LOOM_CHECK(probe.good(), kWhat, "--profile: cannot write '", path, "'");
  }
  profiler::ProfilerOptions options;
  options.record_shapes = true;
  options.profile_memory = true;
  options.schedule = profiler::Schedule{
      .wait = kProfileWait, .warmup = kProfileWarmup, .active = kProfileSteps, .repeat = 1};
  options.on_trace_ready = [path](profiler::Profiler& p) {
    p.export_chrome_trace(path);
    std::printf(
        "\nprofile: %zu events of steps %lld-%lld written to %s (Perfetto, "
        "chrome://tracing)\n%s%s%s",
        p.events().size(), static_cast<long long>(kProfileWait + kProfileWarmup),
        static_cast<long long>(p.step_num()), path.c_str(), p.table("self_time", 12).c_str(),
        p.memory_summary().c_str(), p.allocator_summary().c_str());
    std::fflush(stdout);
  };
  return std::make_unique<profiler::Profiler>(std::move(options));
}

// The GradScaler's state kept in a checkpoint's metadata ("grad_scaler.<key>"); a missing
// or malformed entry is refused naming the file.
std::map<std::string, double> scaler_state_of(const std::map<std::string, std::string>& meta,
                                              const std::string& path) {
  std::map<std::string, double> state;
  for (const auto& [key, text] : meta) {
    if (!key.starts_with("grad_scaler.")) continue;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    LOOM_CHECK(!text.empty() && *end == '\0', kWhat, "--resume '", path,
               "': expected a number for ", key, ", found '", text, "'");
    state[key.substr(12)] = value;
  }
  LOOM_CHECK(!state.empty(), kWhat, "--resume '", path,
             "': the checkpoint has no GradScaler state (was it saved by an --amp fp16 run?)");
  return state;
}

}  // namespace

int run_train(const TrainOptions& o) {
  LOOM_CHECK(o.model == "cnn" || o.model == "mlp", kWhat, "--model: expected cnn or mlp, found '",
             o.model, "'");
  LOOM_CHECK(o.epochs > 0, kWhat, "--epochs: expected a positive count, found ", o.epochs);
  LOOM_CHECK(o.batch_size > 0, kWhat, "--batch-size: expected a positive size, found ",
             o.batch_size);
  LOOM_CHECK(o.lr > 0, kWhat, "--lr: expected a positive learning rate, found ", o.lr);
  LOOM_CHECK(o.limit >= 0, kWhat, "--limit: expected a non-negative count, found ", o.limit);
  LOOM_CHECK(autograd::is_available(), kWhat,
             "training needs the autograd plugin; the manifest does not load it");
  LOOM_CHECK(o.profile.empty() || profiler::Profiler::is_available(), kWhat,
             "--profile needs the profiler plugin; the manifest does not load it");

  // --distributed: this process is one rank of a `loom launch` job (Note [The launcher]).
  int rank = 0, world = 1;
  std::string device = o.device;
  if (!o.distributed.empty()) {
    if (o.distributed == "nccl") {
      // Each rank trains on its own GPU, the one its NCCL group uses:
      // cuda:(LOOM_LOCAL_RANK mod the device count).
      LOOM_CHECK(o.device.rfind("cuda", 0) == 0, kWhat,
                 "--distributed nccl trains CUDA tensors: pass --device cuda, found --device ",
                 o.device);
      const char* local = std::getenv("LOOM_LOCAL_RANK");
      const int64_t count = std::max<int64_t>(device_count("cuda"), 1);
      device = "cuda:" + std::to_string((local ? std::atoi(local) : 0) % count);
    }
    distributed::init_process_group({.backend = o.distributed});
    rank = distributed::get_rank();
    world = distributed::get_world_size();
    LOOM_CHECK(o.batch_size % world == 0, kWhat, "--batch-size ", o.batch_size,
               " (the global batch) must divide by the ", world, " ranks");
  }
  const bool reporting = rank == 0;  // rank 0 prints and saves

  data::TensorDataset train_set =
      first(data::load_mnist_format(o.data_dir, data::Split::Train, kMean, kStd), o.limit);
  data::TensorDataset test_set =
      data::load_mnist_format(o.data_dir, data::Split::Test, kMean, kStd);
  if (reporting)
    std::printf("data: %lld training and %lld test images from %s\n",
                static_cast<long long>(train_set.size()), static_cast<long long>(test_set.size()),
                o.data_dir.c_str());

  manual_seed(o.seed);
  nn::Sequential net = make_classifier(o.model);
  if (device != "cpu") net->to(device);
  int64_t count = 0;
  for (const Tensor& p : net->parameters()) count += p.numel();
  if (reporting) {
    std::printf("model: %s, %lld parameters; optimizer %s, lr %g, batch %lld, device %s\n",
                o.model.c_str(), static_cast<long long>(count), o.optimizer.c_str(), o.lr,
                static_cast<long long>(o.batch_size), device.c_str());
  }
  LOOM_CHECK(!o.checkpoint || (!o.compile && !o.qat), kWhat,
             "--checkpoint does not combine with --compile or --qat");
  // --checkpoint: about sqrt(layers) segments, as the usual memory/compute balance, of the
  // non-reentrant kind (the ordinary graph: DDP's hooks see every parameter's gradient).
  const int64_t segments = std::max<int64_t>(
      1, static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(net->size())))));
  if (o.checkpoint && reporting) {
    std::printf("activation checkpointing: %zu layers in %lld segments\n", net->size(),
                static_cast<long long>(segments));
  }
  auto model_forward = [&net, segments, checkpoint = o.checkpoint](const Tensor& x) {
    return checkpoint ? nn::checkpoint_sequential(net, segments, x, {.use_reentrant = false})
                      : net(x);
  };
  // The same start on every rank (DDP broadcasts rank 0's parameters), gradients averaged.
  std::optional<nn::DistributedDataParallel> ddp;
  if (!o.distributed.empty()) {
    ddp.emplace(std::make_shared<nn::DistributedDataParallelImpl>(
        net.ptr(), model_forward, nn::DistributedDataParallelOptions{}));
    if (reporting) {
      std::printf("distributed: %s, %d ranks, %lld examples per rank per step, %zu buckets\n",
                  o.distributed.c_str(), world, static_cast<long long>(o.batch_size / world),
                  (*ddp)->buckets().size());
    }
  }
  // --qat trains a copy of the layers through fake quantization (loom/quantization.h);
  // their weights go back into net for checkpoints.
  std::optional<quantization::Prepared> qat;
  if (o.qat) {
    LOOM_CHECK(o.distributed.empty() && !o.compile && o.resume.empty() && device == "cpu", kWhat,
               "--qat trains alone on the cpu: it does not combine with --distributed, --compile, "
               "--resume or another --device");
    qat.emplace(quantization::prepare_qat(
        net, quantization::QConfigMapping().set_global(quantization::default_qat_qconfig())));
    if (reporting)
      std::printf("quantization-aware training: fake-quantized weights and activations\n");
  }
  // --amp bf16|fp16: the forward and the loss under autocast (loom/autocast.h); float16
  // with dynamic loss scaling (loom/grad_scaler.h), bfloat16 without (float32's range).
  LOOM_CHECK(o.amp.empty() || o.amp == "bf16" || o.amp == "fp16", kWhat,
             "--amp: expected bf16 or fp16, found '", o.amp, "'");
  const ScalarType amp_dtype = o.amp == "fp16" ? ScalarType::Float16 : ScalarType::BFloat16;
  amp::GradScaler scaler({.enabled = o.amp == "fp16"});
  LOOM_CHECK(o.amp.empty() || !o.qat, kWhat, "--amp does not combine with --qat");
  const std::string device_type = device.substr(0, device.find(':'));
  if (!o.amp.empty() && reporting) {
    std::printf("mixed precision: forward and loss under autocast in %s on %s%s\n",
                std::string(scalar_type_name(amp_dtype)).c_str(), device_type.c_str(),
                scaler.is_enabled() ? ", loss scaled (GradScaler)" : "");
  }
  std::unique_ptr<optim::Optimizer> optimizer =
      make_optimizer(o.optimizer, qat ? (*qat)->parameters() : net->parameters(), o.lr, o.compile);
  nn::CrossEntropyLoss criterion;

  data::DataLoaderOptions train_options;
  train_options.batch_size = o.batch_size / world;
  if (ddp) train_options.sampler = data::DistributedSampler{world, rank};
  train_options.shuffle = true;
  train_options.seed = o.seed;
  // batches for a device that lends pinned memory are assembled there, as PyTorch's
  // DataLoader(pin_memory=True) does
  train_options.pin_memory = lends_pinned_memory(device);
  data::DataLoader train_loader(train_set, train_options);
  data::DataLoaderOptions test_options;
  test_options.batch_size = 1000;
  test_options.shuffle = false;
  data::DataLoader test_loader(test_set, test_options);

  // The run's identity, kept in checkpoints: resuming needs the same model and optimizer.
  const std::map<std::string, std::string> identity = {
      {"format", "loom-train-1"}, {"model", o.model}, {"optimizer", o.optimizer}};
  int64_t first_epoch = 1;
  if (!o.resume.empty()) {
    std::map<std::string, std::string> meta = load_checkpoint(o.resume, *net, optimizer.get());
    for (const auto& [key, value] : identity) {
      LOOM_CHECK(meta.count(key) != 0 && meta[key] == value, kWhat, "--resume '", o.resume,
                 "': expected ", key, " '", value, "', found '", meta.count(key) ? meta[key] : "",
                 "'");
    }
    const std::string done = meta.count("epoch") ? meta["epoch"] : "";
    LOOM_CHECK(!done.empty() && done.size() < 10 &&
                   done.find_first_not_of("0123456789") == std::string::npos,
               kWhat, "--resume '", o.resume, "': expected an epoch number, found '", done, "'");
    first_epoch = std::stoll(done) + 1;
    if (scaler.is_enabled()) scaler.load_state_dict(scaler_state_of(meta, o.resume));
    train_loader.set_epoch(static_cast<uint64_t>(first_epoch - 1));
    if (reporting) std::printf("resumed from %s after epoch %s\n", o.resume.c_str(), done.c_str());
  }

  std::unique_ptr<profiler::Profiler> profile = reporting ? make_profiler(o.profile) : nullptr;
  // --compile: the forward and the loss as one compiled function, whose backward graph
  // runs in loss.backward() (Note [Compiling training] in graph/src/compile/joint_graph.cc),
  // and the optimizer's step (rmsprop and adafactor count steps on the host: theirs stays
  // eager). Under DDP the module's forward is compiled, DDP's work runs around it and the
  // loss stays eager.
  auto forward_and_loss = [&](const Tensor& x, const Tensor& y) {
    Tensor logits = net(x);
    return std::tuple<Tensor, Tensor>(logits, criterion(logits, y));
  };
  std::optional<Compiled<decltype(forward_and_loss)>> compiled;
  std::optional<compiler::CompiledStep> compiled_step;
  std::optional<CompiledDistributedDataParallel> compiled_ddp;
  if (o.compile && ddp) {
    compiled_ddp.emplace(loom::compile(*ddp));
  } else if (o.compile) {
    std::vector<std::pair<std::string, Tensor>> state;
    for (auto& [name, p] : net->named_parameters()) state.emplace_back(name, p);
    auto impl = net.ptr();
    compiled.emplace(forward_and_loss, CompileOptions{}, "train_step", std::move(state),
                     [impl] { return impl->is_training() ? uint64_t{1} : 0; });
  }
  if (o.compile && optimizer->capturable()) compiled_step.emplace(*optimizer, CompileOptions{});
  using Clock = std::chrono::steady_clock;
  for (int64_t epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    Progress progress(epoch, o.epochs, train_loader.num_batches());
    const Clock::time_point start = Clock::now();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, batch_index = 0;
    for (const data::Example& batch : train_loader) {
      // queued without a wait from pinned batches (Note [Pinned host memory])
      Tensor x = batch.data.to(device, /*non_blocking=*/true);
      Tensor y = batch.target.to(device, /*non_blocking=*/true);
      optimizer->zero_grad();
      Tensor logits, loss;
      {
        profiler::Range range("forward");
        std::optional<autocast::Guard> amp;
        if (!o.amp.empty()) amp.emplace(device_type, amp_dtype);
        if (compiled) {
          std::tie(logits, loss) = (*compiled)(x, y);
        } else {
          logits = compiled_ddp ? (*compiled_ddp)(x)
                   : ddp        ? (*ddp)(x)
                   : qat        ? (*qat)(x)
                                : model_forward(x);
          loss = criterion(logits, y);
        }
      }
      {
        profiler::Range range("backward");
        scaler.scale(loss).backward();
      }
      {
        profiler::Range range("optimizer.step");
        if (scaler.is_enabled()) {
          scaler.step(*optimizer);  // skipped when a gradient overflowed
          scaler.update();
        } else if (compiled_step) {
          (*compiled_step)();
        } else {
          optimizer->step();
        }
      }
      if (profile) profile->step();
      const int64_t n = y.size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      {
        NoGradGuard no_grad;
        correct +=
            static_cast<int64_t>(loom::sum(loom::eq(loom::argmax(logits, 1), y)).item<double>());
      }
      seen += n;
      ++batch_index;
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (reporting)
        progress.update(batch_index, loss_sum / static_cast<double>(seen),
                        static_cast<double>(correct) / static_cast<double>(seen),
                        static_cast<double>(seen) / std::max(seconds, 1e-9),
                        batch_index == train_loader.num_batches());
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (ddp) {
      // The epoch's loss and accuracy over every rank's share.
      Tensor totals =
          loom::tensor({loss_sum, static_cast<double>(correct), static_cast<double>(seen)},
                       TensorOptions().dtype(ScalarType::Float64));
      totals = totals.to(device);  // nccl reduces device tensors only
      distributed::all_reduce(totals);
      totals = totals.to("cpu");
      const double* sums = static_cast<const double*>(totals.data_ptr());
      loss_sum = sums[0];
      correct = static_cast<int64_t>(sums[1]);
      seen = static_cast<int64_t>(sums[2]);
    }
    if (!reporting) continue;
    double accuracy = 0;
    if (qat) {
      (*qat)->eval();
      accuracy = accuracy_of([&](const Tensor& x) { return (*qat)(x); }, test_loader, device);
      (*qat)->train();
      copy_back(*qat, net);
    } else {
      accuracy = test_accuracy(net, test_loader, device);
    }
    std::printf(
        "epoch %lld/%lld: train loss %.4f, train accuracy %.2f%%, test accuracy %.2f%%, "
        "%.1f s\n",
        static_cast<long long>(epoch), static_cast<long long>(o.epochs),
        loss_sum / static_cast<double>(std::max<int64_t>(seen, 1)),
        100.0 * static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(seen, 1)),
        100.0 * accuracy, seconds);
    if (!o.save.empty()) {
      std::map<std::string, std::string> meta = identity;
      meta["epoch"] = std::to_string(epoch);
      if (scaler.is_enabled()) {
        for (const auto& [key, value] : scaler.state_dict()) {
          char text[32];  // every digit, so the scale resumes exactly
          std::snprintf(text, sizeof text, "%.17g", value);
          meta["grad_scaler." + key] = text;
        }
      }
      save_checkpoint(o.save, *net, qat ? nullptr : optimizer.get(), meta);
      std::printf("checkpoint: %s\n", o.save.c_str());
    }
    std::fflush(stdout);
  }
  if (ddp) distributed::destroy_process_group();
  if (qat && reporting) {
    (*qat)->eval();
    quantization::QuantizedModel int8 = quantization::convert(*qat);
    const double accuracy = accuracy_of([&](const Tensor& x) { return int8(x); }, test_loader);
    std::printf("int8 model (converted after QAT): test accuracy %.2f%%\n", 100.0 * accuracy);
  }
  if (profile) {
    profile->stop();  // saves a profile whose active steps the run cut short
    if (profile->events().empty()) {
      std::printf(
          "profile: the run ended after %lld steps, before the profiled steps %lld-%lld; "
          "nothing written\n",
          static_cast<long long>(profile->step_num()),
          static_cast<long long>(kProfileWait + kProfileWarmup),
          static_cast<long long>(kProfileWait + kProfileWarmup + kProfileSteps - 1));
    }
  }
  return 0;
}

}  // namespace loom::cli
