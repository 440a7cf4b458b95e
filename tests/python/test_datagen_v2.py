"""deg.datagen v2 (issue 12): the evaluation-reserved guard, every document kind
on small committed fixtures (tests/python/fixtures/datagen, written for these
tests), gold located and valid (deg's validator and python-jsonschema),
balanced booleans, splits, layouts and determinism."""
import json
import os
import random
import shutil

import jsonschema
import pytest

import deg
from deg._native import has
from deg.datagen import guard
from deg.datagen.facts import OMIT, Fact, gold_of, make_schema, pointers
from deg.datagen.record import build, concrete
from deg.datagen.render import LANGS, LAYOUTS, render, usable

pytestmark = pytest.mark.skipif(not has("deg_candidates"), reason="libdeg has no candidate finder")

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "datagen")
ROOTS = {"manpage": f"{FIX}/man", "locale": f"{FIX}/locales", "readme": f"{FIX}/doc",
         "news": f"{FIX}/doc", "config": [f"{FIX}/etc", f"{FIX}/units", f"{FIX}/doc"],
         "pydoc": f"{FIX}/pystd", "zone": f"{FIX}/zoneinfo", "license": f"{FIX}/licenses",
         "services": f"{FIX}/etc", "release": f"{FIX}/distro", "isocode": f"{FIX}/isojson"}


def _gen(seed=0, kinds=None, per_doc=(3, 3)):
    from deg.datagen.v2 import generate_v2
    kinds = kinds or sorted(ROOTS)
    return generate_v2(seed, {k: 10 for k in kinds}, roots={k: ROOTS[k] for k in kinds},
                       records_per_doc=per_doc)


@pytest.fixture(scope="module")
def recs():
    records, stats = _gen()
    assert not stats["missing"], stats["missing"]
    return records, stats


# ---------------------------------------------------------------- the guard

@pytest.mark.parametrize("path", [
    "/usr/share/doc/bash/copyright", "debian/copyright", "/x/copyright.gz", "pkg/COPYRIGHT",
    "/usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA",
    "/usr/lib/python3/dist-packages/foo.egg-info/PKG-INFO", "sdist/PKG-INFO",
    "/a/b-1.0.dist-info/RECORD", "/a/b.egg-info/SOURCES.txt", "/etc/frob/copyright.conf"])
def test_guard_refuses_reserved(path):
    assert guard.is_reserved(path)
    with pytest.raises(guard.ReservedSourceError, match="reserved for evaluation"):
        guard.read_text(path)


@pytest.mark.parametrize("path", ["/usr/share/doc/bash/README", "/usr/share/doc/x/changelog.Debian.gz",
                                  "/usr/share/common-licenses/GPL-3", "/etc/login.defs",
                                  "/usr/share/man/man1/ls.1.gz"])
def test_guard_allows_ordinary(path):
    assert not guard.is_reserved(path)


def test_guard_follows_symlinks(tmp_path):
    (tmp_path / "copyright").write_text("Files: *\n")
    (tmp_path / "README").symlink_to(tmp_path / "copyright")
    with pytest.raises(guard.ReservedSourceError):
        guard.read_text(str(tmp_path / "README"))


def test_no_kind_reads_reserved_files(monkeypatch):
    """The fixtures hold a DEP-5-like copyright file, a copyright.conf and a
    .dist-info/METADATA next to real sources: a whole run reads files (through
    the guard) but never one of those."""
    seen = []
    real = guard.check_path

    def spy(path):
        seen.append(str(path))
        return real(path)
    monkeypatch.setattr(guard, "check_path", spy)
    records, _ = _gen(per_doc=(1, 1))
    assert records and len(seen) >= 10
    assert not [p for p in seen if guard.is_reserved(p)]
    # and independently of is_reserved: the fixture's reserved files by name
    assert not [p for p in seen if os.path.basename(p) in ("copyright", "copyright.conf", "METADATA")
                or ".dist-info" in p]
    assert any(p.endswith("README") for p in seen)
    for r in records:  # no reserved text leaks into any context
        assert "Reserved" not in r["context"] and "leaked" not in r["context"]


