"""The real corpora's preparation, run through the real rules on fabricated archives.

The archives have the real member names and file formats (IWSLT14's de-en.tgz with its
train.tags and TED XML files; WMT14's --icml17 training archives, test-full.tgz and dev.tgz
with their SGML), reached through file:// URLs pinned by sha256 in a config derived from
config/config.yaml. One Snakemake run prepares all four corpora (IWSLT14, WMT14, a local
corpus and an already tokenized local corpus) up to the binarized data; the tests then read
every stage's files. Expected texts are written out: they are what prepare-iwslt14.sh /
prepare-wmt14en2de.sh --icml17 produce for these inputs.
"""
import hashlib
import io
import tarfile
from pathlib import Path

import pytest
import yaml

from lnrepro import data

from workflow_helpers import ROOT, snakemake, workflow_copy

MERGES = {"iwslt14": 100, "wmt14": 100, "mine": 40, "mine_tok": 40}


def lines(text):
    return "".join(line + "\n" for line in text).encode("utf-8")


def make_tgz(path, members):
    """members: {name: list of lines}, written in the order given."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            payload = lines(content)
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read(path):
    return Path(path).read_text(encoding="utf-8").split("\n")[:-1]


def debpe(text):
    return [line.replace("@@ ", "") for line in text]


# ---- IWSLT14: de-en.tgz ----------------------------------------------------------------------
def talk_header(talk, de_title, en_title):
    """train.tags header lines: (de, en, kept text after tokenize+lowercase or None if dropped)."""
    return [
        (f"<url>http://www.ted.com/talks/lang/de/talk_{talk}.html</url>",
         f"<url>http://www.ted.com/talks/talk_{talk}.html</url>", None),
        ("<keywords>talks, Wissenschaft, Häuser</keywords>", "<keywords>talks, science, houses</keywords>", None),
        # other tags stay: the recipe only drops url, talkid and keywords lines
        ("<speaker>Jane Doe</speaker>", "<speaker>Jane Doe</speaker>",
         ("&lt; speaker &gt; jane doe &lt; / speaker &gt;", "&lt; speaker &gt; jane doe &lt; / speaker &gt;")),
        (f"<talkid>{talk}</talkid>", f"<talkid>{talk}</talkid>", None),
        (f"<title>Jane Doe: {de_title}</title>", f"<title>Jane Doe: {en_title}</title>",
         (f"jane doe : {de_title.lower()}", f"jane doe : {en_title.lower()}")),
        ("<description>TED Talk Subtitles and Transcript: Worte & Taten</description>",
         "<description>TED Talk Subtitles and Transcript: Words & deeds</description>",
         ("ted talk subtitles and transcript : worte &amp; taten",
          "ted talk subtitles and transcript : words &amp; deeds")),
    ]


def plain(i):
    return (f"Im Jahr {1900 + i} sahen wir {i} Häuser und Bäume am Fluss.",
            f"In the year {1900 + i} we saw {i} houses and trees by the river.",
            (f"im jahr {1900 + i} sahen wir {i} häuser und bäume am fluss .",
             f"in the year {1900 + i} we saw {i} houses and trees by the river ."))


def iwslt_train():
    """(de line, en line, (de, en) after tokenize + clean + lowercase, or None: dropped)."""
    rows = talk_header(1, "Die Welt der Häuser", "The world of houses")                # kept 1-3
    rows += [plain(i) for i in range(1, 20)]                                                # kept 4-22
    rows += [("Er sagte \"ja\" & sie sagte 'nein'.", "He said \"yes\" & she said 'no'.",   # kept 23: valid
              ("er sagte &quot; ja &quot; &amp; sie sagte &apos; nein &apos; .",
               "he said &quot; yes &quot; &amp; she said &apos; no &apos; ."))]
    rows += [("Ja.", "Yes, of course, that is exactly what I said.", None)]                 # ratio 11/2
    rows += [plain(i) for i in range(20, 40)]                                               # kept 24-43
    rows += [("", "", None)]                                                                # empty
    # train keeps ’ (only the XML sets get ’ -> '): a character tokenizer.perl pads
    rows += [("Das ist’s: Johns Buch, sagt er.", "It’s John’s book, he says.",           # kept 44
              ("das ist ’ s : johns buch , sagt er .", "it ’ s john ’ s book , he says ."))]
    rows += [("Das ist ÜBER alles wichtig.", "That is ABOVE all important.",               # kept 45
              ("das ist über alles wichtig .", "that is above all important ."))]
    rows += [(" ".join(["sehr"] * 180) + ".", " ".join(["very"] * 180) + ".", None)]      # 181 > 175
    rows += [plain(i) for i in range(40, 46)]                                               # kept 46-51
    rows += talk_header(2, "Bäume", "Trees")                                                # kept 52-54
    rows += [plain(i) for i in range(46, 71)]                                               # kept 55-79
    return rows


IWSLT_SETS = ["IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010",
              "IWSLT14.TED.tst2011", "IWSLT14.TED.tst2012"]
# second segment of each set: (de, en, de expected, en expected) after ’ -> ', tokenize, lowercase
IWSLT_SPECIAL = [
    ("Vielen Dank, Chris.", "Thank you so much, Chris.", "vielen dank , chris .", "thank you so much , chris ."),
    ("Das ist’s.", "It’s true.", "das ist &apos; s .", "it &apos;s true ."),
    ('Er sagte: "Nein".', 'He said: "No".', "er sagte : &quot; nein &quot; .", "he said : &quot; no &quot; ."),
    ("   Viel   Platz   ", "   Lots   of space   ", "viel platz", "lots of space"),
    ("Ende.", "The End.", "ende .", "the end ."),
]


def iwslt_xml(name, lang, segs):
    setid = name.split(".")[-1]
    head = '<srcset setid="iwslt2014_{0}" srclang="german">' if lang == "de" else \
        '<refset setid="iwslt2014_{0}" srclang="german" trglang="english" refid="ref">'
    return (['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>", head.format(setid),
             '<doc docid="535" genre="lectures">',
             "<url>http://www.ted.com/talks/al_gore.html</url>",
             "<description>TED Talk Subtitles and Transcript: a talk</description>",
             "<keywords>talks, climate</keywords>", "<talkid>535</talkid>",
             "<title>Al Gore: Averting the climate crisis</title>",
             '<reviewer href="http://www.ted.com/profiles/1">Someone</reviewer>',
             '<translator href="http://www.ted.com/profiles/2">Someone Else</translator>']
            + [f'<seg id="{i}"> {s} </seg>' for i, s in enumerate(segs, start=1)]
            + ["</doc>", "</srcset>" if lang == "de" else "</refset>", "</mteval>"])


def fabricate_iwslt(directory):
    train = iwslt_train()
    members = {}
    # the XML sets in another order than the recipe's: the test split must not follow the archive
    for k in reversed(range(len(IWSLT_SETS))):
        name = IWSLT_SETS[k]
        de, en = IWSLT_SPECIAL[k][:2]
        members[f"de-en/{name}.de-en.de.xml"] = iwslt_xml(name, "de", [f"Satz {k + 1} aus {name}.", de])
        members[f"de-en/{name}.de-en.en.xml"] = iwslt_xml(name, "en", [f"Sentence {k + 1} from {name}.", en])
    members["de-en/train.tags.de-en.de"] = [r[0] for r in train]
    members["de-en/train.tags.de-en.en"] = [r[1] for r in train]
    members["de-en/README"] = ["IWSLT 2014 German-English, fabricated for the tests"]
    return make_tgz(directory / "de-en.tgz", members)


def iwslt_expected():
    kept = [r[2] for r in iwslt_train() if r[2] is not None]
    valid = [pair for n, pair in enumerate(kept, start=1) if n % 23 == 0]
    train = [pair for n, pair in enumerate(kept, start=1) if n % 23 != 0]
    test = []
    for k, name in enumerate(IWSLT_SETS):
        test.append((f"satz {k + 1} aus {name.lower()} .", f"sentence {k + 1} from {name.lower()} ."))
        test.append(IWSLT_SPECIAL[k][2:])
    return train, valid, test


# ---- WMT14: the --icml17 archives, test-full.tgz and dev.tgz --------------------------------------
def wmt_plain(corpus, i):
    """(en, de, en tokenized, de tokenized): no normalization or -a effects."""
    en = f"{corpus} sentence {i} about the European Parliament."
    de = f"{corpus} Satz {i} über das Europäische Parlament."
    return en, de, en[:-1] + " .", de[:-1] + " ."


def wmt_corpora():
    """{corpus: [(en, de, en tok, de tok, dropped by clean-after-BPE)]} in recipe order."""
    europarl = [wmt_plain("Europarl", i) + (False,) for i in range(1, 100)]
    # line 100 of the concatenation (valid for the script's every-100th split) has a bad length ratio
    europarl.append(("Yes.", "Ja, das ist genau das, was ich im Parlament gesagt habe.", "Yes .",
                     "Ja , das ist genau das , was ich im Parlament gesagt habe .", True))
    crawl = [wmt_plain("Crawl", i) + (False,) for i in range(1, 61)]
    # normalize-punctuation (train only): „ “ -> ", runs of spaces -> one; then -a
    crawl[4] = ("\"The e-mail address\"  is   new.", "„Die E-Mail-Adresse“  ist   neu.",
                "&quot; The e @-@ mail address &quot; is new .",
                "&quot; Die E @-@ Mail @-@ Adresse &quot; ist neu .", False)
    # remove-non-printing-char (train only): a zero-width space becomes a space
    crawl[9] = ("Zero\u200bwidth spaces are here.", "Null\u200bbreite Leerzeichen sind hier.",
                "Zero width spaces are here .", "Null breite Leerzeichen sind hier .", False)
    crawl[19] = (" ".join(["word"] * 260) + ".", " ".join(["Wort"] * 260) + ".",
                 " ".join(["word"] * 260) + " .", " ".join(["Wort"] * 260) + " .", True)   # > 250
    commentary = [wmt_plain("Commentary", i) + (False,) for i in range(1, 51)]
    commentary[29] = ("No.", "Nein, das ist nicht das, was ich in der Kommission gesagt habe.", "No .",
                      "Nein , das ist nicht das , was ich in der Kommission gesagt habe .", True)
    return {"training/europarl-v7.de-en": europarl, "commoncrawl.de-en": crawl,
            "training/news-commentary-v9.de-en": commentary}


def wmt_train_rows():
    return [r for corpus in wmt_corpora().values() for r in corpus]


# newstest2014: (en source, de reference, en tokenized, de tokenized); not normalized, not cleaned
WMT_TEST = [
    ("Gutach: Increased safety for pedestrians", "Gutach: Noch mehr Sicherheit für Fußgänger",
     "Gutach : Increased safety for pedestrians", "Gutach : Noch mehr Sicherheit für Fußgänger"),
    ("He said „no“ to the E-mail.", "Er sagte „Nein“ zur E-Mail.",
     "He said „ no “ to the E @-@ mail .", "Er sagte „ Nein “ zur E @-@ Mail ."),
    ("Yes.", "Ja, das ist genau das, was ich gesagt habe, wirklich.",
     "Yes .", "Ja , das ist genau das , was ich gesagt habe , wirklich ."),
    ("It’s John’s car.", "Das ist Johns Auto.", "It &apos;s John &apos;s car .", "Das ist Johns Auto ."),
]
# newstest2013, the valid set (Xiong et al. A.1): as the test set, then cleaned after BPE like train
WMT_VALID = [wmt_plain("Newstest", i) + (False,) for i in range(1, 4)]
WMT_VALID[1] = ("It’s the „E-mail“ about the European Parliament.",
                "Die „E-Mail“ über das Europäische Parlament.",
                "It &apos;s the „ E @-@ mail “ about the European Parliament .",
                "Die „ E @-@ Mail “ über das Europäische Parlament .", False)
WMT_VALID.append(("No.", "Nein, das ist nicht das, was ich 2013 im Parlament gesagt habe.", "No .",
                  "Nein , das ist nicht das , was ich 2013 im Parlament gesagt habe .", True))


def sgm(kind, lang, segs, setid="newstest2014"):
    head = (f'<srcset setid="{setid}" srclang="any">' if kind == "src"
            else f'<refset setid="{setid}" srclang="any" trglang="{lang}">')
    out = [head, '<doc sysid="ref" docid="1012-bbc" genre="news" origlang="en">', "<p>"]
    out += [f'<seg id="{i}">{s}</seg>' for i, s in enumerate(segs, start=1)]
    return out + ["</p>", "</doc>", "</srcset>" if kind == "src" else "</refset>"]


def sgm_set(pattern, setid, rows):
    """The recipe's direction (en src, de ref) of a set and, as in the real archives, the other
    direction's files (de src, en ref) with other text."""
    wrong = ["WRONG FILE"] * len(rows)
    return {pattern.format("src", "en"): sgm("src", "en", [r[0] for r in rows], setid),
            pattern.format("ref", "de"): sgm("ref", "de", [r[1] for r in rows], setid),
            pattern.format("src", "de"): sgm("src", "de", wrong, setid),
            pattern.format("ref", "en"): sgm("ref", "en", wrong, setid)}


