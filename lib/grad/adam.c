/* The one Adam / AdamW update (rule in adam.h). */
#include "grad/adam.h"

#include <math.h>

/* No fused multiply-add anywhere below: the same bits on every build and ISA. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

size_t dg_adam_update(float *w, const float *g, float *m, float *v, size_t n, float lr,
                      const float *lr_each, int64_t t, const dg_adam_rule *rule, bool apply)
{
    double bc1 = 1.0 - pow(rule->beta1, (double)t), bc2 = 1.0 - pow(rule->beta2, (double)t);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1 = (float)rule->beta1, b2 = (float)rule->beta2, eps = rule->eps;
    float wd = rule->weight_decay;
    float step_size = (float)(lr / bc1), decay = (float)(1.0 - (double)lr * wd);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (lr_each) {
            step_size = (float)(lr_each[i] / bc1);
            decay = (float)(1.0 - (double)lr_each[i] * wd);
        }
        float wi = w[i], gi = g[i];
        if (rule->decoupled) wi = wi * decay;
        else gi = gi + wd * wi;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        float step = step_size * mi;
        wi = wi - step / (sqrtf(vi) / bc2_sqrt + eps);
        if (bad == SIZE_MAX && (!isfinite(wi) || !isfinite(mi) || !isfinite(vi))) {
            bad = i;
            if (!apply) return bad;
        }
        if (apply) {
            m[i] = mi;
            v[i] = vi;
            w[i] = wi;
        }
    }
    return bad;
}
