#!/usr/bin/env bash
# Install the requested PyTorch into a virtual environment, replacing one that does not match;
# setup.sh calls it before installing the package (whose torch>=2.3 the build then satisfies).
#   install_torch.sh VENV
#   TORCH_SPEC: the requirement, then any pip options, split into pip's arguments
#               (default torch==2.13.0), e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
#   TORCH_INDEX_URL: the index to install it from (pip --index-url), e.g. https://download.pytorch.org/whl/cu128
# An installed torch is kept when it imports, its version satisfies the requirement and, where pip
# options choose the build (an index, a wheel folder), setup last installed it with the same ones:
# a CPU build's version 2.13.0+cpu satisfies torch==2.13.0 too, so only that record tells it from
# the CUDA build the options ask for.
set -euo pipefail
venv=$1
read -r -a torch_args <<< "${TORCH_SPEC:-torch==2.13.0}"  # "torch==X --index-url URL": three pip arguments
if [ -n "${TORCH_INDEX_URL:-}" ]; then
    torch_args+=(--index-url "$TORCH_INDEX_URL")
fi
requested="${torch_args[*]}"
record="$venv/lnrepro-torch-request"  # the arguments setup last installed torch with
matches() {
    "$venv/bin/python" - "${torch_args[0]}" "$requested" "$record" <<'PY'
import sys
from importlib.metadata import version
from pathlib import Path

from pip._vendor.packaging.requirements import Requirement  # pip is in every venv; packaging may not be

requirement, requested, record = Requirement(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
try:
    import torch  # noqa: F401  an installed torch that does not import is replaced
    installed = version(requirement.name)
except ModuleNotFoundError:
    sys.exit(f"setup: installing {requested}")
except Exception as e:
    sys.exit(f"setup: torch does not import ({type(e).__name__}: {e}); replacing it with {requested}")
if not requirement.specifier.contains(installed, prereleases=True):
    sys.exit(f"setup: torch {installed} does not satisfy {requirement}; replacing it with {requested}")
chosen_build = requested != str(sys.argv[1])
if chosen_build and (not record.exists() or record.read_text().strip() != requested):
    sys.exit(f"setup: torch {installed} was not installed with '{requested}'; replacing it")
PY
}
if ! matches; then
    "$venv/bin/pip" uninstall --quiet --yes torch 2>/dev/null || true  # pip keeps an equal version of another build
    "$venv/bin/pip" install --quiet "${torch_args[@]}"
    echo "$requested" > "$record"
fi