def fabricate_wmt(directory):
    corpora = wmt_corpora()
    names = {"training/europarl-v7.de-en": "training-parallel-europarl-v7.tgz",
             "commoncrawl.de-en": "training-parallel-commoncrawl.tgz",
             "training/news-commentary-v9.de-en": "training-parallel-nc-v9.tgz"}
    archives = []
    for corpus, rows in corpora.items():
        members = {f"{corpus}.de": [r[1] for r in rows], f"{corpus}.en": [r[0] for r in rows]}
        other = corpus.replace("de-en", "fr-en")  # the real archives hold other pairs too
        members[f"{other}.fr"] = ["Une phrase."]
        archives.append(make_tgz(directory / names[corpus], members))
    archives.append(make_tgz(directory / "test-full.tgz",
                             sgm_set("test-full/newstest2014-deen-{}.{}.sgm", "newstest2014", WMT_TEST)))
    # dev.tgz names its sets without the pair and holds other years too
    dev = {**sgm_set("dev/newstest2012-{}.{}.sgm", "newstest2012", [("WRONG YEAR", "FALSCHES JAHR")] * 3),
           **sgm_set("dev/newstest2013-{}.{}.sgm", "newstest2013", WMT_VALID)}
    archives.append(make_tgz(directory / "dev.tgz", dev))
    return archives


