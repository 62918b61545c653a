# The compiler of librelay_c_hip (capi/): one HIP clang for every architecture the library holds,
# RELAY_HIP_LIBRARY_ARCHS (gfx942;gfx950 by default: MI300X and MI350X), since one object's code
# objects come from one compiler. That is ROCm's clang ($ROCM_PATH/llvm/bin, /opt/rocm/llvm/bin)
# where there is one, else Debian's clang++-22 (with lld-22; clang-19 refuses gfx950), on the HIP
# headers and runtime RelayGpu.cmake found (ROCm's, or Debian's HIP 5.2: libamdhip64-dev).
#
# A clang newer than its HIP headers (clang-22 on HIP 5.2) needs what relay_hip_compat_flags asks
# the compiler and the files about, each found out rather than assumed (docs/amd.md, "Building"):
#   - the device libraries' oclc_isa_version_<n>.bc past gfx940: relay_hip_device_libs writes it;
#   - -D__AMDGCN_WAVEFRONT_SIZE=64 where the compiler no longer defines the macro and the headers
#     (before HIP 6) read it for warpSize (CDNA is wave64 only);
#   - -mcode-object-version=5 where the device libraries have no oclc_abi_version_600.bc (clang 22
#     defaults to 6);
#   - RELAY_HIP_WORK_ITEM_FENCE where the driver no longer links hip.bc, whose one function HIP 5's
#     fences and barriers call: gpu/hip_fence.hpp defines it;
#   - -Wno-deprecated-declarations where the compiler reports libstdc++ 12's own use of
#     get_temporary_buffer (std::stable_sort) as an error.
#
# Sets RELAY_HIP_LIBRARY (ON where the library is built), RELAY_HIP_LIBRARY_CLANG and
# RELAY_HIP_LIBRARY_FLAGS (the compile flags every HIP unit of the library takes). RELAY_GPU=HIP or
# BOTH requires it (RELAY_HIP_LIBRARY_ARCHS= turns it off).
set(RELAY_HIP_LIBRARY_ARCHS "gfx942;gfx950" CACHE STRING
    "--offload-arch list of librelay_c_hip (empty: no librelay_c_hip)")
set(RELAY_HIP_LIBRARY OFF)

function(relay_hip_compat_flags out clang archs device_libs hip_include)
  set(flags "")
  set(hip_major 0)
  if(EXISTS ${hip_include}/hip/hip_version.h)
    file(STRINGS ${hip_include}/hip/hip_version.h line REGEX "#define HIP_VERSION_MAJOR")
    string(REGEX MATCH "[0-9]+" hip_major "${line}")
  endif()
  list(GET archs 0 first)
  execute_process(COMMAND ${clang} -x hip --offload-arch=${first} --cuda-device-only -nogpulib
                          -nogpuinc -dM -E /dev/null
                  OUTPUT_VARIABLE macros ERROR_QUIET)
  if(hip_major LESS 6 AND NOT macros MATCHES "__AMDGCN_WAVEFRONT_SIZE ")
    foreach(arch ${archs})
      if(NOT arch MATCHES "^gfx9")
        message(FATAL_ERROR "relay: ${clang} leaves __AMDGCN_WAVEFRONT_SIZE undefined and HIP "
                            "${hip_major}'s headers read it; ${arch} is not a wave64-only gfx9")
      endif()
    endforeach()
    list(APPEND flags -D__AMDGCN_WAVEFRONT_SIZE=64)
  endif()
  if(device_libs AND NOT EXISTS ${device_libs}/oclc_abi_version_600.bc)
    list(APPEND flags -mcode-object-version=5)
  endif()
  execute_process(COMMAND ${clang} -### -x hip --offload-arch=${first} --rocm-path=${hip_include}/..
                          -c /dev/null -o /dev/null
                  ERROR_VARIABLE driver OUTPUT_QUIET)
  if(hip_major LESS 6 AND NOT driver MATCHES "hip\\.bc")
    list(APPEND flags -DRELAY_HIP_WORK_ITEM_FENCE=1)
  endif()
  set(probe ${CMAKE_BINARY_DIR}/relay_hip_stable_sort.cpp)
  file(WRITE ${probe} "#include <algorithm>\n#include <vector>\n"
                      "void f(std::vector<int>& v) { std::stable_sort(v.begin(), v.end()); }\n")
  execute_process(COMMAND ${clang} -std=c++20 -Werror=deprecated-declarations -fsyntax-only
                          ${probe} RESULT_VARIABLE deprecated OUTPUT_QUIET ERROR_QUIET)
  if(NOT deprecated EQUAL 0)
    list(APPEND flags -Wno-deprecated-declarations)
  endif()
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

