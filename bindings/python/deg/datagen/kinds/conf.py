"""Key-value configuration text (`KEY value`, `key = value`, `key: value` lines
with comments around them) from /etc, systemd units and
/usr/share/doc/*/examples (XML files are skipped), as its own text: a window of
the file holding 3..12 settings, or rendered.

Facts: up to 8 settings of the window, named after their keys (e.g.
`UID_MIN` -> uid_min / "uid min"); a value of digits is an integer, yes/no,
true/false, on/off is a boolean (asked as "is KEY on?" or its negation by a
coin), anything else a verbatim string (only when written once in the window).
"""
import os
import re

from ..facts import Fact, words_of
from ..guard import is_reserved, read_text
from . import Entity

NAME = "config"
SOURCE = "/etc/**/*.conf and other key-value files, systemd units, /usr/share/doc/*/examples"
_LINE = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_.-]{1,40})([ \t]*[=:][ \t]*|[ \t]+)"
                   r"(\S(?:[^\n#]*\S)?)[ \t]*(?:#.*)?$", re.M)
_TRUE, _FALSE = ("yes", "true", "on", "enabled"), ("no", "false", "off", "disabled")


ROOTS = ("/etc", "/usr/lib/systemd/system", "/usr/share/doc")
_SUFFIXES = (".conf", ".defs", ".cfg", ".ini", ".service", ".socket", ".timer", ".conf.example",
             ".conf.sample")


def find(root=None):
    """Key-value files under /etc, systemd units and /usr/share/doc/*/examples
    (or under `root`), each readable and < 256 KiB."""
    out = []
    for r in ([root] if isinstance(root, str) else (root or ROOTS)):
        for dirpath, dirs, files in os.walk(r):
            depth = dirpath[len(r):].count("/")
            dirs[:] = sorted(d for d in dirs if depth < 3 and not d.startswith("."))
            if r == "/usr/share/doc" and "/examples" not in dirpath:
                if depth >= 1:
                    dirs[:] = [d for d in dirs if d == "examples"]
                continue
            for f in files:
                p = os.path.join(dirpath, f)
                if (f.endswith(_SUFFIXES) or f in ("environment", "login.defs", "os-release")) \
                        and not is_reserved(p) and os.path.isfile(p) and os.access(p, os.R_OK) \
                        and os.path.getsize(p) < 256 << 10:
                    out.append(p)
    real = {}  # one path per file (conf.d symlinks point into conf.avail)
    for p in sorted(out):
        real.setdefault(os.path.realpath(p), p)
    return sorted(real.values())


def _settings(text):
    out = []
    for m in _LINE.finditer(text):
        key, val = m.group(1), m.group(3)
        if len(val) > 80 or val.startswith(("{", "[", "(")) or key.lower() in ("if", "fi", "then"):
            continue
        out.append((key, m.start(1), val, m.start(3), m.end(3)))
    return out


def entity(path, rng):
    try:
        text = read_text(path, limit=256 << 10)
    except (OSError, ValueError):
        return None
    if "\x00" in text or text.lstrip().startswith("<"):  # XML is not key-value text
        return None
    sets = _settings(text)
    if len(sets) < 3:
        return None
    i = rng.randrange(max(1, len(sets) - 8))
    window = sets[i:i + rng.randint(3, 12)]
    a = text.rfind("\n", 0, window[0][1]) + 1
    a = max(0, text.rfind("\n\n", max(0, a - 400), a) + 1) if a else 0
    b = text.find("\n", window[-1][4])
    b = len(text) if b < 0 else b + 1
    raw = text[a:b]
    if len(raw) > 2500:
        return None
    facts, seen = [], set()
    for key, _k0, val, s, e in window:
        if key in seen:
            continue
        seen.add(key)
        words = words_of(key.lower())
        if not words:
            continue
        pos = (s - a, e - a)
        lab = {"en": key}
        if val.isdigit() and len(val) < 10:
            facts.append(Fact(key, "int", int(val), surface=val, pos=pos, label=lab, names=[words],
                              desc=[f"the value of {key}", f"{key} setting"]))
        elif val.lower() in _TRUE + _FALSE:
            facts.append(Fact(key, "bool", val.lower() in _TRUE, pos=None, label=lab, names=[words],
                              neg=([["no"] + words, words + ["off"]], [f"true if {key} is off"]),
                              desc=[f"is {key} on?", f"whether {key} is enabled"]))
        elif raw.count(val) == 1:  # a value written twice would be ambiguous gold
            facts.append(Fact(key, "span", val, pos=pos, label=lab, names=[words],
                              desc=[f"the value of {key}", f"what {key} is set to"]))
        if len(facts) >= 8:
            break
    if len(facts) < 3:
        return None
    return Entity(f"{path}@{i}", os.path.basename(path), facts, raw=raw)


def entities(paths, rng, n):
    out = []
    per = max(1, -(-n // max(1, len(paths))))
    for p in sorted(paths):
        for _ in range(min(per, 4)):
            e = entity(p, rng)
            if e is not None and e.doc not in {x.doc for x in out}:
                out.append(e)
    rng.shuffle(out)
    return sorted(out[:n], key=lambda e: e.doc)
