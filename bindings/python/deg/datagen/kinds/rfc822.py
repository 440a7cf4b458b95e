"""RFC-822-like stanzas other than Debian package control (datagen v5): debconf
question templates (kind `debconf`) and doc-base registrations (kind `docbase`),
each as its own text or rendered. Both are dev-only kinds (deg.datagen.v2.DEV5_KINDS).

debconf (/var/lib/dpkg/info/*.templates): one `Template:` stanza with its
translated fields (`Description-de.UTF-8:`, `Choices-fr.UTF-8:`, ...) left out:
the template name, the package owning it (before the slash), the question type
(enum), the default (null when the stanza has none), the choices (list), the
short description (the Description's first line) and whether it has a default
(bool).
docbase (/usr/share/doc-base/*): a document's registration, its main stanza
(Document, Title, Author, Abstract, Section) and format stanzas (Format, Index,
Files): the document id, title, author (null when not written), section, the
abstract's first line, the formats (list), the first Index path, the Files
patterns (list) and whether an HTML format is registered (bool).
"""
import os
import re

from ..facts import Fact
from . import Entity, FileKind, sample, text_of, walk_unique
from .meta import _list_fact

DEBCONF_TYPES = ("boolean", "select", "multiselect", "string", "password", "note", "text",
                 "title", "error")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*):[ \t]*(.*)$")
_TRANSLATED = re.compile(r"^[A-Za-z_]+-[A-Za-z]{2,3}(?:_[A-Za-z]{2})?(?:\.[\w-]+)?$")


def stanzas(text):
    """[[(key, value, (s, e) of the value's first line, (s, e) of the field)]]: the
    blank-line-separated stanzas of text; continuation lines (leading
    whitespace) belong to the field above them (positions in text)."""
    out, cur, at = [], [], 0
    for ln in text.split("\n"):
        end = at + len(ln)
        if not ln.strip():
            if cur:
                out.append(cur)
            cur = []
        elif ln[0] in " \t":
            if cur:
                k, v, vp, fp = cur[-1]
                cur[-1] = (k, v, vp, (fp[0], end))
        else:
            m = _FIELD.match(ln)
            if m:
                v = m.group(2).rstrip()
                cur.append((m.group(1), v, (at + m.start(2), at + m.start(2) + len(v)), (at, end)))
        at = end + 1
    if cur:
        out.append(cur)
    return out


def _one(st, key):
    return next(((v, p) for k, v, p, _ in st if k.lower() == key.lower() and v), None)


def _split_items(value, pos, item):
    """[(item, (s, e))] of the matches of regex `item` in `value` (written at pos)."""
    return [(m.group(0), (pos[0] + m.start(), pos[0] + m.end())) for m in re.finditer(item, value)]


_COMMA_ITEM = r"[^,\s](?:[^,]*[^,\s])?"


class _Debconf:
    NAME, SOURCE = "debconf", "/var/lib/dpkg/info/*.templates (one Template: stanza, untranslated)"

    def find(self, root="/var/lib/dpkg/info"):
        return walk_unique([root], (".templates",), max_depth=0, max_bytes=1 << 20)

    def entities(self, paths, rng, n):
        def make(p, _rng):
            text = text_of(p, 1 << 20, content=True)
            if not text:
                return None
            out = []
            for st in stanzas(text):
                raw = "\n".join(text[fp[0]:fp[1]] for k, _v, _p, fp in st
                                if not _TRANSLATED.match(k)) + "\n"
                if len(raw) <= 2500:
                    e = self.entity(raw)
                    if e is not None:
                        out.append(e)
            return out
        return sample(paths, rng, n, make)

    def entity(self, raw):
        st = stanzas(raw)[0]
        t, ty = _one(st, "Template"), _one(st, "Type")
        if not t or "/" not in t[0] or not ty or ty[0] not in DEBCONF_TYPES:
            return None
        owner = t[0].split("/")[0]
        facts = [Fact("template", "span", t[0], pos=t[1],
                      names=[["template"], ["question", "name"], ["template", "name"]],
                      desc=["the debconf template's name"], label={"en": "Template"}),
                 Fact("owner", "span", owner, pos=(t[1][0], t[1][0] + len(owner)),
                      names=[["package"], ["owner"], ["owning", "package"]],
                      desc=["the package the question belongs to (the name before the slash)"],
                      label={"en": "Package"}),
                 Fact("qtype", "enum", ty[0], surface=ty[0], options=list(DEBCONF_TYPES),
                      names=[["type"], ["question", "type"], ["input", "type"]],
                      desc=["the kind of question (debconf type)"], label={"en": "Type"})]
        d = _one(st, "Default")
        facts.append(Fact("default", "span", d[0] if d else None, pos=d[1] if d else None,
                          names=[["default"], ["default", "value"], ["preset"]],
                          desc=["the default answer, if the template gives one"],
                          label={"en": "Default"}))
        c = _one(st, "Choices")
        if c and "\\," not in c[0] and "$" not in c[0]:
            f = _list_fact("choices", _split_items(c[0], c[1], _COMMA_ITEM),
                           [["choices"], ["options"], ["answers"]], "the choices offered, in order",
                           label={"en": "Choices"})
            if f:
                facts.append(f)
        q = _one(st, "Description")
        if q:
            facts.append(Fact("question", "span", q[0], pos=q[1],
                              names=[["question"], ["short", "description"], ["prompt"]],
                              desc=["the short description (the Description field's first line)"],
                              label={"en": "Question"}))
        facts.append(Fact("has_default", "bool", d is not None,
                          names=[["has", "default"], ["default", "given"]],
                          neg=([["no", "default"], ["without", "default"]],
                               ["true if the template sets no default"]),
                          desc=["does the template give a default answer?"]))
        return Entity(t[0], t[0], facts, raw=raw)


