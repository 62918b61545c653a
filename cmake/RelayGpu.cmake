# The GPU paths of the tests and examples (the library itself stays headers).
#
#   CUDA: CMake's CUDA language with nvcc; CMAKE_CUDA_ARCHITECTURES defaults to 90 (Hopper).
#   HIP:  two builds of every HIP executable, each by custom commands (no GPU is needed to
#         compile and link; CMake's HIP language accepts neither of these compilers):
#         - hipcc (Debian's HIP 5.2 on the distribution's clang-15) for RELAY_HIP_ARCH, gfx90a by
#           default: HIP 5.2 predates the spec's MI300X (gfx942) and MI350X (gfx950);
#         - RELAY_HIP_CLANG (clang++-19, Debian's, with lld-19) in HIP mode on the same HIP 5.2
#           headers and runtime, for the list RELAY_HIP_CLANG_ARCHS (gfx942 by default): the
#           spec's MI300X, compiled and linked in CI. Its device libraries are Debian's
#           rocm-device-libs (ROCm 5.2), which lack the one-constant ISA-version file of gfx942;
#           relay_hip_device_libs below supplies it. docs/gpu.md, "AMD targets", says more.
#
# RELAY_GPU: AUTO builds whatever compilers exist; CUDA, HIP or BOTH require them (HIP: both HIP
# builds, unless RELAY_HIP_CLANG_ARCHS is empty); OFF builds neither. The environment variable of
# the same name sets the default (CI asks for BOTH).
if(DEFINED ENV{RELAY_GPU} AND NOT "$ENV{RELAY_GPU}" STREQUAL "")
  set(relay_gpu_default "$ENV{RELAY_GPU}")
else()
  set(relay_gpu_default AUTO)
endif()
set(RELAY_GPU "${relay_gpu_default}" CACHE STRING "GPU paths to build: AUTO, CUDA, HIP, BOTH, OFF")
set_property(CACHE RELAY_GPU PROPERTY STRINGS AUTO CUDA HIP BOTH OFF)
# RELAY_GPU_COMPILE_CHECK: the GPU programs of this build (tests, tools, examples and
# librelay_c_cuda) are compile-and-link checks that nothing runs, as in CI, which has no GPU: they
# build unoptimized (nvcc's host compiler, NVVM and ptxas at -O0, the HIP executables at -O0), at
# a third of the optimized build's time for nvcc and a sixth for HIP. librelay_c_hip keeps -O2: its
# code objects are what ci.ipc_signal_isa_c_hip_* disassembles. The environment variable of the
# same name sets the default (.ci/run sets it).
if(DEFINED ENV{RELAY_GPU_COMPILE_CHECK} AND NOT "$ENV{RELAY_GPU_COMPILE_CHECK}" STREQUAL "")
  set(relay_compile_check_default "$ENV{RELAY_GPU_COMPILE_CHECK}")
else()
  set(relay_compile_check_default OFF)
endif()
option(RELAY_GPU_COMPILE_CHECK "GPU programs built as unoptimized compile-and-link checks"
       ${relay_compile_check_default})
set(RELAY_HIP_ARCH "gfx90a" CACHE STRING "--offload-arch of the hipcc build")
set(RELAY_HIP_CLANG_ARCHS "gfx942" CACHE STRING
    "--offload-arch list of the clang build (RELAY_HIP_CLANG); empty: no such build")

set(RELAY_HAVE_CUDA OFF)
set(RELAY_HAVE_HIP OFF)    # either HIP build below
set(RELAY_HAVE_HIPCC OFF)  # the hipcc build (RELAY_HIP_ARCH)
set(RELAY_HIP_CLANG_BUILD OFF)  # the clang build (RELAY_HIP_CLANG_ARCHS)

if(RELAY_GPU MATCHES "^(AUTO|CUDA|BOTH)$")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(RELAY_NVCC nvcc PATHS /usr/local/cuda/bin)
    if(RELAY_NVCC)
      set(CMAKE_CUDA_COMPILER "${RELAY_NVCC}" CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    set(RELAY_HAVE_CUDA ON)
    if(RELAY_GPU_COMPILE_CHECK)
      # nvcc's -O is its host compiler's; a second -O is an error, so the build type's is replaced.
      foreach(type RELEASE RELWITHDEBINFO MINSIZEREL)
        string(REGEX REPLACE "-O[0-3s]" "-O0" CMAKE_CUDA_FLAGS_${type} "${CMAKE_CUDA_FLAGS_${type}}")
      endforeach()
      string(APPEND CMAKE_CUDA_FLAGS " -Xcicc -O0 -Xptxas -O0")
    endif()
  elseif(NOT RELAY_GPU STREQUAL "AUTO")
    message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} needs nvcc; none found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()

