# The GPU paths of the tests and examples (the library itself stays headers).
#
#   CUDA: CMake's CUDA language with nvcc; CMAKE_CUDA_ARCHITECTURES defaults to 90 (Hopper).
#   HIP:  hipcc driven directly, for RELAY_HIP_ARCH (gfx90a by default). Debian's hipcc (HIP 5.2
#         on the distribution's clang) is not a compiler CMake's HIP language accepts, and no GPU
#         is needed to compile and link, so custom commands build the HIP executables.
#
# RELAY_GPU: AUTO builds whatever compilers exist; CUDA, HIP or BOTH require them; OFF builds
# neither. The environment variable of the same name sets the default (CI asks for BOTH).
if(DEFINED ENV{RELAY_GPU} AND NOT "$ENV{RELAY_GPU}" STREQUAL "")
  set(relay_gpu_default "$ENV{RELAY_GPU}")
else()
  set(relay_gpu_default AUTO)
endif()
set(RELAY_GPU "${relay_gpu_default}" CACHE STRING "GPU paths to build: AUTO, CUDA, HIP, BOTH, OFF")
set_property(CACHE RELAY_GPU PROPERTY STRINGS AUTO CUDA HIP BOTH OFF)
set(RELAY_HIP_ARCH "gfx90a" CACHE STRING "--offload-arch of the hipcc build")

set(RELAY_HAVE_CUDA OFF)
set(RELAY_HAVE_HIP OFF)

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
  elseif(NOT RELAY_GPU STREQUAL "AUTO")
    message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} needs nvcc; none found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()

if(RELAY_GPU MATCHES "^(AUTO|HIP|BOTH)$")
  find_program(RELAY_HIPCC hipcc)
  if(RELAY_HIPCC)
    set(RELAY_HAVE_HIP ON)
  elseif(NOT RELAY_GPU STREQUAL "AUTO")
    message(FATAL_ERROR "RELAY_GPU=${RELAY_GPU} needs hipcc; none found (Debian: apt install hipcc)")
  endif()
endif()
# NCCL, for relay-bench's baseline and the nccl transport's tests and tools: its header and
# library from the CUDA toolkit or the system (RELAY_NCCL_INCLUDE_DIR, RELAY_NCCL_LIBRARY; either
# may be missing: a header-only machine still compiles what uses it).
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  find_path(RELAY_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(RELAY_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR}
                                             ${CUDAToolkit_LIBRARY_ROOT}/lib)
endif()

message(STATUS "relay GPU paths: CUDA ${RELAY_HAVE_CUDA} (${CMAKE_CUDA_ARCHITECTURES}), "
               "HIP ${RELAY_HAVE_HIP} (${RELAY_HIP_ARCH})")

# nvcc spells warnings its own way; -Wpedantic and -Wold-style-cast are left out because they fire
# on the code nvcc generates (line markers, casts in its host stubs), not on ours.
set(RELAY_CUDA_WARNINGS
    -Werror=all-warnings
    "-Xcompiler=-Wall,-Wextra,-Wshadow,-Wnon-virtual-dtor,-Wcast-align,-Woverloaded-virtual,-Wnull-dereference,-Wformat=2,-Werror")
set(RELAY_HIP_WARNINGS ${RELAY_WARNINGS})

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
# compiles the GPU files with hipcc and links them, with the objects of a host-compiled object
# library and the given library files (generator expressions allowed), into <name>; sets
# <name>_PATH to the executable. Building the target `<name>` is the compile-and-link check.
function(relay_hip_executable name)
  cmake_parse_arguments(ARG "" "CXX_TARGET" "GPU;INCLUDES;LIBS" ${ARGN})
  set(objects "")
  set(includes "")
  foreach(dir ${CMAKE_SOURCE_DIR}/include ${ARG_INCLUDES})
    list(APPEND includes "-I${dir}")
  endforeach()
  foreach(src ${ARG_GPU})
    get_filename_component(base ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.dir/${base}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/${name}.dir
      COMMAND ${RELAY_HIPCC} -std=c++20 --offload-arch=${RELAY_HIP_ARCH} -O2 ${RELAY_HIP_WARNINGS}
              ${includes} -MD -MF ${obj}.d -x hip -c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${src}
      DEPFILE ${obj}.d
      COMMENT "hipcc (${RELAY_HIP_ARCH}) ${src}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(host_objects "")
  set(depends "")
  if(ARG_CXX_TARGET)
    set(host_objects "$<TARGET_OBJECTS:${ARG_CXX_TARGET}>")
    set(depends ${ARG_CXX_TARGET})
  endif()
  # The executable lies in <name>.dir/ (a file beside the target of the same name confuses Ninja).
  set(exe ${CMAKE_CURRENT_BINARY_DIR}/${name}.dir/${name})
  add_custom_command(
    OUTPUT ${exe}
    COMMAND ${RELAY_HIPCC} --offload-arch=${RELAY_HIP_ARCH} ${objects} ${host_objects} ${ARG_LIBS}
            -o ${exe}
    DEPENDS ${objects} ${depends} ${ARG_LIBS}
    COMMENT "hipcc: linking ${name}"
    COMMAND_EXPAND_LISTS VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${exe})
  set(${name}_PATH ${exe} PARENT_SCOPE)
endfunction()
