# loom_add_plugin(<target> <sources>...): builds a loom plugin as a vendor would. The
# library is a MODULE named libloom_plugin_<target>.so, exports only the entry symbol
# (hidden visibility), links the SDK (headers only) and nothing of the core.
function(loom_add_plugin target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE LoomSDK::sdk)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "loom_plugin_${target}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # Every symbol resolved at link time, so a missing one fails the build rather than the
  # load; LOOM_PLUGIN_ALLOW_UNDEFINED turns the check off for builds whose runtime comes
  # from the executable (clang's sanitizers).
  if(NOT APPLE AND NOT LOOM_PLUGIN_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
endfunction()
