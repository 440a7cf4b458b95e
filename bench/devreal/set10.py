"""Set 10 of bench/devreal: nullable fields of documents of keys - facts a document
writes under its key or not at all (dpkg status paragraphs, pkg-config files, npm
package.json files), a development set of libdeg 0.27.0's nested-JSON rule (a member below
the top ones is read by its exact name or its "PARENT KEY" line): 34 of 38 fields with
0.26.0, 35 with 0.27.0. Set 11 (set11.py) is the check set (36 of 41 with both).

Gold from independent parsers, never from deg: python-debian's deb822 (Homepage;
Bugs; the address in Maintainer), the "URL:" line of a .pc file (pkg-config's
keyword, read by a regular expression), and json for package.json ("homepage";
"bugs" as a string or its "url"); null when the document has none.
Built by `python bench/devreal/build.py --set 10`; see build.py."""
import json
import re

from build import _read, _obj
from set8 import dpkg_paragraph

PKGCONFIG = "/usr/lib/x86_64-linux-gnu/pkgconfig/"
NPM = "/usr/lib/node_modules/npm/node_modules/"

URI_N = {"type": ["string", "null"], "format": "uri"}
EMAIL_N = {"type": ["string", "null"], "format": "email"}


def _n(base, desc):
    return dict(base, description=desc)


DPKG_SCHEMA = _obj({"homepage": _n(URI_N, "project homepage URL"),
                    "bug_tracker_url": _n(URI_N, "URL of the bug tracker"),
                    "maintainer_email": _n(EMAIL_N, "e-mail address of the maintainer")})
PC_SCHEMA = _obj({"homepage": _n(URI_N, "project homepage URL"),
                  "bug_tracker_url": _n(URI_N, "URL of the bug tracker")})
NPM_SCHEMA = _obj({"homepage": _n(URI_N, "project homepage URL"),
                   "bug_tracker_url": _n(URI_N, "URL of the bug tracker"),
                   "funding_url": _n(URI_N, "URL where the project takes donations")})


def dpkg_doc(package):
    from debian import deb822
    text = dpkg_paragraph(package)
    p = deb822.Deb822(text.split("\n"))
    m = re.search(r"<([^>]+)>", p.get("Maintainer", ""))
    gold = {"homepage": p.get("Homepage"), "bug_tracker_url": p.get("Bugs"),
            "maintainer_email": m.group(1) if m else None}
    return ("dpkg-" + package, lambda: dpkg_paragraph(package), DPKG_SCHEMA, gold)


def pc_doc(module):
    path = PKGCONFIG + module + ".pc"
    m = re.search(r"^URL:[ \t]*(\S+)[ \t]*$", _read(path), re.M)
    return ("pc-" + module, lambda: _read(path), PC_SCHEMA,
            {"homepage": m.group(1) if m else None, "bug_tracker_url": None})


def npm_doc(package):
    path = NPM + package + "/package.json"
    d = json.loads(_read(path))
    bugs = d.get("bugs")
    fund = d.get("funding")
    fund = fund[0] if isinstance(fund, list) and fund else fund  # the first of several
    return ("npm-" + package, lambda: _read(path), NPM_SCHEMA,
            {"homepage": d.get("homepage"),
             "bug_tracker_url": bugs if isinstance(bugs, str) else (bugs or {}).get("url"),
             "funding_url": fund if isinstance(fund, str) else (fund or {}).get("url")})


DOCS = [dpkg_doc(p) for p in ("libxdmcp6", "cpp-12", "libxft2", "curl", "libksba8", "libtinfo6")]
DOCS += [pc_doc(m) for m in ("fontconfig", "gnutls", "libffi", "hwloc")]
DOCS += [npm_doc(p) for p in ("abbrev", "aproba", "chownr", "balanced-match")]
