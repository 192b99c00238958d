"""Binarized BERT data: the pre-training corpus (MonoData) and GLUE sentence pairs (PairData).

Both are ``torch.save``d dicts of plain tensors, loadable with ``weights_only=True``; token ids
come from the pre-training corpus's dictionary (lnrepro.core.data.Dictionary's format, with <mask>
as its last symbol) and no </s> is appended: the BERT code adds its own [CLS]/[SEP] framing.

- MonoData: ``tokens`` int32, every sentence's ids one after another; ``sentence_offsets``
  int64 (n_sentences+1): sentence i is tokens[sentence_offsets[i]:sentence_offsets[i+1]];
  ``doc_offsets`` int64 (n_docs+1), in sentence units: document d is sentences
  doc_offsets[d] .. doc_offsets[d+1]-1 (next-sentence pairs never cross a document).
- PairData: ``s1``/``s2`` int32 flat with ``s1_offsets``/``s2_offsets`` int64 (n+1), and
  ``labels`` int64 (n) (MRPC 1 = paraphrase, RTE 1 = entailment).
"""
from array import array
from dataclasses import dataclass, fields

import numpy as np
import torch

MASK = "<mask>"


class FlatBuilder:
    """Sequences of ids appended one by one into a flat int32 buffer plus int64 offsets.

    Python's array grows in place at 4 bytes a token (a list of ints would take ~9x that), and
    the tensors share its memory: a corpus of billions of tokens is held once.
    """

    def __init__(self):
        self.ids = array("i")
        self.offsets = array("q", [0])

    def __len__(self):
        return len(self.offsets) - 1

    def append(self, ids):
        self.ids.extend(ids)
        self.offsets.append(len(self.ids))

    def tensors(self):
        return (torch.from_numpy(np.frombuffer(self.ids, dtype=np.int32)),
                torch.from_numpy(np.frombuffer(self.offsets, dtype=np.int64)))


def _piece(flat, offsets, i):
    return flat[offsets[i]:offsets[i + 1]]


class TensorFile:
    """A dataclass of tensors stored as the torch.save'd dict of its fields (weights_only loadable)."""

    @classmethod
    def load(cls, path):
        return cls(**torch.load(path, weights_only=True))

    def save(self, path):
        torch.save({f.name: getattr(self, f.name) for f in fields(self)}, path)


@dataclass
class MonoData(TensorFile):
    """A binarized split of the pre-training corpus (documents of sentences)."""
    tokens: torch.Tensor
    sentence_offsets: torch.Tensor
    doc_offsets: torch.Tensor

    @property
    def n_docs(self):
        return len(self.doc_offsets) - 1

    @property
    def n_sentences(self):
        return len(self.sentence_offsets) - 1

    def sentence(self, i):
        return _piece(self.tokens, self.sentence_offsets, i)

    def doc_sentences(self, d):
        """The token tensors of document d's sentences, in order."""
        return [self.sentence(i) for i in range(int(self.doc_offsets[d]), int(self.doc_offsets[d + 1]))]


@dataclass
class PairData(TensorFile):
    """A binarized GLUE split: pair i is (s1 i, s2 i) with labels[i]."""
    s1: torch.Tensor
    s1_offsets: torch.Tensor
    s2: torch.Tensor
    s2_offsets: torch.Tensor
    labels: torch.Tensor

    def __len__(self):
        return len(self.labels)

    def pair(self, i):
        """(sentence1 ids, sentence2 ids, label) of pair i."""
        return _piece(self.s1, self.s1_offsets, i), _piece(self.s2, self.s2_offsets, i), int(self.labels[i])
