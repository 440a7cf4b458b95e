"""Package and service metadata files (datagen v3): systemd unit files (kind
`unit`), pkg-config `.pc` files (kind `pkgconfig`) and npm `package.json`
manifests (kind `npm`), each as its own text or rendered.

unit (/usr/lib/systemd/{system,user}, as `systemctl cat` prints it: a
`# PATH` line, then the file): unit name, unit type (enum from the suffix),
Description=, ExecStart=, Type= and Restart= (enums), User=, the
Documentation= / After= / Before= / Wants= / Requires= / WantedBy= lists,
its sections (array of objects: the section name and the keys it sets, a
nested array; asked of the raw layout only), whether it has an [Install]
section (bool) and DefaultDependencies= (bool, when written).
pkgconfig: Name:, Description:, Version:, URL:, Libs:, Cflags:, the prefix=
variable, the modules of Requires: / Requires.private: (lists, version
constraints dropped), whether it requires other modules (bool); the module
name (the file's stem) only in renderings (a .pc file does not write it).
npm (/usr/lib/node_modules/**/package.json): the manifest's simple keys
rewritten as JSON (2-space indent, the file's key order; scripts, exports and
other tool settings left out): name, version, description, license (enum of
SPDX ids, else a span), homepage, repository URL, author name and e-mail,
main, "type" (enum), engines.node, keywords (list), dependencies (array of
objects: package, version range) and whether it has dependencies (bool).
"""
import json
import os
import re

from ..facts import Fact
from ..guard import walk
from . import Entity, FileKind, Writer, text_of, tokens, walk_unique
from .docs import _EMAIL

UNIT_TYPES = ("service", "socket", "timer", "target", "mount", "automount", "path", "slice",
              "swap", "scope", "device")
