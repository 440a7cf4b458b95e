"""GNU documentation, change logs and translation catalogues (datagen v3):
Info manual nodes (kind `info`), GNU-style ChangeLog entries (kind
`gnulog`) and gettext catalogue headers (kind `gettext`), each as its own text.

info (/usr/share/info/*.info*.gz; one node, cut at a paragraph end near 1800
characters): the manual file, the node name and its Next / Prev / Up nodes
(spans; null when the node has none), the section number and title of its
underlined heading, the menu entries (array of objects: node, description;
and a list of the names), whether it has a menu (bool). At most 4 nodes per
manual file.
gnulog (/usr/share/doc/*/changelog.gz and ChangeLog* in the GNU format,
`YYYY-MM-DD  Name  <e-mail>` entry lines; a window of 2..5 consecutive
entries past the file's first 3000 characters, which the `news` kind's
excerpt covers; one copy of files several packages ship): the entries (array
of objects: date, author, e-mail, the files each names after `* `, a nested
array), the first entry's date, author and e-mail, whether one author wrote
every entry of the window (bool).
gettext (/usr/share/locale/*/LC_MESSAGES/*.mo; the header entry of the
binary catalogue written as the PO header it came from: `msgid ""`,
`msgstr ""` and one quoted `Key: value\\n` line per field): project name and
version (Project-Id-Version), the bug-report address (e-mail or URL), the
POT creation and PO revision dates, the last translator's name and e-mail,
the language team's name, the language code, the charset (enum), nplurals
(int) and whether plural forms are given (bool). One catalogue per domain.
"""
import glob
import gzip
import os
import re
import struct

from ...errors import DegError
from ...parsers import parse_date
from ..facts import Fact
from ..guard import check_path, is_reserved, read_bytes, walk
from . import Entity, Writer, sample, text_of
from .docs import _EMAIL

_NODE = re.compile(r"^File: ([^,\n]+),\s+Node: ([^,\n]+)(?:,\s+Next: ([^,\n]+))?"
                   r"(?:,\s+Prev: ([^,\n]+))?(?:,\s+Up: ([^,\n]+))?", re.M)
_HEAD = re.compile(r"^(?:(\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|Appendix [A-Z])\s+)?(\S[^\n]{1,70})\n([*=.-])\3+$",
                   re.M)
_MENU = re.compile(r"^\* ([^:\n]{1,60})::[ \t]*(\S[^\n]{0,80})?$", re.M)


class _Info:
    NAME, SOURCE = "info", "/usr/share/info/*.info*.gz nodes"

    def find(self, root="/usr/share/info"):
        return [p for p in walk(root, (".gz", ".info"), max_depth=0, max_bytes=8 << 20)
                if ".info" in os.path.basename(p)]

    def entities(self, paths, rng, n):
        return sample(paths, rng, n, lambda p, r: self.nodes(p, r))

    def nodes(self, path, rng):
        check_path(path)
        try:
            with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
                text = f.read(8 << 20).decode("utf-8", "replace")
        except (OSError, EOFError, ValueError):
            return []
        chunks = [c.lstrip("\n") for c in text.split("\x1f") if c.lstrip("\n").startswith("File: ")]
        rng.shuffle(chunks)
        out = []
        for c in chunks:
            e = self.entity(c)
            if e is not None:
                out.append(e)
            if len(out) >= 4:
                break
        return out

    def entity(self, chunk):
        if "\ufffd" in chunk or "\x00" in chunk or len(chunk) < 200:
            return None
        raw = chunk
        if len(raw) > 1800:
            cut = raw.rfind("\n\n", 0, 1800)
            raw = raw[:cut if cut > 300 else 1800]
        raw = raw.rstrip() + "\n"
        m = _NODE.match(raw)
        if not m:
            return None
        facts = []
        for g, key, names, desc in ((1, "manual", [["manual"], ["info", "file"], ["file"]], "the Info file"),
                                    (2, "node", [["node"], ["node", "name"], ["section"]], "this node's name"),
                                    (3, "next", [["next"], ["next", "node"]], "the next node, if any"),
                                    (4, "prev", [["previous"], ["prev", "node"]], "the previous node, if any"),
                                    (5, "up", [["up"], ["parent", "node"]], "the parent node, if any")):
            v = m.group(g)
            facts.append(Fact(key, "span", v.strip() if v else None,
                              pos=(m.start(g), m.end(g)) if v else None, names=names, desc=[desc],
                              label={"en": key.capitalize()}))
        h = _HEAD.search(raw, m.end())
        if h and h.start() < m.end() + 10:
            if h.group(1):
                facts.append(Fact("number", "span", h.group(1), pos=(h.start(1), h.end(1)),
                                  names=[["section", "number"], ["number"]], desc=["the section number"]))
            facts.append(Fact("title", "span", h.group(2), pos=(h.start(2), h.end(2)),
                              names=[["title"], ["heading"]], desc=["the node's heading"],
                              label={"en": "Title"}))
        items, region = [], []
        if "\n* Menu:" in raw:
            for mm in _MENU.finditer(raw, raw.index("\n* Menu:")):
                it = {"node": Fact("node", "span", mm.group(1), pos=(mm.start(1), mm.end(1)))}
                if mm.group(2):
                    it["desc"] = Fact("desc", "span", mm.group(2), pos=(mm.start(2), mm.end(2)))
                if it["node"].value and it["node"].value not in [x["node"].value for x in items]:
                    items.append(it)
                    region.append((mm.start(), mm.end()))
        if items:
            facts.append(Fact("menu", "objects", [1] * len(items), items=items, region=region, pos=True,
                              sub=[("node", "span", [["node"], ["entry"]], {"en": "Node"}),
                                   ("desc", "span", [["description"], ["summary"]], {"en": "Description"})],
                              names=[["menu"], ["menu", "entries"], ["subsections"]],
                              desc=["the menu's entries, in order"], label={"en": "Menu"}))
            facts.append(Fact("menu_names", "list", [x["node"].value for x in items],
                              pos=[x["node"].pos for x in items],
                              names=[["subnodes"], ["menu", "items"], ["children"]],
                              desc=["the nodes the menu lists, in order"]))
        facts.append(Fact("has_menu", "bool", bool(items), names=[["has", "menu"], ["has", "subnodes"]],
                          neg=([["leaf", "node"], ["no", "menu"]], ["true if the node has no menu"]),
                          desc=["does the node have a menu?"]))
        doc = f"{m.group(1).strip()}#{m.group(2).strip()}"
        return Entity(doc.replace("@", "_"), doc, facts, raw=raw)


