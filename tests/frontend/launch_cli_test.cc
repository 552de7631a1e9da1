// `loom launch` (Note [The launcher]) run as a process: the ranks' environment and
// prefixed output, a failed or killed rank stopping the job with its name, bad options.
#include <gtest/gtest.h>

#include <string>

#include "../command_test_util.h"

namespace {

using RunResult = loom::test::CommandResult;

// `loom launch ARGS` with stdout and stderr together.
RunResult launch(const std::string& args) {
  return loom::test::run_command(std::string(LOOM_CLI) + " launch " + args);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LaunchCli, RanksGetTheJobsEnvironmentAndPrefixedLines) {
  RunResult r = launch(
      "--nproc 3 --master-port 29611 --iface lo -- sh -c "
      "'echo \"$LOOM_RANK/$LOOM_WORLD_SIZE local $LOOM_LOCAL_RANK/$LOOM_LOCAL_WORLD_SIZE "
      "$LOOM_MASTER_ADDR:$LOOM_MASTER_PORT $LOOM_SOCKET_IFNAME\" --batch-size; "
      "echo to-stderr >&2; printf unfinished'");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string p = "[rank " + std::to_string(rank) + "] ";
    // the program's own arguments keep their dashes
    EXPECT_TRUE(has(r.output, p + std::to_string(rank) + "/3 local " + std::to_string(rank) +
                                  "/3 127.0.0.1:29611 lo --batch-size\n"))
        << r.output;
    EXPECT_TRUE(has(r.output, p + "to-stderr\n")) << r.output;
    EXPECT_TRUE(has(r.output, p + "unfinished\n")) << r.output;  // a last line without \n
  }
}

TEST(LaunchCli, NodesNumberTheirRanksAfterTheNodesBefore) {
  RunResult r = launch(
      "--nnodes 2 --node-rank 1 --nproc 2 --master-addr 10.0.0.1 -- sh -c "
      "'echo $LOOM_RANK $LOOM_WORLD_SIZE $LOOM_NODE_RANK $LOOM_MASTER_ADDR'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 2] 2 4 1 10.0.0.1\n")) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 3] 3 4 1 10.0.0.1\n")) << r.output;
}

// The other ranks would sleep for a minute: the launcher stops them (ctest's timeout
// catches a launcher that does not).
TEST(LaunchCli, AFailingRankStopsTheOthersAndIsNamed) {
  RunResult r = launch(
      "--nproc 3 -- sh -c 'if [ \"$LOOM_RANK\" = 1 ]; then echo failing; exit 3; fi; "
      "exec sleep 60'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 1] failing\n")) << r.output;
  EXPECT_TRUE(has(r.output, "[loom launch] rank 1 (local rank 1, pid ")) << r.output;
  EXPECT_TRUE(has(r.output, "exited with code 3; the other ranks were stopped")) << r.output;
}

TEST(LaunchCli, AKilledRankIsNamedWithItsSignal) {
  RunResult r =
      launch("--nproc 2 -- sh -c 'if [ \"$LOOM_RANK\" = 0 ]; then kill -9 $$; fi; exec sleep 60'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "[loom launch] rank 0 (local rank 0")) << r.output;
  EXPECT_TRUE(has(r.output, "was killed by signal 9")) << r.output;
}

TEST(LaunchCli, BadOptionsAreRefused) {
  struct Case {
    std::string args;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"--nproc 0 -- true", 2, "[loom launch] --nproc: expected at least 1 process, found 0"},
      {"--nproc 2", 2, "[loom launch] expected the program to run after `--`"},
      {"--nnodes 2 --node-rank 2 -- true", 2,
       "[loom launch] --node-rank: expected 0 to 1 (--nnodes 2), found 2"},
      {"--master-port 70000 -- true", 2,
       "[loom launch] --master-port: expected a port from 1 to 65535, found 70000"},
      {"--nproc 1 -- /nonexistent/program", 1,
       "[rank 0] [loom launch] rank 0: cannot run '/nonexistent/program': No such file"},
      {"--epochs 2 -- true", 2, "--epochs is not a flag of `launch`"},
  };
  for (const Case& c : cases) {
    RunResult r = launch(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_TRUE(has(r.output, c.message)) << c.args << "\n" << r.output;
  }
}

}  // namespace
