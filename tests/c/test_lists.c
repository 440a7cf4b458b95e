/* The list prior (lib/deg/lists.c): lists under a key (bullets, delimited values,
 * repeated keys) with code point offsets, matching an array field by name, the
 * deg.json / options validation, and deg_fill on the tiny random models, where
 * the prior must give every list item verbatim (random heads alone do not). */
#include <criterion/criterion.h>
#include <jansson.h>
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

/* cpb[i] = the byte of ctx's code point i (cpb[n] = its length; at most 1023). */
static void cp_bytes(const char *ctx, size_t *cpb)
{
    size_t n = 0;
    for (size_t b = 0; ctx[b]; b++)
        if (((unsigned char)ctx[b] & 0xC0) != 0x80) cpb[n++] = b;
    cpb[n] = strlen(ctx);
}

/* The items of list `key` joined by '|', sliced from ctx by code points. */
static const char *items(const dg_lists *ls, const char *ctx, const char *key)
{
    static char out[1024];
    size_t cpb[1024];
    cp_bytes(ctx, cpb);
    for (size_t i = 0; i < ls->n; i++) {
        if (strcmp(ls->p[i].key, key) != 0) continue;
        size_t o = 0;
        for (size_t j = 0; j < ls->p[i].n; j++) {
            const size_t *it = ls->item + 2 * (ls->p[i].first + j);
            size_t b0 = cpb[it[0]], b1 = cpb[it[1]];
            o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s", j ? "|" : "", (int)(b1 - b0),
                                  ctx + b0);
        }
        return out;
    }
    return NULL;
}

Test(lists, scan)
{
    const char *ctx = "template: tzdata/Zones/Indian\n"
                      "choices:\n"
                      "  - Antananarivo\n"
                      "  - Réunion\n"
                      "  * \"Mahé\"  \n"
                      "question: Time zone\n"
                      "MimeType=text/plain;text/x-c;\n"
                      "Keywords: Text, editor , ,\n"
                      "Format: HTML\n"
                      "Files: /usr/share/doc/a.html\n"
                      "\n"
                      "Format: PDF\n"
                      "Steps:\n"
                      "1. unpack\n"
                      "2) build it\n"
                      "3.no space: not a bullet\n"
                      "Empty:\n"
                      "no bullets below\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "choices"), "Antananarivo|R\xc3\xa9union|Mah\xc3\xa9");
    cr_assert_str_eq(items(&ls, ctx, "template"), "tzdata/Zones/Indian");
    cr_assert_str_eq(items(&ls, ctx, "mime type"), "text/plain|text/x-c");
    cr_assert_str_eq(items(&ls, ctx, "keywords"), "Text|editor");
    cr_assert_str_eq(items(&ls, ctx, "format"), "HTML|PDF", "repeated keys are one list");
    cr_assert_str_eq(items(&ls, ctx, "steps"), "unpack|build it");
    cr_assert_null(items(&ls, ctx, "empty"), "an empty key without bullets is no list");
    cr_assert_eq(ls.n, 8, "got %zu lists", ls.n);
    dg_lists_free(&ls);
    cr_assert_null(ls.p);
}

/* Bullets under a heading ("## Dependencies", a caption line as tables read
 * them, blank lines between) and under an empty key line with blank lines before
 * and between them; bullets without a heading are no list; "key: value" or
 * "(= x)" bullets are items (the new-user check of 0.15.0 found "- libcurl4 (=
 * 7.88.1)" cut the list), but a bullet opening a YAML record ends a heading's
 * run (records are tables); a bullet after the run's end starts none. */
Test(lists, scan_bullets_under_headings)
{
    const char *ctx = "# mytool\n"
                      "\n"
                      "## Dependencies\n"
                      "\n"
                      "- libfoo (>= 1.2)\n"
                      "- libcurl4 (= 7.88.1)\n"
                      "- **apt-get**: retrieval of packages\n"
                      "- python3-bar\n"
                      "\n"
                      "* baz-utils\n"
                      "\n"
                      "Some prose in between, a sentence.\n"
                      "- stray item\n"
                      "Authors:\n"
                      "\n"
                      "  - Ana Kowalski\n"
                      "\n"
                      "  - Bo Chen\n"
                      "Supported platforms\n"
                      "1. Linux\n"
                      "2. FreeBSD\n"
                      "\n"
                      "### Records\n"
                      "- name: a\n"
                      "  tz: b\n"
                      "- plain after a record\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "dependencies"),
                     "libfoo (>= 1.2)|libcurl4 (= 7.88.1)|**apt-get**: retrieval of "
                     "packages|python3-bar|baz-utils",
                     "a key: value bullet without a record's next line is an item");
    cr_assert_str_eq(items(&ls, ctx, "authors"), "Ana Kowalski|Bo Chen");
    cr_assert_str_eq(items(&ls, ctx, "supported platforms"), "Linux|FreeBSD");
    cr_assert_null(items(&ls, ctx, "some prose in between sentence"));
    cr_assert_null(items(&ls, ctx, "records"), "a YAML record's bullet is no item");
    /* the record bullet is a key line ("name": a) as before */
    cr_assert_str_eq(items(&ls, ctx, "name"), "a");
    for (size_t i = 0; i < ls.n; i++)
        for (size_t j = 0; j < ls.p[i].n; j++) {
            const size_t *it = ls.item + 2 * (ls.p[i].first + j);
            cr_assert(it[1] - it[0] != strlen("stray item") || strncmp(ctx + it[0], "stray", 5),
                      "a bullet under prose is no item");
        }
    dg_lists_free(&ls);
}

