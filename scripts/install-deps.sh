#!/usr/bin/env bash
# Installs what tessera needs to build and test, from Debian 12's packages only.
# Idempotent: packages already present are not touched, and apt is not called at all when
# nothing is missing.
set -euo pipefail

packages=(
  g++ cmake ninja-build
  libfmt-dev libspdlog-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  pkgconf libhwloc-dev libpugixml-dev libcpp-httplib-dev libmicrohttpd-dev openssl libfccp-dev libnlopt-cxx-dev
)

# `install-deps.sh clang`: also Debian's clang 19 with its sanitizer runtimes and libFuzzer, for
# the sanitizer builds (./run.sh test-asan, test-tsan) and scripts/run-fuzz.sh (clang 14 cannot
# compile libstdc++ 12's std::expected).
if [ "${1:-}" = clang ]; then
  packages+=(clang-19 libclang-rt-19-dev llvm-19)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing ${missing[*]}; run as root (or install sudo) to install them" >&2
    exit 1
  fi
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
