"""Facts of one document and the varied schema that asks for them (datagen v2).

A document kind (deg.datagen.kinds) turns one real source (a man page, a locale
file, ...) into a list of Facts: typed values whose gold comes from the source.
`make_schema` picks some of them and writes a schema whose field names,
casing, titles and descriptions vary, whose enums have varied sizes and a
shuffled option order, whose booleans are true as often as false (each boolean
is asked in its positive or negated form by a coin, or is a derived equality /
threshold test built to be true with p = 0.5), whose scores have scales of
different sizes and labels, and with optional / nullable fields the text does
not have (gold null, or the key omitted).

Fact kinds: span, email, uri (verbatim strings), int, number (quantities:
`surface` is the written text), date (ISO value; the renderer picks the
written form), enum (value from `options`; `surface` is the written word),
bool, list (array of strings), objects (array of objects: `sub` lists the
item facts' (key, kind, names, label), `items` the per-item {key: Fact}; a
sub kind "list" is a nested array of strings, asked of raw layouts only),
gen (x-generate text whose gold is `value`).
"""
import math
import re

from ..parsers import trim_span

CASES = ("snake", "camel", "pascal", "kebab", "space", "upper")


class Fact:
    """One typed value of a document. `names`: synonym word lists for the
    schema (e.g. [["command"], ["program", "name"]]); `label`: {lang: text}
    for renderings (en required); `desc`: description variants; `neg`: for
    bool, (names, desc) of the negated question; `pos`/`region`: where a raw
    rendering wrote it (code points), set by raw-text kinds."""
    __slots__ = ("key", "kind", "value", "surface", "names", "label", "desc", "options",
                 "option_desc", "neg", "sub", "items", "pos", "region", "prose", "derive")

    def __init__(self, key, kind, value, *, surface=None, names=None, label=None, desc=(),
                 options=None, option_desc=None, neg=None, sub=None, items=None, pos=None,
                 region=None, prose=None, derive=True):
        self.key, self.kind, self.value = key, kind, value
        self.surface = surface if surface is not None else (
            value if isinstance(value, str) else None)
        self.names = names or [key.split("_")]
        self.label = label or {"en": " ".join(self.names[0]).capitalize()}
        self.desc = list(desc)
        self.options, self.option_desc = options, option_desc
        self.neg, self.sub, self.items = neg, sub, items
        self.pos, self.region, self.prose, self.derive = pos, region, prose, derive
        if kind in ("span", "email", "uri") and isinstance(value, str):
            self.value, self.pos = _trimmed(value, pos)
            self.surface = self.value
            if not self.value:
                self.value = None
        elif kind == "list" and value:
            vals = [_trimmed(v, p) for v, p in zip(value, pos or [None] * len(value))]
            self.value = [v for v, _ in vals]
            self.pos = [p for _, p in vals] if pos else None
            if not all(self.value):
                self.value = None

    def __repr__(self):
        return f"Fact({self.key!r}, {self.kind!r}, {self.value!r})"


def _trimmed(value, pos):
    """A span value as the runtime trims spans (deg.parsers.trim_span), its
    written position moved along; gold spans must already be trimmed."""
    a, b = trim_span(value, 0, len(value))
    if (a, b) == (0, len(value)):
        return value, pos
    if isinstance(pos, tuple) or isinstance(pos, list):
        pos = (pos[0] + a, pos[0] + b)
    return value[a:b], pos


def words_of(s):
    return [w for w in re.split(r"[^A-Za-z0-9]+", s) if w]


def cased(words, style):
    """A property name from lower-case words in one casing style."""
    w = [x.lower() for x in words if x]
    if style == "snake":
        return "_".join(w)
    if style == "camel":
        return w[0] + "".join(x.capitalize() for x in w[1:])
    if style == "pascal":
        return "".join(x.capitalize() for x in w)
    if style == "kebab":
        return "-".join(w)
    if style == "space":
        return " ".join(w)
    return "_".join(w).upper()


