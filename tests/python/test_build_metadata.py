"""Decoding rules of libdeg 0.25.0 for package build and link metadata, on the real
SmolLM2 and the shipped checkpoint, each on a real file of this machine (bench/devreal
set 4) the 0.24.0 rules got wrong: the key vocabulary reads "Depends:" for
`dependencies` and "Build-Depends:" for `build_dependencies` (lib/deg/keyvocab.c); a folded
RFC 822 value and a TOML `key = ['a']` array are lists (lib/deg/lists.c, lists_keys.c); a
plain string named `..._email` reads the address, not the name before it
(lib/deg/fill_extract.c name_kind). Each test also fills with the checkpoint without the
setting the rule sits under, so it can fail: the heads alone give another value."""
import deg

from test_decoding_rules import read_and_alone

S = {"type": "string"}
STRINGS = {"type": "array", "items": S}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


# /usr/share/doc/ca-certificates/examples/ca-certificates-local/debian/control, its head
CONTROL = """Source: ca-certificates-local
Section: misc
Priority: extra
Maintainer: System Administrator <root@localhost.localdomain>
Build-Depends: debhelper (>= 8.0.0)
Standards-Version: 3.9.4

Package: ca-certificates-local
Architecture: all
Depends: ca-certificates (>= 20130119), ${misc:Depends}
Description: Local CA certificates
 This package includes local CA certificates to be installed in
 /usr/local/share/ca-certificates. The CA certificates installed by this
 package will be implicitly trusted.
"""

# /root/.pyenv/versions/3.13.0/lib/python3.13/test/test_importlib/metadata/data/sources/
# example2/pyproject.toml
PYPROJECT = """[build-system]
build-backend = 'trampolim'
requires = ['trampolim']

[project]
name = 'example2'
version = '1.0.0'

[project.scripts]
example = 'example2:main'
"""

# An R DESCRIPTION's Authors field, folded over lines with roles in brackets
DESCRIPTION = """Package: jsonlite
Version: 1.8.7
Depends: methods
Author: Jeroen Ooms [aut, cre] (<https://orcid.org/0000-0002-4035-0289>),
  Duncan Temple Lang [ctb],
  Lloyd Hilaiel [cph] (author of bundled libyajl)
Maintainer: Jeroen Ooms <jeroen@berkeley.edu>
"""


def test_dependency_keys_by_the_vocabulary(model, tmp_path):
    schema = obj(dependencies=STRINGS, build_dependencies=STRINGS)
    got, alone = read_and_alone(model, tmp_path, CONTROL, schema, "list_prior")
    assert got["value"] == {"dependencies": ["ca-certificates (>= 20130119)", "${misc:Depends}"],
                            "build_dependencies": ["debhelper (>= 8.0.0)"]}
    assert got["meta"]["/build_dependencies"]["list_key"] == "build depends"
    assert alone["value"] != got["value"]


def test_a_name_that_says_email_reads_the_address(model, tmp_path):
    schema = obj(maintainer_email=S)
    got, alone = read_and_alone(model, tmp_path, CONTROL, schema, "key_prior")
    assert got["value"] == {"maintainer_email": "root@localhost.localdomain"}
    assert alone["value"] != got["value"]
    # a name saying nothing of e-mail keeps the whole value
    got = deg.load(deg.default_checkpoint_path(), model=model).fill(CONTROL, obj(maintainer=S))
    assert got["value"] == {"maintainer": "System Administrator <root@localhost.localdomain>"}


def test_toml_array_and_folded_value(model, tmp_path):
    got, alone = read_and_alone(model, tmp_path, PYPROJECT, obj(requires=STRINGS), "list_prior")
    assert got["value"] == {"requires": ["trampolim"]}
    assert alone["value"] != got["value"]
    got, alone = read_and_alone(model, tmp_path / "d", DESCRIPTION, obj(authors=STRINGS),
                                "list_prior")
    assert [a.split(" [")[0] for a in got["value"]["authors"]] == [
        "Jeroen Ooms", "Duncan Temple Lang", "Lloyd Hilaiel"]
    assert alone["value"] != got["value"]


def test_whole_written_numbers_and_relative_paths(model):
    """A key's signed number is read whole (fill_extract.c signed_form_before), a relative
    path keeps its "../" (parse.h span trim), and `website` reads pkg-config's "URL:" (the
    key vocabulary's pairs after rewriting): three findings of a new user's check."""
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    unit = "[Service]\nType=notify\nOOMScoreAdjust=-900\nNice=-5\n"
    I = {"type": "integer"}
    assert ck.fill(unit, obj(oom_score_adjust=I, nice=I))["value"] == {
        "oom_score_adjust": -900, "nice": -5}
    cargo = '[package]\nname = "error_index_generator"\nworkspace = "../rustbook"\n'
    assert ck.fill(cargo, obj(workspace=S))["value"] == {"workspace": "../rustbook"}
    pc = "Name: libssh2\nURL: https://www.libssh2.org/\nVersion: 1.10.0\n"
    assert ck.fill(pc, obj(website=S))["value"] == {"website": "https://www.libssh2.org/"}