/* The cells of item j of list `key`: "column=value" joined by '|' (code points
 * sliced from ctx), "" when the item has none. */
static const char *cells(const dg_lists *ls, const char *ctx, const char *key, size_t j)
{
    static char out[1024];
    size_t cpb[1024], o = 0;
    cp_bytes(ctx, cpb);
    out[0] = 0;
    for (size_t i = 0; i < ls->n; i++) {
        if (strcmp(ls->p[i].key, key) != 0) continue;
        size_t it = ls->p[i].first + j;
        for (size_t c = ls->item_cell[it]; c < ls->item_cell[it + 1]; c++) {
            const dg_cell *x = &ls->cell[c];
            o += (size_t)snprintf(out + o, sizeof out - o, "%s%s=%.*s", o ? "|" : "", x->key,
                                  (int)(cpb[x->c1] - cpb[x->c0]), ctx + cpb[x->c0]);
        }
        return out;
    }
    return NULL;
}

/* Lines indented under an empty key line are its items (libdeg 0.16.0; the
 * datagen-v2 test split's "Signature:" and "Time zones:" blocks were no list), up
 * to a blank or less indented line; indented key lines are a nested mapping, no
 * list. An item's parts ("; ", a spaced dash or &mdash;, " | ") are its cells,
 * "Key: value" parts under their key. */
Test(lists, scan_indented_lines_and_item_parts)
{
    const char *ctx = "Signature:\n"
                      "  files; Default: None\n"
                      "  backup\n"
                      "  mode; Default: r\n"
                      "Variadic: false\n"
                      "build:\n"
                      "  os: linux\n"
                      "  dist: jammy\n"
                      "Time zones:\n"
                      "\tAsia/Amman; Coordinates: +3157+03556\n"
                      "\n"
                      "\tnot an item\n"
                      "Zones:\n"
                      "  Australia/Brisbane \xe2\x80\x93 Coordinates: -2728+15302\n"
                      "  Australia/Perth | Coordinates: -3157+11551\n"
                      "<tr><th>Zonas</th><td><ol><li>Africa/Casablanca &mdash; +3339-00735</li>"
                      "<li>Europe/Paris \xe2\x80\x94 +4852+00220 | CET</li></ol></td></tr>\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "signature"), "files; Default: None|backup|mode; Default: r");
    cr_assert_str_eq(cells(&ls, ctx, "signature", 0), "=files|default=None");
    cr_assert_str_eq(cells(&ls, ctx, "signature", 1), "", "one part: no cells");
    cr_assert_str_eq(cells(&ls, ctx, "signature", 2), "=mode|default=r");
    cr_assert_str_eq(items(&ls, ctx, "variadic"), "false");
    cr_assert_null(items(&ls, ctx, "build"), "a nested mapping is no list");
    cr_assert_str_eq(items(&ls, ctx, "os"), "linux", "its lines stay key lines");
    cr_assert_str_eq(items(&ls, ctx, "time zones"), "Asia/Amman; Coordinates: +3157+03556",
                     "a blank line ends the run");
    cr_assert_str_eq(cells(&ls, ctx, "time zones", 0), "=Asia/Amman|coordinates=+3157+03556");
    /* a line of parts is an item though its first part reads as a key (new-user check) */
    cr_assert_str_eq(items(&ls, ctx, "zones"), "Australia/Brisbane \xe2\x80\x93 Coordinates: "
                     "-2728+15302|Australia/Perth | Coordinates: -3157+11551");
    cr_assert_str_eq(cells(&ls, ctx, "zones", 1), "=Australia/Perth|coordinates=-3157+11551");
    cr_assert_str_eq(cells(&ls, ctx, "zonas", 0), "=Africa/Casablanca|=+3339-00735");
    cr_assert_str_eq(cells(&ls, ctx, "zonas", 1), "=Europe/Paris|=+4852+00220|=CET");
    dg_lists_free(&ls);
}

Test(lists, scan_json_and_html)
{
    const char *ctx = "{\n"
                      "    \"name\": \"vim\",\n"
                      "    \"keys\": [\"Name\", \"Exec\", \"User\"],\n"
                      "    \"mime\": [\n"
                      "        \"text/plain\",\n"
                      "        \"text/x-c\\\"q\"\n"
                      "    ],\n"
                      "    \"after\": \"x\"\n"
                      "}\n"
                      "<tr><th>Files</th><td><ul><li>/a/b.html<li>/a/c.pdf</ul></td></tr>\n"
                      "<tr><th>Tags</th><td>one, two</td></tr>\n"
                      "<tr><th>Note</th><td><b>bold</b></td></tr>\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "keys"), "Name|Exec|User");
    cr_assert_str_eq(items(&ls, ctx, "mime"), "text/plain|text/x-c\\\"q", "over lines, escapes kept");
    cr_assert_str_eq(items(&ls, ctx, "files"), "/a/b.html|/a/c.pdf");
    cr_assert_str_eq(items(&ls, ctx, "tags"), "one|two");
    cr_assert_null(items(&ls, ctx, "note"), "markup is no list");
    cr_assert_str_eq(items(&ls, ctx, "name"), "vim", "a JSON string member is a key line");
    dg_lists_free(&ls);
}

