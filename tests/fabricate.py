"""Fabricated downloads in the real formats: IWSLT14's de-en.tgz, WMT14's --icml17 archives,
test-full.tgz and dev.tgz, local parallel files; with the text each recipe should make of them.
Shared by tests/test_real_corpora.py (data preparation) and tests/test_paper_config.py (the
paper configuration end to end)."""
import gzip
import hashlib
import io
import tarfile
from pathlib import Path

def lines(text):
    return "".join(line + "\n" for line in text).encode("utf-8")


def make_tgz(path, members):
    """members: {name: list of lines}, written in the order given. The same members give the same
    bytes (gzip's header time 0), so two corpora sharing an archive pin one sha256."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
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


ICML17 = ["training/europarl-v7.de-en", "commoncrawl.de-en", "training/news-commentary-v9.de-en"]


def archive_of(corpus):
    """The archive a training corpus comes in: news-commentary-vN in training-parallel-nc-vN.tgz."""
    if "news-commentary-" in corpus:
        return f"training-parallel-nc-{corpus.split('news-commentary-')[1].split('.')[0]}.tgz"
    return {"training/europarl-v7.de-en": "training-parallel-europarl-v7.tgz",
            "commoncrawl.de-en": "training-parallel-commoncrawl.tgz"}[corpus]


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


def fabricate_wmt(directory, rows=None, train_corpora=ICML17):
    """The WMT14 archives; `rows`: only the first rows of each training corpus (a cheaper build);
    `train_corpora`: another news-commentary version (Transformer-Clinic's v12) holds v9's rows."""
    pairs = list(wmt_corpora().values())
    corpora = {corpus: rows_[:rows] for corpus, rows_ in zip(train_corpora, pairs)}
    archives = []
    for corpus, rows in corpora.items():
        members = {f"{corpus}.de": [r[1] for r in rows], f"{corpus}.en": [r[0] for r in rows]}
        other = corpus.replace("de-en", "fr-en")  # the real archives hold other pairs too
        members[f"{other}.fr"] = ["Une phrase."]
        archives.append(make_tgz(directory / archive_of(corpus), members))
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


def pin_wmt_corpora(corpora, directory, rows=None):
    """Every WMT14-source corpus of a config (Xiong's wmt14, Liu's wmt14_clinic) pinned to fabricated
    archives of its own training corpora; the archives they share are the same bytes."""
    for corpus in corpora.values():
        if corpus["source"] == "wmt14":
            pin_archives(corpus, fabricate_wmt(directory, rows, corpus["train_corpora"]))


def pin_archives(corpus, archives):
    """The config's archives, each replaced by the fabricated file of the same name."""
    assert [a["url"].rsplit("/", 1)[-1] for a in corpus["archives"]] == [a.name for a in archives]
    corpus["archives"] = [{"url": a.as_uri(), "sha256": sha256(a)} for a in archives]
