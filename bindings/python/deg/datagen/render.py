"""Programmatic renderings of a document's facts in many layouts and languages.

    d = render(facts, ptrs, "md", "de", rng)    # a Doc with every gold span marked

Layouts (LAYOUTS): kv (`Label: value`), prose (sentences), md (Markdown
table), ascii (boxed table), json, yaml, email (headers + body), ini, html,
noisy (kv with shuffled order, odd spacing and case). Languages (LANGS): the
labels, yes/no words and connecting words of en, de, fr, es, it, pt, nl
(LABELS below; a fact's own `label` overrides). Every fact with a value is
written (also the ones the schema does not ask: distractors); the ones in
`ptrs` (facts.pointers) are marked. A value that a layout would have to
escape (a quote in JSON, `<` in HTML) makes that layout unusable for the
document (`usable`), so gold spans stay verbatim.
"""
import datetime as dt

from .doc import Doc
from .facts import label_of

LAYOUTS = ("kv", "prose", "md", "ascii", "json", "yaml", "email", "ini", "html", "noisy")
LANGS = ("en", "de", "fr", "es", "it", "pt", "nl")

YES_NO = {"en": [("yes", "no"), ("true", "false"), ("Yes", "No")], "de": [("ja", "nein")],
          "fr": [("oui", "non")], "es": [("sí", "no")], "it": [("sì", "no")],
          "pt": [("sim", "não")], "nl": [("ja", "nee")]}
WORDS = {  # (document heading, "is", "and", "items")
    "en": ("Details", "is", "and", "Items"), "de": ("Angaben", "ist", "und", "Einträge"),
    "fr": ("Détails", "est", "et", "Éléments"), "es": ("Detalles", "es", "y", "Elementos"),
    "it": ("Dettagli", "è", "e", "Voci"), "pt": ("Detalhes", "é", "e", "Itens"),
    "nl": ("Gegevens", "is", "en", "Items")}
MONTHS = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
}


def date_text(iso, rng, lang="en"):
    """A written form of an ISO date that deg's date parser reads back."""
    d = dt.date.fromisoformat(iso)
    m = MONTHS.get(lang, MONTHS["en"]).split()
    en = MONTHS["en"].split()
    style = rng.randrange(7)
    if style == 0:
        return d.isoformat()
    if style == 1:
        return f"{en[d.month - 1]} {d.day}, {d.year}"
    if style == 2:
        return f"{d.day} {en[d.month - 1][:3]} {d.year}"
    if style == 3 and d.day > 12:  # dd.mm.yyyy only where it cannot be read as mm.dd
        return f"{d.day:02d}.{d.month:02d}.{d.year}"
    if style == 4 and lang == "de":
        return f"{d.day}. {m[d.month - 1]} {d.year}"
    if style == 4 and lang in ("fr", "es"):
        return f"{d.day} {m[d.month - 1]} {d.year}"
    return f"{d.day} {en[d.month - 1]} {d.year}"


def _surface(f, rng, lang, dates):
    if f.kind == "date":  # one written form per date value in a document
        if f.value not in dates:
            dates[f.value] = date_text(f.value, rng, lang)
        return dates[f.value]
    if f.kind == "bool":
        return None
    return str(f.surface if f.surface is not None else f.value)


def usable(facts, layout):
    """False when a layout would have to escape a value (spans must stay verbatim)."""
    bad = {"json": ('"', "\\"), "html": ("<", ">", "&"), "md": ("|",), "ascii": ("|",),
           "yaml": (": ", "#"), "ini": ("\n",)}.get(layout, ())
    if not bad:
        return True

    def texts(f):
        if f.kind == "list":
            return list(f.value)
        if f.kind == "objects":
            return [str(x.surface) for it in f.items for x in it.values() if x.value is not None]
        return [str(f.surface)] if f.surface is not None else []
    return not any(c in t for f in facts if f.value is not None and f.kind != "gen"
                   for t in texts(f) for c in bad)


