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
