/* Token spans of a corpus' answer passages (passage-question conversations)
 * and lossy detokenization for self-study texts. */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/utf8.h"
#include "cartridge/selfstudy_internal.h"
#include "model/model.h"

deg_status dg_detokenize_lossy(const deg_model *m, const int32_t *ids, size_t n, char **out)
{
    char *raw = NULL;
    size_t len = 0;
    DG_TRY(dg_model_detokenize(m, ids, n, &raw, &len));
    *out = dg_utf8_lossy(raw, len, NULL);
    free(raw);
    return *out ? DEG_OK : dg_fail(DEG_ERR_NOMEM, "detokenize: out of memory");
}

static int space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Tokens whose end byte is <= x (offs ascending): the index of the token
 * holding byte x. */
static size_t bisect_right(const size_t *offs, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (offs[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

typedef struct spanbuf {
    size_t *v;
    size_t n, cap;
} spanbuf;

static int push(spanbuf *b, size_t first, size_t end)
{
    if (dg_grow(&b->v, &b->cap, b->n + 1, 2 * sizeof *b->v) != DEG_OK) return 0;
    b->v[2 * b->n] = first;
    b->v[2 * b->n + 1] = end;
    b->n++;
    return 1;
}

/* Paragraph data[a, e) (between blank lines): its passages, if it qualifies. */
static int paragraph(const char *data, size_t a, size_t e, const size_t *offs, size_t n_tok,
                     int32_t max_tokens, int32_t min_words, spanbuf *out)
{
    size_t lo = a, hi = e;
    while (lo < hi && space((unsigned char)data[lo])) lo++;
    while (hi > lo && space((unsigned char)data[hi - 1])) hi--;
    if (lo == hi || data[hi - 1] == '?') return 1;
    int32_t words = 0;
    for (size_t i = lo; i < hi; i++)
        if (!space((unsigned char)data[i]) && (i == lo || space((unsigned char)data[i - 1])))
            words++;
    if (words < min_words) return 1;
    size_t first = bisect_right(offs, n_tok, lo), end = bisect_right(offs, n_tok, hi - 1) + 1;
    size_t len = end - first, k = (len + (size_t)max_tokens - 1) / (size_t)max_tokens;
    for (size_t i = 0; i < k; i++)
        if (!push(out, first + i * len / k, first + (i + 1) * len / k)) return 0;
    return 1;
}

deg_status deg_selfstudy_passages(const deg_model *model, const int32_t *ids, size_t n,
                                  int32_t max_tokens, int32_t min_words, size_t **spans,
                                  size_t *n_spans)
{
    if (!model || (!ids && n) || !spans || !n_spans || max_tokens < 1 || min_words < 0)
        return dg_fail(DEG_ERR_ARG, "deg_selfstudy_passages: NULL argument, max_tokens < 1 "
                       "or min_words < 0");
    *spans = NULL;
    *n_spans = 0;
    size_t total = 0;
    size_t *offs = malloc((n + 1) * sizeof *offs);
    char **pieces = calloc(n + 1, sizeof *pieces);
    size_t *plen = calloc(n + 1, sizeof *plen);
    char *data = NULL;
    deg_status st = offs && pieces && plen ? DEG_OK
                                           : dg_fail(DEG_ERR_NOMEM, "passages: out of memory");
    for (size_t t = 0; st == DEG_OK && t < n; t++) { /* end byte of every token */
        st = dg_model_detokenize(model, ids + t, 1, &pieces[t], &plen[t]);
        total += plen[t];
        offs[t] = total;
    }
    if (st == DEG_OK && !(data = malloc(total + 1)))
        st = dg_fail(DEG_ERR_NOMEM, "passages: out of memory");
    for (size_t t = 0, o = 0; st == DEG_OK && t < n; o += plen[t], t++)
        memcpy(data + o, pieces[t], plen[t]);
    spanbuf out = {0};
    for (size_t i = 0, start = 0; st == DEG_OK && i <= total; i++) {
        /* a paragraph break: "\n", spaces or tabs, "\n" */
        size_t j = i + 1;
        if (i < total && data[i] == '\n') {
            while (j < total && (data[j] == ' ' || data[j] == '\t')) j++;
            if (j >= total || data[j] != '\n') continue;
        } else if (i < total) {
            continue;
        }
        if (!paragraph(data, start, i, offs, n, max_tokens, min_words, &out))
            st = dg_fail(DEG_ERR_NOMEM, "passages: out of memory");
        start = j + 1;
        i = j;
    }
    for (size_t t = 0; pieces && t < n; t++) free(pieces[t]);
    free(pieces);
    free(plen);
    free(offs);
    free(data);
    if (st != DEG_OK) {
        free(out.v);
        return st;
    }
    *spans = out.v;
    *n_spans = out.n;
    return DEG_OK;
}
