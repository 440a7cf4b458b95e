"""MIME type definitions (datagen v4): shared-mime-info XML entries (kind
`mimetype`) and windows of the mailcap-style /etc/mime.types table (kind
`mimemap`), each as its own text or rendered.

mimetype (/usr/share/mime/packages/*.xml): one `<mime-type>` element with its
translated `<comment xml:lang=...>` lines left out (the text is otherwise the
file's, verbatim): the type (span), its media type (enum: the part before the
slash), the English comment, acronym and expanded acronym, the generic icon,
the glob patterns, aliases and parent types (`sub-class-of`) (lists), whether
it has content sniffing rules (`<magic>`, bool).
mimemap (/etc/mime.types): 3..8 consecutive entries (`type<TAB>ext ext ...`
lines; a window never overlaps another, so windows split by a hash of their
first type): the types listed (list), every extension in order (list), the
extensions of one entry named in the description (list), the entries (array
of objects: type, extensions as a nested array; raw layout only).
"""
import os
import re

from ..facts import Fact, words_of
from . import Entity, text_of, walk_unique
from .meta import _list_fact

MEDIA = ("application", "text", "image", "audio", "video", "font", "model", "message",
         "multipart", "inode", "x-content", "x-epoc", "chemical")
_ELEM = re.compile(r"^[ \t]*<mime-type type=\"[^\"]+\">.*?</mime-type>[ \t]*$", re.S | re.M)


def _attr_list(text, tag, attr):
    """[(value, (s, e))] of every `<tag ... attr="value"` in text."""
    return [(m.group(1), (m.start(1), m.end(1)))
            for m in re.finditer(rf"<{tag}\b[^>]*?\b{attr}=\"([^\"]+)\"", text)]


class _MimeType:
    NAME, SOURCE = "mimetype", "/usr/share/mime/packages/*.xml (<mime-type> elements)"

    def find(self, root="/usr/share/mime/packages"):
        return walk_unique([root], (".xml",), max_depth=0, max_bytes=8 << 20)

    def entities(self, paths, rng, n):
        blocks = []
        for p in paths:
            text = text_of(p, 8 << 20)
            if text:
                blocks += [m.group(0) for m in _ELEM.finditer(text)]
        out, seen = [], set()
        for b in rng.sample(blocks, len(blocks)):
            raw = "\n".join(ln for ln in b.split("\n") if "xml:lang=" not in ln) + "\n"
            e = None if len(raw) > 2500 else self.entity(raw)
            if e is not None and e.doc not in seen:
                seen.add(e.doc)
                out.append(e)
                if len(out) >= n:
                    break
        return sorted(out, key=lambda x: x.doc)

    def entity(self, raw):
        t = _attr_list(raw, "mime-type", "type")[0]
        media = t[0].split("/")[0]
        facts = [Fact("type", "span", t[0], pos=t[1], names=[["mime", "type"], ["media", "type"], ["type"]],
                      desc=["the MIME type this entry defines"], label={"en": "MIME type"})]
        if media in MEDIA:
            facts.append(Fact("media", "enum", media, surface=media, options=list(MEDIA),
                              names=[["top", "level", "type"], ["category"]],
                              desc=["the top-level media type (before the slash)"],
                              label={"en": "Top-level type"}))
        for tag, key, names, desc in (
                ("comment", "comment", [["comment"], ["description"], ["display", "name"]],
                 "the English description of the type"),
                ("acronym", "acronym", [["acronym"], ["abbreviation"]], "the format's acronym"),
                ("expanded-acronym", "expanded", [["expanded", "acronym"], ["full", "name"]],
                 "what the acronym stands for")):
            m = re.search(rf"<{tag}>([^<&\n]+)</{tag}>", raw)
            if m:
                facts.append(Fact(key, "span", m.group(1), pos=(m.start(1), m.end(1)), names=names,
                                  desc=[desc], label={"en": tag.replace("-", " ").capitalize()}))
        icon = _attr_list(raw, "generic-icon", "name")
        if icon:
            facts.append(Fact("icon", "span", icon[0][0], pos=icon[0][1],
                              names=[["generic", "icon"], ["icon"]], desc=["the generic icon name"],
                              label={"en": "Icon"}))
        for tag, key, names, desc in (
                ("glob", "globs", [["globs"], ["file", "patterns"], ["patterns"]],
                 "the file name patterns of the type, in order"),
                ("alias", "aliases", [["aliases"], ["other", "names"]], "other names of the type"),
                ("sub-class-of", "parents", [["parent", "types"], ["sub", "class", "of"]],
                 "the types it is a subclass of")):
            attr = "pattern" if tag == "glob" else "type"
            f = _list_fact(key, _attr_list(raw, tag, attr), names, desc,
                           label={"en": tag.replace("-", " ").capitalize()})
            if f:
                facts.append(f)
        facts.append(Fact("magic", "bool", "<magic" in raw,
                          names=[["has", "magic"], ["content", "sniffing"]],
                          neg=([["no", "magic"], ["extension", "only"]],
                               ["true if the type is recognised by name only (no magic rules)"]),
                          desc=["does the entry define magic (content) rules?"]))
        title = next((f.value for f in facts if f.key == "comment"), t[0])
        return Entity(t[0], title, facts, raw=raw)


