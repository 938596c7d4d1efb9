#!/usr/bin/env bash
# Installs the Debian packages AutoHAAP needs to build and test, and only
# those that are missing: quiet and quick when everything is present.
#   scripts/setup.sh            what building and running needs
#   scripts/setup.sh --test     also what the whole test suite needs: a local
#                               Slurm (slurmctld, slurmd, munge), Chromium
#                               (renders reports) and what --fuzz adds;
#                               --slurm is the same
#   scripts/setup.sh --fuzz     also clang with libFuzzer and the sanitizer
#                               runtimes, and llvm-symbolizer for their
#                               reports (scripts/fuzz.sh)
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  openmpi-bin libopenmpi-dev
  libboost-mpi-dev libboost-serialization-dev
  libtbb-dev libcereal-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev
)
fuzz_packages=(clang libclang-rt-dev llvm)
if [[ "${1:-}" == "--test" || "${1:-}" == "--slurm" ]]; then
  packages+=(slurm-wlm slurm-wlm-basic-plugins munge libpmix-dev chromium "${fuzz_packages[@]}")
elif [[ "${1:-}" == "--fuzz" ]]; then
  packages+=("${fuzz_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: missing packages: ${missing[*]} (run as root, or install them)" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
