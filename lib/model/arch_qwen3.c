/* `qwen3` (dense Qwen3): the llama layer plus a per-head RMSNorm of q and k
 * (over head_dim, weights shared by all heads) before RoPE (transformers
 * modeling_qwen3.py). llama.cpp writes qwen3 q/k rows unpermuted (NEOX-style
 * RoPE = rotate-half), so nothing is undone for GGUF. */
#include "model/arch.h"
#include "model/layer_bwd.h"

static deg_status qwen3_load_layer(deg_model *m, int il, dg_layer *out)
{
    return dg_load_std_layer(m, il, /*with_qk_norm=*/1, /*gguf_permuted_qk=*/0, out);
}

const dg_arch dg_arch_qwen3 = {
    .name = "qwen3",
    .chat_layout = "qwen3",
    .load_layer = qwen3_load_layer,
    .forward_layer = dg_forward_std_layer,
    .backward_layer = dg_backward_std_layer,
};
