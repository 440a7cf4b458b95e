/* keyprior.c - "Key: value" lines of a context and their match to a field (keyprior.h). */
#include "deg/keyprior.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/utf8.h"
#include "deg/request.h"

/* Word bytes: ASCII letters and digits, and every byte of a non-ASCII UTF-8
 * sequence (keys in other scripts: "Straße", "Résumé"). */
static int is_word_byte(unsigned char c)
{
    return isalnum(c) || c >= 0x80;
}

static int is_key_byte(unsigned char c)
{
    return is_word_byte(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '(' || c == ')' ||
           c == ' ';
}

static int is_markup(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '-' || c == '*' || c == '#' || c == '|' || c == '>' ||
           c == '/';
}

static int is_stop_word(const char *w, size_t n)
{
    static const char *const STOP[] = {"the", "a", "an", "of"};
    for (size_t i = 0; i < sizeof STOP / sizeof STOP[0]; i++)
        if (strlen(STOP[i]) == n && memcmp(STOP[i], w, n) == 0) return 1;
    return 0;
}

size_t dg_key_norm(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    size_t i = 0;
    if (cap == 0) return 0;
    while (i < n) {
        while (i < n && !is_word_byte((unsigned char)s[i])) i++;
        size_t w0 = i;
        /* a word: run of word bytes, split before an ASCII upper-case letter that
         * follows a lower-case one (camelCase) */
        while (i < n && is_word_byte((unsigned char)s[i])) {
            if (i > w0 && isupper((unsigned char)s[i]) && islower((unsigned char)s[i - 1])) break;
            i++;
        }
        size_t wl = i - w0;
        if (wl == 0) continue;
        char w[DG_KEY_MAX_LEN + 1];
        if (wl > DG_KEY_MAX_LEN) wl = DG_KEY_MAX_LEN;
        for (size_t k = 0; k < wl; k++) w[k] = (char)tolower((unsigned char)s[w0 + k]);
        if (is_stop_word(w, wl)) continue;
        if (o + (o ? 1 : 0) + wl + 1 > cap) break;
        if (o) out[o++] = ' ';
        memcpy(out + o, w, wl);
        o += wl;
    }
    out[o] = 0;
    return o;
}

int dg_json_member_split(const char *s, size_t b, size_t e, size_t *key0, size_t *key1,
                         size_t *colon)
{
    size_t i = b;
    while (i < e && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i >= e || s[i] != '"') return 0;
    size_t k0 = ++i;
    while (i < e && s[i] != '"' && s[i] != '\\' && i - k0 <= DG_KEY_MAX_LEN) i++;
    if (i >= e || s[i] != '"' || i == k0) return 0;
    size_t k1 = i++;
    while (i < e && s[i] == ' ') i++;
    if (i >= e || s[i] != ':') return 0;
    *key0 = k0;
    *key1 = k1;
    *colon = i;
    return 1;
}

/* [p, e) starts with tag t ("<th>"), ASCII case folded. */
static int tag_at(const char *p, const char *e, const char *t)
{
    size_t n = strlen(t);
    return (size_t)(e - p) >= n && strncasecmp(p, t, n) == 0;
}

/* An HTML row on one line, `[<tr>]<th>key</th><td>value</td>[</tr>]`, whose key and
 * value hold no markup: 1 with the key's bytes [*k0, *k1) and the value's [*v0, *v1).
 * (A cell holding a list or other elements is lists.c's.) */
static int html_row_split(const char *ctx, size_t b, size_t e, size_t *k0, size_t *k1,
                          size_t *v0, size_t *v1)
{
    const char *p = ctx + b, *end = ctx + e;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (tag_at(p, end, "<tr>")) p += 4;
    if (!tag_at(p, end, "<th>")) return 0;
    p += 4;
    while (p < end && *p == ' ') p++;
    const char *kc = memchr(p, '<', (size_t)(end - p));
    if (!kc || !tag_at(kc, end, "</th>")) return 0;
    const char *td = kc + 5;
    while (td < end && *td == ' ') td++;
    if (!tag_at(td, end, "<td>")) return 0;
    const char *v = td + 4, *vc = memchr(v, '<', (size_t)(end - v));
    if (!vc || !tag_at(vc, end, "</td>")) return 0;
    *k0 = (size_t)(p - ctx);
    *k1 = (size_t)(kc - ctx);
    *v0 = (size_t)(v - ctx);
    *v1 = (size_t)(vc - ctx);
    return 1;
}

int dg_keyline_split(const char *ctx, size_t b, size_t e, size_t *key0, size_t *key1,
                     size_t *val0, size_t *val1)
{
    size_t k0, k1, sep;
    char c = ':';
    size_t hv0, hv1;
    int html = html_row_split(ctx, b, e, &k0, &k1, &hv0, &hv1);
    if (html) {
        for (size_t i = k0; i < k1; i++)
            if (!is_key_byte((unsigned char)ctx[i])) return 0;
        sep = hv0 - 1;      /* the value follows <td> */
        e = hv1;            /* and ends before </td> */
        c = '|';
    }
    int json = !html && dg_json_member_split(ctx, b, e, &k0, &k1, &sep);
    if (json) {
        /* `"key": value` (JSON, quoted YAML keys): the key is between the quotes */
        for (size_t i = k0; i < k1; i++)
            if (!is_key_byte((unsigned char)ctx[i])) return 0;
    } else if (!html) {
        k0 = b;
        while (k0 < e && is_markup((unsigned char)ctx[k0])) k0++;
        sep = k0;
        while (sep < e && sep - k0 <= DG_KEY_MAX_LEN && is_key_byte((unsigned char)ctx[sep]))
            sep++;
        if (sep >= e || sep == k0 || sep - k0 > DG_KEY_MAX_LEN) return 0;
        c = ctx[sep];
        if (c != ':' && c != '=' && c != '|' && c != '\t') return 0;
        k1 = sep;
    }
    while (k1 > k0 && ctx[k1 - 1] == ' ') k1--;
    if (k1 == k0 || !(isalpha((unsigned char)ctx[k0]) || (unsigned char)ctx[k0] >= 0x80))
        return 0;
    if (c == ':' && sep + 2 < e && ctx[sep + 1] == '/' && ctx[sep + 2] == '/') return 0; /* URL */
    size_t words = 1;
    for (size_t i = k0; i < k1; i++)
        if (ctx[i] == ' ' && ctx[i + 1] != ' ') words++;
    if (words > DG_KEY_MAX_WORDS) return 0;
    size_t v0 = sep + 1, v1 = e;
    /* '*' around a value is emphasis only on a line that opens with it ("**Key:** value",
     * "*Key: value*"); else it is the value's ("Files: *", "Files: *.c": globs) */
    int star = !json && !html && memchr(ctx + b, '*', k0 - b) != NULL;
    while (v0 < v1 && (ctx[v0] == ' ' || ctx[v0] == '\t')) v0++;
    while (v1 > v0 && (ctx[v1 - 1] == ' ' || ctx[v1 - 1] == '\t' || ctx[v1 - 1] == '\r' ||
                       ctx[v1 - 1] == '|' || (star && ctx[v1 - 1] == '*') ||
                       ctx[v1 - 1] == ',' || ctx[v1 - 1] == ';'))
        v1--;
    if (v1 - v0 >= 2 && ctx[v1 - 1] == '/' && ctx[v1 - 2] == '*') { /* a C comment's close */
        v1 -= 2;
        while (v1 > v0 && (ctx[v1 - 1] == ' ' || ctx[v1 - 1] == '\t')) v1--;
    }
    while (star && v0 < v1 && ctx[v0] == '*') v0++;  /* "**Key:** value" */
    while (v0 < v1 && ctx[v0] == ' ') v0++;
    /* a JSON member opening an object or array, or null, has no scalar value (lists.c
     * reads `"key": [`) */
    if (json && v0 < v1 && (ctx[v0] == '{' || ctx[v0] == '[' ||
                            (v1 - v0 == 4 && memcmp(ctx + v0, "null", 4) == 0)))
        v1 = v0;
    if (v1 - v0 >= 2 && (ctx[v0] == '"' || ctx[v0] == '\'') && ctx[v1 - 1] == ctx[v0]) {
        v0++;  /* KEY="value" (os-release, shell, INI): the value is inside the quotes */
        v1--;
    }
    *key0 = k0;
    *key1 = k1;
    *val0 = v0;
    *val1 = v1 > v0 ? v1 : v0;
    return 1;
}

int dg_keylines_add(const char *ctx, size_t b, size_t cp, const char *key, size_t key_len,
                    size_t v0, size_t v1, dg_keylines *ix, size_t *cap)
{
    if (v1 <= v0) return 0;
    if (DG_GROW(ix->p, *cap, ix->n + 1) != DEG_OK) return -1;
    dg_keyline *kv = &ix->p[ix->n++];
    kv->val0 = cp + dg_utf8_count(ctx + b, v0 - b);
    kv->val1 = kv->val0 + dg_utf8_count(ctx + v0, v1 - v0);
    kv->exact_only = 0;
    kv->json_depth = 0;
    dg_key_norm(key, key_len, kv->key, sizeof kv->key);
    if (!kv->key[0]) ix->n--;
    return 0;
}

int dg_keylines_add_on(const char *ctx, size_t *b, size_t *cp, const char *key, size_t key_len,
                       size_t v0, size_t v1, dg_keylines *ix, size_t *cap)
{
    size_t at = ix->n;
    if (dg_keylines_add(ctx, *b, *cp, key, key_len, v0, v1, ix, cap) < 0) return -1;
    if (ix->n > at) {
        *b = v0;
        *cp = ix->p[at].val0;
    }
    return 0;
}

int dg_keylines_add_qualified(const char *ctx, size_t *b, size_t *cp, const char *parent,
                              size_t pl, const char *key, size_t kl, size_t v0, size_t v1,
                              dg_keylines *ix, size_t *cap)
{
    char q[2 * DG_KEY_MAX_LEN + 2];
    if (pl + 1 + kl >= sizeof q) return 0;
    memcpy(q, parent, pl);
    q[pl] = ' ';
    memcpy(q + pl + 1, key, kl);
    size_t at = ix->n;
    if (dg_keylines_add_on(ctx, b, cp, q, pl + 1 + kl, v0, v1, ix, cap) < 0) return -1;
    if (ix->n > at) ix->p[at].exact_only = 1;
    return 0;
}

/* A byte of a directive's key or of a bare flag: letters, digits, '_', '.', '-'. */
static int is_directive_byte(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '-';
}

/* A directive line "KEY value" without a separator (ssh_config, sshd_config, login.defs,
 * Apache, nginx): KEY one token of 2..40 letters, digits, '_', '.', '-' opening with a
 * letter; then spaces or TABs; a value of 1..DG_DIRECTIVE_MAX_WORDS words, an optional
 * "# comment" and ';' left out, not ending in sentence punctuation. 1 with the key's and
 * the value's bytes. */
#define DG_DIRECTIVE_MAX_WORDS 6
static int directive_split(const char *ctx, size_t b, size_t e, size_t *k0, size_t *k1,
                           size_t *v0, size_t *v1)
{
    size_t i = b;
    while (i < e && (ctx[i] == ' ' || ctx[i] == '\t')) i++;
    if (i >= e || !isalpha((unsigned char)ctx[i])) return 0;
    *k0 = i;
    while (i < e && is_directive_byte((unsigned char)ctx[i])) i++;
    *k1 = i;
    if (*k1 - *k0 < 2 || *k1 - *k0 > 40 || i >= e || (ctx[i] != ' ' && ctx[i] != '\t'))
        return 0;
    while (i < e && (ctx[i] == ' ' || ctx[i] == '\t')) i++;
    size_t end = e;
    for (size_t j = i; j < e; j++)
        if (ctx[j] == '#' && (ctx[j - 1] == ' ' || ctx[j - 1] == '\t')) {
            end = j;
            break;
        }
    while (end > i && strchr(" \t\r;", ctx[end - 1])) end--;
    if (end <= i || strchr(".!?:,", ctx[end - 1]) || (ctx[i] == '-' && i + 1 < end && ctx[i + 1] == ' '))
        return 0;
    size_t words = 1;
    for (size_t j = i; j + 1 < end; j++)
        if ((ctx[j] == ' ' || ctx[j] == '\t') && ctx[j + 1] != ' ' && ctx[j + 1] != '\t')
            words++;
    if (words > DG_DIRECTIVE_MAX_WORDS) return 0;
    *v0 = i;
    *v1 = end;
    if (end - i >= 2 && (ctx[i] == '"' || ctx[i] == '\'') && ctx[end - 1] == ctx[i]) {
        (*v0)++;  /* ServerRoot "/etc/apache2" */
        (*v1)--;
    }
    return *v1 > *v0;
}

/* A directive line seen in the current block. */
typedef struct directive {
    size_t b, cp, k0, k1, v0, v1;
} directive;

/* End of a block of lines: its directive lines are key lines when there are at least
 * DG_DIRECTIVE_MIN (one or two such lines are as likely a heading and a name). */
#define DG_DIRECTIVE_MIN 3
static int flush_directives(const char *ctx, directive *d, size_t *nd, dg_keylines *ix,
                            size_t *cap)
{
    int rc = 0;
    for (size_t i = 0; *nd >= DG_DIRECTIVE_MIN && i < *nd && rc == 0; i++)
        rc = dg_keylines_add(ctx, d[i].b, d[i].cp, ctx + d[i].k0, d[i].k1 - d[i].k0, d[i].v0,
                             d[i].v1, ix, cap);
    *nd = 0;
    return rc;
}

/* Document order; lines of one value in the order they are added (a plain key before
 * its qualified "PARENT KEY"; "copyright holder" before "holder"), so that the order
 * does not rest on the C library's qsort being stable. */
static int by_position(const void *a, const void *b)
{
    const dg_keyline *p = a, *q = b;
    if (p->val0 != q->val0) return (p->val0 > q->val0) - (p->val0 < q->val0);
    if (p->exact_only != q->exact_only) return p->exact_only - q->exact_only;
    return strcmp(p->key, q->key);
}

/* Is line [b, e) blank, a comment ('#', ';' or "//" first) or a bare flag (one token of
 * letters, digits, '_', '.', '-': gpg.conf's "auto-key-retrieve" between two settings)? */
static int neutral_line(const char *ctx, size_t b, size_t e)
{
    while (b < e && (ctx[b] == ' ' || ctx[b] == '\t' || ctx[b] == '\r')) b++;
    while (e > b && (ctx[e - 1] == ' ' || ctx[e - 1] == '\t' || ctx[e - 1] == '\r')) e--;
    if (b == e || ctx[b] == '#' || ctx[b] == ';' ||
        (ctx[b] == '/' && b + 1 < e && ctx[b + 1] == '/'))
        return 1;
    for (size_t i = b; i < e; i++)
        if (!is_directive_byte((unsigned char)ctx[i])) return 0;
    return isalpha((unsigned char)ctx[b]);
}

/* Key lines: every line dg_keyline_split reads, and the directive lines
 * (directive_split) of blocks that hold DG_DIRECTIVE_MIN or more of them; a block runs
 * over blank, comment, bare flag and key lines and ends at any other line. Why: "PermitRootLogin
 * no" and "UID_MIN 1000" state a setting as plainly as "Key: value" does; a new user's
 * ssh_config answered its booleans from the heads alone (libdeg 0.22.0). */
deg_status dg_keylines_scan(const char *ctx, size_t len, dg_keylines *out)
{
    dg_keylines ix = {0};
    directive *d = NULL;
    dg_json_nest J = {{0}, {0}, 0};
    size_t cap = 0, dcap = 0, nd = 0, cp = 0, b = 0;
    int rc = 0;
    while (b < len && rc == 0) {
        const char *nl = memchr(ctx + b, '\n', len - b);
        size_t e = nl ? (size_t)(nl - ctx) : len, k0, k1, v0, v1;
        if (dg_keyline_split(ctx, b, e, &k0, &k1, &v0, &v1)) {
            size_t at = ix.n, j0, j1, colon;
            int json = dg_json_member_split(ctx, b, e, &j0, &j1, &colon);
            rc = dg_keylines_add(ctx, b, cp, ctx + k0, k1 - k0, v0, v1, &ix, &cap);
            if (rc == 0 && json && ix.n > at) ix.p[at].json_depth = J.n ? J.n : 1;
            if (rc == 0 && json) rc = dg_json_parent_key(ctx, &J, b, cp, j0, j1, v0, v1, &ix, &cap);
        } else if (directive_split(ctx, b, e, &k0, &k1, &v0, &v1)) {
            if (DG_GROW(d, dcap, nd + 1) != DEG_OK) rc = -1;
            else d[nd++] = (directive){b, cp, k0, k1, v0, v1};
        } else if (!neutral_line(ctx, b, e)) {
            rc = flush_directives(ctx, d, &nd, &ix, &cap);
        }
        dg_json_nest_line(&J, ctx, b, e);
        cp += dg_utf8_count(ctx + b, e - b) + (nl ? 1 : 0);
        b = e + 1;
    }
    if (rc == 0) rc = flush_directives(ctx, d, &nd, &ix, &cap);
    if (rc == 0) rc = dg_keylines_forms(ctx, len, &ix, &cap);
    free(d);
    if (rc < 0) {
        free(ix.p);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (key/value lines)");
    }
    dg_keylines_json_least_nested(&ix);
    /* in document order: a block's directive lines were added at its end */
    if (ix.n > 1) qsort(ix.p, ix.n, sizeof *ix.p, by_position);
    dg_keylines_json_nested_exact(&ix);
    *out = ix;
    return DEG_OK;
}

void dg_keylines_free(dg_keylines *ix)
{
    if (!ix) return;
    free(ix->p);
    ix->p = NULL;
    ix->n = 0;
}

/* a's words without spaces equal b's. */
static int same_compact(const char *a, const char *b)
{
    for (;;) {
        while (*a == ' ') a++;
        while (*b == ' ') b++;
        if (*a != *b) return 0;
        if (!*a) return 1;
        a++;
        b++;
    }
}

static int has_word(const char *words, const char *w, size_t n)
{
    const char *p = words;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && memcmp(p, w, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Every word of a is a word of b, and one of them has >= 3 letters. */
static int words_within(const char *a, const char *b)
{
    int long_one = 0;
    const char *p = a;
    if (!*p) return 0;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!has_word(b, p, l)) return 0;
        if (l >= 3) long_one = 1;
        if (!e) break;
        p = e + 1;
    }
    return long_one;
}

static int match_name(const char *name, const char *key)
{
    if (!name[0]) return 0;
    if (same_compact(name, key)) return 2;
    return words_within(key, name) || words_within(name, key);
}

/* Normalised words with number folded, so that a plural and its singular fold
 * alike: every word of >= 4 bytes loses "ies" -> "y", else a final 's' (not
 * "ss"), then a final 'e', then once more a final 's' (not "ss"): "formats" and
 * "format" -> "format", "files"/"file" -> "fil", "aliases"/"alias" -> "alia",
 * "licenses"/"license" -> "licen", "dependencies"/"dependency" -> "dependency";
 * "class", "address" stay. A past participle of >= 6 bytes first loses the 'd'
 * of its "ed", so that it folds with its verb: a property "ReleasedOn" names a
 * column "release", "created" = "create(s)", "opened" = "open(s)" (libdeg
 * 0.19.0; "feed", "speed" are too short to lose it) - but not before "by"
 * (agent): "WantedBy" lists the units that want this one, not its "Wants:",
 * "CreatedBy" a person, not the "created" date (a development set's systemd unit
 * read "Wants:" for wantedBy). A stem, not a word: only ever compared with another. */
static size_t fold_word(const char *p, size_t l, char *w, int before_by)
{
    memcpy(w, p, l);
    if (l < 4) return l;
    if (l >= 5 && memcmp(w + l - 3, "ies", 3) == 0) {
        w[l - 3] = 'y';
        return l - 2;
    }
    if (l >= 6 && !before_by && w[l - 2] == 'e' && w[l - 1] == 'd') l--;
    if (w[l - 1] == 's' && w[l - 2] != 's') l--;
    if (w[l - 1] == 'e') l--;
    if (l >= 3 && w[l - 1] == 's' && w[l - 2] != 's') l--;
    return l;
}

/* The word after the one ending at e (a ' ', or NUL: none) is "by". */
static int next_is_by(const char *e)
{
    return e && e[1] == 'b' && e[2] == 'y' && (e[3] == 0 || e[3] == ' ');
}

static void fold_plural(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = in;
    while (*p && o + 1 < cap) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char w[DG_KEY_MAX_LEN + 1];
        if (l > DG_KEY_MAX_LEN) l = DG_KEY_MAX_LEN;
        size_t k = fold_word(p, l, w, next_is_by(e));
        if (o + k + (o ? 1 : 0) + 1 > cap) break;
        if (o) out[o++] = ' ';
        memcpy(out + o, w, k);
        o += k;
        if (!e) break;
        p = e + 1;
    }
    out[o] = 0;
}

