/* Lists of names (lib/deg/list_names.c): the name a requirement opens with, which
 * arrays ask for names, runs of requirement lines as a list, and deg_fill on a tiny
 * random model where a large list bonus puts each item's name in its fork. */
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

/* Items written as PEP 508 requirements, Debian relations, pkg-config and Go
 * requirements, and items that are no requirement (the whole item is the name). */
Test(list_names, name_end)
{
    const char *cases[][2] = {
        {"libc6 (>= 2.29)", "libc6"},
        {"zlib1g (>= 1:1.2.11.dfsg)", "zlib1g"},
        {"rsa>=4.1; python_version >= '3.5'", "rsa"},
        {"pyparsing>=2.4.2,<4, !=3.0.0", "pyparsing"},
        {"requests[socks]", "requests"},
        {"mock;python_version<\"3.3\"", "mock"},
        {"sphinx ~= 4.2, != 4.4.0", "sphinx"},
        {"python3:any", "python3"},
        {"perl:any", "perl"},
        {"debconf (>= 0.5) | debconf-2.0", "debconf"},
        {"glibc >= 2.17", "glibc"},
        {"golang.org/x/net v0.17.0", "golang.org/x/net"},
        {"libstdc++6 (>= 13)", "libstdc++6"},
        {"@npmcli/config ^8.0.0", "@npmcli/config"},
        {"jc @ git+https://github.com/x/jc", "jc"},
        /* no requirement's tail: the item as written */
        {"Flask", "Flask"},
        {"zope.interface", "zope.interface"},
        {"Jeroen Ooms [aut, cre]", "Jeroen Ooms [aut, cre]"},
        {"git+https://github.com/x/y", "git+https://github.com/x/y"},
        {"org.slf4j:slf4j-api:2.0.7", "org.slf4j:slf4j-api:2.0.7"},
        {"-e .[socks]", "-e .[socks]"},
        {"Name=Vim", "Name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i][0];
        size_t e = dg_lists_name_end(s, 0, strlen(s));
        cr_assert_eq(e, strlen(cases[i][1]), "%s: name %.*s, want %s", s, (int)e, s, cases[i][1]);
    }
}

static int names_array(const char *prop, const char *desc)
{
    char schema[512];
    snprintf(schema, sizeof schema,
             "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"array\",%s%s%s"
             "\"items\":{\"type\":\"string\"}}}}",
             prop, desc ? "\"description\":\"" : "", desc ? desc : "", desc ? "\"," : "");
    deg_plan *p = NULL;
    char *errs = NULL;
    cr_assert_eq(deg_plan_compile(schema, strlen(schema), &p, &errs), DEG_OK, "%s",
                 errs ? errs : deg_errmsg());
    int r = dg_lists_names_array((const dg_plan *)p, 0);
    deg_plan_free(p);
    return r;
}

Test(list_names, names_array)
{
    cr_assert(names_array("dependencies", "names of the required packages (Depends)"));
    cr_assert(names_array("package_names", NULL));
    cr_assert(names_array("requires", "package names, in order"));
    cr_assert_not(names_array("dependencies", NULL), "no word asks for names");
    cr_assert_not(names_array("dependencies", "the required packages"));
    cr_assert_not(names_array("renames", NULL), "a word holding \"name\" is not it");
}

/* The items of list i joined by '|' (ASCII contexts: bytes are code points). */
static const char *list_items(const dg_lists *ls, const char *ctx, size_t i)
{
    static char out[1024];
    size_t o = 0;
    out[0] = 0;
    for (size_t j = 0; j < ls->p[i].n; j++) {
        const size_t *it = ls->item + 2 * (ls->p[i].first + j);
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s", j ? "|" : "",
                              (int)(it[1] - it[0]), ctx + it[0]);
    }
    return out;
}

/* The items of the first list under `key`, or NULL. */
static const char *items(const dg_lists *ls, const char *ctx, const char *key)
{
    for (size_t i = 0; i < ls->n; i++)
        if (!strcmp(ls->p[i].key, key)) return list_items(ls, ctx, i);
    return NULL;
}

