"""Data preparation: Moses tokenization/cleaning, split, BPE, binarization (prepare-iwslt14.sh)."""
import random

import pytest
import torch

from lnrepro.cli import main
from lnrepro.core import data
from lnrepro.prepare import read_parallel
from lnrepro.prepare.binarize import binarize
from lnrepro.prepare.bpe_apply import apply_bpe_file
from lnrepro.prepare.bpe_learn import learn_joint_bpe
from lnrepro.prepare.clean import clean_corpus
from lnrepro.prepare.split_valid import split_valid
from lnrepro.prepare.tokenize import tokenize_file

GERMAN = "Er sagte: „Die E-Mail kostet 3,5 Mio. bzw. 1.000 Euro für Müller.“"


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def no_tmp_files(directory):
    return not list(directory.glob("*.tmp"))


def test_tokenize_english_moses_escaping(tmp_path):
    src = write(tmp_path / "in.en", ['Don\'t "quote" me & co.', "", "a|b <i> [x]"])
    main(["tokenize", "--lang", "en", "--input", str(src), "--output", str(tmp_path / "out.en")])
    # tokenizer.perl -l en: n't is not split Penn-style; ', ", &, |, <, >, [, ] escaped
    assert read(tmp_path / "out.en") == [
        "Don &apos;t &quot; quote &quot; me &amp; co .",
        "",
        "a &#124; b &lt; i &gt; &#91; x &#93;",
    ]
    assert no_tmp_files(tmp_path)


def test_tokenize_german_quotes_numbers_hyphens(tmp_path):
    src = write(tmp_path / "in.de", [GERMAN, "Das ist's."])
    tokenize_file(src, tmp_path / "plain", "de")
    tokenize_file(src, tmp_path / "dash", "de", aggressive_dash=True)
    tokenize_file(src, tmp_path / "raw", "de", escape=False)
    # „ “ split off, decimal comma and thousands point kept, "Mio." a non-breaking prefix
    assert read(tmp_path / "plain") == [
        "Er sagte : „ Die E-Mail kostet 3,5 Mio. bzw. 1.000 Euro für Müller . “",
        # non-English: apostrophe split on both sides; the final "." stays attached
        # because the single letter "s" is a German non-breaking prefix (tokenizer.perl too)
        "Das ist &apos; s.",
    ]
    assert read(tmp_path / "dash")[0] == (
        "Er sagte : „ Die E @-@ Mail kostet 3,5 Mio. bzw. 1.000 Euro für Müller . “")
    assert read(tmp_path / "raw")[1] == "Das ist ' s."


def test_tokenize_parallel_equals_serial_and_keeps_lines(tmp_path):
    rng = random.Random(0)
    words = ["Haus", "E-Mail", "„Ja“", "3,5", "don't", "&", "Müller.", "(x)", "  "]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(500)]
    lines[7] = "   "  # blank lines pass through unchanged, as in tokenizer.perl
    src = write(tmp_path / "in.de", lines)
    tokenize_file(src, tmp_path / "t1", "de", threads=1)
    n = tokenize_file(src, tmp_path / "t2", "de", threads=2)
    assert n == 500
    assert read(tmp_path / "t1") == read(tmp_path / "t2")
    assert len(read(tmp_path / "t2")) == 500 and read(tmp_path / "t2")[7] == "   "


def test_clean_corpus_n_semantics(tmp_path, capsys):
    pairs = [
        ("a  b\tc ", "x y"),            # 3/2 = 1.5: kept, whitespace normalised
        ("a b c d", "x y"),             # ratio 2 > 1.5: dropped
        ("x y", "a b c d"),             # ratio 2 the other way: dropped
        ("", "x"),                      # empty side: dropped
        ("w " * 176, "w " * 176),       # 176 words > 175: dropped
        ("w " * 175, "w " * 175),       # 175 words: kept
        ("a|b  |c", " d e "),           # '|' removed -> "ab c" / "d e": kept
        ("ok", "ok"),
    ]
    src = write(tmp_path / "c.de", [s for s, _ in pairs])
    tgt = write(tmp_path / "c.en", [t for _, t in pairs])
    main(["clean", "--src-in", str(src), "--tgt-in", str(tgt),
          "--src-out", str(tmp_path / "o.de"), "--tgt-out", str(tmp_path / "o.en"),
          "--min", "1", "--max", "175", "--ratio", "1.5"])
    assert read(tmp_path / "o.de") == ["a b c", " ".join(["w"] * 175), "ab c", "ok"]
    assert read(tmp_path / "o.en") == ["x y", " ".join(["w"] * 175), "d e", "ok"]
    assert "kept 4 of 8" in capsys.readouterr().err
    assert clean_corpus(src, tgt, tmp_path / "p.de", tmp_path / "p.en", ratio=2) == (8, 6)


