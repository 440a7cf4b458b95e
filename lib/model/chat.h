/* Chat layouts: rendering a conversation to the prompt text a model family
 * was trained on, without a general Jinja engine. Each layout reproduces
 * byte for byte what the family's own chat template renders through
 * transformers' apply_chat_template (pinned by tests/goldens/chat_*.json,
 * made by tests/goldens/gen_chat.py):
 *
 *  - DG_CHAT_CHATML (SmolLM2): per message
 *        "<|im_start|>" role "\n" content "<|im_end|>\n"
 *    preceded, when the first message is not a system message, by the
 *    template's default system message if it has one (SmolLM2-Instruct:
 *    "You are a helpful AI assistant named SmolLM, trained by Hugging Face").
 *    Generation prompt: "<|im_start|>assistant\n".
 *  - DG_CHAT_QWEN3 (Qwen3, enable_thinking=False): ChatML without a default
 *    system message; an assistant message's "<think>...</think>" part is
 *    dropped when the message precedes the last user message, and rendered as
 *    "<think>\n" reasoning "\n</think>\n\n" content after it (always for the
 *    final message), as the Qwen3 template does. Generation prompt:
 *    "<|im_start|>assistant\n<think>\n\n</think>\n\n" (the empty think block
 *    that turns thinking off).
 *  - DG_CHAT_LFM2 (LiquidAI LFM2, its tokenizer's chat template without
 *    tools): "<|startoftext|>" (the template's bos_token), then a system
 *    turn from messages[0] only when it is a system message with non-empty
 *    content (an empty one renders nothing; a later system message is an
 *    ordinary turn), then every other message as a ChatML turn; no default
 *    system message. Generation prompt: "<|im_start|>assistant\n".
 *  - DG_CHAT_GEMMA4 (Gemma 4, its chat template without tools, thinking
 *    off: google/gemma-4-*-it's chat_template.jinja, a copy of which is
 *    llama.cpp's models/templates/google-gemma-4-31B-it.jinja): "<bos>",
 *    then per message "<|turn>" role "\n" content "<turn|>\n" with role
 *    "model" for assistant; the content trimmed (Python str.strip: Unicode
 *    whitespace at both ends); a model message's content first loses its
 *    thinking ("<|channel>" .. "<channel|>" parts: of each "<channel|>"-
 *    separated part that holds "<|channel>", only the text before it is
 *    kept); an assistant message right after an assistant message continues
 *    its turn (no new "<|turn>model\n"). No default system message (a first
 *    system message is an ordinary "<|turn>system\n" turn). Generation
 *    prompt: "<|turn>model\n<|channel>thought\n<channel|>" (the empty
 *    thought channel that turns thinking off). End of a model turn:
 *    "<turn|>".
 */
#ifndef DG_MODEL_CHAT_H
#define DG_MODEL_CHAT_H

#include "deg.h"
#include "tokenizer/tokenizer.h"

typedef enum dg_chat_layout {
    DG_CHAT_NONE = 0,
    DG_CHAT_CHATML,
    DG_CHAT_QWEN3,
    DG_CHAT_LFM2,
    DG_CHAT_GEMMA4
} dg_chat_layout;

/* THE mapping between layout names and layouts, for the whole library: the
 * names are "none", "chatml", "qwen3", "lfm2", "gemma4"
 * (deg_model_info.chat_layout, a checkpoint's deg.json "chat_layout").
 * dg_chat_layout_from_name: the layout of a name; DG_CHAT_NONE for anything
 * else (including NULL and "").
 * dg_chat_layout_lookup: the same, strictly: 1 and *out for one of the five
 * names, 0 for anything else (a checkpoint refuses an unknown name).
 * dg_chat_layout_name: the name of a layout (static string). */
dg_chat_layout dg_chat_layout_from_name(const char *name);
int dg_chat_layout_lookup(const char *name, dg_chat_layout *out);
const char *dg_chat_layout_name(dg_chat_layout layout);

/* Layout recognised from a raw Jinja chat template (NULL -> DG_CHAT_NONE):
 * Gemma 4 if it writes <|turn> turns, Qwen3 if it uses enable_thinking with
 * <think> blocks inside ChatML, ChatML if it writes <|im_start|> turns. */
dg_chat_layout dg_chat_layout_detect(const char *chat_template);

