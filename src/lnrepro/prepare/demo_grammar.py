"""The demo's German/English grammar: translation pairs, documents and sentence pairs, deterministically.

One small synchronous grammar draws a *meaning* (clauses, noun phrases, adverbials) and
realises it in German and in English, so a translation is a deterministic function of the
source. The surface carries what the real preprocessing has to cope with: case, punctuation,
quotes, apostrophes, hyphens, locale-specific numbers, umlauts/ß, productive compounds,
V2 / verb-final word order, separable verbs and adjective agreement. A difficulty profile
(``deen`` small, ``ende`` about twice the vocabulary and longer) selects how much of it is used.
"""
import copy
import re
import random
import zlib
from collections import namedtuple

# ---------------------------------------------------------------- lexicon (German first)
# Tables are ordered: the small profile uses only the first half of each.
PERSONS = """Mann m es man; Frau f - woman; Kind n es child; Arzt m es doctor; Lehrer m s teacher
Mädchen n s girl; Bäcker m s baker; Koch m s cook; Fahrer m s driver; Künstler m s artist; Freund m es friend
Großmutter f - grandmother; Vater m s father; Mutter f - mother; Bruder m s brother; Schwester f - sister
Sänger m s singer; Maler m s painter; Kellnerin f - waitress; Richter m s judge; Ingenieur m s engineer
Tante f - aunt; Onkel m s uncle; Sohn m es son; Tochter f - daughter; Chef m s boss; Bürgermeister m s mayor
Professorin f - professor; Nachbarin f - neighbour; Großvater m s grandfather; Tänzerin f - dancer
Musiker m s musician; Verkäuferin f - saleswoman; Schüler m s pupil"""
ANIMALS = """Hund m dog; Katze f cat; Pferd n horse; Vogel m bird; Maus f mouse; Kuh f cow; Schaf n sheep; Ente f duck
Fuchs m fox; Esel m donkey; Ziege f goat; Frosch m frog; Eichhörnchen n squirrel; Igel m hedgehog
Papagei m parrot; Schildkröte f tortoise; Huhn n chicken; Schwein n pig"""
# de gender plural en [en-plural]; '+' marks heads for productive compounds
THINGS = """Auto n Autos car; Fahrrad n Fahrräder bicycle; Schlüssel+ m Schlüssel key; Tasche f Taschen bag
Tisch+ m Tische table; Stuhl+ m Stühle chair; Lampe+ f Lampen lamp; Uhr+ f Uhren clock; Tür+ f Türen door
Fenster+ n Fenster window; Bild n Bilder picture; Apfel m Äpfel apple; Kuchen m Kuchen cake
Flasche f Flaschen bottle; Glas n Gläser glass; Messer n Messer knife knives; Ball m Bälle ball
Geschenk n Geschenke present; Computer m Computer computer; Koffer m Koffer suitcase; Schuh m Schuhe shoe
Mantel m Mäntel coat; Hut m Hüte hat; Blume f Blumen flower; Kamera f Kameras camera; Teller m Teller plate
Tasse+ f Tassen cup; Löffel m Löffel spoon; Hemd n Hemden shirt; Kleid n Kleider dress; Bett+ n Betten bed
Schrank+ m Schränke cupboard; Spiegel m Spiegel mirror; Kerze f Kerzen candle; Paket n Pakete parcel
Bleistift m Bleistifte pencil; Foto n Fotos photo; Fahrkarte f Fahrkarten ticket; Teppich+ m Teppiche carpet
Regenschirm m Regenschirme umbrella; Topf m Töpfe pot; Kissen n Kissen cushion; Gitarre f Gitarren guitar"""
READABLE = """Buch+ n Bücher book; Brief m Briefe letter; Zeitung+ f Zeitungen newspaper; E-Mail f E-Mails e-mail
Karte+ f Karten map; Gedicht n Gedichte poem; Roman m Romane novel; Zeitschrift f Zeitschriften magazine
Rechnung f Rechnungen bill; Bericht m Berichte report; Nachricht f Nachrichten message
Geschichte f Geschichten story stories; Speisekarte f Speisekarten menu"""
# de gender en de-preposition en-preposition
PLACES = """Stadt f city in in; Garten+ m garden in in; Park m park in in; Küche+ f kitchen in in
Schule f school in at; Bibliothek+ f library in in; Bahnhof m station an at; Markt m market auf at
Straße f street auf on; Brücke f bridge auf on; Büro+ n office in in; Dorf n village in in
Museum n museum in in; Hotel n hotel in in; Restaurant n restaurant in in; Kino n cinema in at
Strand m beach an on; See m lake an at; Berg m mountain auf on; Insel f island auf on; Zimmer+ n room in in
Krankenhaus n hospital in in; Flughafen m airport an at; Hafen m harbour in in; Schloss n castle in in
Theater n theatre in at; Supermarkt m supermarket in in; Bäckerei f bakery in at
Universität f university an at; Wald m forest in in; Rathaus n town_hall in at"""
MODIFIERS = """Stadt city; Haus house; Schul school; Küchen kitchen; Garten garden; Kinder children's; Hotel hotel
Wohn living; Berg mountain; Wasser water; Bahnhofs station; Kirchen church; Winter winter; Sommer summer
Familien family; Holz wooden; Glas glass; Büro office; Morgen morning; Kaffee coffee"""
IDIOMS = {"Haustür": "front door", "Kindergarten": "kindergarten"}
# infinitive ('|' = separable) 3sg participle aux frame | en base past participle.
# frame: object classes T thing R readable P person A animal L place, '-' none, D dative person,
# a = animal subjects allowed, $ price, ~ distance, > English 'to'-dative.
VERBS = """lesen liest gelesen h R read read read; schreiben schreibt geschrieben h R write wrote written
kaufen kauft gekauft h T$ buy bought bought; verkaufen verkauft verkauft h T$ sell sold sold
finden findet gefunden h TAa find found found; suchen sucht gesucht h TPAa look_for looked_for looked_for
sehen sieht gesehen h TPAa see saw seen; öffnen öffnet geöffnet h T open opened opened
reparieren repariert repariert h T repair repaired repaired; an|rufen ruft angerufen h P call called called
mit|bringen bringt mitgebracht h T bring_along brought_along brought_along
besuchen besucht besucht h PL visit visited visited; treffen trifft getroffen h P meet met met
ein|laden lädt eingeladen h P invite invited invited; füttern füttert gefüttert h A feed fed fed
geben gibt gegeben h DT give gave given; zeigen zeigt gezeigt h DT show showed shown
vor|lesen liest vorgelesen h DR> read read read; schlafen schläft geschlafen h -a sleep slept slept
arbeiten arbeitet gearbeitet h - work worked worked; lachen lacht gelacht h - laugh laughed laughed
warten wartet gewartet h -a wait waited waited; spielen spielt gespielt h -a play played played
laufen läuft gelaufen s -a~ run ran run; schwimmen schwimmt geschwommen s -a~ swim swam swum
kochen kocht gekocht h - cook cooked cooked; an|kommen kommt angekommen s -a arrive arrived arrived
ein|schlafen schläft eingeschlafen s -a fall_asleep fell_asleep fallen_asleep
singen singt gesungen h -a sing sang sung; vergessen vergisst vergessen h T forget forgot forgotten
malen malt gemalt h TA paint painted painted; lieben liebt geliebt h PAa love loved loved
tragen trägt getragen h T carry carried carried; verlieren verliert verloren h T lose lost lost
brauchen braucht gebraucht h T need needed needed; holen holt geholt h T fetch fetched fetched
waschen wäscht gewaschen h TA wash washed washed; an|schauen schaut angeschaut h TPAa look_at looked_at looked_at
bestellen bestellt bestellt h T$ order ordered ordered; drucken druckt gedruckt h R print printed printed
fotografieren fotografiert fotografiert h TPAL photograph photographed photographed
ein|packen packt eingepackt h T pack packed packed; beschreiben beschreibt beschrieben h TPL describe described described
übersetzen übersetzt übersetzt h R translate translated translated; fragen fragt gefragt h P ask asked asked
unterschreiben unterschreibt unterschrieben h R sign signed signed; begrüßen begrüßt begrüßt h PAa greet greeted greeted
kennen kennt gekannt h PL know knew known; ab|holen holt abgeholt h PT collect collected collected
heiraten heiratet geheiratet h P marry married married; unterstützen unterstützt unterstützt h P support supported supported
loben lobt gelobt h PA praise praised praised; vermissen vermisst vermisst h PAa miss missed missed
streicheln streichelt gestreichelt h A stroke stroked stroked; verlassen verlässt verlassen h L leave left left
erreichen erreicht erreicht h L reach reached reached; putzen putzt geputzt h TL clean cleaned cleaned
schicken schickt geschickt h DT send sent sent; leihen leiht geliehen h DT lend lent lent
empfehlen empfiehlt empfohlen h DT> recommend recommended recommended; bringen bringt gebracht h DT bring brought brought
fahren fährt gefahren s -~ drive drove driven; reisen reist gereist s -~ travel travelled travelled
wandern wandert gewandert s -~ hike hiked hiked; weinen weint geweint h - cry cried cried
auf|stehen steht aufgestanden s -a get_up got_up got_up; bleiben bleibt geblieben s -a stay stayed stayed
frühstücken frühstückt gefrühstückt h - have_breakfast had_breakfast had_breakfast
zurück|kommen kommt zurückgekommen s -a come_back came_back come_back; träumen träumt geträumt h -a dream dreamt dreamt
lernen lernt gelernt h - learn learned learned; feiern feiert gefeiert h - celebrate celebrated celebrated
tanzen tanzt getanzt h - dance danced danced; wohnen wohnt gewohnt h -a live lived lived"""
ADJECTIVES = """groß big; klein small; alt old; neu new; jung young; schön beautiful; rot red; blau blue; grün green
schwarz black; weiß white; teuer:teur expensive; billig cheap; schnell fast; müde tired; glücklich happy
traurig sad; freundlich friendly; klug clever; berühmt famous; bekannt well-known; heiß hot; kalt cold
laut loud; gelb yellow; langsam slow; hell bright; dunkel:dunkl dark; warm warm; lang long; kurz short
reich rich; arm poor; stark strong; schwach weak; hübsch pretty; hässlich ugly; süß sweet; sauer:saur sour
nass wet; trocken dry; sauber clean; schmutzig dirty; leer empty; voll full; schwer heavy; leicht light
wichtig important; seltsam strange; ruhig calm; modern modern; gemütlich cosy; höflich polite
fleißig hard-working; neugierig curious; ehrlich honest; lustig funny; riesig huge; winzig tiny
hungrig hungry; durstig thirsty; mutig brave; nervös nervous"""
# time adverbs: class P past (forces perfect; English simple past), F future, N neutral (D: dates, clock times)
TIMES = """heute today N; morgen tomorrow F; gestern yesterday P; jetzt now N; bald soon F; neulich recently P
letzte_Woche last_week P; nächste_Woche next_week F; heute_Abend tonight N; letztes_Jahr last_year P
am_Wochenende at_the_weekend N; übermorgen the_day_after_tomorrow F"""
FREQS = "oft often; immer always; manchmal sometimes; selten rarely; meistens usually; nie never"
MANNERS = """langsam slowly; schnell quickly; leise quietly; sorgfältig carefully; geduldig patiently
fröhlich cheerfully; heimlich secretly; allein alone; laut loudly; ruhig calmly"""
NAMES = """Anna Tom Lukas Jürgen Sören Maria Jonas Felix Grete Klaus Mia Paul Lena Max Emma Björn
Käthe Jörg Ute Heinz Fritz Moritz Lotte Günther Hans Lisa Ben Sophie Niklas Greta Jens Ines"""
SURNAMES = "Müller Schäfer Weiß Krüger Schröder Köhler Meier Fischer Wagner Becker Hoffmann Schulz Vogel Lange Groß Bäcker"
TITLES = [("Frau", "Frau", "Mrs"), ("Herr", "Herrn", "Mr"), ("Dr.", "Dr.", "Dr.")]  # nominative, oblique, en
DAYS = list(zip("Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag".split(),
                "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()))
MONTHS = list(zip("Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split(),
                  "January February March April May June July August September October November December".split()))
SUBORD = "weil because; wenn if; obwohl although; während while; bevor before; nachdem after"
BELIEF = "glauben glaubt believes; wissen weiß knows; hoffen hofft hopes; denken denkt thinks; hören hört hears; bemerken bemerkt notices"
SPEECH = "sagt says .; fragt asks ?; ruft shouts !; flüstert whispers .; antwortet answers ."
GREETINGS = ["Wie geht's?|How are you?", "Das ist toll!|That's great!", "Ich weiß es nicht.|I don't know.",
             "Gibt's hier Kaffee?|Is there coffee here?", "Geht's dir gut?|Are you okay?", "Wir sind spät dran!|We're late!"]

Noun = namedtuple("Noun", "de g pl en enpl cat gen pde pen head")
Verb = namedtuple("Verb", "inf pres prefix part aux objs dat anim price dist to en past pp")
Adj = namedtuple("Adj", "de stem en")
Word = namedtuple("Word", "de en cls")


def _rows(text):
    return [[f.replace("_", " ") for f in row.split()] for row in re.split(r"[;\n]", text) if row.strip()]


def _plural_en(w):
    if w.endswith(("s", "sh", "ch", "x", "z")):
        return w + "es"
    return w[:-1] + "ies" if w.endswith("y") and w[-2] not in "aeiou" else w + "s"


def _en3(base):
    """3rd person singular of a (possibly multi-word) English verb: inflect the first word."""
    w, _, rest = base.partition(" ")
    w = {"have": "has", "go": "goes", "do": "does"}.get(w) or (w + "es" if w.endswith("o") else _plural_en(w))
    return (w + " " + rest).strip()


def _noun(row, cat):
    head = row[0].endswith("+")
    de = row[0].rstrip("+")
    if cat == "P":
        return Noun(de, row[1], None, row[3], None, cat, "" if row[2] == "-" else row[2], "", "", False)
    if cat == "A":
        return Noun(de, row[1], None, row[2], None, cat, "", "", "", False)
    if cat == "L":
        return Noun(de, row[1], None, row[2], None, cat, "", row[3], row[4], head)
    return Noun(de, row[1], row[2], row[3], row[4] if len(row) > 4 else _plural_en(row[3]), cat, "", "", "", head)


def _verb(r):
    fr, prefix, inf = r[4], "", r[0]
    if "|" in inf:
        prefix, inf = inf.split("|")[0], inf.replace("|", "")
    return Verb(inf, r[1], prefix, r[2], r[3], "".join(ch for ch in fr if ch in "TRPAL"), "D" in fr,
                "a" in fr, "$" in fr, "~" in fr, ">" in fr, r[5], r[6], r[7])


def _half(xs, frac):
    return xs[:max(1, round(len(xs) * frac))]


class Lexicon:
    """The lexicon restricted to a fraction of every table (the profile's vocabulary size)."""

    def __init__(self, frac):
        h = lambda rows: _half(rows, frac)
        self.nouns = {"P": [_noun(r, "P") for r in h(_rows(PERSONS))], "A": [_noun(r, "A") for r in h(_rows(ANIMALS))],
                      "T": [_noun(r, "T") for r in h(_rows(THINGS))], "R": [_noun(r, "R") for r in h(_rows(READABLE))],
                      "L": [_noun(r, "L") for r in h(_rows(PLACES))]}
        self.heads = {c: [n for n in ns if n.head] for c, ns in self.nouns.items()}
        self.mods = h(_rows(MODIFIERS))
        self.verbs = [_verb(r) for r in h(_rows(VERBS))]
        self.adjs = [Adj(r[0].split(":")[0], r[0].split(":")[-1].rstrip("e") if r[0].endswith("e") else r[0].split(":")[-1], r[1])
                     for r in h(_rows(ADJECTIVES))]
        self.times = [Word(*r) for r in h(_rows(TIMES))]
        self.freqs = [Word(r[0], r[1], "") for r in h(_rows(FREQS))]
        self.manners = [Word(r[0], r[1], "") for r in h(_rows(MANNERS))]
        self.names, self.surnames = h(NAMES.split()), h(SURNAMES.split())
        self.subord = [Word(r[0], r[1], "") for r in h(_rows(SUBORD))]
        self.belief = h(_rows(BELIEF))
        self.speech = h(_rows(SPEECH))
        self.greetings = h(GREETINGS)
        self._compounds = {}

    def compound(self, mod, head):
        key = (mod[0], head.de)
        if key not in self._compounds:
            de = mod[0] + head.de.lower()
            en = IDIOMS.get(de, mod[1] + " " + head.en)
            pl = None if head.pl is None else mod[0] + head.pl.lower()
            self._compounds[key] = head._replace(de=de, pl=pl, en=en, enpl=en.rsplit(" ", 1)[0] + " " + (head.enpl or ""))
        return self._compounds[key]


# deen: IWSLT-like (small, shorter); ende: WMT-like (2x vocabulary, longer, more constructions)
PROFILES = {
    "deen": dict(frac=0.5, p_name=0.3, p_adj=0.25, max_adj=1, p_age=0.04, p_poss=0.08, p_rel=0.0, p_num=0.1,
                 p_compound=0.15, p_copula=0.08, p_time=0.4, p_front=0.4, p_freq=0.08, p_manner=0.08, p_place=0.35,
                 p_comp=0.04, p_measure=0.4, p_neg=0.12, p_question=0.1, p_excl=0.03, p_indef=0.4,
                 tenses={"pres": 0.55, "perf": 0.45}, p_sub_first=0.0, quotes=('"', '"'),
                 kinds={"simple": 0.6, "sub": 0.21, "dass": 0.05, "coord": 0.06, "speech": 0.06, "greet": 0.02}),
    "ende": dict(frac=1.0, p_name=0.25, p_adj=0.45, max_adj=2, p_age=0.06, p_poss=0.15, p_rel=0.15, p_num=0.12,
                 p_compound=0.25, p_copula=0.06, p_time=0.5, p_front=0.4, p_freq=0.12, p_manner=0.15, p_place=0.45,
                 p_comp=0.1, p_measure=0.5, p_neg=0.12, p_question=0.08, p_excl=0.02, p_indef=0.4,
                 tenses={"pres": 0.4, "perf": 0.35, "fut": 0.1, "can": 0.05, "must": 0.05, "should": 0.05},
                 p_sub_first=0.3, quotes=("\u201c", "\u201d"),
                 kinds={"simple": 0.3, "sub": 0.32, "dass": 0.1, "coord": 0.18, "speech": 0.08, "greet": 0.02}),
}
_LEX = {}


def _lexicon(frac):
    if frac not in _LEX:
        _LEX[frac] = Lexicon(frac)
    return _LEX[frac]


# ---------------------------------------------------------------- German morphology
CASE = {"nom": 0, "acc": 1, "dat": 2, "gen": 3}
DEF = {"m": "der den dem des".split(), "f": "die die der der".split(), "n": "das das dem des".split()}
INDEF = {"m": "ein einen einem eines".split(), "f": "eine eine einer einer".split(), "n": "ein ein einem eines".split()}
WEAK = {"m": "e en en en".split(), "f": "e e en en".split(), "n": "e e en en".split()}      # after der/die/das
MIXED = {"m": "er en en en".split(), "f": "e e en en".split(), "n": "es es en en".split()}  # after ein/kein
STRONG = {"m": "er en em en".split(), "f": "e e er er".split(), "n": "es es em en".split()}  # after 'Annas'
PLURAL = "e e en er".split()
CONTRACT = {("in", "dem"): "im", ("an", "dem"): "am", ("zu", "dem"): "zum", ("zu", "der"): "zur"}
NUMWORDS = {2: ("zwei", "two"), 3: ("drei", "three"), 4: ("vier", "four"), 5: ("fünf", "five"), 6: ("sechs", "six")}
MODAL = {"fut": ("wird", "will"), "can": ("kann", "can"), "must": ("muss", "must"), "should": ("soll", "should")}
NEG_EN = {"is": ("is not", "isn't"), "was": ("was not", "wasn't"), "has": ("has not", "hasn't"),
          "does": ("does not", "doesn't"), "did": ("did not", "didn't"), "will": ("will not", "won't"),
          "can": ("cannot", "can't"), "must": ("must not", "mustn't"), "should": ("should not", "shouldn't")}


def _num(x, dec, lang):
    """Number with English separators (1,250.50) or German ones (1.250,50)."""
    s = f"{x:,.{dec}f}"
    return s.translate(str.maketrans(",.", ".,")) if lang == "de" else s


def _a_an(word):
    w = word.lower()
    if w[0].isdigit():
        return "an" if w[0] == "8" or re.match(r"1[18]\D", w) else "a"
    vowel = w[0] in "aeiou" and not w.startswith(("uni", "use", "eu", "one"))
    return "an" if vowel or w.startswith(("hour", "honest")) else "a"


def _genitive_name(name):
    return name + ("'" if name.endswith(("s", "ß", "x", "z")) else "s")


def de_np(np, case, kein=False):
    k = CASE[case]
    if np.get("name"):
        first, title, last = np["name"]
        if not title:
            return _genitive_name(first) if k == 3 else first
        t = title[0] if k == 0 else title[1]
        return f"{t} {_genitive_name(last) if k == 3 else last}"
    n, adjs = np["n"], np["adjs"]
    if np["det"] == "num":
        noun = n.pl + ("n" if k == 2 and not n.pl.endswith(("n", "s")) else "")
        return " ".join([_count(np["count"], "de")] + [a.stem + PLURAL[k] for a in adjs] + [noun])
    poss = np.get("poss")
    if poss and poss.get("name"):
        words, table = [de_np(poss, "gen")], STRONG
    elif np["det"] == "def":
        words, table = [DEF[n.g][k]], WEAK
    else:
        words, table = [("k" if kein else "") + INDEF[n.g][k]], MIXED
    words += [a.stem + table[n.g][k] for a in adjs] + [n.de + (n.gen if k == 3 else "")]
    if poss and not poss.get("name"):
        words.append(de_np(poss, "gen"))
    if np.get("rel"):  # relative clause: pronoun agrees in gender, verb last, commas around
        words += [",", DEF[n.g][0], de_clause(np["rel"], "rel"), ","]
    return " ".join(words)


def en_np(np):
    if np.get("name"):
        first, title, last = np["name"]
        return f"{title[2]} {last}" if title else first
    n, adjs = np["n"], [a.en for a in np["adjs"]]
    if np["det"] == "num":
        return " ".join([_count(np["count"], "en")] + adjs + [n.enpl])
    head = " ".join(adjs + [n.en])
    poss = np.get("poss")
    if poss:
        words = [en_np(poss) + "'s", head]
    else:
        words = ["the" if np["det"] == "def" else _a_an(head), head]
    if np.get("rel"):
        words += ["who" if n.cat == "P" else "that", en_clause(np["rel"], rel=True)]
    return " ".join(words)


def _count(x, lang):
    if x in NUMWORDS:
        return NUMWORDS[x][lang == "en"]
    return _num(x, 0, lang)


def _pp_de(np):
    prep, art = np["n"].pde, de_np(np, "dat")
    first, _, rest = art.partition(" ")
    return f"{CONTRACT[(prep, first)]} {rest}" if (prep, first) in CONTRACT else f"{prep} {art}"


def de_verb(c):
    """(finite verb, clause-final verb parts) for the clause's tense."""
    v, t = c["verb"], c["tense"]
    if v is None:  # copula
        return ("ist", []) if t == "pres" else ("ist", ["gewesen"]) if t == "perf" else (MODAL[t][0], ["sein"])
    if t == "pres":
        return v.pres, [v.prefix] if v.prefix else []
    if t == "perf":
        return ("ist" if v.aux == "s" else "hat"), [v.part]
    return MODAL[t][0], [v.inf]


def de_middle(c, subj=True):
    """German middle field: subject, time, frequency, objects, negation, PPs, manner, predicate."""
    m = [de_np(c["subj"], "nom")] if subj else []
    if c["time"] and not c["front"]:
        m.append(c["time"].de)
    if c["freq"]:
        m.append(c["freq"].de)
    if c["dat"]:
        m.append(de_np(c["dat"], "dat"))
    neg = c["neg"]
    if c["obj"]:
        kein = neg and c["obj"].get("det") == "indef"  # 'kein Buch', not 'nicht ein Buch'
        m.append(de_np(c["obj"], "acc", kein=kein))
        neg = neg and not kein
    if c["measure"]:
        m.append(c["measure"][0])
    if neg:
        m.append("nicht")
    if c["comp"]:
        m.append("mit " + de_np(c["comp"], "dat"))
    if c["place"]:
        m.append(_pp_de(c["place"]))
    if c["manner"]:
        m.append(c["manner"].de)
    if c["pred"]:
        m.append(c["pred"].de)
    return m


def de_clause(c, order="v2"):
    """order: v2 (statement), v1 (question / after a fronted clause), sub (verb-final), rel."""
    fin, final = de_verb(c)
    if order in ("sub", "rel"):
        mid = de_middle(c, subj=order == "sub")
        v = c["verb"]
        vc = [v.prefix + fin] if c["tense"] == "pres" and v and v.prefix else final + [fin]
        return " ".join(mid + vc)
    mid = de_middle(c)
    if order == "v1":
        front = []
    elif c["front"] and c["time"]:
        front = [c["time"].de]
    else:
        front = [mid.pop(0)]
    return " ".join(front + [fin] + mid + final)


def en_vgroup(c, need_aux=False, contract=False, passive=False):
    """(auxiliary or None, main verb words); German perfect + past adverb -> English simple past."""
    v, t, neg = c["verb"], c["tense"], c["neg"]
    past = t == "perf" and c["time"] is not None and c["time"].cls in "PD"  # 'D': a dated point in time
    need_aux = need_aux or neg
    if v is None or passive:
        part = [v.pp] if passive else []
        aux, main = ("is", part) if t == "pres" else ("was", part) if past else \
            ("has", ["been"] + part) if t == "perf" else (MODAL[t][1], ["be"] + part)
    elif t == "pres":
        aux, main = ("does", [v.en]) if need_aux else (None, [_en3(v.en)])
    elif past:
        aux, main = ("did", [v.en]) if need_aux else (None, [v.past])
    elif t == "perf":
        aux, main = "has", [v.pp]
    else:
        aux, main = MODAL[t][1], [v.en]
    if neg:
        aux = NEG_EN[aux][contract]
    return aux, main


def en_clause(c, question=False, contract=False, passive=False, rel=False):
    aux, main = en_vgroup(c, question, contract, passive)
    first, second = (c["obj"], c["subj"]) if passive else (c["subj"], c["obj"])
    w = []
    if c["front"] and c["time"] and not question:
        w.append(c["time"].en + ("," if " " in c["time"].en else ""))
    subj = [] if rel else [en_np(first)]
    freq = [c["freq"].en] if c["freq"] else []
    w += ([aux] + subj if question else subj + ([aux] if aux else [])) + freq + main
    if c["pred"]:
        w.append(c["pred"].en)
    if c["dat"] and not c["verb"].to:
        w.append(en_np(c["dat"]))
    if second and not passive:
        w.append(en_np(second))
    if c["dat"] and c["verb"].to:
        w += ["to", en_np(c["dat"])]
    if passive:
        w += ["by", en_np(second)]
    if c["measure"]:
        w.append(c["measure"][1])
    if c["comp"]:
        w += ["with", en_np(c["comp"])]
    if c["place"]:
        w += [c["place"]["n"].pen, en_np(c["place"])]
    if c["manner"]:
        w.append(c["manner"].en)
    if c["time"] and not c["front"]:
        w.append(c["time"].en)
    return " ".join(w)


def _cap(s):
    return s[:1].upper() + s[1:]


def _join(words):
    """Join words; relative-clause commas attach left and a clause never ends in one."""
    return " ".join(words).replace(" ,", ",").rstrip(",")


# ---------------------------------------------------------------- meaning generator
class Grammar:
    """Draws sentence meanings (nested dicts) from a profile; realisers turn them into text."""

    def __init__(self, profile, rng, focus=None):
        self.p, self.r, self.focus = PROFILES[profile], rng, focus
        self.lex = _lexicon(self.p["frac"])
        self.kinds, self.kind_w = zip(*self.p["kinds"].items())
        self.tenses, self.tense_w = zip(*self.p["tenses"].items())

    def name(self):
        r = self.r
        if r.random() < 0.3:
            return (None, r.choice(TITLES), r.choice(self.lex.surnames))
        return (r.choice(self.lex.names), None, None)

    def noun(self, cat):
        r, lex = self.r, self.lex
        if lex.heads.get(cat) and r.random() < self.p["p_compound"]:
            mod, head = r.choice(lex.mods), r.choice(lex.heads[cat])
            if mod[1] != head.en:
                return lex.compound(mod, head)
        return r.choice(lex.nouns[cat])

    def np(self, cats, rel=False, count=False):
        r, p = self.r, self.p
        cat = r.choice(cats)
        if cat == "P" and r.random() < p["p_name"]:
            return {"name": self.focus if self.focus and r.random() < 0.5 else self.name()}
        np = {"n": self.noun(cat), "det": "indef" if r.random() < p["p_indef"] else "def", "adjs": []}
        if count and cat in "TR" and r.random() < p["p_num"]:
            np["det"], np["count"] = "num", r.choice([r.randint(2, 6), r.randint(7, 40), r.randint(11, 99) * 100])
        if r.random() < p["p_adj"]:
            np["adjs"] = r.sample(self.lex.adjs, r.randint(1, p["max_adj"]))
        elif cat == "P" and r.random() < p["p_age"]:
            age = r.randint(3, 95)
            np["adjs"] = [Adj(f"{age}-jährig", f"{age}-jährig", f"{age}-year-old")]
        if cat in "TR" and np["det"] != "num" and r.random() < p["p_poss"]:
            np["det"], np["poss"] = "def", {"name": self.name()} if r.random() < 0.5 else \
                {"n": r.choice(self.lex.nouns["P"]), "det": "def", "adjs": []}
        if rel and cat in "PA" and r.random() < p["p_rel"]:
            np["rel"] = self.clause(rel=True)
        return np

    def time(self):
        r, k = self.r, self.r.random()
        if k < 0.55:
            return r.choice(self.lex.times)
        if k < 0.68:
            de, en = r.choice(DAYS)
            return Word("am " + de, "on " + en, "D")
        if k < 0.8:
            if r.random() < 0.5:
                h = r.randint(1, 12)
                return Word(f"um {h} Uhr", f"at {h} o'clock", "D")
            hm = f"{r.randint(0, 23)}:{r.choice([10, 15, 20, 30, 45, 50]):02d}"
            return Word(f"um {hm} Uhr", "at " + hm, "D")
        if k < 0.9:
            y = r.randint(1950, 2019)
            return Word(f"im Jahr {y}", f"in {y}", "P")
        d, (mde, men) = r.randint(1, 28), r.choice(MONTHS)
        return Word(f"am {d}. {mde}", f"on {d} {men}", "D")

    def measure(self, v):
        """Price or distance phrase (German, English): the locale-specific number formats."""
        r = self.r
        if v.price:
            x, dec = r.choice([(r.randint(2, 99), 0), (r.randint(100, 9999), 0), (r.randint(1, 40) + r.choice([0.5, 0.99, 0.25]), 2)])
            return f"für {_num(x, dec, 'de')} Euro", f"for {_num(x, dec, 'en')} euros"
        x, dec = r.choice([(r.randint(2, 50), 0), (r.randint(5, 425) / 10, 1)])
        dec = dec if x != int(x) else 0
        return f"{_num(x, dec, 'de')} Kilometer", f"{_num(x, dec, 'en')} kilometres"

    def clause(self, rel=False, sub=False):
        r, p, lex = self.r, self.p, self.lex
        c = dict(verb=None, subj=None, dat=None, obj=None, place=None, time=None, freq=None, manner=None,
                 measure=None, comp=None, pred=None, neg=False, front=False, tense="pres")
        if not rel and r.random() < p["p_copula"]:
            c["subj"], c["pred"] = self.np("PAT"), r.choice(lex.adjs)
        else:
            v = c["verb"] = r.choice(lex.verbs)
            if not rel:
                c["subj"] = self.np("PA" if v.anim else "P", rel=not sub)
            c["dat"] = self.np("P") if v.dat else None
            c["obj"] = self.np(v.objs, count=not rel) if v.objs else None
            if (v.price or v.dist) and not rel and r.random() < p["p_measure"]:
                c["measure"] = self.measure(v)
            if not v.objs and r.random() < p["p_comp"]:
                c["comp"] = self.np("PA")
            if r.random() < p["p_manner"] and not rel:
                c["manner"] = r.choice(lex.manners)
        if r.random() < (0.5 if rel and not c["obj"] else 0 if rel else p["p_place"]):
            c["place"] = self.np("L")
        if rel:
            return c
        c["tense"] = r.choices(self.tenses, self.tense_w)[0]
        if r.random() < p["p_time"]:
            t = c["time"] = self.time()
            if t.cls == "P":
                c["tense"] = "perf"
            elif t.cls == "F" and c["tense"] == "perf":
                c["tense"] = "pres"
        if c["tense"] != "perf" and r.random() < p["p_freq"]:
            c["freq"] = r.choice(lex.freqs)
        num_obj = c["obj"] is not None and c["obj"].get("det") == "num"
        c["neg"] = r.random() < p["p_neg"] and not num_obj and not (c["freq"] and c["freq"].de == "nie")
        return c

    def sentence(self, statements_only=False, kind=None):
        r, p, lex = self.r, self.p, self.lex
        kind = kind or r.choices(self.kinds, self.kind_w)[0]
        if statements_only and kind in ("speech", "greet"):
            kind = "simple"
        s = {"kind": kind, "end": ".", "main": self.clause() if kind != "greet" else None}
        if kind == "simple" and not statements_only:
            x = r.random()
            s["end"] = "?" if x < p["p_question"] else "!" if x < p["p_question"] + p["p_excl"] else "."
        elif kind == "sub":
            s["conj"], s["sub"] = r.choice(lex.subord), self.clause(sub=True)
            s["sub_first"] = r.random() < p["p_sub_first"]
            if s["conj"].de == "nachdem":
                s["sub"]["tense"] = "perf"
            elif s["sub"]["tense"] == "fut":  # no 'if he will ...' in English
                s["sub"]["tense"] = "pres"
        elif kind == "dass":
            s["who"], s["belief"] = self.np("P"), r.choice(lex.belief)
        elif kind == "coord":
            s["conj"], s["second"] = r.choice(["und", "aber", ";"]), self.clause()
        elif kind in ("speech", "greet"):
            s["who"], s["colon"] = self.np("P"), r.random() < 0.5
            if kind == "greet":
                s["greet"] = r.choice(lex.greetings).split("|")
                s["end"] = s["greet"][0][-1]
                s["verb"] = next((v for v in lex.speech if v[2] == s["end"]), lex.speech[0])
            else:
                s["verb"] = r.choice(lex.speech)
                s["end"] = s["verb"][2]
        m = s["main"]
        if m and s["end"] == "?":
            m["neg"] = False  # keeps English questions simple (no 'does not X ...?')
        if m and m["time"] and s["end"] != "?" and not s.get("sub_first") and kind != "dass":
            m["front"] = r.random() < p["p_front"]
        return s


# ---------------------------------------------------------------- sentence realisers
def de_sentence(s):
    k, m = s["kind"], s["main"]
    if k == "sub":
        sub = s["conj"].de + " " + de_clause(s["sub"], "sub")
        if s["sub_first"]:  # a fronted clause fills the first position: verb comes next
            return _join([_cap(sub), ",", de_clause(m, "v1")]) + "."
        return _join([_cap(de_clause(m)), ",", sub]) + "."
    if k == "dass":
        return _join([_cap(de_np(s["who"], "nom")), s["belief"][1], ", dass", de_clause(m, "sub")]) + "."
    if k == "coord":
        sep = {"und": "und", "aber": ", aber", ";": ";"}[s["conj"]]
        return _join([_cap(de_clause(m)), sep, de_clause(s["second"])]).replace(" ;", ";") + "."
    text = _cap(_join([de_clause(m, "v1" if s["end"] == "?" else "v2")])) + s["end"] if m else s["greet"][0]
    if k == "simple":
        return text
    who = de_np(s["who"], "nom")
    if s["colon"]:
        return f"{_cap(who)} {s['verb'][0]}: „{text}“"
    return f"„{text.rstrip('.')}“, {s['verb'][0]} {who}."


def en_sentence(s, quotes=('"', '"'), passive=False):
    k, m = s["kind"], s["main"]
    if k == "sub":
        sub = s["conj"].en + " " + en_clause(s["sub"])
        if s["sub_first"]:
            return f"{_cap(sub)}, {en_clause(m, passive=passive)}."
        return f"{_cap(en_clause(m, passive=passive))} {sub}."
    if k == "dass":
        return f"{_cap(en_np(s['who']))} {s['belief'][2]} that {en_clause(m)}."
    if k == "coord":
        sep = {"und": " and ", "aber": ", but ", ";": "; "}[s["conj"]]
        return _cap(en_clause(m, passive=passive)) + sep + en_clause(s["second"]) + "."
    speech = k != "simple"  # direct speech is informal: English contracts there
    text = _cap(en_clause(m, s["end"] == "?", speech, passive)) + s["end"] if m else s["greet"][1]
    if k == "simple":
        return text
    (o, c), who = quotes, en_np(s["who"])
    if s["colon"]:
        return f"{_cap(who)} {s['verb'][1]}: {o}{text}{c}"
    return f"{o}{text[:-1] + ',' if text.endswith('.') else text}{c} {s['verb'][1]} {who}."


# ---------------------------------------------------------------- translation corpora
NOISE_RATE = 0.01
TEST_BUCKETS = 8  # an English sentence whose crc32 % 8 == 0 may only occur in test: no train/test overlap
_APPROX_TOK = re.compile(r"\d+(?:[.,:]\d+)*|[\w-]+|'\w*|[^\w\s]")  # close to Moses token counts


def _ntok(s):
    return len(_APPROX_TOK.findall(s))


def _pair(g):
    """One clean (german, english) pair, well inside the cleaning limits (length, ratio)."""
    while True:
        s = g.sentence()
        de, en = de_sentence(s), en_sentence(s, g.p["quotes"])
        a, b = _ntok(de), _ntok(en)
        if 5 <= min(a, b) and max(a, b) <= 80 and max(a, b) <= 1.35 * min(a, b):
            return de, en


def _noisy_pair(g):
    """A pair that Moses-style cleaning must drop: over-long, or with an extreme length ratio."""
    r = g.r
    kind = r.random()
    if kind < 0.4:  # several sentences glued into one line, > 175 tokens on both sides
        de, en = [], []
        while min(len(" ".join(de).split()), len(" ".join(en).split())) <= 185:
            d, e = _pair(g)
            de.append(d)
            en.append(e)
        return " ".join(de), " ".join(en)
    de, en = _pair(g)
    while min(len(de.split()), len(en.split())) < 10:
        de, en = _pair(g)
    sides = [de, en]
    side = r.randrange(2)
    if kind < 0.8:  # one side truncated to at most a quarter of its words
        words = sides[side].split()
        sides[side] = " ".join(words[:max(1, len(words) // 4)])
    else:  # a stage direction aligned with a full sentence
        sides[side] = r.choice([("(Applaus)", "(Lachen)", "..."), ("(Applause)", "(Laughter)", "...")][side])
    return tuple(sides)


def generate_translation(task, n, seed, split="train", with_noise_flags=False):
    """n (german, english) pairs for task 'deen' or 'ende'; ~1% noisy pairs in split 'train' only.

    With with_noise_flags, items are (german, english, is_noise)."""
    if task not in ("deen", "ende"):
        raise ValueError(f"not a translation task: {task}")
    r = random.Random(f"{task}/{split}/{seed}")
    g, out = Grammar(task, r), []
    while len(out) < n:
        if split == "train" and r.random() < NOISE_RATE:
            out.append((*_noisy_pair(g), True))
            continue
        de, en = _pair(g)
        if (zlib.crc32(en.encode()) % TEST_BUCKETS == 0) == (split == "test"):
            out.append((de, en, False))
    return out if with_noise_flags else [(de, en) for de, en, _ in out]


def generate_documents(n, seed, split="train"):
    """n English documents (lists of 3-12 sentences), each about one recurring person."""
    r = random.Random(f"mono/{split}/{seed}")
    g, docs = Grammar("ende", r), []
    for _ in range(n):
        g.focus = g.name()
        docs.append([en_sentence(g.sentence(), g.p["quotes"]) for _ in range(r.randint(3, 12))])
    return docs


# ---------------------------------------------------------------- sentence-pair tasks (GLUE formats)
SYNONYMS = dict(p.split(":") for p in """big:large buys:purchases bought:purchased present:gift happy:glad
quickly:rapidly often:frequently sometimes:occasionally picture:image tired:exhausted clever:smart small:little
calls:phones called:phoned city:town rich:wealthy famous:renowned strange:odd huge:enormous usually:normally
recently:lately sad:unhappy beautiful:lovely expensive:costly calmly:peacefully story:tale""".split())
HYPERNYMS = {"P": "person", "A": "animal", "T": "thing", "R": "text", "L": "place"}
FACTIVE = {"knows", "notices"}  # 'X knows that S' entails S; 'X believes that S' does not


def _synonyms(text, r):
    found = [w for w in SYNONYMS if re.search(rf"\b{w}\b", text)]
    for w in r.sample(found, min(len(found), r.randint(1, 2))):
        text = re.sub(rf"\b{w}\b", SYNONYMS[w], text)
    return re.sub(r"\b([Aa])n? ([\w-]+)", lambda m: (m[1] + _a_an(m[2])[1:]) + " " + m[2], text)  # a odd -> an odd


def _simple(c):
    return {"kind": "simple", "main": c, "end": "."}


def _change_number(g, m):
    """Change a count, price/distance or clock time; False when the clause has none."""
    if m["obj"] and m["obj"].get("det") == "num":
        m["obj"]["count"] += g.r.randint(1, 9)
    elif m["measure"]:
        old = m["measure"]
        while m["measure"] == old:
            m["measure"] = g.measure(m["verb"])
    elif m["time"] and re.search(r"\d", m["time"].en):
        old = m["time"]
        while m["time"].en == old.en or not re.search(r"\d", m["time"].en):
            m["time"] = g.time()
        m["time"] = m["time"]._replace(cls=old.cls)
    else:
        return False
    return True


def _mrpc_item(g, positive):
    r = g.r
    while True:
        s = g.sentence(statements_only=True, kind=r.choice(["simple", "simple", "sub", "coord"]))
        t, passive, syn = copy.deepcopy(s), False, False
        m, v = t["main"], t["main"]["verb"]
        surface = ["syn"] + (["move"] if m["time"] and not s.get("sub_first") else []) + \
            (["swap"] if s["kind"] == "sub" else []) + \
            (["passive"] if v and m["obj"] and not v.dat and not m["measure"] and not m["neg"] else [])
        ops = r.sample(surface, min(len(surface), r.randint(1, 2))) if positive or r.random() < 0.3 else []
        if not positive:  # one change of meaning, surface kept similar
            op = r.choice(["entity", "number", "verb", "neg"])
            if op == "entity":
                m["subj"] = g.np("P")
            elif op == "number" and not _change_number(g, m):
                continue
            elif op == "verb":
                if v is None:
                    m["pred"] = r.choice(g.lex.adjs)
                else:
                    m["verb"] = r.choice([w for w in g.lex.verbs if (w.objs, w.dat) == (v.objs, v.dat)])
            elif op == "neg":
                m["neg"] = not m["neg"]
                ops = [o for o in ops if o != "passive"]
        for op in ops:
            if op == "move":
                m["front"] = not m["front"]
            elif op == "swap":
                t["sub_first"] = not t["sub_first"]
            passive, syn = passive or op == "passive", syn or op == "syn"
        s1, s2 = en_sentence(s), en_sentence(t, passive=passive)
        if syn:
            s2 = _synonyms(s2, r)
        if s1 != s2 and (positive or en_sentence(s) != en_sentence(t)):
            return s1, s2, int(positive)


def _rte_item(g, entail):
    r = g.r
    while True:
        op = r.choice(["adj", "adverbial", "clause", "hypernym", "factive"] if entail else
                      ["agent", "neg", "number", "condition", "belief"])
        kind = {"clause": "sub", "condition": "sub", "factive": "dass", "belief": "dass"}.get(op, "simple")
        s = g.sentence(statements_only=True, kind=kind)
        m = s["main"]
        if op in ("adj", "adverbial", "hypernym"):  # dropping material is only safe in positive clauses
            m["neg"], m["freq"] = False, None
        h = copy.deepcopy(m)
        if op == "adj":
            nps = [x for x in (h["subj"], h["obj"], h["place"]) if x and x.get("adjs")]
            if not nps:
                continue
            for x in nps:
                x["adjs"] = []
        elif op == "adverbial":
            keys = [k for k in ("time", "place", "manner", "comp", "measure") if h[k]]
            if not keys:
                continue
            for k in r.sample(keys, r.randint(1, len(keys))):
                h[k] = None
            h["front"] = h["front"] and h["time"] is not None
        elif op in ("clause", "condition"):
            if (s["conj"].en == "if") != (op == "condition"):
                continue
        elif op in ("factive", "belief"):
            if (s["belief"][2] in FACTIVE) != (op == "factive"):
                continue
        elif op == "hypernym":
            x = next((x for x in (h["subj"], h["obj"]) if x and x.get("n")), None)
            if x is None:
                continue
            word = HYPERNYMS[x["n"].cat]
            x["n"] = x["n"]._replace(en=word, enpl=_plural_en(word))
        elif op == "agent":
            h["subj"] = g.np("P")
        elif op == "neg":
            h["neg"] = not h["neg"]
        elif op == "number" and not _change_number(g, h):
            continue
        premise, hypothesis = en_sentence(s), en_sentence(_simple(h))
        if premise != hypothesis and (entail or en_clause(m) != en_clause(h) or op in ("condition", "belief")):
            return premise, hypothesis, "entailment" if entail else "not_entailment"


def generate_pairs(task, n, seed, split="train"):
    """n (sentence1, sentence2, label): mrpc labels 1/0 (~2/3 paraphrases), rte labels (entailment|not_entailment)."""
    r = random.Random(f"{task}/{split}/{seed}")
    g = Grammar("ende", r)
    if task == "mrpc":
        return [_mrpc_item(g, r.random() < 2 / 3) for _ in range(n)]
    if task == "rte":
        return [_rte_item(g, r.random() < 0.5) for _ in range(n)]
    raise ValueError(f"not a sentence-pair task: {task}")
