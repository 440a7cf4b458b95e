/* fill_columns.c - which column of a table each property of an array of objects reads
 * when no column name says so (lists.h tables; libdeg 0.21.0), and the cells of
 * headerless tables that fields outside them may read.
 *
 * Why: a headerless table ("uucp  540/tcp  uucpd", /etc/services; zone.tab; mime.types)
 * names no column, and a named one may name only some of the properties ("service =
 * x11-1" for a property `name`), so each such leaf of each record picked a cell on its
 * own, and the heads, reading a row of bare values, put the protocol in one record's
 * name and the alias in the next one's (datagen-v2 val services, raw layout: 7% of
 * fields right). A table's columns mean the same thing on every row: the heads' choices
 * over all rows, pooled per column, say which column a property reads far more surely
 * than any one row does.
 *
 * Rule: the free properties of a table instance are its extract leaves that no column
 * names in any record (every one, in a headerless table); the free columns those no
 * other property reads (a headerless table's columns are positions: the k-th written
 * cell; a named table's are its cell keys). For each free leaf of each record (every
 * one is in the round after the anchors), the leaf's pointer logits (its head and the
 * anchored-extract bias, as decoding computes them) score each written cell c of its
 * record in a free column: start logit at c's first token + end logit at its last, over
 * the extract temperature, a softmax over those cells whose text is a valid value of the
 * leaf (a port column for an integer, not "tcp"). A property's weight for a column is
 * the sum of those probabilities over the records, divided by the number of records.
 * The assignment (one column per property, one property per column, or none) with the
 * largest total weight wins, a property every record must have (required, not nullable)
 * on a column every record writes (a table with fewer columns than properties leaves
 * an optional one out, not the record's name): an exhaustive search while small, else
 * greedy (a list item's lead part goes to the item's one required plain string first:
 * lead_part, libdeg 0.22.0). A property then reads its column's cell in every record (a record without
 * that column reads an empty cell: null; a property without a column, null). Decoding
 * treats the cell as a named column's (the list bonus at its edges, the span kept
 * inside it). Meta "list_columns" of the array says what each free property read.
 * A pure function of the request's own fork rows: batch-independent. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "deg/anchor.h"
#include "deg/fill.h"
#include "deg/fill_internal.h"

#define MAX_COLUMNS 64 /* columns of one table told apart; cells past them are read as before */

/* The columns of a table instance: a cell under a key is in that key's column
 * (a named table's, a list item's "Key: value" part), a cell without one in the
 * column of its position among the record's cells without a key (a headerless
 * table's k-th cell, a list item's k-th plain part); in order of first appearance
 * over the instance's records. */
typedef struct columns {
    const dg_lists *ls;
    const char *key[MAX_COLUMNS]; /* "" for a position */
    size_t pos[MAX_COLUMNS];      /* the position, for key "" */
    size_t n;
} columns;

/* Column of cell c, the k-th cell without a key of its record; -1 beyond
 * MAX_COLUMNS. */
static int column_of(columns *C, size_t c, size_t k)
{
    const char *key = C->ls->cell[c].key;
    for (size_t i = 0; i < C->n; i++)
        if (strcmp(C->key[i], key) == 0 && (key[0] || C->pos[i] == k)) return (int)i;
    if (C->n == MAX_COLUMNS) return -1;
    C->key[C->n] = key;
    C->pos[C->n] = k;
    return (int)C->n++;
}

/* The written cells of list item `it` (at most MAX_COLUMNS): indices into ls->cell
 * and their columns; returns the count. */
static size_t row_cells(columns *C, size_t it, size_t *cell, int *col)
{
    const dg_lists *ls = C->ls;
    size_t n = 0, k = 0;
    for (size_t c = ls->item_cell[it]; c < ls->item_cell[it + 1] && n < MAX_COLUMNS; c++) {
        if (ls->cell[c].c1 <= ls->cell[c].c0) continue;
        int x = column_of(C, c, ls->cell[c].key[0] ? 0 : k++);
        if (x < 0) continue;
        cell[n] = c;
        col[n++] = x;
    }
    return n;
}

