/* Backward kernels, each paired with the forward kernel of lib/model/ops.h
 * (or the attention of lib/model/forward.c) it differentiates. f32, row
 * major; every kernel works per row (or per (row, head)) in a fixed order, so
 * a row's gradient never depends on how rows are batched. Gradients flow only
 * into activations and, where asked, into the K/V rows of a prefix: the model
 * weights are frozen (dW is offered for the linear layer only, for later
 * adapters). Each kernel is gradchecked in tests/c/test_grad.c. */
#ifndef DG_MODEL_OPS_BWD_H
#define DG_MODEL_OPS_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "deg.h"

/* Linear y[M,N] = x[M,K] . W[N,K]^T (forward: dg_sgemm_nt).
 *   dx[M,K] (+)= dy[M,N] . W[N,K]          (accumulate != 0: add to dx)
 * dg_linear_backward_w (adapters):
 *   dW[N,K] += dy[M,N]^T . x[M,K]           (scratch: [N*M] floats) */
void dg_linear_backward_x(float *dx, const float *dy, const float *w, size_t M, size_t N,
                          size_t K, int accumulate);
void dg_linear_backward_w(float *dw, const float *dy, const float *x, size_t M, size_t N,
                          size_t K, float *scratch);

/* RMSNorm backward (forward: dg_rmsnorm), per row of length dim:
 *   r = 1/sqrt(mean(x^2) + eps), y = w * x * r
 *   dx = r * (w*dy) - x * r^3/dim * sum_j(w_j dy_j x_j)
 * x, dy, dx: [n, dim]; w: [dim]. accumulate != 0 adds into dx. r is
 * recomputed exactly as the forward does (sum of squares in double).
 * Used per token (attn/ffn/output norms) and per (token, head) for the
 * qwen3 q/k norms (n = tokens * heads, dim = head_dim). */
void dg_rmsnorm_backward(float *dx, const float *dy, const float *x, const float *w, size_t n,
                         size_t dim, float eps, int accumulate);

/* RoPE backward (forward: dg_rope_apply): the transpose of the rotation,
 * in place on dx: [n, n_heads, head_dim] with the same tables:
 *   dx[j]       =  dy[j] * cos[j] + dy[j + D/2] * sin[j]
 *   dx[j + D/2] = -dy[j] * sin[j] + dy[j + D/2] * cos[j] */
void dg_rope_backward(float *dx, const float *cos_t, const float *sin_t, size_t n,
                      int n_heads, int head_dim);
/* The same on the first rot_dim floats of each head (forward:
 * dg_rope_apply_partial; tables of dg_rope_table(rot_dim)); the rest is the
 * identity, so its gradient passes through. */
void dg_rope_backward_partial(float *dx, const float *cos_t, const float *sin_t, size_t n,
                              int n_heads, int head_dim, int rot_dim);

/* SwiGLU backward (forward: dg_swiglu, h = silu(g) * u):
 *   s = sigmoid(g); dg = dh * u * s * (1 + g * (1 - s)); du = dh * silu(g)
 * g, u (forward inputs), dh, dg, du: [n]. dg/du may not alias g/u. */
void dg_swiglu_backward(float *dg, float *du, const float *dh, const float *g, const float *u,
                        size_t n);

/* Attention of T query tokens over a prefix of P K/V rows plus the tokens'
 * own K/V rows, end-aligned causal (query i sees every prefix row and own
 * rows 0..i: source offset = kv_seq - q_seq = P), GQA (query head h reads
 * kv head h / (H / Hkv)), scale 1/sqrt(D).
 *   q: [T, H, D] (after q-norm and RoPE); kp, vp: [P, Hkv, D]; ko, vo:
 *   [T, Hkv, D]; out: [T, H, D];
 *   stats: [T, H, 2] (row max of the scores, sum of exp) kept for the
 *   backward, which recomputes the probabilities from them.
 * It runs the inference forward's kernel (dg_attend_group, lib/model/ops.h;
 * one pass, online softmax), so the output is bitwise equal to the inference
 * forward's. scratch: [n_threads, dg_attend_group_scratch(D, 1)] floats.
 * Parallel over heads. */
void dg_attention_forward(float *out, float *stats, const float *q, const float *kp,
                          const float *vp, size_t P, const float *ko, const float *vo,
                          size_t T, int H, int Hkv, int D, float *scratch, int n_threads);

