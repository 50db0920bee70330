# The NPU backend is built only with a CANN toolkit (ASCEND_HOME_PATH) and torch_npu installed.
# It compiles the same csrc/kernels sources with CANN's ascendc_library() (direct-launch entries,
# aclrtlaunch_<kernel>.h) and adds the PrivateUse1 launchers in csrc/torch/npu/ to _C. The
# msopgen op package (aclnn) is built separately by build.sh from op_proto/, csrc/op_host and
# csrc/kernels/op_package. Neither has been built here: no machine of this project has CANN.
set(ASCEND_CANN_PACKAGE_PATH "$ENV{ASCEND_HOME_PATH}")
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch_npu, os; print(os.path.dirname(torch_npu.__file__))"
                OUTPUT_VARIABLE TORCH_NPU_PATH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(ascendc_cmake "${ASCEND_CANN_PACKAGE_PATH}/tools/tikcpp/ascendc_kernel_cmake/ascendc.cmake")
if(ASCEND_CANN_PACKAGE_PATH AND TORCH_NPU_PATH AND EXISTS "${ascendc_cmake}")
  message(STATUS "ascendc-ops: NPU backend ON (CANN ${ASCEND_CANN_PACKAGE_PATH}, torch_npu ${TORCH_NPU_PATH})")
  set(SOC_VERSION "Ascend910B2" CACHE STRING "Ascend SoC the kernels are compiled for (Ascend910B1..B4)")
  set(RUN_MODE "npu")
  include(${ascendc_cmake})
  ascendc_library(ascendc_kernels_npu STATIC ${kernel_sources})
  ascendc_include_directories(ascendc_kernels_npu PRIVATE ${CMAKE_SOURCE_DIR}/csrc/kernels ${CMAKE_SOURCE_DIR}/tiling)
  # the launchers join the bindings (compiled once); every ISA path's library links the NPU side
  file(GLOB npu_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/csrc/torch/npu/*.cpp)
  target_sources(ascendc_bindings PRIVATE ${npu_sources})
  target_compile_definitions(ascendc_bindings PRIVATE ASCENDC_OPS_WITH_NPU)
  target_include_directories(ascendc_bindings PRIVATE ${CMAKE_SOURCE_DIR}/csrc/torch/npu ${TORCH_NPU_PATH}/include
                             ${ASCEND_CANN_PACKAGE_PATH}/include)
  foreach(lib IN LISTS ascendc_ops_libraries)
    target_link_directories(${lib} PRIVATE ${TORCH_NPU_PATH}/lib ${ASCEND_CANN_PACKAGE_PATH}/lib64)
    # ascendcl + runtime: the launches; tiling_api + platform: platform_ascendc (core count)
    target_link_libraries(${lib} PRIVATE ascendc_kernels_npu torch_npu ascendcl runtime tiling_api platform)
  endforeach()
else()
  message(STATUS "ascendc-ops: NPU backend OFF (needs ASCEND_HOME_PATH with CANN and an importable torch_npu)")
endif()
