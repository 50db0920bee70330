# The simulated NPU (test support, csrc/sim_npu): the real PrivateUse1 launchers of csrc/torch/npu,
# linked against _C's Prepare* functions, on a host-memory PrivateUse1 device, with CANN's direct
# launch (aclrtlaunch_<kernel>.h) replaced by generated headers that run the twin build of each
# kernel entry. Loaded only by ascendc_ops.testing.simulated_npu(); a plain import never loads it.
# Not built where the real NPU backend is (both would register PrivateUse1 launchers).
option(ASCENDC_OPS_SIM_NPU "Build the simulated NPU test libraries (build/sim_npu/_sim_npu_<isa path>.so)" ${ASCENDC_OPS_TESTS})
if(ASCENDC_OPS_SIM_NPU AND NOT TARGET ascendc_kernels_npu)
  set(sim_dir ${CMAKE_SOURCE_DIR}/csrc/sim_npu)
  set(sim_gen ${CMAKE_BINARY_DIR}/sim_npu/aclrtlaunch)
  add_custom_command(
    OUTPUT ${sim_gen}/entries.stamp
    COMMAND ${Python3_EXECUTABLE} ${sim_dir}/gen_aclrtlaunch.py --out ${sim_gen} --stamp ${sim_gen}/entries.stamp
            -- ${CMAKE_CXX_COMPILER} -std=c++17 -I${CMAKE_SOURCE_DIR}/csrc/twin -I${CMAKE_SOURCE_DIR}/csrc/kernels
            -I${CMAKE_SOURCE_DIR}/tiling -- ${kernel_sources}
    DEPENDS ${kernel_sources} ${sim_dir}/gen_aclrtlaunch.py
    COMMENT "Simulated NPU: aclrtlaunch_<kernel>.h for every kernel entry")
  add_custom_target(sim_npu_aclrtlaunch DEPENDS ${sim_gen}/entries.stamp)

  file(GLOB sim_npu_launchers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/csrc/torch/npu/*.cpp)
  add_library(sim_npu_objects OBJECT ${sim_dir}/device.cpp ${sim_dir}/launch.cpp ${sim_npu_launchers})
  add_dependencies(sim_npu_objects sim_npu_aclrtlaunch op_proto_gen)
  target_include_directories(sim_npu_objects PRIVATE ${sim_dir} ${sim_dir}/fake ${sim_gen} ${CMAKE_SOURCE_DIR}/csrc/torch
                             ${CMAKE_SOURCE_DIR}/csrc/torch/npu ${CMAKE_SOURCE_DIR}/csrc/twin ${CMAKE_SOURCE_DIR}/tiling
                             ${gen_dir})
  target_compile_options(sim_npu_objects PRIVATE ${isa_${baseline_path}_flags} ${light_opt})
  target_link_libraries(sim_npu_objects PRIVATE ${TORCH_LIBRARIES})
  target_precompile_headers(sim_npu_objects REUSE_FROM ascendc_bindings)  # the same flags: torch's headers parsed once
  # One simulator per ISA path, linked to that path's library (_C*.so, whose Prepare* it calls) and its
  # kernels' twin objects, this library's own "device binary" (no recompilation): testing.py loads the
  # one matching the path in use, so one library of each kind is in the process.
  foreach(path IN LISTS ascendc_ops_paths)
    set(twin ascendc_twin_${path})
    if(path STREQUAL baseline_path)
      set(twin ascendc_twin)
    endif()
    add_library(_sim_npu_${path} SHARED $<TARGET_OBJECTS:sim_npu_objects> $<TARGET_OBJECTS:ascendc_kernels_${path}>)
    target_link_libraries(_sim_npu_${path} PRIVATE ${isa_${path}_lib} ascendc_tiling ${twin} ${TORCH_LIBRARIES})
    set_target_properties(_sim_npu_${path} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/sim_npu)
  endforeach()
endif()
