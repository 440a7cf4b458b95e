"""Vim runtime files' comment headers (datagen v5, kind `vimrt`): the labelled
`" Key:<tab>value` lines vim's syntax, filetype plugin, indent, compiler, colour
scheme and keymap files open with (/usr/share/vim/vim*/{syntax,ftplugin,indent,
compiler,colors,keymap}/*.vim), as its own text (the header and the code lines
after it, at most 30 lines / 1500 characters, whole lines) or rendered.

Facts: the file's kind (enum, from its directory), the language or compiler
(span; Language: / Compiler: / Name:), the languages when several one-word names
are listed (list), the maintainer's name and e-mail, the previous maintainer (null when the
header names none), the last change as written (span) and as a date (when it is
a full date), the URL (uri), the licence line, the header's labels (list, in
order), whether it has a previous maintainer (bool) and whether the header is
followed by a `finish` guard (bool: `if exists("b:...")` / `exists("g:...")`).
"""
import glob
import os
import re

from ...errors import DegError
from ...parsers import parse_date
from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .docs import _EMAIL, _URL
from .meta import _list_fact

DIRS = {"syntax": "syntax file", "ftplugin": "filetype plugin", "indent": "indent file",
        "compiler": "compiler plugin", "colors": "color scheme", "keymap": "keymap"}
_LABEL = re.compile(r'^"[ \t]*([A-Z][A-Za-z]*(?: [A-Za-z]+){0,2}):[ \t]+(\S[^\n]*?)[ \t]*$', re.M)
_FORMER = re.compile(r"previous|former|original|old|past|ex-", re.I)


def _person(value):
    """The match of a name at the start of a header value ("Ana Lopez <ana@...>"), or
    None when the value is no plain name (an address, a URL, "None, please volunteer",
    a sentence)."""
    who = re.match(r"[^<(\n]*[^<(\s]", value)
    if not who:
        return None
    w = who.group(0)
    if not 3 <= len(w) <= 40 or re.search(r"@|https?:|\bat\b|\?|,|\bis\b", w) or \
            re.match(r"(?:none|see|n/a)\b", w, re.I):
        return None
    return who