# relay_hip_clang_takes(<why> <clang> <archs> <lld package>): sets <why> to "" where <clang> takes
# every architecture of <archs> and has an ld.lld of its own for the device link (given lld-14,
# Debian's default ld.lld, a newer clang's device link fails), else to a sentence saying why not.
function(relay_hip_clang_takes why clang archs lld_package)
  get_filename_component(clang_dir ${clang} REALPATH)
  get_filename_component(clang_dir ${clang_dir} DIRECTORY)
  execute_process(COMMAND ${clang} -print-prog-name=ld.lld
                  OUTPUT_VARIABLE lld OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(arch_flags "")
  foreach(arch ${archs})
    list(APPEND arch_flags --offload-arch=${arch})
  endforeach()
  execute_process(COMMAND ${clang} -x hip ${arch_flags} -nogpulib -nogpuinc --cuda-device-only
                          -fsyntax-only /dev/null
                  RESULT_VARIABLE arch_rc ERROR_VARIABLE arch_err)
  set(${why} "" PARENT_SCOPE)
  if(NOT arch_rc EQUAL 0)
    string(STRIP "${arch_err}" arch_err)
    list(JOIN arch_flags " " shown)
    set(${why} "${clang} does not take ${shown}: ${arch_err}" PARENT_SCOPE)
  elseif(NOT lld STREQUAL "${clang_dir}/ld.lld" OR NOT EXISTS "${lld}")
    set(${why} "${clang} finds no ld.lld of its own in ${clang_dir} for the device link (Debian: "
               "apt install ${lld_package})" PARENT_SCOPE)
  endif()
endfunction()

# relay_hip_device_libs(<out> <clang> <archs> [<folder>]): sets <out> to a --rocm-device-lib-path
# for these architectures, or to a sentence saying why there is none. The system's (Debian's
# rocm-device-libs, or a ROCm install's) where it has every oclc_isa_version_<n>.bc needed;
# otherwise <folder> (build/rocm-device-libs by default) of links to it plus the missing files. Each such file is one
# constant, __oclc_ISA_version = major * 1000 + minor * 100 + stepping (gfx942: 9402, gfx90a:
# 9010), which is what ROCm's own oclc/src/isa_version_<n>.cl defines; it is written as IR and
# assembled by the same clang.
function(relay_hip_device_libs out clang archs)
  find_path(RELAY_ROCM_DEVICE_LIBS ocml.bc
            PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode /usr/lib/amdgcn/bitcode
                  /opt/rocm/amdgcn/bitcode /opt/rocm/lib/llvm/lib/clang/amdgcn/bitcode
            DOC "ROCm device libraries (ocml.bc, ockl.bc, oclc_*.bc): Debian's rocm-device-libs")
  if(NOT RELAY_ROCM_DEVICE_LIBS)
    set(${out} "no ROCm device libraries (ocml.bc) found (Debian: apt install rocm-device-libs; "
               "or set RELAY_ROCM_DEVICE_LIBS)" PARENT_SCOPE)
    return()
  endif()
  set(missing "")
  foreach(target_id ${archs})
    string(REGEX REPLACE ":.*" "" arch ${target_id})  # gfx942:xnack- names gfx942's code too
    if(NOT arch MATCHES "^gfx([0-9]+)([0-9a-f])([0-9a-f])$")
      set(${out} "cannot read architecture '${arch}' as gfx<major><minor><stepping>" PARENT_SCOPE)
      return()
    endif()
    set(digits ${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3})
    if(NOT EXISTS ${RELAY_ROCM_DEVICE_LIBS}/oclc_isa_version_${digits}.bc)
      list(APPEND missing ${arch})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES missing)
  if(NOT missing)
    set(${out} ${RELAY_ROCM_DEVICE_LIBS} PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_BINARY_DIR}/rocm-device-libs)
  if(ARGC GREATER 3)
    set(dir ${ARGV3})
  endif()
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  file(GLOB libs ${RELAY_ROCM_DEVICE_LIBS}/*.bc)
  foreach(lib ${libs})
    get_filename_component(lib_name ${lib} NAME)
    file(CREATE_LINK ${lib} ${dir}/${lib_name} SYMBOLIC)
  endforeach()
  foreach(arch ${missing})
    string(REGEX MATCH "^gfx([0-9]+)([0-9a-f])([0-9a-f])$" unused ${arch})
    set(digits ${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3})
    math(EXPR version "${CMAKE_MATCH_1} * 1000 + 0x${CMAKE_MATCH_2} * 100 + 0x${CMAKE_MATCH_3}")
    file(WRITE ${dir}/isa_version_${digits}.ll
         "target triple = \"amdgcn-amd-amdhsa\"\n"
         "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) "
         "constant i32 ${version}, align 4\n")
    execute_process(COMMAND ${clang} -target amdgcn-amd-amdhsa -nogpulib -x ir -c -emit-llvm
                            ${dir}/isa_version_${digits}.ll -o ${dir}/oclc_isa_version_${digits}.bc
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      set(${out} "could not write oclc_isa_version_${digits}.bc with ${clang}: ${err}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} ${dir} PARENT_SCOPE)
endfunction()

if(RELAY_GPU MATCHES "^(AUTO|HIP|BOTH)$")
  find_program(RELAY_HIPCC hipcc)
  if(RELAY_HIPCC)
    set(RELAY_HAVE_HIPCC ON)
  elseif(NOT RELAY_GPU STREQUAL "AUTO")
    message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} needs hipcc; none found (Debian: apt install hipcc)")
  endif()

  # The clang build: a clang that takes the architectures (Debian's clang-14 and -15 refuse
  # gfx942; clang-19 refuses gfx950), its own lld for the device link (given lld-14, Debian's
  # default ld.lld, clang-19's device link fails), the HIP headers and runtime, and the device
  # libraries.
  if(RELAY_HIP_CLANG_ARCHS)
    find_program(RELAY_HIP_CLANG NAMES clang++-19
                 DOC "clang++ for the HIP build of RELAY_HIP_CLANG_ARCHS (Debian: clang-19 lld-19)")
    find_path(RELAY_HIP_INCLUDE_DIR hip/hip_runtime.h PATHS /opt/rocm/include
              DOC "HIP headers (Debian: libamdhip64-dev)")
    find_library(RELAY_HIP_RUNTIME amdhip64 PATHS /opt/rocm/lib
                 DOC "the HIP runtime library (Debian: libamdhip64-dev)")
    set(why "")
    if(NOT RELAY_HIP_CLANG)
      set(why "no clang++-19 found (Debian: apt install clang-19 lld-19; or set RELAY_HIP_CLANG)")
    elseif(NOT RELAY_HIP_INCLUDE_DIR OR NOT RELAY_HIP_RUNTIME)
      set(why "no HIP headers or libamdhip64 found (Debian: apt install libamdhip64-dev)")
    else()
      relay_hip_clang_takes(why ${RELAY_HIP_CLANG} "${RELAY_HIP_CLANG_ARCHS}" lld-19)
      if(why STREQUAL "")
        relay_hip_device_libs(RELAY_HIP_DEVICE_LIBS ${RELAY_HIP_CLANG} "${RELAY_HIP_CLANG_ARCHS}")
        if(NOT IS_DIRECTORY "${RELAY_HIP_DEVICE_LIBS}")
          set(why "${RELAY_HIP_DEVICE_LIBS}")
        endif()
      endif()
    endif()
    list(JOIN RELAY_HIP_CLANG_ARCHS " " archs)
    if(why STREQUAL "")
      set(RELAY_HIP_CLANG_BUILD ON)
      get_filename_component(RELAY_HIP_ROOT ${RELAY_HIP_INCLUDE_DIR} DIRECTORY)
    elseif(RELAY_GPU STREQUAL "AUTO")
      message(STATUS "relay: no HIP build for ${archs}: ${why}")
    else()
      message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} builds HIP for ${archs} with "
                          "clang: ${why} (RELAY_HIP_CLANG_ARCHS= turns this build off)")
    endif()
  endif()
  if(RELAY_HAVE_HIPCC OR RELAY_HIP_CLANG_BUILD)
    set(RELAY_HAVE_HIP ON)
  endif()
endif()
message(STATUS "relay GPU paths: CUDA ${RELAY_HAVE_CUDA} (${CMAKE_CUDA_ARCHITECTURES}), "
               "HIP: hipcc ${RELAY_HAVE_HIPCC} (${RELAY_HIP_ARCH}), "
               "clang ${RELAY_HIP_CLANG_BUILD} (${RELAY_HIP_CLANG_ARCHS}); "
               "compile check only (unoptimized): ${RELAY_GPU_COMPILE_CHECK}")

# nvcc spells warnings its own way; -Wpedantic and -Wold-style-cast are left out because they fire
# on the code nvcc generates (line markers, casts in its host stubs), not on ours.
set(RELAY_CUDA_WARNINGS
    -Werror=all-warnings
    "-Xcompiler=-Wall,-Wextra,-Wshadow,-Wnon-virtual-dtor,-Wcast-align,-Woverloaded-virtual,-Wnull-dereference,-Wformat=2,-Werror")
set(RELAY_HIP_WARNINGS ${RELAY_WARNINGS})
set(RELAY_HIP_EXECUTABLE_OPT -O2)
if(RELAY_GPU_COMPILE_CHECK)
  set(RELAY_HIP_EXECUTABLE_OPT -O0)
endif()

# relay_cuda_target(<target>): C++20, warnings as errors, for a target whose GPU sources are marked
# LANGUAGE CUDA (see relay_gpu_sources).
# The standard goes in as a flag: CMake 3.25 (Debian 12's) knows no CUDA20 dialect for nvcc.
function(relay_cuda_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20
                                           ${RELAY_CUDA_WARNINGS}>)
  relay_project_target(${target})
endfunction()

# relay_gpu_sources(<files>...): compile these .cpp files as CUDA (they hold kernels).
function(relay_gpu_sources)
  set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CUDA)
endfunction()

# relay_hip_executable(<name> GPU <files>... [CXX_TARGET <object library>] [INCLUDES <dirs>...]
#                      [LIBS <libraries>...]):
# compiles the GPU files and links them, with the objects of a host-compiled object library and
# the given library files (generator expressions allowed), once per HIP build:
#   <name>          hipcc, RELAY_HIP_ARCH (where RELAY_HAVE_HIPCC);
#   <name>_<archs>  RELAY_HIP_CLANG, RELAY_HIP_CLANG_ARCHS joined by '_', e.g. <name>_gfx942
#                   (where RELAY_HIP_CLANG_BUILD).
# Sets <name>_TARGETS to the targets made and <target>_PATH to each one's executable. Building them
# is the compile-and-link check; all are in ALL.
function(relay_hip_executable name)
  cmake_parse_arguments(ARG "" "CXX_TARGET" "GPU;INCLUDES;LIBS" ${ARGN})
  set(includes "")
  foreach(dir ${CMAKE_SOURCE_DIR}/include ${ARG_INCLUDES})
    list(APPEND includes "-I${dir}")
  endforeach()
  set(targets "")
  if(RELAY_HAVE_HIPCC)
    relay_hip_variant(${name} "" "${RELAY_HIP_ARCH}" "${RELAY_HIPCC}" "" "")
    list(APPEND targets ${name})
  endif()
  if(RELAY_HIP_CLANG_BUILD)
    string(REPLACE ";" "_" suffix "_${RELAY_HIP_CLANG_ARCHS}")
    string(REPLACE ":" "" suffix "${suffix}")
    # --rocm-path: the HIP headers and runtime these were found at; --hip-link: link libamdhip64.
    set(compile_flags --rocm-path=${RELAY_HIP_ROOT} --rocm-device-lib-path=${RELAY_HIP_DEVICE_LIBS})
    relay_hip_variant(${name} "${suffix}" "${RELAY_HIP_CLANG_ARCHS}" "${RELAY_HIP_CLANG}"
                      "${compile_flags}" "--hip-link;--rocm-path=${RELAY_HIP_ROOT}")
    list(APPEND targets ${name}${suffix})
  endif()
  foreach(target IN LISTS targets)
    set(${target}_PATH ${${target}_PATH} PARENT_SCOPE)
  endforeach()
  set(${name}_TARGETS ${targets} PARENT_SCOPE)
endfunction()

# One build of relay_hip_executable (its ARG_*, includes in scope): target <name><suffix>.
function(relay_hip_variant name suffix archs compiler compile_flags link_flags)
  set(target ${name}${suffix})
  set(arch_flags "")
  foreach(arch ${archs})
    list(APPEND arch_flags "--offload-arch=${arch}")
  endforeach()
  get_filename_component(compiler_name ${compiler} NAME)
  set(objects "")
  foreach(src ${ARG_GPU})
    get_filename_component(base ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${target}.dir/${base}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/${target}.dir
      COMMAND ${compiler} -std=c++20 ${arch_flags} ${compile_flags} ${RELAY_HIP_EXECUTABLE_OPT}
              ${RELAY_HIP_WARNINGS}
              ${includes} -MD -MF ${obj}.d -x hip -c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${src}
      DEPFILE ${obj}.d
      COMMENT "${compiler_name} (${archs}) ${src}"
      COMMAND_EXPAND_LISTS VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(host_objects "")
  set(depends "")
  if(ARG_CXX_TARGET)
    set(host_objects "$<TARGET_OBJECTS:${ARG_CXX_TARGET}>")
    set(depends ${ARG_CXX_TARGET})
  endif()
  # The executable lies in <target>.dir/ (a file beside the target of the same name confuses Ninja).
  set(exe ${CMAKE_CURRENT_BINARY_DIR}/${target}.dir/${target})
  add_custom_command(
    OUTPUT ${exe}
    COMMAND ${compiler} ${arch_flags} ${link_flags} ${objects} ${host_objects} ${ARG_LIBS} -o ${exe}
    DEPENDS ${objects} ${depends} ${ARG_LIBS}
    COMMENT "${compiler_name}: linking ${target}"
    COMMAND_EXPAND_LISTS VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${exe})
  set(${target}_PATH ${exe} PARENT_SCOPE)
endfunction()
