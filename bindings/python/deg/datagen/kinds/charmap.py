"""glibc character maps (datagen v5, kind `charmap`): the header of a
/usr/share/i18n/charmaps/*.gz file (`<code_set_name>`, `<comment_char>`,
`<escape_char>`, `<mb_cur_min>` / `<mb_cur_max>` and the `%` comment lines: alias,
version, source) followed by `CHARMAP` and a window of 3..8 consecutive mapping
lines from inside the table (`<U0041>     /x41         LATIN CAPITAL LETTER A`),
as its own text or rendered.

Facts: the code set name, the comment and escape characters, mb_cur_max (int,
when written), whether it is a multibyte map (bool: mb_cur_max > 1; 1 when not
written), the aliases (list; absent lists are asked by deg.datagen.v4), the
version and source lines (null when the header has none), the first e-mail
address, the character names of the window (list), the first mapped
character's name and its byte sequence (spans).
"""
import os
import random
import re

from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .docs import _EMAIL
from .meta import _list_fact

_HEAD = re.compile(r"^<([a-z_]+)>[ \t]+(\S+)[ \t]*$", re.M)
_MAP = re.compile(r"^<U[0-9A-Fa-f]+>[ \t]+((?:/x[0-9a-fA-F]{2})+)[ \t]+(\S[^\n]*?)[ \t]*$", re.M)


class _Charmap(FileKind):
    NAME, SOURCE = "charmap", "/usr/share/i18n/charmaps/*.gz (header + a window of the table)"

    def find(self, root="/usr/share/i18n/charmaps"):
        return walk_unique([root], (".gz",), max_depth=0, max_bytes=2 << 20)

    def entity(self, path):
        text = text_of(path, 512 << 10, content=True)
        at = text.find("\nCHARMAP\n") if text else -1
        if at < 0 or at > 2000:
            return None
        head = text[:at + len("\nCHARMAP\n")]
        rows = [m for m in _MAP.finditer(text, at, min(len(text), at + 400000))]
        rows = [m for m in rows if "<" not in m.group(2)]
        if len(rows) < 12:
            return None
        rng = random.Random(f"charmap:{os.path.basename(path)}")
        k = rng.randint(3, 8)
        i = rng.randrange(len(rows) - k)
        win = text[rows[i].start():rows[i + k - 1].end()] + "\n"
        raw = head + win
        off = len(head) - rows[i].start()
        hv = {m.group(1): m for m in _HEAD.finditer(head)}
        if "code_set_name" not in hv:
            return None
        cs = hv["code_set_name"]
        facts = [Fact("name", "span", cs.group(2), pos=(cs.start(2), cs.end(2)),
                      names=[["code", "set", "name"], ["charset"], ["encoding", "name"]],
                      desc=["the character set's name (<code_set_name>)"], label={"en": "Code set"})]
        for key, k2, names, desc in (
                ("comment_char", "comment_char", [["comment", "character"], ["comment", "char"]],
                 "the comment character"),
                ("escape_char", "escape_char", [["escape", "character"], ["escape", "char"]],
                 "the escape character")):
            m = hv.get(key)
            if m:
                facts.append(Fact(k2, "span", m.group(2), pos=(m.start(2), m.end(2)), names=names,
                                  desc=[desc], label={"en": key.replace("_", " ").capitalize()}))
        mx = hv.get("mb_cur_max")
        if mx and mx.group(2).isdigit():
            facts.append(Fact("mb_max", "int", int(mx.group(2)), surface=mx.group(2),
                              pos=(mx.start(2), mx.end(2)), derive=False,
                              names=[["mb", "cur", "max"], ["max", "bytes", "per", "char"]],
                              desc=["the most bytes one character takes (<mb_cur_max>)"],
                              label={"en": "mb_cur_max"}))
        facts.append(Fact("multibyte", "bool", bool(mx and mx.group(2).isdigit() and int(mx.group(2)) > 1),
                          names=[["multibyte"], ["variable", "width"]],
                          neg=([["single", "byte"], ["one", "byte", "per", "char"]],
                               ["true if every character is one byte"]),
                          desc=["can a character take more than one byte?"]))
        al = [(m.group(1), (m.start(1), m.end(1)))
              for m in re.finditer(r"^%[ \t]*alias[ \t]+(\S+)[ \t]*$", head, re.M)]
        f = _list_fact("aliases", al, [["aliases"], ["other", "names"], ["also", "known", "as"]],
                       "the aliases listed, in order", label={"en": "Aliases"})
        if f:
            facts.append(f)
        for key, names, desc in (("version", [["version"], ["map", "version"]], "the version comment"),
                                 ("source", [["source"], ["based", "on"], ["origin"]],
                                  "the source comment (where the table comes from)")):
            m = re.search(rf"^%[ \t]*{key}:[ \t]*(\S[^\n]*?)[ \t]*$", head, re.M)
            facts.append(Fact(key, "span", m.group(1) if m else None,
                              pos=(m.start(1), m.end(1)) if m else None, names=names, desc=[desc],
                              label={"en": key.capitalize()}))
        em = _EMAIL.search(head)
        if em:
            facts.append(Fact("email", "email", em.group(0), pos=(em.start(), em.end()),
                              names=[["contact"], ["email"], ["author", "email"]],
                              desc=["the first e-mail address"], label={"en": "E-mail"}))
        ws = rows[i:i + k]
        names = [(m.group(2), (m.start(2) + off, m.end(2) + off)) for m in ws]
        if len({x for x, _ in names}) == len(names):
            facts.append(_list_fact("chars", names, [["characters"], ["character", "names"]],
                                    "the names of the characters listed, in order",
                                    label={"en": "Characters"}))
        m0 = ws[0]
        facts.append(Fact("first_char", "span", m0.group(2), pos=(m0.start(2) + off, m0.end(2) + off),
                          names=[["first", "character"], ["first", "name"]],
                          desc=["the first mapped character's name"], label={"en": "First character"}))
        facts.append(Fact("first_bytes", "span", m0.group(1), pos=(m0.start(1) + off, m0.end(1) + off),
                          names=[["first", "bytes"], ["byte", "sequence"], ["first", "code"]],
                          desc=["the byte sequence of the first mapped character"],
                          label={"en": "Bytes"}))
        return Entity(cs.group(2), cs.group(2), facts, raw=raw)


CHARMAP = _Charmap()