int dg_key_match_written(const char *seg, const char *title, const char *key, int plural)
{
    char name[DG_KEY_MAX_LEN + 1], key_f[DG_KEY_MAX_LEN + 1], tmp[DG_KEY_MAX_LEN + 1];
    if (plural) {
        fold_plural(key, key_f, sizeof key_f);
        key = key_f;
    }
    int m = 0;
    for (int i = 0; i < 2 && m < 2; i++) {
        const char *s = i ? title : seg;
        if (!s) continue;
        dg_key_norm(s, strlen(s), name, sizeof name);
        if (plural) {
            fold_plural(name, tmp, sizeof tmp);
            memcpy(name, tmp, sizeof name);
        }
        int t = match_name(name, key);
        if (t > m) m = t;
    }
    return m;
}

int dg_key_match_name(const char *seg, const char *title, const char *key, int plural)
{
    int m = dg_key_match_written(seg, title, key, plural);
    return m ? m : dg_key_vocab_match(seg, title, key) > 0;
}

int dg_key_yes_no(const char *s, size_t n)
{
    static const char *const YES[] = {"yes", "y", "true", "1", "ja", "oui", "vrai", "si",
                                      "s\xc3\xad", "s\xc3\xac", "sim", "wahr", "waar",
                                      "verdadero", "vero", "verdadeiro"};
    static const char *const NO[] = {"no", "n", "false", "0", "nein", "non", "faux",
                                     "n\xc3\xa3o", "nao", "nee", "falsch", "falso", "onwaar"};
    for (size_t i = 0; i < sizeof YES / sizeof YES[0]; i++)
        if (n == strlen(YES[i]) && strncasecmp(s, YES[i], n) == 0) return 1;
    for (size_t i = 0; i < sizeof NO / sizeof NO[0]; i++)
        if (n == strlen(NO[i]) && strncasecmp(s, NO[i], n) == 0) return 0;
    return -1;
}

