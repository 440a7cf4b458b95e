/* adam.h - the one Adam / AdamW update of libdeg: cartridge rows (lib/cartridge) and,
 * through deg_adam_update, the Python head/LoRA trainer (deg.train.optim) both step
 * with it.
 *
 * Rule: PyTorch's single-tensor Adam (torch/optim/adam.py `_single_tensor_adam`, amsgrad
 * off, not capturable), element by element in fp32 with the scalars in double as
 * PyTorch computes them on the host:
 *   t-th step (t >= 1), bc1 = 1 - beta1^t, bc2 = 1 - beta2^t (double)
 *   decoupled (AdamW):  w *= (float)(1 - lr * weight_decay)
 *   coupled  (Adam):    g += weight_decay * w
 *   m = beta1 * m + (1 - beta1) * g
 *   v = beta2 * v + (1 - beta2) * g * g
 *   w = w - (float)(lr / bc1) * m / (sqrtf(v) / (float)sqrt(bc2) + eps)
 * (torch's exp_avg.lerp_ rounds differently from the m line in the last bit; the
 * goldens tests/goldens/gen_cartridge_goldens.py compare within tolerance.)
 * The operations are written so that no multiply-add is fused: the result is the
 * same bits for the same inputs on every build (tests/c/test_adam.c).
 */
#ifndef DG_GRAD_ADAM_H
#define DG_GRAD_ADAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dg_adam_rule {
    double beta1, beta2;      /* in [0, 1) (float values widened) */
    float eps;                /* > 0 */
    float weight_decay;       /* >= 0 */
    bool decoupled;           /* true: AdamW's decay of w; false: L2 added to g */
} dg_adam_rule;

/* One step t (>= 1) over n elements: w, m, v updated in place from g (fp32, n each).
 * lr: per-element rates (lr_each, n floats) or, when lr_each is NULL, lr for all.
 * apply = false only computes: returns the index of the first element whose new w,
 * m or v would be non-finite, or SIZE_MAX when all are finite (then, with apply =
 * true, the update is written; with apply = true the return value is the same
 * check's result, and a non-finite element is still written). */
size_t dg_adam_update(float *w, const float *g, float *m, float *v, size_t n, float lr,
                      const float *lr_each, int64_t t, const dg_adam_rule *rule, bool apply);

#endif
