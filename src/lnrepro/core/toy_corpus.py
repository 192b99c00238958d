"""A learnable toy translation, binarized: the target is the source reversed. The tests' corpus, and
`lnrepro gpu-check`'s where no prepared corpus is given (its CPU run in CI)."""
import random
from pathlib import Path

from .data import Dictionary, save_split


def reversal_pairs(n, seed, vocab=30, min_len=3, max_len=10):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    out = []
    for _ in range(n):
        s = [rng.choice(words) for _ in range(rng.randint(min_len, max_len))]
        out.append((" ".join(s), " ".join(reversed(s))))
    return out


def write_reversal_corpus(out_dir, sizes=(("train", 600, 1), ("valid", 40, 2), ("test", 40, 3))):
    """dict.txt and SPLIT.pt for each (split, pairs, seed), and test.ref: the test targets as text."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    splits = {name: reversal_pairs(n, seed) for name, n, seed in sizes}
    vocab = Dictionary.build([s for a, b in splits["train"] for s in (a, b)])
    vocab.save(d / "dict.txt")
    for name, pairs in splits.items():
        save_split(d / f"{name}.pt", [vocab.encode(a) for a, _ in pairs], [vocab.encode(b) for _, b in pairs])
    (d / "test.ref").write_text("\n".join(b for _, b in splits["test"]) + "\n")
    return d