/* Key `key` is the word for what format f holds: "url"/"uri" (uri), "email"/"e mail"/
 * "mail" (email). Why: a Maven POM's <url> is its homepage, a form's "E-mail:" is the
 * contact's address; a uri field named `homepage` matched no key and took the schema
 * location (bench/devreal set 2, libdeg 0.24.0). */
static int format_key(dg_format f, const char *key)
{
    if (f == DG_FORMAT_URI) return !strcmp(key, "url") || !strcmp(key, "uri");
    if (f == DG_FORMAT_EMAIL)
        return !strcmp(key, "email") || !strcmp(key, "e mail") || !strcmp(key, "mail");
    return 0;
}

int dg_key_match(const dg_field_plan *f, const char *key)
{
    if (f->depth_items > 0 || f->path.n == 0) return 0;
    const char *seg = f->path.seg[f->path.n - 1];
    if (!seg) return 0;
    int m = dg_key_match_name(seg, f->title, key, 0);
    return m ? m : format_key(f->format, key);
}

/* Word w[0, n) is one of the nw words ws. */
static int one_of(const char *const *ws, size_t nw, const char *w, size_t n)
{
    for (size_t i = 0; i < nw; i++)
        if (strlen(ws[i]) == n && memcmp(ws[i], w, n) == 0) return 1;
    return 0;
}

