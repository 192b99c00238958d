#!/usr/bin/env bash
# Create .venv with the package, its pinned tools and PyTorch; idempotent and quick when done.
#   TORCH_SPEC, TORCH_INDEX_URL: the PyTorch to install (default torch==2.13.0, the CPU build); on a
#               CUDA machine the build matching your driver, e.g.
#               TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 bash workflow/scripts/setup.sh
#               A torch already installed that does not match is replaced (install_torch.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
bash workflow/scripts/install_torch.sh .venv
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
