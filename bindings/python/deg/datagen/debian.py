"""Documents from Debian metadata written by Debian maintainers: package
records (apt's `*_Packages` lists) and package changelogs
(`/usr/share/doc/*/changelog.Debian.gz`), re-rendered into varied layouts.

Readers return plain dicts; `package_doc` / `changelog_doc` render one into
(Doc, schema, value) for a given layout.
"""
import datetime as dt
import glob
import re
import subprocess

from ..parsers import trim_span
from .doc import Doc
from .guard import check_path, is_reserved, read_text

PACKAGES_GLOB = "/var/lib/apt/lists/*_Packages*"
CHANGELOG_GLOB = "/usr/share/doc/*/changelog.Debian.gz"

SECTIONS = ["admin", "devel", "doc", "libs", "libdevel", "net", "python", "perl", "utils",
            "text", "web", "x11", "games", "graphics", "sound", "science", "math", "misc",
            "database", "editors", "kernel", "mail", "java", "javascript", "golang",
            "rust", "fonts", "gnome", "kde", "interpreters", "shells", "video", "otherosfs",
            "electronics", "embedded", "haskell", "ocaml", "lisp", "php", "ruby", "tex",
            "translations", "localization", "hamradio", "httpd", "introspection", "metapackages",
            "news", "vcs", "zope", "comm", "cli-mono", "debug", "education", "gnu-r", "gnustep",
            "lua", "oldlibs", "raku", "tasks", "xfce", "fortran"]
PRIORITIES = ["required", "important", "standard", "optional", "extra"]
RELATIONS = ["<<", "<=", "=", ">=", ">>"]
URGENCIES = ["low", "medium", "high", "emergency", "critical"]


def _read_text(path):
    """A Packages list, whatever apt compressed it with (through the guard)."""
    check_path(path)
    if path.endswith(".lz4"):
        try:
            return subprocess.run(["lz4cat", path], capture_output=True, check=True).stdout.decode(
                "utf-8", "replace")
        except (OSError, subprocess.CalledProcessError):
            return subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path],
                                  capture_output=True, check=True).stdout.decode("utf-8", "replace")
    return read_text(path, limit=1 << 30)


def read_packages(paths=None, limit=None):
    """Package stanzas ({field: value}, continuation lines kept) of the
    Packages lists, sorted by (Package, Version) for determinism."""
    paths = sorted(paths if paths is not None else
                   [p for p in glob.glob(PACKAGES_GLOB) if not p.endswith(".diff")])
    out = []
    for p in paths:
        for block in _read_text(p).split("\n\n"):
            st, key = {}, None
            for line in block.split("\n"):
                if line.startswith((" ", "\t")) and key:
                    st[key] += "\n" + line
                elif ":" in line:
                    key, _, v = line.partition(":")
                    st[key] = v.strip()
            if "Package" in st and "Version" in st:
                out.append(st)
    out.sort(key=lambda s: (s["Package"], s["Version"]))
    seen, uniq = set(), []
    for s in out:  # the same package in several lists: first version only
        if s["Package"] not in seen:
            seen.add(s["Package"])
            uniq.append(s)
    return uniq[:limit] if limit else uniq


_HEAD = re.compile(r"^(\S+) \(([^)]+)\) ([^;]+); (.*)$")
_TRAILER = re.compile(r"^ -- (.+?) <([^>]+)>  (.+)$")


def read_changelog(path, max_entries=4):
    """Entries [{package, version, distribution, urgency, changes: [str],
    maintainer, email, date (str as written)}] of a changelog.Debian(.gz)."""
    lines = read_text(path, limit=16 << 20).split("\n")
    entries, cur = [], None
    for line in lines:
        m = _HEAD.match(line)
        if m:
            kv = dict(x.strip().split("=", 1) for x in m.group(4).split(",") if "=" in x)
            cur = {"package": m.group(1), "version": m.group(2),
                   "distribution": m.group(3).split()[0], "urgency": kv.get("urgency", "").lower(),
                   "changes": []}
            continue
        if cur is None:
            continue
        t = _TRAILER.match(line)
        if t:
            cur.update(maintainer=t.group(1), email=t.group(2), date=t.group(3).strip())
            entries.append(cur)
            cur = None
            if len(entries) >= max_entries:
                break
            continue
        s = line.strip()
        if s.startswith(("* ", "- ", "+ ")):
            cur["changes"].append(s[2:].strip())
        elif s and cur["changes"] and not s.startswith("["):
            cur["changes"][-1] += " " + s
    return entries


def changelog_paths(pattern=CHANGELOG_GLOB):
    return sorted(p for p in glob.glob(pattern) if not is_reserved(p))