static int is_linking_word(const char *w, size_t n)
{
    static const char *const LINK[] = {"on", "at", "in", "by", "is", "was", "are", "were",
                                       "to", "from", "since", "until", "for", "be", "date"};
    return one_of(LINK, sizeof LINK / sizeof LINK[0], w, n);
}

int dg_key_phrase_before(const dg_field_plan *f, const char *ctx, size_t b)
{
    if (f->depth_items > 0 || f->path.n == 0 || !f->path.seg[f->path.n - 1]) return 0;
    return dg_key_phrase_before_name(f->path.seg[f->path.n - 1], f->title, ctx, b);
}

int dg_key_phrase_before_name(const char *seg, const char *title, const char *ctx, size_t b)
{
    /* the clause before b: back to a line or clause mark, at most DG_KEY_MAX_LEN bytes */
    size_t a = b;
    while (a > 0 && b - a < DG_KEY_MAX_LEN) {
        char c = ctx[a - 1];
        if (c == '\n' || c == '.' || c == ';' || c == ':' || c == '!' || c == '?' || c == ',' ||
            c == '(' || c == '|' || c == '\t')
            break;
        a--;
    }
    if (a > 0 && b - a >= DG_KEY_MAX_LEN) { /* cut inside a word: start after it */
        while (a < b && ctx[a] != ' ') a++;
    }
    char w[DG_KEY_MAX_LEN + 1];
    size_t n = dg_key_norm(ctx + a, b - a, w, sizeof w);
    for (int drop = 0; drop < 2 && n > 0; drop++) {
        if (drop) { /* without one trailing linking word ("created on" -> "created") */
            char *sp = strrchr(w, ' ');
            const char *last = sp ? sp + 1 : w;
            if (!sp || !is_linking_word(last, strlen(last))) break;
            *sp = 0;
        }
        /* every word suffix of the clause, shortest first */
        const char *p = w + strlen(w);
        for (int words = 0; words < DG_KEY_MAX_WORDS; words++) {
            while (p > w && p[-1] != ' ') p--;
            if (dg_key_match_name(seg, title, p, 0) == 2) return 1;
            if (p == w) break;
            p--;
        }
    }
    return 0;
}

