"""Manual pages (/usr/share/man/man{1,5,8}, also the de/fr/es/... translations):
the roff source is read (man(7) macros only; mdoc pages are skipped) and turned
into man(1)-like plain text, recording where each fact was written.

Facts (gold from the roff source): command (the NAME line's first name), the
one-line description after `\\-`, section (enum 1..8), source ("GNU coreutils
9.1"), manual title, the .TH date when it is a full date, options (array of
objects: flag, long flag, first line of its help) and has_options (bool).
"""
import glob
import os
import re
import unicodedata

from ...errors import DegError
from ...parsers import candidates, parse_date, trim_span
from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity, Writer

NAME = "manpage"
SOURCE = "/usr/share/man/{,de/,fr/,...}man[158]/* roff sources (gzip or plain)"
SECTIONS = ["1", "2", "3", "4", "5", "6", "7", "8"]
SECTION_DESC = {"1": "user commands", "2": "system calls", "3": "library functions",
                "4": "special files", "5": "file formats and conventions", "6": "games",
                "7": "miscellanea", "8": "system administration commands"}
OPTION_TITLES = ("OPTIONS", "OPTIONEN", "OPCIONES", "OPZIONI", "OPÇÕES", "OPTIES")
LANG_DIRS = ("", "de", "fr", "es", "it", "pt", "nl")


def find(root="/usr/share/man"):
    out = []
    for lang in LANG_DIRS:
        for sec in ("1", "5", "8"):
            out += glob.glob(os.path.join(root, lang, f"man{sec}", "*"))
    # the thousands of generated gcloud_* pages would drown every other page
    return sorted(p for p in out if os.path.isfile(p) and not is_reserved(p)
                  and not os.path.basename(p).startswith("gcloud"))


_ESC = [(r"\\f(\[[^\]]*\]|\(..|.)", ""), (r"\\[,/]", ""), (r"\\&", ""), (r"\\-", "-"),
        (r"\\\(em", "--"), (r"\\\(en", "-"), (r"\\\(aq", "'"), (r"\\\((lq|rq|dq)", '"'),
        (r"\\\(oq", "'"), (r"\\\(cq", "'"), (r"\\\(bu", "*"),
        (r"\\\[([^\]]*)\]", lambda m: _glyph(m.group(1))),
        (r"\\\((..)", lambda m: _glyph(m.group(1))), (r"\\e", "\\\\"), (r"\\ ", " "), (r"\\\*\(..", ""), (r"\\\*.", ""),
        (r"\\[|^~0]", " "), (r"\\s[-+]?\d", ""), (r"\\c", ""), (r"\\(.)", r"\1")]


_ACCENT = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
           ",": "\u0327", ":": "\u0308"}


def _glyph(name):
    """A groff special character (\\(e', \\[u00E9], \\[ss]) as text; unknown ones vanish."""
    if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,5}", name):
        return chr(int(name[1:], 16))
    if name == "ss":
        return "\u00df"
    if len(name) == 2:
        a, b = (name[1], name[0]) if name[0] in _ACCENT else (name[0], name[1])
        if a.isalpha() and b in _ACCENT:
            return unicodedata.normalize("NFC", a + _ACCENT[b])
    return ""


def plain(s):
    """Text of one roff line with font and character escapes resolved."""
    for a, b in _ESC:
        s = re.sub(a, b, s)
    return s


def _args(s):
    out, cur, q = [], "", False
    for ch in s:
        if ch == '"':
            q = not q
        elif ch in " \t" and not q:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur else [])


def parse(src):
    """{th: [args], sections: [(title, [("p", text) | ("tp", tag, text)])]} or None."""
    th, sections, cur, block = None, [], None, None
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if ln.startswith(('.\\"', "'\\\"", '.\\\\"')) or ln.strip() in (".", ""):
            continue
        if ln.startswith((".Dd", ".Dt", ".Sh")):
            return None  # mdoc
        if ln.startswith("."):
            req, rest = (ln[1:].split(None, 1) + [""])[:2]
            if req == "TH":
                th = [plain(a) for a in _args(rest)]
            elif req in ("SH", "SS"):
                title = plain(" ".join(_args(rest))) or (plain(lines[i]) if i < len(lines) else "")
                if not rest and i < len(lines):
                    i += 1
                cur, block = [], None
                if req == "SH":
                    sections.append((title.strip(), cur))
            elif req in ("TP", "IP") and cur is not None:
                tag = plain(_args(rest)[0]) if req == "IP" and _args(rest) else ""
                if req == "TP":
                    while i < len(lines) and lines[i].startswith(".") and lines[i][1:3] in ("TQ", "PD"):
                        i += 1
                    if i < len(lines):
                        tag = _macro_text(lines[i])
                        i += 1
                block = ["tp", tag.strip(), ""]
                cur.append(block)
            elif req in ("PP", "P", "LP", "sp", "br") and cur is not None:
                block = None
            elif req in ("B", "I", "BR", "IR", "RB", "BI", "IB", "RI", "SM", "SB") and cur is not None:
                _add(cur, block, _macro_text(ln))
                block = block or cur[-1]
            continue
        if cur is not None:
            block = _add(cur, block, plain(ln))
    return {"th": th, "sections": sections} if th and sections else None


