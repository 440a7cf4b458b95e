/* Tables of the list prior (lib/deg/tables.c): records with cells read from pipe,
 * HTML, CSV, JSON and YAML tables, the match of an array of objects to a table
 * by its columns, and deg_fill on the tiny random models, where each object's
 * leaves must read their own cells (random heads alone do not). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "deg.h"
#include "deg/lists.h"
#include "deg/plan.h"

#define GOLDENS DEG_SOURCE_ROOT "/tests/goldens"

static const char *TINY[] = {"tiny-llama", "tiny-qwen3"};

/* List i as "key: col=val,col=val | ...", the values sliced from ctx by code points
 * ("col=" for an empty cell). */
static const char *print_list(const dg_lists *ls, const char *ctx, size_t i)
{
    static char out[2048];
    size_t cpb[2048], n = 0;
    for (size_t b = 0; ctx[b]; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cpb[n++] = b;
    cpb[n] = strlen(ctx);
    size_t o = (size_t)snprintf(out, sizeof out, "%s:", ls->p[i].key);
    for (size_t j = 0; j < ls->p[i].n; j++) {
        size_t it = ls->p[i].first + j;
        o += (size_t)snprintf(out + o, sizeof out - o, "%s", j ? " |" : "");
        for (size_t c = ls->item_cell[it]; c < ls->item_cell[it + 1]; c++) {
            const dg_cell *x = &ls->cell[c];
            o += (size_t)snprintf(out + o, sizeof out - o, "%s%s=%.*s",
                                  c > ls->item_cell[it] ? "," : " ", x->key,
                                  (int)(cpb[x->c1] - cpb[x->c0]), ctx + cpb[x->c0]);
        }
    }
    return out;
}

/* Table number `nth` (0-based, document order), printed by print_list. */
static const char *table(const dg_lists *ls, const char *ctx, size_t nth)
{
    for (size_t i = 0; i < ls->n; i++)
        if (ls->p[i].table && !nth--) return print_list(ls, ctx, i);
    return NULL;
}

/* The text of item `j` of table `nth` (its extent: first to last cell). */
static const char *row(const dg_lists *ls, const char *ctx, size_t nth, size_t j)
{
    static char out[512];
    size_t cpb[2048], n = 0;
    for (size_t b = 0; ctx[b]; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cpb[n++] = b;
    cpb[n] = strlen(ctx);
    for (size_t i = 0; i < ls->n; i++) {
        if (!ls->p[i].table || nth--) continue;
        const size_t *it = ls->item + 2 * (ls->p[i].first + j);
        snprintf(out, sizeof out, "%.*s", (int)(cpb[it[1]] - cpb[it[0]]), ctx + cpb[it[0]]);
        return out;
    }
    return NULL;
}

static size_t n_tables(const dg_lists *ls)
{
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++) n += ls->p[i].table != 0;
    return n;
}

/* Markdown under a heading (a dash is an empty cell, "é" counts one code point);
 * an ASCII grid with borders between rows, captioned above its top border; the
 * key/value grid is a two-column table and its rows stay key lines. */
Test(tables, scan_pipe_tables)
{
    const char *ctx = "## Time zones\n"
                      "\n"
                      "| Time zone | Coordinates | Comment |\n"
                      "|---|:---:|---|\n"
                      "| Africa/Kinshasa | -0418+01518 | Dem. Rep. (west) |\n"
                      "| Europe/Zürich | +4723+00832 | - |\n"
                      "Not a row\n"
                      "Releases\n"
                      "+---------+--------------+\n"
                      "| Version | Codename     |\n"
                      "+=========+==============+\n"
                      "| 10.10   | Maverick     |\n"
                      "+---------+--------------+\n"
                      "| 11.04   | Natty        |\n"
                      "+---------+--------------+\n"
                      "\n"
                      "| Field   | Value |\n"
                      "|---------|-------|\n"
                      "| Country | Benin |\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 3);
    cr_assert_str_eq(table(&ls, ctx, 0), "time zones: time zone=Africa/Kinshasa,coordinates="
                                         "-0418+01518,comment=Dem. Rep. (west) | time zone="
                                         "Europe/Zürich,coordinates=+4723+00832,comment=");
    cr_assert_str_eq(row(&ls, ctx, 0, 1), "Europe/Zürich | +4723+00832 | -");
    cr_assert_str_eq(table(&ls, ctx, 1),
                     "releases: version=10.10,codename=Maverick | version=11.04,codename=Natty");
    cr_assert_str_eq(table(&ls, ctx, 2), ": field=Country,value=Benin", "no caption: a blank");
    dg_lists_free(&ls);
    const char *ragged = "| p | q | r |\n|---|---|---|\n| 1 | 2 |\n| 3 | 4 | 5 | 6 |\n| 7 |\n";
    cr_assert_eq(dg_lists_scan(ragged, strlen(ragged), &ls), DEG_OK);
    cr_assert_str_eq(table(&ls, ragged, 0), ": p=1,q=2 | p=3,q=4,r=5");
    dg_lists_free(&ls);
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    int country = 0;
    for (size_t i = 0; i < ls.n; i++) country |= !ls.p[i].table && !strcmp(ls.p[i].key, "country");
    cr_assert(country, "a table's rows stay key lines");
    dg_lists_free(&ls);
}

/* HTML: a header row of <th> cells, rows over several lines, the text of one inline
 * element read ("<b>Peso</b>", '<a href="..">Real</a>'), a cell with more markup
 * inside unread (no cell), a key/value "<th>k</th><td>v</td>" row no header. */
Test(tables, scan_html_table)
{
    const char *ctx = "<h2>Currencies</h2>\n"
                      "<table>\n"
                      "<thead><tr><th>Code</th><th>Name</th></tr></thead>\n"
                      "<tbody>\n"
                      "<tr><td>AOA</td><td>Kwanza</td></tr>\n"
                      "<tr>\n  <td>ARS</td>\n  <td><b>Peso</b></td>\n</tr>\n"
                      "<tr><td><code>BRL</code></td><td> <a href=\"/brl\">Real</a> </td></tr>\n"
                      "<tr><td>CLP</td><td><b>Peso</b> chileno</td></tr>\n"
                      "<tr><td>COP</td><td><i><b>Peso</b></i></td></tr>\n"
                      "</tbody></table>\n"
                      "<table><tr><th>Country</th><td>Greece</td></tr></table>\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 1);
    cr_assert_str_eq(table(&ls, ctx, 0), "currencies: code=AOA,name=Kwanza | code=ARS,name=Peso"
                                         " | code=BRL,name=Real | code=CLP | code=COP");
    dg_lists_free(&ls);
}

/* CSV with a header (short rows, a quoted cell holding a comma), TSV; prose with
 * commas is no header. */
Test(tables, scan_csv)
{
    const char *ctx = "version,codename,release date\n"
                      "10.10,Maverick Meerkat,2010-10-10\n"
                      "11.04,\"Natty, Narwhal\"\n"
                      "\n"
                      "name\tsize\n"
                      "a.txt\t10\n"
                      "\n"
                      "We came, we saw: it was, in short, fine\n"
                      "and then, later, home\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 2);
    cr_assert_str_eq(table(&ls, ctx, 0), ": version=10.10,codename=Maverick Meerkat,release date="
                                         "2010-10-10 | version=11.04,codename=Natty, Narwhal");
    cr_assert_str_eq(table(&ls, ctx, 1), ": name=a.txt,size=10");
    dg_lists_free(&ls);
}

/* Headerless TSV: a paragraph whose every line has 3+ TAB-separated parts is a
 * table of records with unnamed cells (ragged rows and runs of TABs allowed); a
 * lone line of 2 parts or a line of prose above in the paragraph makes none; '#'
 * comment lines above or inside are skipped; the caption is the heading above the
 * blank line. */
Test(tables, scan_headerless_tsv)
{
    const char *ctx = "NI\t+1209-08617\tAmerica/Managua\n"
                      "\n"
                      "# iso3166.tab\n"
                      "NI\tNicaragua\n"
                      "\n"
                      "Time zones\n"
                      "\n"
                      "CL\t-3327-07040\tAmerica/Santiago\tmost of Chile\n"
                      "CL\t\t-2709-10926\t\tPacific/Easter\n"
                      "\n"
                      "A line of prose\n"
                      "XX\t+1\tEtc/One\n"
                      "\n"
                      "YY\t+1\tEtc/Two\n"
                      "# a comment\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 3);
    cr_assert_str_eq(table(&ls, ctx, 0), ": =NI,=+1209-08617,=America/Managua");
    cr_assert_str_eq(table(&ls, ctx, 2), ": =YY,=+1,=Etc/Two");
    cr_assert_str_eq(table(&ls, ctx, 1), "time zones: =CL,=-3327-07040,=America/Santiago,"
                                         "=most of Chile | =CL,=-2709-10926,=Pacific/Easter");
    cr_assert_str_eq(row(&ls, ctx, 1, 1), "CL\t\t-2709-10926\t\tPacific/Easter");
    for (size_t i = 0; i < ls.n; i++)
        if (ls.p[i].table) cr_assert_eq(ls.p[i].table, DG_TABLE_HEADERLESS);
    dg_lists_free(&ls);
}

/* Aligned columns (/etc/services, mime.types): parts between TAB runs or 2+ spaces,
 * a trailing '#' comment left out, "540/tcp" as two cells, '#' lines skipped, one-part
 * rows among rows of two or more parts; key lines, bullets, pipe rows and prose make
 * none, and so does a paragraph with a single row of two parts. */
Test(tables, scan_aligned_columns)
{
    const char *ctx = "# Network services\n"
                      "uucp            540/tcp\t\tuucpd\t\t# uucp daemon\n"
                      "# Kerberos\n"
                      "klogin          543/tcp\t\t# Kerberized rlogin\n"
                      "auth            113/tcp\t\tauthentication tap ident\n"
                      "\n"
                      "application/vnd.syncml+xml\t\t\txsm\n"
                      "application/vnd.syncml.dm.notification\n"
                      "application/vnd.syncml.dmddf+xml\t\tddf xdf\n"
                      "\n"
                      "Name:    blinker\n"
                      "Version: 1.9\n"
                      "\n"
                      "-  first   item\n"
                      "-  second  item\n"
                      "\n"
                      "Two sentences.  Written with\n"
                      "two spaces.  After each one.\n"
                      "\n"
                      "solo    42/udp\n"
                      "\n"
                      "# Protocols\n"
                      "ddp\t37\tDDP\t\t# Datagram Delivery Protocol\n"
                      "idpr-cmtp 38\tIDPR-CMTP\t# IDPR Control Message Transport\n"
                      "ipv6\t41\tIPv6\t\t# Internet Protocol, version 6\n"
                      "\n"
                      "Paris\t75\tFR\n"
                      "New York\tUS\n"
                      "Lyon\t69\tFR\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 4);
    /* a row one cell short: a name and a number parted by one blank are two cells */
    cr_assert_str_eq(table(&ls, ctx, 2), "protocols: =ddp,=37,=DDP | =idpr-cmtp,=38,=IDPR-CMTP | "
                                         "=ipv6,=41,=IPv6");
    cr_assert_str_eq(table(&ls, ctx, 3), ": =Paris,=75,=FR | =New York,=US | =Lyon,=69,=FR");
    cr_assert_str_eq(table(&ls, ctx, 0), "network services: =uucp,=540,=tcp,=uucpd | =klogin,=543,"
                                         "=tcp | =auth,=113,=tcp,=authentication tap ident");
    cr_assert_str_eq(table(&ls, ctx, 1), ": =application/vnd.syncml+xml,=xsm | "
                                         "=application/vnd.syncml.dm.notification | "
                                         "=application/vnd.syncml.dmddf+xml,=ddf xdf");
    for (size_t i = 0; i < ls.n; i++)
        if (ls.p[i].table) cr_assert_eq(ls.p[i].table, DG_TABLE_HEADERLESS);
    dg_lists_free(&ls);
}

/* The list (no table) under key `key`, printed by print_list. */
static const char *list_cells(const dg_lists *ls, const char *ctx, const char *key)
{
    for (size_t i = 0; i < ls->n; i++)
        if (!ls->p[i].table && !strcmp(ls->p[i].key, key)) return print_list(ls, ctx, i);
    return NULL;
}

/* A list item written "X (a, b, c)" has the cells X, a, b, c; one detail in the
 * parentheses (a note on X), text after them, a parenthesis inside them or none at
 * all: no cells. */
Test(tables, scan_parenthesised_parts)
{
    const char *ctx = "Services: http-alt (8080, tcp, webcache); puppet (8140, tcp); "
                      "bacula-dir (9101, tcp). \n"
                      "Zones: Asia/Amman (+3157+03556); Asia/Dubai (+2518+05518, Gulf)\n"
                      "Depends: libc6 (>= 2.14), zlib1g (>= 1:1.1.4), debconf\n"
                      "Other: a (b) c; d (e (f)); g\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(list_cells(&ls, ctx, "services"),
                     "services: =http-alt,=8080,=tcp,=webcache | =puppet,=8140,=tcp | "
                     "=bacula-dir,=9101,=tcp");
    /* one detail is a note, unless another item of the value has two */
    cr_assert_str_eq(list_cells(&ls, ctx, "zones"),
                     "zones: =Asia/Amman,=+3157+03556 | =Asia/Dubai,=+2518+05518,=Gulf");
    cr_assert_str_eq(list_cells(&ls, ctx, "depends"),
                     "depends: | |");
    cr_assert_str_eq(list_cells(&ls, ctx, "other"), "other: | |");
    dg_lists_free(&ls);
}

