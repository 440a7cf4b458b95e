"""datagen v2: records from many document kinds of real offline text (issue 12).

    records, stats = generate_v2(seed=0, per_kind={"manpage": 600, ...})

Kinds (deg.datagen.kinds.*; record `source` = the kind): manpage, locale,
readme, news, config, pydoc, release, isocode, zone, license, services, plus v1's Debian
package records / changelogs and synthetic documents at small shares.
Datagen v3 (`python -m deg.datagen --v3`, V3_PER_KIND) adds unit, pkgconfig,
npm (kinds/meta.py), cheader, pymodule, perlpod (kinds/source.py), info,
gettext, gnulog (kinds/gnu.py). They are additive: a kind's records depend only on
(seed, kind, doc, record number), so the v2 kinds' records of a v3 run are the
v2 run's records byte for byte, and `--v2` (what train-v4 / train-v5 were
trained on) is unchanged.
Datagen v4 (`--v4`, V4_PER_KIND) adds mimetype, mimemap (kinds/mime.py), script,
completion (kinds/shell.py), cmakemod (kinds/cmake.py), distro (kinds/csvtab.py)
and, with generate_v2(v4=True), deg.datagen.v4's extra records of every kind
(short documents, absent lists, structure booleans), additive the same way.
Every document becomes 1..2 records, each with its own schema
(deg.datagen.facts.make_schema) and layout: `raw` (the source text itself,
for kinds that have one) or a programmatic rendering (deg.datagen.render)
in one of 7 languages; record `template` = "raw" or "<layout>-<lang>".

Splits:
  * TEST_ONLY_KINDS (license, zone, v1's event, listing; v3's info,
    perlpod; v4's distro): every document in `test`, never in train or val;
  * VAL_ONLY_KINDS (services; v3's unit): every document in `val`, so calibration
    sees a kind that training never saw (held-out-kind-like variety)
    without touching a test kind;
  * every other kind: by a hash of (kind, doc) 80 / 10 / 10;
  * HELD_OUT_LAYOUTS (html): never rendered for train; val and test use it
    for a share of their records (a layout unseen in training).
Files reserved for evaluation never enter (deg.datagen.guard). Deterministic:
every RNG is seeded by a string of (seed, kind, doc, record number).
"""
import hashlib
import json
import random

from . import kinds as _k
from .facts import gold_of, make_schema, pointers, withheld
from .kinds import (charmap, cmake, conf, csvtab, data, docs, gnu, keyfile, locale, man, meta, mime, ompi,
                    pydoc, rfc822, shell, source, tabs, vim)
from .record import BadRecord, build, count_record
from .render import LANGS, LAYOUTS, render, usable

KINDS = {"manpage": man, "locale": locale, "readme": docs.README, "news": docs.NEWS,
         "config": conf, "pydoc": pydoc, "zone": tabs.ZONE, "license": tabs.LICENSE,
         "services": tabs.SERVICES, "release": data.RELEASE, "isocode": data.ISOCODE,
         # datagen v3 (--v3: V3_PER_KIND; additive, the v2 kinds' records are unchanged)
         "unit": meta.UNIT, "pkgconfig": meta.PKGCONFIG, "npm": meta.NPM,
         "cheader": source.CHEADER, "pymodule": source.PYMODULE, "perlpod": source.PERLPOD,
         "info": gnu.INFO, "gettext": gnu.GETTEXT, "gnulog": gnu.GNULOG,
         # datagen v4 (--v4: V4_PER_KIND; additive as v3)
         "mimetype": mime.MIMETYPE, "mimemap": mime.MIMEMAP, "script": shell.SCRIPT,
         "completion": shell.COMPLETION, "cmakemod": cmake.CMAKEMOD, "distro": csvtab.DISTRO,
         # datagen v5 (--v5: V5_PER_KIND; additive as v3, v4)
         "vimrt": vim.VIMRT, "charmap": charmap.CHARMAP, "cmakedoc": cmake.CMAKEDOC,
         "ompihelp": ompi.OMPIHELP, "debconf": rfc822.DEBCONF, "docbase": rfc822.DOCBASE,
         "keyfile": keyfile.KEYFILE}