class _W:
    """Shared state of one rendering: the Doc, marks, language, yes/no words."""

    def __init__(self, ptrs, lang, rng):
        self.d, self.ptrs, self.lang, self.rng = Doc(), ptrs, lang, rng
        self.yes, self.no = rng.choice(YES_NO[lang])
        self.dates = {}

    def label(self, f, key_style=False):
        s = label_of(f, self.lang)
        if key_style:
            return "_".join(s.lower().split())
        return s

    def value(self, f, quote=False):
        """Write a scalar fact's surface, marked if asked."""
        d = self.d
        if f.kind == "bool":
            d.text(("true" if f.value else "false") if quote == "json" else
                   (self.yes if f.value else self.no))
            return
        s = _surface(f, self.rng, self.lang, self.dates)
        q = quote == "json" and f.kind not in ("int", "number")
        d.text('"' if q else "")
        d.val(self.ptrs.get(f.key) if f.kind != "enum" else None, s)
        d.text('"' if q else "")

    def list_items(self, f, sep, prefix="", quote=""):
        p = self.ptrs.get(f.key)
        for i, s in enumerate(f.value):
            with self.d.item(f"{p}/{i}"):
                self.d.text((sep if i else "") + prefix + quote)
                self.d.val(f"{p}/{i}" if p else None, s).text(quote)

    def obj_items(self, f, write_item):
        p, subn = self.ptrs.get(f.key, (None, {}))
        for i, it in enumerate(f.items):
            with self.d.item(f"{p}/{i}"):
                write_item(i, it, lambda sub, i=i: (f"{p}/{i}/{subn[sub]}"
                                                    if p and sub in subn else None))

    def sub_val(self, x, ptr):
        self.d.val(ptr if x.kind != "enum" else None, _surface(x, self.rng, self.lang, self.dates))


def _subs(f, it):
    return [(k, it[k]) for k, *_ in f.sub if k in it and it[k].value is not None]


def _sub_label(f, k, lang):
    for key, _kind, names, label in f.sub:
        if key == k:
            return (label or {}).get(lang) or (label or {}).get("en") or " ".join(names[0])
    return k


def _kv(w, facts, sep=": ", bullet="- ", noisy=False):
    d, rng = w.d, w.rng
    for f in facts:
        lab = w.label(f)
        if noisy:
            lab = rng.choice([lab, lab.lower(), lab.upper()])
            sep = rng.choice([": ", ":  ", " : ", ":\t", " = "])
            d.text(rng.choice(["", "", " ", "  "]))
        if f.kind == "list":
            if rng.random() < 0.5:
                d.text(f"{lab}{sep}")
                w.list_items(f, ", ")
                d.text("\n")
            else:
                d.text(f"{lab}{sep.rstrip()}\n")
                w.list_items(f, "\n", prefix=bullet)
                d.text("\n")
        elif f.kind == "objects":
            d.text(f"{lab}{sep.rstrip()}\n")

            def item(i, it, ptr):
                d.text(bullet)
                for j, (k, x) in enumerate(_subs(f, it)):
                    d.text("; " if j else "")
                    d.text(f"{_sub_label(f, k, w.lang)}: ") if j else None
                    w.sub_val(x, ptr(k))
                d.text("\n")
            w.obj_items(f, item)
        else:
            d.text(f"{lab}{sep}")
            w.value(f)
            d.text(rng.choice(["", "", "  "]) + "\n" if noisy else "\n")
        if noisy and rng.random() < 0.2:
            d.text("\n")


def _prose(w, facts):
    d, is_ = w.d, WORDS[w.lang][1]
    for f in facts:
        lab = w.label(f)
        if f.prose and f.kind == "bool" and w.lang in f.prose:
            d.text(f.prose[w.lang][0 if f.value else 1] + " ")
        elif f.kind == "list":
            d.text(f"{lab}: ")
            n = len(f.value)
            p = w.ptrs.get(f.key)
            for i, s in enumerate(f.value):
                with d.item(f"{p}/{i}"):
                    d.text("" if i == 0 else (f" {WORDS[w.lang][2]} " if i == n - 1 else ", "))
                    d.val(f"{p}/{i}" if p else None, s)
            d.text(". ")
        elif f.kind == "objects":
            d.text(f"{lab}: ")

            def item(i, it, ptr):
                subs = _subs(f, it)
                d.text("; " if i else "")
                for j, (k, x) in enumerate(subs):
                    d.text(" (" if j == 1 else (", " if j > 1 else ""))
                    w.sub_val(x, ptr(k))
                d.text(")" if len(subs) > 1 else "")
            w.obj_items(f, item)
            d.text(". ")
        elif f.kind == "bool":
            d.text(f"{lab}: ")
            w.value(f)
            d.text(". ")
        else:
            d.text(f"{'The ' if w.lang == 'en' else ''}{lab if w.lang != 'en' else lab.lower()} "
                   f"{is_} ")
            w.value(f)
            d.text(". " if not str(f.surface or "").endswith(".") else " ")
        if w.rng.random() < 0.25:
            d.text("\n")


