"""Data files shipped by Debian packages: release tables of distro-info-data
(/usr/share/distro-info/*.csv, kind `release`) and the iso-codes JSON lists of
languages (ISO 639-3) and currencies (ISO 4217) (/usr/share/iso-codes/json,
kind `isocode`). A document is a run of consecutive rows / entries (windows
never overlap, and each is its own document for the splits), raw (the
CSV lines under their header; the JSON entries as the file writes them) or
rendered.

release: the releases (array of objects: version, codename, created, release
date; the release date null when not yet released), the first row's codename,
created and release dates, whether it has been released (bool). isocode: the
entries (array of objects: code, name, numeric code), the first entry's code
and name and, for languages, its type (enum from the one-letter code: L
living, E extinct, A ancient, H historical, C constructed, S special).
"""
import csv
import glob
import io
import json
import os

from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity, Writer

LANG_TYPES = {"L": "living", "E": "extinct", "A": "ancient", "H": "historical",
              "C": "constructed", "S": "special"}


class _Release:
    NAME, SOURCE = "release", "/usr/share/distro-info/*.csv"

    def find(self, root="/usr/share/distro-info"):
        return sorted(p for p in glob.glob(os.path.join(root, "*.csv")) if not is_reserved(p))

    def entities(self, paths, rng, n):
        tables = []
        for p in paths:
            text = read_text(p)
            rows = list(csv.reader(io.StringIO(text)))
            if rows and rows[0][:5] == ["version", "codename", "series", "created", "release"]:
                tables.append((os.path.basename(p)[:-4], rows[0], [r for r in rows[1:] if len(r) >= 5]))
        out, seen = [], set()
        for _ in range(n * 2):
            if not tables or len(out) >= n:
                break
            name, head, rows = rng.choice(tables)
            if len(rows) < 3:
                continue
            i = rng.randrange(max(1, len(rows) // 6)) * 6  # windows never share rows
            if (name, i) in seen:
                continue
            seen.add((name, i))
            out.append(self._entity(name, head, rows[i:i + rng.randint(2, 6)], i))
        return sorted(out, key=lambda e: e.doc)

    def _entity(self, name, head, rows, i):
        w = Writer()
        w.text(",".join(head) + "\n")
        items, region = [], []
        for r in rows:
            a, it = w._n, {}
            for j, cell in enumerate(r):
                w.text("," if j else "")
                pos = w.put(cell)
                key = head[j] if j < len(head) else None
                if key in ("version", "codename") and cell:
                    it[key] = Fact(key, "span", cell, pos=pos)
                elif key in ("created", "release") and cell:
                    it[key] = Fact(key, "date", cell, surface=cell, pos=pos)
            w.text("\n")
            items.append(it)
            region.append((a, w._n))
        first = items[0]
        facts = [Fact("releases", "objects", [1] * len(items), items=items, region=region, pos=True,
                      sub=[("version", "span", [["version"], ["number"]], {"en": "Version"}),
                           ("codename", "span", [["codename"], ["name"], ["code", "name"]],
                            {"en": "Codename"}),
                           ("created", "date", [["created"], ["opened"]], {"en": "Created"}),
                           ("release", "date", [["release", "date"], ["released", "on"]],
                            {"en": "Released"})],
                      names=[["releases"], ["versions"], ["rows"]],
                      label={"en": "Releases", "de": "Versionen", "fr": "Versions", "es": "Versiones"},
                      desc=["the releases listed, in order"])]
        for key, names, desc in (("codename", [["first", "codename"], ["codename"]], "codename of the first row"),
                                 ("created", [["created"], ["first", "created"]], "creation date of the first row"),
                                 ("release", [["release", "date"], ["first", "release"]],
                                  "release date of the first row, if released")):
            f = first.get(key)
            facts.append(Fact(f"first_{key}", f.kind if f else ("date" if key != "codename" else "span"),
                              f.value if f else None, surface=f.surface if f else None,
                              pos=f.pos if f else None, names=names, desc=[desc],
                              label={"en": " ".join(names[0]).capitalize()}))
        facts.append(Fact("released", "bool", "release" in first,
                          names=[["released"], ["is", "released"], ["has", "shipped"]],
                          neg=([["unreleased"], ["not", "yet", "released"]],
                               ["true if the first row has no release date yet"]),
                          desc=["does the first row have a release date?"]))
        # doc "name:i": each window is its own document for the split hash
        return Entity(f"{name}:{i}", f"{name} releases", facts, raw=w.finish()[0])


class _IsoCode:
    NAME, SOURCE = "isocode", "/usr/share/iso-codes/json/iso_639-3.json, iso_4217.json"

    def find(self, root="/usr/share/iso-codes/json"):
        return sorted(p for p in (os.path.join(root, "iso_639-3.json"), os.path.join(root, "iso_4217.json"))
                      if os.path.isfile(p) and not is_reserved(p))

    def entities(self, paths, rng, n):
        lists = []
        for p in paths:
            d = json.loads(read_text(p, limit=8 << 20))
            key = next(iter(d))
            lists.append((key, [e for e in d[key] if isinstance(e, dict) and "alpha_3" in e and "name" in e]))
        out, seen = [], set()
        for _ in range(n * 2):
            if not lists or len(out) >= n:
                break
            key, entries = rng.choice(lists)
            if len(entries) < 3:
                continue
            i = rng.randrange(max(1, len(entries) // 5)) * 5  # windows never share entries
            if (key, i) not in seen:
                seen.add((key, i))
                out.append(self._entity(key, entries[i:i + rng.randint(2, 5)], i))
        return sorted(out, key=lambda e: e.doc)

    def _entity(self, key, entries, i):
        w = Writer()
        w.text('{\n  "%s": [\n' % key)
        items, region = [], []
        for k, e in enumerate(entries):
            a, it = w._n, {}
            w.text("    {\n")
            fields = [(f, v) for f, v in e.items() if isinstance(v, str) and '"' not in v and "\\" not in v]
            for j, (f, v) in enumerate(fields):
                w.text(f'      "{f}": "')
                pos = w.put(v)
                w.text('"' + ("," if j < len(fields) - 1 else "") + "\n")
                if f in ("alpha_3", "name", "numeric"):
                    it[f] = Fact(f, "span", v, pos=pos)
                if f == "type" and v in LANG_TYPES:
                    it["type"] = v
            w.text("    }" + ("," if k < len(entries) - 1 else "") + "\n")
            items.append(it)
            region.append((a, w._n))
        w.text("  ]\n}\n")
        lang = key.startswith("639")
        what = "languages" if lang else "currencies"
        sub = [("alpha_3", "span", [["code"], ["alpha", "3"], ["iso", "code"]], {"en": "Code"}),
               ("name", "span", [["name"], ["english", "name"]], {"en": "Name"})]
        if not lang:
            sub.append(("numeric", "span", [["numeric"], ["numeric", "code"]], {"en": "Numeric"}))
        objs = [{k: v for k, v in it.items() if k != "type"} for it in items]
        first = items[0]
        facts = [Fact("entries", "objects", [1] * len(items), items=objs, region=region, pos=True, sub=sub,
                      names=[[what], ["entries"], ["codes"]], label={"en": what.capitalize()},
                      desc=[f"the {what} listed, in order"]),
                 Fact("first_code", "span", first["alpha_3"].value, pos=first["alpha_3"].pos,
                      names=[["first", "code"], ["code"]], desc=["ISO code of the first entry"],
                      label={"en": "First code"}),
                 Fact("first_name", "span", first["name"].value, pos=first["name"].pos,
                      names=[["first", "name"], ["name"]], desc=["name of the first entry"],
                      label={"en": "First name"})]
        if lang and first.get("type"):
            facts.append(Fact("lang_type", "enum", LANG_TYPES[first["type"]], surface=first["type"],
                              options=list(LANG_TYPES.values()),
                              option_desc={v: f'ISO 639-3 type "{k}"' for k, v in LANG_TYPES.items()},
                              names=[["language", "type"], ["type"], ["status"]],
                              desc=["the first language's type (living, extinct, ...)"],
                              label={"en": "Type"}))
        return Entity(f"iso{key}:{i}", f"ISO {key}", facts, raw=w.finish()[0])


RELEASE, ISOCODE = _Release(), _IsoCode()