def label_of(fact, lang):
    return fact.label.get(lang) or fact.label["en"]


class Field:
    """One schema property chosen for a fact: `name`, schema `spec`, gold
    `value` (or OMIT), and for arrays of objects `subnames` {sub key: name}."""
    __slots__ = ("fact", "name", "spec", "value", "subnames", "derived")

    def __init__(self, fact, name, spec, value, subnames=None, derived=None):
        self.fact, self.name, self.spec, self.value = fact, name, spec, value
        self.subnames, self.derived = subnames, derived


OMIT = object()

# Absent fields: asked, never written in any kind's document (nothing like an
# e-mail, URL or date here: documents of several kinds have those).
ABSENT_POOL = [
    ("fax", "span", [["fax"], ["fax", "number"]], "fax number, if given"),
    ("vat", "span", [["vat", "id"], ["tax", "number"]], "VAT identification number"),
    ("iban", "span", [["iban"], ["bank", "account"]], "IBAN of the payee, if stated"),
    ("phone", "span", [["phone"], ["telephone"]], "a contact phone number, if any"),
    ("price", "number", [["price"], ["cost"]], "the price, when one is mentioned"),
    ("deadline", "date", [["deadline"], ["due", "date"]], "a deadline, if one is stated"),
    ("twitter", "span", [["twitter", "handle"], ["social", "account"]], "a social media handle"),
]


def _spec_of(kind, nullable):
    if kind in ("span", "email", "uri"):
        s = {"type": ["string", "null"] if nullable else "string"}
        if kind != "span":
            s["format"] = kind
        return s
    if kind == "int":
        return {"type": ["integer", "null"] if nullable else "integer"}
    if kind == "number":
        return {"type": ["number", "null"] if nullable else "number"}
    if kind == "date":
        return {"type": ["string", "null"] if nullable else "string", "format": "date"}
    raise ValueError(kind)


class Namer:
    """Unique property names in one casing style (sometimes mixed)."""

    def __init__(self, rng):
        self.rng = rng
        self.style = rng.choice(CASES[:4]) if rng.random() < 0.85 else rng.choice(CASES)
        self.used = set()
        self.generic = 0

    def __call__(self, names, hint_only=False):
        if hint_only:
            self.generic += 1
            words = [self.rng.choice(["field", "value", "q", "item", "answer", "slot"]),
                     str(self.generic)]
        else:
            words = self.rng.choice(names)
        style = self.style if self.rng.random() < 0.9 else self.rng.choice(CASES[:4])
        name = cased(words, style)
        k = 2
        while name in self.used:
            name = cased(words + [str(k)], style)
            k += 1
        self.used.add(name)
        return name


def _describe(spec, fact, rng, hint_only, desc=None, title=None):
    """Add title / description variants; a hint-only field always has one."""
    desc = desc if desc is not None else (rng.choice(fact.desc) if fact.desc else None)
    title = title if title is not None else label_of(fact, "en")
    r = rng.random()
    if hint_only:
        spec["description"] = desc or title
        return spec
    if r < 0.35 and desc:
        spec["description"] = desc
    elif r < 0.5:
        spec["title"] = title
    elif r < 0.6 and desc:
        spec["title"], spec["description"] = title, desc
    return spec


def _enum_spec(fact, rng):
    opts = [o for o in fact.options if o != fact.value]
    rng.shuffle(opts)
    k = rng.randint(1, min(len(opts), rng.choice([2, 4, 7, 11])))
    chosen = opts[:k] + ([fact.value] if fact.value is not None else [])
    rng.shuffle(chosen)
    if fact.option_desc and rng.random() < 0.3:
        return {"oneOf": [{"const": o, "description": fact.option_desc[o]} if o in fact.option_desc
                          else {"const": o} for o in chosen]}
    return {"enum": chosen}


