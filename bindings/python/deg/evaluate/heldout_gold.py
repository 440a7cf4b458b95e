"""Schemas and gold values of the held-out real-document evaluation (issue 12).

Two document kinds are reserved for evaluation (never datagen, training or
tuning): Debian copyright files in DEP-5 format and Python package metadata
(METADATA / PKG-INFO, the core-metadata e-mail header format). Each kind gets
one short schema, as a user would write it, and a gold value parsed from the
document by independent code (python-debian's `debian.copyright` for DEP-5;
`email.parser` + `packaging.requirements` for metadata), never by deg.

Normalisation rules (the gold is what the text says; the scorer compares
values exactly, see deg.evaluate.score_record / field rows):
  DEP-5
    upstream_name     Upstream-Name header, stripped, case as written; null if absent.
    source_url        the first http(s):// or ftp:// URL in the Source header (trailing
                      .,;:)>] removed); null if there is none.
    contact_email     the first e-mail address in Upstream-Contact; null if none.
    earliest_year     min of the years 1900-2099 written in the Copyright fields of
                      every paragraph (header and all Files paragraphs); null if none.
    license           the License synopsis (first line) of the `Files: *` paragraph,
                      matched case-insensitively against DEP5_LICENSES (the schema's
                      enum, spelled as there); "other" when it is not one of them
                      (e.g. "GPL-2+ or Artistic").
    several_files_paragraphs  more than one Files paragraph.
  METADATA / PKG-INFO
    name, version     the Name / Version headers as written.
    author_email      the first e-mail address in Author-email; null if absent (the
                      Maintainer-email is not used).
    homepage          Home-page, else the first Project-URL labelled "Homepage" or
                      "Home" (case-insensitive), else null; "UNKNOWN" counts as absent.
    dependencies      the distribution names of all Requires-Dist lines (extras
                      included), as written, in order, each once.
    typed             the classifier "Typing :: Typed" is present.
    development_status  the "Development Status :: N - X" classifier's "N - X"; null if none.
A document whose gold value the schema rejects (e.g. a Home-page that is not a
URI by deg's format check) is reported by gold_* raising GoldError, and left out
of the evaluation set by the builder.
"""
import email.parser
import re

__all__ = ["DEP5_SCHEMA", "METADATA_SCHEMA", "DEP5_LICENSES", "DEV_STATUSES", "GoldError",
           "is_dep5", "gold_dep5", "gold_metadata"]

DEP5_LICENSES = ["GPL-2", "GPL-2+", "GPL-3", "GPL-3+", "LGPL-2", "LGPL-2+", "LGPL-2.1",
                 "LGPL-2.1+", "LGPL-3", "LGPL-3+", "BSD-2-clause", "BSD-3-clause", "Expat", "MIT",
                 "Apache-2.0", "MPL-2.0", "ISC", "Zlib", "Artistic", "public-domain", "other"]

DEV_STATUSES = ["1 - Planning", "2 - Pre-Alpha", "3 - Alpha", "4 - Beta", "5 - Production/Stable",
                "6 - Mature", "7 - Inactive"]

DEP5_SCHEMA = {
    "type": "object",
    "properties": {
        "upstream_name": {"type": ["string", "null"], "description": "name of the upstream project"},
        "source_url": {"type": ["string", "null"], "format": "uri",
                       "description": "URL where the upstream source comes from"},
        "contact_email": {"type": ["string", "null"], "format": "email",
                          "description": "e-mail address of the upstream contact"},
        "earliest_year": {"type": ["integer", "null"],
                          "description": "earliest copyright year mentioned"},
        "license": {"enum": DEP5_LICENSES, "description": "license of the main files (Files: *)"},
        "several_files_paragraphs": {"type": "boolean",
                                     "description": "does it have more than one Files paragraph?"},
    },
    "required": ["upstream_name", "source_url", "contact_email", "earliest_year", "license",
                 "several_files_paragraphs"],
}

