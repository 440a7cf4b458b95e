"""deg datagen: training and evaluation records (deg contract §11, §12.4, §12.6).

    python -m deg.datagen --out data/records.jsonl --seed 0
    python -m deg.datagen --v2 --out data/records.jsonl   # datagen v2: deg.datagen.v2

This module is the v1 generator (below); v2 (issue 12: many document kinds of
real offline text, varied schemas, layouts and languages) is deg.datagen.v2
and adds these sources at a small share. Files reserved for evaluation are
refused by deg.datagen.guard in both.

Sources (all text written by people outside this project, or generated):
  * debian-packages: apt's Packages lists (/var/lib/apt/lists/*_Packages*),
    one document per binary package, layouts PKG_LAYOUTS;
  * debian-changelog: /usr/share/doc/*/changelog.Debian.gz, the newest
    entries of one package, layouts CL_LAYOUTS (nested arrays);
  * synthetic sources (order, invoice, ticket, event, listing).

Splits: a document goes to train / val / test by a hash of its source and
id (80/10/10). `test` additionally holds every document of HELD_OUT_SOURCES
and every rendering in a held-out template (the last template of each
source), so test measures sources and layouts never trained on; train and
val never use them. Deterministic: the same arguments give the same bytes.

Every record is checked (record.build): the schema compiles, the gold value
is valid against it (deg's validator), each extract leaf's gold span is
found by the runtime's candidate finder. Bad records are counted by reason
and skipped.
"""
import hashlib
import json
import random

from . import debian, synthetic
from .record import BadRecord, build, count_record, modes_of

__all__ = ["generate", "split_of", "HELD_OUT_SOURCES", "BadRecord", "build", "modes_of"]

HELD_OUT_SOURCES = ("event", "listing")


def split_of(source, doc):
    """train/val/test of a document by hash (80/10/10); held-out sources: test."""
    if source in HELD_OUT_SOURCES:
        return "test"
    h = int.from_bytes(hashlib.sha256(f"{source}\0{doc}".encode()).digest()[:8], "big") % 10
    return "test" if h == 0 else ("val" if h == 1 else "train")


def _templates_for(split, templates):
    """Train/val never see the held-out (last) template; test sees only it
    when the source has several, else the only one."""
    if len(templates) == 1:
        return templates
    return templates[-1:] if split == "test" else templates[:-1]


def _docs(seed, n_packages, n_changelogs, n_synthetic, packages_paths, changelog_glob):
    """(source, doc id, template, rng, render()) in a fixed order."""
    if n_packages:
        stanzas = debian.read_packages(packages_paths)
        pick = random.Random(f"{seed}:packages").sample(stanzas, min(n_packages, len(stanzas)))
        for st in sorted(pick, key=lambda s: s["Package"]):
            doc = st["Package"]
            split = split_of("debian-packages", doc)
            for t in _templates_for(split, debian.PKG_LAYOUTS):
                rng = random.Random(f"{seed}:debian-packages:{doc}:{t}")
                yield ("debian-packages", doc, t, split, rng,
                       lambda st=st, t=t, rng=rng: debian.package_doc(st, t, rng) + (None,))
    if n_changelogs:
        paths = debian.changelog_paths(changelog_glob)
        pick = random.Random(f"{seed}:changelogs").sample(paths, min(n_changelogs, len(paths)))
        for p in sorted(pick):
            doc = p.split("/")[-2]
            split = split_of("debian-changelog", doc)
            ts = _templates_for(split, debian.CL_LAYOUTS)
            rng = random.Random(f"{seed}:debian-changelog:{doc}")
            t = rng.choice(ts)

            def render(p=p, t=t, rng=rng):
                r = debian.changelog_doc(debian.read_changelog(p, max_entries=rng.randint(1, 3)), t, rng)
                return None if r is None else r + (None,)
            yield ("debian-changelog", doc, t, split, rng, render)
    for source in sorted(synthetic.SOURCES):
        gen, templates = synthetic.SOURCES[source]
        for k in range(n_synthetic):
            doc = f"{source}-{k}"
            split = split_of(source, doc)
            rng = random.Random(f"{seed}:{source}:{k}")
            t = rng.choice(_templates_for(split, templates))
            yield (source, doc, t, split, rng, lambda gen=gen, t=t, rng=rng: gen(rng, t))


def generate(seed=0, n_packages=200, n_changelogs=100, n_synthetic=100,
             packages_paths=None, changelog_glob=debian.CHANGELOG_GLOB, progress=None):
    """(records, stats). stats: {"records": {split: n}, "modes": {split:
    {mode: n}}, "bad": {reason: n}, "bad_examples": [...]}. Missing sources
    (no apt lists, no changelogs) just give no records of that source."""
    records, bad, bad_ex = [], {}, []
    stats = {"records": {}, "modes": {}, "sources": {}}
    for source, doc, t, split, rng, render in _docs(seed, n_packages, n_changelogs, n_synthetic,
                                                     packages_paths, changelog_glob):
        rid = f"{source}/{doc}/{t}"
        try:
            out = render()
            if out is None:
                raise BadRecord("no_usable_content", rid)
            d, schema, value, probs = out
            ctx, marks, regions = d.finish()
            rec = build(rid=rid, split=split, source=source, template=t, doc=doc, context=ctx,
                        schema=schema, value=value, marks=marks, regions=regions,
                        decide_probs=probs)
        except BadRecord as e:
            bad[e.reason] = bad.get(e.reason, 0) + 1
            if len(bad_ex) < 20:
                bad_ex.append({"id": rid, "why": str(e)})
            continue
        records.append(rec)
        count_record(stats, rec)
        if progress:
            progress(len(records))
    stats["bad"] = bad
    stats["bad_examples"] = bad_ex
    return records, stats


def write_jsonl(records, path):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")


def read_jsonl(path, split=None):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                if split is None or r.get("split") == split:
                    out.append(r)
    return out