TEST_ONLY_KINDS = ("license", "zone", "event", "listing", "info", "perlpod", "distro")
# datagen v5's dev-only kinds: every document in `val` ("dev5": choosing heads and
# checkpoints on kinds training never saw; RFC-822-like stanzas and INI key files)
DEV5_KINDS = ("debconf", "docbase", "keyfile")
VAL_ONLY_KINDS = ("services", "unit") + DEV5_KINDS
HELD_OUT_LAYOUTS = ("html",)
# documents per kind (`scripts/train/datagen-v2`); records = 1..2 per document
DEFAULT_PER_KIND = {"manpage": 800, "locale": 250, "readme": 250, "news": 300, "config": 250,
                    "pydoc": 600, "zone": 150, "license": 17, "services": 60, "release": 60,
                    "isocode": 200}
# datagen v3's new kinds (documents per kind; `--v3` = DEFAULT_PER_KIND + these)
V3_PER_KIND = {"unit": 120, "pkgconfig": 120, "npm": 180, "cheader": 200, "pymodule": 200,
               "perlpod": 120, "info": 90, "gettext": 90, "gnulog": 150}
# datagen v4's new kinds (documents per kind; `--v4` = --v3 + these + deg.datagen.v4's
# short renderings, absent lists and structure booleans)
V4_PER_KIND = {"mimetype": 300, "mimemap": 150, "script": 200, "completion": 110, "cmakemod": 250,
               "distro": 50}
# datagen v5's new kinds (documents per kind; `--v5` = --v4 + these; DEV5_KINDS: every
# document this machine has)
V5_PER_KIND = {"vimrt": 400, "charmap": 200, "cmakedoc": 350, "ompihelp": 100, "debconf": 200,
               "docbase": 100, "keyfile": 100}
# v1 sources kept at a small share (python -m deg.datagen --v2 defaults)
V1_SHARE = {"packages": 40, "changelogs": 60, "synthetic": 40}


def split_of_v2(kind, doc):
    if kind in TEST_ONLY_KINDS:
        return "test"
    if kind in VAL_ONLY_KINDS:
        return "val"
    key = doc.split("@")[0]  # windows / translations of one source share a split
    h = int.from_bytes(hashlib.sha256(f"v2\0{kind}\0{key}".encode()).digest()[:8], "big") % 10
    return "test" if h == 0 else ("val" if h == 1 else "train")


def _layout(rng, split, has_raw):
    if has_raw and rng.random() < 0.45:
        return "raw", None
    pool = [x for x in LAYOUTS if split != "train" or x not in HELD_OUT_LAYOUTS]
    if split != "train" and rng.random() < 0.2:
        layout = rng.choice(HELD_OUT_LAYOUTS)
    else:
        layout = rng.choice([x for x in pool if x not in HELD_OUT_LAYOUTS])
    lang = "en" if rng.random() < 0.55 else rng.choice(LANGS[1:])
    return layout, lang


# fact kinds a withheld field can have, and the families whose other shown
# facts make it a hard negative (a value of the asked type is in the text)
WITHHOLD_KINDS = {"span": "str", "email": "str", "uri": "str", "int": "num", "number": "num",
                  "date": "date", "enum": "enum", "list": "list"}


def _texts(f):
    """The strings a fact can put in a document (value, written surface, list
    items, its items' sub-facts)."""
    out = [x for x in (f.value, f.surface) if isinstance(x, str) and x]
    if f.kind == "list" and f.value:
        out += [x for x in f.value if isinstance(x, str)]
    for it in f.items or ():
        for g in it.values():
            if g is not None:
                out += _texts(g)
    return out


