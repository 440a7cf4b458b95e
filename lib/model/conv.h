/* Depthwise causal 1-D convolution with a carried tail: transformers'
 * causal_conv1d_fn / causal_conv1d_update (modeling_lfm2.py,
 * modeling_qwen3_5.py) on one row's tokens, continuing from the previous
 * K-1 inputs so that a prefill split into chunks (or a fork continuing its
 * trunk) computes what one pass over all tokens computes. */
#ifndef DG_MODEL_CONV_H
#define DG_MODEL_CONV_H

#include <stddef.h>

/* For channels c in [c0, c1) of C, tokens i < n:
 *   out[i*ldo + c] = act(bias[c] + sum_{j<K} w[c*K + j] * x(i - (K-1) + j)[c])
 * with x(t) = in + t*ldi for t >= 0 and tail row (K-1) + t for t < 0;
 * act = SiLU if silu, identity otherwise; bias may be NULL. Then channel c
 * of tail [K-1, C] (oldest row first) holds the last K-1 inputs. Taps are
 * summed in j order in f32: a channel's result depends on its own inputs
 * only (batch-invariant). out must not alias in or tail. K >= 1. */
void dg_causal_conv(float *out, size_t ldo, const float *in, size_t ldi, size_t n, size_t c0,
                    size_t c1, size_t C, int K, const float *w, const float *bias, float *tail,
                    int silu);

#endif
