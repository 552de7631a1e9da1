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
#include <cstdio>
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

// A TCP port on the loopback that nothing listens on now (the kernel's choice for port 0),
// for a store that a test's job hosts: fixed ports collide when two copies of the suite
// run on one machine (a build and a sanitizer build, or two checkouts).
inline int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  EXPECT_TRUE(bound) << "cannot bind a socket to a port of the loopback";
  return bound ? ntohs(address.sin_port) : 0;
}

}  // namespace loom::test