def written_elsewhere(f, facts, own=None):
    """True when another fact of `facts` writes one of `own` (default: f's
    texts; none for a list) inside one of its texts."""
    own = ([] if f.kind == "list" else _texts(f)) if own is None else own
    others = [t for g in facts if g is not f for t in _texts(g)]
    return any(a in b for a in own for b in others)


def _withhold_pick(facts, rng):
    """The fact to withhold (or None): one whose value no other fact writes
    (a left-out first name must not stand in a list of names); facts whose
    type family has another shown fact weigh 3, others 1."""
    cand = [f for f in facts if f.kind in WITHHOLD_KINDS and f.value and
            not written_elsewhere(f, facts)]
    if len(cand) < 3:
        return None
    fam = {}
    for f in cand:
        fam[WITHHOLD_KINDS[f.kind]] = fam.get(WITHHOLD_KINDS[f.kind], 0) + 1
    weights = [3 if fam[WITHHOLD_KINDS[f.kind]] > 1 else 1 for f in cand]
    return rng.choices(cand, weights)[0]


def _nested(f):
    """An array of objects with a nested array (a "list" sub-fact)."""
    return f.kind == "objects" and any(s[1] == "list" for s in f.sub)


def writes(f):
    """True for a fact a rendering writes: every fact but datagen v4's structure
    booleans (key "struct:..."), whose answer is the document's shape."""
    return not f.key.startswith("struct:")


def record_of(kind, ent, split, rng, k, withhold=0.0, hide=None, absent=None):
    """One checked record of entity `ent` (raise BadRecord). `withhold`: the
    probability that one fact is left out of a rendered document and asked
    anyway (gold null / omitted / []; deg.datagen.facts.withheld): hard
    negatives for optional fields, whose every other value stays in the text.
    0 draws nothing extra (records as before, bitwise). `hide`: a fact of
    ent.facts to withhold so (always); `absent`: a withheld-form fact
    (facts.withheld) the entity does not have, asked of it (any layout,
    raw too). Record id: kind/doc/k, + "/withheld" when a fact is left out."""
    hidden = hide
    if withhold and random.Random(f"withhold:{kind}:{ent.doc}:{k}").random() < withhold:
        hidden = _withhold_pick(ent.facts, random.Random(f"withhold-pick:{kind}:{ent.doc}:{k}"))
    layout, lang = _layout(rng, split, ent.raw is not None and hidden is None)
    if layout == "raw":
        facts = [f for f in ent.facts if f.pos is not None or f.kind in ("bool", "enum", "gen")]
    else:  # renderings write no nested arrays (facts.Fact "objects" with a "list" sub)
        facts = [f for f in ent.facts if not _nested(f)]
        if not usable(facts, layout):
            layout = "kv"
    must = None
    if hidden is not None:
        must = withheld(hidden)
        facts = [must if f is hidden else f for f in facts
                 if writes(f) or not f.key.endswith(":" + hidden.key)]  # its structure booleans
    elif absent is not None:
        must = absent
        facts = [f for f in facts if f.key != absent.key] + [absent]
    schema, fields = make_schema(facts, rng, must=must)
    ptrs = pointers(fields)
    shown = [f for f in ent.facts if f is not hidden and writes(f) and
             (layout == "raw" or not _nested(f))]
    d = _k.raw_doc(ent, ptrs) if layout == "raw" else render(shown, ptrs, layout, lang, rng,
                                                             title=ent.title)
    ctx, marks, regions = d.finish()
    if hidden is not None and any(t in ctx for t in _texts(hidden)
                                  if hidden.kind != "enum" and len(t) >= 3):
        raise BadRecord("withheld-value-written", hidden.key)
    template = layout if layout == "raw" else f"{layout}-{lang}"
    rid = f"{kind}/{ent.doc}/{k}" + ("/withheld" if must is not None else "")
    rec = build(rid=rid, split=split, source=kind, template=template,
                doc=ent.doc, context=ctx, schema=schema, value=gold_of(fields), marks=marks,
                regions=regions)
    if must is not None:  # the asked field the document does not show
        rec["withheld"] = "/" + next(f.name for f in fields if f.fact is must)
    mark_structure(rec, fields)
    return rec


