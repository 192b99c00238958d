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
echo "setup: $(.venv/bin/python -c 'import torch, snakemake; print("torch", torch.__version__, "| snakemake", snakemake.__version__)')"