/* The default system message of a ChatML template (the literal system turn
 * the template inserts when messages[0] is not a system message), as a
 * malloc'd string in *out, or *out = NULL if the template has none or is
 * NULL. Errors: DEG_ERR_NOMEM. */
deg_status dg_chat_default_system(const char *chat_template, char **out);

/* Render messages in layout; default_system (may be NULL) is used by
 * DG_CHAT_CHATML only. Roles must be "system", "user" or "assistant"; at
 * least one message. *out: malloc'd NUL-terminated string (free with free or
 * deg_free). Errors: DEG_ERR_ARG (NULL pointers, no messages, unknown role),
 * DEG_ERR_UNSUPPORTED (DG_CHAT_NONE), DEG_ERR_NOMEM. */
deg_status dg_chat_render(dg_chat_layout layout, const char *default_system,
                          const deg_chat_message *messages, size_t n_messages,
                          int add_generation_prompt, char **out);

/* THE chat tokenization rule: the layout's text (dg_chat_render) encoded
 * with special tokens parsed in the layout parts and never in message
 * contents (dg_tokenizer_encode_plain), so a document or message holding
 * "<|im_start|>" cannot forge a turn. For contents without special-token
 * text the ids equal Hugging Face's apply_chat_template(tokenize=True)
 * (pinned by tests/goldens/chat_ids.json). flags: 0 or
 * DEG_TOKENIZE_DROP_MISSING_BYTES. *ids malloc'd (free). Errors as
 * dg_chat_render and dg_tokenizer_encode_ex. */
deg_status dg_chat_tokenize(const dg_tokenizer *tok, dg_chat_layout layout,
                            const char *default_system, const deg_chat_message *messages,
                            size_t n_messages, int add_generation_prompt, unsigned flags,
                            int32_t **ids, size_t *n_ids);

/* deg_chat_tokenize's ids in a malloc'd array (*ids, free) of *n_ids: the
 * model's chat layout and default system message, then dg_chat_tokenize; errors
 * carry `who` as context. For callers that would otherwise grow a buffer and
 * call deg_chat_tokenize again (it renders and tokenizes the whole chat each
 * call). Errors: DEG_ERR_STATE (no tokenizer), DEG_ERR_FORMAT (unknown layout),
 * as dg_chat_tokenize. */
deg_status dg_model_chat_tokenize(const deg_model *model, const char *who,
                                  const deg_chat_message *messages, size_t n_messages,
                                  int add_generation_prompt, unsigned flags, int32_t **ids,
                                  size_t *n_ids);

/* The text around the content of a single user message rendered with the
 * generation prompt and no system message: *open precedes the content (ChatML:
 * "<|im_start|>user\n"), *close follows it ("<|im_end|>\n<|im_start|>assistant\n",
 * Qwen3 with its empty think block). Both malloc'd. The fill prompt is such a
 * turn written in two parts (context trunk, then each fork's text: lib/deg).
 * open + content + close is the rendering of that message only for a content
 * the layout writes as it is: Gemma 4 trims a content's surrounding whitespace
 * (Python's str.strip), so such a content must not begin or end with
 * whitespace (the fill's begins "CONTEXT:" and ends "VALUE:": pinned against
 * transformers by test_chat user_turn_parts_are_the_renderers).
 * Errors: DEG_ERR_UNSUPPORTED (DG_CHAT_NONE), DEG_ERR_NOMEM. */
deg_status dg_chat_user_turn(dg_chat_layout layout, char **open, char **close);

/* The model's chat layout: deg_model_info.chat_layout, else recognised from
 * its chat template; DG_CHAT_NONE if neither. */
dg_chat_layout dg_chat_layout_of_model(const deg_model *m);

/* THE stop-token rule of the library (generation's default stops, the end
 * of a fill answer, self-study's bots through deg_model_stop_ids): the
 * model's EOS, and under a chat layout also the end of an assistant turn
 * ("<|im_end|>" in ChatML, Qwen3 and LFM2; "<turn|>" in Gemma 4) when the
 * vocabulary has it and it is another token. Writes the ids (EOS first) to out; returns the count. */
#define DG_CHAT_MAX_STOPS 2
size_t dg_chat_stop_ids(const deg_model *m, dg_chat_layout layout,
                        int32_t out[DG_CHAT_MAX_STOPS]);

#endif