# ---------------------------------------------------------------- records

def _check_record(r):
    """deg's checks, python-jsonschema, the trainer's reader, and each gold span."""
    from deg.train.data import check_record, gold_spans
    plan = check_record(r)
    assert deg.validate(r["schema"], r["value"]) == []
    jsonschema.Draft202012Validator(r["schema"]).validate(r["value"])
    ctx = r["context"]
    for f in plan.fields:
        if not f.mode.startswith("extract."):
            continue
        for ptr, v in concrete(f.path, r["value"]):
            if v is None:
                assert ptr not in r["spans"]
                continue
            assert gold_spans(r, ptr, f, v)
            s, e = r["spans"][ptr]
            text = ctx[s:e]
            if f.mode == "extract.number":
                assert deg.parse_number(text, integer=f.type == "integer") == v
            elif f.mode == "extract.date":
                assert (deg.parse_date(text) if f.format == "date" else deg.parse_datetime(text)[0]) == v
            else:
                assert text == v, (r["id"], ptr)


def test_every_record_checked(recs):
    records, stats = recs
    assert len(records) >= 40 and stats["bad"] == {}
    for r in records:
        _check_record(r)
    assert {r["source"] for r in records} == set(ROOTS)


GOLD = {  # (kind, fact key) -> gold from the fixture text, read by hand
    ("manpage", "command"): "frobnicate", ("manpage", "summary"): "adjust the widget cache of a workspace",
    ("manpage", "section"): "1", ("manpage", "source"): "frobtools 2.4",
    ("manpage", "manual"): "User Commands", ("manpage", "has_options"): True,
    ("locale", "language"): "German", ("locale", "territory"): "Germany",
    ("locale", "currency"): "EUR", ("locale", "symbol"): "\u20ac", ("locale", "prefix"): 49,
    ("locale", "first_weekday"): "Monday", ("locale", "paper"): "A4",
    ("locale", "native_country"): "Deutschland", ("locale", "revised"): "2000-06-24",
    ("locale", "euro"): True, ("readme", "url"): "https://frob.example.org/tools",
    ("readme", "email"): "frob-users@example.org", ("readme", "version"): "2.4.1",
    ("readme", "date"): "2024-03-05", ("readme", "title"): "Frobtools",
    ("readme", "headings"): ["Frobtools", "Installing", "Usage"], ("readme", "license"): True,
    ("readme", "package"): "frob",
    ("news", "email"): "ana@example.net", ("news", "version"): "2.4", ("news", "date"): "2024-03-01",
    ("news", "license"): False,
    ("license", "version"): "1.0", ("license", "date"): "2024-03-05",
    ("license", "url"): "https://frob.example.org/license", ("license", "title"): "FROB PUBLIC LICENSE",
}


def _facts(kind, seed=0):
    from deg.datagen.v2 import KINDS
    mod = KINDS[kind]
    return mod.entities(mod.find(ROOTS[kind]), random.Random(seed), 10)


@pytest.mark.parametrize("kind", ["manpage", "locale", "readme", "news", "license"])
def test_kind_gold_from_source(kind):
    ents = [e for e in _facts(kind) if kind != "manpage" or e.doc.endswith("@en")]
    if kind == "license":
        ents = [e for e in ents if e.doc == "FROB-1.0"]
    assert ents
    got = {f.key: f.value for f in ents[0].facts}
    want = {k: v for (kd, k), v in GOLD.items() if kd == kind}
    assert {k: got.get(k) for k in want} == want


def test_manpage_options_and_translation():
    ents = {e.doc: e for e in _facts("manpage")}
    en = {f.key: f for f in ents["frobnicate.1@en"].facts}
    opts = [{k: x.value for k, x in it.items()} for it in en["options"].items]
    assert opts == [{"flag": "-v", "long": "--verbose", "help": "print each widget as it is cached"},
                    {"flag": "-n", "long": "--dry-run", "help": "show what would change"},
                    {"long": "--jobs", "help": "use N worker threads"}]
    de = {f.key: f.value for f in ents["frobnicate.1@de"].facts}
    assert de["summary"] == "passt den Widget-Zwischenspeicher eines Arbeitsbereichs an"
    assert de["date"] == "2024-03-05" and de["section"] == "1"
    assert "date" not in {f.key for f in ents["frobnicate.1@en"].facts}  # "March 2024": no day
    assert "für DIR" in ents["frobnicate.1@de"].raw  # \(:u decoded