if(RELAY_GPU MATCHES "^(AUTO|HIP|BOTH)$" AND RELAY_HIP_LIBRARY_ARCHS)
  find_program(RELAY_HIP_LIBRARY_CLANG NAMES clang++ HINTS $ENV{ROCM_PATH}/llvm/bin
               /opt/rocm/llvm/bin NO_DEFAULT_PATH DOC "clang++ of librelay_c_hip")
  find_program(RELAY_HIP_LIBRARY_CLANG NAMES clang++-22 clang++-21 clang++-20
               DOC "clang++ of librelay_c_hip (Debian: clang-22 lld-22)")
  find_path(RELAY_HIP_INCLUDE_DIR hip/hip_runtime.h PATHS /opt/rocm/include
            DOC "HIP headers (Debian: libamdhip64-dev)")
  find_library(RELAY_HIP_RUNTIME amdhip64 PATHS /opt/rocm/lib
               DOC "the HIP runtime library (Debian: libamdhip64-dev)")
  set(clang ${RELAY_HIP_LIBRARY_CLANG})
  set(why "")
  set(device_libs "")
  if(NOT clang)
    set(why "no clang++-22 or ROCm clang found (Debian: apt install clang-22 lld-22; or set "
            "RELAY_HIP_LIBRARY_CLANG)")
  elseif(NOT RELAY_HIP_INCLUDE_DIR OR NOT RELAY_HIP_RUNTIME)
    set(why "no HIP headers or libamdhip64 found (Debian: apt install libamdhip64-dev)")
  else()
    relay_hip_clang_takes(why ${clang} "${RELAY_HIP_LIBRARY_ARCHS}" lld-22)
    if(why STREQUAL "" AND NOT clang MATCHES "/llvm/bin/clang\\+\\+$")
      # Debian's clang: the device libraries beside the HIP headers, completed for these
      # architectures in a folder of the library's own (the gfx942 build's holds clang-19's).
      relay_hip_device_libs(device_libs ${clang} "${RELAY_HIP_LIBRARY_ARCHS}"
                            ${CMAKE_BINARY_DIR}/rocm-device-libs-c-hip)
      if(NOT IS_DIRECTORY "${device_libs}")
        set(why "${device_libs}")
      endif()
    endif()  # (ROCm's clang finds ROCm's device libraries itself)
  endif()
  list(JOIN RELAY_HIP_LIBRARY_ARCHS " " archs)
  if(why STREQUAL "")
    set(RELAY_HIP_LIBRARY ON)
    relay_hip_compat_flags(compat ${clang} "${RELAY_HIP_LIBRARY_ARCHS}" "${device_libs}"
                           ${RELAY_HIP_INCLUDE_DIR})
    get_filename_component(hip_root ${RELAY_HIP_INCLUDE_DIR} DIRECTORY)
    # -Wno-pass-failed: clang 22 declines one `#pragma unroll` (gpu/kernels.hpp, the scalar loop
    # of a float16 reduction with fp32 partials, past the unroller's limit). A hint, not an error.
    set(RELAY_HIP_LIBRARY_FLAGS --rocm-path=${hip_root} ${compat} -Wno-pass-failed)
    if(device_libs)
      list(APPEND RELAY_HIP_LIBRARY_FLAGS --rocm-device-lib-path=${device_libs})
    endif()
    foreach(arch ${RELAY_HIP_LIBRARY_ARCHS})
      list(APPEND RELAY_HIP_LIBRARY_FLAGS --offload-arch=${arch})
    endforeach()
    list(JOIN compat " " shown)
    message(STATUS "relay: librelay_c_hip by ${clang} for ${archs} (HIP headers "
                   "${RELAY_HIP_INCLUDE_DIR}; for them: ${shown})")
  elseif(RELAY_GPU STREQUAL "AUTO")
    message(STATUS "relay: no librelay_c_hip for ${archs}: ${why}")
  else()
    message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} builds librelay_c_hip for ${archs}: ${why} "
                        "(RELAY_HIP_LIBRARY_ARCHS= turns it off)")
  endif()
endif()

# relay_hip_library_objects(<out> <files>... [DEFINES <defs>...]): the files compiled by the
# library's clang, position independent with hidden symbols, into objects (set in <out>) for a
# target of this directory to link.
function(relay_hip_library_objects out)
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  set(flags -I${PROJECT_SOURCE_DIR}/include -I${CMAKE_CURRENT_SOURCE_DIR})
  foreach(d ${ARG_DEFINES})
    list(APPEND flags -D${d})
  endforeach()
  get_filename_component(clang_name ${RELAY_HIP_LIBRARY_CLANG} NAME)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/hip_objects)
  set(objects "")
  foreach(src ${ARG_UNPARSED_ARGUMENTS})
    get_filename_component(path ${src} ABSOLUTE)
    get_filename_component(base ${src} NAME_WE)
    set(obj ${dir}/${base}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      # The library's flags after the warnings: a -Wno-* must follow -Wpedantic's group.
      COMMAND ${RELAY_HIP_LIBRARY_CLANG} -std=c++20 ${RELAY_HIP_WARNINGS} ${RELAY_HIP_LIBRARY_FLAGS}
              -O2 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden ${flags} -MD -MF ${obj}.d
              -x hip -c ${path} -o ${obj}
      DEPENDS ${path}
      DEPFILE ${obj}.d
      COMMENT "${clang_name} (${RELAY_HIP_LIBRARY_ARCHS}) ${src}"
      COMMAND_EXPAND_LISTS VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(${out} ${objects} PARENT_SCOPE)
endfunction()
