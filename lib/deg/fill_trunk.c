/* fill_trunk.c - the context trunk of a fill request (§12.1): its prompt opening,
 * prefill, the context token <-> code point maps and the line tables of plain spans. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/run.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "deg/fill_internal.h"
#include "deg/parse.h"
#include "deg/sentences.h"
#include "model/arch.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/state.h"
#include "tokenizer/tokenizer.h"

/* The fill prompt is one user turn of the checkpoint's chat layout, written in two
 * parts: the trunk opens it (the turn's opening, "CONTEXT:\n", the context) and a
 * generate fork's text closes it (the turn's end and the generation prompt); the
 * text around the content is the chat renderer's (dg_chat_user_turn). Layout
 * "none": no turn ("CONTEXT:\n" ... "VALUE: "). The layout is the one the
 * checkpoint's name maps to (dg_chat_layout_lookup, at load). */
dg_chat_layout dg_fill_layout(const dg_ckpt *k) { return k->layout; }

/* The trunk's tokens before the context, appended to ids. Under a chat layout the
 * chat tokenization rule (model/chat.h, as Hugging Face's
 * apply_chat_template(tokenize=True)): the layout's text with special tokens and no
 * BOS of the tokenizer's own (a layout that wants one writes it: LFM2's
 * "<|startoftext|>"). Layout "none": raw text, the tokenizer's BOS when it adds one. */
static deg_status put_turn_open(ivec *ids, const dg_ckpt *k)
{
    static const char head[] = "CONTEXT:\n";
    dg_chat_layout layout = dg_fill_layout(k);
    if (layout == DG_CHAT_NONE) {
        const dg_tokenizer *tk = dg_model_tokenizer(k->model);
        int32_t bos = dg_tokenizer_bos(tk);
        if (bos >= 0 && dg_tokenizer_add_bos(tk)) DG_TRY(dg_fill_push(ids, bos));
        return dg_fill_tok(ids, k->model, head, strlen(head), 1);
    }
    char *open, *close;
    DG_TRY(dg_chat_user_turn(layout, &open, &close));
    dg_strbuf b = {0};
    dg_sb_puts(&b, open);
    dg_sb_puts(&b, head);
    free(open);
    free(close);
    deg_status st = b.oom ? dg_fail(DEG_ERR_NOMEM, "fill: out of memory")
                          : dg_fill_tok(ids, k->model, b.p, b.len, 1);
    free(b.p);
    return st;
}

