/* Gradchecks of the backward kernels (lib/model/ops_bwd.h): each f32 analytic
 * gradient against central finite differences of an independent float64
 * reference forward written here, for the scalar loss sum(dy * y) with random
 * dy. Reported: max |analytic - numeric| / max |numeric| per kernel. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ops_bwd.h"
#include "model/conv.h"
#include "model/delta_rule.h"
#include "model/ops.h"

static uint64_t rs = 88172645463325252ull;
static double urand(void) /* [-1, 1) */
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
static void fill(float *x, size_t n, double s) { for (size_t i = 0; i < n; i++) x[i] = (float)(s * urand()); }

static double rel_err(const float *ana, const double *num, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)ana[i] - num[i]);
        if (!(e <= d)) d = e;
        if (fabs(num[i]) > m) m = fabs(num[i]);
    }
    return m > 0 ? d / m : d;
}

/* Numeric gradient of f(x) (f64) w.r.t. x (f64 copy of xs), central diff. */
typedef double (*loss_fn)(const double *x, void *ctx);
static void num_grad(double *g, double *x, size_t n, loss_fn f, void *ctx)
{
    const double h = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + h; double a = f(x, ctx);
        x[i] = x0 - h; double b = f(x, ctx);
        x[i] = x0;
        g[i] = (a - b) / (2 * h);
    }
}
static double *to_d(const float *x, size_t n)
{
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* ----------------------------------------------------------- RMSNorm */
typedef struct { const float *w, *dy; size_t n, dim; double eps; } rms_ctx;
static double rms_loss(const double *x, void *vc)
{
    rms_ctx *c = vc;
    double L = 0;
    for (size_t i = 0; i < c->n; i++) {
        double ss = 0;
        for (size_t j = 0; j < c->dim; j++) ss += x[i * c->dim + j] * x[i * c->dim + j];
        double r = 1.0 / sqrt(ss / c->dim + c->eps);
        for (size_t j = 0; j < c->dim; j++) L += c->dy[i * c->dim + j] * c->w[j] * x[i * c->dim + j] * r;
    }
    return L;
}

Test(grad, rmsnorm)
{
    size_t n = 5, dim = 24;
    float x[120], w[24], dy[120], dx[120];
    fill(x, n * dim, 2.0); fill(w, dim, 1.5); fill(dy, n * dim, 1.0);
    dg_rmsnorm_backward(dx, dy, x, w, n, dim, 1e-5f, 0);
    rms_ctx c = {w, dy, n, dim, 1e-5};
    double *xd = to_d(x, n * dim), g[120];
    num_grad(g, xd, n * dim, rms_loss, &c);
    double e = rel_err(dx, g, n * dim);
    cr_log_info("gradcheck rmsnorm: rel err %.3g", e);
    cr_expect_lt(e, 1e-5, "rmsnorm rel err %g", e);
    /* accumulate adds */
    float acc[120];
    for (size_t i = 0; i < n * dim; i++) acc[i] = 1.0f;
    dg_rmsnorm_backward(acc, dy, x, w, n, dim, 1e-5f, 1);
    for (size_t i = 0; i < n * dim; i++) cr_assert_float_eq(acc[i], 1.0f + dx[i], 1e-6);
    free(xd);
}

/* -------------------------------------------------------------- RoPE */
typedef struct { const float *c, *s, *dy; size_t n; int H, D; } rope_ctx;
static double rope_loss(const double *x, void *vc)
{
    rope_ctx *c = vc;
    int half = c->D / 2;
    double L = 0;
    for (size_t i = 0; i < c->n; i++)
        for (int h = 0; h < c->H; h++) {
            const double *v = x + (i * c->H + h) * c->D;
            const float *g = c->dy + (i * c->H + h) * c->D;
            for (int j = 0; j < half; j++) {
                double co = c->c[i * half + j], si = c->s[i * half + j];
                L += g[j] * (v[j] * co - v[j + half] * si);
                L += g[j + half] * (v[j + half] * co + v[j] * si);
            }
        }
    return L;
}

Test(grad, rope)
{
    size_t n = 4; int H = 3, D = 8;
    int64_t pos[4] = {5, 6, 7, 300};
    float ct[16], st[16], x[96], dy[96];
    dg_rope_table(ct, st, pos, n, D, 10000.0f);
    fill(x, 96, 1.0); fill(dy, 96, 1.0);
    memcpy(x, dy, sizeof dy);
    dg_rope_backward(x, ct, st, n, H, D);
    rope_ctx c = {ct, st, dy, n, H, D};
    float x0[96]; fill(x0, 96, 1.0);
    double *xd = to_d(x0, 96), g[96];
    num_grad(g, xd, 96, rope_loss, &c);
    double e = rel_err(x, g, 96);
    cr_log_info("gradcheck rope: rel err %.3g", e);
    cr_expect_lt(e, 1e-6, "rope rel err %g", e);
    free(xd);
}

/* ------------------------------------------------------------ SwiGLU */
typedef struct { const float *dy; size_t n; int which; const double *other; } swi_ctx;
static double swi_loss(const double *x, void *vc)
{
    swi_ctx *c = vc;
    double L = 0;
    for (size_t i = 0; i < c->n; i++) {
        double g = c->which == 0 ? x[i] : c->other[i], u = c->which == 0 ? c->other[i] : x[i];
        L += c->dy[i] * g / (1 + exp(-g)) * u;
    }
    return L;
}

Test(grad, swiglu)
{
    size_t n = 64;
    float g[64], u[64], dy[64], dg[64], du[64];
    fill(g, n, 6.0); fill(u, n, 2.0); fill(dy, n, 1.0);
    dg_swiglu_backward(dg, du, dy, g, u, n);
    double *gd = to_d(g, n), *ud = to_d(u, n), ng[64], nu[64];
    swi_ctx c = {dy, n, 0, ud};
    num_grad(ng, gd, n, swi_loss, &c);
    c.which = 1; c.other = gd;
    num_grad(nu, ud, n, swi_loss, &c);
    double e1 = rel_err(dg, ng, n), e2 = rel_err(du, nu, n);
    cr_log_info("gradcheck swiglu: rel err dgate %.3g dup %.3g", e1, e2);
    cr_expect_lt(e1, 1e-5);
    cr_expect_lt(e2, 1e-5);
    free(gd); free(ud);
}

/* ------------------------------------------------------------ Linear */
typedef struct { const float *w, *dy, *x; size_t M, N, K; } lin_ctx;
static double lin_loss_x(const double *x, void *vc)
{
    lin_ctx *c = vc;
    double L = 0;
    for (size_t i = 0; i < c->M; i++)
        for (size_t o = 0; o < c->N; o++) {
            double y = 0;
            for (size_t k = 0; k < c->K; k++) y += x[i * c->K + k] * c->w[o * c->K + k];
            L += c->dy[i * c->N + o] * y;
        }
    return L;
}
static double lin_loss_w(const double *w, void *vc)
{
    lin_ctx *c = vc;
    double L = 0;
    for (size_t i = 0; i < c->M; i++)
        for (size_t o = 0; o < c->N; o++) {
            double y = 0;
            for (size_t k = 0; k < c->K; k++) y += c->x[i * c->K + k] * w[o * c->K + k];
            L += c->dy[i * c->N + o] * y;
        }
    return L;
}

Test(grad, linear)
{
    size_t M = 7, N = 9, K = 11;
    float x[77], w[99], dy[63], dx[77], dw[99] = {0}, scr[63];
    fill(x, M * K, 1.0); fill(w, N * K, 1.0); fill(dy, M * N, 1.0);
    dg_linear_backward_x(dx, dy, w, M, N, K, 0);
    dg_linear_backward_w(dw, dy, x, M, N, K, scr);
    lin_ctx c = {w, dy, x, M, N, K};
    double *xd = to_d(x, M * K), *wd = to_d(w, N * K), gx[77], gw[99];
    num_grad(gx, xd, M * K, lin_loss_x, &c);
    num_grad(gw, wd, N * K, lin_loss_w, &c);
    double e1 = rel_err(dx, gx, M * K), e2 = rel_err(dw, gw, N * K);
    cr_log_info("gradcheck linear: rel err dx %.3g dW %.3g", e1, e2);
    cr_expect_lt(e1, 1e-5);
    cr_expect_lt(e2, 1e-5);
    free(xd); free(wd);
}

/* --------------------------------------------------------- Attention */
typedef struct {
    size_t P, T; int H, Hkv, D;
    double *q, *kp, *vp, *ko, *vo;  /* current values (one is perturbed) */
    const float *dy;
    double scale;                   /* 0: 1/sqrt(D) */
    size_t window;                  /* 0: none; else row i sees keys > P + i - window */
} att_ctx;

/* f64 reference: end-aligned causal GQA attention over prefix + own rows. */
static double att_loss(const double *unused, void *vc)
{
    att_ctx *c = vc;
    (void)unused;
    int grp = c->H / c->Hkv, D = c->D;
    size_t kvr = (size_t)c->Hkv * D, qr = (size_t)c->H * D, L = c->P + c->T;
    double *s = malloc(L * sizeof *s), tot = 0;
    for (size_t i = 0; i < c->T; i++)
        for (int h = 0; h < c->H; h++) {
            int g = h / grp;
            const double *qi = c->q + i * qr + (size_t)h * D;
            size_t n = c->P + i + 1, lo = c->window && n > c->window ? n - c->window : 0;
            double mx = -INFINITY;
            for (size_t j = lo; j < n; j++) {
                const double *kj = j < c->P ? c->kp + j * kvr : c->ko + (j - c->P) * kvr;
                double d = 0;
                for (int e = 0; e < D; e++) d += qi[e] * kj[g * D + e];
                s[j] = d * (c->scale ? c->scale : 1.0 / sqrt((double)D));
                if (s[j] > mx) mx = s[j];
            }
            double sum = 0;
            for (size_t j = lo; j < n; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
            for (int e = 0; e < D; e++) {
                double o = 0;
                for (size_t j = lo; j < n; j++) {
                    const double *vj = j < c->P ? c->vp + j * kvr : c->vo + (j - c->P) * kvr;
                    o += s[j] / sum * vj[g * D + e];
                }
                tot += c->dy[i * qr + (size_t)h * D + e] * o;
            }
        }
    free(s);
    return tot;
}

/* scale 0: 1/sqrt(D) and no window (dg_attention_forward / _backward);
 * else the forward of dg_attend_group_win per head and
 * dg_attention_backward_win with that scale and window. */
static void check_attention_win(size_t P, size_t T, int H, int Hkv, int D, int nt, float scale,
                                size_t window)
{
    size_t kvr = (size_t)Hkv * D, qr = (size_t)H * D;
    size_t nq = T * qr, np = P * kvr, no = T * kvr;
    float *q = malloc(nq * 4), *kp = malloc((np + 1) * 4), *vp = malloc((np + 1) * 4);
    float *ko = malloc(no * 4), *vo = malloc(no * 4), *dy = malloc(nq * 4);
    fill(q, nq, 1.5); fill(kp, np, 1.5); fill(vp, np, 1.0); fill(ko, no, 1.5);
    fill(vo, no, 1.0); fill(dy, nq, 1.0);
    float *out = malloc(nq * 4), *stats = malloc(T * H * 2 * 4);
    float *scr = malloc((size_t)nt * dg_attend_group_scratch(D, 1) * 4);
    if (!scale)
        dg_attention_forward(out, stats, q, kp, vp, P, ko, vo, T, H, Hkv, D, scr, nt);
    else
        for (int h = 0; h < H; h++) {
            size_t go = (size_t)(h / (H / Hkv)) * (size_t)D, ho = (size_t)h * (size_t)D;
            dg_attend_group_win(out + ho, qr, stats + 2 * (size_t)h, 2 * (size_t)H, q + ho, qr,
                                kp + go, vp + go, P, ko + go, vo + go, 0, T, kvr, D, 1, scale,
                                window, scr);
        }
    float *dq = malloc(nq * 4), *dkp = calloc(np + 1, 4), *dvp = calloc(np + 1, 4);
    float *dko = malloc(no * 4), *dvo = malloc(no * 4);
    if (!scale)
        cr_assert_eq(dg_attention_backward(dq, dkp, dvp, dko, dvo, dy, q, kp, vp, P, ko, vo, T,
                                           H, Hkv, D, stats, nt), DEG_OK);
    else
        cr_assert_eq(dg_attention_backward_win(dq, dkp, dvp, dko, dvo, dy, q, kp, vp, P, ko, vo,
                                               T, H, Hkv, D, scale, window, stats, nt), DEG_OK);
    att_ctx c = {P, T, H, Hkv, D, to_d(q, nq), to_d(kp, np), to_d(vp, np), to_d(ko, no),
                 to_d(vo, no), dy, scale, window};
    double *g = malloc((nq > np ? (nq > no ? nq : no) : (np > no ? np : no)) * 8 + 8);
    struct { const char *name; double *x; float *ana; size_t n; } parts[] = {
        {"q", c.q, dq, nq}, {"k_prefix", c.kp, dkp, np}, {"v_prefix", c.vp, dvp, np},
        {"k_own", c.ko, dko, no}, {"v_own", c.vo, dvo, no}};
    for (size_t k = 0; k < 5; k++) {
        if (!parts[k].n) continue;
        num_grad(g, parts[k].x, parts[k].n, att_loss, &c);
        double e = rel_err(parts[k].ana, g, parts[k].n);
        cr_log_info("gradcheck attention P=%zu T=%zu H=%d Hkv=%d scale %g window %zu: d%s rel "
                    "err %.3g", P, T, H, Hkv, (double)scale, window, parts[k].name, e);
        cr_expect_lt(e, 2e-5, "attention d%s rel err %g", parts[k].name, e);
    }
    free(q); free(kp); free(vp); free(ko); free(vo); free(dy); free(out); free(stats);
    free(scr); free(dq); free(dkp); free(dvp); free(dko); free(dvo); free(g);
    free(c.q); free(c.kp); free(c.vp); free(c.ko); free(c.vo);
}

static void check_attention(size_t P, size_t T, int H, int Hkv, int D, int nt)
{
    check_attention_win(P, T, H, Hkv, D, nt, 0.0f, 0);
}

Test(grad, attention_prefix_gqa) { check_attention(5, 4, 4, 2, 8, 1); }
/* Gemma 4's attention: score scale 1 (after its q/k norms) and a sliding
 * window that cuts into the prefix for the first rows and into the own rows
 * for the last (window 4 over P = 5, T = 6); a wide window (no cut) and a
 * window of 1 (each row sees only itself: dq = 0, dk_prefix = 0). */
Test(grad, attention_window_scale)
{
    check_attention_win(5, 6, 4, 2, 8, 1, 1.0f, 4);
    check_attention_win(5, 6, 4, 2, 8, 2, 0.3f, 4);
    check_attention_win(3, 4, 2, 1, 8, 1, 1.0f, 100);
    check_attention_win(4, 3, 2, 2, 4, 1, 0.5f, 1);
}
Test(grad, attention_prefix_gqa_threads) { check_attention(6, 3, 6, 2, 4, 2); }
Test(grad, attention_no_prefix) { check_attention(0, 5, 2, 1, 8, 1); }
Test(grad, attention_mha) { check_attention(3, 2, 2, 2, 6, 1); }
/* Contexts past one 64-key tile: the forward's stats come out of the online
 * softmax's rescaled sums (lib/model/ops.h). */
Test(grad, attention_past_a_tile) { check_attention(66, 4, 2, 1, 8, 2); }

/* ------------------------------------------- causal conv (lfm2, DeltaNet) */
typedef struct { const float *w, *dy; size_t n, C; int K, silu, which; const double *x, *tail, *wd; } conv_ctx;
/* sum(dy * conv(x)) in f64; `which` picks the variable: 0 x, 1 tail, 2 w. */
static double conv_loss(const double *var, void *vc)
{
    conv_ctx *c = vc;
    const double *x = c->which == 0 ? var : c->x, *tail = c->which == 1 ? var : c->tail;
    const double *w = c->which == 2 ? var : c->wd;
    size_t T = (size_t)(c->K - 1);
    double L = 0;
    for (size_t ch = 0; ch < c->C; ch++)
        for (size_t i = 0; i < c->n; i++) {
            double a = 0;
            for (size_t j = 0; j < (size_t)c->K; j++) {
                size_t t = i + j;
                a += w[ch * c->K + j] * (t < T ? tail[t * c->C + ch] : x[(t - T) * c->C + ch]);
            }
            if (c->silu) a = a / (1 + exp(-a));
            L += c->dy[i * c->C + ch] * a;
        }
    return L;
}

static void check_conv(size_t n, size_t C, int K, int silu)
{
    size_t T = (size_t)(K - 1);
    float *x = malloc(sizeof(float) * n * C), *tail = malloc(sizeof(float) * T * C);
    float *w = malloc(sizeof(float) * C * K), *dy = malloc(sizeof(float) * n * C);
    float *dx = malloc(sizeof(float) * n * C), *dt = malloc(sizeof(float) * T * C);
    float *dw = calloc(C * K, sizeof(float));
    fill(x, n * C, 2.0); fill(tail, T * C, 2.0); fill(w, C * K, 1.0); fill(dy, n * C, 1.0);
    dg_causal_conv_backward(dx, dw, dt, dy, x, tail, n, C, K, w, silu);
    double *xd = to_d(x, n * C), *td = to_d(tail, T * C), *wd = to_d(w, C * K);
    double *gx = malloc(sizeof(double) * n * C), *gt = malloc(sizeof(double) * T * C);
    double *gw = malloc(sizeof(double) * C * K);
    conv_ctx c = {w, dy, n, C, K, silu, 0, xd, td, wd};
    num_grad(gx, xd, n * C, conv_loss, &c);
    c.which = 1;
    num_grad(gt, td, T * C, conv_loss, &c);
    c.which = 2;
    num_grad(gw, wd, C * K, conv_loss, &c);
    double ex = rel_err(dx, gx, n * C), et = rel_err(dt, gt, T * C), ew = rel_err(dw, gw, C * K);
    cr_log_info("gradcheck causal conv n=%zu K=%d silu=%d: dx %.3g dtail %.3g dw %.3g", n, K,
                silu, ex, et, ew);
    cr_expect_lt(ex, 1e-5);
    cr_expect_lt(et, 1e-5);
    cr_expect_lt(ew, 1e-5);
    /* the forward it differentiates: dg_causal_conv from the same tail */
    float *y = malloc(sizeof(float) * n * C), *tl = malloc(sizeof(float) * T * C);
    memcpy(tl, tail, sizeof(float) * T * C);
    dg_causal_conv(y, C, x, C, n, 0, C, C, K, w, NULL, tl, silu);
    double L = 0;
    for (size_t i = 0; i < n * C; i++) L += (double)dy[i] * y[i];
    c.which = 0;
    cr_expect_lt(fabs(L - conv_loss(xd, &c)), 1e-4 * (1 + fabs(L)));
    free(x); free(tail); free(w); free(dy); free(dx); free(dt); free(dw); free(y); free(tl);
    free(xd); free(td); free(wd); free(gx); free(gt); free(gw);
}

Test(grad, causal_conv_short) { check_conv(5, 6, 3, 0); }      /* lfm2: no activation */
Test(grad, causal_conv_silu_short_row) { check_conv(2, 5, 4, 1); } /* fewer tokens than taps */
Test(grad, causal_conv_silu) { check_conv(7, 4, 4, 1); }        /* DeltaNet: conv + SiLU */

/* ---------------------------------------------------- gated delta rule */
typedef struct {
    const float *dy; size_t n, dk, dv; int which;
    const double *q, *k, *v, *beta, *decay, *S0;
} dr_ctx;
/* sum(dy * o) in f64; `which`: 0 q, 1 k, 2 v, 3 beta, 4 decay, 5 S0. */
static double dr_loss(const double *var, void *vc)
{
    dr_ctx *c = vc;
    const double *in[6] = {c->q, c->k, c->v, c->beta, c->decay, c->S0};
    in[c->which] = var;
    size_t dk = c->dk, dv = c->dv;
    double *S = malloc(sizeof(double) * dk * dv), u[16], L = 0;
    memcpy(S, in[5], sizeof(double) * dk * dv);
    for (size_t t = 0; t < c->n; t++) {
        const double *q = in[0] + t * dk, *k = in[1] + t * dk, *v = in[2] + t * dv;
        for (size_t j = 0; j < dv; j++) u[j] = 0;
        for (size_t i = 0; i < dk; i++)
            for (size_t j = 0; j < dv; j++) {
                S[i * dv + j] *= in[4][t];
                u[j] += S[i * dv + j] * k[i];
            }
        for (size_t i = 0; i < dk; i++)
            for (size_t j = 0; j < dv; j++) S[i * dv + j] += k[i] * (v[j] - u[j]) * in[3][t];
        for (size_t j = 0; j < dv; j++) {
            double o = 0;
            for (size_t i = 0; i < dk; i++) o += S[i * dv + j] * q[i];
            L += c->dy[t * dv + j] * o;
        }
    }
    free(S);
    return L;
}

Test(grad, delta_rule)
{
    size_t n = 6, dk = 4, dv = 5;
    float q[24], k[24], v[30], beta[6], decay[6], S0[20], dy[30];
    fill(q, 24, 0.6); fill(k, 24, 0.6); fill(v, 30, 1.0); fill(S0, 20, 0.5); fill(dy, 30, 1.0);
    for (size_t t = 0; t < n; t++) {
        beta[t] = (float)(0.5 + 0.4 * urand());
        decay[t] = (float)(0.8 + 0.15 * urand());
    }
    float dq[24], dk_[24], dv_[30], db[6], dd[6], dS0[20];
    cr_assert_eq(dg_delta_rule_backward(dq, dk_, dv_, db, dd, dS0, dy, q, k, v, beta, decay, S0,
                                        n, dk, dv), DEG_OK);
    double *d[6] = {to_d(q, 24), to_d(k, 24), to_d(v, 30), to_d(beta, 6), to_d(decay, 6),
                    to_d(S0, 20)};
    const float *ana[6] = {dq, dk_, dv_, db, dd, dS0};
    size_t len[6] = {24, 24, 30, 6, 6, 20};
    const char *nm[6] = {"q", "k", "v", "beta", "decay", "S0"};
    dr_ctx c = {dy, n, dk, dv, 0, d[0], d[1], d[2], d[3], d[4], d[5]};
    for (int w = 0; w < 6; w++) {
        double g[30];
        c.which = w;
        num_grad(g, d[w], len[w], dr_loss, &c);
        double e = rel_err(ana[w], g, len[w]);
        cr_log_info("gradcheck delta rule: d%s rel err %.3g", nm[w], e);
        cr_expect_lt(e, 1e-5, "d%s rel err %g", nm[w], e);
    }
    /* the forward it differentiates: dg_delta_rule_step from S0 */
    float S[20], o[5];
    double L = 0;
    memcpy(S, S0, sizeof S);
    for (size_t t = 0; t < n; t++) {
        dg_delta_rule_step(S, q + t * dk, k + t * dk, v + t * dv, decay[t], beta[t], dk, dv, NULL,
                           o);
        for (size_t j = 0; j < dv; j++) L += (double)dy[t * dv + j] * o[j];
    }
    c.which = 0;
    cr_expect_lt(fabs(L - dr_loss(d[0], &c)), 1e-4 * (1 + fabs(L)));
    for (int w = 0; w < 6; w++) free(d[w]);
}
