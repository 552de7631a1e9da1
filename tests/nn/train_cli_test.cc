// `loom train` end to end on a small synthetic MNIST-format directory (class k lights up
// the k-th band of rows), and its refusals of bad options and bad data.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../command_test_util.h"

namespace {

using RunResult = loom::test::CommandResult;

RunResult run(const std::string& args) {
  return loom::test::run_command(std::string(LOOM_CLI) + " " + args);
}

// `loom train ARGS` as two ranks under `loom launch`, on a free port.
RunResult run_two_ranks(const std::string& train_args) {
  return run("launch --nproc 2 --master-port " + std::to_string(loom::test::free_tcp_port()) +
             " -- " + std::string(LOOM_CLI) + " train " + train_args);
}

void write_gz(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> header(uint8_t rank, std::vector<uint32_t> sizes) {
  std::vector<uint8_t> h = {0, 0, 0x08, rank};
  for (uint32_t s : sizes) {
    for (int shift : {24, 16, 8, 0}) h.push_back(static_cast<uint8_t>(s >> shift));
  }
  return h;
}

void write_split(const std::filesystem::path& dir, const std::string& prefix, uint32_t n) {
  std::vector<uint8_t> images = header(3, {n, 28, 28}), labels = header(1, {n});
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t label = static_cast<uint8_t>(i % 10);
    labels.push_back(label);
    for (int r = 0; r < 28; ++r) {
      for (int c = 0; c < 28; ++c) {
        const bool lit = r / 3 == label;  // rows 3k .. 3k+2
        images.push_back(lit ? static_cast<uint8_t>(200 + (i * 7 + c) % 50)
                             : (i * 13 + r * c) % 30);
      }
    }
  }
  write_gz(dir / (prefix + "-images-idx3-ubyte.gz"), images);
  write_gz(dir / (prefix + "-labels-idx1-ubyte.gz"), labels);
}

class TrainCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    dir_ = std::filesystem::temp_directory_path() / ("loom_train_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    write_split(dir_, "train", 640);
    write_split(dir_, "t10k", 200);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::filesystem::path dir_;
};
std::filesystem::path TrainCli::dir_;

TEST_F(TrainCli, TheMlpLearnsTheSyntheticClasses) {
  RunResult r = run("train --model mlp --epochs 2 --batch-size 32 --data " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("data: 640 training and 200 test images"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 2/2: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
}

// Two ranks under `loom launch`, DDP over gloo, each with half of every global batch:
// rank 0 alone reports, and the model learns as one process does.
TEST_F(TrainCli, TwoRanksLearnTheSyntheticClassesWithDdp) {
  RunResult r = run_two_ranks(
      "--distributed gloo --model mlp --epochs 2 --batch-size 32 --threads 1 --data " +
      dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] distributed: gloo, 2 ranks, 16 examples per rank per step"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[rank 0] epoch 2/2: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[rank 1] epoch"), std::string::npos) << r.output;
  // The same under loom::compile: each rank's forward compiled, DDP's work around it.
  RunResult compiled = run_two_ranks(
      "--distributed gloo --compile --model mlp --epochs 2 --batch-size 32 "
      "--threads 1 --data " +
      dir_.string());
  ASSERT_EQ(compiled.status, 0) << compiled.output;
  EXPECT_NE(compiled.output.find("test accuracy 100.00%"), std::string::npos) << compiled.output;
  // A global batch the ranks cannot share evenly is refused.
  RunResult odd =
      run_two_ranks("--distributed gloo --model mlp --batch-size 33 --data " + dir_.string());
  EXPECT_NE(odd.status, 0);
  EXPECT_NE(odd.output.find("--batch-size 33 (the global batch) must divide by the 2 ranks"),
            std::string::npos)
      << odd.output;
  // nccl reduces CUDA tensors: training on the CPU with it is refused before any rank waits.
  RunResult host = run("train --distributed nccl --model mlp --data " + dir_.string());
  EXPECT_NE(host.status, 0);
  EXPECT_NE(host.output.find("--distributed nccl trains CUDA tensors: pass --device cuda, found "
                             "--device cpu"),
            std::string::npos)
      << host.output;
}

TEST_F(TrainCli, TheMlpLearnsWithAdafactor) {
  RunResult r =
      run("train --model mlp --epochs 2 --batch-size 32 --optimizer adafactor --lr 0.01 "
          "--data " +
          dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("optimizer adafactor"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
}

TEST_F(TrainCli, TheCnnRunsAStep) {
  RunResult r = run("train --epochs 1 --limit 64 --optimizer sgd --lr 0.01 --threads 1 --data " +
                    dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("model: cnn, 421642 parameters; optimizer sgd"), std::string::npos)
      << r.output;
}

// The CNN through loom::compile (its forward, backward and Adam's step: fused epilogues,
// plane sums and pooled masks on the way) learns as the eager one does.
TEST_F(TrainCli, TheCompiledCnnLearnsTheSyntheticClasses) {
  RunResult r =
      run("train --epochs 1 --batch-size 32 --compile --threads 2 --data " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("epoch 1/1: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
}

TEST_F(TrainCli, ProfileWritesATraceOfFourStepsAndTheTopOps) {
  const std::filesystem::path trace = dir_ / "trace.json";
  RunResult r = run("train --model mlp --epochs 1 --batch-size 64 --data " + dir_.string() +
                    " --profile " + trace.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("of steps 4-7 written to " + trace.string()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Self time total"), std::string::npos) << r.output;
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("{\"baseTimeNanoseconds\"", 0), 0u);
  for (const char* expected : {"ProfilerStep#4", "ProfilerStep#7", "\"backward\"", "optimizer.step",
                               "loom::addmm", "fwdbwd"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  }
  EXPECT_EQ(text.find("ProfilerStep#3"), std::string::npos);  // warm-up steps are dropped
  EXPECT_EQ(text.find("ProfilerStep#8"), std::string::npos);
  // A run too short for the profiled steps says so.
  RunResult short_run = run("train --model mlp --epochs 1 --limit 64 --data " + dir_.string() +
                            " --profile " + trace.string());
  ASSERT_EQ(short_run.status, 0) << short_run.output;
  EXPECT_NE(short_run.output.find("before the profiled steps 4-7; nothing written"),
            std::string::npos)
      << short_run.output;
}

// Note [Subcommand help]: each command's --help prints its own flags and exits 0.
TEST_F(TrainCli, EachCommandsHelpListsItsFlagsAndExitsZero) {
  for (const char* args : {"train --help", "train -h", "help train"}) {
    RunResult r = run(args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("usage: loom [global flags] train [flags]", 0), 0u) << r.output;
    for (const char* flag : {"--batch-size N", "examples per step (default: 64)", "--resume FILE",
                             "--manifest FILE", "--threads N"}) {
      EXPECT_NE(r.output.find(flag), std::string::npos) << args << " lacks " << flag;
    }
    EXPECT_EQ(r.output.find("--backend"), std::string::npos) << "conform's flags in train's help";
  }
  RunResult conform = run("conform --help");
  EXPECT_EQ(conform.status, 0);
  EXPECT_NE(conform.output.find("--baseline FILE"), std::string::npos) << conform.output;
  RunResult dispatch = run("dispatch --help");
  EXPECT_EQ(dispatch.status, 0);
  EXPECT_NE(dispatch.output.find("usage: loom [global flags] dispatch OP"), std::string::npos);
  RunResult all = run("--help");
  EXPECT_EQ(all.status, 0);
  EXPECT_NE(all.output.find("`loom COMMAND --help` lists a command's flags"), std::string::npos);
  // a flag of another command, and help for a command that does not exist
  RunResult wrong = run("plugins --epochs 3");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.output.find("[loom plugins] --epochs is not a flag of `plugins`"),
            std::string::npos)
      << wrong.output;
  RunResult unknown = run("help nope");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.output.find("[loom] unknown command 'nope'"), std::string::npos);
}

TEST_F(TrainCli, BadOptionsAndDataAreClearErrors) {
  const std::string data = " --data " + dir_.string();
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"train --model rnn" + data, "[loom train] --model: expected cnn or mlp, found 'rnn'"},
           {"train --epochs 0" + data, "[loom train] --epochs: expected a positive count"},
           {"train --batch-size -1" + data, "[loom train] --batch-size: expected a positive size"},
           {"train --lr 0" + data, "[loom train] --lr: expected a positive learning rate"},
           {"train --optimizer lbfgs" + data, "[loom train] --optimizer: expected adam"},
           {"train --threads -2" + data, "--threads: expected a non-negative count"},
           {"train --profile /nonexistent/dir/trace.json" + data,
            "[loom train] --profile: cannot write '/nonexistent/dir/trace.json'"},
           {"train --data /nonexistent/dir",
            "[data::load_mnist_format] '/nonexistent/dir' is "
            "not a directory"},
       }) {
    RunResult r = run(c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
  }
  // A corrupt label file: its body shorter than its header says.
  std::filesystem::path bad = dir_ / "bad";
  std::filesystem::create_directories(bad);
  write_split(bad, "train", 20);
  write_split(bad, "t10k", 20);
  write_gz(bad / "t10k-labels-idx1-ubyte.gz", header(1, {20}));
  RunResult r = run("train --data " + bad.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("[read_idx]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(truncated)"), std::string::npos) << r.output;
}

}  // namespace

// `loom quantize` on a checkpoint of `loom train`, every method, and `loom train --qat`.
TEST_F(TrainCli, QuantizeComparesTheFloatAndQuantizedModels) {
  const std::string ckpt = (dir_ / "mlp.safetensors").string();
  ASSERT_EQ(run("train --model mlp --epochs 2 --batch-size 32 --save " + ckpt + " --data " +
                dir_.string())
                .status,
            0);
  for (const char* method : {"static", "dynamic", "qat", "weight-only"}) {
    RunResult r = run(std::string("quantize --arch mlp --method ") + method + " --model " + ckpt +
                      " --json --calibrate 64 --data " + dir_.string());
    ASSERT_EQ(r.status, 0) << method << ": " << r.output;
    for (const char* key : {"\"float_accuracy\":", "\"quantized_accuracy\":", "\"float_bytes\":",
                            "\"quantized_bytes\":", "\"float_ms_b1\":", "\"quantized_ms_b1\":",
                            "\"float_ms_b64\":", "\"quantized_ms_b64\":"}) {
      EXPECT_NE(r.output.find(key), std::string::npos)
          << method << " lacks " << key << ": " << r.output;
    }
  }
  RunResult text = run("quantize --arch mlp --model " + ckpt + " --save " +
                       (dir_ / "int8.safetensors").string() + " --data " + dir_.string());
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("test accuracy: float 100.00%, quantized 100.00%"), std::string::npos)
      << text.output;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "int8.safetensors"));
  // Bad input: a method, a missing checkpoint, a checkpoint of the other model.
  RunResult method =
      run("quantize --arch mlp --method int3 --model " + ckpt + " --data " + dir_.string());
  EXPECT_NE(method.status, 0);
  EXPECT_NE(
      method.output.find("--method: expected static, dynamic, qat or weight-only, found 'int3'"),
      std::string::npos)
      << method.output;
  RunResult missing = run("quantize --model " + (dir_ / "none.safetensors").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.output.find("cannot open"), std::string::npos) << missing.output;
  RunResult wrong = run("quantize --arch cnn --model " + ckpt + " --data " + dir_.string());
  EXPECT_NE(wrong.status, 0);
  EXPECT_NE(wrong.output.find("[load_state_dict] unexpected key"), std::string::npos)
      << wrong.output;
}

