/* adam.h - the one Adam / AdamW update of libdeg: cartridge rows (lib/cartridge) and,
 * through deg_adam_update, the Python head/LoRA trainer (deg.train.optim) both step
 * with it. The rule, its sources and every caller's hyper-parameters are written here
 * once; the other places (include/cartridge.h, deg.train.optim, doc/ARCHITECTURE.md)
 * point here.
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
 *
 * Sources. Adam: Kingma & Ba, "Adam: A Method for Stochastic Optimization" (ICLR 2015),
 * Algorithm 1: m_hat = m / bc1, v_hat = v / bc2, w -= lr * m_hat / (sqrt(v_hat) + eps);
 * the last line above is that step rearranged as torch does (equal in real arithmetic,
 * eps still outside the square root). Coupled decay is L2 regularisation folded into
 * g (torch.optim.Adam's weight_decay). AdamW: Loshchilov & Hutter, "Decoupled Weight
 * Decay Regularization" (ICLR 2019), Algorithm 2: w_t = w_{t-1} - eta_t * (alpha * m_hat
 * / (sqrt(v_hat) + eps) + lambda * w_{t-1}); torch.optim.AdamW (this rule) decays by
 * lr * weight_decay with lr = eta_t * alpha, i.e. lambda = alpha * weight_decay, and
 * decays w before the step, which is the same in real arithmetic (the Adam step does
 * not read w when the decay is decoupled).
 *
 * Callers and their hyper-parameters:
 * - deg.train (heads, LoRA adapters; deg-contract §12.4, §12.7): decoupled (AdamW),
 *   beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0.01 (--weight-decay; torch AdamW's
 *   defaults); lr = lr_at(step): linear warmup over --warmup steps to --lr, then cosine
 *   to 10% of it (adapters: --lora-lr, per-element lr_each); the gradient is clipped to
 *   global norm --clip (1.0) before the step. deg.train stepped heads with its own
 *   numpy arithmetic until 7d56e71 ((m / bc1) / (sqrt(v / bc2) + eps) + wd * w, all
 *   fp32): the same rule rounded in another order. On a 30-step tiny-llama run of
 *   tests/python/test_train.py's data the two give heads within 5.2e-7 of each other
 *   (weights up to 6; 7% of the floats bitwise equal), moments within 7e-7 (m) and
 *   2.6e-9 (v), losses equal to 6 significant digits, so checkpoints trained before
 *   (smollm2-135m-v2 .. v5) are reproduced up to float rounding, not bitwise.
 * - cartridges (deg_cartridge_adam_step, deg_cartridge_train_step, self-study, fleets;
 *   doc/spec/cartridges.md "Optimizer: Adam, ... no weight decay, no schedule"):
 *   coupled (Adam), deg_adam_params_default: lr 2e-3 (the paper's 2e-2 is for 65k
 *   supervised tokens per step; cartridges.md explains the CLI's 2e-3), beta1 0.9,
 *   beta2 0.999, eps 1e-8, weight_decay 0; fleets ramp each entrant's lr (warm-up).
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