/* Add leaf L's probabilities over the free columns (job j: its fork row) to
 * w[field][column] (MAX_COLUMNS per field). */
static deg_status score_leaf(const dg_ckpt *k, const freq *r, const job *j, const leaf *L,
                             columns *C, const unsigned char *claimed, double *w)
{
    const inst *I = &r->insts[L->inst];
    const dg_array_plan *A = &r->plan->arrays[I->array];
    const dg_field_plan *f = &r->plan->fields[L->field];
    const dg_lists *ls = C->ls;
    size_t it = ls->p[I->list1 - 1].first + I->list_idx[L->item];
    size_t cells[MAX_COLUMNS];
    int cols[MAX_COLUMNS];
    size_t n = row_cells(C, it, cells, cols);
    if (!n) return DEG_OK;
    const int E = k->h.E;
    size_t nc = r->c1 - r->c0;
    const float *a = j->h + (j->n_mark - 1) * (size_t)E;
    float q[DG_HEAD_DIM];
    float *rs = malloc((size_t)E * sizeof(float));
    float *lg = malloc(2 * (nc + 1) * sizeof(float));
    double sc[MAX_COLUMNS];
    json_t *schema = dg_fill_leaf_schema(f);
    if (!rs || !lg || !schema) {
        free(rs);
        free(lg);
        json_decref(schema);
        return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (table columns)");
    }
    size_t anc = 0, rend = 0;
    int anchored = dg_fill_innermost_anchor(r, L->inst, L->item, &anc, &rend);
    for (int x = 0; x < 2; x++) {
        float *l = lg + (size_t)x * (nc + 1);
        dg_head_extract_logits(&k->h, x, a, r->ctx_hidden, nc, rs, q, l);
        if (anchored) dg_anchor_bias_add(&k->h, x, anc, rend, l, nc);
    }
    double T = k->temp[DG_T_EXTRACT], mx = -INFINITY;
    for (size_t c = 0; c < n; c++) {
        const dg_cell *cl = &ls->cell[cells[c]];
        const char *why = NULL;
        int as = 0;
        json_t *v = claimed[cols[c]] ? NULL
                                     : dg_fill_span_value(r, f, schema, cl->c0, cl->c1, &why, &as);
        sc[c] = -INFINITY;
        if (v) {
            size_t ts = r->cp_tok[cl->c0], te = r->cp_tok[cl->c1 - 1];
            sc[c] = ((double)lg[ts] + (double)lg[nc + 1 + te]) / T;
            if (sc[c] > mx) mx = sc[c];
        }
        json_decref(v);
    }
    if (mx > -INFINITY) {
        double z = 0;
        for (size_t c = 0; c < n; c++) z += exp(sc[c] - mx);
        size_t fi = L->field - A->first_field;
        for (size_t c = 0; c < n; c++) w[fi * MAX_COLUMNS + (size_t)cols[c]] += exp(sc[c] - mx) / z;
    }
    free(rs);
    free(lg);
    json_decref(schema);
    return DEG_OK;
}

/* The assignment of free properties to columns (one column per property, one property
 * per column, or none) with the largest total weight, a property every record must
 * have (must) on a column every record writes (full), never on a column of weight 0
 * (no valid value there: an integer on "tcp"); ties to the first found. An
 * exhaustive search while it is small (at most SEARCH_MAX leaves), else greedy: the
 * heaviest (property, column) pair first, the must properties before the others. */
typedef struct assign_search {
    const double *w;            /* [nf][MAX_COLUMNS] */
    size_t nf, ncol;
    const size_t *active;       /* [nf] nonzero: a free property of this round */
    unsigned char *must, *ok, *full; /* [nf], [MAX_COLUMNS] x2 */
    int *cur, *col;             /* [nf]: the assignment tried, the best (-1: none) */
    double best;
    size_t leaves;
} assign_search;