size_t dg_key_name_unit(const dg_field_plan *f, char *unit, size_t cap)
{
    unit[0] = 0;
    if ((f->type != DG_TYPE_NUMBER && f->type != DG_TYPE_INTEGER) || f->depth_items > 0 ||
        f->path.n == 0 || !f->path.seg[f->path.n - 1])
        return 0;
    const char *seg = f->path.seg[f->path.n - 1];
    char name[DG_KEY_MAX_LEN + 1];
    dg_key_norm(seg, strlen(seg), name, sizeof name);
    const char *w = strrchr(name, ' ');
    if (!w) return 0;
    w++;
    size_t un = strlen(w), letters = 0;
    for (size_t i = 0; i < un; i++) letters += isalpha((unsigned char)w[i]) != 0;
    if (un > 5 || letters == 0 || un >= cap) return 0;
    memcpy(unit, w, un + 1);
    return un;
}

int dg_key_unit_after(const char *unit, const char *ctx, size_t len, size_t e)
{
    size_t un = strlen(unit);
    if (un == 0) return 0;
    size_t a = e;
    if (a < len && ctx[a] == ' ') a++;
    size_t i = 0;
    while (i < un && a < len) {
        unsigned char c = (unsigned char)ctx[a];
        if (c == 0xc2 && a + 1 < len && ((unsigned char)ctx[a + 1] == 0xb2 ||
                                         (unsigned char)ctx[a + 1] == 0xb3)) {
            if (unit[i] != ((unsigned char)ctx[a + 1] == 0xb2 ? '2' : '3')) return 0;
            a += 2;
        } else {
            if (tolower(c) != unit[i]) return 0;
            a++;
        }
        i++;
    }
    return i == un && (a == len || !is_word_byte((unsigned char)ctx[a]));
}