# ---- local corpora ------------------------------------------------------------------------------
LOCAL = {
    "train": [(f"Das Haus Nummer {i} ist klein.", f"The house number {i} is small.") for i in range(1, 31)]
    + [('Hallo, "Welt"!', 'Hello, "world"!'), ("Nein.", "No, this is really not what I wanted at all.")],
    "valid": [("Das Haus ist groß.", "The house is big."), ("Ja.", "Yes, that is what the valid set says.")],
    "test": [("Das ist's.", "That's it."), ("Ein E-Mail-Test.", "An e-mail test.")],
}
# already tokenized (Moses-escaped) text: copied as it is, no escaping of its own "&"
LOCAL_TOK = {
    "train": [("a &apos; b & c", "x &amp; y & z")]
    + [(f"das haus nummer {i} ist klein .", f"the house number {i} is small .") for i in range(1, 40)]
    + [("nein .", "no , this is really not what i wanted at all .")],
    "test": [("das ist &apos; s .", "that &apos;s it .")],
}


def write_local(directory, name, splits):
    files = {}
    for split, pairs in splits.items():
        files[split] = {}
        for side, index in (("src", 0), ("tgt", 1)):
            path = directory / f"{name}.{split}.{side}"
            path.write_bytes(lines(p[index] for p in pairs))
            files[split][side] = str(path)
    return files