#define SEARCH_MAX 200000

static void search(assign_search *S, size_t f, double sum, unsigned char *used)
{
    if (S->leaves > SEARCH_MAX) return;
    if (f == S->nf) {
        S->leaves++;
        if (sum > S->best) {
            S->best = sum;
            memcpy(S->col, S->cur, S->nf * sizeof *S->col);
        }
        return;
    }
    S->cur[f] = -1;
    if (!S->active[f]) {
        search(S, f + 1, sum, used);
        return;
    }
    for (size_t c = 0; c < S->ncol; c++) {
        /* weight 0: no record's cell there is a valid value of the property */
        if (used[c] || !S->ok[c] || (S->must[f] && !S->full[c]) ||
            S->w[f * MAX_COLUMNS + c] <= 0)
            continue;
        used[c] = 1;
        S->cur[f] = (int)c;
        search(S, f + 1, sum + S->w[f * MAX_COLUMNS + c], used);
        used[c] = 0;
    }
    S->cur[f] = -1;
    if (!S->must[f]) search(S, f + 1, sum, used);
}

static void greedy(assign_search *S)
{
    unsigned char taken[MAX_COLUMNS] = {0};
    for (size_t f = 0; f < S->nf; f++) S->col[f] = -1;
    for (int pass = 0; pass < 2;) {
        double best = 0;
        size_t bf = 0, bc = 0;
        for (size_t f = 0; f < S->nf; f++) {
            if (!S->active[f] || S->col[f] >= 0 || (pass == 0 && !S->must[f])) continue;
            for (size_t c = 0; c < S->ncol; c++)
                if (!taken[c] && S->ok[c] && (pass || S->full[c]) &&
                    S->w[f * MAX_COLUMNS + c] > best) {
                    best = S->w[f * MAX_COLUMNS + c];
                    bf = f;
                    bc = c;
                }
        }
        if (best <= 0) {
            pass++;
            continue;
        }
        S->col[bf] = (int)bc;
        taken[bc] = 1;
    }
}

static void assign(assign_search *S)
{
    unsigned char used[MAX_COLUMNS] = {0};
    for (size_t f = 0; f < S->nf; f++) S->col[f] = -1;
    search(S, 0, 0, used);
    if (S->leaves > SEARCH_MAX || S->best < 0) greedy(S);
}

/* A list of records' lead (libdeg 0.22.0): an item written "whois; Port: 43", "whois
 * &mdash; 43 &mdash; tcp" or "whois (43, tcp)" is named by its first part without a key,
 * and an item's one required plain string (required, not nullable, no format) is its
 * name: when exactly one free property is such, its weight on that column (position 0)
 * gets +1, more than any pooled weight (at most 1), unless no record's cell there is a
 * valid value of it (weight 0). Why: the heads' pooled weights put `service` on the
 * "tcp" column and the alias on the name's (datagen-v2 val services, HTML and kv
 * layouts). Lists only: a data file's first column is no name (zone.tab's country code
 * before the zone). */
static void lead_part(const freq *r, const dg_array_plan *A, const columns *C,
                      const size_t *rows, double *w)
{
    size_t lead = MAX_COLUMNS, name = SIZE_MAX, n_names = 0;
    for (size_t c = 0; c < C->n; c++)
        if (!C->key[c][0] && C->pos[c] == 0) lead = c;
    for (size_t f = 0; f < A->n_fields && lead < MAX_COLUMNS; f++) {
        const dg_field_plan *fp = &r->plan->fields[A->first_field + f];
        if (rows[f] && fp->mode == DG_MODE_SPAN && fp->on_null == DG_ON_NULL_FORBID &&
            fp->format == DG_FORMAT_NONE) {
            name = f;
            n_names++;
        }
    }
    if (n_names == 1 && w[name * MAX_COLUMNS + lead] > 0) w[name * MAX_COLUMNS + lead] += 1.0;
}