deg_status dg_fill_trunk(const dg_ckpt *k, freq *r)
{
    const deg_model *m = k->model;
    const dg_tokenizer *tk = dg_model_tokenizer(m);
    ivec ids = {0};
    deg_status st = put_turn_open(&ids, k);
    r->c0 = ids.n;
    if (st == DEG_OK) st = dg_fill_tok(&ids, m, r->ctx, r->ctx_len, 0);
    r->c1 = ids.n;
    if (st == DEG_OK) st = dg_fill_tok(&ids, m, "\n", 1, 0);
    if (st != DEG_OK) goto done;
    size_t nc = r->c1 - r->c0;
    /* code point tables */
    size_t ncp = 0;
    if ((st = dg_parse_utf8_check(r->ctx, r->ctx_len, "context", &ncp)) != DEG_OK) goto done;
    r->n_cp = ncp;
    r->cp_byte = malloc((ncp + 1) * sizeof(size_t));
    r->cp_tok = malloc((ncp + 1) * sizeof(size_t));
    r->tok_cp0 = malloc((nc + 1) * sizeof(size_t));
    r->tok_cp1 = malloc((nc + 1) * sizeof(size_t));
    if (!r->cp_byte || !r->cp_tok || !r->tok_cp0 || !r->tok_cp1) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (context tables)");
        goto done;
    }
    {
        size_t c = 0;
        for (size_t b = 0; b < r->ctx_len; b++)
            if (((unsigned char)r->ctx[b] & 0xC0) != 0x80) r->cp_byte[c++] = b;
        r->cp_byte[ncp] = r->ctx_len;
        for (size_t e = 0; e < ncp; e++) r->cp_tok[e] = SIZE_MAX;
        /* token byte ranges -> code point ranges; bytes the tokenizer dropped
         * (dg_fill_tok) belong to no token and are stepped over */
        size_t byte = 0, cp = 0;
        for (size_t t = 0; t < nc; t++) {
            size_t len = 0;
            (void)dg_tokenizer_token_bytes(tk, ids.p[r->c0 + t], &len);
            while (byte < r->ctx_len && dg_tokenizer_byte_missing(tk, (unsigned char)r->ctx[byte]))
                byte++;
            size_t b0 = byte, b1 = byte + len;
            /* cp0: first code point starting at or after b0, or containing b0 */
            while (cp < ncp && r->cp_byte[cp + 1] <= b0) cp++;
            r->tok_cp0[t] = cp;
            size_t e = cp;
            while (e < ncp && r->cp_byte[e] < b1) {
                /* unset: the character's first byte was dropped (dg_fill_tok) */
                if (r->cp_byte[e] >= b0 || r->cp_tok[e] == SIZE_MAX) r->cp_tok[e] = t;
                e++;
            }
            r->tok_cp1[t] = e;
            byte = b1;
        }
        while (byte < r->ctx_len && dg_tokenizer_byte_missing(tk, (unsigned char)r->ctx[byte]))
            byte++;
        if (byte != r->ctx_len) {
            st = dg_fail(DEG_ERR_INTERNAL, "fill: context tokens cover %zu bytes, the context "
                         "has %zu", byte, r->ctx_len);
            goto done;
        }
        r->cp_tok[ncp] = nc;
        /* a dropped character: the next token (as for a position between tokens) */
        for (size_t e = ncp, next = nc; e-- > 0;) {
            if (r->cp_tok[e] == SIZE_MAX) r->cp_tok[e] = next;
            else next = r->cp_tok[e];
        }
    }
    if ((st = deg_trunk_new(m, &r->trunk)) != DEG_OK) goto done;
    {
        size_t E = (size_t)m->hp.n_embd;
        float *hidden = malloc((ids.n ? ids.n : 1) * E * sizeof(float));
        if (!hidden) {
            st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (context hidden states, %zu tokens)",
                         ids.n);
            goto done;
        }
        double t0 = dg_now();
        dg_poll prev = dg_run_push(dg_limits_poll, &r->lim);
        st = dg_limits_check(&r->lim, "prefill");
        if (st == DEG_OK) st = dg_trunk_prefill_hidden(r->trunk, ids.p, ids.n, hidden);
        dg_run_pop(prev);
        r->t_prefill += dg_now() - t0;
        if (st == DEG_OK) {
            /* keep only the context rows */
            memmove(hidden, hidden + r->c0 * E, nc * E * sizeof(float));
            float *h = realloc(hidden, (nc ? nc : 1) * E * sizeof(float));
            r->ctx_hidden = h ? h : hidden;
        } else {
            free(hidden);
        }
    }
done:
    if ((r->trace || r->lm_prior > 0) && st == DEG_OK) r->trunk_ids = ids.p;
    else free(ids.p);
    return st;
}

/* Blank for the line rule: ASCII whitespace and C0 controls (dg_span_trim trims
 * these and Unicode spaces; the exact check after trimming uses nl_pre). */
static int blank_byte(unsigned char c)
{
    return c <= 0x20 || c == 0x7F;
}

deg_status dg_fill_sentence_table(freq *r)
{
    size_t n = r->n_cp, ends = 0;
    r->se_pre = malloc((n + 1) * sizeof(size_t));
    if (!r->se_pre) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (sentence table)");
    for (size_t c = 0; c < n; c++) {
        r->se_pre[c] = ends;
        ends += (size_t)dg_sentence_end(r->ctx, r->ctx_len, r->cp_byte[c]);
    }
    r->se_pre[n] = ends;
    return DEG_OK;
}

deg_status dg_fill_line_tables(freq *r)
{
    size_t n = r->n_cp;
    r->nl_pre = malloc((n + 1) * sizeof(size_t));
    r->nb_next = malloc((n + 1) * sizeof(size_t));
    r->nb_prev = malloc((n + 1) * sizeof(size_t));
    if (!r->nl_pre || !r->nb_next || !r->nb_prev)
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (line tables)");
    size_t nl = 0, last = 0;
    for (size_t c = 0; c < n; c++) {
        r->nl_pre[c] = nl;
        r->nb_prev[c] = last;
        unsigned char b = (unsigned char)r->ctx[r->cp_byte[c]];
        if (b == '\n') nl++;
        if (!blank_byte(b)) last = c + 1;
    }
    r->nl_pre[n] = nl;
    r->nb_prev[n] = last;
    size_t next = n;
    r->nb_next[n] = n;
    for (size_t c = n; c-- > 0;) {
        if (!blank_byte((unsigned char)r->ctx[r->cp_byte[c]])) next = c;
        r->nb_next[c] = next;
    }
    return DEG_OK;
}
