#!/bin/sh
# A Slurm batch job that runs a whole campaign with srun steps (one job, many mpiruns).
# `mpitempo run CAMPAIGN --sbatch -o DIR` writes and submits an equivalent script for you.
#SBATCH --job-name=mpitempo
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --time=01:00:00
#SBATCH --exclusive
set -e
. "$HOME/mpitempo/.venv/bin/activate"          # where `make demo` created the environment
mpitempo run "$HOME/mpitempo/examples/demo.toml" --launcher srun --np 2 --mpiruns 10 \
    -o "$SLURM_SUBMIT_DIR/campaign-$SLURM_JOB_ID"
