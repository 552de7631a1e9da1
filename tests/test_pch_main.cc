// The target that builds the tests' precompiled header (Note [The tests' precompiled
// header] in tests/CMakeLists.txt); it runs nothing.
int main() {
  return 0;
}