/* Numbered INI sections and TOML's array of tables: one record per section, its
 * key lines the cells, the base name the key; a section of another name ends the
 * set, and a lone unnumbered section is no table. */
Test(tables, scan_ini_sections)
{
    const char *ctx = "[services]\nfirst_port = 6001\n\n"
                      "[services.1]\nservice = x11-1\nport = 6001\n\n"
                      "; a comment\n[services.2]\nservice = x11-2\nprotocol: udp\n\n"
                      "[other.1]\nname = z\n\n"
                      "[[hosts]]\nname = a\nip = 10.0.0.1\n[[hosts]]\nname = b\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 3);
    cr_assert_str_eq(table(&ls, ctx, 0), "services: service=x11-1,port=6001 | "
                                         "service=x11-2,protocol=udp");
    cr_assert_str_eq(table(&ls, ctx, 1), "other: name=z");
    cr_assert_str_eq(table(&ls, ctx, 2), "hosts: name=a,ip=10.0.0.1 | name=b");
    for (size_t i = 0; i < ls.n; i++)
        if (ls.p[i].table) cr_assert_eq(ls.p[i].table, DG_TABLE_NAMED);
    dg_lists_free(&ls);
}

/* JSON: an array of objects under a member (null = empty cell, nested values
 * skipped, escapes kept) and a bare top-level one; an array of strings is no table. */
