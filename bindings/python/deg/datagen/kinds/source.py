"""Source-file headers (datagen v3): C headers' leading comment blocks (kind
`cheader`), Python standard-library modules' headers (kind `pymodule`) and
Perl modules' POD documentation (kind `perlpod`), each as its own text.

cheader (/usr/include/**/*.h whose leading comment writes a copyright line;
the excerpt runs to ~25 lines past the comment: include guard, #includes,
version macros): earliest and latest copyright year (int), copyright holder,
the licence (enum, from the licence's own words), whether it is permissive
(bool), the first e-mail address and URL, the include guard macro, the
included headers (list), the first *VERSION* macro's value. At most 12
documents per copyright holder (glibc's headers share one notice).
pymodule (the interpreter's stdlib *.py, read as text and `ast`, never
imported; a `# path` line, then the file up to its first def or class): the
path, the docstring's first line, imported modules (list), __all__ (list),
__version__, __author__ (and its e-mail), the earliest copyright year,
whether it is a package's __init__ (bool), whether it defines __all__ (bool).
Site-packages are not read: their packages' metadata is reserved for
evaluation, so their sources stay out too.
perlpod (*.pm with `=head1 NAME` under the Perl library dirs): the POD's
NAME, VERSION, SYNOPSIS (cut), AUTHOR(S), COPYRIGHT / LICENSE and SEE ALSO
sections as written: module name and one-line summary (from NAME), version,
author and e-mail, earliest copyright year, the licence (enum: "same terms
as Perl itself" is `Perl`), the headings (list), the modules SEE ALSO links
(list), whether it has a SYNOPSIS (bool).
"""
import ast
import glob
import os
import re
import sysconfig

from ..facts import Fact
from ..guard import read_text, walk
from . import Entity, FileKind, Writer, sample, text_of
from .docs import _EMAIL, _URL

_YEARS = re.compile(r"Copyright\s*(?:\([Cc]\)|©)?\s*((?:(?:19|20)\d\d)(?:\s*[-–,]\s*(?:(?:19|20)\d\d|\d\d))*)"
                    r"[,.]?[ \t]+(?:by[ \t]+)?([A-Z][^\n<]*[^\n<\s.,])?", re.I)
LICENSES = (("LGPL", r"Lesser General Public|Library General Public|\bLGPL"),
            ("GPL", r"General Public License|\bGPL\b"),
            ("Apache", r"Apache License"), ("MPL", r"Mozilla Public"),
            ("MIT", r"Permission is hereby granted, free of charge|\bMIT licen[cs]e"),
            ("BSD", r"Redistribution and use in source and binary forms"),
            ("ISC", r"Permission to use, copy, modify, and(?:/or)? distribute"),
            ("zlib", r"provided 'as-is'"), ("Perl", r"same terms as (?:the )?Perl"),
            ("public domain", r"public domain"))
PERMISSIVE = ("Apache", "MIT", "BSD", "ISC", "zlib", "public domain")


def licence_of(text):
    """The licence a notice names (LICENSES order: the first that matches), or None."""
    for name, pat in LICENSES:
        if re.search(pat, text):
            return name
    return None


