"""Document kinds of datagen v2, v3 and v4: real offline text on this machine.

Each kind module has NAME, SOURCE (what it reads), `find(root)` -> sorted source
paths (every path passes deg.datagen.guard) and `entities(paths, rng, n)` ->
[Entity]. An Entity is one document: its facts (deg.datagen.facts.Fact, gold
derived from the source by a parser) and, for kinds whose source text is itself
a document, `raw` = (text, facts located in it) for the `raw` layout.
"""
import os
import re

from ..doc import Doc
from ..guard import read_text, walk


class Entity:
    """One document: doc id, title, facts; raw = the source text (or None) in
    which facts with `pos` were found."""
    __slots__ = ("doc", "title", "facts", "raw")

    def __init__(self, doc, title, facts, raw=None):
        self.doc, self.title, self.facts, self.raw = doc, title, facts, raw


def raw_doc(ent, ptrs):
    """A Doc-like (.finish()) of the entity's raw text with the asked facts marked."""
    marks, regions = {}, {}
    for f in ent.facts:
        p = ptrs.get(f.key)
        if p is None or f.pos is None:
            continue
        if f.kind == "list":
            for i, pos in enumerate(f.pos):
                marks[f"{p}/{i}"] = tuple(pos)
                if f.region:
                    regions[f"{p}/{i}"] = tuple(f.region[i])
        elif f.kind == "objects":
            base, subn = p
            for i, it in enumerate(f.items):
                if f.region:
                    regions[f"{base}/{i}"] = tuple(f.region[i])
                for k, x in it.items():
                    if k in subn and x.pos is not None and x.value is not None:
                        if x.kind == "list":  # a nested array: one mark and region per item
                            for j, pos in enumerate(x.pos):
                                marks[f"{base}/{i}/{subn[k]}/{j}"] = tuple(pos)
                                regions[f"{base}/{i}/{subn[k]}/{j}"] = tuple(pos)
                        else:
                            marks[f"{base}/{i}/{subn[k]}"] = tuple(x.pos)
        else:
            marks[p] = tuple(f.pos)
    text = ent.raw

    class _R:
        def finish(self):
            return text, dict(marks), dict(regions)
    return _R()


class Writer(Doc):
    """A Doc that also returns the span it wrote, for raw-text kinds that build
    their text piece by piece (pos of a fact = the span of its val())."""

    def put(self, s):
        a = self._n
        self.text(s)
        return (a, self._n)


def sample(paths, rng, n, make):
    """Up to `n` entities read from `paths` taken in a seeded random order:
    make(path, rng) -> Entity, [Entity] or None. A doc id or raw text already
    taken is skipped (copies of one file are one document). Sorted by doc id."""
    out, docs, texts = [], set(), set()
    for p in rng.sample(sorted(paths), len(paths)):
        got = make(p, rng)
        for e in ([got] if isinstance(got, Entity) else (got or [])):
            if e.doc in docs or (e.raw is not None and e.raw in texts):
                continue
            docs.add(e.doc)
            if e.raw is not None:
                texts.add(e.raw)
            out.append(e)
            if len(out) >= n:
                return sorted(out, key=lambda x: x.doc)
    return sorted(out, key=lambda x: x.doc)


def tokens(text, start, end, sep=r"[^\s,]+"):
    """[(token, (s, e))] of the tokens of text[start:end] (positions in text)."""
    return [(m.group(0), (start + m.start(), start + m.end()))
            for m in re.finditer(sep, text[start:end])]


def walk_unique(roots, suffixes, **kw):
    """guard.walk over each root, one path per real file (symlinked copies such
    as /lib -> /usr/lib or alias units are one file), sorted."""
    real = {}
    for r in roots:
        for p in walk(r, suffixes, **kw):
            real.setdefault(os.path.realpath(p), p)
    return sorted(real.values())


def text_of(path, limit, max_chars=None, content=False):
    """The text of `path` through the guard (at most `limit` bytes), or None when
    it cannot be read, holds a NUL or is longer than `max_chars`; with `content`
    also None when the guard refuses it by its content (guard.is_reserved_text:
    datagen v5's readers of RFC-822-like and key-value text)."""
    try:
        text = read_text(path, limit=limit, content=content)
    except (OSError, EOFError, ValueError):
        return None
    if "\x00" in text or (max_chars is not None and len(text) > max_chars):
        return None
    return text


class FileKind:
    """A kind with one document per source file: entities() draws files with
    `sample` and reads each with self.entity(path)."""

    def entities(self, paths, rng, n):
        return sample(paths, rng, n, lambda p, _r: self.entity(p))
