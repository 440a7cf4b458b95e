"""Tables (lib/deg/tables.c, the list prior; libdeg 0.13.0, issue 12) on the real SmolLM2
and the shipped checkpoint: arrays of objects filled from a Markdown table, an ASCII grid,
an HTML table, CSV, a JSON array of objects and YAML records, one object per record, each
property read from the cell its column names (an empty cell "-" is null; a property no
column names reads the one cell left). The same request with options.list_prior
{"bonus": 0} (the list prior off) gets some of them wrong, else the test could not fail."""
import deg

ZONES = {"type": "array", "items": {"type": "object", "required": ["timezone"], "properties": {
    "timezone": {"type": "string"}, "coordinates": {"type": "string"},
    "note": {"type": ["string", "null"]}}}}
ZONES_WANT = [{"timezone": "Africa/Kinshasa", "coordinates": "-0418+01518",
               "note": "Dem. Rep. of Congo (west)"},
              {"timezone": "Africa/Lubumbashi", "coordinates": "-1140+02728", "note": None}]
MARKDOWN = ("# Time zones of Congo (Dem. Rep.)\n\n"
            "| Field | Value |\n|---|---|\n| Country | Congo (Dem. Rep.) |\n| Several zones | yes |\n"
            "\n## Time zones\n\n"
            "| Time zone | Coordinates | Comment |\n"
            "|---|---|---|\n"
            "| Africa/Kinshasa | -0418+01518 | Dem. Rep. of Congo (west) |\n"
            "| Africa/Lubumbashi | -1140+02728 | - |\n")
GRID = ("Country: Congo (Dem. Rep.)\n"
        "+-------------------+-------------+---------------------------+\n"
        "| Time zone         | Coordinates | Comment                   |\n"
        "+===================+=============+===========================+\n"
        "| Africa/Kinshasa   | -0418+01518 | Dem. Rep. of Congo (west) |\n"
        "+-------------------+-------------+---------------------------+\n"
        "| Africa/Lubumbashi | -1140+02728 |                           |\n"
        "+-------------------+-------------+---------------------------+\n")
CURRENCIES = {"type": "array", "items": {"type": "object", "required": ["code"], "properties": {
    "code": {"type": "string"}, "name": {"type": "string"},
    "numericCode": {"type": ["string", "null"]}}}}
CURRENCIES_WANT = [{"code": "AOA", "name": "Kwanza", "numericCode": "973"},
                   {"code": "ARS", "name": "Argentine Peso", "numericCode": "032"},
                   {"code": "AUD", "name": "Australian Dollar", "numericCode": "036"}]
JSON_DOC = ('{\n  "region": "4217",\n  "currencies": [\n'
            '    {"code": "AOA", "name": "Kwanza", "numeric": "973"},\n'
            '    {"code": "ARS", "name": "Argentine Peso", "numeric": "032"},\n'
            '    {"code": "AUD", "name": "Australian Dollar", "numeric": "036"}\n  ]\n}\n')
YAML_DOC = ("---\ncurrencies:\n"
            "  - code: AOA\n    name: Kwanza\n    numeric: 973\n"
            "  - code: ARS\n    name: Argentine Peso\n    numeric: 032\n"
            "  - code: AUD\n    name: Australian Dollar\n    numeric: 036\n"
            "first_code: AOA\n")
HTML_DOC = ("<html><body>\n<h2>Currencies</h2>\n<table>\n"
            "<tr><th>Code</th><th>Name</th><th>Numeric</th></tr>\n"
            "<tr><td>AOA</td><td>Kwanza</td><td>973</td></tr>\n"
            "<tr><td>ARS</td><td>Argentine Peso</td><td>032</td></tr>\n"
            "<tr><td>AUD</td><td>Australian Dollar</td><td>036</td></tr>\n"
            "</table>\n</body></html>\n")
RELEASES = {"type": "array", "items": {"type": "object", "properties": {
    "version": {"type": "string"}, "codename": {"type": "string"},
    "released": {"type": "string", "format": "date"}}}}
CSV_DOC = ("version,codename,series,release\n"
           "10.10,Maverick Meerkat,maverick,2010-10-10\n"
           "11.04,Natty Narwhal,natty,2011-04-28\n")
RELEASES_WANT = [{"version": "10.10", "codename": "Maverick Meerkat", "released": "2010-10-10"},
                 {"version": "11.04", "codename": "Natty Narwhal", "released": "2011-04-28"}]
CASES = [(MARKDOWN, "zones", ZONES, ZONES_WANT, "time zones"),
         (GRID, "zones", ZONES, ZONES_WANT, ""),
         (JSON_DOC, "currencies", CURRENCIES, CURRENCIES_WANT, "currencies"),
         (YAML_DOC, "currencies", CURRENCIES, CURRENCIES_WANT, "currencies"),
         (HTML_DOC, "currencies", CURRENCIES, CURRENCIES_WANT, "currencies"),
         (CSV_DOC, "releases", RELEASES, RELEASES_WANT, "")]


def test_objects_read_their_cells(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    wrong_off = 0
    for doc, name, array, want, caption in CASES:
        schema = {"type": "object", "properties": {name: array}, "required": [name]}
        r = ck.fill(doc, schema)
        got = [{k: v for k, v in o.items() if v is not None or k == "note"}
               for o in r["value"][name]]
        assert got == want, (doc[:40], r["value"][name])
        m = r["meta"]["/" + name]
        assert m["list_table"] is True and m["list_key"] == caption, m
        assert m["items"] == len(want) and len(m["anchors"]) == len(want), m
        r0 = ck.fill(doc, schema, options={"list_prior": {"bonus": 0}})
        assert "list_table" not in r0["meta"]["/" + name]
        wrong_off += r0["value"][name] != r["value"][name]
    assert wrong_off > 0, "the heads alone read every table"