/* Normalised text n holds normalised key k as a run of whole words. */
static int words_in(const char *n, const char *k)
{
    size_t kl = strlen(k);
    for (const char *p = n; (p = strstr(p, k)) != NULL; p++)
        if ((p == n || p[-1] == ' ') && (p[kl] == 0 || p[kl] == ' ')) return 1;
    return 0;
}

/* words_in, but not right after a negation ("a permissive (non-copyleft) licence"
 * does not name a "Copyleft:" line to read as the answer). */
static int words_in_affirmed(const char *n, const char *k)
{
    size_t kl = strlen(k);
    for (const char *p = n; (p = strstr(p, k)) != NULL; p++) {
        if (!((p == n || p[-1] == ' ') && (p[kl] == 0 || p[kl] == ' '))) continue;
        if (p - n >= 4 && (memcmp(p - 4, "non ", 4) == 0 || memcmp(p - 4, "not ", 4) == 0) &&
            (p - n == 4 || p[-5] == ' '))
            continue;
        return 1;
    }
    return 0;
}

int dg_key_in_description(const dg_field_plan *f, const char *key)
{
    if (strlen(key) < 4 || !f->description || f->depth_items > 0) return 0;
    char d[DG_KEY_DESC_MAX + 1];
    dg_key_norm(f->description, strlen(f->description), d, sizeof d);
    return words_in_affirmed(d, key);
}