Test(tables, scan_json_records)
{
    const char *ctx = "{\n"
                      "  \"4217\": [\n"
                      "    {\"alpha_3\": \"GMD\", \"numeric\": 270, \"note\": null},\n"
                      "    {\n"
                      "      \"alpha_3\": \"GNF\",\n"
                      "      \"tags\": [\"a\", {\"b\": 1}],\n"
                      "      \"name\": \"Guinean \\\"Franc\\\"\"\n"
                      "    }\n"
                      "  ],\n"
                      "  \"keys\": [\"Name\", \"Exec\"]\n"
                      "}\n"
                      "[{\"id\": \"x\"}, {\"id\": true}]\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 2);
    cr_assert_str_eq(table(&ls, ctx, 0), "4217: alpha 3=GMD,numeric=270,note= | alpha 3=GNF,"
                                         "name=Guinean \\\"Franc\\\"");
    cr_assert_str_eq(table(&ls, ctx, 1), ": id=x | id=true");
    dg_lists_free(&ls);
}

/* YAML: "- key: value" bullets continued by lines indented to the text under a key
 * line; a bullet list of plain items is no table. */
Test(tables, scan_yaml_records)
{
    const char *ctx = "---\n"
                      "currencies:\n"
                      "  - code: AOA\n"
                      "    name: Kwanza\n"
                      "    numeric: 973\n"
                      "  - code: ARS\n"
                      "    name: \"Argentine Peso\"\n"
                      "first_name: Kwanza\n"
                      "choices:\n"
                      "  - a\n"
                      "  - b\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 1);
    cr_assert_str_eq(table(&ls, ctx, 0), "currencies: code=AOA,name=Kwanza,numeric=973 | "
                                         "code=ARS,name=Argentine Peso");
    cr_assert_str_eq(row(&ls, ctx, 0, 0), "code: AOA\n    name: Kwanza\n    numeric: 973");
    dg_lists_free(&ls);
}

/* Records over blank lines and nested lists (YAML), a header row over several lines
 * (HTML, captioned above its <table>). */
Test(tables, scan_multiline_records)
{
    const char *ctx = "repos:\n"
                      "  - repo: https://a.example/isort\n"
                      "    rev: 5.12.0\n"
                      "    hooks:\n"
                      "      - id: isort\n"
                      "\n"
                      "  - repo: https://b.example/black\n"
                      "    rev: 23.1.0\n"
                      "other: x\n"
                      "<h5>Error constants</h5>\n"
                      "<table>\n"
                      "<tr>\n<th>Constant</th>\n<th>Description</th>\n</tr>\n"
                      "<tr>\n<td>E2BIG</td>\n<td>Argument list too long.</td>\n</tr>\n"
                      "<tr><td>EACCES</td><td>Permission denied.</td></tr>\n"
                      "</table>\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(n_tables(&ls), 2);
    cr_assert_str_eq(table(&ls, ctx, 0), "repos: repo=https://a.example/isort,rev=5.12.0 | "
                                         "repo=https://b.example/black,rev=23.1.0");
    cr_assert_str_eq(table(&ls, ctx, 1), "error constants: constant=E2BIG,description=Argument "
                                         "list too long. | constant=EACCES,description="
                                         "Permission denied.");
    dg_lists_free(&ls);
}