/* Attention backward, p_ij = softmax_j(s_ij), s_ij = q_i.k_j/sqrt(D),
 * recomputed as dg_expf(s_ij - m_i) / l_i (lib/model/vexp.h, the forward's
 * exp) from the forward's stats {m_i, l_i} (the online softmax's final max
 * and sum; s_ij from BLIS, so p_ij may differ from the forward's in the last
 * bits):
 *   dv_j += sum_i p_ij dout_i;  dp_ij = dout_i . v_j
 *   ds_ij = p_ij (dp_ij - sum_j p_ij dp_ij)
 *   dq_i = sum_j ds_ij k_j / sqrt(D);  dk_j += sum_i ds_ij q_i / sqrt(D)
 * dout: [T, H, D]; dq: [T, H, D] (overwritten); dko, dvo: [T, Hkv, D]
 * (overwritten); dkp, dvp: [P, Hkv, D] accumulated (may be NULL: no
 * gradient into the prefix). Per kv head, the products are BLIS GEMMs over
 * [T, P + T] score blocks (workspace 3*T*(P+T) + 4*(P+T)*D floats, allocated
 * here). Errors: DEG_ERR_NOMEM. */
deg_status dg_attention_backward(float *dq, float *dkp, float *dvp, float *dko, float *dvo,
                                 const float *dout, const float *q, const float *kp,
                                 const float *vp, size_t P, const float *ko, const float *vo,
                                 size_t T, int H, int Hkv, int D, const float *stats,
                                 int n_threads);

/* dg_attention_backward with the forward's score scale (s_ij = q_i.k_j *
 * scale; 1/sqrt(D) above), a sliding window (window > 0: query row i reads
 * keys [P + i + 1 - window, P + i] only, as dg_attend_group_win; 0: none).
 * Same outputs and errors. */
deg_status dg_attention_backward_win(float *dq, float *dkp, float *dvp, float *dko, float *dvo,
                                     const float *dout, const float *q, const float *kp,
                                     const float *vp, size_t P, const float *ko, const float *vo,
                                     size_t T, int H, int Hkv, int D, float scale, size_t window,
                                     const float *stats, int n_threads);

/* Depthwise causal convolution backward (forward: dg_causal_conv,
 * lib/model/conv.h) of one row's n tokens, all C channels, from the tail
 * [K-1, C] the forward started from:
 *   g_i = dy_i (or dy_i * silu'(a_i) with silu, a_i recomputed)
 *   dx[t] = sum_j w[j] g[t + K-1 - j];  dtail[r] = sum_{j<=r} w[j] g[r - j]
 *   dw[c][j] += sum_i g_i x(i - (K-1) + j)
 * x, dx, dy: [n, C]; w, dw: [C, K]; tail, dtail: [K-1, C]. dx and dtail
 * are overwritten (dtail may be NULL), dw accumulated (may be NULL). */
void dg_causal_conv_backward(float *dx, float *dw, float *dtail, const float *dy,
                             const float *x, const float *tail, size_t n, size_t C, int K,
                             const float *w, int silu);

/* Gated delta rule backward (forward: dg_delta_rule_step,
 * lib/model/delta_rule.h) of one value head over n tokens from the initial
 * state S0 [dk, dv]: recomputes every state, then runs the recurrence
 * backwards (dS_t += q_t do_t^T; dq_t = S_t do_t; through S_t = S' + k d^T,
 * d = (v - u) beta, u = S'^T k, S' = decay S_{t-1}).
 * q, k, dq, dk: [n, dk]; v, dout, dv: [n, dv]; beta, decay, dbeta, ddecay:
 * [n] (gradients w.r.t. beta and the decay factor exp(g)); dS0 [dk, dv] the
 * gradient into the initial state (may be NULL). Outputs are overwritten.
 * Workspace (n + 1) dk dv floats. Errors: DEG_ERR_NOMEM. */
deg_status dg_delta_rule_backward(float *dq, float *dk, float *dv, float *dbeta, float *ddecay,
                                  float *dS0, const float *dout, const float *q, const float *k,
                                  const float *v, const float *beta, const float *decay,
                                  const float *S0, size_t n, size_t dk_dim, size_t dv_dim);

#endif