/* Prepositions that end a description's leading noun phrase ("the months in the
 * locale's language": "the months"). */
static int is_preposition(const char *w, size_t n)
{
    static const char *const P[] = {"in", "of", "for", "from", "with", "on", "at", "by", "to",
                                    "per", "into", "under", "over", "about"};
    return one_of(P, sizeof P / sizeof P[0], w, n);
}

/* Append normalised bytes [b, b + n) of a description to out (used o), after " , "
 * when out is not empty: keys never hold ',' so no key spans two parts. */
static void add_part(char *out, size_t cap, size_t *o, const char *b, size_t n)
{
    char w[DG_KEY_DESC_MAX + 1];
    size_t k = dg_key_norm(b, n, w, sizeof w);
    if (k == 0 || *o + k + 4 > cap) return;
    if (*o) {
        memcpy(out + *o, " , ", 3);
        *o += 3;
    }
    memcpy(out + *o, w, k);
    *o += k;
    out[*o] = 0;
}

/* The leading noun phrase of d[0, len): its words up to a clause mark, '(' or a
 * preposition, possessives left out, into w (cap bytes); returns its length. */
static size_t lead_phrase(const char *d, size_t len, char *w, size_t cap)
{
    size_t o = 0;
    for (size_t b = 0; b < len;) {
        while (b < len && d[b] == ' ') b++;
        size_t e = b;
        while (e < len && d[e] != ' ') e++;
        if (e == b || memchr(d + b, '(', e - b)) break;
        char last = d[e - 1];
        int mark = last == ',' || last == ';' || last == ':' || last == '.';
        size_t n = e - b - (size_t)mark;
        if (is_preposition(d + b, n)) break;
        int poss = n >= 2 && d[b + n - 2] == '\'' && d[b + n - 1] == 's';
        if (!poss && o + n + 1 < cap) {
            if (o) w[o++] = ' ';
            memcpy(w + o, d + b, n);
            o += n;
        }
        if (mark) break;
        b = e;
    }
    return o;
}