/* The key of the list array 0 of `schema` takes in ctx ("-" none; "table:" + caption
 * for a table). */
static const char *match(const char *schema, const char *ctx)
{
    static char out[128];
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK, "%s",
                 errs ? errs : deg_errmsg());
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    int m = dg_lists_match(&ls, (const dg_plan *)p, 0);
    snprintf(out, sizeof out, "%s%s", m < 0 ? "-" : ls.p[m].table ? "table:" : "",
             m < 0 ? "" : ls.p[m].key);
    dg_lists_free(&ls);
    deg_plan_free(p);
    return out;
}

#define OBJ(props) "{\"type\":\"object\",\"properties\":{\"zones\":{\"type\":\"array\"," \
                   "\"items\":{\"type\":\"object\",\"properties\":{" props "}}}}}"

/* An object array takes the table whose columns name the most of its properties,
 * before a list by name; a table no column of which names a property is not taken;
 * a plain array never takes a table. */
Test(tables, match)
{
    const char *ctx = "Zones: Europe/Paris, Europe/Berlin\n"
                      "| Zone | Coordinates |\n|---|---|\n| Europe/Paris | +4852+00220 |\n"
                      "\n"
                      "| Zone | Note | Position |\n|---|---|---|\n| Europe/Paris | x | +4852 |\n";
    cr_assert_str_eq(match(OBJ("\"zone\":{\"type\":\"string\"},\"coordinates\":"
                               "{\"type\":\"string\"}"), ctx), "table:");
    cr_assert_str_eq(match(OBJ("\"timezone\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"},"
                               "\"position\":{\"type\":\"string\"}"), ctx), "table:");
    cr_assert_str_eq(match(OBJ("\"tz\":{\"type\":\"string\"},\"lat\":{\"type\":\"string\"}"),
                           ctx), "zones", "no column: the list by name");
    cr_assert_str_eq(match("{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"array\","
                           "\"items\":{\"type\":\"string\"}}}}", ctx), "zones");
    /* which table: the second (three columns named) */
    deg_plan *p = NULL;
    char *errs = NULL;
    const char *s3 = OBJ("\"timezone\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"},"
                         "\"position\":{\"type\":\"string\"}");
    cr_assert_eq(deg_plan_compile(s3, strlen(s3), &p, &errs), DEG_OK);
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    int m = dg_lists_match(&ls, (const dg_plan *)p, 0);
    cr_assert_eq(ls.item_cell[ls.p[m].first + 1] - ls.item_cell[ls.p[m].first], 3);
    /* cells by column name: exact; "timezone" is one word, no partial match of "zone" */
    const dg_plan *P = (const dg_plan *)p;
    for (size_t i = 0; i < P->arrays[0].n_fields; i++) {
        const dg_field_plan *f = &P->fields[P->arrays[0].first_field + i];
        const char *seg = f->path.seg[f->path.n - 1];
        const dg_cell *c = dg_lists_cell_of(&ls, P, 0, ls.p[m].first,
                                            P->arrays[0].first_field + i);
        if (!strcmp(seg, "timezone")) cr_assert_null(c);
        else cr_assert_str_eq(c->key, seg);
    }
    dg_lists_free(&ls);
    deg_plan_free(p);
    /* number folded: "architecture" reads "Architectures" */
    const char *plat = "| OS | Architectures |\n|---|---|\n| Linux | x64 |\n";
    const char *s5 = OBJ("\"os\":{\"type\":\"string\"},\"architecture\":{\"type\":\"string\"}");
    cr_assert_eq(deg_plan_compile(s5, strlen(s5), &p, &errs), DEG_OK);
    P = (const dg_plan *)p;
    cr_assert_eq(dg_lists_scan(plat, strlen(plat), &ls), DEG_OK);
    m = dg_lists_match(&ls, P, 0);
    cr_assert_geq(m, 0);
    for (size_t i = 0; i < P->arrays[0].n_fields; i++) {
        const dg_field_plan *f = &P->fields[P->arrays[0].first_field + i];
        const dg_cell *c = dg_lists_cell_of(&ls, P, 0, ls.p[m].first,
                                            P->arrays[0].first_field + i);
        cr_assert_str_eq(c->key, strcmp(f->path.seg[f->path.n - 1], "os") ? "architectures"
                                                                           : "os");
    }
    dg_lists_free(&ls);
    deg_plan_free(p);
    /* a partial match skips a column a sibling names exactly */
    const char *yaml = "currencies:\n  - code: AOA\n    numeric: 973\n";
    const char *s4 = "{\"type\":\"object\",\"properties\":{\"currencies\":{\"type\":\"array\","
                     "\"items\":{\"type\":\"object\",\"properties\":{\"Code\":{\"type\":"
                     "\"string\"},\"numericCode\":{\"type\":\"string\"}}}}}}";
    cr_assert_eq(deg_plan_compile(s4, strlen(s4), &p, &errs), DEG_OK);
    P = (const dg_plan *)p;
    cr_assert_eq(dg_lists_scan(yaml, strlen(yaml), &ls), DEG_OK);
    m = dg_lists_match(&ls, P, 0);
    cr_assert_geq(m, 0);
    for (size_t i = 0; i < P->arrays[0].n_fields; i++) {
        const dg_field_plan *f = &P->fields[P->arrays[0].first_field + i];
        const dg_cell *c = dg_lists_cell_of(&ls, P, 0, ls.p[m].first,
                                            P->arrays[0].first_field + i);
        cr_assert_str_eq(c->key, strcmp(f->path.seg[f->path.n - 1], "Code") ? "numeric" : "code");
    }
    dg_lists_free(&ls);
    deg_plan_free(p);
}

/* A headerless table is taken by an object array as the text's only one without a
 * caption when nothing else matches, or by its caption's name; two make no match
 * by default, and a plain array or a list by name comes first. */