/* XML element lines: one item each under the element's name (text, else the first
 * attribute's value, else the name); HTML's own tags are not lists. */
Test(lists, scan_xml_elements)
{
    const char *ctx = "<mime-type type=\"audio/x-flac+ogg\">\n"
                      "  <comment>Ogg FLAC audio</comment>\n"
                      "  <sub-class-of type=\"audio/ogg\"/>\n"
                      "  <alias type='audio/x-oggflac'/>\n"
                      "  <magic priority=\"80\">\n"
                      "    <match type=\"string\" value=\"OggS\" offset=\"0\"/>\n"
                      "  </magic>\n"
                      "  <glob pattern=\"*.oga\"/>\n"
                      "  <glob pattern=\"*.ogg\"/>\n"
                      "  <expanded>\n"
                      "  <p>not a list</p><br/>\n"
                      "</mime-type>\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "mime type"), "audio/x-flac+ogg");
    cr_assert_str_eq(items(&ls, ctx, "comment"), "Ogg FLAC audio");
    cr_assert_str_eq(items(&ls, ctx, "sub class"), "audio/ogg");
    cr_assert_str_eq(items(&ls, ctx, "alias"), "audio/x-oggflac");
    cr_assert_str_eq(items(&ls, ctx, "magic"), "80");
    cr_assert_str_eq(items(&ls, ctx, "match"), "string");
    cr_assert_str_eq(items(&ls, ctx, "glob"), "*.oga|*.ogg");
    cr_assert_null(items(&ls, ctx, "expanded"), "a block without a name or id child: no item");
    cr_assert_null(items(&ls, ctx, "p"));
    cr_assert_eq(ls.n, 7, "got %zu lists", ls.n);
    dg_lists_free(&ls);
}

/* A block element (a bare start tag alone on its line) is the item of its identifier
 * child: the first direct child named "...name"/"...title", else the last "...id";
 * a bare self-closing tag is still its name. A JSON object's member keys are a list
 * (nested members skipped) that only a plain array takes, and so are the keys of an INI
 * or TOML section (not of "[[x]]" or a numbered "[x.1]"). */
Test(lists, scan_xml_blocks_and_json_members)
{
    const char *ctx = "<project>\n"
                      "  <licenses>\n"
                      "    <license>\n"
                      "      <name>LGPL-2.1-or-later</name>\n"
                      "      <url>https://www.gnu.org/licenses/old-licenses/lgpl-2.1</url>\n"
                      "    </license>\n"
                      "    <license>\n"
                      "      <url>https://www.apache.org/licenses/LICENSE-2.0.txt</url>\n"
                      "      <name>Apache-2.0</name>\n"
                      "    </license>\n"
                      "  </licenses>\n"
                      "  <dependencies>\n"
                      "    <dependency>\n"
                      "      <groupId>org.codehaus.plexus</groupId>\n"
                      "      <artifactId>plexus-utils</artifactId>\n"
                      "      <exclusions>\n"
                      "        <exclusion><artifactId>inner</artifactId></exclusion>\n"
                      "      </exclusions>\n"
                      "    </dependency>\n"
                      "    <dependency>\n"
                      "      <artifactId>junit</artifactId>\n"
                      "      <scope>test</scope>\n"
                      "    </dependency>\n"
                      "  </dependencies>\n"
                      "  <developer>\n"
                      "    <id>twall</id>\n"
                      "    <name>Timothy Wall</name>\n"
                      "  </developer>\n"
                      "  <scm>\n"
                      "    <url>https://github.com/x/y</url>\n"
                      "  </scm>\n"
                      "  <flag/>\n"
                      "</project>\n"
                      "{\n"
                      "  \"dependencies\": {\n"
                      "    \"ms\": \"2.1.2\",\n"
                      "    \"weird\\\"key\": {\"nested\": 1, \"deep\": [\"x\"]},\n"
                      "    \"debug\" : \"^4\"\n"
                      "  },\n"
                      "  \"engines\": {\"node\": \">=6\"}\n"
                      "}\n";
    const char *ini = "[package]\n"
                      "name = \"x\"\n"
                      "\n"
                      "# a comment\n"
                      "version = \"0.0.0\"\n"
                      "[dependencies]\n"
                      "mdbook-driver = { version = \"0.5.1\", features = [\"search\"] }\n"
                      "serde = \"1\"\n"
                      "[[bin]]\n"
                      "name = \"y\"\n"
                      "[services]\n"
                      "count = 1\n"
                      "[services.1]\n"
                      "port = 1\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "license"), "LGPL-2.1-or-later|Apache-2.0");
    cr_assert_str_eq(items(&ls, ctx, "dependency"), "plexus-utils|junit", "the last id");
    cr_assert_str_eq(items(&ls, ctx, "developer"), "Timothy Wall", "a name before an id");
    cr_assert_null(items(&ls, ctx, "scm"));
    cr_assert_null(items(&ls, ctx, "licenses"), "no direct child names it");
    cr_assert_str_eq(items(&ls, ctx, "flag"), "flag");
    cr_assert_str_eq(items(&ls, ctx, "dependencies"), "ms|weird\\\"key|debug");
    cr_assert_str_eq(items(&ls, ctx, "engines"), "node");

    for (size_t i = 0; i < ls.n; i++)
        cr_assert_eq(ls.p[i].members, !strcmp(ls.p[i].key, "dependencies") ||
                                          !strcmp(ls.p[i].key, "engines") ? DG_MEMBERS_JSON : 0,
                     "%s", ls.p[i].key);
    dg_lists_free(&ls);
    cr_assert_eq(dg_lists_scan(ini, strlen(ini), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ini, "package"), "name|version", "an INI section's keys");
    cr_assert_str_eq(items(&ls, ini, "dependencies"), "mdbook-driver|serde");
    cr_assert_null(items(&ls, ini, "services 1"), "a numbered section is tables.c's");
    for (size_t i = 0; i < ls.n; i++) /* "[services]" over "[services.1]": the set's facts */
        cr_assert(strcmp(ls.p[i].key, "services") || ls.p[i].table, "services keys listed");
    for (size_t i = 0; i < ls.n; i++) /* [[bin]] and [services.1] are tables.c's records */
        cr_assert_eq(ls.p[i].members, !strcmp(ls.p[i].key, "dependencies") ||
                                          !strcmp(ls.p[i].key, "package") ? DG_MEMBERS_SECTION : 0,
                     "%s", ls.p[i].key);
    dg_lists_free(&ls);
}