size_t dg_key_desc_names(const char *description, char *out, size_t cap)
{
    size_t o = 0;
    if (cap) out[0] = 0;
    if (!description || cap < 2) return 0;
    size_t len = strnlen(description, DG_KEY_DESC_MAX);
    char lead[DG_KEY_DESC_MAX + 1];
    add_part(out, cap, &o, lead, lead_phrase(description, len, lead, sizeof lead));
    for (size_t i = 0; i < len; i++) {
        char c = description[i], close;
        if (c == '(') close = ')';
        else if ((c == '"' || c == '\'' || c == '`') && (i == 0 || description[i - 1] == ' '))
            close = c; /* an opening quote starts a word: "country's" opens none */
        else continue;
        const char *z = memchr(description + i + 1, close, len - i - 1);
        if (!z) continue;
        add_part(out, cap, &o, description + i + 1, (size_t)(z - description) - i - 1);
        i = (size_t)(z - description);
    }
    return o;
}

int dg_key_words_in(const char *text, const char *key)
{
    return strlen(key) >= 4 && words_in(text, key);
}

/* An exact-only key of 2+ words (qualified, or a nested JSON member's) that field f
 * reads partially: every word of it (plurals folded) is a word of f's name or title, a
 * name that says the qualifier too (`bug_tracker_url` holds "bugs url"), or the key
 * vocabulary matches (`contact_email` = "author email"). Never a lone word ("url" of a
 * repository for `homepage`) nor by a part of it (`version` of "parent version"). */
static int qualified_partial(const dg_field_plan *f, const char *key)
{
    if (!strchr(key, ' ') || f->depth_items > 0 || !f->path.n || !f->path.seg[f->path.n - 1])
        return 0;
    if (dg_key_vocab_match(f->path.seg[f->path.n - 1], f->title, key)) return 1;
    char k[DG_KEY_MAX_LEN + 1], n[DG_KEY_MAX_LEN + 1], t[DG_KEY_MAX_LEN + 1];
    fold_plural(key, k, sizeof k);
    for (int i = 0; i < 2; i++) {
        const char *s = i ? f->title : f->path.seg[f->path.n - 1];
        if (!s) continue;
        dg_key_norm(s, strlen(s), t, sizeof t);
        fold_plural(t, n, sizeof n);
        if (words_within(k, n)) return 1;
    }
    return 0;
}

double dg_key_bonus(const dg_key_prior *p, const dg_field_plan *f, const dg_keyline *kv)
{
    if (!p || !p->on) return 0.0;
    int m = dg_key_match(f, kv->key);
    if (kv->exact_only)
        return m == 2 ? p->exact : qualified_partial(f, kv->key) ? p->partial : 0.0;
    if (m == 0 && p->description > 0 && dg_key_in_description(f, kv->key)) return p->description;
    return m == 2 ? p->exact : m == 1 ? p->partial : 0.0;
}

/* (keyprior.h) The optional members are read by one table, 0 = off when absent. */
deg_status dg_key_prior_load(const json_t *v, const char *jpath, dg_key_prior *out)
{
    memset(out, 0, sizeof *out);
    if (!v || json_is_null(v)) return DEG_OK;
    json_t *ex = json_object_get(v, "exact"), *pa = json_object_get(v, "partial");
    /* optional members, 0 = off when absent */
    static const char *const OPT[] = {"phrase", "description", "score", "compare", "sole"};
    double *const opt[] = {&out->phrase, &out->description, &out->score, &out->compare,
                           &out->sole};
    size_t n_opt = 0;
    int ok = json_is_object(v) && json_is_number(ex) && json_is_number(pa);
    for (size_t i = 0; ok && i < sizeof OPT / sizeof OPT[0]; i++) {
        json_t *o = json_object_get(v, OPT[i]);
        if (o && !json_is_number(o)) ok = 0;
        if (o) n_opt++;
        *opt[i] = o ? json_number_value(o) : 0.0;
    }
    if (!ok || json_object_size(v) != 2u + n_opt)
        return dg_fail(DEG_ERR_FORMAT, "%s: key_prior must be null or {\"exact\": number, "
                       "\"partial\": number[, \"phrase\": number][, \"description\": number]"
                       "[, \"score\": number][, \"compare\": number][, \"sole\": number]}",
                       jpath);
    out->exact = json_number_value(ex);
    out->partial = json_number_value(pa);
    const double w[] = {out->exact, out->partial, out->phrase, out->description,
                        out->score, out->compare, out->sole};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (!(w[i] >= 0) || !(w[i] <= DG_PRIOR_MAX))
            return dg_fail(DEG_ERR_FORMAT, "%s: key_prior.exact, .partial, .phrase, "
                           ".description, .score, .compare and .sole must be numbers in [0, 1e6]",
                           jpath);
    out->on = 1;
    return DEG_OK;
}