/* Columns of instance `in` (a table's records) from the round's jobs, for the
 * extract properties no column names (every one, in a headerless table). */
static deg_status columns_of(const dg_ckpt *k, freq *r, size_t ri, int in, const job *J, size_t nj)
{
    inst *I = &r->insts[in];
    const dg_array_plan *A = &r->plan->arrays[I->array];
    const dg_list *T = &r->lists.p[I->list1 - 1];
    size_t nf = A->n_fields, ni = (size_t)I->n_items;
    columns C = {.ls = &r->lists};
    size_t cells[MAX_COLUMNS], written[MAX_COLUMNS] = {0}; /* records writing column c */
    int cols[MAX_COLUMNS];
    unsigned char claimed[MAX_COLUMNS] = {0};
    /* a property is free when no column names it in any record (rec_cell SIZE_MAX) */
    unsigned char *free_f = calloc(nf ? nf : 1, 1);
    double *w = calloc((nf ? nf : 1) * MAX_COLUMNS, sizeof *w);
    size_t *rows = calloc(nf ? nf : 1, sizeof *rows);
    int *col = malloc((nf ? nf : 1) * sizeof *col);
    deg_status st = DEG_OK;
    if (!free_f || !w || !rows || !col) {
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (table columns)");
        goto done;
    }
    for (size_t f = 0; f < nf; f++) free_f[f] = !dg_mode_is_decide(r->plan->fields[A->first_field + f].mode);
    for (size_t i = 0; i < ni; i++) {
        size_t n = row_cells(&C, T->first + I->list_idx[i], cells, cols);
        for (size_t c = 0; c < n; c++) {
            written[cols[c]]++;
            for (size_t f = 0; f < nf; f++)
                if (I->rec_cell[i * nf + f] == cells[c]) claimed[cols[c]] = 1;
        }
        for (size_t f = 0; f < nf; f++) free_f[f] &= I->rec_cell[i * nf + f] == SIZE_MAX;
    }
    int any = 0;
    for (size_t f = 0; f < nf; f++) any |= free_f[f];
    if (!any) goto done;
    for (size_t q = 0; q < nj && st == DEG_OK; q++) {
        const job *j = &J[q];
        if (j->req != ri || j->kind != JOB_LEAF || !j->h) continue;
        const leaf *L = &r->leaves[j->target];
        if (L->inst != in || !free_f[L->field - A->first_field]) continue;
        rows[L->field - A->first_field]++;
        st = score_leaf(k, r, j, L, &C, claimed, w);
    }
    if (st != DEG_OK) goto done;
    for (size_t f = 0; f < nf; f++) {
        col[f] = -1;
        for (size_t c = 0; rows[f] && c < MAX_COLUMNS; c++) w[f * MAX_COLUMNS + c] /= (double)rows[f];
    }
    if (!T->table) lead_part(r, A, &C, rows, w);
    assign_search A2 = {.w = w, .nf = nf, .ncol = C.n, .col = col, .best = -1};
    A2.cur = malloc((nf ? nf : 1) * sizeof *A2.cur);
    A2.must = calloc(nf ? nf : 1, 1);
    A2.ok = calloc(MAX_COLUMNS, 1);
    A2.full = calloc(MAX_COLUMNS, 1);
    A2.active = rows;
    if (!A2.cur || !A2.must || !A2.ok || !A2.full) {
        free(A2.cur);
        free(A2.must);
        free(A2.ok);
        free(A2.full);
        st = dg_fail(DEG_ERR_NOMEM, "fill: out of memory (table columns)");
        goto done;
    }
    for (size_t f = 0; f < nf; f++)
        A2.must[f] = rows[f] && r->plan->fields[A->first_field + f].on_null == DG_ON_NULL_FORBID;
    for (size_t c = 0; c < C.n; c++) {
        A2.ok[c] = !claimed[c];
        A2.full[c] = written[c] == ni;
    }
    assign(&A2);
    free(A2.cur);
    free(A2.must);
    free(A2.ok);
    free(A2.full);
    for (size_t i = 0; i < ni; i++) {
        size_t it = T->first + I->list_idx[i];
        /* a list's item of one part (no cells) reads the whole item (fill_extract.c) */
        if (!T->table && r->lists.item_cell[it + 1] == r->lists.item_cell[it]) continue;
        size_t n = row_cells(&C, it, cells, cols);
        for (size_t f = 0; f < nf; f++) {
            if (!rows[f]) continue; /* not free, or not in this round */
            size_t x = DG_CELL_MISSING;
            for (size_t c = 0; c < n && col[f] >= 0; c++)
                if (cols[c] == col[f]) x = cells[c];
            I->rec_cell[i * nf + f] = x;
        }
    }
    /* meta "list_columns" (fill_response.c): a column's key, or the position of a
     * column without one */
    I->table_col = json_object();
    for (size_t f = 0; f < nf && I->table_col; f++) {
        const dg_field_plan *fp = &r->plan->fields[A->first_field + f];
        const char *name = fp->path.n ? fp->path.seg[fp->path.n - 1] : NULL;
        if (!rows[f] || !name) continue;
        json_t *v = col[f] < 0       ? json_null()
                    : C.key[col[f]][0] ? json_string(C.key[col[f]])
                                       : json_integer((json_int_t)C.pos[col[f]]);
        json_object_set_new(I->table_col, name, v);
    }
done:
    free(free_f);
    free(w);
    free(rows);
    free(col);
    return st;
}