Test(lists, scan_written_lists)
{
    /* prose: several "Key: value" sentences on a line, conjunctions of datagen's
     * languages; systemd's blank-separated identifiers; plain words stay one item */
    const char *ctx = "The type is Application. Keywords: Text and editor. The icon is gvim.\n"
                      "Extensions: txd, genozip, grd, ebuild and eclass. Types: a/b, c/d y e/f. \n"
                      "After=sysinit.target  basic.target\n"
                      "Documentation=man:x(8) https://y.org/z\n"
                      "Description=System Update\n"
                      "Requires: tcl >= 8.6\n"
                      "Note: Dem. Rep. of Congo\n"
                      "Tags: a & b\n"
                      "\"summary\": \"One. Two\",\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "keywords"), "Text|editor");
    cr_assert_str_eq(items(&ls, ctx, "extensions"), "txd|genozip|grd|ebuild|eclass");
    cr_assert_str_eq(items(&ls, ctx, "types"), "a/b|c/d|e/f", "the sentence's '.' left out");
    cr_assert_str_eq(items(&ls, ctx, "after"), "sysinit.target|basic.target");
    cr_assert_str_eq(items(&ls, ctx, "documentation"), "man:x(8)|https://y.org/z");
    cr_assert_str_eq(items(&ls, ctx, "description"), "System Update");
    cr_assert_str_eq(items(&ls, ctx, "requires"), "tcl >= 8.6", "a word part: no blank split");
    cr_assert_str_eq(items(&ls, ctx, "note"), "Dem. Rep. of Congo",
                     "\"Dem.\" is an abbreviation, no sentence end (sentences.h)");
    cr_assert_str_eq(items(&ls, ctx, "tags"), "a|b");
    cr_assert_str_eq(items(&ls, ctx, "summary"), "One. Two", "a JSON line is one sentence");
    cr_assert_null(items(&ls, ctx, "the type is application"));
    dg_lists_free(&ls);
}

/* RFC 822 folding (0.25.0): a value ending in ',' goes on over the lines indented below
 * it (a Debian source control file's Build-Depends, R's Author with its [roles]), or
 * with the comma leading the next line; a line not indented, or a folded line not ending
 * in ',', ends it; commas inside brackets split nothing. */
Test(lists, scan_folded_values)
{
    const char *ctx = "Source: hello\n"
                      "Build-Depends: debhelper-compat (= 13),\n"
                      " autoconf,\n"
                      " gettext, texinfo\n"
                      " not-folded\n"
                      "Author: Jeroen Ooms [aut, cre],\n"
                      "  Duncan Temple Lang [ctb]\n"
                      "Depends: libc6\n"
                      " , zlib1g (>= 1:1.2)\n"
                      " , libssl3\n"
                      "Suggests: a,\n"
                      "Homepage: https://x.org/\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "build depends"),
                     "debhelper-compat (= 13)|autoconf|gettext|texinfo");
    cr_assert_str_eq(items(&ls, ctx, "author"), "Jeroen Ooms [aut, cre]|Duncan Temple Lang [ctb]");
    cr_assert_str_eq(items(&ls, ctx, "depends"), "libc6|zlib1g (>= 1:1.2)|libssl3");
    cr_assert_str_eq(items(&ls, ctx, "suggests"), "a", "the next key line is not folded");
    cr_assert_str_eq(items(&ls, ctx, "homepage"), "https://x.org/");
    dg_lists_free(&ls);
}

/* Arrays written as values (0.25.0): `key = [` with quoted strings, '...' too (TOML,
 * Python), on one line or over several; an unquoted "[a, b]" is delimited without its
 * brackets; a "[link](url)" value is no array. */
Test(lists, scan_bracketed_arrays)
{
    const char *ctx = "[build-system]\n"
                      "requires = ['trampolim', \"wheel>=0.40\"]\n"
                      "dependencies = [\n"
                      "    \"requests>=2\",\n"
                      "    'numpy',\n"
                      "]\n"
                      "tags: [red, green]\n"
                      "See: [docs](https://x.org/)\n"
                      "open = ['never closed',\n"
                      "\n"
                      "Keywords: a, b\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "requires"), "trampolim|wheel>=0.40");
    cr_assert_str_eq(items(&ls, ctx, "dependencies"), "requests>=2|numpy");
    cr_assert_str_eq(items(&ls, ctx, "tags"), "red|green");
    cr_assert_str_eq(items(&ls, ctx, "see"), "[docs](https://x.org/)");
    cr_assert_str_eq(items(&ls, ctx, "open"), "never closed");
    cr_assert_str_eq(items(&ls, ctx, "keywords"), "a|b", "a blank line ends an unclosed array");
    dg_lists_free(&ls);
}

