"""Set 7 of bench/devreal: a check set of npm package.json files (nested "author",
"repository" and "bugs" objects, "Name <email>" author strings), written after the rules of
libdeg 0.26.0 that read them (a member under an object a member opens is also "PARENT KEY";
a contact is the author or maintainer) and measured once before and once after them. The
gold is read from each file's parsed JSON (an author string's address by its "<...>").
Built by `python bench/devreal/build.py --set 7`; see build.py."""
import json
import re

from build import _read, _obj, S

N = "/usr/lib/node_modules/npm/node_modules/"
PACKAGES = ["balanced-match", "imurmurhash", "aproba", "err-code", "color-name", "is-lambda",
            "ip-address", "jsonparse"]


def _gold(path):
    d = json.loads(_read(path))
    a = d["author"]
    email = a["email"] if isinstance(a, dict) else re.search(r"<([^>]+)>", a).group(1)
    out = {"name": d["name"], "license": d["license"], "author_email": email,
           "contact_email": email, "repository_url": d["repository"]["url"]}
    b = d.get("bugs")
    if isinstance(b, dict) and "url" in b:
        out["bugs_url"] = b["url"]
    return out


def _doc(p):
    path = N + p + "/package.json"
    gold = _gold(path)
    return (p + "/package.json", lambda: _read(path), _obj({k: S for k in gold}), gold)


DOCS = [_doc(p) for p in PACKAGES]