Test(tables, match_headerless)
{
    const char *one = "NI\t+1209-08617\tAmerica/Managua\n\n# iso3166.tab\nNI\tNicaragua\n";
    const char *props = OBJ("\"tz\":{\"type\":\"string\"},\"pos\":{\"type\":\"string\"}");
    cr_assert_str_eq(match(props, one), "table:", "the lone unnamed table");
    cr_assert_str_eq(match(props, "A\tB\tC\n\nD\tE\tF\n"), "-", "two: none");
    cr_assert_str_eq(match(props, "Zones\n\nA\tB\tC\n\nD\tE\tF\n"), "table:zones",
                     "by caption");
    cr_assert_str_eq(match(props, "Zones: Europe/Paris\n\nA\tB\tC\n"), "zones",
                     "a list by name first");
    cr_assert_str_eq(match("{\"type\":\"object\",\"properties\":{\"zones\":{\"type\":"
                           "\"array\",\"items\":{\"type\":\"string\"}}}}", one), "-",
                     "a plain array: never");
}

#define ENTRIES(name, props) "{\"type\":\"object\",\"properties\":{\"" name "\":{" \
                             "\"type\":\"array\",\"items\":{\"type\":\"object\"," \
                             "\"properties\":{" props "}}}}}"

/* A list whose items' "Key: value" parts name an object array's properties is taken
 * like a table whose columns do, before a list by name alone (libdeg 0.22.0); when
 * nothing matches, the text's only list of records (every item two parts or more)
 * is taken, as the only headerless table is; two such lists make no match. */
Test(tables, match_record_lists)
{
    const char *kv = "First port: 43\nServices:\n- whois; Port: 43; Protocol: tcp\n"
                     "- tacacs; Port: 49; Protocol: udp\n";
#define PROPS "\"service\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"}"
    cr_assert_str_eq(match(ENTRIES("entries", "\"service\":{\"type\":\"string\"},"
                                              "\"transport\":{\"type\":\"string\"},"
                                              "\"port-number\":{\"type\":\"integer\"}"), kv),
                     "services", "a part's key names port-number");
    cr_assert_str_eq(match(ENTRIES("ports", PROPS), kv), "services",
                     "named parts before a partial name (first port)");
    const char *html = "<tr><th>Services</th><td><ol><li>a &mdash; 1 &mdash; tcp</li>"
                       "<li>b &mdash; 2 &mdash; udp</li></ol></td></tr>\n"
                       "<tr><th>First port</th><td>1</td></tr>\n"
                       "<tr><th>Hosts</th><td><ul><li>x</li><li>y</li></ul></td></tr>\n";
    cr_assert_str_eq(match(ENTRIES("entries", PROPS), html), "services",
                     "the only list of records");
    cr_assert_str_eq(match(ENTRIES("ports", PROPS), html), "services",
                     "the only list of records before a partial name (First port)");
    const char *two = "Services: a; b\nOld: x &mdash; 1\nNew: y &mdash; 2\n";
    cr_assert_str_eq(match(ENTRIES("entries", PROPS), two), "-", "two lists of records");
    cr_assert_str_eq(match("{\"type\":\"object\",\"properties\":{\"entries\":{\"type\":"
                           "\"array\",\"items\":{\"type\":\"string\"}}}}", html), "-",
                     "a plain array: never");
#undef PROPS
}

/* Compile schema into *p, scan ctx into *ls and return the list matched by array 0
 * (asserted found). */
static int scan_match(const char *schema, const char *ctx, deg_plan **p, dg_lists *ls)
{
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), p, &errs), DEG_OK, "%s", errs);
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), ls), DEG_OK);
    int m = dg_lists_match(ls, (const dg_plan *)*p, 0);
    cr_assert_geq(m, 0);
    return m;
}

/* The one cell left: a note beside timezone and coordinates reads "Comment"; with a
 * second unnamed leaf (position) none is left to either. */
Test(tables, cell_left)
{
    const char *ctx = "| Time zone | Coordinates | Comment |\n|---|---|---|\n"
                      "| Africa/Goma | -0140+02914 | east |\n";
    const char *one = OBJ("\"timezone\":{\"type\":\"string\"},\"coordinates\":"
                          "{\"type\":\"string\"},\"note\":{\"type\":\"string\"}");
    const char *two = OBJ("\"timezone\":{\"type\":\"string\"},\"position\":"
                          "{\"type\":\"string\"},\"note\":{\"type\":\"string\"}");
    for (int k = 0; k < 2; k++) {
        const char *schema = k ? two : one;
        deg_plan *p = NULL;
        dg_lists ls = {0};
        int m = scan_match(schema, ctx, &p, &ls);
        const dg_plan *P = (const dg_plan *)p;
        size_t rc[3];
        cr_assert_eq(P->arrays[0].n_fields, 3);
        dg_lists_record_cells(&ls, P, 0, ls.p[m].first, NULL, rc);
        for (size_t i = 0; i < 3; i++) {
            const dg_field_plan *f = &P->fields[P->arrays[0].first_field + i];
            const char *name = f->path.seg[f->path.n - 1];
            const char *want = !strcmp(name, "timezone")                ? "time zone"
                               : !strcmp(name, "coordinates")           ? "coordinates"
                               : k == 0 && !strcmp(name, "note")        ? "comment"
                                                                        : NULL;
            if (want) {
                cr_assert_neq(rc[i], SIZE_MAX, "%s", name);
                cr_assert_str_eq(ls.cell[rc[i]].key, want, "%s", name);
            } else {
                cr_assert_eq(rc[i], SIZE_MAX, "%s", name);
            }
        }
        /* the note's cell is read by it; with two unnamed leaves it stays unread */
        cr_assert_eq(dg_lists_cell_unread(&ls, rc, 3, ls.item_cell[ls.p[m].first] + 2), k);
        dg_lists_free(&ls);
        deg_plan_free(p);
    }
}

static const char *FILL_CTX = "Country: Congo\n"
                              "\n"
                              "Time zones\n"
                              "\n"
                              "| Time zone | Coordinates | Comment |\n"
                              "|---|---|---|\n"
                              "| Africa/Kinshasa | -0418+01518 | west |\n"
                              "| Africa/Lubumbashi | -1140+02728 | - |\n"
                              "| Africa/Goma | -0140+02914 | east |\n";

