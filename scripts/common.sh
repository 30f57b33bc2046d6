# Shared by scripts/run.sh and scripts/test.sh: install missing Debian packages, configure and build.
# Sourced, not run. Every failure exits non-zero with a one-line reason.

MPX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPX_BUILD_DIR=${MPX_BUILD_DIR:-"$MPX_ROOT/build"}

mpx_die() { echo "mpx: $*" >&2; exit 1; }

# Debian 12 packages the build, the app and the tests need. libqt6opengl6-dev: Qt6Charts' CMake
# package requires Qt6OpenGL, which --no-install-recommends leaves out (without it CMake finds no
# Qt Charts and would build neither the app nor the tests). python3-numpy: the independent FP4
# reference the tests hold mpx-cli quantize against (tests/fp4/ref_quantize.py). fortunes: the English
# text the GPT trains on (docs/gpt.md; read from /usr/share/games/fortunes, nothing is downloaded).
# libopenblas-pthread-dev: the CPU backend's large FP32 GEMMs (engine/compute/cpu_gemm.hpp; without it
# they run on Eigen). Installing it also makes OpenBLAS Debian's libblas.so.3, so PyTorch's FP32 sums
# run on it too; the PyTorch comparisons hold with either BLAS (tests/test_torch_export.cpp).
MPX_PACKAGES=(build-essential cmake ninja-build pkg-config libeigen3-dev nlohmann-json3-dev
  libcli11-dev qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl1-mesa-dev xvfb xauth python3 python3-numpy ccache
  fortunes libopenblas-pthread-dev)

# The test command's own: PyTorch (Debian's, CPU) is the outside reference the export-torch test
# trains against (tests/test_torch_export.cpp); the app and its build do not need it.
MPX_TEST_PACKAGES=(python3-torch)

# mpx_install_packages [extra packages...]
mpx_install_packages() {
  local missing=()
  for p in "${MPX_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "mpx: installing missing packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || mpx_die "need root or sudo to install: ${missing[*]}"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >/dev/null || mpx_die "apt-get update failed (network or apt sources?)"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || mpx_die "apt-get install failed for: ${missing[*]}"
}

# A compiler cache where one is installed (CCACHE_DISABLE=1 turns it off for a cold-build timing).
MPX_LAUNCHER_ARGS=()
if command -v ccache >/dev/null; then
  MPX_LAUNCHER_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

mpx_build() {
  local args=(-S "$MPX_ROOT" -B "$MPX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${MPX_LAUNCHER_ARGS[@]}")
  if [ ! -f "$MPX_BUILD_DIR/CMakeCache.txt" ]; then
    cmake "${args[@]}" "$@" || mpx_die "CMake configure failed (see the messages above)"
  elif [ $# -gt 0 ]; then
    cmake "${args[@]}" "$@" >/dev/null || mpx_die "CMake configure failed (see the messages above)"
  fi
  cmake --build "$MPX_BUILD_DIR" --parallel "$(nproc)" || mpx_die "build failed (see the compiler messages above)"
}
