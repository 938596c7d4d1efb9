#!/usr/bin/env bash
# Measures what one CUDA GPU reaches — dense GEMMs through cuBLASLt
# (gemm_sweep.cu), fused attention, streaming kernels, whole transformer
# layers and the memory the runtime holds (kernel_sweep.py), what training
# keeps under each recompute mode (memory_sweep.py) and each op of a Llama
# layer's forward (op_sweep.py) — and writes
# the raw CSV files into OUT_DIR. Needs nvcc and PyTorch on the GPU machine.
#   bash scripts/device/measure.sh OUT_DIR
# The figures recorded in tests/data/device/ came from this script.
set -uo pipefail
out=${1:?usage: measure.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,memory.total --format=csv
nvcc --version | tail -2
bin=$(mktemp -d)/gemm_sweep
nvcc -O2 -arch=sm_90 -o "$bin" "$here/gemm_sweep.cu" -lcublasLt || exit 1
timeout 300 "$bin" > "$out/gemm.csv" 2> "$out/gemm.err"
echo "gemm_sweep exit $?: $(($(wc -l < "$out/gemm.csv") - 1)) products"
timeout 240 env PYTHONUNBUFFERED=1 python3 "$here/kernel_sweep.py" "$out"
echo "kernel_sweep exit $?"
timeout 240 env PYTHONUNBUFFERED=1 python3 "$here/memory_sweep.py" "$out"
echo "memory_sweep exit $?"
timeout 120 env PYTHONUNBUFFERED=1 python3 "$here/op_sweep.py" "$out"
echo "op_sweep exit $?"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
