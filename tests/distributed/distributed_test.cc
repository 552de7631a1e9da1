// The distributed plugin with ranks as processes: `loom launch --nproc N --
// distributed_rank SCENARIO` (tests/distributed/distributed_rank.cc), for every
// collective, dtype and reduce op at world sizes 1 to 4 on gloo, and the failures that
// must end with the right message and no hang: a mismatch, a timeout, a killed rank, bad
// input, a collective before init.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include "../command_test_util.h"

namespace {

using loom::test::CommandResult;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The command line of a job of `nproc` ranks running `distributed_rank ARGS`, with
// further `loom launch` flags. Each job gets a port that is free now, so that ctest may
// run the tests side by side (and two copies of the suite may run at once).
std::string launch_line(int nproc, const std::string& args, const std::string& flags = "") {
  return std::string(LOOM_CLI) + " launch --nproc " + std::to_string(nproc) + flags +
         " --master-port " + std::to_string(loom::test::free_tcp_port()) + " -- " +
         DISTRIBUTED_RANK + " " + args;
}

CommandResult launch(int nproc, const std::string& args) {
  return loom::test::run_command(launch_line(nproc, args));
}

class GlooCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectives, EveryCollectiveDtypeAndReduceOpAgrees) {
  const int n = GetParam();
  CommandResult r = launch(n, "collectives gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_TRUE(has(r.output, "rank " + std::to_string(rank) + " of " + std::to_string(n) + " ok"))
        << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCollectives, ::testing::Values(1, 2, 3, 4));

class GlooDdp : public ::testing::TestWithParam<int> {};

TEST_P(GlooDdp, KeepsParametersEqualAndMatchesOneProcessWithTheWholeBatch) {
  const int n = GetParam();
  CommandResult r = launch(n, "ddp gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 0] ddp ok")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooDdp, ::testing::Values(1, 2, 3));

// Note [A ring reduce-scatter]: the list form with sum, max and avg, in place refused; 5
// ranks receive into a scratch block twice.
class GlooRing : public ::testing::TestWithParam<int> {};

TEST_P(GlooRing, ReduceScatterAgreesFromBlocksApart) {
  const int n = GetParam();
  CommandResult r = launch(n, "ring gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "rank 0 of " + std::to_string(n) + " ok")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooRing, ::testing::Values(2, 5));

TEST(Distributed, TheFileStoreRendezvousWorks) {
  const std::string dir = ::testing::TempDir() + "loom_file_store_" + std::to_string(getpid());
  CommandResult r = launch(2, "collectives gloo file://" + dir);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "rank 1 of 2 ok")) << r.output;
}

// A file store has no connection to take an address from: gloo listens on the hostname,
// and where that does not resolve (a minimal install without /etc/hosts) on the loopback,
// with a warning. The hostname is changed in a UTS namespace of the job's own (root only).
TEST(Distributed, AHostnameThatDoesNotResolveFallsBackToTheLoopback) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for unshare --uts";
  const std::string dir = ::testing::TempDir() + "loom_unresolved_" + std::to_string(getpid());
  CommandResult r = loom::test::run_command("unshare --uts sh -c 'hostname loom-test.invalid && " +
                                            launch_line(2, "collectives gloo file://" + dir) + "'");
  if (has(r.output, "unshare failed") || has(r.output, "hostname: you must be root")) {
    GTEST_SKIP() << "cannot make a UTS namespace here: " << r.output;
  }
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output,
                  "the hostname 'loom-test.invalid' does not resolve to an address of "
                  "this machine; gloo listens on the loopback 127.0.0.1"))
      << r.output;
  EXPECT_TRUE(has(r.output, "rank 1 of 2 ok")) << r.output;
}

TEST(Distributed, MismatchedCollectivesAreRefusedOnEveryRankNamingBoth) {
  CommandResult r = launch(3, "mismatch gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* rank : {"[rank 0]", "[rank 1]", "[rank 2]"}) {
    EXPECT_TRUE(has(r.output, std::string(rank) +
                                  " refused: [loom::all_reduce_] [distributed] process group 0"))
        << r.output;
  }
  EXPECT_TRUE(has(r.output,
                  "rank 0 called all_reduce(float32[4], sum), rank 1 called "
                  "all_reduce(float32[8], sum)"))
      << r.output;
  EXPECT_TRUE(has(r.output, "mismatch refused")) << r.output;
}

