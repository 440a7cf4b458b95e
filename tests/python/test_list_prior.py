"""The list prior (deg.json / options "list_prior", lib/deg/lists.h; issue 12) on the real
SmolLM2 and the shipped checkpoint, on short documents in layouts of the datagen v5 kinds
no training saw (a debconf template in YAML-like bullets, a desktop entry's delimited
MimeType=, a JSON member): the shipped heads alone miss these lists (else the test could
not fail); with the prior each array is its list, item by item, anchored on the list's
items (meta "list_key", one anchor per item); the default checkpoint (v12, as v9) carries the same
prior in its deg.json, so a fill without options is the fill with it."""
import pytest

import deg

DEBCONF = ("template: tzdata/Zones/Indian\n"
           "type: select\n"
           "choices:\n"
           "  - Antananarivo\n"
           "  - Chagos\n"
           "  - Christmas\n"
           "  - Cocos\n"
           "  - Comoro\n"
           "  - Kerguelen\n"
           "question: Time zone\n")
DESKTOP = ("[Desktop Entry]\n"
           "Name=Vim\n"
           "Exec=vim %F\n"
           "MimeType=text/plain;text/x-makefile;text/x-c++hdr;text/x-csrc;\n"
           "Terminal=true\n")
JSONDOC = ('{\n'
           '    "name": "org.freedesktop.login1",\n'
           '    "exec": "/bin/false",\n'
           '    "keys": ["Name", "Exec", "User", "SystemdService"],\n'
           '    "user": "root"\n'
           '}\n')
CASES = [
    (DEBCONF, "choices", ["Antananarivo", "Chagos", "Christmas", "Cocos", "Comoro", "Kerguelen"]),
    (DESKTOP, "mimeTypes", ["text/plain", "text/x-makefile", "text/x-c++hdr", "text/x-csrc"]),
    (JSONDOC, "keys", ["Name", "Exec", "User", "SystemdService"]),
]
ON = {"list_prior": {"bonus": 16, "by_anchor": False}}  # = checkpoints/smollm2-135m-v9 to -v12
KEYS = {"choices": "choices", "mimeTypes": "mime type", "keys": "keys"}  # normalised keys


def schema(field):
    return {"type": "object", "required": [field], "properties": {
        field: {"type": "array", "items": {"type": "string"}},
        "name": {"type": ["string", "null"]}}}


def test_list_prior_reads_lists_the_heads_miss(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    missed = 0
    for doc, field, want in CASES:
        off = ck.fill(doc, schema(field), options={"list_prior": {"bonus": 0}})
        on = ck.fill(doc, schema(field), options=ON)
        default = ck.fill(doc, schema(field))
        assert (default["value"], default["meta"]) == (on["value"], on["meta"])
        missed += off["value"][field] != want
        assert on["value"][field] == want, (field, on["value"][field])
        m = on["meta"]["/" + field]
        assert m["array_mode"] == "anchor" and m["items"] == len(want)
        assert m["list_key"] == KEYS[field]
        assert len(m["anchors"]) == len(want)
        # each anchor is at (or one space before) its item's first character
        for a, item in zip(m["anchors"], want):
            at = doc.index(item, a)
            assert a <= at <= a + 1, (field, item, a, at)
    assert missed == len(CASES), f"the heads alone found {len(CASES) - missed} of the lists"


def test_list_prior_bad_option_is_a_request_error(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    with pytest.raises(deg.RequestError, match="list_prior"):
        ck.fill(DEBCONF, schema("choices"), options={"list_prior": {"bonus": -1}})


# libdeg 0.11.0: lists written as systemd's blank-separated identifiers (named by the
# field's description, in parentheses), as prose ("a and b" inside a "Key: value"
# sentence), and a list anchoring an array of objects, each object read inside its item.
UNIT = ("[Unit]\nDescription=Initrd Default Target\n"
        "After=initrd-root-fs.target basic.target rescue.service\n"
        "Documentation=man:systemd.special(7)\nAllowIsolate=yes\n")
PROSE = ("The format is desktop entry. The name is Vim. Categories: Utility and TextEditor. "
         "Keys: Name, Exec and Icon.\n")
DPKG = ("Package: libjansson4\nStatus: install ok installed\nArchitecture: amd64\n"
        "Depends: libc6 (>= 2.14), zlib1g (>= 1:1.1.4)\nDescription: C library for encoding JSON\n")
DEPENDS = {"type": "object", "required": ["depends"], "properties": {"depends": {
    "type": "array", "items": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"},
        "relation": {"enum": ["<<", "<=", "=", ">=", ">>", None]},
        "version": {"type": ["string", "null"]}}}}}}


def test_written_lists_and_lists_of_objects(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    off = {"list_prior": {"bonus": 0}}
    unit = {"type": "object", "required": ["ordering"], "properties": {"ordering": {
        "type": "array", "description": "the units it is ordered after (After=)",
        "items": {"type": "string"}}}}
    r = ck.fill(UNIT, unit)
    assert r["value"]["ordering"] == ["initrd-root-fs.target", "basic.target", "rescue.service"]
    assert r["meta"]["/ordering"]["list_key"] == "after"
    assert ck.fill(UNIT, unit, options=off)["value"]["ordering"] != r["value"]["ordering"]
    prose = {"type": "object", "required": ["categories"], "properties": {
        "categories": {"type": "array", "items": {"type": "string"}}}}
    r = ck.fill(PROSE, prose)
    assert r["value"]["categories"] == ["Utility", "TextEditor"]
    assert ck.fill(PROSE, prose, options=off)["value"]["categories"] != ["Utility", "TextEditor"]
    r = ck.fill(DPKG, DEPENDS)
    deps = r["value"]["depends"]
    m = r["meta"]["/depends"]
    assert m["list_key"] == "depends" and m["items"] == 2 == len(deps)
    assert deps[0] == {"name": "libc6", "relation": ">=", "version": "2.14"}
    # every object's spans lie inside its own list item
    items = [(DPKG.index("libc6 (>="), DPKG.index("2.14)") + 4),
             (DPKG.index("zlib1g"), DPKG.index("1:1.1.4") + 7)]
    for i, (a, b) in enumerate(items):
        for leaf in ("name", "version"):
            lm = r["meta"][f"/depends/{i}/{leaf}"]
            if lm["span"] is None:  # span_distinct: the name read the version's span
                assert leaf == "version" and lm["span_taken_by"] == f"/depends/{i}/name", lm
                continue
            s, e = lm["span"]
            assert a <= s < e <= b, (i, leaf, (s, e), (a, b))
    assert ck.fill(DPKG, DEPENDS, options=off)["value"]["depends"] != deps
