/* deg_corpus: a self-study corpus as one provenance-tagged token stream. */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "cartridge/selfstudy_internal.h"
#include "model/model.h"

static int ascii_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void dg_strip(const char *s, size_t n, size_t *first, size_t *end)
{
    size_t a = 0, b = n;
    while (a < b && ascii_space((unsigned char)s[a])) a++;
    while (b > a && ascii_space((unsigned char)s[b - 1])) b--;
    *first = a;
    *end = b;
}

void deg_corpus_free(deg_corpus *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n_docs; i++) free(c->names[i]);
    free(c->names);
    free(c->first);
    free(c->ids);
    free(c->text);
    free(c);
}

/* Append document d's block to the corpus' text and ids. */
static deg_status add_doc(deg_corpus *c, dg_strbuf *text, size_t d, const char *name,
                          const char *t, size_t len)
{
    size_t a, b;
    dg_strip(t, len, &a, &b);
    if (a == b)
        return dg_fail(DEG_ERR_ARG, "deg_corpus_new: document %zu (%s) holds no text", d, name);
    size_t bad;
    if (!dg_utf8_validate(t, len, &bad))
        return dg_fail(DEG_ERR_UTF8, "deg_corpus_new: document %zu (%s) is not UTF-8 (byte %zu)",
                       d, name, bad);
    dg_strbuf blk = {0};
    if (c->n_docs > 1) {
        dg_sb_printf(&blk, "Document: %s\n\n", name);
        dg_sb_put(&blk, t + a, b - a);
        dg_sb_puts(&blk, "\n\n");
    } else {
        dg_sb_put(&blk, t + a, b - a);
        dg_sb_puts(&blk, "\n");
    }
    if (blk.oom) {
        free(blk.p);
        return dg_fail(DEG_ERR_NOMEM, "deg_corpus_new: out of memory");
    }
    int32_t *ids = NULL;
    size_t n = 0;
    deg_status st = dg_model_tokenize(c->model, blk.p, blk.len, 0, &ids, &n);
    if (st != DEG_OK) {
        free(blk.p);
        return dg_fail_context(st, "deg_corpus_new: document %zu (%s)", d, name);
    }
    st = DG_GROW(c->ids, c->cap_ids, c->n + n + 1);
    if (st != DEG_OK) {
        free(ids);
        free(blk.p);
        return dg_fail_context(st, "deg_corpus_new");
    }
    memcpy(c->ids + c->n, ids, n * sizeof *ids);
    c->first[d] = c->n;
    c->n += n;
    free(ids);
    dg_sb_put(text, blk.p, blk.len);
    free(blk.p);
    return DEG_OK;
}

deg_status deg_corpus_new(const deg_model *model, const char *const *names,
                          const char *const *texts, const size_t *lens, size_t n_docs,
                          deg_corpus **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "deg_corpus_new: NULL out");
    *out = NULL;
    if (!model || !names || !texts || !lens || n_docs == 0)
        return dg_fail(DEG_ERR_ARG, "deg_corpus_new: NULL argument or no documents");
    for (size_t d = 0; d < n_docs; d++)
        if (!names[d] || !texts[d])
            return dg_fail(DEG_ERR_ARG, "deg_corpus_new: document %zu: NULL name or text", d);
    deg_corpus *c = calloc(1, sizeof *c);
    if (!c) return dg_fail(DEG_ERR_NOMEM, "deg_corpus_new: out of memory");
    c->model = model;
    c->n_docs = n_docs;
    c->names = calloc(n_docs, sizeof *c->names);
    c->first = calloc(n_docs + 1, sizeof *c->first);
    if (!c->names || !c->first) {
        deg_corpus_free(c);
        return dg_fail(DEG_ERR_NOMEM, "deg_corpus_new: out of memory");
    }
    dg_strbuf text = {0};
    for (size_t d = 0; d < n_docs; d++) {
        c->names[d] = strdup(names[d]);
        deg_status st = c->names[d] ? add_doc(c, &text, d, names[d], texts[d], lens[d])
                                    : dg_fail(DEG_ERR_NOMEM, "deg_corpus_new: out of memory");
        if (st != DEG_OK) {
            free(text.p);
            deg_corpus_free(c);
            return st;
        }
    }
    c->first[n_docs] = c->n;
    if (text.oom || c->n == 0) {
        free(text.p);
        deg_corpus_free(c);
        return text.oom ? dg_fail(DEG_ERR_NOMEM, "deg_corpus_new: out of memory")
                        : dg_fail(DEG_ERR_ARG, "deg_corpus_new: the corpus has no tokens");
    }
    c->text = text.p;
    c->text_len = text.len;
    *out = c;
    return DEG_OK;
}

size_t deg_corpus_len(const deg_corpus *c) { return c ? c->n : 0; }
const int32_t *deg_corpus_ids(const deg_corpus *c) { return c ? c->ids : NULL; }
size_t deg_corpus_n_docs(const deg_corpus *c) { return c ? c->n_docs : 0; }

const char *deg_corpus_text(const deg_corpus *c, size_t *len)
{
    if (len) *len = c ? c->text_len : 0;
    return c ? c->text : NULL;
}

deg_status deg_corpus_doc(const deg_corpus *c, size_t i, const char **name, size_t *first,
                          size_t *end)
{
    if (!c) return dg_fail(DEG_ERR_ARG, "deg_corpus_doc: NULL corpus");
    if (i >= c->n_docs)
        return dg_fail(DEG_ERR_RANGE, "deg_corpus_doc: document %zu of %zu", i, c->n_docs);
    if (name) *name = c->names[i];
    if (first) *first = c->first[i];
    if (end) *end = c->first[i + 1];
    return DEG_OK;
}
