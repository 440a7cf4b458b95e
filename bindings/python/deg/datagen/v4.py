"""datagen v4 (issue 12): v3 plus six kinds, short documents, absent lists and
structure booleans (`python -m deg.datagen --v4`; deg.datagen.v2.generate_v2(v4=True)).

Additive like v3: every v2 / v3 kind's own records are the v3 run's byte for
byte; v4 appends, after each kind's records, extra records of that kind's
documents (their split is the document's):
  * short (`<kind>/<doc>/short`, template `short-<form>-<lang>`): SHORT_SHARE
    of a kind's documents (the ones first in a seeded hash order) stated in one
    line or a few short lines (deg.datagen.short), 1..3 facts; with p =
    SHORT_WITHHELD one more of the document's scalar facts is asked though not
    written (gold null / omitted; record key "withheld");
  * absent lists (`<kind>/<doc>/nolist/withheld`, record key "withheld" = the
    empty array's pointer): a list or array of objects the document does not
    have, asked with gold [], while other documents of the kind have it: either a list key of the
    kind this document lacks (`absent`: any layout, raw too) or one of its own
    lists left out of a rendering (`hide`: v2.record_of's withheld-field path).
    Documents are taken in a seeded hash order until EMPTY_SHARE of the kind's
    top-level arrays (its records + these) are empty;
  * structure booleans (`structure_facts`): "is there more than one <list
    item>?" and "does it list any <list item>?" for the kind's lists, asked
    like other booleans (positive or negated by a coin), balanced per key
    (v2.balance_bool_facts); renderings never write them (v2.writes); records
    name them in "structure". They are facts of every v4 kind's documents and
    of the extra records above (v2 / v3 kinds' own records stay as they were).
"""
import hashlib
import random

from . import kinds as _k
from .facts import Fact, gold_of, make_schema, pointers, withheld
from .record import BadRecord, build
from .short import SHORT_KINDS, render_short, short_facts
from .v2 import (_nested, _texts, balance_bool_facts, mark_structure, record_of, split_of_v2, writes,
                 written_elsewhere)

SHORT_SHARE = 0.2      # documents of a kind that also get a short record
SHORT_WITHHELD = 0.25  # short records that also ask a fact they do not write
EMPTY_SHARE = 0.15     # target share of empty top-level arrays per kind: ~10% overall, since
#                        some kinds have no list to leave out (every list written twice: mimemap,
#                        isocode, distro) and v1's records few (datagen-v4 at seed 0 with 0.12:
#                        8.4% train)


def hideable(f, ent):
    """True when leaving `f` out of a rendering of `ent` leaves none of its
    texts in the document: no other fact and not the title writes them."""
    own = [t for t in _texts(f) if len(t) >= 3]
    return not written_elsewhere(f, ent.facts, own) and not any(t in (ent.title or "") for t in own)


def _rank(seed, kind, doc, what):
    return hashlib.sha256(f"{seed}\0{kind}\0{doc}\0{what}".encode()).digest()[:8]


def _list_keys(ents, kinds=("list", "objects")):
    """{key: the first (by doc) fact of that key with a non-empty value}."""
    out = {}
    for e in sorted(ents, key=lambda x: x.doc):
        for f in e.facts:
            if f.kind in kinds and f.value and writes(f):
                out.setdefault(f.key, f)
    return out


def structure_facts(ents, seed):
    """The entities with structure booleans added (keys "struct:several:<key>",
    "struct:any:<key>" for each list / array-of-objects key of the kind),
    balanced per key (balance_bool_facts: a key never true or never false is
    not asked). Same order as `ents`."""
    ex = _list_keys(ents)
    made = []
    for e in ents:
        have = {f.key: f for f in e.facts if f.kind in ("list", "objects") and f.value}
        new = []
        for key, x in sorted(ex.items()):
            words = x.names[0]
            lab = x.label["en"].lower()
            if key in have:
                new.append(Fact(f"struct:several:{key}", "bool", len(have[key].value) > 1,
                                names=[["several"] + words, ["more", "than", "one"] + words],
                                neg=([["at", "most", "one"] + words, ["single"] + words],
                                     [f"true if at most one item of {lab} is listed"]),
                                desc=[f"is more than one item of {lab} listed?",
                                      f"does the document list several {lab}?"]))
            new.append(Fact(f"struct:any:{key}", "bool", key in have,
                            names=[["has"] + words, ["any"] + words],
                            neg=([["no"] + words, ["without"] + words], [f"true if it lists no {lab}"]),
                            desc=[f"does it list any {lab}?", f"are any {lab} given?"]))
        made.append(_k.Entity(e.doc, e.title, new))
    bal = balance_bool_facts(made, f"{seed}:structure")
    return [_k.Entity(e.doc, e.title, e.facts + b.facts, e.raw) for e, b in zip(ents, bal)]


