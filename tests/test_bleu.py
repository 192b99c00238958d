import pytest
import sacrebleu

from lnrepro.core.bleu import compound_split_bleu, split_compounds, tokenized_bleu


def test_bleu_of_a_known_pair():
    # p1..p4 = 5/6, 4/5, 3/4, 2/3, no brevity penalty: BLEU = (1/3) ** (1/4)
    score, signature = tokenized_bleu(["a b c d e f"], ["a b c d e g"])
    assert score.score == pytest.approx(100 * (1 / 3) ** 0.25, abs=1e-6)
    assert "tok:none" in signature and "version:" in signature


def test_identical_corpus_scores_100_and_empty_hypotheses_0():
    refs = ["das ist ein test .", "noch ein satz hier !"]
    assert tokenized_bleu(refs, refs)[0].score == pytest.approx(100)
    assert tokenized_bleu(["", ""], refs)[0].score == 0


def test_tokenized_bleu_does_not_retokenize():
    # sacrebleu's 13a would split "don't" differently; tokenize=none compares tokens as given
    hyp = ref = ["don &apos;t stop me now"]
    assert tokenized_bleu(hyp, ref)[0].score == pytest.approx(100)
    assert sacrebleu.corpus_bleu(["a-b"], [["a - b"]], tokenize="none").score < 100


def test_compound_split_is_non_overlapping_like_perl():
    assert split_compounds("a-b-c x - y") == "a ##AT##-##AT## b-c x - y"
    assert split_compounds("well-known") == "well ##AT##-##AT## known"


def test_compound_split_bleu_rewards_matching_compounds():
    plain, _ = tokenized_bleu(["ein well-known haus ."], ["ein well-known haus ."])
    split, _ = compound_split_bleu(["ein well-bekannt haus ."], ["ein well-known haus ."])
    assert plain.score == pytest.approx(100)
    assert 0 < split.score < 100  # the split parts count as separate tokens
