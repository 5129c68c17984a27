#!/usr/bin/env bash
# Installs the Debian packages Tandem needs that are missing (apt-get, as root or through sudo).
# Sourced by scripts/run and scripts/test; safe to run again.
set -euo pipefail
packages=(
  build-essential cmake pkg-config             # toolchain
  libtbb-dev libhwloc-dev                      # CPU executor and topology
  libopenblas-dev                              # the CPU GEMM benchmark's and the peers' baseline (CBLAS)
  nlohmann-json3-dev libcli11-dev              # files and command line
  libreadline-dev                              # the MATLAB prompt's line editing and history
  libvulkan-dev libvulkan-volk-dev glslang-dev # Vulkan backend (the loader is loaded at run time)
  glslang-tools                                # glslang-dev's CMake package names /usr/bin/glslangValidator
  mesa-vulkan-drivers vulkan-validationlayers  # lavapipe and the validation layer, for the tests
  libgtest-dev libgmock-dev libbenchmark-dev   # tests and benchmarks
  clang libclang-rt-14-dev                     # the parser's fuzz target (libFuzzer)
  libeigen3-dev python3 python3-numpy python3-numexpr   # benchmark peers
  octave python3-matplotlib                    # benchmark peer and the harness's chart
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
