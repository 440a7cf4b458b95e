"""Short renderings (datagen v4): a document of one line or a few short lines
stating 1..3 facts, e.g. "Order 4711 from ann@example.com, shipped 2026-03-02".

    d, form = render_short(facts, ptrs, "en", rng, title="frobd.service")

Forms (FORMS): `sentence` ("[Title:] label v, label v and label v."),
`inline` ("label: v; label: v" with a varied separator), `lines` (one
"label: v" per line), `lead` (the first value bare, the others labelled:
"v (label v, label v)" or "v - label v"), `bare` (values only, when their
types differ so each is unambiguous). Every written value is marked as in
deg.datagen.render (ptrs: facts.pointers); at most MAX_CHARS characters and
MAX_LINES lines (`short_facts` keeps surfaces short enough).
"""
from .doc import Doc
from .facts import label_of
from .render import WORDS, date_text

SHORT_KINDS = ("span", "email", "uri", "int", "number", "date", "enum")
FORMS = ("sentence", "inline", "lines", "lead", "bare")
MAX_CHARS, MAX_LINES = 240, 3
_MAX_VALUE = 60


def _sayable(f):
    s = f.surface if f.surface is not None else f.value
    return (f.kind in SHORT_KINDS and f.value is not None and f.key[:7] != "struct:"
            and 0 < len(str(s)) <= _MAX_VALUE and "\n" not in str(s))


def short_facts(facts, rng, most=3):
    """1..`most` facts a short document can state (scalar, short one-line
    surfaces), in a random order; [] when there are none."""
    cand = [f for f in facts if _sayable(f)]
    if not cand:
        return []
    return rng.sample(cand, rng.randint(1, min(most, len(cand))))


def _label(f, lang, lower):
    lab = label_of(f, lang)
    if lower and len(lab) > 1 and lab[1:2].islower():
        lab = lab[0].lower() + lab[1:]
    return lab


def render_short(facts, ptrs, lang, rng, title=None):
    """(Doc, form): `facts` (from short_facts) written in a short form."""
    d = Doc()
    dates = {}

    def val(f):
        if f.kind == "date":
            s = dates.setdefault(f.value, date_text(f.value, rng, lang))
        else:
            s = str(f.surface if f.surface is not None else f.value)
        p = ptrs.get(f.key)
        d.val(p if isinstance(p, str) else None, s)

    kinds = [f.kind for f in facts]
    forms = list(FORMS[:4]) + (["bare"] if len(set(kinds)) == len(kinds) and "span" not in kinds else [])
    form = rng.choice(forms)
    and_ = WORDS.get(lang, WORDS["en"])[2]
    if form == "sentence":
        if title and len(title) <= 40 and rng.random() < 0.5:
            d.text(f"{title}: ")
        for i, f in enumerate(facts):
            if i:
                d.text(f" {and_} " if i == len(facts) - 1 else ", ")
            d.text(_label(f, lang, i > 0 or bool(title)) + " ")
            val(f)
        d.text(rng.choice([".", "", "."]))
    elif form in ("inline", "lines"):
        sep = "\n" if form == "lines" else rng.choice(["; ", " | ", ", ", " - ", " \u00b7 "])
        colon = rng.choice([": ", ": ", " "]) if form == "inline" else rng.choice([": ", ":\t", " = "])
        for i, f in enumerate(facts):
            if i:
                d.text(sep)
            d.text(_label(f, lang, False) + colon)
            val(f)
    elif form == "lead":
        val(facts[0])
        if len(facts) > 1:
            paren = rng.random() < 0.5
            d.text(" (" if paren else rng.choice([" - ", ", ", " \u2014 "]))
            for i, f in enumerate(facts[1:]):
                if i:
                    d.text(", ")
                d.text(_label(f, lang, True) + " ")
                val(f)
            d.text(")" if paren else "")
    else:  # bare values of distinct types
        for i, f in enumerate(facts):
            if i:
                d.text(rng.choice([", ", " ", "; "]))
            val(f)
    return d, form
