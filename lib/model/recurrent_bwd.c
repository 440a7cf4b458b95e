/* Backward kernels of the recurrent layers' cores (ops_bwd.h): the
 * depthwise causal convolution with a carried tail (lib/model/conv.c) and
 * the gated delta rule of one Gated DeltaNet value head
 * (lib/model/arch_qwen3_5.c), including the gradient into the initial
 * state (tail / S0), the natural trainable prefix of a recurrent layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/ops_bwd.h"
#include "model/delta_rule.h"

void dg_causal_conv_backward(float *dx, float *dw, float *dtail, const float *dy,
                             const float *x, const float *tail, size_t n, size_t C, int K,
                             const float *w, int silu)
{
    size_t T = (size_t)(K - 1);
    memset(dx, 0, sizeof(float) * n * C);
    if (dtail) memset(dtail, 0, sizeof(float) * T * C);
    for (size_t c = 0; c < C; c++) {
        const float *wc = w + c * (size_t)K;
        for (size_t i = 0; i < n; i++) {
            float g = dy[i * C + c];
            if (silu) { /* recompute the pre-activation as the forward does */
                float a = 0.0f;
                for (size_t j = 0; j < (size_t)K; j++) {
                    size_t t = i + j;
                    a += wc[j] * (t < T ? tail[t * C + c] : x[(t - T) * C + c]);
                }
                float s = 1.0f / (1.0f + expf(-a));
                g *= s * (1.0f + a * (1.0f - s));
            }
            for (size_t j = 0; j < (size_t)K; j++) {
                size_t t = i + j; /* input time i - T + j, shifted by T */
                float xv = t < T ? tail[t * C + c] : x[(t - T) * C + c];
                if (dw) dw[c * (size_t)K + j] += g * xv;
                if (t < T) {
                    if (dtail) dtail[t * C + c] += g * wc[j];
                } else {
                    dx[(t - T) * C + c] += g * wc[j];
                }
            }
        }
    }
}

deg_status dg_delta_rule_backward(float *dq, float *dk_, float *dv_, float *dbeta, float *ddecay,
                                  float *dS0, const float *dout, const float *q, const float *k,
                                  const float *v, const float *beta, const float *decay,
                                  const float *S0, size_t n, size_t dk, size_t dv)
{
    size_t SN = dk * dv;
    float *S = malloc(sizeof(float) * SN * (n + 1)), *dS = calloc(SN, sizeof(float));
    float *u = malloc(sizeof(float) * dv * n), *o = malloc(sizeof(float) * dv);
    float *du = malloc(sizeof(float) * dv), *dd = malloc(sizeof(float) * dv);
    if (!S || !dS || !u || !o || !du || !dd) {
        free(S); free(dS); free(u); free(o); free(du); free(dd);
        return dg_fail(DEG_ERR_NOMEM, "delta rule backward: out of memory (%zu tokens)", n);
    }
    /* forward again, keeping every state S_t (S + t*SN = state after t tokens) */
    memcpy(S, S0, sizeof(float) * SN);
    for (size_t t = 0; t < n; t++) {
        memcpy(S + (t + 1) * SN, S + t * SN, sizeof(float) * SN);
        dg_delta_rule_step(S + (t + 1) * SN, q + t * dk, k + t * dk, v + t * dv, decay[t],
                           beta[t], dk, dv, u + t * dv, o);
    }
    for (size_t t = n; t-- > 0;) {
        const float *St = S + (t + 1) * SN, *Sp = S + t * SN;
        const float *qt = q + t * dk, *kt = k + t * dk, *vt = v + t * dv, *go = dout + t * dv;
        const float *ut = u + t * dv;
        float a = decay[t], b = beta[t];
        /* o = S_t^T q */
        for (size_t i = 0; i < dk; i++) {
            float s = 0.0f;
            for (size_t j = 0; j < dv; j++) {
                s += St[i * dv + j] * go[j];
                dS[i * dv + j] += qt[i] * go[j];
            }
            dq[t * dk + i] = s;
        }
        /* S_t = S' + k d^T, d = (v - u) b */
        for (size_t j = 0; j < dv; j++) dd[j] = 0.0f;
        for (size_t i = 0; i < dk; i++) {
            float s = 0.0f;
            for (size_t j = 0; j < dv; j++) {
                s += dS[i * dv + j] * (vt[j] - ut[j]) * b;
                dd[j] += dS[i * dv + j] * kt[i];
            }
            dk_[t * dk + i] = s;
        }
        float db = 0.0f;
        for (size_t j = 0; j < dv; j++) {
            dv_[t * dv + j] = dd[j] * b;
            du[j] = -dd[j] * b;
            db += dd[j] * (vt[j] - ut[j]);
        }
        dbeta[t] = db;
        /* u = S'^T k, S' = S_prev * a */
        float da = 0.0f;
        for (size_t i = 0; i < dk; i++) {
            float s = 0.0f;
            for (size_t j = 0; j < dv; j++) {
                float sp = Sp[i * dv + j] * a;
                s += sp * du[j];
                dS[i * dv + j] += kt[i] * du[j];
                da += dS[i * dv + j] * Sp[i * dv + j];
                dS[i * dv + j] *= a;
            }
            dk_[t * dk + i] += s;
        }
        ddecay[t] = da;
    }
    if (dS0) memcpy(dS0, dS, sizeof(float) * SN);
    free(S); free(dS); free(u); free(o); free(du); free(dd);
    return DEG_OK;
}
