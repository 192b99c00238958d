import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lnrepro.core.toy_corpus import reversal_pairs, write_reversal_corpus  # noqa: E402,F401 (tests import reversal_pairs)


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory):
    """Binarized reversal task: dict.txt, train.pt, valid.pt, test.pt (+ test reference text)."""
    return write_reversal_corpus(tmp_path_factory.mktemp("toy_bin"))


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one thread is fastest, and the machine is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
