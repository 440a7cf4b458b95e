"""Package documentation under /usr/share/doc/*/: README* (kind `readme`) and
upstream NEWS / changelog files (kind `news`), as their own text (an excerpt
of up to ~1500 characters cut at a line end).

Facts, each found by a parser in the excerpt itself (so the gold is written
there): the title (first line, when short), the first URL and e-mail address,
the first version number after "version"/"release", the first date the
runtime's date parser finds, the headings (Markdown `#` lines or lines
underlined with === / ---), whether a licence is mentioned (bool), and the
package directory's name when the excerpt writes it. Debian `copyright`
files in the same directories are reserved for evaluation and never read.
"""
import glob
import os
import re

from ...errors import DegError
from ...parsers import candidates, parse_date, trim_span
from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity

_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}`]+[^\s<>\"'()\[\]{}`.,;:!?]")
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b")
_VERSION = re.compile(r"\b(?:[Vv]ersion|[Rr]elease|[Vv]\.?)\s*(\d+\.\d+(?:\.\d+)*)\b")
_LICENSE = re.compile(r"licen[cs]e|\bGPL\b|\bMIT\b|\bBSD\b", re.I)


# Python packages' READMEs are often their METADATA long description, and
# Python package metadata is reserved for evaluation: their doc dirs are skipped.
_SKIP_PKGS = ("python3-", "python-", "pypy")


def _find(root, pats):
    out = []
    for pat in pats:
        out += glob.glob(os.path.join(root, "*", pat))
    return sorted(p for p in set(out) if not is_reserved(p) and os.path.isfile(p)
                  and not os.path.basename(os.path.dirname(p)).startswith(_SKIP_PKGS))


def _excerpt(text, max_chars=1500):
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    if len(text) <= max_chars:
        return text.rstrip() + "\n"
    cut = text.rfind("\n", 0, max_chars)
    return text[:cut if cut > 200 else max_chars].rstrip() + "\n"


def _located(text, m, g=0):
    return m.group(g), (m.start(g), m.end(g))


def entity(path, kind):
    try:
        raw = read_text(path, limit=64 << 10)
    except (OSError, EOFError, ValueError):
        return None
    if "\x00" in raw or raw.count("\ufffd") > 3:
        return None
    text = _excerpt(raw)
    if len(text) < 200:
        return None
    pkg = path.split("/")[-2]
    facts = []
    first = re.match(r"\s*(\S[^\n]*)", text)
    if first and 3 <= len(first.group(1).strip()) <= 70:
        s, e = trim_span(text, first.start(1), first.end(1))
        t = text[s:e].strip("#= -*")
        if t and not re.match(r"(?i)copyright|\(c\)", t) and not t.endswith((".", ",", ";")):
            i = text.index(t, s)
            facts.append(Fact("title", "span", t, pos=(i, i + len(t)),
                              names=[["title"], ["heading"], ["document", "title"]],
                              desc=["the document's first line / title"]))
    uris, emails = set(candidates("uri", text)), set(candidates("email", text))
    m = next((m for m in _URL.finditer(text) if (m.start(), m.end()) in uris), None)
    if m:
        url = m.group(0)
        facts.append(Fact("url", "uri", url, pos=(m.start(), m.end()),
                          names=[["url"], ["first", "url"], ["link"], ["web", "address"]],
                          desc=["the first web address in the text"]))
    m = next((m for m in _EMAIL.finditer(text)
              if (m.start(), m.end()) in emails), None)
    if m:
        facts.append(Fact("email", "email", m.group(0), pos=(m.start(), m.end()),
                          names=[["email"], ["first", "email"], ["mail", "address"]],
                          desc=["the first e-mail address given"]))
    m = _VERSION.search(text)
    if m:
        facts.append(Fact("version", "span", m.group(1), pos=(m.start(1), m.end(1)),
                          names=[["version"], ["release"], ["version", "number"]],
                          desc=["the first version number mentioned"]))
    for s, e in candidates("date", text)[:1]:
        try:
            facts.append(Fact("date", "date", parse_date(text[s:e]), surface=text[s:e], pos=(s, e),
                              names=[["date"], ["first", "date"], ["date", "mentioned"]],
                              desc=["the first date the text mentions"]))
        except DegError:
            pass
    heads, hpos = [], []
    for m in re.finditer(r"(?m)^(#{1,3}[ \t]+(\S[^\n]*?)[ \t#]*|(\S[^\n]{2,60}?)[ \t]*\n[=\-~]{3,}[ \t]*)$", text):
        g = 2 if m.group(2) else 3
        h = m.group(g)
        if h and h not in heads and h.strip() == h and len(heads) < 8:
            heads.append(h)
            hpos.append((m.start(g), m.end(g)))
    if len(heads) >= 2:
        facts.append(Fact("headings", "list", heads, pos=hpos,
                          names=[["headings"], ["sections"], ["section", "titles"]],
                          desc=["the section headings, in order"]))
    facts.append(Fact("license", "bool", bool(_LICENSE.search(text)),
                      names=[["mentions", "license"], ["license", "mentioned"]],
                      neg=([["no", "license", "mention"], ["license", "not", "mentioned"]],
                           ["true if the text says nothing about a licence"]),
                      desc=["does the text mention a licence?"]))
    m = re.search(r"(?<![\w.-])" + re.escape(pkg) + r"(?![\w-])", text)
    if m:
        facts.append(Fact("package", "span", pkg, pos=(m.start(), m.end()),
                          names=[["project"], ["package"], ["project", "name"], ["software"]],
                          desc=["the software the document is about"]))
    if sum(f.pos is not None for f in facts) < 2:
        return None
    return Entity(f"{pkg}/{os.path.basename(path)}", pkg, facts, raw=text)


class _Docs:
    def __init__(self, name, pats, source):
        self.NAME, self.pats, self.SOURCE = name, pats, source

    def find(self, root="/usr/share/doc"):
        return _find(root, self.pats)

    def entities(self, paths, rng, n):
        out, seen = [], set()
        for p in rng.sample(paths, min(len(paths), n * 3)):
            pkg = p.split("/")[-2]
            if pkg in seen:
                continue
            e = entity(p, self.NAME)
            # one document per package and per text (doc dirs symlinked between packages)
            if e is not None and e.raw not in seen:
                seen.update((pkg, e.raw))
                out.append(e)
            if len(out) >= n:
                break
        return out


README = _Docs("readme", ("README", "README.md", "README.txt", "README.gz", "README.md.gz",
                          "README.rst", "README.rst.gz", "README.Debian", "README.Debian.gz"),
               "/usr/share/doc/*/README*")
NEWS = _Docs("news", ("NEWS", "NEWS.gz", "NEWS.md", "NEWS.md.gz", "changelog.gz", "CHANGES.gz",
                      "CHANGES", "ChangeLog.gz", "NEWS.Debian.gz", "CHANGES.md.gz", "HISTORY.gz"),
             "/usr/share/doc/*/{NEWS,changelog,CHANGES,ChangeLog,HISTORY}*")
