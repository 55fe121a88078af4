#!/bin/bash
# Example batch script: an 8-GPU-per-node training run profiled by ncclscope, with
# its own collector on the batch host. Submit: sbatch containers/slurm/sbatch-example.sh
#SBATCH --job-name=allreduce-demo
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --time=01:00:00
set -euo pipefail
# A built ncclscope checkout on a filesystem every node sees.
. "${NCCLSCOPE_HOME:-/opt/ncclscope}/containers/slurm/ncclscope-slurm.sh"

trap ncclscope_stop EXIT
ncclscope_start
srun --ntasks-per-node=8 python train.py