static const char *FILL_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"tz_list\":{\"type\":\"array\",\"items\":{"
    "\"type\":\"object\",\"required\":[\"timezone\"],\"properties\":{"
    "\"timezone\":{\"type\":\"string\"},\"coordinates\":{\"type\":\"string\"},"
    "\"comment\":{\"type\":[\"string\",\"null\"]},\"remark\":{\"type\":[\"string\",\"null\"]}}}}}}";

/* deg_fill of ctx and schema on tiny model TINY[mi] (a random checkpoint, seed 7,
 * anchor mode) with list_prior bonus `bonus`: the parsed response (caller decrefs). */
static json_t *fill_tiny_ex(size_t mi, const char *tag, const char *ctx, const char *schema,
                            double bonus, double null_margin)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
    snprintf(dir, sizeof dir, "%s/tables-%s-%d-%zu", DEG_BUILD_ROOT, tag, (int)getpid(), mi);
    deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
    json_t *req = json_pack("{s:s, s:o, s:{s:{s:f}}}", "context", ctx, "schema",
                            json_loads(schema, 0, NULL), "options", "list_prior", "bonus", bonus);
    if (!isnan(null_margin))
        json_object_set_new(json_object_get(req, "options"), "null_margin", json_real(null_margin));
    char *rq = json_dumps(req, 0), *out = NULL;
    json_decref(req);
    cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
    json_t *resp = json_loads(out, 0, NULL);
    cr_assert_not_null(resp);
    free(rq);
    free(out);
    deg_ckpt_free(k);
    return resp;
}

static json_t *fill_tiny(size_t mi, const char *tag, const char *ctx, const char *schema,
                         double bonus)
{
    return fill_tiny_ex(mi, tag, ctx, schema, bonus, NAN);
}

/* Each object of an array read from a table: its leaves are their own cells, an
 * empty cell is null; with the prior off the random heads give something else. */
Test(tables, fill_reads_the_cells)
{
    const char *want = "[{\"timezone\": \"Africa/Kinshasa\", \"coordinates\": \"-0418+01518\", "
                       "\"comment\": \"west\"}, {\"timezone\": \"Africa/Lubumbashi\", "
                       "\"coordinates\": \"-1140+02728\", \"comment\": null}, {\"timezone\": "
                       "\"Africa/Goma\", \"coordinates\": \"-0140+02914\", \"comment\": \"east\"}]";
    json_t *gold = json_loads(want, 0, NULL);
    cr_assert_not_null(gold);
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/tables-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
        json_t *got[2];
        for (int on = 0; on < 2; on++) {
            json_t *req = json_pack("{s:s, s:o, s:{s:{s:f}}}", "context", FILL_CTX, "schema",
                                    json_loads(FILL_SCHEMA, 0, NULL), "options", "list_prior",
                                    "bonus", on ? 500.0 : 0.0);
            char *rq = json_dumps(req, 0), *out = NULL;
            json_decref(req);
            cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
            json_t *resp = json_loads(out, 0, NULL);
            got[on] = json_incref(json_object_get(json_object_get(resp, "value"), "tz_list"));
            for (size_t i = 0; on && i < json_array_size(got[on]); i++) {
                /* no column names "remark": it reads the one cell no sibling reads
                 * (Comment), or null; never a run over the row or a sibling's cell */
                json_t *o = json_array_get(got[on], i), *rm = json_object_get(o, "remark");
                cr_assert(json_is_null(rm) || json_equal(rm, json_object_get(o, "comment")),
                          "%s", json_string_value(rm));
                json_object_del(o, "remark");
            }
            if (on) {
                json_t *am = json_object_get(json_object_get(resp, "meta"), "/tz_list");
                cr_assert_str_eq(json_string_value(json_object_get(am, "list_key")), "time zones");
                cr_assert(json_is_true(json_object_get(am, "list_table")));
            }
            json_decref(resp);
            free(rq);
            free(out);
        }
        char *g = json_dumps(got[1], 0);
        cr_assert(json_equal(got[1], gold), "%s: %s", TINY[mi], g);
        free(g);
        cr_assert(!json_equal(got[0], gold), "%s: random heads alone read the table", TINY[mi]);
        json_decref(got[0]);
        json_decref(got[1]);
        deg_ckpt_free(k);
    }
    json_decref(gold);
}

/* A JSON record without a member other records write reads it as an empty cell:
 * null, never another member of the record ("region", which no property names). */
Test(tables, fill_missing_member_is_null)
{
    const char *ctx = "{\n"
                      "  \"zones\": [\n"
                      "    {\"zone\": \"Africa/Kinshasa\", \"comment\": \"west\"},\n"
                      "    {\"zone\": \"Africa/Lubumbashi\", \"region\": \"south\"},\n"
                      "    {\"zone\": \"Africa/Goma\", \"comment\": \"east\"}\n"
                      "  ]\n"
                      "}\n";
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"zones\":{\"type\":\"array\",\"items\":{"
        "\"type\":\"object\",\"required\":[\"zone\"],\"properties\":{"
        "\"zone\":{\"type\":\"string\"},\"comment\":{\"type\":[\"string\",\"null\"]}}}}}}";
    const char *want = "[{\"zone\": \"Africa/Kinshasa\", \"comment\": \"west\"}, {\"zone\": "
                       "\"Africa/Lubumbashi\", \"comment\": null}, {\"zone\": \"Africa/Goma\", "
                       "\"comment\": \"east\"}]";
    json_t *gold = json_loads(want, 0, NULL);
    cr_assert_not_null(gold);
    /* the scan: record 2's comment is missing, not a cell left to read */
    deg_plan *p = NULL;
    dg_lists ls = {0};
    int m = scan_match(schema, ctx, &p, &ls);
    const dg_plan *P = (const dg_plan *)p;
    unsigned char named[2];
    size_t rc[2], rc0[2];
    dg_lists_columns_named(&ls, P, 0, (size_t)m, named);
    cr_assert(named[0] && named[1]);
    dg_lists_record_cells(&ls, P, 0, ls.p[m].first + 1, named, rc);
    dg_lists_record_cells(&ls, P, 0, ls.p[m].first + 1, NULL, rc0);
    size_t ci = P->fields[P->arrays[0].first_field].path.seg[2][0] == 'c' ? 0 : 1;
    cr_assert_eq(rc[ci], DG_CELL_MISSING);
    cr_assert_str_eq(ls.cell[rc0[ci]].key, "region", "without the table's columns: the one left");
    dg_lists_free(&ls);
    deg_plan_free(p);
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny(mi, "missing", ctx, schema, 500.0);
        json_t *got = json_object_get(json_object_get(resp, "value"), "zones");
        char *g = json_dumps(got, 0);
        cr_assert(json_equal(got, gold), "%s: %s", TINY[mi], g);
        free(g);
        json_decref(resp);
    }
    json_decref(gold);
}