METADATA_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "package name"},
        "version": {"type": "string", "description": "package version"},
        "author_email": {"type": ["string", "null"], "format": "email",
                         "description": "e-mail address of the author"},
        "homepage": {"type": ["string", "null"], "format": "uri",
                     "description": "project homepage URL"},
        "dependencies": {"type": "array", "items": {"type": "string"},
                         "description": "names of the required packages (Requires-Dist)"},
        "typed": {"type": "boolean", "description": "is the package typed (Typing :: Typed)?"},
        "development_status": {"enum": DEV_STATUSES + [None],
                               "description": "development status classifier"},
    },
    "required": ["name", "version", "author_email", "homepage", "dependencies", "typed",
                 "development_status"],
}

_DEP5_FORMAT = re.compile(
    r"^Format:[ \t]*https?://www\.debian\.org/doc/packaging-manuals/copyright-format/1\.0/?[ \t]*$",
    re.M)
_URL = re.compile(r"(?:https?|ftp)://[^\s<>\"']+")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_YEAR = re.compile(r"(?<![0-9])(19[0-9]{2}|20[0-9]{2})(?![0-9])")


class GoldError(ValueError):
    """The document cannot be given a gold value under the rules above."""


def is_dep5(text):
    """True if the first line is the DEP-5 1.0 Format header."""
    first = text.split("\n", 1)[0]
    return bool(_DEP5_FORMAT.match(first))


def _first(regex, text):
    m = regex.search(text or "")
    return m.group(0) if m else None


def _url(text):
    u = _first(_URL, text)
    return u.rstrip(".,;:)>]") if u else None


def gold_dep5(text):
    """Gold value of DEP5_SCHEMA for a DEP-5 copyright file (rules: module doc)."""
    from debian import copyright as dc
    if not is_dep5(text):
        raise GoldError("not a DEP-5 file (no copyright-format/1.0 Format header on line 1)")
    try:
        c = dc.Copyright(text.splitlines(True), strict=False)
    except (dc.Error, ValueError) as e:
        raise GoldError(f"python-debian cannot parse it: {e}") from None
    h = c.header
    files = list(c.all_files_paragraphs())
    star = [p for p in files if tuple(p.files) == ("*",)]
    if not star:
        raise GoldError("no 'Files: *' paragraph")
    lic = star[0].license
    synopsis = (lic.synopsis if lic is not None else "").strip()
    by_fold = {x.casefold(): x for x in DEP5_LICENSES}
    years = []
    for para in [h] + files:
        years += [int(y) for y in _YEAR.findall(para.copyright or "")]
    name = h.upstream_name.strip() if h.upstream_name else None
    return {"upstream_name": name or None,
            "source_url": _url(h.source),
            "contact_email": _first(_EMAIL, " ".join(h.upstream_contact or [])),
            "earliest_year": min(years) if years else None,
            "license": by_fold.get(synopsis.casefold(), "other"),
            "several_files_paragraphs": len(files) > 1}


def gold_metadata(text):
    """Gold value of METADATA_SCHEMA for a METADATA / PKG-INFO text (rules: module doc)."""
    from packaging.requirements import InvalidRequirement, Requirement
    msg = email.parser.Parser().parsestr(text, headersonly=True)
    name, version = (msg.get("Name") or "").strip(), (msg.get("Version") or "").strip()
    if not name or not version:
        raise GoldError("no Name or Version header")
    home = (msg.get("Home-page") or "").strip()
    if not home or home.upper() == "UNKNOWN":
        home = None
        for pu in msg.get_all("Project-URL") or []:
            label, _, url = pu.partition(",")
            if label.strip().casefold() in ("homepage", "home"):
                home = url.strip()
                break
    deps = []
    for line in msg.get_all("Requires-Dist") or []:
        try:
            n = Requirement(line).name
        except InvalidRequirement as e:
            raise GoldError(f"Requires-Dist {line!r}: {e}") from None
        if n not in deps:
            deps.append(n)
    classifiers = [c.strip() for c in msg.get_all("Classifier") or []]
    status = None
    for c in classifiers:
        if c.startswith("Development Status ::"):
            status = c.split("::", 1)[1].strip()
            break
    if status is not None and status not in DEV_STATUSES:
        raise GoldError(f"unknown development status {status!r}")
    return {"name": name, "version": version,
            "author_email": _first(_EMAIL, msg.get("Author-email")),
            "homepage": home or None,
            "dependencies": deps,
            "typed": "Typing :: Typed" in classifiers,
            "development_status": status}
