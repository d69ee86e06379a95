# CUDA and NCCL are optional: MOEPLAN_WITH_CUDA=AUTO turns them on only when
# both a CUDA compiler and NCCL are found. enable_language(CUDA) happens only here.
set(MOEPLAN_CUDA_ENABLED OFF)
if(NOT MOEPLAN_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include /usr/include)
  find_library(NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
  if(CMAKE_CUDA_COMPILER AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    enable_language(CUDA)
    # The .cu files include moeplan's C++20 headers and CUDA targets take
    # CXX_STANDARD (20); CMake 3.25 knows nvcc's dialect flags only up to C++17.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    add_library(moeplan_nccl UNKNOWN IMPORTED)
    set_target_properties(moeplan_nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                  INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    add_library(moeplan::nccl ALIAS moeplan_nccl)
    set(MOEPLAN_CUDA_ENABLED ON)
    # The CUDA plug-in is a shared library holding moeplan's static libraries:
    # they need position-independent code.
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    # nvcc's own warnings and the host compiler's, errors under MOEPLAN_WERROR
    # (moeplan_warnings' flags are g++'s and are not given to nvcc).
    add_library(moeplan_cuda_warnings INTERFACE)
    target_compile_options(moeplan_cuda_warnings INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
    if(MOEPLAN_WERROR)
      target_compile_options(moeplan_cuda_warnings INTERFACE
                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
    endif()
  elseif(MOEPLAN_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MOEPLAN_WITH_CUDA=ON but nvcc or NCCL was not found")
  endif()
endif()
message(STATUS "moeplan: CUDA/NCCL parts ${MOEPLAN_CUDA_ENABLED}")
