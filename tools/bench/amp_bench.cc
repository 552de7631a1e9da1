// Mixed precision's training step beside float32's, one line per case: "<case> <median ms
// per step>" (tools/bench/run-amp-bench.sh runs it beside amp_peer.py, PyTorch's same
// steps with torch.autocast, in one run). The models are where tensor cores matter (issue
// #47): an MLP of four 4096-wide layers at batch 1024 and the `loom train` CNN widened to
// 128 and 256 channels at batch 512; a step is zero_grad, forward and cross entropy (under
// autocast for the amp cases), backward (of the GradScaler-scaled loss for float16) and an
// SGD step with momentum, ended by a device synchronisation; the figure is the median of
// --steps steps after --warmup.
//   amp_bench [--device cuda|cpu] [--dtype float16|bfloat16] [--steps N] [--warmup N]
//             [--mlp-width W] [--mlp-batch B] [--cnn-batch B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/autocast.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace {

using loom::Tensor;
namespace nn = loom::nn;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string device = "cuda";
  std::string dtype = "float16";
  int steps = 20;
  int warmup = 5;
  int64_t mlp_width = 4096;
  int64_t mlp_batch = 1024;
  int64_t cnn_batch = 512;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--device")
      o.device = value;
    else if (flag == "--dtype")
      o.dtype = value;
    else if (flag == "--steps")
      o.steps = std::atoi(value.c_str());
    else if (flag == "--warmup")
      o.warmup = std::atoi(value.c_str());
    else if (flag == "--mlp-width")
      o.mlp_width = std::atoll(value.c_str());
    else if (flag == "--mlp-batch")
      o.mlp_batch = std::atoll(value.c_str());
    else if (flag == "--cnn-batch")
      o.cnn_batch = std::atoll(value.c_str());
    else
      throw loom::Error("amp_bench", "unknown flag '" + flag + "'");
  }
  LOOM_CHECK(o.dtype == "float16" || o.dtype == "bfloat16", "amp_bench",
             "--dtype: expected float16 or bfloat16, found '", o.dtype, "'");
  LOOM_CHECK(o.steps > 0 && o.warmup >= 0, "amp_bench", "expected --steps > 0, --warmup >= 0");
  return o;
}

nn::Sequential mlp(int64_t width) {
  nn::Sequential net;
  for (int i = 0; i < 4; ++i) {
    net->push_back(nn::Linear(width, width));
    net->push_back(nn::ReLU());
  }
  net->push_back(nn::Linear(width, 10));
  return net;
}

nn::Sequential wide_cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 128, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(128, 256, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(256 * 7 * 7, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

// The median milliseconds of a training step of `net` on (x, y); `amp`: under autocast in
// `dtype`, float16 with a GradScaler.
double median_step_ms(nn::Sequential& net, const Tensor& x, const Tensor& y, const Options& o,
                      bool amp) {
  const loom::Device device = x.device();
  const std::string type = o.device;
  const loom::ScalarType dtype =
      o.dtype == "float16" ? loom::ScalarType::Float16 : loom::ScalarType::BFloat16;
  loom::optim::SGD sgd(net->parameters(), loom::optim::SGDOptions(0.01).momentum(0.9));
  loom::amp::GradScaler scaler({.enabled = amp && dtype == loom::ScalarType::Float16});
  nn::CrossEntropyLoss criterion;
  std::vector<double> ms;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const auto start = Clock::now();
    sgd.zero_grad();
    Tensor loss;
    {
      std::optional<loom::autocast::Guard> region;
      if (amp) region.emplace(type, dtype);
      loss = criterion(net(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
    loom::synchronize(device);
    if (step >= o.warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    // The build's plugins: cpu, autograd, autocast, and the device's (cuda: "cuda").
    std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
                           "\"\nplugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n"
                           "plugins { name: \"autocast\" }\n";
    if (o.device != "cpu") manifest += "plugins { name: \"" + o.device + "\" }\n";
    loom::Runtime runtime =
        loom::Runtime::load(loom::dispatch::parse_manifest(manifest, "<bench>"));
    const loom::Device device = loom::parse_device(o.device == "cpu" ? "cpu" : o.device + ":0");
    const auto on = loom::TensorOptions().device(device);
    loom::manual_seed(0);
    struct Case {
      const char* name;
      std::function<nn::Sequential()> make;
      Tensor x;
      Tensor y;
    };
    std::vector<Case> cases = {
        {"mlp", [&] { return mlp(o.mlp_width); }, loom::randn({o.mlp_batch, o.mlp_width}, on),
         loom::randint(10, {o.mlp_batch}, on.dtype(loom::ScalarType::Int64))},
        {"cnn", wide_cnn, loom::randn({o.cnn_batch, 1, 28, 28}, on),
         loom::randint(10, {o.cnn_batch}, on.dtype(loom::ScalarType::Int64))},
    };
    for (Case& c : cases) {
      nn::Sequential net = c.make();
      net->to(o.device);
      const double f32 = median_step_ms(net, c.x, c.y, o, false);
      const double amp = median_step_ms(net, c.x, c.y, o, true);
      std::printf("%s_float32 %.3f\n%s_%s %.3f\n", c.name, f32, c.name, o.dtype.c_str(), amp);
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
