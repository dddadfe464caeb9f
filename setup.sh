#!/usr/bin/env bash
# setup.sh: prepare a fresh Debian 12 machine (as root) to build usentry, build it into
# build/, and run a first program in the sandbox.
#   ./setup.sh              install packages, build, run the demo
#   ./setup.sh --no-demo    install packages and build only (what CI uses)
#   ./setup.sh --no-install build (and demo) only; packages must already be there
set -euo pipefail
cd "$(dirname "$0")"

demo=1
install=1
for arg in "$@"; do
  case $arg in
    --no-demo) demo=0 ;;
    --no-install) install=0 ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

# Build: compiler, cmake, libraries. Tests: busybox-static, python3 (run in the sandbox);
# libpython3.11-testsuite for tests/cpython/compare.py (CPython's own tests, compared);
# iproute2 and util-linux (unshare) for the egress lab, whose clients are curl, git and
# pip (tests/integration/egress_test.cc).
packages=(
  build-essential cmake pkg-config
  libseccomp-dev libabsl-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
  libxbyak-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libssl-dev libc-ares-dev
  busybox-static python3 bash coreutils libpython3.11-testsuite
  iproute2 util-linux curl git python3-pip
)

if ((install)); then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
      echo "setup.sh: missing packages (${missing[*]}); run as root or install them" >&2
      exit 1
    fi
    echo "setup.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${packages[@]}"
  fi
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"

if ((demo)); then
  echo "+ build/cli/usentry run -- /bin/sh -c 'echo hello from usentry | tr a-z A-Z'"
  build/cli/usentry run -- /bin/sh -c 'echo hello from usentry | tr a-z A-Z'
fi
