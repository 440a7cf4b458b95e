"""INI-style key files (datagen v5, kind `keyfile`, dev-only: deg.datagen.v2.DEV5_KINDS):
freedesktop desktop entries (/usr/share/applications, /etc/xdg/autostart), D-Bus
service activation files (/usr/share/dbus-1/*/ *.service) and os-release files
(/etc/os-release, /usr/lib/os-release), each as its own text (translated
`Key[xx]=` lines left out) or rendered.

Facts: the file's format (enum), the first `[Section]` name, the name (Name= /
NAME=), the command (Exec=) and its program (the command's first word), the
comment / generic name / icon / type / user / systemd service / pretty name /
version id / id / version codename (spans, when written), the URLs of os-release
(uri), the lists `Categories=` / `Keywords=` / `MimeType=` / `ID_LIKE=` (split at
`;` or spaces), the keys set (list, in order), whether it runs in a terminal
(Terminal=, bool) and whether the file has comments (bool). Keys a format has
but the file does not set are asked with gold null (User= of a D-Bus service,
Comment= of a desktop entry, VERSION_CODENAME= of an os-release file).
"""
import os
import re

from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .meta import _list_fact

FORMATS = ("desktop entry", "D-Bus service", "os-release", "systemd unit", "INI file")
_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)[ \t]*=[ \t]*(.*?)[ \t]*$", re.M)
# key -> (fact key, kind, names, description); kind "list" splits at ; or spaces
KEYS = {
    "Name": ("name", "span", [["name"], ["application", "name"], ["service", "name"]], "the Name= value"),
    "NAME": ("name", "span", [["name"], ["os", "name"]], "the operating system's name"),
    "Exec": ("exec", "span", [["exec"], ["command"], ["command", "line"]], "the command it runs (Exec=)"),
    "Comment": ("comment", "span", [["comment"], ["tooltip"], ["description"]], "the Comment= text"),
    "GenericName": ("generic", "span", [["generic", "name"], ["kind", "of", "program"]],
                    "the generic name"),
    "Icon": ("icon", "span", [["icon"], ["icon", "name"]], "the icon name"),
    "Type": ("type", "span", [["type"], ["entry", "type"]], "the Type= value"),
    "User": ("user", "span", [["user"], ["run", "as"], ["runs", "as", "user"]],
             "the user the service runs as"),
    "SystemdService": ("unit", "span", [["systemd", "service"], ["unit"], ["systemd", "unit"]],
                       "the systemd unit that provides it"),
    "PRETTY_NAME": ("pretty", "span", [["pretty", "name"], ["display", "name"], ["full", "name"]],
                    "the OS name for display"),
    "VERSION_ID": ("version", "span", [["version", "id"], ["version"], ["release"]], "the OS version"),
    "ID": ("id", "span", [["id"], ["os", "id"], ["identifier"]], "the OS identifier"),
    "VERSION_CODENAME": ("codename", "span", [["codename"], ["version", "codename"]],
                         "the release code name"),
    "HOME_URL": ("home", "uri", [["home", "url"], ["homepage"], ["website"]], "the OS homepage"),
    "BUG_REPORT_URL": ("bugs", "uri", [["bug", "report", "url"], ["bug", "tracker"]],
                       "where to report bugs"),
    "SUPPORT_URL": ("support", "uri", [["support", "url"], ["help", "page"]], "the support page"),
    "Categories": ("categories", "list", [["categories"], ["menu", "categories"]],
                   "the menu categories, in order"),
    "Keywords": ("keywords", "list", [["keywords"], ["search", "terms"]], "the search keywords, in order"),
    "MimeType": ("mimetypes", "list", [["mime", "types"], ["handled", "types"], ["file", "types"]],
                 "the MIME types it opens, in order"),
    "ID_LIKE": ("like", "list", [["id", "like"], ["related", "distributions"], ["based", "on"]],
                "the distributions it is like"),
}
# keys asked with gold null when a file of the format does not set them
ABSENT = {"desktop entry": ("Comment", "GenericName"),
          "D-Bus service": ("User", "SystemdService"),
          "os-release": ("VERSION_CODENAME", "SUPPORT_URL")}