deg_status dg_fill_table_columns(const dg_ckpt *k, freq *reqs, const job *J, size_t nj)
{
    for (size_t q = 0; q < nj; q++) {
        const job *j = &J[q];
        if (j->kind != JOB_LEAF || !j->h) continue;
        freq *r = &reqs[j->req];
        const leaf *L = &r->leaves[j->target];
        if (r->st != DEG_OK || L->inst < 0) continue;
        inst *I = &r->insts[L->inst];
        if (I->columns_set || !I->from_list || !I->rec_cell) continue;
        I->columns_set = 1;
        DG_TRY(columns_of(k, r, j->req, L->inst, J, nj));
    }
    return DEG_OK;
}

deg_status dg_fill_cell_map(freq *r)
{
    const dg_lists *ls = &r->lists;
    int any = 0;
    for (size_t i = 0; i < ls->n && !any; i++) any = ls->p[i].table == DG_TABLE_HEADERLESS;
    if (!any) return DEG_OK;
    r->hl_cell = calloc(r->n_cp ? r->n_cp : 1, sizeof *r->hl_cell);
    if (!r->hl_cell) return dg_fail(DEG_ERR_NOMEM, "fill: out of memory (table cells)");
    for (size_t i = 0; i < ls->n; i++) {
        const dg_list *L = &ls->p[i];
        if (L->table != DG_TABLE_HEADERLESS) continue;
        for (size_t it = L->first; it < L->first + L->n; it++) {
            for (size_t c = ls->item[2 * it]; c < ls->item[2 * it + 1] && c < r->n_cp; c++)
                r->hl_cell[c] = UINT32_MAX;
            for (size_t x = ls->item_cell[it]; x < ls->item_cell[it + 1]; x++)
                for (size_t c = ls->cell[x].c0; c < ls->cell[x].c1 && c < r->n_cp; c++)
                    r->hl_cell[c] = (uint32_t)(x + 1);
        }
    }
    return DEG_OK;
}

int dg_fill_cell_span_ok(const freq *r, size_t s, size_t e)
{
    if (!r->hl_cell || e <= s || e > r->n_cp) return 1;
    uint32_t v = r->hl_cell[s];
    for (size_t c = s; c < e; c++)
        if (r->hl_cell[c] != v) return 0;
    return v != UINT32_MAX;
}