SERVICE_TYPES = ("simple", "exec", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle")
RESTART = ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always")
_KV = re.compile(r"^([A-Za-z][A-Za-z0-9.]*)[ \t]*[=:][ \t]*(.*?)[ \t]*$", re.M)


def _line_values(text, key, sep="="):
    """[(value, (s, e))] of every `key<sep>value` line (value stripped, non-empty)."""
    out = []
    for m in re.finditer(rf"^{re.escape(key)}[ \t]*{sep}[ \t]*(\S(?:.*\S)?)[ \t]*$", text, re.M):
        out.append((m.group(1), (m.start(1), m.end(1))))
    return out


def _list_fact(key, items, names, desc, label=None):
    vals = []
    for v, p in items:
        if v not in [x for x, _ in vals]:
            vals.append((v, p))
    if not vals:
        return None
    return Fact(key, "list", [v for v, _ in vals], pos=[p for _, p in vals], names=names,
                desc=[desc], label=label)


class _Unit(FileKind):
    NAME, SOURCE = "unit", "/usr/lib/systemd/system, /usr/lib/systemd/user unit files"
    ROOTS = ("/usr/lib/systemd/system", "/usr/lib/systemd/user")

    def find(self, root=None):
        return walk_unique([root] if isinstance(root, str) else (root or self.ROOTS),
                           tuple("." + t for t in UNIT_TYPES), max_depth=1, max_bytes=8 << 10)

    def entity(self, path):
        body = text_of(path, 8 << 10, 3000)
        if body is None or "[" not in body:
            return None
        head = f"# {path}\n"
        text = head + body
        base = os.path.basename(path)
        stem, _, suffix = base.rpartition(".")
        a = head.index(base)
        one = lambda k: next(iter(_line_values(text, k)), None)  # noqa: E731
        facts = [Fact("name", "span", base, pos=(a, a + len(base)),
                      names=[["unit", "name"], ["unit"], ["name"]], desc=["the unit's file name"],
                      label={"en": "Unit", "de": "Unit", "fr": "Unité", "es": "Unidad"}),
                 Fact("unit_type", "enum", suffix, surface=suffix, options=list(UNIT_TYPES),
                      names=[["unit", "type"], ["kind"]], desc=["what kind of unit this is"],
                      label={"en": "Unit type"})]
        for key, k, names, desc in (
                ("Description", "description", [["description"], ["summary"]], "the unit's description"),
                ("ExecStart", "exec_start", [["exec", "start"], ["command"], ["start", "command"]],
                 "the command the service runs"),
                ("User", "user", [["user"], ["run", "as"]], "the user it runs as"),
                ("OnCalendar", "calendar", [["on", "calendar"], ["schedule"]], "when the timer fires"),
                ("ListenStream", "listen", [["listen", "stream"], ["socket", "address"]],
                 "the stream socket it listens on")):
            v = one(key)
            if v and key == "ExecStart":
                s = v[0].lstrip("-@+!:")
                v = (s, (v[1][1] - len(s), v[1][1])) if s else None
            if v:
                facts.append(Fact(k, "span", v[0], pos=v[1], names=names, desc=[desc],
                                  label={"en": key}))
        for key, k, opts, names in (("Type", "service_type", SERVICE_TYPES,
                                     [["service", "type"], ["startup", "type"]]),
                                    ("Restart", "restart", RESTART, [["restart"], ["restart", "policy"]])):
            v = one(key)
            if v and v[0] in opts:
                facts.append(Fact(k, "enum", v[0], surface=v[0], options=list(opts), names=names,
                                  desc=[f"the {key}= setting"], label={"en": key}))
        for key, k, names, desc in (
                ("Documentation", "docs", [["documentation"], ["docs"], ["manual", "pages"]],
                 "documentation references, in order"),
                ("After", "after", [["after"], ["ordered", "after"], ["starts", "after"]],
                 "units it is ordered after"),
                ("Before", "before", [["before"], ["ordered", "before"]], "units it is ordered before"),
                ("Wants", "wants", [["wants"], ["weak", "dependencies"]], "units it wants"),
                ("Requires", "requires", [["requires"], ["hard", "dependencies"]], "units it requires"),
                ("WantedBy", "wanted_by", [["wanted", "by"], ["install", "targets"]],
                 "targets that want it when enabled")):
            items = [t for _v, (s, e) in _line_values(text, key) for t in tokens(text, s, e, r"\S+")]
            f = _list_fact(k, items, names, desc, label={"en": key})
            if f:
                facts.append(f)
        secs = list(re.finditer(r"^\[([A-Za-z][\w-]*)\][ \t]*$", text, re.M))
        items, region = [], []
        for i, m in enumerate(secs):
            end = secs[i + 1].start() if i + 1 < len(secs) else len(text)
            keys = []
            for km in re.finditer(r"^([A-Za-z][A-Za-z0-9]*)[ \t]*=", text[m.end():end], re.M):
                if km.group(1) not in [k for k, _ in keys]:
                    keys.append((km.group(1), (m.end() + km.start(1), m.end() + km.end(1))))
            it = {"name": Fact("name", "span", m.group(1), pos=(m.start(1), m.end(1)))}
            if keys:
                it["keys"] = Fact("keys", "list", [k for k, _ in keys], pos=[p for _, p in keys])
            items.append(it)
            region.append((m.start(), end))
        if items and len({it["name"].value for it in items}) == len(items):
            facts.append(Fact("sections", "objects", [1] * len(items), items=items, region=region, pos=True,
                              sub=[("name", "span", [["section"], ["name"]], {"en": "Section"}),
                                   ("keys", "list", [["keys"], ["settings"], ["directives"]],
                                    {"en": "Keys"})],
                              names=[["sections"], ["file", "sections"]],
                              desc=["each [section] with the keys it sets, in order"],
                              label={"en": "Sections"}))
        facts.append(Fact("installable", "bool", "[Install]" in body,
                          names=[["has", "install", "section"], ["can", "be", "enabled"]],
                          neg=([["static"], ["no", "install", "section"]],
                               ["true if the unit has no [Install] section"]),
                          desc=["does the unit have an [Install] section?"]))
        dd = one("DefaultDependencies")
        if dd and dd[0].lower() in ("yes", "no", "true", "false"):
            facts.append(Fact("default_deps", "bool", dd[0].lower() in ("yes", "true"),
                              names=[["default", "dependencies"]],
                              neg=([["no", "default", "dependencies"]],
                                   ["true if DefaultDependencies is switched off"]),
                              desc=["are default dependencies on?"]))
        return Entity(base, base, facts, raw=text)


class _PkgConfig(FileKind):
    NAME, SOURCE = "pkgconfig", "/usr/lib/*/pkgconfig/*.pc, /usr/share/pkgconfig/*.pc"

    def find(self, root=None):
        if root is None:
            import glob
            roots = sorted(glob.glob("/usr/lib/*/pkgconfig")) + ["/usr/lib/pkgconfig",
                                                                  "/usr/share/pkgconfig"]
        else:
            roots = [root] if isinstance(root, str) else root
        return walk_unique(roots, (".pc",), max_depth=0, max_bytes=16 << 10)

    def entity(self, path):
        text = text_of(path, 16 << 10, 3000)
        if text is None:
            return None
        one = lambda k, s=":": next(iter(_line_values(text, k, s)), None)  # noqa: E731
        name = one("Name")
        if not name:
            return None
        stem = os.path.basename(path)[:-3]
        facts = [Fact("module", "span", stem, names=[["module"], ["pkg", "config", "name"]],
                      desc=["the module name to give pkg-config"], label={"en": "Module"})]
        for key, k, kind, names, desc in (
                ("Name", "name", "span", [["name"], ["library", "name"]], "the Name: field"),
                ("Description", "description", "span", [["description"], ["summary"]],
                 "what the library is"),
                ("Version", "version", "span", [["version"], ["library", "version"]], "the version"),
                ("URL", "url", "uri", [["url"], ["homepage"], ["website"]], "the project's web page"),
                ("Libs", "libs", "span", [["libs"], ["linker", "flags"]], "the Libs: flags"),
                ("Cflags", "cflags", "span", [["cflags"], ["compiler", "flags"]], "the Cflags: flags")):
            v = one(key)
            if kind == "uri" and v and not v[0].startswith(("http://", "https://")):
                kind = "span"
            if v:
                facts.append(Fact(k, kind, v[0], pos=v[1], names=names, desc=[desc],
                                  label={"en": key}))
            elif key in ("URL", "Version"):  # asked anyway: gold null
                facts.append(Fact(k, kind, None, names=names, desc=[desc], label={"en": key}))
        pre = one("prefix", "=")
        if pre:
            facts.append(Fact("prefix", "span", pre[0], pos=pre[1], names=[["prefix"], ["install", "prefix"]],
                              desc=["the prefix variable"], label={"en": "prefix"}))
        req = []
        for key, k, names in (("Requires", "requires", [["requires"], ["dependencies"], ["depends", "on"]]),
                              ("Requires.private", "requires_private",
                               [["requires", "private"], ["private", "dependencies"]])):
            items = []
            for _v, (s, e) in _line_values(text, key, ":"):
                skip = False
                for tok, p in tokens(text, s, e):
                    if tok in (">=", "<=", "=", "<", ">", "!="):
                        skip = True
                    elif skip:
                        skip = False
                    elif re.match(r"^[A-Za-z][\w.+-]*$", tok):
                        items.append((tok, p))
            f = _list_fact(k, items, names, f"modules in {key}:, without versions", {"en": key})
            if f:
                facts.append(f)
                req += f.value if k == "requires" else []
        facts.append(Fact("has_requires", "bool", bool(req),
                          names=[["has", "requirements"], ["needs", "other", "modules"]],
                          neg=([["standalone"], ["no", "requirements"]],
                               ["true if Requires: lists no module"]),
                          desc=["does it require other pkg-config modules?"]))
        return Entity(os.path.basename(path), name[0], facts, raw=text)


SPDX = ("MIT", "ISC", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "BlueOak-1.0.0", "0BSD",
        "MPL-2.0", "Unlicense", "CC0-1.0", "Artistic-2.0", "GPL-3.0", "LGPL-3.0", "Python-2.0")
_NPM_KEEP = ("name", "version", "description", "keywords", "homepage", "bugs", "repository",
             "license", "author", "main", "type", "engines", "dependencies", "files")


def _simple(v):
    """A JSON value written without escapes: str / list of str / flat dict of str."""
    ok = lambda s: isinstance(s, str) and s and not re.search(r'["\\\x00-\x1f]', s)  # noqa: E731
    if isinstance(v, str):
        return ok(v)
    if isinstance(v, list):
        return bool(v) and all(ok(x) for x in v)
    if isinstance(v, dict):
        return bool(v) and all(ok(k) and ok(x) for k, x in v.items())
    return False


def _write_json(w, obj):
    """Write a flat manifest as 2-space JSON; {path tuple: (s, e)} of string leaves
    and {key: (s, e)} of each dict entry's line for dicts."""
    pos, lines = {}, {}
    w.text("{\n")
    keys = list(obj)
    for i, k in enumerate(keys):
        v = obj[k]
        w.text(f'  "{k}": ')
        if isinstance(v, str):
            w.text('"')
            pos[(k,)] = w.put(v)
            w.text('"')
        elif isinstance(v, list):
            w.text("[")
            for j, x in enumerate(v):
                w.text(('", "' if j else '"'))
                pos[(k, j)] = w.put(x)
            w.text('"]')
        else:
            w.text("{\n")
            for j, (a, x) in enumerate(v.items()):
                s = w._n
                w.text('    "')
                pos[(k, a, 0)] = w.put(a)
                w.text('": "')
                pos[(k, a)] = w.put(x)
                w.text('"' + ("," if j < len(v) - 1 else "") + "\n")
                lines[(k, a)] = (s, w._n)
            w.text("  }")
        w.text(("," if i < len(keys) - 1 else "") + "\n")
    w.text("}\n")
    return pos, lines


class _Npm(FileKind):
    NAME, SOURCE = "npm", "/usr/lib/node_modules/**/package.json"
    ROOTS = ("/usr/lib/node_modules", "/usr/share/nodejs")

    def find(self, root=None):
        out = []
        for r in ([root] if isinstance(root, str) else (root or self.ROOTS)):
            out += [p for p in walk(r, ("package.json",), max_depth=8, max_bytes=64 << 10)
                    if os.path.basename(p) == "package.json"]
        return sorted(out)

    def entity(self, path):
        try:
            d = json.loads(text_of(path, 64 << 10) or "null")
        except ValueError:
            return None
        if not isinstance(d, dict) or not _simple(d.get("name")) or not _simple(d.get("version")):
            return None
        obj = {}
        for k, v in d.items():
            if k in ("repository", "bugs") and isinstance(v, dict):
                v = {a: x for a, x in v.items() if a in ("type", "url", "email")}
            if k == "engines" and isinstance(v, dict):
                v = {a: x for a, x in v.items() if a == "node"}
            if k in _NPM_KEEP and _simple(v):
                obj[k] = v
        w = Writer()
        pos, lines = _write_json(w, obj)
        text = w.finish()[0]
        facts = []

        def add(key, kind, path, names, desc, label=None):
            if path in pos:
                facts.append(Fact(key, kind, text[slice(*pos[path])], pos=pos[path], names=names, desc=[desc],
                                  label=label or {"en": " ".join(names[0]).capitalize()}))
        add("name", "span", ("name",), [["name"], ["package", "name"], ["package"]], "the package name")
        add("version", "span", ("version",), [["version"], ["package", "version"]], "its version")
        add("description", "span", ("description",), [["description"], ["summary"]],
            "what the package does")
        add("main", "span", ("main",), [["main"], ["entry", "point"]], "the main module file")
        add("node", "span", ("engines", "node"), [["node", "version"], ["engines", "node"]],
            "the Node.js versions it supports")
        for k, nm in (("homepage", [["homepage"], ["website"]]),
                      ("repository", [["repository"], ["repo", "url"], ["source", "code"]])):
            p = (k,) if (k,) in pos else (k, "url")
            if p in pos:
                v = text[slice(*pos[p])]
                facts.append(Fact(k, "uri" if v.startswith(("http://", "https://")) else "span", v,
                                  pos=pos[p], names=nm, desc=[f"the {k} URL"], label={"en": k.capitalize()}))
        lic = obj.get("license")
        if lic in SPDX:
            facts.append(Fact("license", "enum", lic, surface=lic, options=list(SPDX),
                              names=[["license"], ["licence"], ["spdx", "license"]],
                              desc=["the package's licence (SPDX id)"], label={"en": "License"}))
        elif lic:
            add("license", "span", ("license",), [["license"], ["licence"]], "the licence")
        else:
            facts.append(Fact("license", "span", None, names=[["license"], ["licence"]],
                              desc=["the licence, if stated"]))
        au = obj.get("author")
        if isinstance(au, str):
            a0 = pos[("author",)][0]
            m = re.match(r"\s*([^<(]*[^<(\s])", au)
            if m:
                facts.append(Fact("author", "span", m.group(1), pos=(a0 + m.start(1), a0 + m.end(1)),
                                  names=[["author"], ["author", "name"], ["maintainer"]],
                                  desc=["who wrote it"], label={"en": "Author"}))
            m = _EMAIL.search(au)
            facts.append(Fact("author_email", "email", m.group(0) if m else None,
                              pos=(a0 + m.start(), a0 + m.end()) if m else None,
                              names=[["author", "email"], ["contact", "email"]],
                              desc=["the author's e-mail address"], label={"en": "E-mail"}))
        elif isinstance(au, dict):
            add("author", "span", ("author", "name"), [["author"], ["author", "name"]], "who wrote it")
            add("author_email", "email", ("author", "email"), [["author", "email"], ["email"]],
                "the author's e-mail address")
        if obj.get("type") in ("module", "commonjs"):
            facts.append(Fact("module_type", "enum", obj["type"], surface=obj["type"],
                              options=["module", "commonjs"], names=[["module", "type"], ["module", "system"]],
                              desc=['"module" for ES modules, "commonjs" otherwise'],
                              label={"en": "Type"}))
        if "keywords" in obj:
            kw = obj["keywords"]
            facts.append(Fact("keywords", "list", list(kw), pos=[pos[("keywords", j)] for j in range(len(kw))],
                              names=[["keywords"], ["tags"]], desc=["the keywords, in order"],
                              label={"en": "Keywords", "de": "Schlagwörter", "fr": "Mots-clés"}))
        deps = obj.get("dependencies") or {}
        if deps:
            items = [{"package": Fact("package", "span", a, pos=pos[("dependencies", a, 0)]),
                      "range": Fact("range", "span", x, pos=pos[("dependencies", a)])}
                     for a, x in deps.items()]
            facts.append(Fact("dependencies", "objects", [1] * len(items), items=items, pos=True,
                              region=[lines[("dependencies", a)] for a in deps],
                              sub=[("package", "span", [["package"], ["name"]], {"en": "Package"}),
                                   ("range", "span", [["version", "range"], ["version"], ["range"]],
                                    {"en": "Version"})],
                              names=[["dependencies"], ["requires"], ["deps"]],
                              desc=["the runtime dependencies with their version ranges"],
                              label={"en": "Dependencies", "de": "Abhängigkeiten", "fr": "Dépendances"}))
        facts.append(Fact("has_deps", "bool", bool(deps),
                          names=[["has", "dependencies"], ["needs", "other", "packages"]],
                          neg=([["dependency", "free"], ["no", "dependencies"]],
                               ["true if it lists no runtime dependencies"]),
                          desc=["does it list runtime dependencies?"]))
        rel = path.split("node_modules/")[-1].rsplit("/package.json", 1)[0]
        # doc "name@version" (versions of one package share a split: v2.split_of_v2)
        doc = obj["name"].lstrip("@").replace("/", "_").replace("@", "_")
        return Entity(f"{doc}@{obj['version']}", rel, facts, raw=text)


UNIT, PKGCONFIG, NPM = _Unit(), _PkgConfig(), _Npm()