def _with_null_option(spec):
    """An _enum_spec with null among its options (enum, or a null const in oneOf)."""
    if "enum" in spec:
        spec["enum"].append(None)
    else:
        spec["oneOf"].append({"const": None})
    return spec


def _bool_field(fact, rng, namer, hint_only):
    """Positive or negated question by a coin: true with p = 1/2 whatever the prior."""
    if fact.neg and rng.random() < 0.5:
        names, desc = fact.neg
        spec = _describe({"type": "boolean"}, fact, rng, hint_only, desc=rng.choice(desc),
                         title=" ".join(names[0]).capitalize())
        return Field(fact, namer(names, hint_only), spec, not fact.value, derived="neg")
    spec = _describe({"type": "boolean"}, fact, rng, hint_only)
    return Field(fact, namer(fact.names, hint_only), spec, bool(fact.value))


def _equality_bool(fact, rng, namer):
    """'Is the <label> X?' with X the gold (p = 1/2) or another option."""
    others = [o for o in fact.options if o != fact.value and isinstance(o, str)]
    truth = rng.random() < 0.5 or not others
    opt = fact.value if truth else rng.choice(others)
    words = rng.choice(fact.names) + ["is"] + words_of(str(opt))[:3]
    label = label_of(fact, "en").lower()
    spec = {"type": "boolean", "description": rng.choice(
        [f"Is the {label} {opt}?", f"true if the {label} is {opt!r}",
         f"whether {label} equals {opt}"])}
    return Field(fact, namer([words]), spec, truth, derived="eq")


def _threshold_bool(fact, rng, namer):
    """'Is the <label> more than T?' with T below (p = 1/2) or above the value."""
    v = fact.value
    truth = rng.random() < 0.5
    t = _round_bound(v / rng.choice([1.5, 2, 4, 10]) if truth else v * rng.choice([1.5, 2, 4, 10]) + 1,
                     up=not truth)
    if (v > t) != truth:
        t = (v - 1) if truth else (v + 1)
        if isinstance(v, float):
            t = round(t, 2)
    words = rng.choice(fact.names) + [rng.choice(["over", "above", "exceeds"]), str(t).replace(".", "_")]
    label = label_of(fact, "en").lower()
    spec = {"type": "boolean", "description": rng.choice(
        [f"Is the {label} greater than {t}?", f"true when {label} > {t}",
         f"whether the {label} exceeds {t}"])}
    return Field(fact, namer([words]), spec, v > t, derived="gt")


def _round_bound(x, up):
    """A round number near x (2 significant digits), rounded up or down."""
    if x <= 0:
        return 0
    e = 10 ** max(int(math.floor(math.log10(x))) - 1, 0)
    return int(math.ceil(x / e) * e) if up else int(math.floor(x / e) * e)


def _band_width(v, g, n):
    """A band width w with g*w <= v < (g+1)*w (the top band g = n-1 is open),
    a round one (1, 2, 5 x 10^k) when one fits; None when none does."""
    lo = v / (g + 1)  # w > lo
    hi = v / g if g else float("inf")  # w <= hi
    for e in range(0, 12):
        for m in (1, 2, 5):
            w = m * 10 ** e
            if lo < w <= hi or (g == n - 1 and 0 < w <= hi):
                return w
    w = int(hi) if g else int(v) + 1
    return w if w >= 1 and g * w <= v and (g == n - 1 or v < (g + 1) * w) else None


