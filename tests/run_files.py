"""The files a test laid out under a folder, handed to an analysis as it is run: by run (the
commands take each file given, lnrepro.args.RunFiles; none looks under a folder). The layout is the
tests' own: ROOT/train/RUN/metrics.csv (ROOT/pretrain/RUN/ for a BERT run), ROOT/eval/RUN/bleu.csv,
ROOT/eval/RUN/bleu_avgN.csv for a run averaged over N checkpoints."""
from pathlib import Path

from lnrepro.args import RunFiles


def metrics_pairs(root):
    """[(run, path)] of every metrics.csv under root/train and root/pretrain (pretrain last: it wins)."""
    root = Path(root)
    return [(p.parent.name, str(p)) for stage in ("train", "pretrain") for p in sorted(root.glob(f"{stage}/*/metrics.csv"))]


def bleu_pairs(root, average_last=None):
    """[(run, path)] of every run's BLEU table under root/eval: its bleu_avgN.csv where average_last gives it N."""
    average_last = average_last or {}
    pairs = []
    for folder in sorted(Path(root).glob("eval/*")):
        n = average_last.get(folder.name, 0)
        path = folder / (f"bleu_avg{n}.csv" if n else "bleu.csv")
        if path.exists():
            pairs.append((folder.name, str(path)))
    return pairs


def laid_out(root, command="test", average_last=None):
    """RunFiles of every run's metrics and BLEU under root."""
    return RunFiles(command, metrics=dict(metrics_pairs(root)), bleu=bleu_pairs(root, average_last))


def pair_args(flag, pairs):
    """`--flag RUN=PATH ...` as argv, for a command run by main()."""
    return [f"--{flag}", *(f"{run}={path}" for run, path in pairs)] if pairs else []