/* The list whose key names the array by the key vocabulary (keyvocab.c): the same words
 * ("Build-Depends:" for build_dependencies, "Depends:" for dependencies), never a key
 * with more words ("Depends:" with more items is no build_dependencies). */
Test(lists, match_by_the_key_vocabulary)
{
    const char *ctx = "Depends: libc6, zlib1g, libssl3\n"
                      "Build-Depends: debhelper\n"
                      "Suggests: curl\n";
    const char *want[][2] = {{"build_dependencies", "build depends"},
                             {"dependencies", "depends"},
                             {"requirements", "depends"},
                             {"suggests", "suggests"}};
    for (size_t i = 0; i < 4; i++) {
        char schema[256];
        snprintf(schema, sizeof schema,
                 "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"array\","
                 "\"items\":{\"type\":\"string\"}}}}",
                 want[i][0]);
        deg_plan *p = NULL;
        char *errs = NULL;
        cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK);
        dg_lists ls = {0};
        cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
        int m = dg_lists_match(&ls, (const dg_plan *)p, 0);
        cr_assert_geq(m, 0, "%s: no list", want[i][0]);
        cr_assert_str_eq(ls.p[m].key, want[i][1], "%s", want[i][0]);
        dg_lists_free(&ls);
        deg_plan_free(p);
    }
}

static int match(const char *schema, const char *ctx)
{
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK, "%s",
                 errs ? errs : deg_errmsg());
    const dg_plan *P = (const dg_plan *)p;
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_geq(P->n_arrays, 1); /* array 0: the top-level one */
    int m = dg_lists_match(&ls, P, 0);
    const char *key = m >= 0 ? ls.p[m].key : NULL;
    int r = key && !strcmp(key, "format") ? 1 : key && !strcmp(key, "files") ? 2 : m >= 0 ? 3 : 0;
    dg_lists_free(&ls);
    deg_plan_free(p);
    return r;
}

Test(lists, match)
{
    const char *ctx = "Format: HTML\nFiles: a.html\nFormat: PDF\nFiles: b.pdf\n";
    /* plural folded; by title; partial */
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"formats\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"string\"}}}}", ctx), 1);
    /* a JSON object's member keys: a plain array's list, no object array's */
    const char *members = "{\n  \"dependencies\": {\"ms\": \"2.1.2\", \"debug\": \"^4\"}\n}";
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"dependencies\":{\"type\":"
                       "\"array\",\"items\":{\"type\":\"string\"}}}}", members), 3);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"dependencies\":{\"type\":"
                       "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":"
                       "{\"type\":\"string\"},\"version\":{\"type\":\"string\"}}}}}}", members), 0);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"dependency_names\":{\"type\":"
                       "\"array\",\"items\":{\"type\":\"string\"}}}}", members), 0,
                 "keys alone need an exact name");
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"title\":\"Files\",\"items\":{\"type\":\"string\"}}}}", ctx), 2);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"file_patterns\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"string\"}}}}", ctx), 2);
    /* the description names the key; an exact name still wins over it */
    const char *desc = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"description\":\"the %s (Files)\",\"items\":{\"type\":\"string\"}}}}";
    char sch[512];
    snprintf(sch, sizeof sch, desc, "file names");
    cr_assert_eq(match(sch, ctx), 2);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"format\":{\"type\":\"array\","
                       "\"description\":\"(Files)\",\"items\":{\"type\":\"string\"}}}}", ctx), 1);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"description\":\"the filesystems\",\"items\":{\"type\":\"string\"}}}}",
                       ctx), 0, "whole words only");
    /* the leading noun phrase names a key; words after a preposition or possessives do not */
    const char *ctx3 = "Language: Tsonga\nDocumentation: man:a(1) man:b(5)\nCountry: Jordan\n";
    const char *lead = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"description\":\"%s\",\"items\":{\"type\":\"string\"}}}}";
    snprintf(sch, sizeof sch, lead, "documentation references, in order");
    cr_assert_eq(match(sch, ctx3), 3);
    snprintf(sch, sizeof sch, lead, "the months in the locale's language, in order");
    cr_assert_eq(match(sch, ctx3), 0);
    snprintf(sch, sizeof sch, lead, "the country's time zones");
    cr_assert_eq(match(sch, ctx3), 0);
    /* only a parenthesised or quoted key: loose words of a description name no list */
    const char *ctx2 = "Country: Jordan\nTime zones: Asia/Amman\n";
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"description\":\"the country's 'zones'\",\"items\":{\"type\":"
                       "\"string\"}}}}", ctx2), 0);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\","
                       "\"description\":\"the country's \\\"time zones\\\"\",\"items\":{\"type\":"
                       "\"string\"}}}}", ctx2), 3);
    /* partial names tie: the one the description names too wins ("Zones", the
     * country's time zones, is the list under "Time zones:", not "Several zones:") */
    const char *ctx4 = "Several zones: No\nTime zones: Asia/Amman\nFiles: a\n";
    const char *zones = "{\"type\":\"object\",\"properties\":{\"Zones\":{\"type\":\"array\","
                        "%s\"items\":{\"type\":\"string\"}}}}";
    deg_plan *pz = NULL;
    for (int d = 0; d < 2; d++) {
        snprintf(sch, sizeof sch, zones, d ? "\"description\":\"the country's time zones\"," : "");
        cr_assert_eq(deg_plan_compile(sch, strlen(sch), &pz, NULL), DEG_OK, "%s", deg_errmsg());
        dg_lists lz = {0};
        cr_assert_eq(dg_lists_scan(ctx4, strlen(ctx4), &lz), DEG_OK);
        int m = dg_lists_match(&lz, (const dg_plan *)pz, 0);
        cr_assert_geq(m, 0);
        cr_assert_str_eq(lz.p[m].key, d ? "time zones" : "several zones",
                         "without the description the first of equal lists");
        dg_lists_free(&lz);
        deg_plan_free(pz);
    }
    /* objects with a string leaf match; not with a nested array or no string leaf */
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"object\",\"properties\":{\"path\":"
                       "{\"type\":\"string\"},\"big\":{\"type\":\"boolean\"}}}}}}", ctx), 2);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"object\",\"properties\":{\"big\":"
                       "{\"type\":\"boolean\"}}}}}}", ctx), 0);
    /* no match: other name; items typed, patterned; nested arrays */
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"authors\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"string\"}}}}", ctx), 0);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"string\",\"format\":\"uri\"}}}}", ctx), 0);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"string\",\"pattern\":\"a\"}}}}", ctx), 0);
    cr_assert_eq(match("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"object\",\"properties\":{\"name\":"
                       "{\"type\":\"string\"},\"parts\":{\"type\":\"array\",\"items\":"
                       "{\"type\":\"string\"}}}}}}}", ctx), 0);
}

