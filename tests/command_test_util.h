// Running a command line through the shell, for the tests of loom's programs (the CLI,
// `loom train`, `loom conform`, `loom launch`): its exit code and its stdout and stderr
// together.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

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

}  // namespace loom::test
