"""CMake's reStructuredText documentation: modules' doc blocks (datagen v4, kind
`cmakemod`) and the Help pages of commands, variables, properties and policies
(datagen v5, kind `cmakedoc`).

cmakemod:
/usr/share/cmake*/Modules/*.cmake from the file's start to the end of its
`#[==[.rst:` comment (cut at a paragraph break to at most 2500 characters), as
its own text or rendered.

Facts: the module name (the block's first line), its one-line summary (the
first paragraph line after the title's underline), the first
`.. versionadded::` version, the licence URL, the IMPORTED targets (``A::B``,
list), the result variables (``NAME`` definition-list terms, list), whether it
is a Find module (bool) and whether it is deprecated (bool).
cmakedoc (/usr/share/cmake*/Help/{command,variable,policy,prop_*,envvar,generator,
cpack_gen}/*.rst, whole when at most 2500 characters, else cut at a paragraph
break before 2000): the name (the title), its category (enum, from the
directory), the first `.. versionadded::` version (null when there is none),
the first paragraph's first line, the roles it references (``:command:`x```,
``:variable:`X```, ...: list), for a policy the CMake version that introduced
it (null for other pages) and whether it is deprecated, whether the page has a
code block (bool).
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


HELP_DIRS = {"command": "command", "variable": "variable", "policy": "policy",
             "prop_tgt": "target property", "prop_dir": "directory property",
             "prop_gbl": "global property", "prop_sf": "source file property",
             "prop_test": "test property", "prop_cache": "cache entry property",
             "prop_inst": "installed file property", "envvar": "environment variable",
             "generator": "generator", "cpack_gen": "CPack generator"}


class _CMakeDoc(FileKind):
    NAME, SOURCE = "cmakedoc", "/usr/share/cmake*/Help/{command,variable,policy,prop_*,...}/*.rst"

    def find(self, root=None):
        roots = sorted(glob.glob("/usr/share/cmake*/Help")) if root is None else (
            [root] if isinstance(root, str) else root)
        return walk_unique([os.path.join(r, d) for r in roots for d in HELP_DIRS], (".rst",),
                           max_depth=0, max_bytes=64 << 10)

    def entity(self, path):
        raw = text_of(path, 64 << 10, content=True)
        if not raw:
            return None
        if len(raw) > 2500:
            cut = raw.rfind("\n\n", 0, 2000)
            if cut < 0:
                return None
            raw = raw[:cut + 1]
        t = re.compile(r"[ \t]*(\S[^\n]*?)[ \t]*\n[-=^~]{3,}[ \t]*\n").match(raw)
        if not t:
            return None
        cat = HELP_DIRS[os.path.basename(os.path.dirname(path))]
        facts = [Fact("name", "span", t.group(1), pos=(t.start(1), t.end(1)),
                      names=[["name"], ["title"], ["entry"]], desc=["what the page documents (its title)"],
                      label={"en": "Name"}),
                 Fact("category", "enum", cat, surface=cat, options=list(HELP_DIRS.values()),
                      names=[["category"], ["kind"], ["documents", "a"]],
                      desc=["what kind of CMake item the page documents"], label={"en": "Category"})]
        v = re.compile(r"\.\. versionadded:: ([0-9][0-9.]*[0-9])").search(raw, t.end())
        facts.append(Fact("since", "span", v.group(1) if v else None, pos=(v.start(1), v.end(1)) if v else None,
                          names=[["version", "added"], ["since"], ["added", "in"]],
                          desc=["the version a versionadded note names, if any"],
                          label={"en": "Added in"}))
        for para in re.compile(r"\n\n([A-Za-z`:*][^\n]*)").finditer(raw, t.end() - 1):
            line = para.group(1).rstrip()
            if len(line) >= 12:
                a = para.start(1)
                facts.append(Fact("summary", "span", line, pos=(a, a + len(line)),
                                  names=[["summary"], ["first", "line"], ["synopsis"]],
                                  desc=["the first line of the first paragraph"],
                                  label={"en": "Summary"}))
                break
        refs = []
        for r in re.finditer(r":(?:command|variable|prop_tgt|prop_dir|policy|module|genex|envvar|manual):"
                             r"`([^`<>\n]+)`", raw, re.M):
            if r.group(1) not in [x for x, _ in refs]:
                refs.append((r.group(1), (r.start(1), r.end(1))))
        f = _list_fact("refs", refs[:8], [["references"], ["see", "also"], ["mentions"]],
                       "the items it references by role, in order", label={"en": "References"})
        if f:
            facts.append(f)
        if cat == "policy":
            iv = re.search(r"introduced in CMake\s+version\s+([0-9][0-9.]*[0-9])", raw)
            facts.append(Fact("introduced", "span", iv.group(1) if iv else None,
                              pos=(iv.start(1), iv.end(1)) if iv else None,
                              names=[["introduced", "in"], ["policy", "version"]],
                              desc=["the CMake version that introduced the policy"],
                              label={"en": "Introduced in"}))
            facts.append(Fact("deprecated", "bool", "DEPRECATED" in raw,
                              names=[["deprecated"], ["obsolete"]],
                              neg=([["current"], ["not", "deprecated"]], ["true unless it is deprecated"]),
                              desc=["does the page say the policy (its OLD behavior) is deprecated?"]))
        facts.append(Fact("code", "bool", re.search(r"^\.\. code-block::|::[ \t]*$", raw, re.M) is not None,
                          names=[["has", "code", "block"], ["has", "example"]],
                          neg=([["prose", "only"], ["no", "code"]], ["true if the page has no code block"]),
                          desc=["does the page show a code block?"]))
        name = t.group(1)
        return Entity(f"{os.path.basename(os.path.dirname(path))}/{name}", name, facts, raw=raw)


CMAKEDOC = _CMakeDoc()
