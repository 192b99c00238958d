"""The generated corpora: determinism, surface features, noise vs. Moses cleaning, task formats."""
import argparse
import csv
import re

import pytest
from sacremoses import MosesTokenizer

from lnrepro.prepare import demo_grammar, generate


@pytest.fixture(scope="module")
def deen():
    return demo_grammar.generate_translation("deen", 3000, seed=1, with_noise_flags=True)


@pytest.fixture(scope="module")
def ende():
    return demo_grammar.generate_translation("ende", 3000, seed=1, with_noise_flags=True)


def moses_keep(items):
    """The pipeline's cleaning rule: 1..175 Moses tokens per side and length ratio <= 1.5."""
    tok = {lang: MosesTokenizer(lang) for lang in ("de", "en")}
    keep = []
    for de, en, *_ in items:
        a = len(tok["de"].tokenize(de, escape=False))
        b = len(tok["en"].tokenize(en, escape=False))
        keep.append(1 <= a <= 175 and 1 <= b <= 175 and max(a, b) <= 1.5 * min(a, b))
    return keep


def test_same_seed_same_files_and_other_seed_differs(tmp_path):
    a = generate.write_task("deen", tmp_path / "a", seed=5, n_train=300, n_test=50)
    b = generate.write_task("deen", tmp_path / "b", seed=5, n_train=300, n_test=50)
    c = generate.write_task("deen", tmp_path / "c", seed=6, n_train=300, n_test=50)
    assert [p.rsplit("/", 1)[1] for p in a] == ["train.de", "train.en", "test.de", "test.en"]
    for pa, pb, pc in zip(a, b, c):
        data = open(pa, "rb").read()
        assert data == open(pb, "rb").read()
        assert data != open(pc, "rb").read()
    lines = open(a[0], encoding="utf-8").read().split("\n")
    assert len(lines) == 301 and lines[-1] == ""  # one item per line, '\n' terminated


def test_translation_surface_features(deen):
    pairs = [(de, en) for de, en, noisy in deen if not noisy]
    de_text, en_text = "\n".join(p[0] for p in pairs), "\n".join(p[1] for p in pairs)
    assert re.search("[äöüÄÖÜ]", de_text) and "ß" in de_text
    assert re.search(r"„[^“\n]+“", de_text) and re.search(r'"[^"\n]+"', en_text)
    assert re.search(r"\w's\b", en_text) and "n't" in en_text
    assert "E-Mail" in de_text and re.search(r"\d+-jährig", de_text) and re.search(r"\d+-year-old", en_text)
    # decimal comma and thousands point in German mirror point / comma in English
    money = [(de, en) for de, en in pairs if re.search(r"für \d+,\d\d Euro", de)]
    assert money and all(re.search(r"for \d+\.\d\d euros", en) for _, en in money)
    assert any(re.search(r"\d\.\d{3} ", de) and re.search(r"\d,\d{3} ", en) for de, en in pairs)
    # a productive compound is one German word but two English words
    assert any("Stadtbibliothek" in de and "city library" in en for de, en in pairs) or \
        any(re.search(r"\b(Haus|Stadt|Garten|Küchen)(tür|tisch|uhr|fenster)\b", de, re.I) and
            re.search(r"\b(house|city|garden|kitchen) (door|table|clock|window)\b", en) for de, en in pairs)
    # verb-final subordinate clause with the perfect: '..., weil die Frau den Brief geschrieben hat.'
    assert any(re.search(r", weil .+ ge\w+ (hat|ist)\.$", de) and " because " in en for de, en in pairs)
    # V2: a fronted adverb is followed by the verb, then the subject
    assert any(re.match(r"(Heute|Morgen) \w+ (der|die|das|ein|eine) ", de) for de, _ in pairs)
    assert any(re.search(r"\bruft\b.* an\.$", de) and " calls " in en for de, en in pairs)  # separable verb
    for punct in ".,?!:;":
        assert punct in de_text and punct in en_text


def test_noise_only_in_train_and_removed_by_cleaning(deen, ende):
    for items in (deen, ende):
        flags = [noisy for *_, noisy in items]
        assert 0.003 <= sum(flags) / len(items) <= 0.025
        keep = moses_keep(items)
        assert not any(k for k, noisy in zip(keep, flags) if noisy)
        clean_keep = [k for k, noisy in zip(keep, flags) if not noisy]
        assert sum(clean_keep) / len(clean_keep) >= 0.97
    test = demo_grammar.generate_translation("deen", 300, seed=1, split="test", with_noise_flags=True)
    assert not any(noisy for *_, noisy in test) and all(moses_keep(test))


def test_train_and_test_do_not_overlap(deen):
    test = demo_grammar.generate_translation("deen", 1000, seed=1, split="test")
    assert not {en for _, en, _ in deen} & {en for _, en in test}
    assert len({en for _, en in test}) > 900  # a different stream, not one sentence repeated


def test_ende_is_larger_and_longer_than_deen(deen, ende):
    def stats(items, side):
        toks = [t for row in items if not row[2] for t in row[side].split()]
        return len(set(toks)), len(toks) / sum(not row[2] for row in items)

    for side in (0, 1):
        (v_small, len_small), (v_large, len_large) = stats(deen, side), stats(ende, side)
        assert v_large > 1.4 * v_small
        assert len_large > len_small + 3
    assert 9 <= stats(deen, 1)[1] <= 13  # ~12 tokens with punctuation


def test_glue_files(tmp_path):
    for task, header, labels in (("mrpc", ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"], {"0", "1"}),
                                 ("rte", ["index", "sentence1", "sentence2", "label"], {"entailment", "not_entailment"})):
        paths = generate.write_task(task, tmp_path / task, seed=2, n_train=300, n_test=40)
        assert [p.rsplit("/", 1)[1] for p in paths] == ["train.tsv", "dev.tsv"]
        for path, n in zip(paths, (300, 40)):
            with open(path, encoding="utf-8") as f:
                rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
            assert rows[0] == header and len(rows) == n + 1
            assert all(len(r) == len(header) for r in rows)
        col, s1, s2 = (0, 3, 4) if task == "mrpc" else (3, 1, 2)
        with open(paths[0], encoding="utf-8") as f:
            train = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        got = [r[col] for r in train]
        assert set(got) == labels
        share = got.count("1" if task == "mrpc" else "entailment") / len(got)
        assert (0.55 <= share <= 0.78) if task == "mrpc" else (0.35 <= share <= 0.65)
        if task == "mrpc":
            assert all(r[1].isdigit() and r[2].isdigit() for r in train)
        assert all(r[s1] != r[s2] and r[s1] and r[s2] for r in train)


def test_mono_documents_and_cli(tmp_path):
    parser = argparse.ArgumentParser()
    generate.add_arguments(parser)
    args = parser.parse_args(["--task", "mono", "--seed", "3", "--out-dir", str(tmp_path), "--n-train", "20", "--n-test", "4"])
    generate.run(args)
    text = (tmp_path / "train.txt").read_text(encoding="utf-8")
    docs = text.rstrip("\n").split("\n\n")
    assert len(docs) == 20 and not text.startswith("\n") and "\n\n\n" not in text
    assert all(3 <= len(d.split("\n")) <= 12 for d in docs)
    assert len((tmp_path / "valid.txt").read_text(encoding="utf-8").rstrip("\n").split("\n\n")) == 4
    assert demo_grammar.generate_documents(5, 3) == demo_grammar.generate_documents(5, 3) != demo_grammar.generate_documents(5, 4)
