#!/bin/sh
# All-reduce of f32 buffers from 1 KiB to 64 MiB over N ranks of this machine (default 4):
# Kiln's MPI transport and a compiled all-reduce module on a plugin, against a raw
# MPI_Allreduce on the same buffers in the same run. Prints per size the time per call and
# Kiln's throughput as a percentage of the raw call's (goal: >= 90%).
# usage: benchmarks/allreduce.sh [RANKS] [--device cpu-llvm] [--max-mb 64]
set -e
cd "$(dirname "$0")/.."
ranks=${1:-4}
[ $# -gt 0 ] && shift
# Root may run mpirun (CI's containers); more ranks than cores share them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun -np "$ranks" build/core/bench_allreduce "$@"
