#!/usr/bin/env bash
# Installs the benchmark peers that setup.sh leaves out to keep CI fast:
# - a virtual environment, .venv-peers at the repository root, made from Debian's python3 with
#   NumPy, JAX (jaxlib is XLA:CPU, the peer that counts most), PyTorch 2 (eager and
#   torch.compile) and TensorFlow (CPU; the front end kiln.tensorflow and its tests, which
#   run with PYTHONPATH=build/python) from the Python package index. Run the benchmarks with its interpreter:
#   .venv-peers/bin/python benchmarks/cpu_workloads.py
#   (PyTorch's Linux wheel pulls CUDA libraries: several GB, fine for a peer, too heavy for CI.)
# - Eigen (libeigen3-dev, a peer in benchmarks/gemm_libraries.cc; reconfigure the build after
#   installing it) and python3-venv, from Debian.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

packages=(python3-venv python3-dev libeigen3-dev)  # python3-dev: torch.compile builds C++
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv="$root/.venv-peers"
[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q numpy jax torch tensorflow-cpu pytest ml_dtypes
"$venv/bin/python" -c 'import numpy, jax, torch, tensorflow as tf; print("peers in .venv-peers: numpy", numpy.__version__, "jax", jax.__version__, "torch", torch.__version__, "tensorflow", tf.__version__)'