def _table(w, facts, style):
    d = w.d
    rows = [f for f in facts if f.kind not in ("list", "objects")]
    width = max([len(w.label(f)) for f in rows] + [5])
    head = {"en": ("Field", "Value"), "de": ("Feld", "Wert"), "fr": ("Champ", "Valeur"),
            "es": ("Campo", "Valor"), "it": ("Campo", "Valore"), "pt": ("Campo", "Valor"),
            "nl": ("Veld", "Waarde")}[w.lang]
    if style == "md":
        d.text(f"| {head[0]:<{width}} | {head[1]} |\n|{'-' * (width + 2)}|-------|\n")
        pre, mid, end = "| ", " | ", " |\n"
    else:
        rule = f"+{'-' * (width + 2)}+{'-' * 24}+\n"
        d.text(rule + f"| {head[0]:<{width}} | {head[1]:<22} |\n" + rule)
        pre, mid, end = "| ", " | ", " |\n"
    for f in rows:
        d.text(f"{pre}{w.label(f):<{width}}{mid}")
        w.value(f)
        d.text(end)
    if style == "ascii":
        d.text(f"+{'-' * (width + 2)}+{'-' * 24}+\n")
    for f in facts:
        if f.kind == "list":
            d.text(f"\n{w.label(f)}:\n")
            w.list_items(f, "\n", prefix="* " if style == "md" else "  - ")
            d.text("\n")
        elif f.kind == "objects":
            subs = [k for k, *_ in f.sub]
            d.text(f"\n{w.label(f)}\n\n| " + " | ".join(_sub_label(f, k, w.lang) for k in subs) + " |\n")
            d.text("|" + "---|" * len(subs) + "\n")

            def item(i, it, ptr):
                d.text("|")
                for k in subs:
                    d.text(" ")
                    if k in it and it[k].value is not None:
                        w.sub_val(it[k], ptr(k))
                    else:
                        d.text("-")
                    d.text(" |")
                d.text("\n")
            w.obj_items(f, item)


def _json(w, facts):
    d, ind = w.d, w.rng.choice(["  ", "    ", "\t"])
    d.text("{\n")
    for n, f in enumerate(facts):
        d.text(f'{ind}"{w.label(f, True)}": ')
        if f.kind == "list":
            d.text("[")
            w.list_items(f, ", ", quote='"')
            d.text("]")
        elif f.kind == "objects":
            d.text("[\n")

            def item(i, it, ptr):
                d.text((",\n" if i else "") + ind * 2 + "{")
                for j, (k, x) in enumerate(_subs(f, it)):
                    q = "" if x.kind in ("int", "number") else '"'
                    d.text((", " if j else "") + f'"{"_".join(_sub_label(f, k, w.lang).lower().split())}": {q}')
                    w.sub_val(x, ptr(k))
                    d.text(q)
                d.text("}")
            w.obj_items(f, item)
            d.text("\n" + ind + "]")
        else:
            w.value(f, quote="json")
        d.text(",\n" if n < len(facts) - 1 else "\n")
    d.text("}\n")