class _DocBase(FileKind):
    NAME, SOURCE = "docbase", "/usr/share/doc-base/* (doc-base registrations)"

    def find(self, root="/usr/share/doc-base"):
        return walk_unique([root], ("",), max_depth=0, max_bytes=16 << 10)

    def entity(self, path):
        raw = text_of(path, 16 << 10, 2500, content=True)
        if not raw:
            return None
        sts = stanzas(raw)
        doc, title = _one(sts[0], "Document") if sts else None, _one(sts[0], "Title") if sts else None
        if not doc or not title or len(sts) < 2:
            return None
        facts = [Fact("document", "span", doc[0], pos=doc[1],
                      names=[["document", "id"], ["document"], ["doc", "id"]],
                      desc=["the registered document's id"], label={"en": "Document"}),
                 Fact("title", "span", title[0], pos=title[1], names=[["title"], ["manual", "title"]],
                      desc=["the document's title"], label={"en": "Title"})]
        a = _one(sts[0], "Author")
        facts.append(Fact("author", "span", a[0] if a else None, pos=a[1] if a else None,
                          names=[["author"], ["written", "by"], ["authors"]],
                          desc=["who wrote the document, when stated"], label={"en": "Author"}))
        for key, k, names, desc in (
                ("Section", "section", [["section"], ["category"], ["menu", "section"]],
                 "the doc-base section it is filed under"),
                ("Abstract", "abstract", [["abstract"], ["summary"], ["about"]],
                 "the first line of the abstract")):
            v = _one(sts[0], key)
            if v:
                facts.append(Fact(k, "span", v[0], pos=v[1], names=names, desc=[desc],
                                  label={"en": key}))
        fmts, files, index = [], [], None
        for st in sts[1:]:
            f = _one(st, "Format")
            if f:
                fmts.append(f)
            index = index or _one(st, "Index")
            fl = _one(st, "Files")
            if fl:
                files += _split_items(fl[0], fl[1], r"\S+")
        for key, items, names, desc in (
                ("formats", fmts, [["formats"], ["available", "formats"]], "the formats registered, in order"),
                ("files", files, [["files"], ["file", "patterns"]], "the Files patterns, in order")):
            f = _list_fact(key, items, names, desc, label={"en": key.capitalize()})
            if f:
                facts.append(f)
        if index:
            facts.append(Fact("index", "span", index[0], pos=index[1],
                              names=[["index"], ["index", "file"], ["entry", "point"]],
                              desc=["the first Index path"], label={"en": "Index"}))
        facts.append(Fact("html", "bool", any(v.lower() == "html" for v, _ in fmts),
                          names=[["has", "html"], ["html", "available"]],
                          neg=([["no", "html"], ["without", "html"]],
                               ["true if no HTML format is registered"]),
                          desc=["is an HTML version registered?"]))
        name = os.path.basename(path)
        return Entity(name, title[0], facts, raw=raw)


DEBCONF, DOCBASE = _Debconf(), _DocBase()
