"""A rule's --spec: its JSON on the command line, or by file where it is long.

The spec is one argument of the command, and Linux caps one argument at 128 KiB (MAX_ARG_STRLEN):
a config with more claims or runs than the papers' failed its job with "lnrepro: Argument list too
long" (the demo's claims spec is ~70 KB, the paper config's ~58 KB). A spec
over INLINE_MAX is written to SPEC_DIR/<sha256>.json and passed as @FILE, which every command's
--spec reads (lnrepro.args.json_object). Named by its content, a changed spec is a changed
parameter (Snakemake reruns the job), two runs needing the same spec write the same bytes, and a
file edited since is noticed and written again.
"""
import hashlib
import json
import os
import tempfile
from pathlib import Path

INLINE_MAX = 32 * 1024  # bytes: a quarter of the limit, well inside the whole command line's too
SPEC_DIR = Path(".snakemake") / "lnrepro" / "specs"  # under the work folder, as Snakemake's own state


def spec_argument(value, spec_dir=SPEC_DIR):
    """--spec's value for `value` (JSON-able): the JSON text, keys sorted (reordering the config
    reruns nothing), or @PATH of the file holding it where it is longer than INLINE_MAX."""
    text = json.dumps(value, sort_keys=True)
    data = text.encode()
    if len(data) <= INLINE_MAX:
        return text
    path = Path(spec_dir) / f"{hashlib.sha256(data).hexdigest()}.json"
    if not path.is_file() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:12]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # a reader never sees half a spec
    return f"@{path}"