def test_locale_lists_and_config_values():
    loc = {f.key: f.value for f in _facts("locale")[0].facts}
    assert loc["months"][2] == "M\u00e4rz" and len(loc["months"]) == 12
    assert loc["days"][:2] == ["Sonntag", "Montag"]
    conf = {e.doc.split("@")[0].rsplit("/", 1)[1]: {f.key: f.value for f in e.facts}
            for e in _facts("config")}
    assert conf["frob.conf"] == {"WORKSPACE_ROOT": "/srv/frob", "CACHE_LIMIT_MB": 512,
                                 "PARALLEL": True, "COLOR_OUTPUT": False, "LOG_FACILITY": "daemon"}
    assert conf["frob.service"]["PrivateTmp"] is True and conf["frob.service"]["TimeoutStopSec"] == 30
    assert conf["frobd.conf"]["listen_port"] == 8080
    assert "copyright.conf" not in conf


def test_release_and_isocode():
    from deg.datagen.kinds import data
    rel = {e.doc: {f.key: f for f in e.facts} for e in _facts("release")}
    r0 = rel["frob:0"]
    assert r0["first_codename"].value == "Widget" and r0["first_release"].value == "2019-06-01"
    assert r0["released"].value is True
    assert [it["codename"].value for it in r0["releases"].items][:2] == ["Widget", "Gadget"]
    rows = [ln.split(",") for ln in open(f"{FIX}/distro/frob.csv").read().splitlines()]
    last = {f.key: f for f in data.RELEASE._entity("frob", rows[0], rows[4:], 3).facts}
    assert last["released"].value is False and last["first_release"].value is None
    assert "release" not in last["releases"].items[-1]
    iso = {e.doc: {f.key: f for f in e.facts} for e in _facts("isocode")}
    cur = iso["iso4217:0"]
    assert [{k: x.value for k, x in it.items()} for it in cur["entries"].items][0] == {
        "alpha_3": "FRB", "name": "Frob Mark", "numeric": "008"}
    lang = iso["iso639-3:0"]
    assert lang["lang_type"].value == "living" and lang["first_name"].value == "Frobish"


def test_pydoc_zone_services():
    py = {e.doc: {f.key: f for f in e.facts} for e in _facts("pydoc")}
    assert set(py) == {"frobmod.rebuild_cache", "frobmod.count_widgets", "pkg.names.widget_name"}
    rc = py["frobmod.rebuild_cache"]
    assert rc["params"].value == ["workspace", "jobs", "dry_run"] and rc["variadic"].value is False
    assert [{k: x.value for k, x in it.items()} for it in rc["defaults"].items] == [
        {"name": "workspace"}, {"name": "jobs", "default": "1"}, {"name": "dry_run", "default": "False"}]
    assert py["frobmod.count_widgets"]["variadic"].value is True
    zones = {e.doc: {f.key: f for f in e.facts} for e in _facts("zone")}
    assert [it["tz"].value for it in zones["AR"]["zones"].items] == [
        "America/Argentina/Buenos_Aires", "America/Argentina/Cordoba"]
    assert zones["AR"]["country"].value == "Argentina" and zones["IS"]["multi"].value is False
    sv = _facts("services")
    assert sv and all(e.facts[0].items[0]["proto"].value in ("tcp", "udp") for e in sv)


# ---------------------------------------------------------------- schemas, layouts, balance

