# The app package: `cmake --install` puts the frontend's headers and libraries, the `loom`
# CLI, the in-tree plugins and LoomConfig.cmake under the prefix, so an app outside the
# tree writes find_package(Loom) and target_link_libraries(app Loom::loom). The SDK part
# (LoomSDK, for plugin authors) is installed by sdk/CMakeLists.txt; Loom depends on it.
include(CMakePackageConfigHelpers)

set_target_properties(loom_core PROPERTIES EXPORT_NAME core)
set_target_properties(loom_schema PROPERTIES EXPORT_NAME schema)
set_target_properties(loom_dispatcher PROPERTIES EXPORT_NAME dispatcher)
set_target_properties(loom_ops PROPERTIES EXPORT_NAME ops)
set_target_properties(loom_frontend_cpp PROPERTIES EXPORT_NAME loom)
set_target_properties(loom_graph PROPERTIES EXPORT_NAME graph)

install(TARGETS loom_core loom_schema loom_dispatcher loom_ops loom_frontend_cpp loom_graph
  EXPORT LoomTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT LoomTargets NAMESPACE Loom:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
install(TARGETS loom_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Public headers of every layer an app's includes reach (loom/loom.h includes the op
# library's, the dispatcher's and the core's), and the generated typed op API.
foreach(dir core/include dispatcher/include dispatcher/schema/include ops/include
            frontends/cpp/include graph/include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(DIRECTORY ${LOOM_GENERATED_DIR}/loom/ops/generated
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loom/ops)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/LoomConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/LoomConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/LoomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/LoomConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/LoomConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