def short_record(kind, ent, split, seed):
    """A record whose document states 1..3 of `ent`'s facts in one line or a
    few short lines (deg.datagen.short); raise BadRecord."""
    rng = random.Random(f"{seed}:{kind}:{ent.doc}:short")
    said = short_facts([f for f in ent.facts if writes(f)], rng)
    if not said:
        raise BadRecord("short-nothing-to-say", ent.doc)
    lang = "en" if rng.random() < 0.7 else rng.choice(("de", "fr", "es", "it", "pt", "nl"))
    must = None
    rest = [f for f in ent.facts if f not in said and f.kind in SHORT_KINDS and f.value is not None
            and f.kind != "enum" and writes(f) and hideable(f, ent)]
    if rest and rng.random() < SHORT_WITHHELD:
        hidden = rng.choice(rest)
        must = withheld(hidden)
    schema, fields = make_schema(said + ([must] if must else []), rng,
                                 max_fields=len(said) + (1 if must else 0), must=must)
    d, form = render_short(said, pointers(fields), lang, rng, title=ent.title)
    ctx, marks, regions = d.finish()
    if must is not None and any(t in ctx for t in _texts(hidden) if len(t) >= 3):
        raise BadRecord("withheld-value-written", hidden.key)
    rid = f"{kind}/{ent.doc}/short" + ("/withheld" if must else "")
    rec = build(rid=rid, split=split, source=kind, template=f"short-{form}-{lang}", doc=ent.doc,
                context=ctx, schema=schema, value=gold_of(fields), marks=marks, regions=regions)
    if must is not None:
        rec["withheld"] = "/" + next(f.name for f in fields if f.fact is must)
    mark_structure(rec, fields)
    return rec


def arrays_of(rec):
    """(top-level array fields, empty ones) of a record's gold."""
    arr = [v for v in rec["value"].values() if isinstance(v, list)]
    return len(arr), sum(1 for v in arr if not v)


def nolist_record(kind, ent, split, seed, lists):
    """make() of a record asking for a list or array of objects `ent` does not
    show (gold []): a key of the kind (`lists`: {key: exemplar fact}) it lacks ("missing"),
    or one of its own withheld from a rendering ("withheld"; only one no other
    fact or the title writes, and no array holding arrays: renderings write
    none); a coin when both are possible. Record key "absent_list": {"key", "how"}. None
    when neither is possible."""
    rng = random.Random(f"{seed}:{kind}:{ent.doc}:nolist")
    lists_of = [f for f in ent.facts if f.kind in ("list", "objects") and f.value and writes(f)]
    lacks = sorted(k for k in lists if k not in {f.key for f in lists_of})
    own = [f for f in lists_of if hideable(f, ent) and not _nested(f)]
    if lacks and (not own or rng.random() < 0.5):
        absent, hide, how = withheld(lists[rng.choice(lacks)]), None, "missing"
    elif own:
        absent, hide, how = None, rng.choice(own), "withheld"
    else:
        return None

    def make():
        rec = record_of(kind, ent, split, rng, "nolist", hide=hide, absent=absent)
        rec["absent_list"] = {"key": (absent or hide).key, "how": how}
        return rec
    return make


def extra_records(kind, ents, seed, regular, keep):
    """Append the kind's v4 extra records through `keep(make, rid)` (v2.generate_v2's:
    returns the kept record or None): short records, then absent lists up to
    EMPTY_SHARE of the kind's arrays (counted over `regular`, its own records)."""
    by_rank = lambda what: sorted(ents, key=lambda e: _rank(seed, kind, e.doc, what))  # noqa: E731
    for e in by_rank("short")[:round(SHORT_SHARE * len(ents))]:
        keep(lambda: short_record(kind, e, split_of_v2(kind, e.doc), seed), f"{kind}/{e.doc}/short")
    lists = _list_keys(ents)
    n_arr = sum(arrays_of(r)[0] for r in regular)
    n_empty = sum(arrays_of(r)[1] for r in regular)
    if not lists or not n_arr:
        return
    for e in by_rank("nolist"):
        if n_empty >= EMPTY_SHARE * n_arr:
            break
        make = nolist_record(kind, e, split_of_v2(kind, e.doc), seed, lists)
        rec = make and keep(make, f"{kind}/{e.doc}/nolist")
        if rec is not None:
            a, z = arrays_of(rec)
            n_arr, n_empty = n_arr + a, n_empty + z


def report_v4(records):
    """Lines: short records, empty-array share and structure booleans' true
    share per split (the shares datagen v4 is designed for)."""
    out = []
    for s in ("train", "val", "test"):
        rs = [r for r in records if r["split"] == s]
        short = sum(1 for r in rs if r["template"].startswith("short-"))
        arr = [arrays_of(r) for r in rs]
        n, z = sum(a for a, _ in arr), sum(b for _, b in arr)
        st = [r["value"][p[1:]] for r in rs for p in r.get("structure", ()) if p[1:] in r["value"]]
        out.append(f"v4 {s}: short {short}/{len(rs)} ({short / max(len(rs), 1):.3f}), "
                   f"empty arrays {z}/{n} ({z / max(n, 1):.3f}), structure booleans "
                   f"{sum(st)}/{len(st)} true ({sum(st) / max(len(st), 1):.3f})")
    return out