def _score_field(fact, rng, namer):
    """An integer scale of 3..11 levels over equal bands of a quantity (or of a
    list's length), the bands written in x-levels: decide.score. None when the
    value fits no band layout."""
    v = len(fact.value) if fact.kind in ("list", "objects") else fact.value
    if not isinstance(v, (int, float)) or v < 0:
        return None
    n = rng.choice([3, 4, 5, 5, 6, 7, 10, 11])
    g = rng.randrange(n)
    w = _band_width(v, g, n)
    if w is None:
        return None
    lo0 = rng.choice([0, 1])
    label = label_of(fact, "en").lower()
    if fact.kind in ("list", "objects"):
        label = f"number of {label}"
    levels = {}
    for i in range(n):
        a, b = i * w, (i + 1) * w - 1
        levels[str(lo0 + i)] = (f"{a} or more" if i == n - 1 else
                                f"{a}" if a == b else f"{a} to {b}")
    spec = {"type": "integer", "minimum": lo0, "maximum": lo0 + n - 1, "x-levels": levels,
            "description": rng.choice([f"the {label} as a band on a {lo0}-{lo0 + n - 1} scale",
                                       f"{label}, banded", f"which band the {label} falls in"])}
    words = rng.choice(fact.names) + [rng.choice(["level", "scale", "band", "bucket"])]
    if fact.kind in ("list", "objects"):
        words = ["number", "of"] + words
    return Field(fact, namer([words]), spec, lo0 + g, derived="score")


def _array_field(fact, rng, namer, hint_only):
    if fact.kind == "list":
        spec = {"type": "array", "items": {"type": "string"}}
        return Field(fact, namer(fact.names, hint_only), _describe(spec, fact, rng, hint_only),
                     list(fact.value))
    sub_namer = Namer(rng)
    props, subnames, req = {}, {}, []
    always = [key for key, *_ in fact.sub
              if all(it.get(key) is not None and it[key].value is not None for it in fact.items)]
    for key, kind, names, _label in fact.sub:
        nm = sub_namer(names)
        subnames[key] = nm
        if kind == "list":  # a nested array of strings (raw layouts only: v2.record_of)
            props[nm] = {"type": "array", "items": {"type": "string"}}
        elif not req and key in always:
            req.append(nm)
            props[nm] = _spec_of(kind, False)
        else:
            props[nm] = _spec_of(kind, kind != "span" or rng.random() < 0.2)
    keys = list(props)
    if rng.random() < 0.3:  # the item's property order is not the text's
        rng.shuffle(keys)
    items = {"type": "object", "properties": {k: props[k] for k in keys}, "required": req}
    value = []
    for it in fact.items:
        row = {}
        for key, kind, _n, _l in fact.sub:
            f = it.get(key)
            if f is not None and f.value is not None:
                row[subnames[key]] = f.value
            elif key in subnames and "null" in props[subnames[key]]["type"]:
                row[subnames[key]] = None
        value.append(row)
    spec = _describe({"type": "array", "items": items}, fact, rng, hint_only)
    return Field(fact, namer(fact.names, hint_only), spec, value, subnames=subnames)


def withheld(fact):
    """A copy of `fact` for a document that does not show it (a hard negative:
    the document keeps its other facts, often of the same type): value None
    (scalars, enums: gold null or omitted) or [] (lists and arrays of objects,
    whose item schema `sub` is kept: an empty array)."""
    arr = fact.kind in ("list", "objects")
    return Fact(fact.key, fact.kind, [] if arr else None,
                names=fact.names, label=fact.label, desc=fact.desc, options=fact.options,
                option_desc=fact.option_desc, derive=False,
                sub=fact.sub if fact.kind == "objects" else None,
                items=[] if fact.kind == "objects" else None)