# ---- one config, one Snakemake run ---------------------------------------------------------------
def paper_config():
    """config/config.yaml's corpora, models and defaults; one run (the schema wants one, no job
    trains it) and no figures. Its optional sections (probes, claims, ...) name runs: left out."""
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return {"corpora": paper["corpora"], "models": paper["models"], "train_defaults": paper["train_defaults"],
            "runs": {"prepare_only": {"corpus": "iwslt14"}}, "figures": {}}


def pin_archives(corpus, archives):
    """The config's archives, each replaced by the fabricated file of the same name."""
    assert [a["url"].rsplit("/", 1)[-1] for a in corpus["archives"]] == [a.name for a in archives]
    corpus["archives"] = [{"url": a.as_uri(), "sha256": sha256(a)} for a in archives]


def derived_config(de_en, wmt_archives, local_files, local_tok_files):
    cfg = paper_config()
    iwslt, wmt = cfg["corpora"]["iwslt14"], cfg["corpora"]["wmt14"]
    pin_archives(iwslt, [de_en])
    pin_archives(wmt, wmt_archives)
    iwslt["bpe_merges"], wmt["bpe_merges"] = MERGES["iwslt14"], MERGES["wmt14"]
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
    cfg = derived_config(fabricate_iwslt(inputs), fabricate_wmt(inputs),
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
    assert not list((workdir / "logs/data/mine_tok").glob("tokenize.*"))
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