class _VimRt(FileKind):
    NAME, SOURCE = "vimrt", "/usr/share/vim/vim*/{syntax,ftplugin,indent,compiler,colors,keymap}/*.vim"

    def find(self, root=None):
        roots = sorted(glob.glob("/usr/share/vim/vim*")) if root is None else (
            [root] if isinstance(root, str) else root)
        return walk_unique([os.path.join(r, d) for r in roots for d in DIRS], (".vim",), max_depth=0,
                           max_bytes=512 << 10)

    def entity(self, path):
        text = text_of(path, 8 << 10, content=True)
        if not text or not text.startswith('"'):
            return None
        lines, n = [], 0
        for ln in text.split("\n")[:30]:
            if n + len(ln) + 1 > 1500:
                break
            lines.append(ln)
            n += len(ln) + 1
        raw = "\n".join(lines).rstrip() + "\n"
        head_end = next((m.start() for m in re.finditer(r"^(?!\")", raw, re.M)), len(raw))
        labels = [m for m in _LABEL.finditer(raw, 0, head_end)]
        if len(labels) < 2:
            return None
        by = {}
        for m in labels:
            by.setdefault(m.group(1).lower(), m)
        kind = DIRS[os.path.basename(os.path.dirname(path))]
        facts = [Fact("kind", "enum", kind, surface=kind, options=list(DIRS.values()),
                      names=[["file", "kind"], ["kind", "of", "file"], ["runtime", "type"]],
                      desc=["what kind of vim runtime file this is"], label={"en": "Kind"})]
        lang = by.get("language") or by.get("compiler") or by.get("name")
        if lang:
            v = lang.group(2)
            facts.append(Fact("language", "span", v, pos=(lang.start(2), lang.end(2)),
                              names=[["language"], ["filetype"], ["for"]],
                              desc=["the language (or compiler, or scheme name) the file is for"],
                              label={"en": lang.group(1)}))
            parts = [(x.group(0), (lang.start(2) + x.start(), lang.start(2) + x.end()))
                     for x in re.finditer(r"[^,\s](?:[^,]*[^,\s])?", v)]
            if len(parts) > 1 and not re.search(r"[()/\"{}*]", v) and all(
                    re.fullmatch(r"[\w.+#-]{1,20}", x) for x, _ in parts):  # a list of names, not prose
                facts.append(_list_fact("languages", parts, [["languages"], ["dialects"]],
                                        "the languages listed, in order", label={"en": "Languages"}))
        mt = by.get("maintainer")
        if mt:
            who = _person(mt.group(2))
            if who:
                facts.append(Fact("maintainer", "span", who.group(0),
                                  pos=(mt.start(2), mt.start(2) + who.end()),
                                  names=[["maintainer"], ["maintained", "by"]],
                                  desc=["the current maintainer's name"], label={"en": "Maintainer"}))
            em = _EMAIL.search(raw, mt.start(2), mt.end(2))
            if em:
                facts.append(Fact("email", "email", em.group(0), pos=(em.start(), em.end()),
                                  names=[["maintainer", "email"], ["contact"], ["email"]],
                                  desc=["the maintainer's e-mail address"], label={"en": "E-mail"}))
        prev = next((m for m in labels if _FORMER.search(m.group(1))), None)
        if prev is None and not _FORMER.search(raw[:head_end]):
            facts.append(Fact("previous", "span", None,
                              names=[["previous", "maintainer"], ["former", "maintainer"]],
                              desc=["who maintained it before, if the header says"],
                              label={"en": "Previous Maintainer"}))
        elif prev is not None and prev.group(1).lower() == "previous maintainer":
            who = _person(prev.group(2))
            if who:
                facts.append(Fact("previous", "span", who.group(0),
                                  pos=(prev.start(2), prev.start(2) + who.end()),
                                  names=[["previous", "maintainer"], ["former", "maintainer"]],
                                  desc=["who maintained it before, if the header says"],
                                  label={"en": "Previous Maintainer"}))
        facts.append(Fact("has_previous", "bool", prev is not None,
                          names=[["has", "previous", "maintainer"], ["changed", "hands"]],
                          neg=([["original", "maintainer", "only"], ["no", "previous", "maintainer"]],
                               ["true if the header names no earlier maintainer or author"]),
                          desc=["does the header name an earlier maintainer or author?"]))
        lc = next((by[k] for k in ("last change", "latest revision", "last changed", "last updated")
                   if k in by), None)
        if lc:
            v = lc.group(2)
            facts.append(Fact("changed", "span", v, pos=(lc.start(2), lc.end(2)),
                              names=[["last", "change"], ["last", "changed"], ["revision"]],
                              desc=["when the file was last changed, as written"],
                              label={"en": lc.group(1)}))
            try:
                iso = parse_date(v) if re.fullmatch(r"\d{4}[ -][A-Za-z0-9]{2,3}[ -]\d{1,2}", v) else None
            except DegError:
                iso = None
            if iso:
                facts.append(Fact("changed_on", "date", iso, surface=v, pos=(lc.start(2), lc.end(2)),
                                  names=[["last", "change", "date"], ["updated", "on"]],
                                  desc=["the date of the last change"], label={"en": "Changed on"}))
        u = _URL.search(raw, 0, head_end)
        if u:
            facts.append(Fact("url", "uri", u.group(0), pos=(u.start(), u.end()),
                              names=[["url"], ["homepage"], ["repository"]],
                              desc=["the first URL in the header"], label={"en": "URL"}))
        lic = by.get("license")
        if lic:
            facts.append(Fact("license", "span", lic.group(2), pos=(lic.start(2), lic.end(2)),
                              names=[["license"], ["licence"], ["terms"]],
                              desc=["the licence line"], label={"en": "License"}))
        seen = []
        for m in labels:
            if m.group(1) not in [x for x, _ in seen]:
                seen.append((m.group(1), (m.start(1), m.end(1))))
        facts.append(_list_fact("labels", seen, [["header", "fields"], ["labels"]],
                                "the header's labels, in order", label={"en": "Header fields"}))
        facts.append(Fact("guard", "bool",
                          re.search(r'exists\(\s*["\'][bg]:', raw[head_end:]) is not None,
                          names=[["load", "guard"], ["has", "guard"]],
                          neg=([["no", "load", "guard"], ["unguarded"]],
                               ["true if no exists(\"b:...\") / exists(\"g:...\") check follows the header"]),
                          desc=["is the header followed by an exists(\"b:...\") or exists(\"g:...\") check?"]))
        stem = os.path.basename(path)[:-4]
        doc = f"{os.path.basename(os.path.dirname(path))}/{stem}"
        return Entity(doc, f"{stem} ({kind})", facts, raw=raw)


VIMRT = _VimRt()
