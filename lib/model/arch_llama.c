/* `llama` (SmolLM2, Llama 2/3 without rope scaling): pre-norm decoder,
 * GQA attention with rotate-half RoPE, SwiGLU MLP (transformers
 * modeling_llama.py). llama.cpp's converter interleaves the rows of each
 * attn_q/attn_k head in GGUF files; the loader undoes it. */
#include "model/arch.h"
#include "model/layer_bwd.h"

static deg_status llama_load_layer(deg_model *m, int il, dg_layer *out)
{
    return dg_load_std_layer(m, il, /*with_qk_norm=*/0, /*gguf_permuted_qk=*/1, out);
}

const dg_arch dg_arch_llama = {
    .name = "llama",
    .load_layer = llama_load_layer,
    .forward_layer = dg_forward_std_layer,
    .backward_layer = dg_backward_std_layer,
};
