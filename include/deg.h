/*
 * deg.h - the public C API of libdeg (umbrella header).
 *
 * libdeg runs small transformer language models on the CPU for two jobs:
 * schema fill (a JSON value always valid against a JSON Schema, read from a
 * document in one pass) and cartridges (trained KV prefixes).
 *
 * The API is split by audience; include this header for all of it, or one:
 *   deg_runtime.h  conventions, status and messages, limits and cancellation,
 *                  models, tokenizers, chat, trunks and forks, generation
 *   deg_schema.h   schema compiler, plan, requests, parsers, validator
 *   deg_fill.h     checkpoints and schema fill (deg_fill, deg_fill_many)
 *   deg_train.h    training of the heads (features, losses, saving)
 *   cartridge.h    cartridges (trained KV prefixes), fleets, Adam
 *   lora.h         LoRA adapters on the fork path
 * The conventions every call follows (status codes, deg_errmsg(), ownership,
 * threads, closing) are at the top of deg_runtime.h.
 */
#ifndef DEG_H
#define DEG_H

#include "deg_runtime.h"
#include "deg_schema.h"
#include "deg_fill.h"
#include "deg_train.h"

#endif /* DEG_H */
