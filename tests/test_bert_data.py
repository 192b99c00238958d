"""The BERT data: Wikipedia and books as documents, spaCy sentences, the 199:1 document split,
binarized pre-training data with <mask>, GLUE MRPC/RTE in their published formats, and the
Snakemake chain (the paper config planned, the demo built)."""
import bz2
import hashlib
import zipfile
from xml.sax.saxutils import escape

import pytest
import torch
import yaml

from lnrepro.cli import main
from lnrepro.core.data import UNK, Dictionary
from lnrepro.core.mono_data import MASK, MonoData, PairData
from lnrepro.prepare.binarize_mono import binarize_mono
from lnrepro.prepare.binarize_pairs import binarize_pairs
from lnrepro.prepare.books import prepare_books
from lnrepro.prepare.bpe_apply import apply_bpe_file
from lnrepro.prepare.bpe_learn import learn_joint_bpe
from lnrepro.prepare.documents import read_documents
from lnrepro.prepare.glue import GlueFormatError, prepare_glue, read_pairs
from lnrepro.prepare.sentences import sentence_texts, sentencizer, split_sentences
from lnrepro.prepare.split_documents import split_documents
from lnrepro.prepare.tokenize import tokenize_file
from lnrepro.prepare.wikipedia import prepare_wikipedia
from workflow_helpers import snakemake, workflow_copy


def lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def docs_text(documents):
    return "\n\n".join("\n".join(d) for d in documents) + "\n"


# ---- sentences ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nlp():
    return sentencizer()


@pytest.mark.parametrize("text, expected", [
    ("Dr. Smith went to Washington. He arrived at 3 p.m. on Monday.",
     ["Dr. Smith went to Washington.", "He arrived at 3 p.m. on Monday."]),
    ("We use tools, e.g. hammers. They work.", ["We use tools, e.g. hammers.", "They work."]),
    ("Pi is about 3.14. That is well known.", ["Pi is about 3.14.", "That is well known."]),
    ("Wait... what happened? Nobody knows!", ["Wait... what happened?", "Nobody knows!"]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("Is it true? Yes! It is.", ["Is it true?", "Yes!", "It is."]),
    ("The U.S. economy grew. Prices rose.", ["The U.S. economy grew.", "Prices rose."]),
    ("Mr. Brown met Mrs. Green at 2.50 pm.", ["Mr. Brown met Mrs. Green at 2.50 pm."]),
])
def test_sentencizer_splits_sentences_not_abbreviations_or_decimals(nlp, text, expected):
    assert sentence_texts(nlp(text)) == expected


def test_split_sentences_keeps_documents_apart(tmp_path):
    docs = write(tmp_path / "docs.txt", "First one. Second one!\nA new paragraph.\n\n\n  \nOther doc? Yes.\n")
    more = write(tmp_path / "more.txt", "\nThird file.\n")
    out = tmp_path / "sents.txt"
    assert split_sentences([str(docs), str(more)], str(out)) == (3, 6)
    assert lines(out) == ["First one.", "Second one!", "A new paragraph.", "",
                          "Other doc?", "Yes.", "", "Third file."]


# ---- Wikipedia ----------------------------------------------------------------------------------
ARTICLE = """{{Short description|English mathematician}}
{{Infobox person
| name = Ada Lovelace
| birth_date = {{birth date|1815|12|10}}
}}
'''Augusta Ada King, Countess of Lovelace''' (''née'' Byron; {{IPA|ˈlʌvlɛs}}) was an English [[mathematician]] \
and [[Writer|writer]].<ref>{{cite book |title=Ada |year=1990}}</ref> She worked on [[Charles Babbage]]'s \
[[Analytical Engine|proposed computer]].<ref name="a" />

[[File:Ada Lovelace portrait.jpg|thumb|Portrait by [[Alfred Edward Chalon]]]]
== Biography ==
Her notes are in [http://example.org/notes an online archive] and at [http://example.org/x].<!-- a comment -->
{| class="wikitable"
|-
! Year !! Event
|-
| 1843 || Notes {{efn|a note}}
|}
* A list item with ''emphasis'' and a value <math>x^2</math> here.
# Fish &amp; chips cost <b>5</b>&nbsp;pence.
__NOTOC__
[[Category:1815 births]]
"""
ARTICLE_TEXT = [
    "Augusta Ada King, Countess of Lovelace (née Byron) was an English mathematician and writer. "
    "She worked on Charles Babbage's proposed computer.",
    "Her notes are in an online archive and at.",
    "A list item with emphasis and a value here.",
    "Fish & chips cost 5 pence.",
]


def page(title, ns, text, redirect=None):
    redirect = f'    <redirect title="{redirect}" />\n' if redirect else ""
    return (f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>1</id>\n{redirect}"
            f"    <revision>\n      <id>2</id>\n      <timestamp>2020-01-01T00:00:00Z</timestamp>\n"
            f"      <contributor><username>Editor</username><id>3</id></contributor>\n"
            f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
            f"      <sha1>abc</sha1>\n    </revision>\n  </page>\n")


def fabricate_dump(path):
    """A pages-articles dump in the real schema (export-0.10), bz2-compressed."""
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
           'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.10" xml:lang="en">\n'
           "  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <namespaces>\n"
           '      <namespace key="0" case="first-letter" />\n'
           '      <namespace key="1" case="first-letter">Talk</namespace>\n    </namespaces>\n  </siteinfo>\n'
           + page("Ada Lovelace", 0, ARTICLE)
           + page("Lovelace", 0, "#REDIRECT [[Ada Lovelace]]", redirect="Ada Lovelace")
           + page("Talk:Ada Lovelace", 1, "Is this the right year? Yes.")
           + page("Only templates", 0, "{{Disambiguation}}\n[[Category:Stubs]]\n")
           + page("Analytical Engine", 0, "The '''Analytical Engine''' was a {{nested|{{x|y}} z}}design.\n\n"
                                          "It was never built.")
           + "</mediawiki>\n")
    path.write_bytes(bz2.compress(xml.encode("utf-8")))
    return path


