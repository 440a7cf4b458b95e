"""Decoding rules of libdeg 0.27.0 for lists of package names, on the real SmolLM2 and the
shipped checkpoint, each on a real file of this machine (bench/devreal set 8) the 0.26.0
rules got wrong: an array asking for names reads the name each item opens with, each name
once (lib/deg/list_names.c dg_lists_name_end, fill_arrays.c list_anchors); a run of
requirement lines is a list (dg_lscan_requirement_runs); a dependency array no list matches
in a document of keys is [] (dg_lists_dependencies_unwritten, meta "list_absent"); a value
"*" is a glob, not emphasis, so "Paths: *" paragraphs count (keyprior.c dg_keyline_split).
The list tests also fill with the checkpoint without the setting the rule sits under, so
they can fail."""
import deg
from test_decoding_rules import read_and_alone

S = {"type": "string"}


def names(desc):
    return {"type": "array", "items": S, "description": desc}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


# /var/lib/dpkg/status, python3-pip's paragraph (Debian 12)
PIP = """Package: python3-pip
Status: install ok installed
Priority: optional
Section: python
Installed-Size: 6678
Maintainer: Debian Python Team <team+python@tracker.debian.org>
Architecture: all
Source: python-pip
Version: 23.0.1+dfsg-1
Replaces: python-pip
Provides: pip
Depends: ca-certificates, python3-distutils, python3-setuptools, python3-wheel, python3:any
Recommends: build-essential, python3-dev (>= 3.2)
Breaks: python-pip
Description: Python package installer
 pip is the Python package installer.  It integrates with virtualenv, doesn't
 do partial installs, can save package state for replaying, can install from
 non-egg sources, and can install from version control repositories.
 .
 This is the Python 3 version of the package.
Homepage: https://pip.pypa.io/en/stable/
"""

# /var/lib/dpkg/status, libmagic-mgc's paragraph: no Depends line
MGC = """Package: libmagic-mgc
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: 8130
Maintainer: Christoph Biedl <debian.axhn@manchmal.in-ulm.de>
Architecture: amd64
Multi-Arch: foreign
Source: file
Version: 1:5.44-3
Replaces: libmagic1 (<< 1:5.28-4~)
Breaks: libmagic1 (<< 1:5.28-4~)
Description: File type determination library using "magic" numbers (compiled magic file)
 This package provides the compiled magic file "magic.mgc". It has
 been separated from libmagic1 in order to meet the multiarch
 requirements without breaking applications that expect this file
 at its absolute path.
Homepage: https://www.darwinsys.com/file/
"""

# google-cloud-sdk's gsutil, gslib/vendored/boto/requirements.txt
BOTO = """requests>=1.2.3,<=2.0.1
rsa>=4.1; python_version >= '3.5'
rsa<=4.0; python_version < '3.5'
simplejson==3.6.5
argparse==1.2.1
httpretty>=0.9.6
paramiko>=1.10.0
PyYAML>=3.10
six
"""


def test_names_of_required_packages(model, tmp_path):
    schema = obj(dependencies=names("names of the required packages (Depends)"),
                 recommends=names("names of the recommended packages"))
    got, alone = read_and_alone(model, tmp_path, PIP, schema, "list_prior")
    assert got["value"] == {
        "dependencies": ["ca-certificates", "python3-distutils", "python3-setuptools",
                         "python3-wheel", "python3"],
        "recommends": ["build-essential", "python3-dev"]}
    assert alone["value"] != got["value"]


def test_requirements_file_is_a_list(model, tmp_path):
    schema = obj(dependencies=names("names of the required packages"))
    got, alone = read_and_alone(model, tmp_path, BOTO, schema, "list_prior")
    assert got["value"]["dependencies"] == ["requests", "rsa", "simplejson", "argparse",
                                            "httpretty", "paramiko", "PyYAML", "six"]
    assert got["meta"]["/dependencies"]["list_key"] == "requirements"
    assert alone["value"] != got["value"]


def test_unwritten_dependencies_are_none(model, tmp_path):
    schema = obj(dependencies=names("names of the required packages (Depends)"))
    got, alone = read_and_alone(model, tmp_path, MGC, schema, "list_prior")
    assert got["value"] == {"dependencies": []}
    assert got["meta"]["/dependencies"]["list_absent"] is True
    assert alone["value"]["dependencies"] != []


def test_glob_values_count(model):
    """Both paragraphs' globs count (0.26.0 read "Paths: *" as an empty value: 1 item, and
    none with one paragraph); the heads alone agree on this document, so the count is what
    is checked."""
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    schema = obj(several_paths_paragraphs={
        "type": "boolean", "description": "does it have more than one Paths paragraph?"})
    one = "Paths: *\nOwner: root\nMode: 0644\n"
    for doc, n in ((one + "\nPaths: doc/*\nOwner: docs\nMode: 0600\n", 2), (one, 1)):
        got = ck.fill(doc, schema)
        assert got["value"] == {"several_paths_paragraphs": n > 1}
        meta = got["meta"]["/several_paths_paragraphs"]
        assert (meta["list_key"], meta["list_items"]) == ("paths", n)