static const char *CTX = "name: tzdata\n"
                         "choices:\n"
                         "  - Antananarivo\n"
                         "  - Chagos\n"
                         "  - Christmas\n"
                         "  - Cocos\n"
                         "  - Comoro\n"
                         "question: Time zone\n"
                         "keywords: alpha; beta gamma; delta\n";

static const char *SCHEMA =
    "{\"type\":\"object\",\"required\":[\"choices\"],\"properties\":{"
    "\"choices\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"keywords\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":\"string\"}},"
    "\"question\":{\"type\":\"string\"}}}";

static json_t *fill(deg_ckpt *k, const char *options)
{
    return tu_fill(k, CTX, SCHEMA, options);
}

/* A short document (index mode by anchor_min_tokens) whose "choices:" list is
 * named by the array: with the prior the array is anchored on the list and a
 * large bonus puts each item's text in its fork; maxItems keeps the first two;
 * without the prior the random heads do not give the list (so the test can fail);
 * options.list_prior turns it on, {"bonus": 0} off, null keeps the checkpoint's. */
Test(lists, fill_reads_the_list)
{
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/lists-fill-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k0 = tu_random_ckpt(model, 7, dir, "anchor", 10000);
        json_t *r0 = fill(k0, NULL);
        json_t *r0on = fill(k0, "{\"list_prior\": {\"bonus\": 500}}");
        deg_ckpt_free(k0);
        tu_set_meta(dir, "list_prior", json_pack("{s:f}", "bonus", 500.0));
        deg_ckpt *k = NULL;
        cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
        json_t *r = fill(k, NULL);
        json_t *v = json_object_get(r, "value");
        cr_assert_str_eq(tu_joined(json_object_get(v, "choices")),
                         "Antananarivo|Chagos|Christmas|Cocos|Comoro");
        cr_assert_str_eq(tu_joined(json_object_get(v, "keywords")), "alpha|beta gamma");
        json_t *am = json_object_get(json_object_get(r, "meta"), "/choices");
        cr_assert_str_eq(json_string_value(json_object_get(am, "list_key")), "choices");
        cr_assert_eq(json_array_size(json_object_get(am, "anchors")), 5);
        /* the anchor token holds the item's first letter (and maybe the space before it) */
        json_int_t a1 = json_integer_value(json_array_get(json_object_get(am, "anchors"), 1));
        json_int_t c1 = (json_int_t)(strstr(CTX, "Chagos") - CTX);
        cr_assert(a1 <= c1 && a1 > c1 - 3, "anchor %lld, item at %lld", (long long)a1,
                  (long long)c1);
        /* the request option gives the same on the checkpoint without it */
        cr_assert(json_equal(json_object_get(r0on, "value"), v));
        json_t *v0 = json_object_get(r0, "value");
        cr_assert(!json_equal(json_object_get(v0, "choices"), json_object_get(v, "choices")),
                  "random heads alone gave the list");
        json_t *roff = fill(k, "{\"list_prior\": {\"bonus\": 0}}");
        cr_assert(json_equal(json_object_get(roff, "value"), v0), "bonus 0 = off");
        json_t *rnull = fill(k, "{\"list_prior\": null}");
        cr_assert(json_equal(json_object_get(rnull, "value"), v), "null = the checkpoint's");
        json_decref(roff);
        json_decref(rnull);
        json_decref(r);
        json_decref(r0);
        json_decref(r0on);
        deg_ckpt_free(k);
    }
}

/* An array of objects named like a list's key is anchored on its items (one
 * object per "Speaker:" sentence), each object's leaves read inside its item's
 * region; without the prior the random heads give another count. */
