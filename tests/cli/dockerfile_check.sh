#!/usr/bin/env bash
# The container image's recipe against what the build produces, without Docker (no daemon is
# needed to check it):
#   - the runtime stage installs exactly the Debian packages that provide the shared libraries
#     the program and the interposer link (beside what debian:12-slim already has), so the image
#     starts and carries nothing stale;
#   - it runs as a user other than root, its entry point is where the install puts the program,
#     and its build command tags the image the manifests run (tessera:VERSION; the manifests'
#     tags are checked in tests/k8s/scheduler_config_test.cpp).
# Usage: dockerfile_check.sh SOURCE_DIR VERSION PROGRAM [LIBRARY...]. Exit 77 (skip) without
# readelf, ldd or dpkg.
set -euo pipefail
src=$1 version=$2
shift 2
for tool in readelf ldd dpkg; do
  command -v "$tool" >/dev/null || { echo "no $tool here: skipped"; exit 77; }
done
dockerfile=$src/Dockerfile
fail=0
problem() { echo "Dockerfile: $*"; fail=1; }

# The runtime stage: everything after the last FROM.
runtime=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' "$dockerfile")
# Its apt-get install line's packages (continued lines joined).
listed=$(printf '%s' "$runtime" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
  sed -n 's/.*apt-get install -y --no-install-recommends \([^&]*\).*/\1/p' | tr -s ' ' '\n' |
  sed '/^$/d' | sort -u)
[ -n "$listed" ] || problem "no apt-get install line in the runtime stage"
# In debian:12-slim already (apt needs them).
base="libc6 libgcc-s1 libstdc++6"

# Each library the programs link: its name, who links it, and the path ldd resolves it to ("libx.so.1
# => /path (address)", or for the dynamic loader "/path (address)").
declare -a libs=() users=() paths=()
for file in "$@"; do
  for lib in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldd "$file" | awk -v l="$lib" '$1 == l { print $3 } $1 ~ ("/" l "$") { print $1 }')
    [ -n "$path" ] || { problem "$file needs $lib, which ldd cannot find here"; continue; }
    libs+=("$lib") users+=("$(basename "$file")") paths+=("$path")
  done
done
# Their packages, from one dpkg query over every name a library may be known by: the path ldd
# gives, the file it resolves to, and that file under /lib (Debian 12 merges /lib into /usr/lib;
# dpkg knows each file under one of the names).
declare -A owner=()
candidates=()
for path in "${paths[@]}"; do
  real=$(readlink -f "$path")
  candidates+=("$path" "$real" "${real#/usr}")
done
while IFS= read -r line; do
  owner[${line#*: }]=${line%%:*}
done < <(dpkg -S "${candidates[@]}" 2>/dev/null || true)

needed=""
for i in "${!libs[@]}"; do
  real=$(readlink -f "${paths[i]}")
  package=""
  for candidate in "${paths[i]}" "$real" "${real#/usr}"; do
    [ -n "$package" ] || package=${owner[$candidate]:-}
  done
  [ -n "$package" ] || { problem "${libs[i]} (${paths[i]}) belongs to no Debian package"; continue; }
  needed="$needed $package"
  if ! grep -qx "$package" <<<"$listed" && [[ " $base " != *" $package "* ]]; then
    problem "${users[i]} links ${libs[i]}, from $package, which the runtime stage does not install"
  fi
done
for package in $listed; do
  [[ " $needed " == *" $package "* ]] ||
    problem "the runtime stage installs $package, which provides nothing the programs link"
done

user=$(printf '%s' "$runtime" | sed -n 's/^USER \(.*\)/\1/p' | tail -n 1)
case "$user" in
  "" | 0 | root) problem "the image runs as root (USER '${user}')" ;;
esac
grep -q '^ENTRYPOINT \["/usr/local/bin/tessera"\]' <<<"$runtime" ||
  problem "the entry point is not /usr/local/bin/tessera"
grep -q -- '--prefix /out/usr/local' "$dockerfile" && grep -q '^COPY --from=build /out/usr/local/ /usr/local/' <<<"$runtime" ||
  problem "the runtime stage does not copy what the build stage installs into /usr/local"
grep -q "docker build -t tessera:$version \." "$dockerfile" ||
  problem "its build command does not tag tessera:$version"

[ "$fail" -eq 0 ] && echo "Dockerfile: the runtime stage installs $(wc -w <<<"$listed") packages, the ones the programs link; runs as uid $user"
exit "$fail"
