"""The library every stage shares: data formats, models, the training loop, decoding, BLEU."""