/* A headerless TSV paragraph on the tiny random models: the array takes the table
 * (meta list_table, key "") and has one object per row, and each value is one whole
 * cell of its row (a value is a cell: no part of one, no run over two). */
Test(tables, fill_headerless_rows)
{
    const char *ctx = "Country: Chile\n\nCL\t-3327-07040\tAmerica/Santiago\tmost of Chile\n"
                      "CL\t-4534-07204\tAmerica/Coyhaique\tAysen Region\n"
                      "CL\t-2709-10926\tPacific/Easter\tEaster Island\n";
    const char *schema = "{\"type\":\"object\",\"properties\":{\"zones\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":"
                         "\"string\"},\"position\":{\"type\":[\"string\",\"null\"]}},"
                         "\"required\":[\"zone\"]}}}}";
    const char *cells[] = {"CL", "-3327-07040", "America/Santiago", "most of Chile",
                           "-4534-07204", "America/Coyhaique", "Aysen Region",
                           "-2709-10926", "Pacific/Easter", "Easter Island"};
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny(mi, "tsv", ctx, schema, 500.0);
        json_t *zones = json_object_get(json_object_get(resp, "value"), "zones");
        json_t *am = json_object_get(json_object_get(resp, "meta"), "/zones");
        cr_assert(json_is_true(json_object_get(am, "list_table")), "%s", TINY[mi]);
        cr_assert_str_eq(json_string_value(json_object_get(am, "list_key")), "");
        cr_assert_eq(json_array_size(zones), 3, "%s: one object per row", TINY[mi]);
        for (size_t i = 0; i < 3; i++) {
            json_t *o = json_array_get(zones, i);
            const char *keys[] = {"zone", "position"};
            for (size_t j = 0; j < 2; j++) {
                const char *v = json_string_value(json_object_get(o, keys[j]));
                int cell = v == NULL;
                for (size_t c = 0; v && c < sizeof cells / sizeof cells[0]; c++)
                    cell |= strcmp(v, cells[c]) == 0;
                cr_assert(cell, "%s: %s is no whole cell", TINY[mi], v);
            }
        }
        json_decref(resp);
    }
}

/* Aligned columns read on the tiny random models (lib/deg/fill_columns.c): each
 * property reads one column in every record - the same column on every row, never
 * two properties the same one - the required name before the optional ones, an
 * integer a column of numbers; a record without the column reads null. */
Test(tables, fill_one_column_per_property)
{
    const char *ctx = "ftp             21/tcp\n"
                      "ssh             22/tcp\t\tsecure-shell\n"
                      "telnet          23/tcp\n"
                      "smtp            25/tcp\t\tmail\n";
    const char *schema = "{\"type\":\"object\",\"properties\":{\"services\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\",\"properties\":{"
                         "\"alias\":{\"type\":[\"string\",\"null\"]},"
                         "\"port\":{\"type\":\"integer\"},"
                         "\"proto\":{\"type\":[\"string\",\"null\"]},"
                         "\"name\":{\"type\":\"string\"}},\"required\":[\"name\",\"port\"]}}}}";
    const char *rows[4][4] = {{"ftp", "21", "tcp", NULL},
                              {"ssh", "22", "tcp", "secure-shell"},
                              {"telnet", "23", "tcp", NULL},
                              {"smtp", "25", "tcp", "mail"}};
    const char *keys[] = {"name", "port", "proto", "alias"};
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny(mi, "aligned", ctx, schema, 500.0);
        json_t *sv = json_object_get(json_object_get(resp, "value"), "services");
        char *g = json_dumps(sv, JSON_SORT_KEYS);
        cr_assert_eq(json_array_size(sv), 4, "%s: %s", TINY[mi], g);
        int col[4] = {-1, -1, -1, -1}; /* the column each key reads, from row 1 (all written) */
        for (size_t k = 0; k < 4; k++) {
            json_t *v = json_object_get(json_array_get(sv, 1), keys[k]);
            char buf[32];
            const char *t = json_is_integer(v) ? (snprintf(buf, sizeof buf, "%lld",
                                                           (long long)json_integer_value(v)), buf)
                                               : json_string_value(v);
            for (int c = 0; t && c < 4; c++)
                if (strcmp(t, rows[1][c]) == 0) col[k] = c;
        }
        cr_assert_eq(col[1], 1, "%s: the port reads the number column: %s", TINY[mi], g);
        cr_assert_eq(col[0] >= 0, 1, "%s: the name reads a column: %s", TINY[mi], g);
        for (size_t a = 0; a < 4; a++)
            for (size_t b = a + 1; b < 4; b++)
                cr_assert(col[a] < 0 || col[a] != col[b], "%s: one column each: %s", TINY[mi], g);
        for (size_t i = 0; i < 4; i++)
            for (size_t k = 0; k < 4; k++) {
                json_t *v = json_object_get(json_array_get(sv, i), keys[k]);
                if (col[k] < 0) {
                    cr_assert(!v || json_is_null(v), "%s: %s has no column: %s", TINY[mi],
                              keys[k], g);
                    continue;
                }
                const char *want = rows[i][col[k]];
                if (k == 1) {
                    cr_assert_eq(json_integer_value(v), atoll(want), "%s: %s", TINY[mi], g);
                } else if (!want) {
                    cr_assert(!v || json_is_null(v), "%s: row %zu lacks the column: %s",
                              TINY[mi], i, g);
                } else {
                    cr_assert_str_eq(json_string_value(v), want, "%s: row %zu %s: %s", TINY[mi],
                                     i, keys[k], g);
                }
            }
        free(g);
        json_decref(resp);
    }
}

