"""Batched beam search with cached keys/values (incremental decoding), fairseq's rules.

Hypothesis score = sum of log-probabilities / length**lenpen, length counting </s>;
max length = min(max_len_a * longest source + max_len_b, max_positions - 1), where </s> is
forced; a sentence is finished once `beam` hypotheses have ended. Beam 1 is greedy decoding.
</s> is forbidden before min_len real tokens, as fairseq 0.9's `elif step < self.min_len:
lprobs[:, self.eos] = -math.inf` (sequence_generator.py:334-336; fairseq-generate's --min-len
defaults to 1, options.py:462), so no empty hypothesis wins or fills a finished slot. Where
min_len exceeds the max length, the forced </s> wins (our reading: fairseq would leave no token).
A finished sentence leaves the batch (as fairseq's batch reduction), so the remaining steps
decode only the sentences still open.
"""
import torch

from .data import BOS, EOS, PAD


def select_rows(cache, rows, side):
    """Keep rows `rows` of every layer's cached keys/values on one side ("self" or "cross")."""
    for layer in cache:
        layer[side]["k"] = layer[side]["k"].index_select(0, rows)
        layer[side]["v"] = layer[side]["v"].index_select(0, rows)


@torch.no_grad()
def beam_search(model, src, beam=5, lenpen=1.0, max_len_a=0.0, max_len_b=200, min_len=1):
    """src (B, S) -> list of B best token lists (without </s>), each at least min_len tokens long
    unless max length is shorter."""
    B, k, device = src.size(0), beam, src.device
    memory, memory_mask = model.encoder(src)
    memory, memory_mask = memory.repeat_interleave(k, 0), memory_mask.repeat_interleave(k, 0)
    src_len = int((src != PAD).sum(1).max())
    max_len = min(int(max_len_a * src_len + max_len_b), model.cfg.max_positions - 1)

    tokens = torch.full((B * k, 1), EOS, dtype=torch.long, device=device)  # decoder starts with </s>
    scores = torch.zeros(B, k, device=device)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    cache = [{} for _ in model.decoder.layers]
    finished = [[] for _ in range(B)]  # per input sentence: (normalized score, tokens)
    open_ids = list(range(B))  # the input sentence of each row group still in the batch
    beams = torch.arange(k, device=device)
    for step in range(max_len + 1):
        lprobs = model.decoder(tokens[:, -1:], memory, memory_mask, cache)[:, -1].float().log_softmax(-1)
        lprobs[:, [BOS, PAD]] = float("-inf")
        if step == max_len:  # only </s> is left
            eos_only = torch.full_like(lprobs, float("-inf"))
            eos_only[:, EOS] = lprobs[:, EOS]
            lprobs = eos_only
        elif step < min_len:  # step = real tokens before this one, as fairseq's (its hypothesis ends at step + 1)
            lprobs[:, EOS] = float("-inf")
        n, V = len(open_ids), lprobs.size(-1)
        cand = (scores.view(-1, 1) + lprobs).view(n, k * V)
        top_scores, top_idx = cand.topk(2 * k, dim=1)  # 2k so that k continue past any </s>
        top_beam, top_tok = top_idx // V, top_idx % V

        # hypotheses ending here: </s> among the k best candidates
        ends = (top_tok[:, :k] == EOS) & torch.isfinite(top_scores[:, :k])
        for b, j in ends.nonzero().tolist():
            hyps = finished[open_ids[b]]
            if len(hyps) < k:
                hyps.append((top_scores[b, j].item() / (step + 1) ** lenpen,
                             tokens[b * k + top_beam[b, j], 1:].tolist()))
        still_open = [b for b, i in enumerate(open_ids) if len(finished[i]) < k]
        if not still_open:
            break

        # the k best candidates that do not end continue, for the sentences still open
        rank = torch.where(top_tok == EOS, 2 * k, 0) + torch.arange(2 * k, device=device)
        keep = rank.argsort(dim=1)[:, :k]
        live = torch.tensor(still_open, device=device)
        scores = top_scores.gather(1, keep)[live]
        rows = (live[:, None] * k + top_beam.gather(1, keep)[live]).view(-1)
        tokens = torch.cat([tokens[rows], top_tok.gather(1, keep)[live].view(-1, 1)], dim=1)
        select_rows(cache, rows, "self")
        if len(still_open) < n:  # encoder states are equal across a sentence's beams: keep its rows
            sentence_rows = (live[:, None] * k + beams).view(-1)
            memory, memory_mask = memory[sentence_rows], memory_mask[sentence_rows]
            select_rows(cache, sentence_rows, "cross")
            open_ids = [open_ids[b] for b in still_open]
    return [max(f)[1] for f in finished]
