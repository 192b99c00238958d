"""The real corpora's preparation, run through the real rules on fabricated archives.

The archives have the real member names and file formats (IWSLT14's de-en.tgz with its
train.tags and TED XML files; WMT14's --icml17 training archives, test-full.tgz and dev.tgz
with their SGML), reached through file:// URLs pinned by sha256 in a config derived from
config/config.yaml. One Snakemake run prepares all four corpora (IWSLT14, WMT14, a local
corpus and an already tokenized local corpus) up to the binarized data; the tests then read
every stage's files. Expected texts are written out: they are what prepare-iwslt14.sh /
prepare-wmt14en2de.sh --icml17 produce for these inputs.
"""
import pytest
import yaml

from lnrepro.core import data

from fabricate import (IWSLT_SETS, IWSLT_SPECIAL, LOCAL, LOCAL_TOK, WMT_TEST, WMT_VALID, debpe, fabricate_iwslt,
                       iwslt_expected, iwslt_train, lines, make_tgz, pin_archives, pin_wmt_corpora, plain, read, sgm,
                       sha256, wmt_corpora, wmt_train_rows, write_local)
from workflow_helpers import ROOT, snakemake, workflow_copy

MERGES = {"iwslt14": 100, "wmt14": 100, "wmt14_clinic": 100, "mine": 40, "mine_tok": 40}


# ---- one config, one Snakemake run ---------------------------------------------------------------
def paper_config():
    """config/config.yaml's corpora alone: a config that prepares data (no runs, no figures)."""
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return {"corpora": paper["corpora"]}


def derived_config(de_en, inputs, local_files, local_tok_files):
    cfg = paper_config()
    pin_archives(cfg["corpora"]["iwslt14"], [de_en])
    pin_wmt_corpora(cfg["corpora"], inputs)
    for name, corpus in cfg["corpora"].items():
        corpus["bpe_merges"] = MERGES[name]
    cfg["corpora"]["mine"] = {"source": "local", "files": local_files, "src": "de", "tgt": "en",
                              "bpe_merges": MERGES["mine"], "split_final_period": True}
    cfg["corpora"]["mine_tok"] = {"source": "local", "files": local_tok_files, "tokenized": True,
                                  "src": "de", "tgt": "en", "valid_every": 10, "bpe_merges": MERGES["mine_tok"]}
    cfg["threads"] = {"data": 1, "train": 1, "evaluate": 1}
    return cfg


def bpe(workdir, corpus):
    return workdir / "results" / "data" / corpus / f"bpe{MERGES[corpus]}"