TEST_F(TrainCli, AmpTrainsUnderAutocastInBFloat16AndFloat16) {
  RunResult r =
      run("train --model mlp --epochs 2 --batch-size 32 --amp bf16 --data " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("mixed precision: forward and loss under autocast in bfloat16 on cpu"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
  // float16 with loss scaling; its state travels in the checkpoint.
  const std::string ckpt = (dir_ / "fp16.safetensors").string();
  RunResult half = run("train --model mlp --epochs 1 --batch-size 32 --amp fp16 --save " + ckpt +
                       " --data " + dir_.string());
  ASSERT_EQ(half.status, 0) << half.output;
  EXPECT_NE(half.output.find("autocast in float16 on cpu, loss scaled (GradScaler)"),
            std::string::npos)
      << half.output;
  RunResult resumed = run("train --model mlp --epochs 2 --batch-size 32 --amp fp16 --resume " +
                          ckpt + " --data " + dir_.string());
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  const std::string plain = (dir_ / "plain.safetensors").string();
  ASSERT_EQ(run("train --model mlp --epochs 1 --batch-size 32 --save " + plain + " --data " +
                dir_.string())
                .status,
            0);
  RunResult no_state = run("train --model mlp --epochs 2 --batch-size 32 --amp fp16 --resume " +
                           plain + " --data " + dir_.string());
  EXPECT_NE(no_state.status, 0);
  EXPECT_NE(no_state.output.find("the checkpoint has no GradScaler state"), std::string::npos)
      << no_state.output;
  RunResult unknown = run("train --model mlp --amp fp8 --data " + dir_.string());
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.output.find("[loom train] --amp: expected bf16 or fp16, found 'fp8'"),
            std::string::npos)
      << unknown.output;
  // Compiled under autocast (Note [Autocast guards]): bfloat16, and float16 with the
  // scaler's eager step.
  for (const char* amp : {"bf16", "fp16"}) {
    RunResult compiled = run(std::string("train --model mlp --epochs 2 --batch-size 32 --amp ") +
                             amp + " --compile --data " + dir_.string());
    ASSERT_EQ(compiled.status, 0) << compiled.output;
    EXPECT_NE(compiled.output.find("test accuracy 100.00%"), std::string::npos) << compiled.output;
  }
  RunResult qat = run("train --model mlp --amp bf16 --qat --data " + dir_.string());
  EXPECT_NE(qat.status, 0);
  EXPECT_NE(qat.output.find("--amp does not combine with --qat"), std::string::npos) << qat.output;
}

TEST_F(TrainCli, CheckpointTrainsWithActivationsRecomputed) {
  RunResult r =
      run("train --model mlp --epochs 2 --batch-size 32 --checkpoint --data " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("activation checkpointing: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test accuracy 100.00%"), std::string::npos) << r.output;
  RunResult refused = run("train --model mlp --checkpoint --compile --data " + dir_.string());
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("--checkpoint does not combine with --compile or --qat"),
            std::string::npos)
      << refused.output;
  // Under DDP: the non-reentrant checkpoint keeps the ordinary graph and DDP's hooks.
  RunResult ddp = run_two_ranks(
      "--distributed gloo --checkpoint --model mlp --epochs 2 --batch-size 32 --threads 1 "
      "--data " +
      dir_.string());
  ASSERT_EQ(ddp.status, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("test accuracy 100.00%"), std::string::npos) << ddp.output;
}

TEST_F(TrainCli, QatTrainsThroughFakeQuantizationAndReportsTheInt8Model) {
  RunResult r = run("train --model mlp --epochs 2 --batch-size 32 --qat --data " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("quantization-aware training"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("int8 model (converted after QAT): test accuracy 100.00%"),
            std::string::npos)
      << r.output;
  RunResult refused = run("train --model mlp --qat --compile --data " + dir_.string());
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("--qat trains alone on the cpu"), std::string::npos)
      << refused.output;
}