def _macro_text(ln):
    if not ln.startswith("."):
        return plain(ln)
    req, rest = (ln[1:].split(None, 1) + [""])[:2]
    parts = [plain(a) for a in _args(rest)]
    return ("" if len(req) == 2 and req not in ("SM", "SB") else " ").join(parts)


def _add(cur, block, text):
    if block is None:
        block = ["p", ""]
        cur.append(block)
    k = 2 if block[0] == "tp" else 1
    block[k] = (block[k] + " " + text).strip()
    return block


_FLAG = re.compile(r"^(-[A-Za-z0-9?@][A-Za-z0-9_-]*(?=$|[\s,=\[]))?(?:,\s*)?"
                   r"(--[A-Za-z0-9][A-Za-z0-9-]*(?=$|[\s,=\[]))?")


def entity(path, max_options=6, max_chars=1800):
    """The Entity of one man page, or None if it does not parse into facts."""
    try:
        page = parse(read_text(path))
    except (OSError, EOFError, ValueError):
        return None
    if page is None or len(page["th"]) < 2:
        return None
    th = page["th"]
    name_sec = page["sections"][0][1]  # NAME (BEZEICHNUNG, NOM, ...) always comes first
    if not name_sec or name_sec[0][0] != "p":
        return None
    m = re.match(r"^\s*([^\s,]+)(?:\s*,\s*[^\s,]+)*\s+-+\s+(.+?)\s*$", name_sec[0][1])
    if not m:
        return None
    cmd, desc = m.group(1), m.group(2).rstrip(".")
    s, e = trim_span(desc, 0, len(desc))
    desc = desc[s:e]
    sec = th[1][:1]
    if sec not in SECTIONS or not desc or len(desc) > 200:
        return None
    w = Writer()
    facts = []
    head = f"{th[0]}({th[1]})"
    w.text(head + " " * max(4, 30 - len(head)))
    manual = th[4] if len(th) > 4 and th[4] else None
    mpos = w.put(manual) if manual else None
    w.text(" " * 6 + head + "\n\n")
    title = {"": "NAME", "de": "BEZEICHNUNG", "fr": "NOM", "es": "NOMBRE"}.get(_lang(path), "NAME")
    w.text(f"{title}\n       ")
    cpos = w.put(cmd)
    w.text(name_sec[0][1][len(cmd):m.start(2)].replace("\\", ""))
    dpos = w.put(desc)
    w.text("\n")
    opts, shown = [], 0
    for t, blocks in page["sections"][1:]:
        shown += 1
        w.text(f"\n{t}\n")
        for b in blocks:
            if w._n > max_chars:
                break
            if b[0] == "p":
                w.text("       " + b[1][:400] + "\n\n")
                continue
            fm = _FLAG.match(b[1])
            if fm and fm.group(0) and len(opts) < max_options and b[2]:
                w.text("       ")
                short = w.put(fm.group(1)) if fm.group(1) else None
                if fm.group(1) and fm.group(2):
                    w.text(b[1][len(fm.group(1)):b[1].index(fm.group(2))])
                long_ = w.put(fm.group(2)) if fm.group(2) else None
                w.text(b[1][fm.end():] + "\n              ")
                help_ = re.split(r"(?<=[.;:])\s", b[2], maxsplit=1)[0].rstrip(".;:")
                help_ = help_[slice(*trim_span(help_, 0, len(help_)))][:160].strip()
                hpos = w.put(help_) if help_ else None
                w.text(b[2][len(help_):len(help_) + 200] + "\n\n")
                opts.append((fm.group(1), short, fm.group(2), long_, help_, hpos, (short or long_)[0], w._n))
            else:
                w.text(f"       {b[1]}\n              {b[2][:300]}\n\n")
        if w._n > max_chars:
            w.text("[...]\n")
            break
    src = th[3] if len(th) > 3 and th[3] else None
    w.text("\n")
    spos = w.put(src) if src else None
    date = th[2] if len(th) > 2 else ""
    w.text(" " * 8)
    tpos = w.put(date)
    w.text(" " * 8 + head + "\n")
    text = w.finish()[0]
    lab = {"en": "Command", "de": "Befehl", "fr": "Commande", "es": "Orden", "it": "Comando",
           "pt": "Comando", "nl": "Opdracht"}
    facts.append(Fact("command", "span", cmd, pos=cpos, label=lab,
                      names=[["command"], ["program"], ["command", "name"], ["tool"], ["name"]],
                      desc=["the command the page documents", "name of the program",
                            "the page's subject (first name in NAME)"]))
    facts.append(Fact("summary", "span", desc, pos=dpos,
                      label={"en": "Description", "de": "Beschreibung", "fr": "Description",
                             "es": "Descripción"},
                      names=[["description"], ["summary"], ["one", "line", "description"], ["purpose"]],
                      desc=["the one-line description from the NAME section",
                            "what the command does, in one line"]))
    facts.append(Fact("section", "enum", sec, surface=sec, options=SECTIONS,
                      option_desc=SECTION_DESC, label={"en": "Section", "de": "Abschnitt",
                                                       "fr": "Section", "es": "Sección"},
                      names=[["section"], ["manual", "section"], ["man", "section"]],
                      desc=["manual section number", "which section of the manual"]))
    try:  # a full date only ("March 2024" is not one)
        iso = parse_date(date) if date and (tpos[0], tpos[1]) in candidates("date", text) else None
    except DegError:
        iso = None
    if iso:
        facts.append(Fact("date", "date", iso, surface=date, pos=tpos,
                          names=[["date"], ["page", "date"], ["last", "updated"]],
                          label={"en": "Date", "de": "Datum", "fr": "Date", "es": "Fecha"},
                          desc=["the page's date (footer)"]))
    facts.append(Fact("blurb", "gen", desc, names=[["tagline"], ["short", "summary"]],
                      desc=["a one-line summary of what the command does"]))
    if manual:
        facts.append(Fact("manual", "span", manual, pos=mpos,
                          names=[["manual"], ["manual", "title"], ["book"]],
                          desc=["the manual this page belongs to (header centre)"]))
    if src:
        facts.append(Fact("source", "span", src, pos=spos,
                          names=[["source"], ["package"], ["origin"], ["provided", "by"]],
                          desc=["the software and version the page comes from (footer)"]))
    if opts:
        items, region = [], []
        for o in opts:
            it = {}
            if o[0]:
                it["flag"] = Fact("flag", "span", o[0], pos=o[1])
            if o[2]:
                it["long"] = Fact("long", "span", o[2], pos=o[3])
            if o[4]:
                it["help"] = Fact("help", "span", o[4], pos=o[5])
            items.append(it)
            region.append((o[6], o[7]))
        sub = [("flag", "span", [["flag"], ["short"], ["short", "option"]], {"en": "Flag"}),
               ("long", "span", [["long"], ["long", "option"], ["long", "flag"]], {"en": "Long option"}),
               ("help", "span", [["help"], ["meaning"], ["what", "it", "does"]], {"en": "Meaning"})]
        facts.append(Fact("options", "objects", [1] * len(items), items=items, sub=sub,
                          region=region, pos=True, label={"en": "Options", "de": "Optionen",
                                                          "fr": "Options", "es": "Opciones"},
                          names=[["options"], ["flags"], ["switches"], ["command", "line", "options"]],
                          desc=["the first options the page lists, in order"]))
    has_sec = any(t.upper() in OPTION_TITLES for t, _ in page["sections"][1:shown + 1])
    facts.append(Fact("has_options", "bool", has_sec,
                      names=[["has", "options", "section"], ["options", "section", "present"]],
                      neg=([["no", "options", "section"], ["lacks", "options", "section"]],
                           ["true if the page has no OPTIONS section"]),
                      desc=["does the page have an OPTIONS section?"]))
    # doc id by page, not file: copies of one page (xzgrep, lzfgrep, ...) are one document
    return Entity(f"{cmd}.{th[1]}@{_lang(path) or 'en'}", f"{cmd}({sec})", facts, raw=text)


def _lang(path):
    parts = path.split("/")
    return parts[-3] if len(parts) >= 3 and parts[-3] in LANG_DIRS[1:] else ""


def entities(paths, rng, n):
    out, seen = [], set()
    for p in rng.sample(paths, min(len(paths), n * 6)):
        e = entity(p)
        if e is not None and e.doc not in seen:
            seen.add(e.doc)
            out.append(e)
        if len(out) >= n:
            break
    return out