/* A list of records' lead part (fill_columns.c lead_part): the item's one required plain
 * string reads each item's first part without a key, whatever the random heads' pooled
 * weights say (without the rule both tiny models put `name` on another column). */
Test(tables, fill_list_lead_is_the_name)
{
    const char *ctx = "Services:\n- alpha | 21 | tcp | x\n- beta | 123 | udp | y\n"
                      "- gamma | 22 | tcp | z\n";
    const char *schema = "{\"type\":\"object\",\"properties\":{\"services\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\",\"properties\":{"
                         "\"proto\":{\"type\":[\"string\",\"null\"]},"
                         "\"port\":{\"type\":[\"integer\",\"null\"]},"
                         "\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}}}}";
    const char *lead[3] = {"alpha", "beta", "gamma"};
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny(mi, "lead", ctx, schema, 500.0);
        json_t *sv = json_object_get(json_object_get(resp, "value"), "services");
        char *g = json_dumps(sv, JSON_SORT_KEYS);
        cr_assert_eq(json_array_size(sv), 3, "%s: %s", TINY[mi], g);
        for (size_t i = 0; i < 3; i++)
            cr_assert_str_eq(json_string_value(json_object_get(json_array_get(sv, i), "name")),
                             lead[i], "%s: %s", TINY[mi], g);
        json_t *lc = json_object_get(json_object_get(json_object_get(resp, "meta"), "/services"),
                                     "list_columns");
        cr_assert_eq(json_integer_value(json_object_get(lc, "name")), 0, "%s", TINY[mi]);
        free(g);
        json_decref(resp);
    }
}

/* Numbered INI sections read on the tiny random models: the properties a key names
 * read its cells ("port", "protocol"), and the two no key names (name, alias) take the
 * free columns, one each, the same in every record (meta list_columns): the required
 * name the one every record writes. */
Test(tables, fill_ini_sections_free_columns)
{
    const char *ctx = "[services]\nfirst = x11-1\n\n"
                      "[services.1]\nservice = x11-1\nport = 6001\nprotocol = tcp\n\n"
                      "[services.2]\nservice = x11-2\nport = 6002\nprotocol = udp\nnick = xb\n\n"
                      "[services.3]\nservice = x11-3\nport = 6003\nprotocol = tcp\n";
    const char *schema = "{\"type\":\"object\",\"properties\":{\"entries\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\",\"properties\":{"
                         "\"alias\":{\"type\":[\"string\",\"null\"]},"
                         "\"port\":{\"type\":\"integer\"},"
                         "\"protocol\":{\"type\":\"string\"},"
                         "\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}}}}";
    const char *want = "[{\"name\": \"x11-1\", \"port\": 6001, \"protocol\": \"tcp\"}, "
                       "{\"name\": \"x11-2\", \"port\": 6002, \"protocol\": \"udp\", \"alias\": \"xb\"}, "
                       "{\"name\": \"x11-3\", \"port\": 6003, \"protocol\": \"tcp\"}]";
    json_t *gold = json_loads(want, 0, NULL);
    cr_assert_not_null(gold);
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny(mi, "ini", ctx, schema, 500.0);
        json_t *got = json_object_get(json_object_get(resp, "value"), "entries");
        json_t *am = json_object_get(json_object_get(resp, "meta"), "/entries");
        char *g = json_dumps(got, JSON_SORT_KEYS);
        /* an alias read as null is the value left out (not required) */
        for (size_t i = 0; i < json_array_size(got); i++) {
            json_t *o = json_array_get(got, i);
            if (json_is_null(json_object_get(o, "alias"))) json_object_del(o, "alias");
        }
        cr_assert(json_equal(got, gold), "%s: %s", TINY[mi], g);
        cr_assert_str_eq(json_string_value(json_object_get(am, "list_key")), "services");
        json_t *lc = json_object_get(am, "list_columns");
        cr_assert_str_eq(json_string_value(json_object_get(lc, "name")), "service", "%s", TINY[mi]);
        cr_assert_str_eq(json_string_value(json_object_get(lc, "alias")), "nick", "%s", TINY[mi]);
        cr_assert_null(json_object_get(lc, "port"), "a named property is not free");
        free(g);
        json_decref(resp);
    }
    json_decref(gold);
}

/* A field outside the table reads inside one cell of a headerless row or nothing of
 * it: never a run over a column gap (null margin -1000: the best valid span is taken;
 * without the rule tiny-llama reads across cells). */
Test(tables, fill_scalar_reads_whole_cells)
{
    const char *ctx = "ftp             21/tcp\n"
                      "ssh             22/tcp\t\tsecure-shell\n"
                      "telnet          23/tcp\n";
    const char *cells[] = {"ftp", "21", "tcp", "ssh", "22", "secure-shell", "telnet", "23"};
    const char *schema = "{\"type\":\"object\",\"properties\":{\"first\":{\"type\":[\"string\","
                         "\"null\"]},\"second\":{\"type\":[\"string\",\"null\"]},\"alias\":"
                         "{\"type\":[\"string\",\"null\"]},\"list\":{\"type\":\"array\",\"items\":"
                         "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\"}}}}}}";
    for (size_t mi = 0; mi < 2; mi++) {
        json_t *resp = fill_tiny_ex(mi, "scalar", ctx, schema, 500.0, -1000.0);
        json_t *v = json_object_get(resp, "value");
        const char *keys[] = {"first", "second", "alias"};
        for (size_t k = 0; k < 3; k++) {
            const char *t = json_string_value(json_object_get(v, keys[k]));
            int cell = t == NULL;
            for (size_t c = 0; t && c < sizeof cells / sizeof cells[0]; c++)
                cell |= strstr(cells[c], t) != NULL;
            cr_assert(cell, "%s: %s = \"%s\" is in no cell", TINY[mi], keys[k], t);
        }
        json_decref(resp);
    }
}