def copyright_facts(text, a=0, b=None, every=False):
    """Facts of the first copyright line in text[a:b]: earliest / latest year
    (int, the written 4-digit years), holder (span); [] when none. every: the
    years are those of every copyright line in text[a:b] (a header listing
    several holders), the holder still the first line's."""
    b = len(text) if b is None else b
    m = _YEARS.search(text, a, b)
    if not m:
        return []
    ys = [(int(y.group(0)), (x.start(1) + y.start(), x.start(1) + y.end()))
          for x in (_YEARS.finditer(text, a, b) if every else [m])
          for y in re.finditer(r"(?:19|20)\d\d", x.group(1))]
    lo, hi = min(ys), max(ys)
    d_lo, d_hi, d_who = (("the earliest year any copyright line names",
                          "the most recent year any copyright line names",
                          "the first copyright holder listed") if every else
                         ("the earliest copyright year", "the most recent copyright year",
                          "who holds the copyright"))
    out = [Fact("first_year", "int", lo[0], surface=str(lo[0]), pos=lo[1], derive=False,
                names=[["earliest", "year"], ["first", "copyright", "year"], ["since"]],
                desc=[d_lo], label={"en": "Since"})]
    if hi[0] != lo[0]:
        out.append(Fact("last_year", "int", hi[0], surface=str(hi[0]), pos=hi[1], derive=False,
                        names=[["latest", "year"], ["last", "copyright", "year"]],
                        desc=[d_hi], label={"en": "Until"}))
    holder = m.group(2) or ""
    # the holder ends before "All rights reserved", a comment box's padding, " - URL", a wrapped " and"
    for _ in range(2):
        cut = re.search(r"[.,]?\s+all rights reserved|\s{3,}|\s+-\s|\s+and$", holder, re.I)
        holder = holder[:cut.start()] if cut else holder
    if 2 <= len(holder) <= 80 and holder.lower() != "by" and holder[0].isupper():
        out.append(Fact("holder", "span", holder, pos=(m.start(2), m.start(2) + len(holder)),
                        names=[["copyright", "holder"], ["holder"], ["owner"]],
                        desc=[d_who], label={"en": "Copyright holder"}))
    return out


def _licence_facts(text):
    lic = licence_of(text)
    if lic is None:
        return []
    return [Fact("licence", "enum", lic, surface=lic, options=[n for n, _ in LICENSES],
                 names=[["license"], ["licence"], ["license", "family"]],
                 desc=["the licence the notice grants"], label={"en": "License"}),
            Fact("permissive", "bool", lic in PERMISSIVE,
                 names=[["permissive"], ["permissive", "license"]],
                 neg=([["copyleft"], ["share", "alike"]], ["true for a copyleft licence"]),
                 desc=["is the licence permissive (not copyleft)?"])]


def _first(rx, text, key, kind, names, desc, g=0, a=0, b=None):
    m = rx.search(text, a, len(text) if b is None else b)
    if not m:
        return []
    return [Fact(key, kind, m.group(g), pos=(m.start(g), m.end(g)), names=names, desc=[desc])]


class _CHeader:
    NAME, SOURCE = "cheader", "/usr/include/**/*.h (leading comment blocks with a copyright line)"

    def find(self, root="/usr/include"):
        return walk(root, (".h",), max_depth=3, max_bytes=1 << 20)

    def entities(self, paths, rng, n):
        per = {}
        root = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""

        def make(p, _rng):
            e = self.entity(p, root)
            if e is None:
                return None
            h = next((f.value for f in e.facts if f.key == "holder"), "")
            per[h] = per.get(h, 0) + 1
            return e if per[h] <= 12 else None
        return sample(paths, rng, n, make)

    def entity(self, path, root="/usr/include"):
        text = text_of(path, 16 << 10)
        if text is None:
            return None
        a = text.find("/*")
        b = text.find("*/", a)
        if a < 0 or b < 0 or a > 200 or b > 4000 or not re.search(r"copyright", text[a:b], re.I):
            return None
        cut = b + 2
        for _ in range(25):
            nl = text.find("\n", cut + 1)
            if nl < 0 or nl > b + 1200:
                break
            cut = nl
        raw = text[:cut].rstrip() + "\n"
        if "\x00" in raw or "\ufffd" in raw:
            return None
        facts = copyright_facts(raw, a, b)
        if not facts:
            return None
        facts += _licence_facts(raw[a:b])
        facts += _first(_EMAIL, raw, "email", "email", [["email"], ["contact"], ["author", "email"]],
                        "the first e-mail address", a=a, b=b)
        facts += _first(_URL, raw, "url", "uri", [["url"], ["website"], ["link"]], "the first web address")
        facts += _first(re.compile(r"^#\s*ifndef\s+(\w+)\s*\n#\s*define\s+(\w+)", re.M), raw, "guard", "span",
                        [["include", "guard"], ["guard", "macro"]], "the include guard macro", g=1)
        facts += _first(re.compile(r'^#\s*define\s+\w*VERSION\w*[ \t]+"?(\d+(?:\.\d+)+)"?', re.M), raw,
                        "version", "span", [["version"], ["library", "version"]],
                        "the version number a macro defines", g=1)
        inc = [(m.group(1), (m.start(1), m.end(1)))
               for m in re.finditer(r'^#\s*include\s+[<"]([^>"\n]+)[>"]', raw, re.M)]
        seen = []
        for v, p in inc:
            if v not in [x for x, _ in seen]:
                seen.append((v, p))
        if seen:
            facts.append(Fact("includes", "list", [v for v, _ in seen], pos=[p for _, p in seen],
                              names=[["includes"], ["included", "headers"]],
                              desc=["the headers it includes, in order"], label={"en": "Includes"}))
        rel = os.path.relpath(path, root) if root else os.path.basename(path)
        facts.append(Fact("header", "span", rel, names=[["header"], ["file", "name"]],
                          desc=["the header's name"]))
        return Entity(rel, rel, facts, raw=raw)


