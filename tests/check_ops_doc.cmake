# Regenerates the op table into a temporary file and compares it with docs/ops.md.
#   cmake -DOPGEN=... -DDOC=... -P check_ops_doc.cmake
set(tmp "${CMAKE_CURRENT_BINARY_DIR}/ops.md.generated")
execute_process(COMMAND ${OPGEN} --doc ${tmp} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom_opgen failed (${rc})")
endif()
file(READ ${tmp} generated)
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/ops.md is stale: run `cmake --build build --target ops_doc` and commit it")
endif()
message(STATUS "docs/ops.md matches ops.def")