TEST(Distributed, ARankThatNeverJoinsIsNamedWhenTheTimeoutEnds) {
  CommandResult r = launch(2, "timeout gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "timed out after 2000 ms: rank 1 never joined collective #0"))
      << r.output;
  EXPECT_TRUE(has(r.output, "flight record: ")) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 1] timed out as expected")) << r.output;
}

TEST(Distributed, AKilledRankEndsTheJobNamingIt) {
  CommandResult r = launch(3, "killed gloo");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "rank 1")) << r.output;
  EXPECT_TRUE(has(r.output, "signal 9") || has(r.output, "SIGKILL") || has(r.output, "Killed"))
      << r.output;
}

TEST(Distributed, BadInputIsRefusedWithClearMessages) {
  CommandResult r = launch(2, "bad_input gloo");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "[rank 1] bad input refused")) << r.output;
}

TEST(Distributed, AnInterfaceThatIsNotThereIsRefusedNamingThoseThatAre) {
  CommandResult r =
      loom::test::run_command(launch_line(2, "collectives gloo", " --iface loomnone0"));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output,
                  "[distributed] LOOM_SOCKET_IFNAME (loom launch --iface) names 'loomnone0', "
                  "which is not a network interface of this machine (its interfaces: lo"))
      << r.output;
}

TEST(Distributed, CollectivesBeforeInitAndUnknownBackendsAreRefused) {
  CommandResult r = loom::test::run_command(std::string(DISTRIBUTED_RANK) + " before_init");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "call loom::distributed::init_process_group first")) << r.output;
  EXPECT_TRUE(has(r.output, "expected gloo, mpi or nccl")) << r.output;
}

TEST(Distributed, AMissingRankEndsTheRendezvousNamingIt) {
  // LOOM_WORLD_SIZE says 3 but only two ranks start.
  const std::string store =
      " timeout gloo tcp://127.0.0.1:" + std::to_string(loom::test::free_tcp_port());
  CommandResult r = loom::test::run_command(
      "{ LOOM_WORLD_SIZE=3 LOOM_RANK=1 " + std::string(DISTRIBUTED_RANK) + store + " & " +
      "LOOM_WORLD_SIZE=3 LOOM_RANK=0 " + DISTRIBUTED_RANK + store + "; wait; }");
  EXPECT_TRUE(has(r.output,
                  "init_process_group timed out after 2000 ms: 2 of 3 ranks arrived; missing [2]"))
      << r.output;
}

// Two "hosts": network namespaces joined by a veth pair, a `loom launch --nnodes 2` in
// each, the store and gloo on the veth addresses (--iface), not loopback. Needs root and
// iproute2; skipped elsewhere.
TEST(DistributedMultiHost, TwoNodesInNetworkNamespacesRunEveryCollective) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for ip netns";
  const std::string id = std::to_string(getpid() % 100000);
  const std::string a = "loomA" + id, b = "loomB" + id;
  const std::string setup =
      "ip netns add " + a + " && ip netns add " + b + " && ip link add va" + id +
      " type veth peer name vb" + id + " && ip link set va" + id + " netns " + a +
      " && ip link set vb" + id + " netns " + b + " && ip -n " + a +
      " addr add 10.77.0.1/24 dev va" + id + " && ip -n " + b + " addr add 10.77.0.2/24 dev vb" +
      id + " && ip -n " + a + " link set va" + id + " up && ip -n " + b + " link set vb" + id +
      " up && ip -n " + a + " link set lo up && ip -n " + b + " link set lo up";
  CommandResult made = loom::test::run_command(setup);
  if (made.status != 0) {
    loom::test::run_command("ip netns del " + a + "; ip netns del " + b);
    GTEST_SKIP() << "cannot make network namespaces here: " << made.output;
  }
  auto node = [&](const std::string& ns, int node_rank, const std::string& iface) {
    return "ip netns exec " + ns + " " + LOOM_CLI + " launch --nnodes 2 --node-rank " +
           std::to_string(node_rank) +
           " --nproc 2 --master-addr 10.77.0.1 --master-port 29760 --iface " + iface + " -- " +
           DISTRIBUTED_RANK + " collectives gloo";
  };
  CommandResult r =
      loom::test::run_command("{ " + node(b, 1, "vb" + id) + " & nb=$!; " + node(a, 0, "va" + id) +
                              "; sa=$?; wait $nb; sb=$?; [ $sa -eq 0 ] && [ $sb -eq 0 ]; }");
  loom::test::run_command("ip netns del " + a + "; ip netns del " + b);
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(has(r.output, "rank " + std::to_string(rank) + " of 4 ok")) << r.output;
  }
}