static size_t count_key(const dg_lists *ls, const char *key)
{
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++) n += !strcmp(ls->p[i].key, key);
    return n;
}

/* A requirements file's lines, comments and options between them, are a list under
 * "requirements"; a prose line ends a run, one line is none, "Key=value" and
 * "f(x)" lines are no requirements, a written "Requirements:" key keeps its own list. */
Test(list_names, requirement_runs)
{
    const char *ctx = "# Unit test requirements\n"
                      "-r base.txt\n"
                      "requests>=1.2.3,<=2.0.1\n"
                      "rsa>=4.1; python_version >= '3.5'  \n"
                      "\n"
                      "# Async\n"
                      "cryptography < 39.0.0\n"
                      "six # pinned elsewhere\n"
                      "jc @ git+https://github.com/x/jc\n"
                      "This line is prose.\n"
                      "lonely>=1\n"
                      "Name=Vim\n"
                      "Exec=vim\n"
                      "main()\n"
                      "exit(0)\n"
                      "Requirements: numpy\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_eq(count_key(&ls, "requirements"), 2, "the run and the written key's list");
    size_t run = 0; /* the run: the list of five (the written key's has one) */
    while (strcmp(ls.p[run].key, "requirements") != 0 || ls.p[run].n != 5) run++;
    cr_assert_str_eq(list_items(&ls, ctx, run), "requests>=1.2.3,<=2.0.1|rsa>=4.1; python_version >= '3.5'|"
                          "cryptography < 39.0.0|six|jc @ git+https://github.com/x/jc");
    cr_assert_str_eq(items(&ls, ctx, "name"), "Vim");
    dg_lists_free(&ls);
}

/* pkg-config separates Requires by commas or blanks: under a dependency key a value
 * of package names splits at blanks; a constraint, or another key, keeps the value. */
Test(list_names, blank_separated_package_names)
{
    const char *ctx = "Requires.private: libssl libcrypto zlib\n"
                      "Requires: glibc >= 2.17\n"
                      "Build-Depends: debhelper autoconf\n"
                      "Summary: a small demo\n";
    dg_lists ls = {0};
    cr_assert_eq(dg_lists_scan(ctx, strlen(ctx), &ls), DEG_OK);
    cr_assert_str_eq(items(&ls, ctx, "requires private"), "libssl|libcrypto|zlib");
    cr_assert_str_eq(items(&ls, ctx, "requires"), "glibc >= 2.17");
    cr_assert_str_eq(items(&ls, ctx, "build depends"), "debhelper|autoconf");
    cr_assert_str_eq(items(&ls, ctx, "summary"), "a small demo");
    dg_lists_free(&ls);
}

/* With a large list bonus the forks read what the prior marks: an array asking for
 * names gets each item's name once; without the word it gets each item whole. */
Test(list_names, fill_reads_names_once)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", GOLDENS);
    snprintf(dir, sizeof dir, "%s/list-names-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
    const char *ctx = "Package: demo\n"
                      "Requires: glibc >= 2.17\n"
                      "Requires: pkgconfig\n"
                      "Requires: glibc < 3\n"
                      "Summary: a demo\n";
    const char *desc[] = {"names of the required packages", "the required packages"};
    const char *want[] = {"glibc|pkgconfig", "glibc >= 2.17|pkgconfig|glibc < 3"};
    for (int u = 0; u < 2; u++) {
        char schema[256];
        snprintf(schema, sizeof schema,
                 "{\"type\":\"object\",\"properties\":{\"dependencies\":{\"type\":\"array\","
                 "\"description\":\"%s\",\"items\":{\"type\":\"string\"}}}}",
                 desc[u]);
        json_t *resp = tu_fill(k, ctx, schema, "{\"list_prior\":{\"bonus\":500.0}}");
        cr_assert_str_eq(tu_joined(json_object_get(json_object_get(resp, "value"), "dependencies")),
                         want[u], "%s", desc[u]);
        json_decref(resp);
    }
    deg_ckpt_free(k);
}

