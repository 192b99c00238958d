import random
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lnrepro.core.data import Dictionary, save_split  # noqa: E402


def reversal_pairs(n, seed, vocab=30, min_len=3, max_len=10):
    """A learnable toy translation: the target is the source reversed."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    out = []
    for _ in range(n):
        s = [rng.choice(words) for _ in range(rng.randint(min_len, max_len))]
        out.append((" ".join(s), " ".join(reversed(s))))
    return out


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory):
    """Binarized reversal task: dict.txt, train.pt, valid.pt, test.pt (+ test reference text)."""
    d = tmp_path_factory.mktemp("toy_bin")
    splits = {"train": reversal_pairs(600, 1), "valid": reversal_pairs(40, 2), "test": reversal_pairs(40, 3)}
    vocab = Dictionary.build([s for a, b in splits["train"] for s in (a, b)])
    vocab.save(d / "dict.txt")
    for name, pairs in splits.items():
        save_split(d / f"{name}.pt", [vocab.encode(a) for a, _ in pairs], [vocab.encode(b) for _, b in pairs])
    (d / "test.ref").write_text("\n".join(b for _, b in splits["test"]) + "\n")
    return d


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one thread is fastest, and the machine is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
