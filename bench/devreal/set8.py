"""Set 8 of bench/devreal: lists of names - the package names of dependency lists
(Debian package relations, pkg-config Requires, pip requirements files), written
while writing the rules of libdeg 0.27.0 that read them (an array asking for names reads
the name each item opens with, each name once; a run of requirement lines is a list; an
unwritten dependency array is empty): 0 of 11 fields with 0.26.0, 11 with 0.27.0. Set 9 (set9.py) is the check set.

The gold comes from independent parsers, never from deg: python-debian's
deb822 relations (the first alternative of each group, in order, each once),
`pkg-config --print-requires[-private]` (the first word of each line), and
packaging.requirements on each requirement line of a requirements file ('#'
comments, "-r"/"-e" options and lines that do not parse, such as ".", left out).
Built by `python bench/devreal/build.py --set 8`; see build.py."""
import subprocess

from build import _read, _obj, S

STATUS = "/var/lib/dpkg/status"
GSUTIL = "/usr/lib/google-cloud-sdk/platform/gsutil/"
PKGCONFIG = "/usr/lib/x86_64-linux-gnu/pkgconfig/"


def names(desc):
    return {"type": "array", "items": S, "description": desc}


def _once(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def dpkg_paragraph(package):
    """Package's paragraph of the dpkg status file, as written."""
    text = _read(STATUS)
    start = text.index("Package: " + package + "\n")
    end = text.find("\n\n", start)
    return text[start:end + 1]


def relation_names(text, field):
    from debian import deb822
    para = deb822.Deb822(text.split("\n"))
    if not para.get(field):
        return []
    rels = deb822.PkgRelation.parse_relations(para.get(field, ""))
    return _once(group[0]["name"] for group in rels if group)


def requirement_names(text):
    from packaging.requirements import InvalidRequirement, Requirement
    out = []
    for line in text.split("\n"):
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            out.append(Requirement(line).name)
        except InvalidRequirement:
            continue
    return _once(out)


def pc_names(module, private=False):
    opt = "--print-requires-private" if private else "--print-requires"
    out = subprocess.run(["pkg-config", opt, module], capture_output=True, text=True,
                         check=True).stdout
    return _once(line.split()[0] for line in out.split("\n") if line.strip())


def dpkg_doc(package, fields):
    """(name, text_of, schema, gold) of a dpkg paragraph; fields: {property: (relation
    field, description)}."""
    text = dpkg_paragraph(package)
    gold = {p: relation_names(text, f) for p, (f, _) in fields.items()}
    return ("dpkg-" + package, lambda: dpkg_paragraph(package),
            _obj({p: names(d) for p, (_, d) in fields.items()}), gold)


def req_doc(name, path, prop, desc):
    return (name, lambda: _read(path), _obj({prop: names(desc)}),
            {prop: requirement_names(_read(path))})


def pc_doc(module, fields):
    """fields: {property: (private, description)}."""
    return ("pc-" + module, lambda: _read(PKGCONFIG + module + ".pc"),
            _obj({p: names(d) for p, (_, d) in fields.items()}),
            {p: pc_names(module, priv) for p, (priv, _) in fields.items()})


DOCS = [
    dpkg_doc("libpng16-16", {"dependencies": ("Depends", "names of the required packages (Depends)")}),
    dpkg_doc("python3-pip", {"dependencies": ("Depends", "names of the required packages (Depends)"),
                             "recommends": ("Recommends", "names of the recommended packages")}),
    dpkg_doc("libssl3", {"dependencies": ("Depends", "names of the required packages")}),
    dpkg_doc("ca-certificates", {"depends": ("Depends", "package names, in order")}),
    dpkg_doc("libmagic-mgc", {"dependencies": ("Depends", "names of the required packages (Depends)")}),
    req_doc("requirements-boto", GSUTIL + "gslib/vendored/boto/requirements.txt", "dependencies",
            "names of the required packages"),
    req_doc("requirements-google-auth-testing",
            GSUTIL + "third_party/google-auth-library-python/testing/requirements.txt",
            "test_requirements", "names of the packages the tests need"),
    req_doc("requirements-pip-docs", "/usr/share/doc/python3-pip/requirements.txt",
            "dependencies", "names of the required packages"),
    pc_doc("fontconfig", {"required_packages": (False, "names of the packages it requires (Requires)")}),
    pc_doc("libbrotlidec", {"private_dependencies": (True, "names of the private requirements")}),
]