Test(lists, fill_anchors_objects_on_the_list)
{
    const char *ctx = "Join us in Krakow. Speaker: Ana Lima (ana@x.org). Speaker: Bo Chen. "
                      "Speaker: Cy Diaz. Speaker: Di Eze. Details: none\n";
    const char *schema = "{\"type\":\"object\",\"properties\":{\"speakers\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
                         "\"string\"},\"email\":{\"type\":[\"string\",\"null\"],\"format\":"
                         "\"email\"}},\"required\":[\"name\"]}}}}";
    for (size_t mi = 0; mi < 2; mi++) {
        char model[512], dir[512];
        snprintf(model, sizeof model, "%s/%s", GOLDENS, TINY[mi]);
        snprintf(dir, sizeof dir, "%s/lists-obj-%d-%zu", DEG_BUILD_ROOT, (int)getpid(), mi);
        deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
        size_t n[2];
        json_t *am = NULL;
        for (int on = 0; on < 2; on++) {
            json_t *req = json_pack("{s:s, s:o, s:{s:{s:f}}}", "context", ctx, "schema",
                                    json_loads(schema, 0, NULL), "options", "list_prior",
                                    "bonus", on ? 500.0 : 0.0);
            char *rq = json_dumps(req, 0), *out = NULL;
            json_decref(req);
            cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
            json_t *resp = json_loads(out, 0, NULL);
            n[on] = json_array_size(json_object_get(json_object_get(resp, "value"), "speakers"));
            if (on) am = json_incref(json_object_get(json_object_get(resp, "meta"), "/speakers"));
            json_decref(resp);
            free(rq);
            free(out);
        }
        cr_assert_eq(n[1], 4, "%s: %zu objects", TINY[mi], n[1]);
        cr_assert_neq(n[0], 4, "%s: random heads alone gave the list's count", TINY[mi]);
        cr_assert_str_eq(json_string_value(json_object_get(am, "list_key")), "speaker");
        json_int_t a1 = json_integer_value(json_array_get(json_object_get(am, "anchors"), 1));
        json_int_t c1 = (json_int_t)(strstr(ctx, "Bo Chen") - ctx);
        cr_assert(a1 <= c1 && a1 > c1 - 3, "anchor %lld, item at %lld", (long long)a1,
                  (long long)c1);
        json_decref(am);
        deg_ckpt_free(k);
    }
}

/* Items of an array, with a request's options.null_margin (nats). */
static json_t *fill_margin(deg_ckpt *k, double margin)
{
    char opt[64];
    snprintf(opt, sizeof opt, "{\"null_margin\": %g}", margin);
    return fill(k, opt);
}

/* deg.json "item_null": an item whose leaf the null head rejects by the null
 * margin is dropped ("dropped" in the array's meta); a margin no span can pass
 * drops every item; without the flag the same margin keeps them (so the test
 * can fail); margin -1e9 keeps them with it; a bad value is a FormatError; the
 * flag survives a save. */
Test(lists, item_null_drops_items_the_null_head_rejects)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/lists-itemnull-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k0 = tu_random_ckpt(model, 7, dir, NULL, -1);
    json_t *r0 = fill_margin(k0, 1e9);
    size_t n0 = json_array_size(json_object_get(json_object_get(r0, "value"), "choices"));
    cr_assert_gt(n0, 0, "the count head gives items");
    deg_ckpt_free(k0);
    json_decref(r0);
    tu_set_meta(dir, "item_null", json_integer(1));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_ERR_FORMAT);
    cr_assert(strstr(deg_errmsg(), "item_null"), "%s", deg_errmsg());
    tu_set_meta(dir, "item_null", json_true());
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *r = fill_margin(k, 1e9);
    json_t *am = json_object_get(json_object_get(r, "meta"), "/choices");
    cr_assert_eq(json_array_size(json_object_get(json_object_get(r, "value"), "choices")), 0);
    cr_assert_eq(json_integer_value(json_object_get(am, "dropped")), (json_int_t)n0);
    json_t *rk = fill_margin(k, -1e9);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(rk, "value"), "choices")), n0);
    json_t *meta = tu_saved_meta(k, dir);
    cr_assert(json_is_true(json_object_get(meta, "item_null")));
    json_decref(meta);
    json_decref(r);
    json_decref(rk);
    deg_ckpt_free(k);
}

Test(lists, deg_json_and_options_validation)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/lists-bad-%d", DEG_BUILD_ROOT, (int)getpid());
    cr_assert_eq(deg_ckpt_create_random(model, 3, dir), DEG_OK, "%s", deg_errmsg());
    const char *bad[] = {"{\"bonus\": -1}", "{\"start\": 1}", "[1]", "{\"bonus\": \"x\"}",
                         "{\"bonus\": 1, \"other\": 2}", "{\"bonus\": 1, \"by_anchor\": 1}",
                         "{\"bonus\": 1e39}", "{\"bonus\": 1000001}"};
    tu_assert_meta_rejected(dir, "list_prior", bad, sizeof bad / sizeof bad[0]);
    tu_set_meta(dir, "list_prior", json_pack("{s:f}", "bonus", 6.5));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    json_t *meta = tu_saved_meta(k, dir);
    cr_assert_eq(json_real_value(json_object_get(json_object_get(meta, "list_prior"), "bonus")),
                 6.5, "survives a save");
    cr_assert(json_is_false(json_object_get(json_object_get(meta, "list_prior"), "by_anchor")));
    json_decref(meta);
    /* a bad request option is a request error naming it: negative, or past
     * DG_PRIOR_MAX (1e39 overflowed fp32 logits into a made-up span) */
    const char *bonus[] = {"-2", "1e39", "1000001"};
    for (size_t i = 0; i < 3; i++) {
        char rq[512];
        snprintf(rq, sizeof rq, "{\"context\": \"a\", \"schema\": {\"type\": \"object\", "
                 "\"properties\": {\"a\": {\"type\": \"string\"}}}, \"options\": "
                 "{\"list_prior\": {\"bonus\": %s}, \"lm_prior\": {\"start\": %s}}}", bonus[i],
                 bonus[i]);
        char *out = NULL, *errs = NULL;
        cr_assert_neq(deg_fill(k, rq, strlen(rq), &out, &errs), DEG_OK);
        cr_assert(errs && strstr(errs, "list_prior") && strstr(errs, "lm_prior") &&
                  strstr(errs, "[0, 1e+06]"), "%s", errs ? errs : "(none)");
        free(out);
        free(errs);
    }
    deg_ckpt_free(k);
}