def mark_structure(rec, fields):
    """rec["structure"]: the pointers of datagen v4's structure booleans among
    `fields` (deg.datagen.v4.structure_facts), when there are any."""
    st = ["/" + f.name for f in fields if not writes(f.fact)]
    if st:
        rec["structure"] = st


def generate_v2(seed=0, per_kind=None, roots=None, records_per_doc=(1, 2), progress=None,
                withhold=0.0, v4=False):
    """(records, stats) over the KINDS in `per_kind` ({kind: documents});
    roots: {kind: path} overrides a kind's default source location (tests);
    withhold: see record_of (hard negatives; 0 = datagen v2 as published);
    v4: add datagen v4's extra records of every kind (deg.datagen.v4:
    short renderings, absent lists; each kind's after its own records).
    Kinds whose sources are missing give no records (counted in stats["missing"])."""
    per_kind = dict(DEFAULT_PER_KIND if per_kind is None else per_kind)
    roots = roots or {}
    records, stats = [], {"records": {}, "modes": {}, "sources": {}, "templates": {},
                          "bad": {}, "bad_examples": [], "missing": []}

    def keep(make, rid):
        """make() -> a record kept (and counted), or BadRecord counted; the record or None."""
        try:
            rec = make()
        except BadRecord as e:
            stats["bad"][e.reason] = stats["bad"].get(e.reason, 0) + 1
            if len(stats["bad_examples"]) < 20:
                stats["bad_examples"].append({"id": rid, "why": str(e)})
            return None
        records.append(rec)
        count_record(stats, rec)
        if progress:
            progress(len(records))
        return rec

    for kind in sorted(per_kind):
        mod = KINDS[kind]
        paths = mod.find(roots[kind]) if kind in roots else mod.find()
        if not paths or not per_kind[kind]:
            stats["missing"].append(kind)
            continue
        ents = mod.entities(paths, random.Random(f"{seed}:{kind}:pick"), per_kind[kind])
        if kind in V3_PER_KIND or kind in V4_PER_KIND or kind in V5_PER_KIND:  # v2's as published
            ents = balance_bool_facts(ents, f"{seed}:{kind}")
        if v4 or kind in V4_PER_KIND or kind in V5_PER_KIND:
            from .v4 import structure_facts
            ents4 = structure_facts(ents, f"{seed}:{kind}")
            ents = ents4 if kind in V4_PER_KIND or kind in V5_PER_KIND else ents
        first = len(records)
        for ent in sorted(ents, key=lambda e: e.doc):
            split = split_of_v2(kind, ent.doc)
            rng0 = random.Random(f"{seed}:{kind}:{ent.doc}")
            for k in range(rng0.randint(*records_per_doc)):
                rng = random.Random(f"{seed}:{kind}:{ent.doc}:{k}")
                keep(lambda: record_of(kind, ent, split, rng, k, withhold), f"{kind}/{ent.doc}/{k}")
        if v4:
            from .v4 import extra_records
            extra_records(kind, ents4, seed, records[first:], keep)
    return records, stats


def balance_bool_facts(ents, seed):
    """The entities with boolean facts balanced across them (datagen v3 kinds):
    make_schema's coin asks a boolean positively or negated, which balances the
    gold per fact but not per wording ("is this a package's __init__?" is false
    for 9 modules in 10, its negation true as often). Here a fact whose value is
    the kind's majority for its key is left out of a document with probability
    1 - minority / majority (a coin seeded by (seed, doc, key)), so each value,
    and so each wording's gold, is about as common as the other. A key that
    never takes the other value is never asked. Other facts are untouched."""
    counts = {}
    for e in ents:
        for f in e.facts:
            if f.kind == "bool":
                counts.setdefault(f.key, [0, 0])[bool(f.value)] += 1
    out = []
    for e in ents:
        keep = []
        for f in e.facts:
            if f.kind == "bool":
                n_false, n_true = counts[f.key]
                if bool(f.value) == (n_true > n_false) and n_true != n_false:
                    p = min(n_false, n_true) / max(n_false, n_true)
                    if random.Random(f"{seed}:balance:{e.doc}:{f.key}").random() >= p:
                        continue
            keep.append(f)
        out.append(e if len(keep) == len(e.facts) else _k.Entity(e.doc, e.title, keep, e.raw))
    return out


