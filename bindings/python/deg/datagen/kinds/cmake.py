"""CMake modules' reStructuredText documentation (datagen v4, kind `cmakemod`):
/usr/share/cmake*/Modules/*.cmake from the file's start to the end of its
`#[==[.rst:` comment (cut at a paragraph break to at most 2500 characters), as
its own text or rendered.

Facts: the module name (the block's first line), its one-line summary (the
first paragraph line after the title's underline), the first
`.. versionadded::` version, the licence URL, the IMPORTED targets (``A::B``,
list), the result variables (``NAME`` definition-list terms, list), whether it
is a Find module (bool) and whether it is deprecated (bool).
"""
import glob
import os
import re

from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .docs import _URL
from .meta import _list_fact

_START = re.compile(r"^#\[(=*)\[\.rst:[ \t]*\n", re.M)


class _CMakeMod(FileKind):
    NAME, SOURCE = "cmakemod", "/usr/share/cmake*/Modules/*.cmake (documentation blocks)"

    def find(self, root=None):
        roots = sorted(glob.glob("/usr/share/cmake*/Modules")) if root is None else (
            [root] if isinstance(root, str) else root)
        return walk_unique(roots, (".cmake",), max_depth=0)

    def entity(self, path):
        text = text_of(path, 64 << 10)
        m = text and _START.search(text)
        if not m:
            return None
        end = text.find(f"#]{m.group(1)}]", m.end())
        if end < 0:
            return None
        raw = text[:end + len(m.group(1)) + 3]
        if len(raw) > 2500:
            cut = raw.rfind("\n\n", m.end(), 2500)
            if cut < 0:
                return None
            raw = raw[:cut + 1]
        body = m.end()
        t = re.compile(r"[ \t]*(\S[^\n]*?)[ \t]*\n[-=^~]{3,}[ \t]*\n").match(raw, body)
        if not t:
            return None
        stem = os.path.basename(path)[:-len(".cmake")]
        facts = [Fact("module", "span", t.group(1), pos=(t.start(1), t.end(1)),
                      names=[["module"], ["module", "name"]], desc=["the module's name"],
                      label={"en": "Module"})]
        s = re.compile(r"\n*[ \t]*([A-Z][^\n]{8,}?)[ \t]*\n").match(raw, t.end())
        if s and not s.group(1).startswith(".."):
            facts.append(Fact("summary", "span", s.group(1), pos=(s.start(1), s.end(1)),
                              names=[["summary"], ["purpose"], ["synopsis"]],
                              desc=["the first line of the module's description"],
                              label={"en": "Summary"}))
        v = re.compile(r"\.\. versionadded:: ([0-9][0-9.]*[0-9])").search(raw, body)
        if v:
            facts.append(Fact("since", "span", v.group(1), pos=(v.start(1), v.end(1)),
                              names=[["version", "added"], ["since"], ["added", "in"]],
                              desc=["the first CMake version a versionadded note names"],
                              label={"en": "Added in"}))
        u = _URL.search(raw)
        if u:
            facts.append(Fact("url", "uri", u.group(0), pos=(u.start(), u.end()),
                              names=[["url"], ["link"]], desc=["the first URL in the file"],
                              label={"en": "URL"}))
        tg, rv = [], []
        for x in re.finditer(r"``([A-Za-z][\w.+-]*::[\w.+-]+)``", raw[body:]):
            if x.group(1) not in [a for a, _ in tg]:
                tg.append((x.group(1), (body + x.start(1), body + x.end(1))))
        for x in re.finditer(r"^``([A-Z][A-Z0-9_]*[A-Z0-9])``[ \t]*$", raw[body:], re.M):
            if x.group(1) not in [a for a, _ in rv]:
                rv.append((x.group(1), (body + x.start(1), body + x.end(1))))
        for key, items, names, desc in (
                ("targets", tg, [["imported", "targets"], ["targets"]], "the IMPORTED targets it defines"),
                ("variables", rv[:10], [["result", "variables"], ["variables"], ["outputs"]],
                 "the variables it defines (definition-list terms), in order")):
            f = _list_fact(key, items, names, desc, label={"en": key.capitalize()})
            if f:
                facts.append(f)
        facts.append(Fact("find", "bool", stem.startswith("Find"),
                          names=[["find", "module"], ["is", "find", "module"]],
                          neg=([["utility", "module"], ["not", "find", "module"]],
                               ["true if it is not a Find<Package> module"]),
                          desc=["is this a Find<Package> module?"]))
        facts.append(Fact("deprecated", "bool", ".. deprecated::" in raw,
                          names=[["deprecated"], ["obsolete"]],
                          neg=([["supported"], ["not", "deprecated"]], ["true unless it is deprecated"]),
                          desc=["is the module (or part of it) deprecated?"]))
        return Entity(stem, stem, facts, raw=raw)


CMAKEMOD = _CMakeMod()