def _rfc2822(s):
    try:
        return dt.datetime.strptime(s, "%a, %d %b %Y %H:%M:%S %z")
    except ValueError:
        return None


def rfc3339(when):
    """RFC 3339 text of an aware datetime, as deg's parser writes it."""
    s = when.strftime("%Y-%m-%dT%H:%M:%S")
    off = when.utcoffset()
    if off is None:  # no zone written: the parser assumes options.default_offset "Z"
        return s + "Z"
    m = int(off.total_seconds()) // 60
    sign = "+" if m >= 0 else "-"
    m = abs(m)
    return f"{s}{sign}{m // 60:02d}:{m % 60:02d}"


def _dep_list(s, rng, k=5):
    """[(name, relation|None, version|None)] of the first alternative of each item."""
    out = []
    for item in s.split(","):
        first = item.split("|")[0].strip()
        m = re.match(r"^([a-z0-9][a-z0-9+.\-]*)(?::\w+)?\s*(?:\((<<|<=|=|>=|>>)\s*([^)\s]+)\))?", first)
        if m and m.group(1) not in [o[0] for o in out]:
            out.append((m.group(1), m.group(2), m.group(3)))
    return out[:k]


# ---------------------------------------------------------------------------
# package records

PKG_LAYOUTS = ["keyvalue", "prose", "table", "email", "catalog"]