class _PyModule:
    NAME, SOURCE = "pymodule", "the interpreter's stdlib *.py (sysconfig 'stdlib'), module headers"
    SKIP = ("test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__",
            "turtledemo", "encodings")

    def find(self, root=None):
        root = root or sysconfig.get_paths()["stdlib"]
        return walk(root, (".py",), max_depth=1, max_bytes=1 << 20, skip_dirs=self.SKIP)

    def entities(self, paths, rng, n):
        root = os.path.commonpath(paths) if paths else ""
        return sample(paths, rng, n, lambda p, _r: self.entity(p, root))

    def entity(self, path, root):
        try:
            src = read_text(path, limit=1 << 20)
            tree = ast.parse(src)
        except (OSError, SyntaxError, ValueError):
            return None
        doc = ast.get_docstring(tree, clean=False)
        if not doc or not tree.body:
            return None
        stop = next((nd.lineno for nd in tree.body if isinstance(
            nd, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))), None)
        lines = src.split("\n")
        body = "\n".join(lines[:(stop - 1) if stop else len(lines)])
        if len(body) > 2500:
            body = body[:body.rfind("\n", 0, 2500)]
        body = body.rstrip() + "\n"
        rel = os.path.relpath(path, root) if root else os.path.basename(path)
        head = f"# {rel}\n"
        raw = head + body
        off = len(head)
        facts = [Fact("path", "span", rel, pos=(2, 2 + len(rel)), names=[["path"], ["file"]],
                      desc=["the module's file path"], label={"en": "File"})]
        first = doc.strip().split("\n")[0].strip()
        i = raw.find(first, off)
        if len(first) >= 8 and i >= 0:
            facts.append(Fact("summary", "span", first, pos=(i, i + len(first)),
                              names=[["summary"], ["description"], ["docstring", "summary"]],
                              desc=["the first line of the module docstring"], label={"en": "Summary"}))
        starts = [0]
        for ln in body.split("\n"):
            starts.append(starts[-1] + len(ln) + 1)
        imports, alls, has_all = [], [], False
        for nd in tree.body:
            if stop and nd.lineno >= stop or nd.lineno > len(starts) - 1:
                break
            seg = (off + starts[nd.lineno - 1], off + starts[min(nd.end_lineno, len(starts) - 1)])
            names = []
            if isinstance(nd, ast.Import):
                names = [al.name for al in nd.names]
            elif isinstance(nd, ast.ImportFrom) and nd.module and not nd.level:
                names = [nd.module]
            for nm in names:
                m = re.compile(rf"(?<![\w.]){re.escape(nm)}(?![\w.])").search(raw, *seg)
                if m and nm not in [x for x, _ in imports]:
                    imports.append((nm, (m.start(), m.end())))
            if isinstance(nd, ast.Assign) and len(nd.targets) == 1 and isinstance(nd.targets[0], ast.Name):
                t = nd.targets[0].id
                v = nd.value
                if t == "__all__" and isinstance(v, (ast.List, ast.Tuple)):
                    has_all = True
                    for el in v.elts:
                        if isinstance(el, ast.Constant) and isinstance(el.value, str):
                            m = re.compile(rf"""(['"]){re.escape(el.value)}\1""").search(raw, *seg)
                            if m and el.value not in [x for x, _ in alls]:
                                alls.append((el.value, (m.start() + 1, m.end() - 1)))
                elif t in ("__version__", "__author__") and isinstance(v, ast.Constant) \
                        and isinstance(v.value, str) and v.value.strip():
                    s = raw.find(v.value, seg[0], seg[1])
                    if s >= 0:
                        key = t.strip("_")
                        facts.append(Fact(key, "span", v.value, pos=(s, s + len(v.value)),
                                          names=[[key], ["module", key]], desc=[f"the module's {t}"],
                                          label={"en": key.capitalize()}))
                        m = _EMAIL.search(v.value) if key == "author" else None
                        if m:
                            facts.append(Fact("email", "email", m.group(0),
                                              pos=(s + m.start(), s + m.end()),
                                              names=[["author", "email"], ["email"]],
                                              desc=["the author's e-mail address"]))
        for key, items, names, desc in (
                ("imports", imports, [["imports"], ["imported", "modules"], ["dependencies"]],
                 "the modules it imports at the top, in order"),
                ("all", alls, [["exports"], ["public", "names"], ["all"]], "the names in __all__, in order")):
            if items:
                facts.append(Fact(key, "list", [v for v, _ in items], pos=[p for _, p in items],
                                  names=names, desc=[desc]))
        facts += copyright_facts(raw, off)[:1]
        if not any(f.key == "version" for f in facts):
            facts.append(Fact("version", "span", None, names=[["version"], ["module", "version"]],
                              desc=["the module's __version__, if set"]))
        facts.append(Fact("package", "bool", rel.endswith("__init__.py"),
                          names=[["is", "package"], ["package", "init"]],
                          neg=([["plain", "module"], ["single", "file"]],
                               ["true if it is a plain module, not a package's __init__"]),
                          desc=["is this a package's __init__.py?"]))
        facts.append(Fact("has_all", "bool", has_all, names=[["defines", "all"], ["has", "exports", "list"]],
                          neg=([["no", "all"], ["no", "exports", "list"]], ["true if __all__ is not set here"]),
                          desc=["does the header define __all__?"]))
        if len(facts) < 4:
            return None
        return Entity(rel, rel, facts, raw=raw)