#ifdef LOOM_HAS_NCCL
// The nccl backend: one rank on one GPU runs every collective on CUDA tensors (NCCL
// refuses two ranks on one device, and CI machines have at most one). Without a GPU,
// init_process_group must say so.
TEST(DistributedNccl, OneRankRunsEveryCollectiveOnItsGpuOrSaysThereIsNone) {
  CommandResult r = launch(1, "collectives nccl");
  const std::string no_gpu = "the nccl backend needs a CUDA device, and this machine has none";
  if (has(r.output, no_gpu)) {
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_TRUE(has(r.output, "[distributed] the nccl engine could not start on rank 0"))
        << r.output;
    GTEST_SKIP() << "no CUDA device here (the error was checked; the collectives run on a GPU)";
  }
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "the nccl backend has no collectives for int16")) << r.output;
  EXPECT_TRUE(has(r.output, "rank 0 of 1 ok")) << r.output;
}
#endif

#ifdef LOOM_MPIRUN
// The mpi backend: the same scenarios under mpirun (as root in CI, over TCP: shared
// memory transports need what containers often lack). In the sanitizer build the ranks
// run without LeakSanitizer: Open MPI leaves allocations of its own components (dlopened
// and closed again, so no suppression can name them) at MPI_Finalize.
CommandResult mpirun(int nproc, const std::string& args) {
  return loom::test::run_command("ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 " +
                                 std::string(LOOM_MPIRUN) +
                                 " -x ASAN_OPTIONS --allow-run-as-root --oversubscribe --mca btl "
                                 "self,tcp -np " +
                                 std::to_string(nproc) + " " + DISTRIBUTED_RANK + " " + args);
}

class MpiCollectives : public ::testing::TestWithParam<int> {};

TEST_P(MpiCollectives, EveryCollectiveDtypeAndReduceOpAgrees) {
  const int n = GetParam();
  CommandResult r = mpirun(n, "collectives mpi");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_TRUE(has(r.output, "rank " + std::to_string(rank) + " of " + std::to_string(n) + " ok"))
        << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, MpiCollectives, ::testing::Values(1, 2, 3, 4));

TEST(DistributedMpi, ReduceScatterAgreesFromBlocksApart) {
  CommandResult r = mpirun(3, "ring mpi");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "rank 0 of 3 ok")) << r.output;
}

TEST(DistributedMpi, DdpKeepsParametersEqualAndMatchesOneProcess) {
  CommandResult r = mpirun(2, "ddp mpi");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "ddp ok")) << r.output;
}

TEST(DistributedMpi, MismatchesAndTimeoutsEndWithTheRightMessage) {
  CommandResult m = mpirun(3, "mismatch mpi");
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_TRUE(has(m.output,
                  "rank 0 called all_reduce(float32[4], sum), rank 1 called "
                  "all_reduce(float32[8], sum)"))
      << m.output;
  CommandResult t = mpirun(2, "timeout mpi");
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_TRUE(has(t.output, "timed out after 2000 ms: rank 1 never joined collective #0"))
      << t.output;
  CommandResult b = mpirun(2, "bad_input mpi");
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_TRUE(has(b.output, "bad input refused")) << b.output;
}
#endif

}  // namespace