def stage(workdir, corpus, name):
    return workdir / "results" / "data" / corpus / name


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    workdir = workflow_copy(tmp_path_factory.mktemp("real"))
    inputs = tmp_path_factory.mktemp("inputs")
    cfg = derived_config(fabricate_iwslt(inputs), inputs,
                         write_local(inputs, "mine", LOCAL), write_local(inputs, "mine_tok", LOCAL_TOK))
    (workdir / "real.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    targets = [f"results/data/{c}/bpe{m}/bin/dict.txt" for c, m in MERGES.items()]
    proc = snakemake(workdir, *targets, "--cores", "2", "--configfile", "real.yaml")
    return workdir, proc.stdout + proc.stderr


# ---- IWSLT14 ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_iwslt14_raw_text_as_the_recipe_reads_it(prepared):
    workdir, _ = prepared
    raw = stage(workdir, "iwslt14", "raw")
    train = iwslt_train()
    kept = [r for r in train if "<url>" not in r[0] and "<talkid>" not in r[0] and "<keywords>" not in r[0]]
    assert len(read(raw / "train.de")) == len(kept) == len(train) - 6
    assert read(raw / "train.de")[:3] == ["<speaker>Jane Doe</speaker>", "Jane Doe: Die Welt der Häuser",
                                          "TED Talk Subtitles and Transcript: Worte & Taten"]
    assert "It’s John’s book, he says." in read(raw / "train.en")  # ’ kept in train
    # test: <seg> lines only, tags and the spaces around the text stripped, ’ -> ', recipe order
    assert read(raw / "test.en") == [
        line for k, name in enumerate(IWSLT_SETS)
        for line in (f"Sentence {k + 1} from {name}.", IWSLT_SPECIAL[k][1].strip().replace("’", "'"))]
    assert read(raw / "test.de")[7] == "Viel   Platz"
    assert sorted(p.name for p in raw.glob("[!.]*")) == ["test.de", "test.en", "train.de", "train.en"]


@pytest.mark.slow
def test_iwslt14_clean_lowercase_valid_split_and_test(prepared):
    workdir, _ = prepared
    train, valid, test = iwslt_expected()
    assert (len(train), len(valid), len(test)) == (76, 3, 10)
    text = stage(workdir, "iwslt14", "text")
    # clean-corpus-n on tokenized cased text, lowercase, then every 23rd line is valid
    assert list(zip(read(text / "train.src"), read(text / "train.tgt"))) == train
    assert list(zip(read(text / "valid.src"), read(text / "valid.tgt"))) == valid
    assert valid[0][1] == "he said &quot; yes &quot; &amp; she said &apos; no &apos; ."
    assert valid[1][0] == plain(40)[2][0] and valid[2][0] == plain(60)[2][0]
    assert list(zip(read(text / "test.src"), read(text / "test.tgt"))) == test
    # the cleaned tokenized text is still cased: lowercasing comes after cleaning
    assert "Das ist ÜBER alles wichtig ." in read(stage(workdir, "iwslt14", "clean") / "train.src")
    assert "clean: kept 79 of 82 sentence pairs" in (workdir / "logs/data/iwslt14/clean.log").read_text()


@pytest.mark.slow
def test_iwslt14_joint_bpe_and_binarized_data(prepared):
    workdir, _ = prepared
    train, valid, test = iwslt_expected()
    d = bpe(workdir, "iwslt14")
    codes = read(d / "codes")
    assert codes[0] == "#version: 0.2" and 0 < len(codes) - 1 <= MERGES["iwslt14"]
    for split, pairs in (("train", train), ("valid", valid), ("test", test)):
        src, tgt = read(d / f"{split}.src"), read(d / f"{split}.tgt")
        assert list(zip(debpe(src), debpe(tgt))) == pairs  # BPE only splits words
    assert any("@@ " in line for line in read(d / "test.src"))  # rare words are split
    assert "häuser" in read(d / "train.src")[5].split()  # frequent words stay whole
    vocab = data.Dictionary.load(d / "bin" / "dict.txt")
    for split, n in (("train", 76), ("valid", 3), ("test", 10)):
        assert len(data.ParallelData.load(d / "bin" / f"{split}.pt")) == n
    assert vocab.encode(read(d / "train.tgt")[0]).count(data.UNK) == 0


@pytest.mark.slow
def test_iwslt14_count_mismatch_is_a_warning(prepared):
    workdir, output = prepared
    warning = ("WARNING: iwslt14 (iwslt14): train has 76 sentence pairs, the recipe gives 160239 (-160163)")
    assert warning in (workdir / f"logs/data/iwslt14/bpe{MERGES['iwslt14']}.counts.log").read_text()
    assert warning in output  # on the terminal too, and the run went on to binarize
    table = read(bpe(workdir, "iwslt14") / "counts.tsv")
    assert table[0] == "split\tpairs\texpected\tstatus\tfile"
    assert [row.split("\t")[:4] for row in table[1:]] == [
        ["train", "76", "160239", "DIFFERS"], ["valid", "3", "7283", "DIFFERS"], ["test", "10", "6750", "DIFFERS"]]


# ---- WMT14 --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_wmt14_train_is_the_corpora_in_order_normalized_and_tokenized(prepared):
    workdir, _ = prepared
    rows = wmt_train_rows()
    assert len(rows) == 210
    raw = stage(workdir, "wmt14", "raw")
    assert read(raw / "train.en") == [r[0] for r in rows]  # europarl, commoncrawl, news-commentary
    tok = stage(workdir, "wmt14", "tok")
    assert read(tok / "train.src") == [r[2] for r in rows]
    assert read(tok / "train.tgt") == [r[3] for r in rows]
    log = (workdir / "logs/data/wmt14/prepare_wmt14.log").read_text()
    assert "training/europarl-v7.de-en: 100 lines" in log and "commoncrawl.de-en: 60 lines" in log


@pytest.mark.slow
def test_wmt14_test_and_valid_from_sgml_not_normalized(prepared):
    workdir, output = prepared
    raw, tok = stage(workdir, "wmt14", "raw"), stage(workdir, "wmt14", "tok")
    # newstest2014 from test-full.tgz, newstest2013 from dev.tgz: <seg> text, ’ -> ', then -a
    for split, rows in (("test", WMT_TEST), ("valid", WMT_VALID)):
        assert read(raw / f"{split}.en") == [r[0].replace("’", "'") for r in rows]
        assert read(raw / f"{split}.de") == [r[1] for r in rows]
        assert read(tok / f"{split}.src") == [r[2] for r in rows]  # „ “ stay: no normalization
        assert read(tok / f"{split}.tgt") == [r[3] for r in rows]
    d = bpe(workdir, "wmt14")
    assert debpe(read(d / "test.tgt")) == [t[3] for t in WMT_TEST]  # not cleaned: the 1:11 pair stays
    assert "WARNING: wmt14 (wmt14): test has 4 sentence pairs, the recipe gives 3003" in output
    assert len(data.ParallelData.load(d / "bin" / "test.pt")) == 4


@pytest.mark.slow
def test_wmt14_bpe_on_all_train_then_clean_train_and_valid_only(prepared):
    workdir, _ = prepared
    rows = wmt_train_rows()
    text = stage(workdir, "wmt14", "text")  # cased: no lowercasing for WMT
    # valid_set replaces the every-100th split: train is all of it and valid_every is ignored
    assert read(text / "train.src") == [r[2] for r in rows]
    assert read(text / "valid.tgt") == [r[3] for r in WMT_VALID]
    assert not (text / "trainvalid.src").exists() and not (workdir / "logs/data/wmt14/split_valid.log").exists()
    d = bpe(workdir, "wmt14")
    # BPE learned on train before cleaning, applied to all three splits, then clean-corpus-n
    # 1-250 / 1.5 on train and valid, as prepare-wmt14en2de.sh does with its valid
    for split, split_rows in (("train", rows), ("valid", WMT_VALID)):
        assert debpe(read(d / "uncleaned" / f"{split}.src")) == [r[2] for r in split_rows]
        kept = [r for r in split_rows if not r[4]]
        assert debpe(read(d / f"{split}.src")) == [r[2] for r in kept]
        assert debpe(read(d / f"{split}.tgt")) == [r[3] for r in kept]
    assert len(read(d / "train.src")) == 210 - 3 and len(read(d / "valid.src")) == 3
    assert any("@@ " in line for line in read(d / "train.tgt"))
    assert len(data.ParallelData.load(d / "bin" / "valid.pt")) == 3


@pytest.mark.slow
def test_wmt14_clinic_cleans_1_80_before_bpe_and_normalizes_valid(prepared):
    """Transformer-Clinic's wmt14en-de.sh (Liu et al.): news-commentary v12, clean-corpus-n 1-80 with
    its default ratio 9 on the tokenized train before BPE, nothing cleaned after; valid normalized
    like train and never cleaned."""
    workdir, _ = prepared
    rows = wmt_train_rows()
    log = (workdir / "logs/data/wmt14_clinic/prepare_wmt14.log").read_text()
    assert "training/news-commentary-v12.de-en: 50 lines" in log
    tok, text = stage(workdir, "wmt14_clinic", "tok"), stage(workdir, "wmt14_clinic", "text")
    assert read(tok / "train.src") == [r[2] for r in rows]
    kept = [r for r in rows if len(r[2].split()) <= 80]  # the 260-word pair; the 1:7 pairs stay (ratio 9)
    assert len(kept) == 209
    assert read(text / "train.src") == [r[2] for r in kept] and read(text / "train.tgt") == [r[3] for r in kept]
    d = bpe(workdir, "wmt14_clinic")
    assert debpe(read(d / "train.tgt")) == [r[3] for r in kept] and not (d / "uncleaned").exists()
    # normalize-punctuation on valid: „ “ -> " (escaped by the tokenizer); test stays as wmt14's
    assert read(tok / "valid.tgt")[1] == "Die &quot; E @-@ Mail &quot; über das Europäische Parlament ."
    assert read(tok / "test.tgt") == [r[3] for r in WMT_TEST]
    assert len(data.ParallelData.load(d / "bin" / "valid.pt")) == len(WMT_VALID)  # the 1:13 pair stays


# ---- local corpora ------------------------------------------------------------------------------
@pytest.mark.slow
def test_local_corpus_goes_through_the_same_chain(prepared):
    workdir, _ = prepared
    tok = stage(workdir, "mine", "tok")
    assert read(tok / "train.src")[30] == "Hallo , &quot; Welt &quot; !"
    assert read(tok / "test.src") == ["Das ist &apos; s .", "Ein E-Mail-Test ."]
    text = stage(workdir, "mine", "text")
    # train cleaned (the 1:11 pair dropped), not lowercased; its own valid set, not cleaned
    assert len(read(text / "train.src")) == 31 and read(text / "train.tgt")[0] == "The house number 1 is small ."
    assert read(text / "valid.tgt") == ["The house is big .", "Yes , that is what the valid set says ."]
    assert not (text / "trainvalid.src").exists()  # no split of train: the valid files are given
    d = bpe(workdir, "mine")
    assert debpe(read(d / "valid.src")) == ["Das Haus ist groß .", "Ja ."]
    assert [len(data.ParallelData.load(d / "bin" / f"{s}.pt")) for s in ("train", "valid", "test")] == [31, 2, 2]


@pytest.mark.slow
def test_pretokenized_local_corpus_is_copied_not_tokenized(prepared):
    workdir, _ = prepared
    tok = stage(workdir, "mine_tok", "tok")
    assert read(tok / "train.src") == [p[0] for p in LOCAL_TOK["train"]]  # "&" not escaped again
    assert read(tok / "test.tgt") == ["that &apos;s it ."]
    assert not (workdir / "logs/data/mine_tok/tokenize").exists()  # tokenize logs to tokenize/{split}.{side}.log
    kept = [p for p in LOCAL_TOK["train"] if p[0] != "nein ."]
    text = stage(workdir, "mine_tok", "text")
    assert list(zip(read(text / "valid.src"), read(text / "valid.tgt"))) == kept[9::10]
    assert len(read(text / "train.src")) == len(kept) - 4 == 36
    d = bpe(workdir, "mine_tok")
    assert debpe(read(d / "train.src"))[0] == "a &apos; b & c"


# ---- a corrupted archive ------------------------------------------------------------------------
@pytest.mark.slow
def test_corrupted_archive_fails_with_the_checksum_and_leaves_nothing(tmp_path):
    (tmp_path / "wf").mkdir()
    workdir = workflow_copy(tmp_path / "wf")
    archive = make_tgz(tmp_path / "de-en.tgz", {"de-en/train.tags.de-en.de": ["Hallo."]})
    pinned = "0123456789abcdef" * 4
    cfg = paper_config()
    cfg["corpora"] = {"iwslt14": cfg["corpora"]["iwslt14"]}
    cfg["corpora"]["iwslt14"]["archives"] = [{"url": archive.as_uri(), "sha256": pinned}]
    (workdir / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(workdir, "results/data/iwslt14/raw", "--cores", "1", "--configfile", "bad.yaml", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "sha256 mismatch for de-en.tgz" in output
    assert f"expected {pinned}" in output and f"actual   {sha256(archive)}" in output
    # no archive, no .tmp, nothing extracted, no raw text
    assert [p for p in (workdir / "resources").rglob("*") if not p.is_dir()] == []
    assert not (workdir / "resources" / "extracted").exists()
    assert not (workdir / "results" / "data").exists()
    assert f"expected {pinned}" in (workdir / "logs/download/de-en.tgz.log").read_text()


# ---- the recipes' own checks (no Snakemake) --------------------------------------------------------
def test_wmt14_missing_test_set_and_uneven_sides_are_named(tmp_path):
    from lnrepro.cli import main
    root = tmp_path / "extracted"
    (root / "training").mkdir(parents=True)
    for corpus, rows in wmt_corpora().items():
        for lang, index in (("en", 0), ("de", 1)):
            (root / f"{corpus}.{lang}").write_bytes(lines(r[index] for r in rows))
    args = ["prepare-wmt14", "--roots", str(root), "--src", "en", "--tgt", "de",
            "--out-dir", str(tmp_path / "raw")]
    with pytest.raises(SystemExit, match="no 'newstest2014-deen-src.en.sgm' below"):
        main(args)
    (root / "newstest2014-deen-src.en.sgm").write_bytes(lines(sgm("src", "en", [t[0] for t in WMT_TEST])))
    (root / "newstest2014-deen-ref.de.sgm").write_bytes(lines(sgm("ref", "de", [t[1] for t in WMT_TEST])))
    (root / "commoncrawl.de-en.de").write_bytes(lines(r[1] for r in wmt_corpora()["commoncrawl.de-en"][:-1]))
    with pytest.raises(SystemExit) as e:
        main(args)
    assert "commoncrawl.de-en: the sides have different line counts (.part.en: 60, .part.de: 59)" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extracted"]  # no raw/, no raw.tmp/


def test_iwslt14_wrong_archive_and_local_mismatch_are_named(tmp_path):
    from lnrepro.cli import main
    (tmp_path / "x" / "de-en").mkdir(parents=True)
    with pytest.raises(SystemExit, match="is this IWSLT14's de-en.tgz"):
        main(["prepare-iwslt14", "--roots", str(tmp_path / "x"), "--src", "de", "--tgt", "en",
              "--out-dir", str(tmp_path / "raw")])
    (tmp_path / "a.de").write_bytes(lines(["eins", "zwei"]))
    (tmp_path / "a.en").write_bytes(lines(["one"]))
    with pytest.raises(SystemExit, match="different line counts"):
        main(["prepare-local", "--src-lang", "de", "--tgt-lang", "en", "--train", str(tmp_path / "a.de"),
              str(tmp_path / "a.en"), "--test", str(tmp_path / "a.de"), str(tmp_path / "a.de"),
              "--out-dir", str(tmp_path / "raw")])
    assert not (tmp_path / "raw").exists() and not (tmp_path / "raw.tmp").exists()