_ENTRY = re.compile(r"^(\d{4}-\d\d-\d\d)[ \t]+(\S[^<\n]*?\S)[ \t]+<([^<>@\s]+@[^<>\s]+)>[ \t]*$", re.M)
_FILES = re.compile(r"^[ \t]+\* ([^:\n]+?)[ \t]*:", re.M)  # "* a.c (fn), b.h: ..."


class _GnuLog:
    NAME, SOURCE = "gnulog", "/usr/share/doc/*/changelog.gz, ChangeLog* (GNU format)"
    SKIP = 3000  # characters at the file's start left to the news kind's excerpt

    def find(self, root="/usr/share/doc"):
        out = []
        for pat in ("changelog.gz", "ChangeLog", "ChangeLog.gz"):
            out += glob.glob(os.path.join(root, "*", pat))
        return sorted(p for p in set(out) if os.path.isfile(p) and not is_reserved(p))

    def entities(self, paths, rng, n):
        heads, keep = set(), []
        for p in sorted(paths):  # one copy of a file several packages ship
            t = text_of(p, 1 << 20)
            if t and _ENTRY.match(t) and t[:4000] not in heads:
                heads.add(t[:4000])
                keep.append(p)
        return sample(keep, rng, n, self.windows)

    def windows(self, path, rng):
        text = text_of(path, 1 << 20)
        ents = [m for m in _ENTRY.finditer(text or "") if m.start() >= self.SKIP]
        out = []
        for _ in range(3):
            if len(ents) < 3:
                break
            i = rng.randrange(len(ents) // 5) * 5 if len(ents) >= 10 else 0  # windows never overlap
            e = self.entity(path, text, ents, i, rng.randint(2, 5))
            if e is not None and e.doc not in [x.doc for x in out]:
                out.append(e)
        return out

    def entity(self, path, text, ents, i, k):
        win = ents[i:i + k]
        a = win[0].start()
        end = ents[i + k].start() if i + k < len(ents) else len(text)
        if end - a > 2500:
            end = a + 2500
            win = [m for m in win if m.end() < end]
            end = text.rfind("\n", a, end) + 1
        if len(win) < 2 or "\ufffd" in text[a:end]:
            return None
        raw = text[a:end].rstrip() + "\n"
        items, region = [], []
        for j, m in enumerate(win):
            stop = (win[j + 1].start() if j + 1 < len(win) else end) - a
            it = {"date": Fact("date", "date", m.group(1), surface=m.group(1),
                               pos=(m.start(1) - a, m.end(1) - a)),
                  "author": Fact("author", "span", m.group(2), pos=(m.start(2) - a, m.end(2) - a)),
                  "email": Fact("email", "email", m.group(3), pos=(m.start(3) - a, m.end(3) - a))}
            files = []
            for fm in _FILES.finditer(raw, m.end() - a, stop):
                for tm in re.finditer(r"\([^)]*\)?|[^,\s()]+", fm.group(1)):  # (function names) skipped
                    if tm.group(0)[0] != "(" and tm.group(0) not in [x for x, _ in files]:
                        files.append((tm.group(0), (fm.start(1) + tm.start(), fm.start(1) + tm.end())))
            if files:
                it["files"] = Fact("files", "list", [x for x, _ in files], pos=[p for _, p in files])
            items.append(it)
            region.append((m.start() - a, stop))
        try:
            for it in items:
                parse_date(it["date"].value)
        except DegError:
            return None
        first = items[0]
        facts = [Fact("entries", "objects", [1] * len(items), items=items, region=region, pos=True,
                      sub=[("date", "date", [["date"], ["day"]], {"en": "Date"}),
                           ("author", "span", [["author"], ["name"], ["committer"]], {"en": "Author"}),
                           ("email", "email", [["email"], ["mail"]], {"en": "E-mail"}),
                           ("files", "list", [["files"], ["changed", "files"], ["paths"]],
                            {"en": "Files"})],
                      names=[["entries"], ["changes"], ["log", "entries"]],
                      desc=["the change log entries, newest first"], label={"en": "Entries"})]
        for key, kind, names, desc in (("date", "date", [["latest", "date"], ["last", "change"]],
                                        "the date of the first (newest) entry"),
                                       ("author", "span", [["latest", "author"], ["author"]],
                                        "who wrote the first entry"),
                                       ("email", "email", [["author", "email"], ["email"]],
                                        "the first entry's e-mail address")):
            f = first[key]
            facts.append(Fact(key, kind, f.value, surface=f.surface, pos=f.pos, names=names, desc=[desc]))
        facts.append(Fact("one_author", "bool", len({it["author"].value for it in items}) == 1,
                          names=[["single", "author"], ["one", "author"]],
                          neg=([["several", "authors"], ["many", "authors"]],
                               ["true if more than one person wrote these entries"]),
                          desc=["did one person write all these entries?"]))
        pkg = os.path.basename(os.path.dirname(path))
        return Entity(f"{pkg}@{i}", f"{pkg} ChangeLog", facts, raw=raw)


CHARSETS = ("UTF-8", "ISO-8859-1", "ISO-8859-2", "ISO-8859-15", "KOI8-R", "EUC-JP", "CP1251",
            "ASCII", "GB2312", "BIG5")


def mo_header(data):
    """The header entry (the translation of "") of a GNU .mo catalogue, decoded
    as UTF-8 (with replacement), or None for a malformed / header-less file."""
    if len(data) < 28:
        return None
    for end in ("<", ">"):
        magic, _rev, n, o, t = struct.unpack(end + "5I", data[:20])
        if magic == 0x950412de:
            break
    else:
        return None
    for i in range(min(n, 1 << 20)):
        if o + 8 * i + 8 > len(data) or t + 8 * i + 8 > len(data):
            return None
        ln, _off = struct.unpack(end + "2I", data[o + 8 * i:o + 8 * i + 8])
        if ln == 0:
            tl, toff = struct.unpack(end + "2I", data[t + 8 * i:t + 8 * i + 8])
            if toff + tl > len(data):
                return None
            return data[toff:toff + tl].decode("utf-8", "replace")
    return None


class _Gettext:
    NAME, SOURCE = "gettext", "/usr/share/locale/*/LC_MESSAGES/*.mo headers"

    def find(self, root="/usr/share/locale"):
        return sorted(p for p in glob.glob(os.path.join(root, "*", "LC_MESSAGES", "*.mo"))
                      if os.path.isfile(p))

    def entities(self, paths, rng, n):
        by = {}
        for p in paths:  # one catalogue per domain (the language drawn)
            by.setdefault(os.path.basename(p), []).append(p)
        picks = [rng.choice(v) for _k, v in sorted(by.items())]
        return sample(picks, rng, n, lambda p, _r: self.entity(p))

    def entity(self, path):
        try:
            head = mo_header(read_bytes(path, limit=32 << 20))
        except (OSError, struct.error):
            return None
        if not head or "\ufffd" in head or '"' in head or "\\" in head:
            return None
        w = Writer()
        w.text('msgid ""\nmsgstr ""\n')
        pos = {}
        for ln in head.split("\n"):
            k, sep, v = ln.partition(": ")
            if not sep or not re.match(r"^[A-Za-z][\w-]*$", k):
                continue
            w.text(f'"{k}: ')
            pos[k] = w.put(v.strip()) if v.strip() else None
            w.text('\\n"\n')
        raw = w.finish()[0]
        facts = []
        pid = pos.get("Project-Id-Version")
        if pid is None:
            return None
        v = raw[slice(*pid)]
        m = re.match(r"^(.*\S)\s+v?(\d[\w.-]*)$", v)
        a = pid[0]
        facts.append(Fact("project", "span", m.group(1) if m else v,
                          pos=(a, a + m.end(1)) if m else pid,
                          names=[["project"], ["package"], ["domain"]], desc=["the translated package"],
                          label={"en": "Project"}))
        facts.append(Fact("version", "span", m.group(2) if m else None,
                          pos=(a + m.start(2), a + m.end(2)) if m else None,
                          names=[["version"], ["package", "version"]],
                          desc=["the package version the catalogue is for"]))
        b = pos.get("Report-Msgid-Bugs-To")
        if b:
            s = raw[slice(*b)]
            em = _EMAIL.search(s)
            if em:
                facts.append(Fact("bugs", "email", em.group(0), pos=(b[0] + em.start(), b[0] + em.end()),
                                  names=[["bug", "address"], ["report", "bugs", "to"]],
                                  desc=["where to report bugs in the messages"]))
            elif s.startswith(("http://", "https://")) and " " not in s:
                facts.append(Fact("bugs", "uri", s, pos=b, names=[["bug", "url"], ["report", "bugs", "to"]],
                                  desc=["where to report bugs in the messages"]))
        for k, key, names, desc in (("POT-Creation-Date", "created", [["created"], ["pot", "date"]],
                                     "when the template was made"),
                                    ("PO-Revision-Date", "revised", [["revised"], ["revision", "date"],
                                                                     ["last", "updated"]],
                                     "when the translation was last revised")):
            p = pos.get(k)
            if p and re.match(r"\d{4}-\d\d-\d\d\b", raw[p[0]:p[1]]):
                try:
                    d = parse_date(raw[p[0]:p[0] + 10])
                except DegError:
                    continue
                facts.append(Fact(key, "date", d, surface=raw[p[0]:p[0] + 10], pos=(p[0], p[0] + 10),
                                  names=names, desc=[desc], label={"en": k}))
        for k, key, names in (("Last-Translator", "translator", [["translator"], ["last", "translator"]]),
                              ("Language-Team", "team", [["language", "team"], ["team"]])):
            p = pos.get(k)
            if not p:
                continue
            s = raw[slice(*p)]
            nm = re.match(r"^([^<(\n]*[^<(\s])", s)
            if nm and "@" not in nm.group(1):
                facts.append(Fact(key, "span", nm.group(1), pos=(p[0], p[0] + nm.end(1)), names=names,
                                  desc=[f"the {k.replace('-', ' ').lower()}'s name"], label={"en": k}))
            em = _EMAIL.search(s)
            if em and key == "translator":
                facts.append(Fact("translator_email", "email", em.group(0),
                                  pos=(p[0] + em.start(), p[0] + em.end()),
                                  names=[["translator", "email"], ["contact"]],
                                  desc=["the last translator's e-mail address"]))
        lang = pos.get("Language")
        facts.append(Fact("language", "span", raw[slice(*lang)] if lang else None, pos=lang,
                          names=[["language"], ["language", "code"], ["locale"]],
                          desc=["the language code"], label={"en": "Language"}))
        ct = pos.get("Content-Type")
        if ct:
            cm = re.search(r"charset=([\w-]+)", raw[slice(*ct)])
            if cm and cm.group(1).upper() in CHARSETS:
                facts.append(Fact("charset", "enum", cm.group(1).upper(), surface=cm.group(1),
                                  options=list(CHARSETS), names=[["charset"], ["encoding"]],
                                  desc=["the catalogue's character set"], label={"en": "Charset"}))
        pf = pos.get("Plural-Forms")
        if pf:
            nm = re.search(r"nplurals\s*=\s*(\d+)", raw[slice(*pf)])
            if nm:
                facts.append(Fact("nplurals", "int", int(nm.group(1)), surface=nm.group(1),
                                  pos=(pf[0] + nm.start(1), pf[0] + nm.end(1)), derive=False,
                                  names=[["nplurals"], ["plural", "forms", "count"]],
                                  desc=["how many plural forms the language has"]))
        facts.append(Fact("plurals", "bool", pf is not None, names=[["has", "plural", "forms"]],
                          neg=([["no", "plural", "forms"]], ["true if Plural-Forms is not given"]),
                          desc=["does the header give Plural-Forms?"]))
        dom = os.path.basename(path)[:-3]
        lang_dir = path.split(os.sep)[-3]
        return Entity(f"{dom}@{lang_dir}".replace("/", "_"), dom, facts, raw=raw)


INFO, GNULOG, GETTEXT = _Info(), _GnuLog(), _Gettext()