class _MimeMap:
    NAME, SOURCE = "mimemap", "/etc/mime.types (windows of 3..8 entries)"

    def find(self, root="/etc"):
        p = os.path.join(root, "mime.types")
        return walk_unique([root], ("mime.types",), max_depth=0) if os.path.isfile(p) else []

    def entities(self, paths, rng, n):
        out = []
        for p in paths:
            text = text_of(p, 1 << 20)
            if not text:
                continue
            lines = [ln for ln in text.split("\n") if ln.strip() and not ln.startswith("#")]
            i = 0
            while i < len(lines):
                k = rng.randint(3, 8)
                win = lines[i:i + k]
                i += k
                e = self.entity(win, os.path.basename(p), rng)
                if e is not None:
                    out.append(e)
        rng.shuffle(out)
        return sorted(out[:n], key=lambda e: e.doc)

    def entity(self, win, base, rng):
        if len(win) < 3:
            return None
        raw = "\n".join(win) + "\n"
        items, region, types, exts, at = [], [], [], [], 0
        for ln in win:
            parts = re.finditer(r"\S+", ln)
            t = next(parts)
            it = {"type": Fact("type", "span", t.group(0), pos=(at + t.start(), at + t.end()))}
            ex = [(m.group(0), (at + m.start(), at + m.end())) for m in parts]
            if ex:
                it["exts"] = Fact("exts", "list", [x for x, _ in ex], pos=[p for _, p in ex])
            types.append((t.group(0), it["type"].pos))
            exts += ex
            items.append(it)
            region.append((at, at + len(ln) + 1))
            at += len(ln) + 1
        if len({x for x, _ in types}) < len(types) or len({x for x, _ in exts}) < len(exts) or not exts:
            return None
        facts = [_list_fact("types", types, [["types"], ["mime", "types"], ["media", "types"]],
                            "the media types listed, in order", label={"en": "Types"}),
                 _list_fact("extensions", exts, [["extensions"], ["file", "extensions"], ["suffixes"]],
                            "every file name extension listed, in order", label={"en": "Extensions"})]
        with_ext = [it for it in items if "exts" in it]
        pick = rng.choice(with_ext)
        name = pick["type"].value
        facts.append(Fact("ext_of", "list", pick["exts"].value, pos=pick["exts"].pos,
                          names=[["extensions", "of"] + words_of(name.split("/")[-1])[:2],
                                 ["suffixes", "for", "type"]],
                          desc=[f"the extensions registered for {name}"],
                          label={"en": f"Extensions of {name}"}))
        facts.append(Fact("entries", "objects", [1] * len(items), items=items, region=region, pos=True,
                          sub=[("type", "span", [["type"], ["mime", "type"]], {"en": "Type"}),
                               ("exts", "list", [["extensions"], ["suffixes"]], {"en": "Extensions"})],
                          names=[["entries"], ["mappings"]],
                          desc=["each entry: the type and its extensions"], label={"en": "Entries"}))
        return Entity(f"{base}#{types[0][0]}", f"{base}: {types[0][0]}", facts, raw=raw)


MIMETYPE, MIMEMAP = _MimeType(), _MimeMap()
