"""fairseq-style token batches: length-sorted, filled up to max_tokens including padding."""
import numpy as np
import torch

from .data import PAD, EOS, ParallelData


def length_sorted_indices(src_lengths, tgt_lengths, rng):
    """Random tie-breaking, then stable sorts by target then source length (fairseq's order)."""
    idx = rng.permutation(len(src_lengths))
    idx = idx[np.argsort(tgt_lengths[idx], kind="mergesort")]
    return idx[np.argsort(src_lengths[idx], kind="mergesort")]


def pair_lengths(data):
    """Each pair's length as batches count it: max(source, target) tokens, </s> included."""
    return np.maximum(data.src_lengths.numpy(), data.tgt_lengths.numpy())


def too_long(data, limit):
    """Indices of the pairs longer than limit tokens (pair_lengths), in corpus order."""
    return np.flatnonzero(pair_lengths(data) > limit)


def make_batches(data: ParallelData, max_tokens, seed, max_positions=1024, alone_if_longer=False):
    """Batches of sentence indices; max_tokens bounds n_sentences * max(len) over src and tgt.

    A pair longer than max_positions never fits the model: it is left out (as fairseq 0.9 drops
    such pairs from training: fairseq/data/data_utils.py:160-194, called with trainer.py:277's
    ignore_invalid_inputs=True). A pair longer than max_tokens is left out too (fairseq 0.9 stops
    on one: data_utils_fast.pyx:50-53), unless alone_if_longer: then it is a batch of its own,
    after the others, so validation scores every pair the model can take. The callers count what
    is left out (too_long) and say so. Without such pairs, alone_if_longer changes nothing."""
    src_len, tgt_len = data.src_lengths.numpy(), data.tgt_lengths.numpy()
    order = length_sorted_indices(src_len, tgt_len, np.random.default_rng(seed))
    batches, current, longest, alone = [], [], 0, []
    for i in order:
        n = int(max(src_len[i], tgt_len[i]))
        if n > max_positions:
            continue
        if n > max_tokens:
            if alone_if_longer:
                alone.append([int(i)])
            continue
        if current and max(longest, n) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(int(i))
        longest = max(longest, n)
    if current:
        batches.append(current)
    return batches + alone


def epoch_order(batches, seed, epoch):
    """Batch order of an epoch: reshuffled every epoch, a function of (seed, epoch) only."""
    rng = np.random.default_rng([seed, epoch])
    return [batches[i] for i in rng.permutation(len(batches))]


def pad_right(seqs, prepend=None):
    """Stack 1-D int tensors into (B, T) padded with PAD; prepend a token to each if asked."""
    if prepend is not None:
        seqs = [torch.cat([torch.tensor([prepend], dtype=s.dtype), s]) for s in seqs]
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD, dtype=torch.long)
    for row, s in enumerate(seqs):
        out[row, : len(s)] = s
    return out


def collate(data: ParallelData, indices):
    """src (B,S); prev_tokens = </s> + target without its last token; target (B,T)."""
    src = pad_right([data.source(i) for i in indices])
    tgt_seqs = [data.target(i) for i in indices]
    target = pad_right(tgt_seqs)
    prev = pad_right([t[:-1] for t in tgt_seqs], prepend=EOS)
    return src, prev, target
