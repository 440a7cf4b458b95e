"""The count prior (deg.json "count_prior", lib/deg/countprior.h; libdeg 0.12.0, issue 12) on
the real SmolLM2 and the shipped checkpoint: booleans that ask how many items a list of the
document has ("has_documentation", "several after units", a description "is more than one
item of dependencies listed?"), on a systemd unit, a Maven POM (XML element lines as lists)
and a shared-mime-info entry that states "Has magic: ja". The default checkpoint carries
the prior; the same checkpoint without it (deg.json edited in a copy) gets some of them
wrong (else the test could not fail)."""
import json
import os

import deg

UNIT = ("[Unit]\n"
        "Description=Daily apt download activities\n"
        "Documentation=man:apt(8)\n"
        "ConditionACPower=true\n"
        "After=network.target network-online.target systemd-networkd.service "
        "NetworkManager.service connman.service\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        "ExecStart=/usr/lib/apt/apt.systemd.daily update\n")
UNIT_SCHEMA = {"type": "object", "properties": {
    "has_documentation": {"type": "boolean"},
    "several_after_units": {"type": "boolean",
                            "description": "does it list several After= units?"},
    "single_wants": {"type": "boolean"},
    "no_wants": {"type": "boolean"},
    "at_most_one_after": {"type": "boolean"}}}
UNIT_WANT = {"has_documentation": True, "several_after_units": True, "single_wants": True,
             "no_wants": False, "at_most_one_after": False}
POM = ("<project>\n"
       "  <artifactId>demo</artifactId>\n"
       "  <dependencies>\n"
       "    <dependency>\n"
       "      <groupId>junit</groupId>\n"
       "      <artifactId>junit</artifactId>\n"
       "    </dependency>\n"
       "    <dependency>\n"
       "      <groupId>org.slf4j</groupId>\n"
       "      <artifactId>slf4j-api</artifactId>\n"
       "    </dependency>\n"
       "  </dependencies>\n"
       "</project>\n")
POM_SCHEMA = {"type": "object", "properties": {
    "q1": {"type": "boolean", "description": "is more than one item of dependencies listed?"},
    "withoutDependencies": {"type": "boolean"}}}
POM_WANT = {"q1": True, "withoutDependencies": False}
MIME = ("MIME type: application/x-alz\n"
        "Comment: Alzip archive\n"
        "Glob: *.alz\n"
        "Has magic: ja\n")
MIME_SCHEMA = {"type": "object", "properties": {
    "noMagic": {"type": "boolean"}, "severalGlobs": {"type": "boolean"}}}
MIME_WANT = {"noMagic": False, "severalGlobs": False}
CASES = [(UNIT, UNIT_SCHEMA, UNIT_WANT), (POM, POM_SCHEMA, POM_WANT),
         (MIME, MIME_SCHEMA, MIME_WANT)]
KEYS = {"has_documentation": "documentation", "several_after_units": "after",
        "single_wants": "wants", "no_wants": "wants", "at_most_one_after": "after",
        "q1": "dependency", "withoutDependencies": "dependency", "noMagic": "has magic",
        "severalGlobs": "glob"}

ITEMS = {"several_after_units": 5, "has_documentation": 1, "q1": 2, "noMagic": 1}


def without_count_prior(src, dst):
    """A copy of checkpoint src (weights linked) whose deg.json has no count_prior."""
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "deg.json":
            os.symlink(os.path.join(src, f), os.path.join(dst, f))
    meta = json.load(open(os.path.join(src, "deg.json")))
    assert meta.pop("count_prior") == {"bonus": 16.0, "absent": 8.0}
    with open(os.path.join(dst, "deg.json"), "w") as fh:
        json.dump(meta, fh)
    return dst


def test_booleans_count_the_lists(model, tmp_path):
    src = deg.default_checkpoint_path()
    ck = deg.load(src, model=model)
    off = deg.load(without_count_prior(src, str(tmp_path / "off")), model=model)
    wrong_off = 0
    for doc, schema, want in CASES:
        r = ck.fill(doc, schema)
        assert r["value"] == want, r["value"]
        for k in want:
            m = r["meta"]["/" + k]
            assert m["mode"] == "decide.noul" and m["list_key"] == KEYS[k], (k, m)
            # the probability says the same, past the heads' near-even guesses
            assert abs(m["probability"] - 0.5) > 0.2, (k, m)
            assert m["list_items"] == ITEMS.get(k, m["list_items"]), (k, m)
        r0 = off.fill(doc, schema)
        assert all("list_key" not in m for m in r0["meta"].values())
        wrong_off += sum(r0["value"][k] != v for k, v in want.items())
    assert wrong_off > 0, "the heads alone gave every count"


SCALE_SCHEMA = {"type": "object", "properties": {
    "number_of_after_band": {"type": "integer", "minimum": 0, "maximum": 2,
                             "x-levels": {"0": "0 to 1", "1": "2 to 3", "2": "4 or more"}},
    "docs": {"type": "integer", "minimum": 1, "maximum": 3,
             "x-levels": {"1": "0", "2": "1", "3": "2 or more"},
             "description": "the number of documentation links as a band"},
    "wantsCount": {"type": "integer", "minimum": 0, "maximum": 2,
                   "x-levels": {"0": "none", "1": "one", "2": "several"}}}}
# After= lists 5 units (band "4 or more"), Documentation= 1 link; "none"/"one"/"several"
# are no count ranges, so wantsCount is the heads' alone
SCALE_WANT = {"number_of_after_band": 2, "docs": 2}


def test_scores_count_the_lists(model, tmp_path):
    """Count scales (libdeg 0.14.0): scores whose x-levels are count ranges take the
    level of the list's count; without the prior the heads get some wrong."""
    src = deg.default_checkpoint_path()
    ck = deg.load(src, model=model)
    off = deg.load(without_count_prior(src, str(tmp_path / "off")), model=model)
    r = ck.fill(UNIT, SCALE_SCHEMA)
    for k, v in SCALE_WANT.items():
        assert r["value"][k] == v, (k, r["value"])
        m = r["meta"]["/" + k]
        assert m["mode"] == "decide.score", m
        assert m["list_key"] == {"docs": "documentation"}.get(k, "after"), m
        assert m["list_items"] == {"docs": 1}.get(k, 5), m
    assert "list_key" not in r["meta"]["/wantsCount"]
    r0 = off.fill(UNIT, SCALE_SCHEMA)
    assert r0["value"]["wantsCount"] == r["value"]["wantsCount"]
    assert any(r0["value"][k] != v for k, v in SCALE_WANT.items()), \
        "the heads alone gave every level"
