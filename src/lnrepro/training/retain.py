"""`lnrepro retain`: delete a run's epoch checkpoints that no later step of the config reads (what
is needed and the deletion: lnrepro.retention), and write what was kept."""
import json
from pathlib import Path

from ..args import json_object
from ..retention import MANIFEST, prune


def add_arguments(p):
    p.add_argument("--metrics", required=True, help="the run's metrics.csv (its checkpoint column names its files)")
    p.add_argument("--needs", required=True, type=json_object(), help="JSON: what the run's consumers read (lnrepro.retention's docstring)")
    p.add_argument("--manifest", required=True, help=f"the JSON written: kept, deleted, bytes freed ({MANIFEST})")


def run(args):
    manifest = prune(args.metrics, json.loads(args.needs))
    Path(args.manifest).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{manifest['run']}: kept {len(manifest['kept'])} files ({manifest['bytes_kept'] / 1e6:,.1f} MB), "
          f"deleted {len(manifest['deleted'])} ({manifest['bytes_freed'] / 1e6:,.1f} MB)")
    return 0
