# ggml from the npm registry (no vendored sources in the repository).
# scripts/fetch_ggml.sh runs `npm pack` on the pinned package, checks its sha512 and lays
# ggml's sources under CHATTERBOX_GGML_DIR; ggml is then built as static libraries.

set(CHATTERBOX_GGML_DIR "${CMAKE_SOURCE_DIR}/third_party/ggml-src" CACHE PATH
    "folder holding ggml/ (filled by scripts/fetch_ggml.sh, git-ignored)")

set(_fetch "${CMAKE_SOURCE_DIR}/scripts/fetch_ggml.sh")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_fetch}")
execute_process(COMMAND bash "${_fetch}" "${CHATTERBOX_GGML_DIR}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "scripts/fetch_ggml.sh failed (${_rc}); see its output above")
endif()

# ggml's option() calls honour these plain variables (CMP0077 is NEW in ggml's CMakeLists).
# Static ggml by default. A CUDA build has ggml's backends as modules that the engine loads at run
# time (GGML_BACKEND_DL, which needs ggml as shared libraries): the same programs then run on a
# machine without an NVIDIA driver or GPU, where libggml-cuda.so fails to load or finds no device.
set(GGML_BUILD_TESTS    OFF)
set(GGML_BUILD_EXAMPLES OFF)
set(GGML_BACKEND_DL     ${CHATTERBOX_CUDA})
set(BUILD_SHARED_LIBS   ${CHATTERBOX_CUDA})
# ggml's own thread pool, not OpenMP. libgomp shortens its barrier spin to 100 rounds as soon as a
# process has more OpenMP workers than CPUs (each thread that runs a multi-threaded graph keeps a
# team of its own: a batch scheduler beside the main thread or a session already makes two on two
# cores), and from then on ggml's ~1100 barriers of a T3 step each sleep and wake in the kernel: a
# decode step took 68 instead of 40 ms (bench/history/2026-12-03-t3-batching-intel.md). ggml's pool
# spins at its barriers instead; a backend leaves a CPU to every other runnable thread, of this
# process too, so that no barrier waits for a descheduled thread (core/cpu_contention.h).
set(GGML_OPENMP         OFF)
set(GGML_CCACHE         OFF)
# ggml turns llamafile's tinyBLAS kernels off when it is a subproject; they are ~30 % faster
# for the f32/f16 matrix products of the flow decoder and the vocoder.
set(GGML_LLAMAFILE      ON)
# ggml cannot build a native CPU backend as a loadable module (the module's feature check needs
# explicit instruction sets), so a CUDA build's CPU part is the portable one.
if(CHATTERBOX_NATIVE AND NOT GGML_BACKEND_DL)
  set(GGML_NATIVE ON)
else()
  # portable x86-64 build: AVX2 class, runs on any machine of the last decade
  set(GGML_NATIVE OFF)
  foreach(f SSE42 AVX AVX2 BMI2 FMA F16C)
    set(GGML_${f} ON)
  endforeach()
endif()
set(GGML_CUDA           ${CHATTERBOX_CUDA})
if(CHATTERBOX_CUDA)
  set(GGML_CUDA_NCCL    OFF)
  # Each persistent graph (GraphRunner) is captured once as a CUDA graph and replayed, with its
  # kernel arguments updated, instead of launching every kernel from the host at every step.
  set(GGML_CUDA_GRAPHS  ON)
  # Machine code for Ampere (A100; 80 also runs on 86, the RTX 30 series), Ada (89: L4, L40, RTX 40),
  # Hopper (90: H100, H200), Blackwell (100: B200; 120a: RTX 50) and PTX of 80 that the driver
  # compiles for any later GPU. Each architecture adds its own device compilation of every kernel.
  set(CHATTERBOX_CUDA_ARCHITECTURES "80-real;86-real;89-real;90-real;100-real;120a-real;80-virtual" CACHE STRING
      "GPU architectures of the CUDA backend (CMAKE_CUDA_ARCHITECTURES syntax)")
  set(CMAKE_CUDA_ARCHITECTURES "${CHATTERBOX_CUDA_ARCHITECTURES}")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
endif()

# ggml stamps `git rev-parse HEAD` of its folder into its compile flags (GGML_COMMIT); inside this
# repository's third_party/ that is our own HEAD, so every commit recompiled ggml. No repository for
# it: the stamp is "unknown" (the version is the npm package's pin, scripts/fetch_ggml.sh).
set(ENV{GIT_DIR} "${CMAKE_BINARY_DIR}/no-repository-for-ggml")
add_subdirectory("${CHATTERBOX_GGML_DIR}/ggml" "${CMAKE_BINARY_DIR}/_deps/ggml-build" EXCLUDE_FROM_ALL SYSTEM)
unset(ENV{GIT_DIR})
set(BUILD_SHARED_LIBS OFF) # the project's own libraries stay static

if(GGML_BACKEND_DL)
  # ggml's libraries and backend modules beside the programs, which find them through $ORIGIN
  # (a copied folder works too); core/backend.cpp also looks in the build folder, for the tests
  # in its subfolders.
  set(_ggml_libraries ggml-base ggml ggml-cpu)
  if(CHATTERBOX_CUDA)
    list(APPEND _ggml_libraries ggml-cuda)
  endif()
  set_target_properties(${_ggml_libraries} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}")
  set(CMAKE_BUILD_RPATH "\$ORIGIN")
endif()

# GCC 12 miscompiles ggml's AMX tile configuration (cmake/gcc12-amx/amxtileintrin.h says how);
# the replacement header goes first on ggml-cpu's include path, ggml's sources stay as fetched.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU" AND CMAKE_C_COMPILER_VERSION VERSION_LESS 13)
  target_include_directories(ggml-cpu BEFORE PRIVATE "${CMAKE_SOURCE_DIR}/cmake/gcc12-amx")
endif()

# GCC 12's AVX-512 headers pass _mm512_undefined_*() as the merge source of unmasked operations,
# which -W(maybe-)uninitialized reports at every use: ~800 lines from ggml's CPU kernels per build
# that say nothing about either project's code (GCC 13 no longer warns). The project's own AVX-512
# files get the same two flags (CMakeLists.txt).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ggml-cpu PRIVATE -Wno-maybe-uninitialized -Wno-uninitialized)
endif()

# ThreadSanitizer: ggml's thread pool, graph scheduling and backend code are instrumented (the
# synchronisation a race in this project would go through); its math kernels are not. Each kernel
# thread works on its own rows between the pool's barriers, and instrumenting those loops slows the
# suite's full-size golden tests more than tenfold (an estimated 3 hours of the two cores).
if(CHATTERBOX_TSAN)
  set(_ggml_kernels ops.cpp vec.cpp binary-ops.cpp unary-ops.cpp quants.c repack.cpp traits.cpp
                    llamafile/sgemm.cpp amx/amx.cpp amx/mmq.cpp arch/x86/quants.c arch/x86/repack.cpp)
  list(TRANSFORM _ggml_kernels PREPEND "${CHATTERBOX_GGML_DIR}/ggml/src/ggml-cpu/")
  set_source_files_properties(${_ggml_kernels} TARGET_DIRECTORY ggml-cpu PROPERTIES COMPILE_OPTIONS -fno-sanitize=thread)
  set_source_files_properties("${CHATTERBOX_GGML_DIR}/ggml/src/ggml-quants.c" TARGET_DIRECTORY ggml-base
                              PROPERTIES COMPILE_OPTIONS -fno-sanitize=thread)
endif()