def test_wikipedia_dump_to_plain_documents(tmp_path):
    dump = fabricate_dump(tmp_path / "enwiki-latest-pages-articles.xml.bz2")
    out = tmp_path / "wiki.txt"
    assert main(["prepare-wikipedia", "--dump", str(dump), "--out", str(out)]) == 0
    # the redirect, the talk page (ns 1) and the page with nothing but templates are not documents
    assert lines(out) == ARTICLE_TEXT + ["", "The Analytical Engine was a design.", "It was never built."]
    prepare_wikipedia(str(dump), str(out), max_docs=1)
    assert lines(out) == ARTICLE_TEXT


def test_wikipedia_dump_uncompressed_and_truncated(tmp_path):
    xml = bz2.decompress(fabricate_dump(tmp_path / "d.xml.bz2").read_bytes())
    (tmp_path / "d.xml").write_bytes(xml)
    assert prepare_wikipedia(str(tmp_path / "d.xml"), str(tmp_path / "out.txt")) == (2, 6)
    (tmp_path / "cut.xml").write_bytes(xml[: len(xml) // 2])
    with pytest.raises(SystemExit) as e:
        main(["prepare-wikipedia", "--dump", str(tmp_path / "cut.xml"), "--out", str(tmp_path / "cut.txt")])
    assert "cut.xml" in str(e.value) and "truncated or corrupt" in str(e.value)
    assert not (tmp_path / "cut.txt").exists()


# ---- books --------------------------------------------------------------------------------------
def test_books_folder_one_document_per_book(tmp_path):
    write(tmp_path / "books/b/second.txt", "Chapter 2\n\nHard wrapped\nlines join.\n")
    write(tmp_path / "books/a.txt", "\n\nFirst book,\n  first paragraph.\n\n\nSecond paragraph.\n")
    write(tmp_path / "books/notes.md", "not a book")
    out = tmp_path / "books.txt"
    assert prepare_books(str(tmp_path / "books"), str(out)) == (2, 4)
    assert lines(out) == ["First book, first paragraph.", "Second paragraph.", "",
                          "Chapter 2", "Hard wrapped lines join."]
    with pytest.raises(SystemExit) as e:
        main(["prepare-books", "--dir", str(tmp_path / "empty"), "--out", str(out)])
    assert "no *.txt files below" in str(e.value)


# ---- 199:1 document split -----------------------------------------------------------------------
def test_split_documents_ratio_determinism_and_tiny_inputs(tmp_path):
    documents = [[f"doc {d} sentence {s} ." for s in range(d % 3 + 1)] for d in range(4000)]
    source = write(tmp_path / "tok.txt", docs_text(documents))

    def split(seed, ratio=199, src=source):
        train, valid = tmp_path / f"train{seed}", tmp_path / f"valid{seed}"
        counts = split_documents(str(src), str(train), str(valid), ratio, seed)
        return counts, list(read_documents(train)), list(read_documents(valid))

    (n_train, n_valid), train, valid = split(1)
    assert n_train + n_valid == 4000 and 8 <= n_valid <= 35  # 20 expected
    assert sorted(train + valid) == sorted(documents)  # whole documents, none lost
    assert split(1)[1:] == (train, valid)  # deterministic
    assert split(2)[2] != valid
    tiny = write(tmp_path / "tiny.txt", docs_text([["a ."], ["b ."]]))
    assert split(3, src=tiny)[0] == (1, 1)  # both sides get a document
    one = write(tmp_path / "one.txt", "a .\n")
    with pytest.raises(SystemExit) as e:
        main(["split-documents", "--input", str(one), "--train-out", str(tmp_path / "t"),
              "--valid-out", str(tmp_path / "v")])
    assert "needs at least 2" in str(e.value) and not (tmp_path / "t").exists()


# ---- Moses, BPE, binarized pre-training data ----------------------------------------------------
def test_tokenize_lowercase_and_bpe_keep_document_separators(tmp_path):
    sents = write(tmp_path / "sents.txt", "Dr. Smith said “Hi” — twice.\nNo. 5 is “done”.\n\nNext doc.\n")
    tok = tmp_path / "tok.txt"
    tokenize_file(sents, tok, "en", escape=False, normalize_punctuation=True, lowercase=True)
    # normalized (quotes, dash, English: a period moves inside the quotes), tokenized with the cased
    # nonbreaking prefixes ("Dr.", "No."), then lowercased
    assert lines(tok) == ['dr. smith said " hi " - twice .', 'no. 5 is " done . "', "", "next doc ."]
    learn_joint_bpe([tok], tmp_path / "codes", merges=5)
    apply_bpe_file(tmp_path / "codes", tok, tmp_path / "bpe.txt")
    assert lines(tmp_path / "bpe.txt")[2] == ""


def test_binarize_mono_round_trip_with_mask_last(tmp_path):
    train_docs = [["the cat sat .", "it pur@@ red ."], ["a dog ."], ["the end ."]]
    train = write(tmp_path / "train.txt", docs_text(train_docs))
    valid = write(tmp_path / "valid.txt", docs_text([["the zebra sat ."]]))
    assert main(["binarize-mono", "--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "bin")]) == 0
    vocab = Dictionary.load(tmp_path / "bin/dict.txt")
    assert vocab.symbols[-1] == MASK and vocab.index[MASK] == len(vocab) - 1
    assert lines(tmp_path / "bin/dict.txt")[:2] == [". 4", "the 2"] and lines(tmp_path / "bin/dict.txt")[-1] == "<mask> 0"
    data = MonoData.load(tmp_path / "bin/train.pt")  # weights_only=True
    assert data.tokens.dtype == torch.int32 and data.sentence_offsets.dtype == data.doc_offsets.dtype == torch.int64
    assert data.n_docs == 3 and data.n_sentences == 4 and data.doc_offsets.tolist() == [0, 2, 3, 4]
    decoded = [[" ".join(vocab.symbols[i] for i in s.tolist()) for s in data.doc_sentences(d)] for d in range(3)]
    assert decoded == train_docs  # no </s>, nothing lost
    assert vocab.decode(data.sentence(1).tolist()) == "it purred ."
    valid_data = MonoData.load(tmp_path / "bin/valid.pt")
    assert valid_data.sentence(0).tolist() == [vocab.index["the"], UNK, vocab.index["sat"], vocab.index["."]]


# ---- GLUE ---------------------------------------------------------------------------------------
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
MSR_TRAIN = MRPC_HEADER + (
    '1\t702876\t702977\tAmrozi accused his brother , whom he called " the witness " .\tReferring to him as only '
    '" the witness " , Amrozi accused his brother .\r\n'
    "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain .\tYucaipa bought Dominick 's in 1995 .\r\n"
    "1\t1330381\t1330521\tThey had published an advertisement .\tOn June 10 , they had published an ad .\r\n")
RTE_TRAIN = ("index\tsentence1\tsentence2\tlabel\n"
             '0\tNo Weapons of Mass Destruction Found in Iraq Yet.\tWeapons of Mass Destruction Found in Iraq.\tnot_entailment\n'
             '1\tA place of "sorrow", after Pope John Paul II died.\tPope John Paul II died.\tentailment\n')
RTE_DEV = "index\tsentence1\tsentence2\tlabel\n0\tDana sleeps.\tSomeone sleeps.\tentailment\n"


def test_mrpc_from_microsofts_files_split_by_glues_dev_ids(tmp_path, capsys):
    train = write(tmp_path / "msr_paraphrase_train.txt", MSR_TRAIN)
    ids = write(tmp_path / "mrpc_dev_ids.tsv", "2108705\t2108831\n999\t998\n")
    assert prepare_glue("mrpc", str(tmp_path / "out"), msr_train=str(train), dev_ids=str(ids)) == {"train": 2, "dev": 1}
    assert "1 of 2 dev id pairs" in capsys.readouterr().err
    assert lines(tmp_path / "out/dev.tsv") == ["sentence1\tsentence2\tlabel", "Yucaipa owned Dominick 's before "
                                               "selling the chain .\tYucaipa bought Dominick 's in 1995 .\t0"]
    assert lines(tmp_path / "out/train.sentence1")[0] == 'Amrozi accused his brother , whom he called " the witness " .'
    assert lines(tmp_path / "out/train.label") == ["1", "1"]


def test_glue_format_mrpc_and_rte(tmp_path):
    write(tmp_path / "MRPC/train.tsv", MSR_TRAIN)
    write(tmp_path / "MRPC/dev.tsv", MRPC_HEADER + "0\t1\t2\tA b .\tC d .\n")
    assert prepare_glue("mrpc", str(tmp_path / "mrpc"), glue_dir=str(tmp_path / "MRPC")) == {"train": 3, "dev": 1}
    assert read_pairs("rte", write(tmp_path / "RTE/train.tsv", RTE_TRAIN)) == [
        ("No Weapons of Mass Destruction Found in Iraq Yet.", "Weapons of Mass Destruction Found in Iraq.", 0),
        ('A place of "sorrow", after Pope John Paul II died.', "Pope John Paul II died.", 1)]


@pytest.mark.parametrize("content, message", [
    (RTE_TRAIN + "2\tA sentence with\ttoo many\ttabs\tentailment\n", "train.tsv, line 4: 5 tab-separated columns, expected 4"),
    (RTE_TRAIN.replace("\tentailment\n", "\tmaybe\n"), "train.tsv, line 3: label 'maybe'"),
    ("id\ts1\ts2\tlabel\n", "train.tsv, line 1: header"),
])
def test_malformed_glue_file_names_file_and_line(tmp_path, content, message):
    write(tmp_path / "RTE/train.tsv", content)
    write(tmp_path / "RTE/dev.tsv", RTE_DEV)
    with pytest.raises(GlueFormatError, match=message):
        prepare_glue("rte", str(tmp_path / "out"), glue_dir=str(tmp_path / "RTE"))
    with pytest.raises(SystemExit) as e:
        main(["prepare-glue", "--task", "rte", "--glue-dir", str(tmp_path / "RTE"), "--out-dir", str(tmp_path / "out")])
    assert str(e.value).startswith(f"lnrepro prepare-glue: ERROR: {tmp_path / 'RTE/train.tsv'}")


def test_rte_zip_downloaded_verified_unpacked_and_prepared(tmp_path):
    with zipfile.ZipFile(tmp_path / "RTE.zip", "w") as z:
        z.writestr("RTE/train.tsv", RTE_TRAIN)
        z.writestr("RTE/dev.tsv", RTE_DEV)
        z.writestr("RTE/test.tsv", "index\tsentence1\tsentence2\n")
    url, out = (tmp_path / "RTE.zip").as_uri(), tmp_path / "downloads/RTE.zip"
    with pytest.raises(SystemExit) as e:
        main(["download", "--url", url, "--out", str(out), "--sha256", "ab" * 32, "--retries", "1"])
    assert "sha256 mismatch for RTE.zip" in str(e.value) and not out.exists()
    right = hashlib.sha256((tmp_path / "RTE.zip").read_bytes()).hexdigest()
    assert main(["download", "--url", url, "--out", str(out), "--sha256", right]) == 0
    assert main(["extract", "--archive", str(out), "--out", str(tmp_path / "RTE"), "--sha256", right]) == 0
    assert main(["prepare-glue", "--task", "rte", "--glue-dir", str(tmp_path / "RTE"), "--out-dir", str(tmp_path / "rte")]) == 0
    assert lines(tmp_path / "rte/dev.tsv") == ["sentence1\tsentence2\tlabel", "Dana sleeps.\tSomeone sleeps.\t1"]


def test_binarize_pairs_uses_the_pretraining_dictionary(tmp_path):
    Dictionary(["the", "cat", ".", MASK], [3, 2, 1, 0]).save(tmp_path / "dict.txt")
    write(tmp_path / "s1", "the cat .\nthe dog .\n")
    write(tmp_path / "s2", "cat .\n\n")
    write(tmp_path / "labels", "1\n0\n")
    binarize_pairs(tmp_path / "dict.txt", tmp_path / "s1", tmp_path / "s2", tmp_path / "labels", tmp_path / "dev.pt")
    pairs = PairData.load(tmp_path / "dev.pt")
    assert len(pairs) == 2 and pairs.labels.dtype == torch.int64
    s1, s2, label = pairs.pair(1)
    assert (s1.tolist(), s2.tolist(), label) == ([4, UNK, 6], [], 0)
    write(tmp_path / "labels", "1\nentailment\n")
    with pytest.raises(ValueError, match="labels, line 2"):
        binarize_pairs(tmp_path / "dict.txt", tmp_path / "s1", tmp_path / "s2", tmp_path / "labels", tmp_path / "x.pt")


# ---- the workflow -------------------------------------------------------------------------------
PAPER_TARGETS = ["results/data/bert/wiki_books/bin/train.pt", "results/data/glue/mrpc/bin/train.pt",
                 "results/data/glue/rte/bin/train.pt"]


@pytest.mark.medium
def test_paper_config_plans_the_real_chain(tmp_path):
    workdir = workflow_copy(tmp_path)
    out = snakemake(workdir, "-n", *PAPER_TARGETS, "--configfile", "config/config.yaml").stdout
    for rule in ("prepare_wikipedia", "prepare_books", "split_sentences", "tokenize", "split_bert_documents",
                 "bpe_learn", "bpe_apply", "binarize_bert", "extract_archive", "prepare_glue",
                 "bpe_apply_glue", "binarize_glue"):
        assert f"rule {rule}:" in out, rule
    for name in ("enwiki-latest-pages-articles.xml.bz2", "RTE.zip", "msr_paraphrase_train.txt", "mrpc_dev_ids.tsv"):
        assert f"output: resources/verified/{name}" in out, name
    assert "results/data/bert/wiki_books/bpe30000/codes" in out


@pytest.mark.medium
def test_glue_task_must_name_a_bert_corpus(tmp_path):
    workdir = workflow_copy(tmp_path)
    cfg = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    cfg["glue"]["rte"]["bert_corpus"] = "wiki"
    (workdir / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(workdir, "-n", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert (proc.stdout + proc.stderr).splitlines() == ["config: glue.rte.bert_corpus: 'wiki' is not a BERT corpus", "",
                                                        "  bert_corpora: mono"]


@pytest.mark.slow
def test_demo_bert_data_chain_builds(tmp_path):
    workdir = workflow_copy(tmp_path)
    targets = ["results/data/bert/mono/bin/train.pt", "results/data/glue/mrpc/bin/dev.pt",
               "results/data/glue/rte/bin/dev.pt"]
    snakemake(workdir, "--cores", "2", *targets)
    cfg = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    bert, results = cfg["bert_corpora"]["mono"], workdir / "results/data"
    vocab = Dictionary.load(results / "bert/mono/bin/dict.txt")
    assert vocab.symbols[-1] == MASK
    train, valid = (MonoData.load(results / f"bert/mono/bin/{s}.pt") for s in ("train", "valid"))
    # documents split ratio:1 at random: the valid share is near 1/(ratio+1), never empty
    share = 1 / (bert["valid_ratio"] + 1)
    assert train.n_docs + valid.n_docs == bert["generator"]["n_docs"]
    assert 0.5 * share < valid.n_docs / bert["generator"]["n_docs"] < 1.5 * share
    # a binarized sentence is its BPE'd, tokenized, lowercased text
    bpe_train = list(read_documents(results / f"bert/mono/bpe{bert['bpe_merges']}/train.txt"))
    assert [vocab.decode(s.tolist(), bpe_symbol=None) for s in train.doc_sentences(0)] == bpe_train[0]
    assert bpe_train[0][0] == bpe_train[0][0].lower()
    for task in ("mrpc", "rte"):
        dev = PairData.load(results / f"glue/{task}/bin/dev.pt")
        assert len(dev) == cfg["glue"][task]["generator"]["n_dev"] and set(dev.labels.tolist()) == {0, 1}
        assert (dev.s1 == UNK).float().mean() < 0.02


@pytest.mark.slow
def test_paper_chain_builds_from_fabricated_downloads(tmp_path):
    """config.yaml's BERT data with its URLs pointed at files in the real formats (file://, sha256
    pinned): download, unpack, Wikipedia + books, MRPC split by dev ids, RTE from its zip."""
    (tmp_path / "wf").mkdir()
    workdir, inputs = workflow_copy(tmp_path / "wf"), tmp_path / "inputs"
    files = {"dump": fabricate_dump(write(inputs / "enwiki.xml.bz2", "")),
             "msr": write(inputs / "msr_paraphrase_train.txt", MSR_TRAIN),
             "ids": write(inputs / "ids.tsv", "2108705\t2108831\n")}
    write(inputs / "books/one.txt", "A book begins.\n\nIt ends here.\n")
    write(inputs / "books/two.txt", "Another book. Short.\n")
    with zipfile.ZipFile(inputs / "RTE.zip", "w") as z:
        z.writestr("RTE/train.tsv", RTE_TRAIN)
        z.writestr("RTE/dev.tsv", RTE_DEV)
    files["rte"] = inputs / "RTE.zip"

    def pinned(key, **extra):
        return {"url": files[key].as_uri(), "sha256": hashlib.sha256(files[key].read_bytes()).hexdigest(), **extra}

    cfg = yaml.safe_load((workdir / "config/config.yaml").read_text())
    cfg["bert_corpora"]["wiki_books"].update(wikipedia=pinned("dump", file="enwiki-latest-pages-articles.xml.bz2"),
                                             books_dir=str(inputs / "books"), bpe_merges=40)
    cfg["glue"]["mrpc"].update(msr_train=pinned("msr"), dev_ids=pinned("ids", file="mrpc_dev_ids.tsv"))
    cfg["glue"]["rte"]["archive"] = pinned("rte")
    (workdir / "fabricated.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    snakemake(workdir, "--cores", "2", *PAPER_TARGETS, "results/data/glue/mrpc/bin/dev.pt", "--configfile", "fabricated.yaml")
    results = workdir / "results/data"
    sentences = lines(results / "bert/wiki_books/sentences.txt")
    assert sentences[:2] == ["Augusta Ada King, Countess of Lovelace (née Byron) was an English mathematician and writer.",
                             "She worked on Charles Babbage's proposed computer."]
    assert sentences[-5:] == ["A book begins.", "It ends here.", "", "Another book.", "Short."]
    train, valid = (MonoData.load(results / f"bert/wiki_books/bin/{s}.pt") for s in ("train", "valid"))
    assert train.n_docs + valid.n_docs == 4 and valid.n_docs >= 1
    assert [len(PairData.load(results / f"glue/mrpc/bin/{s}.pt")) for s in ("train", "dev")] == [2, 1]
    assert PairData.load(results / "glue/rte/bin/train.pt").labels.tolist() == [0, 1]