class _KeyFile(FileKind):
    NAME, SOURCE = "keyfile", ("*.desktop (/usr/share/applications, /etc/xdg/autostart), "
                               "/usr/share/dbus-1/*/ *.service, os-release")
    ROOTS = ("/usr/share/applications", "/etc/xdg/autostart", "/usr/share/dbus-1", "/etc", "/usr/lib")

    def find(self, root=None):
        """Key files under the roots (of /etc and /usr/lib only the files directly
        in them: their os-release), one path per real file."""
        real = {}
        for r in ([root] if isinstance(root, str) else (root or self.ROOTS)):
            for p in walk_unique([r], (".desktop", ".service", "os-release"), max_bytes=32 << 10,
                                 max_depth=0 if r in ("/etc", "/usr/lib") else 1):
                real.setdefault(os.path.realpath(p), p)
        return sorted(real.values())

    def entity(self, path):
        text = text_of(path, 32 << 10, content=True)
        if not text:
            return None
        raw = "".join(ln for ln in text.splitlines(True) if not re.match(r"^[A-Za-z]+\[[^\]]+\]\s*=", ln))
        if len(raw) > 3000:
            return None
        sec = re.search(r"^\[([^\]\n]+)\][ \t]*$", raw, re.M)
        fmt = ("os-release" if os.path.basename(path) == "os-release" else
               "desktop entry" if sec and sec.group(1) == "Desktop Entry" else
               "D-Bus service" if sec and sec.group(1) == "D-BUS Service" else None)
        if fmt is None:
            return None
        lines = list(_LINE.finditer(raw))
        if len(lines) < 3:
            return None
        facts = [Fact("format", "enum", fmt, surface=fmt, options=list(FORMATS),
                      names=[["format"], ["file", "format"], ["kind", "of", "file"]],
                      desc=["what kind of key file this is"], label={"en": "Format"})]
        if sec:
            facts.append(Fact("section", "span", sec.group(1), pos=(sec.start(1), sec.end(1)),
                              names=[["section"], ["group"], ["first", "section"]],
                              desc=["the first [section] header's name"], label={"en": "Section"}))
        seen = set()
        for m in lines:
            key, v = m.group(1), m.group(2)
            if key not in KEYS or key in seen or not v:
                continue
            seen.add(key)
            k, kind, names, desc = KEYS[key]
            a = m.start(2)
            if v[0] == v[-1] == '"' and len(v) > 2:
                v, a = v[1:-1], a + 1
            if kind == "list":
                sep = r"[^;\s]+" if key != "ID_LIKE" else r"\S+"
                items = [(x.group(0), (a + x.start(), a + x.end())) for x in re.finditer(sep, v)]
                f = _list_fact(k, items, names, desc, label={"en": key})
            else:
                f = Fact(k, kind, v, pos=(a, a + len(v)), names=names, desc=[desc], label={"en": key})
            if f:
                facts.append(f)
            if key == "Exec":
                p = re.match(r"\S+", v)
                facts.append(Fact("program", "span", p.group(0), pos=(a, a + p.end()),
                                  names=[["program"], ["executable"], ["binary"]],
                                  desc=["the program the command starts (its first word)"],
                                  label={"en": "Program"}))
        for key in ABSENT.get(fmt, ()):
            k, kind, names, desc = KEYS[key]
            if key not in seen and kind != "list":  # absent lists: deg.datagen.v4's nolist records
                facts.append(Fact(k, kind, None, names=names, desc=[desc], label={"en": key}))
        keys = []
        for m in lines:
            if m.group(1) not in [x for x, _ in keys]:
                keys.append((m.group(1), (m.start(1), m.end(1))))
        facts.append(_list_fact("keys", keys, [["keys"], ["settings"], ["fields", "set"]],
                                "the keys the file sets, in order", label={"en": "Keys"}))
        t = re.search(r"^Terminal[ \t]*=[ \t]*(true|false)[ \t]*$", raw, re.M)
        if t:
            facts.append(Fact("terminal", "bool", t.group(1) == "true",
                              names=[["terminal"], ["runs", "in", "terminal"]],
                              neg=([["graphical"], ["no", "terminal"]],
                                   ["true if it does not run in a terminal"]),
                              desc=["does it run in a terminal?"]))
        facts.append(Fact("commented", "bool", re.search(r"^[ \t]*#", raw, re.M) is not None,
                          names=[["has", "comments"], ["commented"]],
                          neg=([["no", "comments"], ["uncommented"]], ["true if the file has no comment lines"]),
                          desc=["does the file contain comment lines?"]))
        base = os.path.basename(path)
        title = next((f.value for f in facts if f.key == "name"), base)
        return Entity(f"{os.path.basename(os.path.dirname(path))}/{base}", title, facts, raw=raw)


KEYFILE = _KeyFile()
