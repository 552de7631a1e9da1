/* A shared library that is not a loom plugin: it exports no loom_plugin_entry. */
int some_other_function(int x) {
  return x + 1;
}
