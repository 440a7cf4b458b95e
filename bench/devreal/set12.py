"""Set 12 of bench/devreal: choices and keys a document writes more than once or not as
an option - licences outside a choice's options ("BlueOak-1.0.0" for an enum with
"other"), twin options ("GPL-2.0" next to "GPL-2.0+"), and fields whose description
quotes the line opening their paragraph ("version of gzip (Package: gzip)") in a window
of several dpkg status paragraphs; the development set of libdeg 0.28.0's locator and
"other" rules.

Gold from independent parsers, never from deg: json for package.json ("name"; "license"
when it is one of the options, else "other"), python-debian's deb822 for the dpkg
paragraphs, the first line's SPDX identifier for C headers (SPDX 3's "-only" / "-or-later" read as
the options' "" / "+"; an expression of several licences is "other"), the "License:" and
"Homepage:" lines of GnuPG's AUTHORS by a regular expression.
Built by `python bench/devreal/build.py --set 12`; see build.py."""
import json
import re

from build import _read, _obj
from set8 import STATUS

NPM = "/usr/lib/node_modules/npm/node_modules/"
S = {"type": "string"}
NPM_LICENSES = ["MIT", "ISC", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "GPL-3.0-only",
                "GPL-3.0-or-later", "other"]
GNU_LICENSES = ["GPL-2.0-only", "GPL-2.0-or-later", "GPL-3.0-only", "GPL-3.0-or-later",
                "LGPL-2.1-or-later", "other"]
SPDX_OLD = ["GPL-2.0", "GPL-2.0+", "LGPL-2.1", "LGPL-2.1+", "MIT", "other"]
PRIORITIES = ["required", "important", "standard", "optional", "extra"]


def npm_doc(package):
    path = NPM + package + "/package.json"
    d = json.loads(_read(path))
    lic = d["license"] if d["license"] in NPM_LICENSES else "other"
    schema = _obj({"name": dict(S, description="package name"),
                   "license": {"enum": NPM_LICENSES, "description": "licence of the package"}})
    return ("npm-" + package, lambda: _read(path), schema, {"name": d["name"], "license": lic})


def spdx_doc(path, lines=30):
    text = _read(path, 0, lines)
    ident = re.search(r"^/\* SPDX-License-Identifier: (.+?) \*/", text, re.M).group(1)
    ident = ident.replace("-only", "").replace("-or-later", "+")  # SPDX 3's ids as the options
    schema = _obj({"license": {"enum": SPDX_OLD, "description": "SPDX licence identifier"}})
    lic = ident if ident in SPDX_OLD else "other"
    return ("spdx-" + path.rsplit("/", 1)[1], lambda: text, schema, {"license": lic})


def gnupg_authors():
    path = "/usr/share/doc/dirmngr/AUTHORS"
    text = _read(path, 0, 40)
    lic = re.search(r"^License: (\S+)$", text, re.M).group(1)
    home = re.search(r"^Homepage: (\S+)$", text, re.M).group(1)
    schema = _obj({"license": {"enum": GNU_LICENSES, "description": "licence of the program"},
                   "homepage": {"type": "string", "format": "uri",
                                "description": "project homepage URL"}})
    return ("authors-gnupg", lambda: text, schema,
            {"license": lic if lic in GNU_LICENSES else "other", "homepage": home})


def dpkg_window(first, n=3):
    """n consecutive paragraphs of the dpkg status file from package `first`'s; the
    fields of the 2nd and 3rd, each description quoting its paragraph's first line."""
    from debian import deb822
    text = _read(STATUS)
    start = text.index("Package: " + first + "\n")
    end = start
    for _ in range(n):
        end = text.index("\n\n", end) + 2
    window = text[start:end - 1]
    paras = [deb822.Deb822(p.split("\n")) for p in window.split("\n\n")]
    second, third = paras[1]["Package"], paras[2]["Package"]
    schema = _obj({
        "version": dict(S, description=f"version of {second} (Package: {second})"),
        "priority": {"enum": PRIORITIES, "description": f"priority of {third} (Package: {third})"},
        "installed_size": {"type": "integer",
                           "description": f"installed size of {third} in KiB (Package: {third})"}})
    gold = {"version": paras[1]["Version"], "priority": paras[2]["Priority"],
            "installed_size": int(paras[2]["Installed-Size"])}
    return ("dpkg-window-" + first, lambda: window, schema, gold)


DOCS = [npm_doc(p) for p in ("jackspeak", "spdx-exceptions", "spdx-license-ids", "cidr-regex",
                             "diff", "sigstore")]
DOCS += [spdx_doc(p) for p in ("/usr/include/iproute2/bpf_elf.h", "/usr/include/linux/batman_adv.h",
                               "/usr/include/sound/sof/tokens.h",
                               "/usr/include/libnl3/netlink/handlers.h")]
DOCS += [gnupg_authors()]
DOCS += [dpkg_window(p) for p in ("gpgconf", "groff-base", "libglvnd-core-dev", "hostname")]
