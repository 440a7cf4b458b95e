"""Release tables in CSV (datagen v4, kind `distro`, a test-only kind):
windows of 2..6 consecutive rows of /usr/share/distro-info/*.csv under the
file's header line and a `==> PATH <==` line, as their own text or rendered.

Facts: the distribution (enum, from the file name), the releases (array of
objects: version, codename, series, release date), the codenames (list), the
first row's version and release date, the last row's end-of-life date (null
when its eol column is empty), whether any row is an LTS release (bool).
Rows without a version or a release date (development series) end a window.
"""
import os

from ..facts import Fact
from . import Entity, text_of, walk_unique
from .meta import _list_fact

DISTROS = ("debian", "ubuntu")


class _Distro:
    NAME, SOURCE = "distro", "/usr/share/distro-info/*.csv (windows of 2..6 rows)"

    def find(self, root="/usr/share/distro-info"):
        return walk_unique([root], (".csv",), max_depth=0)

    def entities(self, paths, rng, n):
        out = []
        for p in paths:
            text = text_of(p, 1 << 20)
            if not text or not text.startswith("version,codename,series,created,release"):
                continue
            lines = text.rstrip("\n").split("\n")
            for i in range(1, len(lines) - 1):
                e = self.entity(p, lines[0], lines[i:i + rng.randint(2, 6)], i)
                if e is not None:
                    out.append(e)
        rng.shuffle(out)
        return sorted(out[:n], key=lambda e: e.doc)

    def entity(self, path, header, rows, i):
        good = []
        for r in rows:
            c = r.split(",")
            if len(c) < 5 or not c[0] or not c[4] or len(c[4]) != 10:
                break
            good.append(r)
        if len(good) < 2:
            return None
        head = f"==> {path} <==\n{header}\n"
        raw = head + "\n".join(good) + "\n"
        at, items, region, names = len(head), [], [], []
        for r in good:
            c, it, off = r.split(","), {}, at
            for col, (key, kind) in enumerate((("version", "span"), ("codename", "span"),
                                               ("series", "span"), (None, None), ("release", "date"))):
                if key:
                    it[key] = Fact(key, kind, c[col], pos=(off, off + len(c[col])))
                off += len(c[col]) + 1
            names.append((c[1], it["codename"].pos))
            items.append(it)
            region.append((at, at + len(r) + 1))
            at += len(r) + 1
        base = os.path.basename(path)
        dist = base[:-4]
        first, last = items[0], good[-1].split(",")
        eol = last[5] if len(last) > 5 and len(last[5]) == 10 else None
        facts = [Fact("releases", "objects", [1] * len(items), items=items, region=region, pos=True,
                      sub=[("version", "span", [["version"], ["number"]], {"en": "Version"}),
                           ("codename", "span", [["codename"], ["name"]], {"en": "Codename"}),
                           ("series", "span", [["series"], ["suite"]], {"en": "Series"}),
                           ("release", "date", [["release", "date"], ["released"]], {"en": "Released"})],
                      names=[["releases"], ["rows"]], desc=["each release row, in order"],
                      label={"en": "Releases"}),
                 _list_fact("codenames", names, [["codenames"], ["release", "names"]],
                            "the codenames, in order", label={"en": "Codenames"}),
                 Fact("first_version", "span", first["version"].value, pos=first["version"].pos,
                      names=[["first", "version"], ["oldest", "version"]],
                      desc=["the version of the first row"], label={"en": "First version"}),
                 Fact("first_release", "date", first["release"].value, pos=first["release"].pos,
                      names=[["first", "release", "date"], ["earliest", "release"]],
                      desc=["the release date of the first row"], label={"en": "First released"}),
                 Fact("last_eol", "date", eol, names=[["last", "end", "of", "life"], ["final", "eol"]],
                      desc=["the end-of-life date of the last row, if it has one"],
                      label={"en": "Last end of life"}),
                 Fact("lts", "bool", any("LTS" in r.split(",")[0] for r in good),
                      names=[["has", "lts"], ["any", "long", "term", "support"]],
                      neg=([["no", "lts"]], ["true if no row is an LTS release"]),
                      desc=["is any of the releases an LTS release?"])]
        if eol is not None:
            s = at - len(good[-1]) - 1 + len(",".join(last[:5])) + 1
            facts[-2] = Fact("last_eol", "date", eol, pos=(s, s + 10), names=facts[-2].names,
                             desc=facts[-2].desc, label=facts[-2].label)
        if dist in DISTROS:
            facts.append(Fact("distribution", "enum", dist, surface=dist, options=list(DISTROS),
                              names=[["distribution"], ["distro"]], desc=["which distribution's releases"],
                              label={"en": "Distribution"}))
        return Entity(f"{base}@{i}", f"{dist} releases", facts, raw=raw)


DISTRO = _Distro()