/* Items that are no requirement are read whole, non-ASCII ones too (a first form counted
 * the bytes of "Maach\u1ecb" as code points and ran past the item). */
Test(list_names, fill_reads_other_names_whole)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", GOLDENS);
    snprintf(dir, sizeof dir, "%s/list-names-utf8-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k = tu_random_ckpt(model, 7, dir, "anchor", 10000);
    const char *ctx = "Locale: ig_NG\nMonths: Jen\xe1\xbb\xa5war\xe1\xbb\x8b, Maach\xe1\xbb\x8b, "
                      "Eprel\nTerritory: Nigeria\n";
    json_t *resp = tu_fill(k, ctx,
                           "{\"type\":\"object\",\"properties\":{\"month_names\":{\"type\":"
                           "\"array\",\"items\":{\"type\":\"string\"}}}}",
                           "{\"list_prior\":{\"bonus\":500.0}}");
    cr_assert_str_eq(tu_joined(json_object_get(json_object_get(resp, "value"), "month_names")),
                     "Jen\xe1\xbb\xa5war\xe1\xbb\x8b|Maach\xe1\xbb\x8b|Eprel");
    json_decref(resp);
    deg_ckpt_free(k);
}

/* A dependency array no list names, in a document of keys, is empty (list_absent in
 * the array's meta); with fewer key lines, or an array of another kind, the heads'
 * anchors stand (the meta says which rule gave the count). */
Test(list_names, unwritten_dependencies_are_none)
{
    char model[512], dir[512];
    snprintf(model, sizeof model, "%s/tiny-qwen3", GOLDENS);
    snprintf(dir, sizeof dir, "%s/list-absent-%d", DEG_BUILD_ROOT, (int)getpid());
    deg_ckpt *k0 = tu_random_ckpt(model, 7, dir, "anchor", 0);
    deg_ckpt_free(k0);
    tu_set_meta(dir, "key_prior", json_pack("{s:f, s:f}", "exact", 16.0, "partial", 8.0));
    deg_ckpt *k = NULL;
    cr_assert_eq(deg_ckpt_load(dir, NULL, &k), DEG_OK, "%s", deg_errmsg());
    const char *keyed = "Package: libasound2-data\n"
                        "Version: 1.2.8-1\n"
                        "Recommends: alsa-ucm-conf, alsa-topology-conf\n"
                        "Breaks: libasound2 (<< 1.0.24)\n"
                        "Description: Configuration files and profiles for ALSA drivers\n";
    const char *two = "Package: libasound2-data\nVersion: 1.2.8-1\n";
    const char *schema[] = {
        "{\"type\":\"object\",\"properties\":{\"dependencies\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"}}}}",
        "{\"type\":\"object\",\"properties\":{\"keywords\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"}}}}"};
    const char *opts = "{\"list_prior\":{\"bonus\":16.0},\"max_items\":4}";
    json_t *r = tu_fill(k, keyed, schema[0], opts);
    json_t *v = json_object_get(json_object_get(r, "value"), "dependencies");
    cr_assert_eq(json_array_size(v), 0);
    json_t *am = json_object_get(json_object_get(r, "meta"), "/dependencies");
    cr_assert(json_is_true(json_object_get(am, "list_absent")));
    json_decref(r);
    const char *ctx[] = {two, keyed};
    for (int i = 0; i < 2; i++) {
        r = tu_fill(k, ctx[i], schema[i], opts);
        json_t *m = json_object_get(json_object_get(r, "meta"),
                                    i ? "/keywords" : "/dependencies");
        cr_assert_null(json_object_get(m, "list_absent"), "case %d", i);
        if (i == 0) /* the random heads find an item in the short document */
            cr_assert_gt(json_integer_value(json_object_get(m, "items")), 0);
        json_decref(r);
    }
    deg_ckpt_free(k);
}
