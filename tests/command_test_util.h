// Running a command line through the shell, for the tests of loom's programs (the CLI,
// `loom train`, `loom conform`, `loom launch`): its exit code and its stdout and stderr
// together; and a free TCP port for a job's rendezvous.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace loom::test {

struct CommandResult {
  int status;  // the exit code, or -1 when the command did not exit
  std::string output;
};

inline CommandResult run_command(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A TCP port of the loopback that is free now, for a store that a test's job hosts: fixed
// ports collide when two copies of the suite run on one machine (a build and a sanitizer
// build, or two checkouts). It is drawn below Linux's ephemeral range (32768 on), where
// the kernel never hands out ports by itself, so no listener bound to port 0 (gloo's) and
// no outgoing connection can take it before the job binds it.
inline int free_tcp_port() {
  static std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = std::uniform_int_distribution<int>(20000, 32767)(random);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (bound) return port;
  }
  ADD_FAILURE() << "found no free TCP port from 20000 to 32767 on the loopback";
  return 0;
}

}  // namespace loom::test
