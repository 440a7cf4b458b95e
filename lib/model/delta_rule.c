/* One token of the gated delta rule (delta_rule.h). */
#include <string.h>

#include "model/delta_rule.h"

void dg_delta_rule_step(float *S, const float *q, const float *k, const float *v, float decay,
                        float beta, size_t dk, size_t dv, float *u, float *o)
{
    float kv[DG_DN_MAX_HEAD_DIM];
    for (size_t j = 0; j < dv; j++) kv[j] = 0.0f;
    for (size_t i = 0; i < dk; i++) {
        float *Si = S + i * dv;
        for (size_t j = 0; j < dv; j++) {
            Si[j] *= decay;
            kv[j] += Si[j] * k[i];
        }
    }
    if (u) memcpy(u, kv, sizeof(float) * dv);
    for (size_t j = 0; j < dv; j++) kv[j] = (v[j] - kv[j]) * beta; /* delta */
    for (size_t j = 0; j < dv; j++) o[j] = 0.0f;
    for (size_t i = 0; i < dk; i++) {
        float *Si = S + i * dv;
        for (size_t j = 0; j < dv; j++) {
            Si[j] += k[i] * kv[j];
            o[j] += Si[j] * q[i];
        }
    }
}
