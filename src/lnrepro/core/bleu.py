"""BLEU through sacrebleu; every score carries its signature.

`tokenized_bleu` is the papers' BLEU for IWSLT14: BPE removed, scored on the tokenized (and,
for IWSLT, lowercased) text without further tokenization. `compound_split_bleu` is the WMT14
paper-comparable variant (compound splitting as in fairseq's compound_split_bleu.sh).
"""
import re

from sacrebleu.metrics import BLEU


def tokenized_bleu(hypotheses, references):
    """(score, signature) of corpus BLEU on already tokenized text."""
    metric = BLEU(tokenize="none", force=True)
    result = metric.corpus_score(hypotheses, [references])
    return result, str(metric.get_signature())


def split_compounds(line):
    """perl `s{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g`: non-overlapping, so `a-b-c` keeps its second hyphen."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


def compound_split_bleu(hypotheses, references):
    return tokenized_bleu([split_compounds(h) for h in hypotheses], [split_compounds(r) for r in references])


def detokenized_bleu(hypotheses, references):
    """sacreBLEU's standard score on detokenized text (13a tokenization)."""
    metric = BLEU()
    return metric.corpus_score(hypotheses, [references]), str(metric.get_signature())