def make_schema(facts, rng, max_fields=8, must=None):
    """(schema, fields): a varied schema over some of `facts` (see the module
    docstring). fields: [Field] in schema order; gold value = {name: value}
    for fields whose value is not OMIT. `must`: a fact of `facts` always asked
    (a withheld fact, see `withheld`), at a random place among the fields."""
    namer = Namer(rng)
    usable = [f for f in facts if f is not must and (
        f.value is not None or f.kind in ("span", "email", "uri", "int", "number", "date"))]
    rng.shuffle(usable)
    if must is not None:
        n = rng.randint(min(2, len(usable)), min(max_fields - 1, len(usable)))
        usable = usable[:n]
        usable.insert(rng.randrange(n + 1), must)
        n += 1
    else:
        n = rng.randint(min(3, len(usable)), min(max_fields, len(usable)))
    fields = []
    for fact in usable[:n]:
        hint_only = rng.random() < 0.1
        k = fact.kind
        if fact.value is None and k == "enum":  # withheld: a nullable choice, gold null
            spec = _with_null_option(_enum_spec(fact, rng))
            fields.append(Field(fact, namer(fact.names, hint_only),
                                _describe(spec, fact, rng, hint_only), None))
        elif fact.value is None:  # a fact the document lacks: null or omitted
            nullable = rng.random() < 0.6
            spec = _describe(_spec_of(k, nullable), fact, rng, hint_only)
            fields.append(Field(fact, namer(fact.names, hint_only), spec,
                                None if nullable else OMIT))
        elif k in ("span", "email", "uri", "int", "number", "date"):
            r = rng.random()
            if k in ("int", "number") and fact.derive and r < 0.2:
                fld = _threshold_bool(fact, rng, namer)
            elif k in ("int", "number") and fact.derive and r < 0.4:
                fld = _score_field(fact, rng, namer)
            else:
                fld = None
            if fld is None:
                nullable = rng.random() < 0.3
                spec = _describe(_spec_of(k, nullable), fact, rng, hint_only)
                fld = Field(fact, namer(fact.names, hint_only), spec, fact.value)
            fields.append(fld)
        elif k == "enum":
            if fact.derive and rng.random() < 0.3:
                fields.append(_equality_bool(fact, rng, namer))
            else:
                spec = _enum_spec(fact, rng)
                if must is not None and rng.random() < 0.4:
                    # null among the options of a choice the text does answer too,
                    # so a null option is no sign that the withheld one is this one
                    spec = _with_null_option(spec)
                spec = _describe(spec, fact, rng, hint_only)
                fields.append(Field(fact, namer(fact.names, hint_only), spec, fact.value))
        elif k == "bool":
            fields.append(_bool_field(fact, rng, namer, hint_only))
        elif k in ("list", "objects"):
            fld = _score_field(fact, rng, namer) if (
                fact.derive and fact.value and rng.random() < 0.2) else None
            fields.append(fld or _array_field(fact, rng, namer, hint_only))
        elif k == "gen":
            spec = {"type": "string", "x-generate": True,
                    "maxLength": max(len(fact.value) + 40, 120)}
            fields.append(Field(fact, namer(fact.names), _describe(spec, fact, rng, True), fact.value))
    if rng.random() < 0.35:  # a field asked of every kind that no document has
        key, kind, names, desc = rng.choice(ABSENT_POOL)
        if not any(f.fact.key == key for f in fields):
            nullable = rng.random() < 0.6
            fact = Fact(key, kind, None, names=names, desc=[desc])
            spec = _describe(_spec_of(kind, nullable), fact, rng, False)
            fields.insert(rng.randrange(len(fields) + 1),
                          Field(fact, namer(names), spec, None if nullable else OMIT))
    props = {f.name: f.spec for f in fields}
    required = [f.name for f in fields if f.value is not OMIT and f.value is not None
                and rng.random() < 0.4 and not f.spec.get("x-generate")]
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    if rng.random() < 0.2:
        schema["additionalProperties"] = False
    return schema, fields


def gold_of(fields):
    return {f.name: f.value for f in fields if f.value is not OMIT}


def pointers(fields):
    """{fact key: pointer or (pointer, {sub key: name})} of the fields that
    mark spans in the text (extract leaves and arrays of them)."""
    out = {}
    for f in fields:
        k = f.fact.kind
        if f.derived or f.value is None or f.value is OMIT:
            continue
        p = "/" + f.name.replace("~", "~0").replace("/", "~1")
        if k in ("span", "email", "uri", "int", "number", "date", "list"):
            out[f.fact.key] = p
        elif k == "objects":
            out[f.fact.key] = (p, f.subnames)
    return out