def _sample_facts():
    items = [{"tz": Fact("tz", "span", "Europe/Lisbon"), "n": Fact("n", "int", 3, surface="3")},
             {"tz": Fact("tz", "span", "Atlantic/Madeira"), "n": Fact("n", "int", 12, surface="12")}]
    return [Fact("name", "span", "Widget Works", label={"en": "Name", "de": "Name"}),
            Fact("mail", "email", "ops@example.org"), Fact("site", "uri", "https://example.org/w"),
            Fact("size", "int", 4096, surface="4,096"), Fact("day", "date", "2021-07-19"),
            Fact("tier", "enum", "gold", options=["bronze", "silver", "gold", "platinum"]),
            Fact("active", "bool", True, neg=([["inactive"]], ["true if inactive"])),
            Fact("tags", "list", ["alpha", "beta", "gamma"]),
            Fact("zones", "objects", [1, 1], items=items,
                 sub=[("tz", "span", [["tz"]], {"en": "Zone"}), ("n", "int", [["n"]], {"en": "N"})]),
            Fact("missing", "span", None, names=[["fax"]])]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_and_language_marks_gold(layout):
    facts = _sample_facts()
    assert usable(facts, layout)
    for lang in LANGS:
        for seed in range(4):
            rng = random.Random(f"{layout}:{lang}:{seed}")
            schema, fields = make_schema(facts, rng, max_fields=10)
            d = render(facts, pointers(fields), layout, lang, rng, title="Widget")
            ctx, marks, regions = d.finish()
            r = build(rid="x", split="train", source="t", template=layout, doc="d", context=ctx,
                      schema=schema, value=gold_of(fields), marks=marks, regions=regions)
            _check_record(r)
            assert "Widget Works" in ctx and "fax" not in ctx.lower()


def test_usable_refuses_escaping_layouts():
    f = [Fact("q", "span", 'say "hi"'), Fact("h", "span", "a <b>")]
    assert not usable(f, "json") and not usable(f, "html") and usable(f, "kv")


def test_booleans_balanced_and_schema_varies():
    """A fact that is always false still gives true gold half the time (negated
    questions, equality and threshold tests); names, casings and enum orders vary."""
    facts = [Fact("essential", "bool", False, neg=([["optional"]], ["true if not essential"])),
             Fact("tier", "enum", "gold", options=["bronze", "silver", "gold", "platinum"]),
             Fact("size", "int", 700, surface="700")]
    vals, names, orders, scores = [], set(), set(), 0
    for seed in range(400):
        schema, fields = make_schema(facts, random.Random(seed))
        for f in fields:
            if f.spec.get("type") == "boolean":
                vals.append(f.value)
            names.add(f.name)
            if "enum" in f.spec:
                orders.add(tuple(f.spec["enum"]))
            scores += "x-levels" in f.spec
    share = sum(vals) / len(vals)
    assert len(vals) > 300 and 0.4 < share < 0.6, share
    assert len(names) > 20 and len(orders) > 10 and scores > 10


def test_score_bands_hold_the_value():
    from deg.datagen.facts import _score_field, Namer
    for seed in range(300):
        rng = random.Random(seed)
        v = rng.choice([0, 1, 3, 7, 12, 99, 512, 4096, 65536])
        f = _score_field(Fact("size", "int", v, surface=str(v)), rng, Namer(rng))
        if f is None:
            continue
        lo = f.spec["minimum"]
        label = f.spec["x-levels"][str(f.value)]
        nums = [int(x) for x in label.replace(" or more", "").split(" to ")]
        assert nums[0] <= v and (label.endswith("or more") or v <= nums[-1]), (v, label)
        assert f.spec["maximum"] - lo + 1 == len(f.spec["x-levels"]) and 3 <= len(f.spec["x-levels"]) <= 11


# ---------------------------------------------------------------- splits, determinism, CLI

def test_splits_and_held_out(recs):
    from deg.datagen.v2 import HELD_OUT_LAYOUTS, TEST_ONLY_KINDS, VAL_ONLY_KINDS, split_of_v2
    records, _ = recs
    by_doc = {}
    for r in records:
        if r["source"] in TEST_ONLY_KINDS:
            assert r["split"] == "test"
        if r["source"] in VAL_ONLY_KINDS:
            assert r["split"] == "val"
        if r["split"] == "train":
            assert r["template"].split("-")[0] not in HELD_OUT_LAYOUTS
        by_doc.setdefault((r["source"], r["doc"].split("@")[0]), set()).add(r["split"])
    assert all(len(s) == 1 for s in by_doc.values())
    assert split_of_v2("license", "x") == "test" and split_of_v2("services", "x") == "val"
    splits = [split_of_v2("manpage", f"p{i}") for i in range(2000)]
    assert 0.75 < splits.count("train") / 2000 < 0.85 and splits.count("test") > 150


