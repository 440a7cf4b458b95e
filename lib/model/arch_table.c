/* The architectures deg runs, by GGUF general.architecture / HF model_type.
 * Adding one = a new arch_<name>.c and a line here. */
#include <string.h>

#include "model/arch.h"

extern const dg_arch dg_arch_llama;
extern const dg_arch dg_arch_qwen3;
extern const dg_arch dg_arch_lfm2;
extern const dg_arch dg_arch_qwen3_5;
extern const dg_arch dg_arch_gemma4;

static const dg_arch *const dg_archs[] = {&dg_arch_llama, &dg_arch_qwen3, &dg_arch_lfm2,
                                          &dg_arch_qwen3_5, &dg_arch_gemma4};

const dg_arch *dg_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof dg_archs / sizeof dg_archs[0]; i++)
        if (strcmp(dg_archs[i]->name, name) == 0) return dg_archs[i];
    return NULL;
}

const dg_arch *dg_arch_find_gguf(const char *name)
{
    for (size_t i = 0; i < sizeof dg_archs / sizeof dg_archs[0]; i++) {
        const char *g = dg_archs[i]->gguf_arch ? dg_archs[i]->gguf_arch : dg_archs[i]->name;
        if (strcmp(g, name) == 0) return dg_archs[i];
    }
    return NULL;
}

void dg_arch_list(char *buf, size_t cap)
{
    size_t o = 0;
    if (cap) buf[0] = '\0';
    for (size_t i = 0; i < sizeof dg_archs / sizeof dg_archs[0] && o + 1 < cap; i++) {
        size_t n = strlen(dg_archs[i]->name);
        if (o + n + 3 >= cap) break;
        if (i) { buf[o++] = ','; buf[o++] = ' '; }
        memcpy(buf + o, dg_archs[i]->name, n + 1);
        o += n;
    }
}
