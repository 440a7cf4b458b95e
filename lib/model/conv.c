/* Depthwise causal convolution over a segment with a carried tail (the
 * short convolution of lfm2 and the q/k/v convolution of Gated DeltaNet). */
#include <math.h>
#include <string.h>

#include "model/conv.h"

void dg_causal_conv(float *out, size_t ldo, const float *in, size_t ldi, size_t n, size_t c0,
                    size_t c1, size_t C, int K, const float *w, const float *bias, float *tail,
                    int silu)
{
    size_t T = (size_t)(K - 1);
    for (size_t c = c0; c < c1; c++) {
        const float *wc = w + c * (size_t)K;
        for (size_t i = 0; i < n; i++) {
            float acc = bias ? bias[c] : 0.0f;
            for (size_t j = 0; j < (size_t)K; j++) {
                /* input at time i - T + j: the tail for negative times */
                size_t t = i + j; /* = (i - T + j) + T */
                float xv = t < T ? tail[t * C + c] : in[(t - T) * ldi + c];
                acc += wc[j] * xv;
            }
            out[i * ldo + c] = silu ? acc / (1.0f + expf(-acc)) : acc;
        }
        /* the new tail: the last T inputs of (tail, in[0..n)) */
        if (n >= T) {
            for (size_t t = 0; t < T; t++) tail[t * C + c] = in[(n - T + t) * ldi + c];
        } else {
            for (size_t t = 0; t + n < T; t++) tail[t * C + c] = tail[(t + n) * C + c];
            for (size_t t = 0; t < n; t++) tail[(T - n + t) * C + c] = in[t * ldi + c];
        }
    }
}