def test_clean_rejects_mismatched_line_counts(tmp_path):
    src = write(tmp_path / "a.de", ["a", "b", "c"])
    tgt = write(tmp_path / "a.en", ["a", "b"])
    with pytest.raises(ValueError, match="3.*2"):
        clean_corpus(src, tgt, tmp_path / "o.de", tmp_path / "o.en")
    # no partial output, final or temporary
    assert not (tmp_path / "o.de").exists() and no_tmp_files(tmp_path)


def test_lowercase(tmp_path):
    src = write(tmp_path / "in", ["Über ÄRGER &amp; Co", ""])
    main(["lowercase", "--input", str(src), "--output", str(tmp_path / "out")])
    assert read(tmp_path / "out") == ["über ärger &amp; co", ""]
    main(["lowercase", "--keep-case", "--input", str(src), "--output", str(tmp_path / "same")])
    assert read(tmp_path / "same") == read(src)


def test_split_valid_every_23rd_line(tmp_path):
    de = write(tmp_path / "all.de", [f"de{i}" for i in range(1, 51)])
    en = write(tmp_path / "all.en", [f"en{i}" for i in range(1, 51)])
    out = {k: tmp_path / k for k in ["t.de", "t.en", "v.de", "v.en"]}
    main(["split-valid", "--every", "23", "--inputs", str(de), str(en),
          "--train-outputs", str(out["t.de"]), str(out["t.en"]),
          "--valid-outputs", str(out["v.de"]), str(out["v.en"])])
    assert read(out["v.de"]) == ["de23", "de46"] and read(out["v.en"]) == ["en23", "en46"]
    assert len(read(out["t.de"])) == 48 and "de23" not in read(out["t.de"])
    assert read(out["t.en"])[22] == "en24"
    write(tmp_path / "short.en", ["x"])
    with pytest.raises(ValueError, match="line counts"):
        split_valid([de, tmp_path / "short.en"], [tmp_path / "a", tmp_path / "b"],
                    [tmp_path / "c", tmp_path / "d"])


@pytest.fixture
def bpe_corpus(tmp_path):
    rng = random.Random(1)
    common = ["the", "house", "is", "small", "das", "haus", "ist", "klein"]
    lines = [" ".join(rng.choice(common) for _ in range(6)) for _ in range(300)]
    de = write(tmp_path / "train.de", lines[:150] + ["donaudampfschifffahrt"])
    en = write(tmp_path / "train.en", lines[150:])
    return tmp_path, de, en


def test_bpe_learn_apply_round_trip(bpe_corpus):
    tmp_path, de, en = bpe_corpus
    codes = tmp_path / "codes"
    main(["bpe-learn", "--inputs", str(de), str(en), "--merges", "20", "--codes", str(codes)])
    header, *merges = read(codes)
    assert header == "#version: 0.2" and len(merges) == 20
    # the same codes as learn_bpe on the concatenation, i.e. `cat de en | learn-bpe`
    cat = write(tmp_path / "cat", read(de) + read(en))
    learn_joint_bpe([cat], tmp_path / "codes_cat", merges=20)
    assert read(tmp_path / "codes_cat") == read(codes)

    test = write(tmp_path / "test.de", ["das haus ist", "donaudampfschifffahrt", ""])
    main(["bpe-apply", "--codes", str(codes), "--input", str(test),
          "--output", str(tmp_path / "bpe1"), "--threads", "1"])
    apply_bpe_file(codes, test, tmp_path / "bpe2", threads=2)
    out = read(tmp_path / "bpe1")
    assert out == read(tmp_path / "bpe2")
    assert out[0] == "das haus ist"  # frequent words are whole
    assert "@@ " in out[1]  # a rare compound is split
    assert [(line + " ").replace("@@ ", "").strip() for line in out] == read(test)
    assert no_tmp_files(tmp_path)