def merge_v1(records, stats, v1_records, seed=0):
    """Add v1 records (deg.datagen.generate: Debian packages / changelogs,
    synthetic documents; their own v1 splits) to a v2 run's records and stats,
    their top-level booleans balanced (balance_booleans)."""
    for rec in v1_records:
        rec = balance_booleans(rec, seed)
        records.append(rec)
        count_record(stats, rec)


def balance_booleans(rec, seed=0):
    """A copy of a record whose top-level boolean properties are each, by a
    coin seeded by (seed, record id, property), asked in the negated form:
    renamed `not_<name>` with a description saying it is the opposite, and the
    gold flipped. v1's booleans are mostly false (essential, gift, paid...);
    this makes true as likely as false whatever the prior."""
    props = rec["schema"].get("properties", {})
    flip = [k for k, v in props.items() if v.get("type") == "boolean" and
            isinstance(rec["value"].get(k), bool) and k.isidentifier() and f"not_{k}" not in props
            and random.Random(f"{seed}:neg:{rec['id']}:{k}").random() < 0.5]
    if not flip:
        return rec
    rec = json.loads(json.dumps(rec))
    sch = rec["schema"]
    new_props, new_value = {}, {}
    for k, v in sch["properties"].items():
        if k in flip:
            d = v.get("description") or k.replace("_", " ")
            new_props[f"not_{k}"] = dict(v, description=f"the opposite of: {d}")
        else:
            new_props[k] = v
    for k, v in rec["value"].items():
        new_value[f"not_{k}" if k in flip else k] = (not v) if k in flip else v
    sch["properties"] = new_props
    if "required" in sch:
        sch["required"] = [f"not_{k}" if k in flip else k for k in sch["required"]]
    rec["value"] = new_value
    return rec


def report(stats):
    """The end-of-run report: lines of counts per split, kind, layout, mode and
    the boolean gold's true share."""
    out = [f"records per split: {json.dumps(stats['records'], sort_keys=True)}  "
           f"total {sum(stats['records'].values())}"]
    kinds = sorted({k.split(':', 1)[1] for k in stats["sources"]})
    splits = ("train", "val", "test")
    out.append(f"{'kind':<18}" + "".join(f"{s:>7}" for s in splits))
    for kd in kinds:
        out.append(f"{kd:<18}" + "".join(f"{stats['sources'].get(f'{s}:{kd}', 0):>7}" for s in splits))
    lay = {}
    for k, n in stats["templates"].items():
        t = k.split(":", 1)[1]
        lay[t] = lay.get(t, 0) + n
    out.append("layouts: " + json.dumps(dict(sorted(lay.items())), sort_keys=True))
    for s in splits:
        out.append(f"modes {s}: " + json.dumps(stats["modes"].get(s, {}), sort_keys=True))
    for s in splits:
        t, f = stats.get("booleans", {}).get(s, [0, 0])
        out.append(f"booleans {s}: {t} true / {f} false, true share "
                   f"{t / max(t + f, 1):.3f}")
    out.append("boolean true share per kind: " + ", ".join(
        f"{k} {t / max(t + f, 1):.2f} ({t + f})"
        for k, (t, f) in sorted(stats.get("booleans_by_source", {}).items()) if t + f))
    out.append("bad (skipped): " + json.dumps(stats["bad"], sort_keys=True))
    if stats.get("missing"):
        out.append("kinds without sources here: " + ", ".join(stats["missing"]))
    return out
