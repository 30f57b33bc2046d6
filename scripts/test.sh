#!/usr/bin/env bash
# Installs what is missing, builds (Release, incremental) and runs every CTest suite, the exhaustive
# format sweeps included, with Qt's offscreen platform. Extra arguments go to ctest (e.g. -L unit).
#
# --sanitize: instead, builds in build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included) and runs every suite but the exhaustive sweeps; then builds the
# record-buffer thread suite in build-tsan/ with ThreadSanitizer and runs it; then fuzzes the
# readers for MPX_FUZZ_SECONDS (scripts/fuzz.sh). Any finding fails. Suppressions, in
# scripts/sanitize/, are for third-party code only, each with its reason. The UI stress test does
# MPX_STRESS_ACTIONS=2000 random actions there (10,000 in the plain run): under ASan each action
# costs five to six times as much, and 10,000 took longer than every other suite together.
# Each phase prints its wall time (docs/benchmarks.md has the figures).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpx_install_packages
export QT_QPA_PLATFORM=offscreen

if [ "${1:-}" = "--sanitize" ]; then
  shift
  supp="$MPX_ROOT/scripts/sanitize"
  phase() { echo "mpx: sanitizer phase '$1' took $(( SECONDS - t0 )) s"; t0=$SECONDS; }
  t0=$SECONDS
  export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  export MPX_STRESS_ACTIONS="${MPX_STRESS_ACTIONS:-2000}"
  MPX_BUILD_DIR="$MPX_ROOT/build-asan" mpx_build -DMPX_SANITIZE=address,undefined -DMPX_WITH_CUDA=OFF
  phase "ASan+UBSan build"
  (cd "$MPX_ROOT/build-asan" && ctest --output-on-failure --no-tests=error --timeout 1800 -j "$(nproc)" \
    -LE exhaustive "$@") || mpx_die "tests failed under ASan/UBSan (see ctest's output above)"
  phase "ASan+UBSan suites"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  tsan="$MPX_ROOT/build-tsan"
  if [ ! -f "$tsan/CMakeCache.txt" ]; then
    cmake -S "$MPX_ROOT" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPX_SANITIZE=thread \
      -DMPX_WITH_CUDA=OFF >/dev/null || mpx_die "CMake configure of the TSan build failed"
  fi
  cmake --build "$tsan" --parallel "$(nproc)" --target ui_test_record_buffer_threads || mpx_die "TSan build failed"
  (cd "$tsan" && ctest --output-on-failure --no-tests=error -R record_buffer_threads) \
    || mpx_die "the thread suite failed under TSan (see above)"
  phase "TSan build and thread suite"
  "$MPX_ROOT/scripts/fuzz.sh"
  phase "fuzzer build and run"
  exit 0
fi

mpx_build
cd "$MPX_BUILD_DIR"
ctest --output-on-failure --no-tests=error --timeout 1800 -j "$(nproc)" "$@" || mpx_die "tests failed (see ctest's output above)"