def test_binarize_joint_dictionary_and_splits(tmp_path, capsys):
    write(tmp_path / "train.de", ["a b c", "a b"])
    write(tmp_path / "train.en", ["x a", "x"])
    write(tmp_path / "test.de", ["a zzz"])
    write(tmp_path / "test.en", ["qqq x"])
    main(["binarize", "--src-lang", "de", "--tgt-lang", "en",
          "--train-prefix", str(tmp_path / "train"), "--splits", "train", "test",
          "--prefixes", str(tmp_path / "train"), str(tmp_path / "test"),
          "--out-dir", str(tmp_path / "bin")])
    # counts over source and target together; specials are implicit, not in the file
    assert read(tmp_path / "bin" / "dict.txt") == ["a 3", "b 2", "x 2", "c 1"]
    vocab = data.Dictionary.load(tmp_path / "bin" / "dict.txt")
    assert vocab.symbols[4:] == ["a", "b", "x", "c"]
    torch.load(tmp_path / "bin" / "train.pt", weights_only=True)
    train = data.ParallelData.load(tmp_path / "bin" / "train.pt")
    assert len(train) == 2
    assert train.source(0).tolist() == [4, 5, 7, 2] and train.target(1).tolist() == [6, 2]
    test = data.ParallelData.load(tmp_path / "bin" / "test.pt")
    assert test.source(0).tolist() == [4, data.UNK, data.EOS]
    assert test.target(0).tolist() == [data.UNK, 6, data.EOS]
    err = capsys.readouterr().err
    assert "8 types" in err and "test: 1 sentence pairs, 6 tokens, 2 <unk>" in err
    assert no_tmp_files(tmp_path / "bin")


def test_binarize_separate_dictionaries_counts_and_encodes_each_side_alone(tmp_path, capsys):
    """fairseq-preprocess without --joined-dictionary (fairseq's IWSLT14 example, Xiong et al.'s IWSLT runs)."""
    write(tmp_path / "train.de", ["a b c", "a b"])
    write(tmp_path / "train.en", ["x a", "x"])
    write(tmp_path / "test.de", ["a x"])
    write(tmp_path / "test.en", ["c x"])
    main(["binarize", "--src-lang", "de", "--tgt-lang", "en", "--separate-dictionaries",
          "--train-prefix", str(tmp_path / "train"), "--splits", "train", "test",
          "--prefixes", str(tmp_path / "train"), str(tmp_path / "test"), "--out-dir", str(tmp_path / "bin")])
    assert read(tmp_path / "bin" / "dict.src.txt") == ["a 2", "b 2", "c 1"]
    assert read(tmp_path / "bin" / "dict.tgt.txt") == ["x 2", "a 1"]
    assert not (tmp_path / "bin" / "dict.txt").exists()
    src, tgt = data.load_dictionaries(tmp_path / "bin")
    assert data.vocab_sizes(tmp_path / "bin") == (7, 6) and src is not tgt
    train = data.ParallelData.load(tmp_path / "bin" / "train.pt")
    assert train.source(0).tolist() == [4, 5, 6, 2] and train.target(0).tolist() == [4, 5, 2]
    test = data.ParallelData.load(tmp_path / "bin" / "test.pt")  # each side's words only in its own dictionary
    assert test.source(0).tolist() == [4, data.UNK, 2] and test.target(0).tolist() == [data.UNK, 4, 2]
    assert "dictionary of 7 types" in capsys.readouterr().err
    # a joined dictionary beside them: which one made the splits is unknown
    (tmp_path / "bin" / "dict.txt").write_text("a 1\n")
    with pytest.raises(ValueError, match="both a joined dict.txt and per-side dictionaries"):
        data.load_dictionaries(tmp_path / "bin")


def test_a_joined_dictionary_is_one_object_for_both_sides(tmp_path):
    write(tmp_path / "train.de", ["a b"])
    write(tmp_path / "train.en", ["x"])
    binarize("de", "en", tmp_path / "train", ["train"], [tmp_path / "train"], tmp_path / "bin")
    src, tgt = data.load_dictionaries(tmp_path / "bin")
    assert src is tgt and data.vocab_sizes(tmp_path / "bin") == (7, 0)


def test_binarize_rejects_mismatched_split(tmp_path):
    write(tmp_path / "train.de", ["a", "b"])
    write(tmp_path / "train.en", ["a"])
    with pytest.raises(ValueError, match="line counts"):
        binarize("de", "en", tmp_path / "train", ["train"], [tmp_path / "train"],
                 tmp_path / "bin")
    assert not (tmp_path / "bin" / "train.pt").exists()


def test_read_lines_splits_on_newline_only(tmp_path):
    # a stray \r inside a line must not create an extra line (Perl/awk semantics)
    (tmp_path / "a").write_bytes("x\ry\n".encode())
    (tmp_path / "b").write_bytes(b"z\n")
    assert list(read_parallel([tmp_path / "a", tmp_path / "b"])) == [("x\ry", "z")]
