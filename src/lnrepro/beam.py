"""Batched beam search with cached keys/values (incremental decoding), fairseq's rules.

Hypothesis score = sum of log-probabilities / length**lenpen, length counting </s>;
max length = min(max_len_a * longest source + max_len_b, max_positions - 1), where </s> is
forced; a sentence is finished once `beam` hypotheses have ended. Beam 1 is greedy decoding.
"""
import torch

from .data import BOS, EOS, PAD


def reorder(cache, rows):
    """Keep the self-attention keys/values of the chosen beams. Encoder keys/values are equal
    across the beams of one sentence and beams never leave their sentence, so they stay."""
    for layer in cache:
        layer["self"]["k"] = layer["self"]["k"].index_select(0, rows)
        layer["self"]["v"] = layer["self"]["v"].index_select(0, rows)


@torch.no_grad()
def beam_search(model, src, beam=5, lenpen=1.0, max_len_a=0.0, max_len_b=200):
    """src (B, S) -> list of B best token lists (without </s>)."""
    B, k, device = src.size(0), beam, src.device
    memory, memory_mask = model.encoder(src)
    memory, memory_mask = memory.repeat_interleave(k, 0), memory_mask.repeat_interleave(k, 0)
    src_len = int((src != PAD).sum(1).max())
    max_len = min(int(max_len_a * src_len + max_len_b), model.cfg.max_positions - 1)

    tokens = torch.full((B * k, 1), EOS, dtype=torch.long, device=device)  # decoder starts with </s>
    scores = torch.zeros(B, k, device=device)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    cache = [{} for _ in model.decoder.layers]
    finished = [[] for _ in range(B)]  # (normalized score, tokens)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    base = (torch.arange(B, device=device) * k)[:, None]
    for step in range(max_len + 1):
        lprobs = model.decoder(tokens[:, -1:], memory, memory_mask, cache)[:, -1].float().log_softmax(-1)
        lprobs[:, [BOS, PAD]] = float("-inf")
        if step == max_len:  # only </s> is left
            eos_only = torch.full_like(lprobs, float("-inf"))
            eos_only[:, EOS] = lprobs[:, EOS]
            lprobs = eos_only
        V = lprobs.size(-1)
        cand = (scores.view(-1, 1) + lprobs).view(B, k * V)
        top_scores, top_idx = cand.topk(2 * k, dim=1)  # 2k so that k continue past any </s>
        top_beam, top_tok = top_idx // V, top_idx % V

        # hypotheses ending here: </s> among the k best candidates of unfinished sentences
        ends = (top_tok == EOS) & torch.isfinite(top_scores) & ~done[:, None]
        ends[:, k:] = False
        for b, j in ends.nonzero().tolist():
            if len(finished[b]) < k:
                hyp = tokens[b * k + top_beam[b, j], 1:].tolist()
                finished[b].append((top_scores[b, j].item() / (step + 1) ** lenpen, hyp))
        done |= torch.tensor([len(f) >= k for f in finished], device=device)
        if bool(done.all()):
            break

        # the k best candidates that do not end continue
        rank = torch.where(top_tok == EOS, 2 * k, 0) + torch.arange(2 * k, device=device)
        keep = rank.argsort(dim=1)[:, :k]
        scores = top_scores.gather(1, keep)
        rows = (base + top_beam.gather(1, keep)).view(-1)
        tokens = torch.cat([tokens[rows], top_tok.gather(1, keep).view(-1, 1)], dim=1)
        reorder(cache, rows)
    return [max(f)[1] for f in finished]