def test_deterministic():
    a, sa = _gen(seed=3, per_doc=(1, 2))
    b, sb = _gen(seed=3, per_doc=(1, 2))
    assert json.dumps(a) == json.dumps(b) and sa == sb
    c, _ = _gen(seed=4, per_doc=(1, 2))
    assert json.dumps(a) != json.dumps(c)


def test_v1_booleans_balanced():
    from deg.datagen.v2 import balance_booleans
    rec = {"id": "r", "schema": {"type": "object", "properties": {
        "gift": {"type": "boolean", "description": "is it a gift?"}, "n": {"type": "integer"}},
        "required": ["gift"]}, "value": {"gift": False, "n": 1}}
    outs = [balance_booleans(dict(rec, id=f"r{i}")) for i in range(200)]
    flipped = [o for o in outs if "not_gift" in o["value"]]
    assert 60 < len(flipped) < 140
    o = flipped[0]
    assert o["value"] == {"not_gift": True, "n": 1} and o["schema"]["required"] == ["not_gift"]
    assert o["schema"]["properties"]["not_gift"]["description"] == "the opposite of: is it a gift?"
    assert rec["value"] == {"gift": False, "n": 1}  # the input is not modified


def test_cli_v2(tmp_path, capsys):
    from deg.datagen.__main__ import main
    out = tmp_path / "o" / "records.jsonl"
    args = ["--v2", "--out", str(out), "--packages", "0", "--changelogs", "0", "--synthetic", "2"]
    args += [x for k in sorted(ROOTS) for x in ("--kind", f"{k}=0")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "records per split" in text and "true share" in text and "kinds without sources" in text
    lines = out.read_text().splitlines()
    assert len(lines) >= 5
    assert {json.loads(x)["source"] for x in lines} <= {"order", "invoice", "ticket", "event", "listing"}


def test_cli_rejects_unknown_kind(tmp_path):
    from deg.datagen.__main__ import main
    with pytest.raises(SystemExit) as ei:
        main(["--v2", "--out", str(tmp_path / "r.jsonl"), "--kind", "nosuch=3"])
    assert ei.value.code == 2


def test_fixtures_are_small():
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(FIX) for f in fs)
    assert total < 20000


def test_docs_skip_python_packages(tmp_path):
    """READMEs of python3-* packages are often their (reserved) METADATA long
    description: the readme / news kinds never list them."""
    from deg.datagen.kinds import docs
    for pkg in ("python3-frob", "libfrob1"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "README").write_text("Frob\n====\n\nSee https://frob.example.org\n" * 10)
    assert [p.split("/")[-2] for p in docs.README.find(str(tmp_path))] == ["libfrob1"]


def test_copies_are_one_document(tmp_path):
    """Copies of one man page under other names and one README in two packages'
    doc dirs are one document each (so a copy cannot land in another split)."""
    from deg.datagen.kinds import docs, man
    (tmp_path / "man" / "man1").mkdir(parents=True)
    src = open(f"{FIX}/man/man1/frobnicate.1").read()
    for name in ("frobnicate.1", "frob.1", "unfrob.1"):
        (tmp_path / "man" / "man1" / name).write_text(src)
    ents = man.entities(man.find(str(tmp_path / "man")), random.Random(0), 10)
    assert [e.doc for e in ents] == ["frobnicate.1@en"]
    for pkg in ("libfrob1", "libfrob-dev"):
        (tmp_path / "doc" / pkg).mkdir(parents=True)
        shutil.copy(f"{FIX}/doc/frob/README", tmp_path / "doc" / pkg / "README")
    assert len(docs.README.entities(docs.README.find(str(tmp_path / "doc")), random.Random(0), 10)) == 1