/* dg_lists_at: the list whose item covers a token (here one token per code point). */
Test(lists, at)
{
    const char *ctx = "k: x, yy\nm:\n- zz\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    size_t cp_tok[32];
    for (size_t i = 0; i < 32; i++) cp_tok[i] = i;
    cr_assert_eq(dg_lists_at(&ls, cp_tok, 3), 0, "x");
    cr_assert_eq(dg_lists_at(&ls, cp_tok, 7), 0, "second y");
    cr_assert_eq(dg_lists_at(&ls, cp_tok, 4), -1, "the comma is no item");
    cr_assert_eq(dg_lists_at(&ls, cp_tok, 14), 1, "zz");
    cr_assert_eq(dg_lists_at(&ls, cp_tok, 0), -1, "a key is no item");
    dg_lists_free(&ls);
}

/* by_anchor: an array no key names is anchored (a short document, index mode by
 * anchor_min_tokens otherwise) so the anchor head can pick a list; without
 * by_anchor it stays in index mode. */
Test(lists, by_anchor_anchors_unnamed_arrays)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-llama", GOLDENS);
    snprintf(dir, sizeof dir, "%s/lists-probe-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
    const char *schema = "{\"type\":\"object\",\"properties\":{\"zones\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"string\"}}}}";
    const char *opts[] = {"{\"list_prior\": {\"bonus\": 5, \"by_anchor\": true}}",
                          "{\"list_prior\": {\"bonus\": 5, \"by_anchor\": false}}"};
    for (int i = 0; i < 2; i++) {
        json_t *req = json_pack("{s:s, s:o, s:o}", "context", CTX, "schema",
                                json_loads(schema, 0, NULL), "options", json_loads(opts[i], 0, NULL));
        char *rq = json_dumps(req, 0), *out = NULL;
        json_decref(req);
        cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
        json_t *resp = json_loads(out, 0, NULL);
        json_t *am = json_object_get(json_object_get(resp, "meta"), "/zones");
        const char *mode = json_string_value(json_object_get(am, "array_mode"));
        if (i == 0) cr_assert(mode && !strcmp(mode, "anchor"), "by_anchor: anchored");
        else cr_assert_null(mode, "without by_anchor: index mode");
        json_decref(resp);
        free(rq);
        free(out);
    }
    const char *rq = "{\"context\": \"a\", \"schema\": {\"type\": \"object\", \"properties\": "
                     "{\"a\": {\"type\": \"string\"}}}, \"options\": {\"list_prior\": "
                     "{\"bonus\": 1, \"by_anchor\": 1}}}";
    char *out = NULL, *errs = NULL;
    cr_assert_neq(deg_fill(k, rq, strlen(rq), &out, &errs), DEG_OK);
    cr_assert(errs && strstr(errs, "by_anchor"), "%s", errs ? errs : "(none)");
    free(out);
    free(errs);
    deg_ckpt_free(k);
}

/* uniqueItems: a list merged from repeated keys that repeats a value anchors each
 * text once (the fill would fail "items are not unique" otherwise); without
 * uniqueItems the repeat stays an item. */
Test(lists, unique_items_skip_repeats)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", GOLDENS);
    snprintf(dir, sizeof dir, "%s/lists-unique-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
    const char *ctx = "Format: HTML\nFiles: a.html\nFormat: PDF\nFiles: b.pdf\nFormat: HTML\n";
    const char *want[] = {"HTML|PDF", "HTML|PDF|HTML"};
    for (int u = 0; u < 2; u++) {
        json_t *req = json_pack("{s:s, s:{s:s, s:{s:{s:s, s:b, s:{s:s}}}}, s:{s:{s:f}}}",
                                "context", ctx, "schema", "type", "object", "properties",
                                "formats", "type", "array", "uniqueItems", u == 0, "items",
                                "type", "string", "options", "list_prior", "bonus", 500.0);
        char *rq = json_dumps(req, 0), *out = NULL;
        json_decref(req);
        cr_assert_eq(deg_fill(k, rq, strlen(rq), &out, NULL), DEG_OK, "%s", deg_errmsg());
        json_t *resp = json_loads(out, 0, NULL);
        cr_assert_str_eq(tu_joined(json_object_get(json_object_get(resp, "value"), "formats")),
                         want[u]);
        json_decref(resp);
        free(rq);
        free(out);
    }
    deg_ckpt_free(k);
}
