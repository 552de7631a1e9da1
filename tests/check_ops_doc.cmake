# Prints the op table (`loom ops --format markdown`, Note [The op table]) for the in-tree
# plugins into a temporary file and compares it with docs/ops.md, or with UPDATE=ON
# rewrites docs/ops.md.
#   cmake -DLOOM=... -DMANIFEST=... -DPLUGIN_DIR=... -DDOC=... [-DUPDATE=ON] -P check_ops_doc.cmake
set(tmp "${CMAKE_CURRENT_BINARY_DIR}/ops.md.generated")
set(ENV{LOOM_PLUGIN_PATH} "${PLUGIN_DIR}")
execute_process(COMMAND ${LOOM} --manifest ${MANIFEST} ops --format markdown
                OUTPUT_FILE ${tmp} ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "[ops_doc] `loom ops --format markdown` failed (${rc}): ${errors}")
endif()
if(UPDATE)
  file(COPY_FILE ${tmp} ${DOC})
  message(STATUS "[ops_doc] wrote ${DOC}")
  return()
endif()
file(READ ${tmp} generated)
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "[ops_doc] docs/ops.md is stale: run "
                      "`cmake --build build --target ops_doc` and commit it")
endif()
message(STATUS "[ops_doc] docs/ops.md matches the op library and the in-tree plugins")