_POD_KEEP = ("NAME", "VERSION", "SYNOPSIS", "AUTHOR", "AUTHORS", "COPYRIGHT", "LICENSE", "LICENCE",
             "COPYRIGHT AND LICENSE", "COPYRIGHT AND LICENCE", "LICENSE AND COPYRIGHT", "SEE ALSO",
             "AUTHOR AND COPYRIGHT", "DESCRIPTION")


class _PerlPod(FileKind):
    NAME, SOURCE = "perlpod", "*.pm POD under /usr/share/perl5, /usr/share/perl, /usr/lib/*/perl*"

    def find(self, root=None):
        roots = [root] if isinstance(root, str) else (root or sorted(
            ["/usr/share/perl5"] + glob.glob("/usr/share/perl/5*") + glob.glob("/usr/lib/*/perl*/5*")
            + glob.glob("/usr/lib/*/perl5/5*")))
        out = []
        for r in roots:
            out += walk(r, (".pm", ".pod"), max_depth=5, max_bytes=512 << 10)
        return sorted(set(out))

    def entity(self, path):
        text = text_of(path, 512 << 10)
        if text is None:
            return None
        heads = list(re.finditer(r"^=head1[ \t]+(.+?)[ \t]*$", text, re.M))
        if not heads or heads[0].group(1) != "NAME":
            return None
        w = Writer()
        secs = {}
        for k, m in enumerate(heads):
            title = m.group(1)
            if title.upper() not in _POD_KEEP or title in secs:
                continue
            end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
            cut = text.find("\n=cut", m.end(), end)
            body = text[m.end():cut if cut >= 0 else end].strip("\n")
            body = body.replace("E<lt>", "<").replace("E<gt>", ">")  # as perldoc shows them
            if title.upper() in ("SYNOPSIS", "DESCRIPTION"):
                body = "\n".join(body.split("\n")[:10 if title.upper() == "SYNOPSIS" else 6])
            w.text("=head1 ")
            tpos = w.put(title)
            w.text("\n\n")
            bpos = w.put(body)
            w.text("\n\n")
            secs[title] = (tpos, bpos, body)
            if w._n > 2400:
                break
        raw = w.finish()[0]
        if "\ufffd" in raw or "\x00" in raw:
            return None
        _t, (na, nb), name = secs["NAME"]
        m = re.match(r"\s*(?:[BC]<)?([\w:]+)>?\s+-+\s+(.+?)\s*$", name.split("\n\n")[0].replace("\n", " "))
        if not m or "\n" in name.strip():
            return None
        facts = [Fact("module", "span", m.group(1), pos=(na + m.start(1), na + m.end(1)),
                      names=[["module"], ["package", "name"], ["name"]], desc=["the module's name"],
                      label={"en": "Module"}),
                 Fact("summary", "span", m.group(2), pos=(na + m.start(2), na + m.end(2)),
                      names=[["summary"], ["abstract"], ["description"]], desc=["its one-line summary"],
                      label={"en": "Summary"})]
        for title, (_tp, (a, b), body) in secs.items():
            up = title.upper()
            if up == "VERSION":
                facts += _first(re.compile(r"\b(v?\d+\.\d+(?:[._]\d+)*)\b"), raw, "version", "span",
                                [["version"], ["module", "version"]], "the documented version",
                                g=1, a=a, b=b)
            elif up.startswith("AUTHOR"):
                facts += _first(re.compile(r"([A-Z][\w'.-]+(?:[ \t]+[A-Z][\w'.-]+)+)[ \t,]*[<(E]"), raw,
                                "author", "span", [["author"], ["written", "by"]], "the (first) author",
                                g=1, a=a, b=b)
                facts += _first(_EMAIL, raw, "email", "email", [["email"], ["author", "email"]],
                                "the author's e-mail address", a=a, b=b)
            if "COPYRIGHT" in up or "LICEN" in up:
                if not any(f.key == "first_year" for f in facts):
                    facts += [f for f in copyright_facts(raw, a, b) if f.key == "first_year"]
                if not any(f.key == "licence" for f in facts):
                    facts += _licence_facts(body)[:1]
            if up == "SEE ALSO":
                links = []
                for lm in re.finditer(r"L<([\w:]+)>", raw[a:b]):
                    if lm.group(1) not in [x for x, _ in links]:
                        links.append((lm.group(1), (a + lm.start(1), a + lm.end(1))))
                if links:
                    facts.append(Fact("see_also", "list", [x for x, _ in links], pos=[p for _, p in links],
                                      names=[["see", "also"], ["related", "modules"]],
                                      desc=["the modules SEE ALSO links to, in order"]))
        facts.append(Fact("headings", "list", list(secs), pos=[secs[t][0] for t in secs],
                          names=[["sections"], ["headings"]], desc=["the section headings, in order"]))
        facts.append(Fact("synopsis", "bool", "SYNOPSIS" in secs,
                          names=[["has", "synopsis"], ["shows", "usage"]],
                          neg=([["no", "synopsis"]], ["true if there is no SYNOPSIS section"]),
                          desc=["does it have a SYNOPSIS section?"]))
        return Entity(facts[0].value, facts[0].value, facts, raw=raw)


CHEADER, PYMODULE, PERLPOD = _CHeader(), _PyModule(), _PerlPod()
