#!/usr/bin/env bash
# Host-side sanitizers: builds the C++ (CPU twin, tiling, kernels, bindings, C++ tests) in a
# separate tree, build-asan/, with AddressSanitizer and UndefinedBehaviorSanitizer, then runs the
# C++ tests and a fast subset of the Python tests against that build. The package's own _C.so
# is untouched: the Python run loads build-asan/lib/_C.so through ASCENDC_OPS_LIBRARY. Only the
# baseline ISA path is built (ASCENDC_OPS_WIDE_PATHS=OFF): the AVX-512 ones are the same source; nor the
# simulated NPU (ASCENDC_OPS_SIM_NPU=OFF): the subset below does not load it.
#
# Python itself is not instrumented, so libasan must be loaded first: LD_PRELOAD of the
# compiler's libasan.so, followed by libstdc++ (else ASan's __cxa_throw interceptor finds no
# real __cxa_throw in a C program and aborts on the first C++ exception). Leak detection is off (CPython and torch keep allocations until exit);
# every other ASan/UBSan finding aborts the run (halt_on_error, -fno-sanitize-recover). The subset includes the
# mix launches (test_crosscore, test_mix_parallel): their cores are fibers, whose stack switches ASan is told of.
#
# Needs ./build.sh to have made .venv first. Usage: tools/sanitize_host.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD_DIR:-build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -g1: line tables only, enough for ASan's file:line stacks, at a fraction of -g's compile and link time. -O0
# everywhere: instrumented, the template-heavy twin and kernels compile 2.8x faster than at -O1 (attention.cpp 26 ->
# 9.4 s; the build 1,050 -> 640 CPU-s on Zen 3, 2026-12-02); the subset below runs 48 -> 90 s on two workers.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" \
  -DASCENDC_OPS_OPT_LEVEL=-O0 \
  -DPython3_EXECUTABLE="$PWD/.venv/bin/python" \
  -DASCENDC_OPS_LIBRARY_DIR="$PWD/$build/lib" -DASCENDC_OPS_WIDE_PATHS=OFF -DASCENDC_OPS_SIM_NPU=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
# Everything this configuration has: the baseline library, the C++ tests and the test kernels the runs below load, in
# one make run (named targets are built one after another, each with the cores idle at its tail: 2.5 minutes more).
cmake --build "$build" -j "${JOBS:-2}"

export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The C++ tests (registered with CTest in tests/cpp/CMakeLists.txt); a finding aborts a test, and set -e the script.
ctest --test-dir "$build" --output-on-failure --no-tests=error --parallel "${JOBS:-2}"

# The mix launches first: their cross-entropy and attention cases are the longest, the short ones fill in around them.
LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so.6)" ASCENDC_OPS_LIBRARY="$PWD/$build/lib/_C.so" \
  ASCENDC_OPS_BUILD_DIR="$PWD/$build" ASCENDC_TWIN_SANITIZE=1 \
  .venv/bin/python -m pytest -q -n "${JOBS:-2}" -p no:cacheprovider -x tests/twin/test_mix_parallel.py \
  tests/twin/test_twin.py tests/twin/test_sanitizer.py \
  tests/ops/test_rope.py::test_rope_customer_accuracy tests/ops/test_rope.py::test_rotary_mul_backward \
  tests/ops/test_swiglu.py::test_forward_sweep tests/ops/test_swiglu.py::test_backward_sweep \
  tests/ops/test_rms_norm.py::test_rms_norm_forward tests/ops/test_rms_norm.py::test_rms_norm_backward_split_row \
  tests/ops/test_rms_norm.py::test_add_rms_norm_forward_backward \
  tests/twin/test_crosscore.py "$@"