def package_doc(st, layout, rng):
    """(Doc, schema, value) for one package stanza."""
    name, version = st["Package"], st["Version"]
    section = st.get("Section", "").split("/")[-1]
    priority = st.get("Priority")
    size = st.get("Installed-Size")
    maint = re.match(r"^(.*?)\s*<([^>]+)>", st.get("Maintainer", ""))
    homepage = st.get("Homepage")
    synopsis = st.get("Description", "").split("\n")[0].strip()
    arch_all = st.get("Architecture") == "all"
    essential = st.get("Essential", "no") == "yes"
    deps = _dep_list(st.get("Depends", ""), rng)
    props = {
        "package": {"type": "string", "description": "the package name"},
        "version": {"type": "string", "description": "the package version"},
    }
    value = {"package": name, "version": version}
    required = ["package", "version"]
    if section in SECTIONS:
        props["section"] = {"enum": SECTIONS, "description": "archive section"}
        value["section"] = section
    if priority in PRIORITIES:
        props["priority"] = {"enum": PRIORITIES}
        value["priority"] = priority
    if size and size.isdigit():
        props["installed_size_kb"] = {"type": "integer", "minimum": 0,
                                      "description": "installed size in kB"}
        value["installed_size_kb"] = int(size)
    if maint:
        props["maintainer_email"] = {"type": "string", "format": "email"}
        value["maintainer_email"] = maint.group(2)
    props["homepage"] = {"type": ["string", "null"], "format": "uri",
                         "description": "upstream homepage, if given"}
    value["homepage"] = homepage if homepage and homepage.startswith("http") else None
    props["architecture_independent"] = {"type": "boolean",
                                         "description": "is the package Architecture: all?"}
    value["architecture_independent"] = arch_all
    props["essential"] = {"type": "boolean"}
    value["essential"] = essential
    props["depends"] = {"type": "array", "description": "runtime dependencies", "items": {
        "type": "object", "properties": {
            "name": {"type": "string"},
            "relation": {"enum": RELATIONS + [None]},
            "version": {"type": ["string", "null"]}},
        "required": ["name"]}}
    value["depends"] = [{"name": n, "relation": r, "version": v} for n, r, v in deps]
    props["summary"] = {"type": "string", "x-generate": True, "maxLength": 200,
                        "description": "a one-line summary of what the package is for"}
    if synopsis and len(synopsis) <= 200:
        value["summary"] = synopsis
    schema = {"type": "object", "properties": props, "required": required}

    d = Doc()
    who = maint.group(1) if maint else "the Debian maintainers"
    if layout == "keyvalue":
        d.text("Package: ").val("/package", name).text("\nVersion: ").val("/version", version)
        if "section" in value:
            d.text("\nSection: " + section)
        if "priority" in value:
            d.text("\nPriority: " + priority)
        if "installed_size_kb" in value:
            d.text("\nInstalled-Size: ").val("/installed_size_kb", size)
        if maint:
            d.text(f"\nMaintainer: {who} <").val("/maintainer_email", maint.group(2)).text(">")
        d.text("\nArchitecture: " + st.get("Architecture", "any"))
        if essential:
            d.text("\nEssential: yes")
        if deps:
            d.text("\nDepends: ")
            for i, (n, r, v) in enumerate(deps):
                with d.item(f"/depends/{i}"):
                    d.text(", " if i else "").val(f"/depends/{i}/name", n)
                    if r:
                        d.text(f" ({r} ").val(f"/depends/{i}/version", v).text(")")
        if value["homepage"]:
            d.text("\nHomepage: ").val("/homepage", homepage)
        d.text("\nDescription: " + synopsis)
    elif layout == "prose":
        d.text("The ").val("/package", name).text(" package, version ").val("/version", version)
        if "section" in value:
            d.text(f", lives in the {section} section")
        if "priority" in value:
            d.text(f" with {priority} priority")
        d.text(". ")
        if maint:
            d.text(f"It is looked after by {who} (").val("/maintainer_email", maint.group(2)).text("). ")
        if "installed_size_kb" in value:
            d.text("Once installed it takes about ").val("/installed_size_kb", size).text(" kB of disk. ")
        d.text("It is built once for every architecture. " if arch_all
               else "It is built separately for each architecture. ")
        if essential:
            d.text("The package is marked essential, so it is always installed. ")
        if deps:
            d.text("It needs ")
            for i, (n, r, v) in enumerate(deps):
                with d.item(f"/depends/{i}"):
                    d.text("" if i == 0 else (" and " if i == len(deps) - 1 else ", "))
                    d.val(f"/depends/{i}/name", n)
                    if r:
                        word = {"<<": "older than", "<=": "at most", "=": "exactly",
                                ">=": "at least", ">>": "newer than"}[r]
                        d.text(f" (version {word} ").val(f"/depends/{i}/version", v).text(")")
            d.text(". ")
        else:
            d.text("It has no dependencies. ")
        if value["homepage"]:
            d.text("More about it at ").val("/homepage", homepage).text(" .")
        d.text(f"\nIn short: {synopsis}")
    elif layout in ("table", "catalog"):
        sep = " | " if layout == "table" else "\t"
        d.text(f"{'field':<16}{sep}value\n")
        row = lambda k: d.text(f"{k:<16}{sep}")  # noqa: E731
        row("name").val("/package", name).text("\n")
        row("version").val("/version", version).text("\n")
        if "section" in value:
            row("section").text(section + "\n")
        if "priority" in value:
            row("priority").text(priority + "\n")
        if "installed_size_kb" in value:
            row("size (kB)").val("/installed_size_kb", size).text("\n")
        if maint:
            row("maintainer").val("/maintainer_email", maint.group(2)).text("\n")
        row("arch").text(("all" if arch_all else st.get("Architecture", "any")) + "\n")
        row("essential").text(("yes" if essential else "no") + "\n")
        if value["homepage"]:
            row("homepage").val("/homepage", homepage).text("\n")
        for i, (n, r, v) in enumerate(deps):
            with d.item(f"/depends/{i}"):
                row(f"depends[{i + 1}]").val(f"/depends/{i}/name", n)
                if r:
                    d.text(f" {r} ").val(f"/depends/{i}/version", v)
                d.text("\n")
        row("description").text(synopsis)
    else:  # email
        d.text(f"From: archive bot <noreply@ftp-master.debian.org>\nSubject: Accepted {name}\n\n")
        d.text("Hello,\n\nthe upload of ").val("/package", name).text(" ")
        d.val("/version", version).text(" was accepted")
        if "section" in value:
            d.text(f" into {section}")
        d.text(".\n")
        if maint:
            d.text("Maintainer contact: ").val("/maintainer_email", maint.group(2)).text("\n")
        if "priority" in value:
            d.text(f"Priority is {priority}.\n")
        if "installed_size_kb" in value:
            d.text("Size on disk: ").val("/installed_size_kb", size).text(" kB\n")
        if essential:
            d.text("Note: essential package.\n")
        if arch_all:
            d.text("Architecture: all\n")
        if deps:
            d.text("Dependencies:\n")
            for i, (n, r, v) in enumerate(deps):
                with d.item(f"/depends/{i}"):
                    d.text("  - ").val(f"/depends/{i}/name", n)
                    if r:
                        d.text(f" {r} ").val(f"/depends/{i}/version", v)
                    d.text("\n")
        if value["homepage"]:
            d.text("Upstream: ").val("/homepage", homepage).text("\n")
        d.text(f"\n{synopsis}\n\nThank you for your contribution to Debian.")
    return d, schema, value


# ---------------------------------------------------------------------------
# changelogs

CL_LAYOUTS = ["raw", "release_notes", "table", "email"]
_DATE_STYLES = ["%Y-%m-%d %H:%M:%S %z", "%d %b %Y %H:%M:%S %z", "%B %d, %Y %H:%M:%S %z",
                "%a, %d %b %Y %H:%M:%S %z"]


