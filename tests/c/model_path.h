/* model_path.h - where the C tests find the default model, the same place
 * scripts/fetch-model puts it: $DEG_MODEL if set, else
 * ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf.
 * Tests on the real model skip (saying this path) when it is absent. */
#ifndef DEG_TESTS_MODEL_PATH_H
#define DEG_TESTS_MODEL_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TU_DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

/* Writes the path into buf[cap]; returns buf if the file is readable, else
 * NULL (buf still holds the path, for the skip message). */
static inline const char *tu_default_model(char *buf, size_t cap)
{
    const char *env = getenv("DEG_MODEL");
    const char *cache = getenv("DEG_CACHE");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, cap, "%s", env);
    else if (cache && *cache)
        snprintf(buf, cap, "%s/models/" TU_DEFAULT_MODEL_FILE, cache);
    else
        snprintf(buf, cap, "%s/.cache/deg/models/" TU_DEFAULT_MODEL_FILE, home ? home : ".");
    return access(buf, R_OK) == 0 ? buf : NULL;
}

#endif