def _yaml(w, facts):
    d = w.d
    d.text("---\n" if w.rng.random() < 0.5 else "")
    for f in facts:
        d.text(f"{w.label(f, True)}:")
        if f.kind == "list":
            d.text("\n")
            w.list_items(f, "\n", prefix="  - ")
            d.text("\n")
        elif f.kind == "objects":
            d.text("\n")

            def item(i, it, ptr):
                for j, (k, x) in enumerate(_subs(f, it)):
                    d.text(("  - " if j == 0 else "    ") + "_".join(_sub_label(f, k, w.lang).lower().split()) + ": ")
                    w.sub_val(x, ptr(k))
                    d.text("\n")
            w.obj_items(f, item)
        else:
            d.text(" ")
            w.value(f)
            d.text("\n")


def _ini(w, facts, section):
    d = w.d
    d.text(f"[{section}]\n")
    later = []
    for f in facts:
        if f.kind == "objects":
            later.append(f)
            continue
        d.text(f"{w.label(f, True)} = ")
        if f.kind == "list":
            w.list_items(f, ", ")
        else:
            w.value(f)
        d.text("\n")
    for f in later:
        def item(i, it, ptr):
            d.text(f"\n[{w.label(f, True)}.{i + 1}]\n")
            for k, x in _subs(f, it):
                d.text("_".join(_sub_label(f, k, w.lang).lower().split()) + " = ")
                w.sub_val(x, ptr(k))
                d.text("\n")
        w.obj_items(f, item)


def _html(w, facts, title):
    d = w.d
    d.text(f"<html><body>\n<h1>{title}</h1>\n<table>\n")
    for f in facts:
        d.text(f"<tr><th>{w.label(f)}</th><td>")
        if f.kind == "list":
            d.text("<ul>")
            w.list_items(f, "", prefix="<li>")
            d.text("</ul>")
        elif f.kind == "objects":
            d.text("<ol>")

            def item(i, it, ptr):
                d.text("<li>")
                for j, (k, x) in enumerate(_subs(f, it)):
                    d.text(" &mdash; " if j else "")
                    w.sub_val(x, ptr(k))
                d.text("</li>")
            w.obj_items(f, item)
            d.text("</ol>")
        else:
            w.value(f)
        d.text("</td></tr>\n")
    d.text("</table>\n</body></html>\n")


def _email(w, facts, title):
    d, rng = w.d, w.rng
    d.text(f"From: {rng.choice(['records', 'noreply', 'info', 'archive'])}@example.org\n")
    d.text(f"To: {rng.choice(['team', 'ops', 'me', 'list'])}@example.net\n")
    d.text(f"Subject: {title}\n\n")
    d.text({"en": "Hello,\n\n", "de": "Hallo,\n\n", "fr": "Bonjour,\n\n", "es": "Hola,\n\n",
            "it": "Ciao,\n\n", "pt": "Olá,\n\n", "nl": "Hallo,\n\n"}[w.lang])
    (_prose if rng.random() < 0.5 else _kv)(w, facts)
    d.text("\n\n-- \n" + rng.choice(["sent automatically", "the records desk", "regards"]) + "\n")


def render(facts, ptrs, layout, lang, rng, title="Record"):
    """A Doc of `facts` (those with a value) in `layout` / `lang`, marking `ptrs`."""
    w = _W(ptrs, lang, rng)
    shown = [f for f in facts if f.value is not None and f.kind != "gen"]
    if layout == "noisy" or rng.random() < 0.15:
        rng.shuffle(shown)
    if rng.random() < 0.5 and layout in ("kv", "prose", "noisy", "md"):
        w.d.text(f"{title}\n{'=' * len(title)}\n\n" if layout != "md" else f"# {title}\n\n")
    if layout == "kv":
        _kv(w, shown, sep=rng.choice([": ", ": ", " = ", " - ", ":\t"]),
            bullet=rng.choice(["- ", "* ", "  "]))
    elif layout == "noisy":
        _kv(w, shown, noisy=True)
    elif layout == "prose":
        _prose(w, shown)
    elif layout in ("md", "ascii"):
        _table(w, shown, layout)
    elif layout == "json":
        _json(w, shown)
    elif layout == "yaml":
        _yaml(w, shown)
    elif layout == "ini":
        _ini(w, shown, "_".join(title.lower().split()[:2]) or "record")
    elif layout == "html":
        _html(w, shown, title)
    elif layout == "email":
        _email(w, shown, title)
    else:
        raise ValueError(layout)
    return w.d