def changelog_doc(entries, layout, rng):
    """(Doc, schema, value) for the first entries of one changelog: nested
    arrays (entries -> changes), choice (urgency), date-time, e-mail, number
    (bug numbers), nullable number (no bug closed)."""
    ents = []
    for e in entries:
        when = _rfc2822(e.get("date", ""))
        if when is None or e["urgency"] not in URGENCIES or not e["changes"]:
            continue
        ents.append((e, when))
    if not ents:
        return None
    pkg = ents[0][0]["package"]
    props = {
        "package": {"type": "string"},
        "entries": {"type": "array", "description": "changelog entries, newest first", "items": {
            "type": "object", "properties": {
                "version": {"type": "string"},
                "urgency": {"enum": URGENCIES},
                "date": {"type": "string", "format": "date-time"},
                "author_email": {"type": "string", "format": "email"},
                "changes": {"type": "array", "items": {"type": "object", "properties": {
                    "text": {"type": "string"},
                    "closes_bug": {"type": ["integer", "null"],
                                   "description": "Debian bug number this change closes"}},
                    "required": ["text"]}}},
            "required": ["version", "urgency", "date"]}},
        "security_fix": {"type": "boolean", "description": "does the newest entry fix a security issue?"},
    }
    value = {"package": pkg, "entries": []}
    d = Doc()
    style = rng.choice(_DATE_STYLES)
    if layout == "release_notes":
        d.text("Release notes for ").val("/package", pkg).text("\n" + "=" * 20 + "\n\n")
    elif layout == "email":
        d.text("Subject: changes in ").val("/package", pkg).text("\n\nHi all, here is what changed recently:\n\n")
    elif layout == "table":
        d.text("package: ").val("/package", pkg).text("\nversion | urgency | date | by\n")
    for i, (e, when) in enumerate(ents):
        base = f"/entries/{i}"
        changes = []
        for c in e["changes"][:5]:
            c = c.strip().rstrip(".").strip()
            if not c or len(c) > 300:
                continue
            m = re.search(r"Closes:\s*#(\d+)", c)
            text = re.sub(r"\s*\(?Closes:\s*#\d+(,\s*#\d+)*\)?", "", c).strip(" .;,")
            ts, te = trim_span(text, 0, len(text))  # the runtime's span trimming
            text = text[ts:te]
            if not text:
                continue
            changes.append((text, int(m.group(1)) if m else None, m.group(1) if m else None))
        if layout == "raw":
            date_s = e["date"]
        else:
            date_s = when.strftime(style)
        item = {"version": e["version"], "urgency": e["urgency"], "date": rfc3339(when),
                "author_email": e["email"], "changes": []}
        with d.item(base):
            if layout == "raw":
                d.val("/package" if i == 0 else None, e["package"]).text(" (")
                d.val(f"{base}/version", e["version"])
                d.text(f") {e['distribution']}; urgency={e['urgency']}\n\n")
            elif layout == "release_notes":
                d.text("Version ").val(f"{base}/version", e["version"])
                d.text(f" ({e['urgency']} urgency upload to {e['distribution']}), released ")
                d.val(f"{base}/date", date_s).text(" by ").val(f"{base}/author_email", e["email"]).text("\n")
            elif layout == "email":
                d.text("* ").val(f"{base}/version", e["version"]).text(" went out on ")
                d.val(f"{base}/date", date_s).text(f"; urgency was {e['urgency']}. Uploader: ")
                d.val(f"{base}/author_email", e["email"]).text("\n")
            else:
                d.val(f"{base}/version", e["version"]).text(f" | {e['urgency']} | ")
                d.val(f"{base}/date", date_s).text(" | ").val(f"{base}/author_email", e["email"]).text("\n")
            for j, (text, bug, bug_s) in enumerate(changes):
                cp = f"{base}/changes/{j}"
                with d.item(cp):
                    d.text("  * " if layout != "table" else "    - ").val(f"{cp}/text", text)
                    if bug is not None:
                        d.text(" (closes bug #" if layout != "raw" else " (Closes: #")
                        d.val(f"{cp}/closes_bug", bug_s).text(")")
                    d.text("\n")
                item["changes"].append({"text": text, "closes_bug": bug})
            if layout == "raw":
                d.text(f"\n -- {e['maintainer']} <").val(f"{base}/author_email", e["email"])
                d.text(">  ").val(f"{base}/date", date_s).text("\n\n")
            else:
                d.text("\n")
        value["entries"].append(item)
    value["security_fix"] = any("secur" in c["text"].lower() or "CVE-" in c["text"]
                                for c in value["entries"][0]["changes"])
    return d, {"type": "object", "properties": props, "required": ["package", "entries"]}, value
