#!/usr/bin/env bash
# Create .venv with the package, its pinned tools and PyTorch; idempotent and quick when done.
#   TORCH_SPEC: the PyTorch to install (default torch==2.13.0; on a CUDA machine pick the build
#               matching your driver, e.g. TORCH_SPEC="torch==2.13.0" from the CUDA index).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    .venv/bin/pip install --quiet "$TORCH_SPEC"
fi
.venv/bin/pip install --quiet -e ".[test]"
# `snakemake --profile slurm` looks in ./slurm, ~/.config/snakemake/slurm, /etc/xdg/snakemake/slurm:
# give it a copy of profiles/slurm to adapt (partition, account), never overwriting one that exists.
user_profile="${XDG_CONFIG_HOME:-$HOME/.config}/snakemake/slurm"
if [ ! -e "$user_profile" ]; then
    mkdir -p "$(dirname "$user_profile")" && cp -r profiles/slurm "$user_profile"
    echo "setup: installed the SLURM profile in $user_profile (adapt partition and account there)"
elif ! diff -rq profiles/slurm "$user_profile" >/dev/null; then
    echo "setup: $user_profile differs from profiles/slurm (kept; --profile profiles/slurm uses this repo's)"
fi
echo "setup: $(.venv/bin/python -c 'import torch, snakemake; print("torch", torch.__version__, "| snakemake", snakemake.__version__)')"
