#!/usr/bin/env bash
# Installs what tessera needs to build and test, from Debian 12's packages, and the JavaScript the
# validation report inlines (third_party/js, from the npm registry). `image` installs only what
# building the program needs; `clang` adds the sanitizer and fuzzing toolchain.
# Idempotent: packages already present are not touched, apt is not called at all when nothing is
# missing, and npm only when third_party/js/node_modules is missing or older than its lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

# What building the tessera program needs (npm fetches the report's JavaScript at configure time).
packages=(
  g++ cmake ninja-build
  libfmt-dev libspdlog-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  pkgconf libhwloc-dev libpugixml-dev libcpp-httplib-dev libmicrohttpd-dev libgnutls28-dev openssl libfccp-dev libnlopt-cxx-dev
  libglpk-dev
  prometheus-cpp-dev
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  nodejs npm
)

case "${1:-}" in
  # `install-deps.sh image`: only those, for the container image's build stage (Dockerfile),
  # which builds neither the tests nor the benchmarks.
  image) ;;
  # `install-deps.sh clang`: also Debian's clang 19 with its sanitizer runtimes and libFuzzer, for
  # the sanitizer builds (./run.sh test-asan, test-tsan) and scripts/run-fuzz.sh (clang 14 cannot
  # compile libstdc++ 12's std::expected).
  clang) packages+=(libgtest-dev libgmock-dev libbenchmark-dev prometheus chromium
    clang-19 libclang-rt-19-dev llvm-19) ;;
  # The tests and benchmarks: GoogleTest, Google Benchmark, promtool (checks the metrics
  # expositions), headless Chromium (checks the reports).
  *) packages+=(libgtest-dev libgmock-dev libbenchmark-dev prometheus chromium) ;;
esac

# What installed packages provide counts as present: NodeSource's nodejs bundles npm and conflicts
# with Debian's.
provided=" $(dpkg-query -W -f='${db:Status-Abbrev} ${Provides},\n' 2>/dev/null |
  sed -n 's/^ii *//p' | sed 's/ *([^)]*)//g' | tr -d '\n' | tr ',' ' ') "
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" &&
    [[ "$provided" != *" $p "* ]]; then
    missing+=("$p")
  fi
done

# vega, vega-lite and vega-embed at the versions third_party/js/package-lock.json pins, and (not
# for the image) what the manifest test checks with, in tests/k8s/manifest_types. npm ci rewrites
# node_modules/.package-lock.json, so that file's age says whether an install is current.
npm_install() {
  local dirs=(third_party/js)
  [ "${1:-}" = image ] || dirs+=(tests/k8s/manifest_types)
  for js in "${dirs[@]}"; do
    if [ ! -e "$js/node_modules/.package-lock.json" ] ||
      [ "$js/package-lock.json" -nt "$js/node_modules/.package-lock.json" ]; then
      echo "install-deps: npm ci in $js"
      (cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
    fi
  done
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  npm_install "${1:-}"
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
npm_install "${1:-}"