def test_withheld_fields_are_hard_negatives():
    """--withhold: a rendered document leaves one fact out and the schema asks
    for it anyway; gold null / omitted / [] and the value is not in the text,
    while the record stays checked (gold of every other field located)."""
    from deg.datagen.v2 import KINDS, _withhold_pick, generate_v2
    kinds = sorted(ROOTS)
    records, stats = generate_v2(5, {k: 10 for k in kinds}, roots={k: ROOTS[k] for k in kinds},
                                 records_per_doc=(2, 2), withhold=1.0)
    # the title "frobmod.count_widgets" writes a left-out module name: skipped, counted
    assert stats["bad"] == {"withheld-value-written": 1}
    held = [r for r in records if "withheld" in r]
    assert len(held) >= 0.5 * len(records)
    assert all(r["id"].endswith("/withheld") == ("withheld" in r) for r in records)
    ents = {}
    for kind in kinds:
        mod = KINDS[kind]
        for e in mod.entities(mod.find(ROOTS[kind]), random.Random(f"5:{kind}:pick"), 10):
            ents[(kind, e.doc)] = e
    checked_absent = 0
    for r in held:
        _check_record(r)
        assert r["template"] != "raw"  # nothing can be left out of a source's own text
        name = r["withheld"][1:]
        spec = r["schema"]["properties"][name]
        gold = r["value"].get(name, "omitted")
        if spec.get("type") == "array":
            assert gold == []
        else:
            assert gold in (None, "omitted")
            assert (gold is None) == ("null" in json.dumps(spec))
        jsonschema.validate(r["value"], r["schema"])
        # the left-out value is not written (unless a shown fact contains it)
        ent = ents[(r["source"], r["doc"])]
        k = int(r["id"].split("/")[-2])
        hidden = _withhold_pick(ent.facts, random.Random(f"withhold-pick:{r['source']}:{ent.doc}:{k}"))
        if isinstance(hidden.value, str) and hidden.kind != "enum" and not any(
                g is not hidden and hidden.value in json.dumps(g.value, ensure_ascii=False)
                for g in ent.facts):
            assert hidden.value not in r["context"], (r["id"], hidden)
            checked_absent += 1
    assert checked_absent >= 10
    # a left-out choice: null is an option and the gold; choices the text answers get
    # a null option too at times (null among the options gives nothing away)
    def options(p):
        return p.get("enum") or [o.get("const") for o in p.get("oneOf", [{"const": "x"}])]

    choice = [(r, k, p) for r in held for k, p in r["schema"]["properties"].items()
              if "enum" in p or "oneOf" in p]
    enum_held = [(r, k, p) for r, k, p in choice if "/" + k == r["withheld"]]
    assert enum_held and all(None in options(p) for _, _, p in enum_held)
    from deg.datagen.facts import withheld
    color = Fact("color", "enum", "red", options=["red", "green", "blue", "cyan"])
    size = Fact("size", "span", "large")
    n_null = 0
    for i in range(200):
        must = withheld(size)
        _, fields = make_schema([color, must], random.Random(i), must=must)
        assert must in [f.fact for f in fields if f.value is None or f.value is OMIT]
        spec = next(f.spec for f in fields if f.fact is color)
        n_null += None in options(spec)
    assert 50 < n_null < 110  # p = 0.4


def test_withhold_zero_is_datagen_v2():
    from deg.datagen.v2 import generate_v2
    kinds = ["manpage", "readme"]
    kw = dict(roots={k: ROOTS[k] for k in kinds}, records_per_doc=(1, 2))
    a, _ = generate_v2(3, {k: 10 for k in kinds}, **kw)
    b, _ = generate_v2(3, {k: 10 for k in kinds}, withhold=0.0, **kw)
    c, _ = generate_v2(3, {k: 10 for k in kinds}, withhold=0.5, **kw)
    assert json.dumps(a) == json.dumps(b) and not any("withheld" in r for r in a)
    assert any("withheld" in r for r in c)
    # records whose coin said no are the v2 records, bitwise
    plain = {r["id"]: r for r in a}
    same = [r for r in c if "withheld" not in r]
    assert same and all(json.dumps(plain[r["id"]]) == json.dumps(r) for r in same)
