/* The gated delta rule (Yang et al. 2024, "Gated Delta Networks"; transformers
 * torch_recurrent_gated_delta_rule), one token of one value head: the
 * recurrence of a Gated DeltaNet layer (arch_qwen3_5.c), shared with its
 * backward (lib/model/recurrent_bwd.c) so both run the same arithmetic. */
#ifndef DG_MODEL_DELTA_RULE_H
#define DG_MODEL_DELTA_RULE_H

#include <stddef.h>

#define DG_DN_MAX_HEAD_DIM 512

/* In place on the state S [dk, dv] (f32, row i = key dim):
 *   S *= decay;  u = S^T k;  delta = (v - u) * beta;  S += k delta^T;
 *   o = S^T q
 * q, k: [dk] (already L2-normalised, q scaled); v, o: [dv]; u: [dv] receives
 * u (may be NULL). Fixed order: i (key dim) outer, j inner, f32.
 * dk, dv <= DG_DN_MAX_HEAD_DIM. */
void dg_delta_rule_step(float *S, const float *q, const float *k, const float *v, float decay,
                        float beta, size_t dk, size_t dv, float *u, float *o);

#endif
