/* Chat layouts (rules and sources in chat.h) and deg_chat_format. */
#include "model/chat.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* ---- Python str helpers, on [s, s+n) ------------------------------------- */

typedef struct span {
    const char *p;
    size_t n;
} span;

static span sp_of(const char *s) { return (span){s, strlen(s)}; }

static const char *sp_find(span s, const char *needle)
{
    size_t m = strlen(needle);
    if (m > s.n) return NULL;
    for (size_t i = 0; i + m <= s.n; i++)
        if (memcmp(s.p + i, needle, m) == 0) return s.p + i;
    return NULL;
}

static const char *sp_rfind(span s, const char *needle)
{
    size_t m = strlen(needle);
    if (m > s.n) return NULL;
    for (size_t i = s.n - m + 1; i-- > 0;)
        if (memcmp(s.p + i, needle, m) == 0) return s.p + i;
    return NULL;
}

static span lstrip_nl(span s)
{
    while (s.n && s.p[0] == '\n') s.p++, s.n--;
    return s;
}

static span rstrip_nl(span s)
{
    while (s.n && s.p[s.n - 1] == '\n') s.n--;
    return s;
}

static int starts_with(span s, const char *pre)
{
    size_t m = strlen(pre);
    return s.n >= m && memcmp(s.p, pre, m) == 0;
}

static int ends_with(span s, const char *suf)
{
    size_t m = strlen(suf);
    return s.n >= m && memcmp(s.p + s.n - m, suf, m) == 0;
}

/* ---- layout selection ----------------------------------------------------- */

/* indexed by dg_chat_layout */
static const char *const LAYOUT_NAMES[] = {"none", "chatml", "qwen3", "lfm2", "gemma4"};
#define N_LAYOUTS (sizeof LAYOUT_NAMES / sizeof LAYOUT_NAMES[0])

int dg_chat_layout_lookup(const char *name, dg_chat_layout *out)
{
    for (size_t i = 0; name && i < N_LAYOUTS; i++)
        if (strcmp(name, LAYOUT_NAMES[i]) == 0) {
            *out = (dg_chat_layout)i;
            return 1;
        }
    return 0;
}

dg_chat_layout dg_chat_layout_from_name(const char *name)
{
    dg_chat_layout l = DG_CHAT_NONE;
    return dg_chat_layout_lookup(name, &l) ? l : DG_CHAT_NONE;
}

const char *dg_chat_layout_name(dg_chat_layout layout)
{
    return (size_t)layout < N_LAYOUTS ? LAYOUT_NAMES[layout] : "none";
}

dg_chat_layout dg_chat_layout_detect(const char *t)
{
    if (t && strstr(t, "<|turn>")) return DG_CHAT_GEMMA4;
    if (!t || !strstr(t, "<|im_start|>")) return DG_CHAT_NONE;
    if (strstr(t, "enable_thinking") && strstr(t, "<think>")) return DG_CHAT_QWEN3;
    return DG_CHAT_CHATML;
}

/* SmolLM2's template writes, under
 *   {% if loop.first and messages[0]['role'] != 'system' %}
 * the literal '<|im_start|>system\n<text><|im_end|>\n'. Take <text> if it is
 * a plain literal (no quotes, braces or escapes other than \n). */
deg_status dg_chat_default_system(const char *t, char **out)
{
    *out = NULL;
    if (!t) return DEG_OK;
    const char *cond = strstr(t, "!= 'system'");
    if (!cond) cond = strstr(t, "!= \"system\"");
    if (!cond) return DEG_OK;
    const char *head = "<|im_start|>system";
    const char *h = strstr(cond, head);
    if (!h) return DEG_OK;
    /* the literal must be a quoted string right where the condition's block
     * starts: no other statement between the condition and it */
    const char *endif = strstr(cond, "{% endif");
    if (!endif) endif = strstr(cond, "{%- endif");
    if (!endif || endif < h) return DEG_OK;
    if (h == t || (h[-1] != '\'' && h[-1] != '"')) return DEG_OK;
    const char *p = h + strlen(head);
    if (p[0] == '\n') p += 1;
    else if (p[0] == '\\' && p[1] == 'n') p += 2;
    else return DEG_OK;
    const char *e = strstr(p, "<|im_end|>");
    if (!e || e > endif) return DEG_OK;
    dg_strbuf b = {0};
    for (const char *q = p; q < e; q++) {
        if (*q == '\'' || *q == '"' || *q == '{' || *q == '}') {
            free(b.p);
            return DEG_OK;
        }
        if (*q == '\\') {
            if (q[1] != 'n') {
                free(b.p);
                return DEG_OK;
            }
            dg_sb_put(&b, "\n", 1);
            q++;
            continue;
        }
        dg_sb_put(&b, q, 1);
    }
    if (b.oom) {
        free(b.p);
        return dg_fail(DEG_ERR_NOMEM, "chat template: out of memory");
    }
    if (!b.p) dg_sb_put(&b, "", 0);
    if (b.oom) return dg_fail(DEG_ERR_NOMEM, "chat template: out of memory");
    *out = b.p;
    return DEG_OK;
}

/* ---- rendering -------------------------------------------------------- */

/* The text being rendered and, when ranges is not NULL, the byte range of
 * each message content in it (what deg_chat_tokenize keeps plain). */
typedef struct chat_out {
    dg_strbuf b;
    dg_tok_range *ranges;
    size_t n_ranges;
} chat_out;

static void put_content(chat_out *o, span content)
{
    size_t start = o->b.len;
    dg_sb_put(&o->b, content.p, content.n);
    if (o->ranges && content.n) o->ranges[o->n_ranges++] = (dg_tok_range){start, start + content.n};
}

static void turn(chat_out *o, const char *role, span content)
{
    dg_sb_puts(&o->b, "<|im_start|>");
    dg_sb_puts(&o->b, role);
    dg_sb_puts(&o->b, "\n");
    put_content(o, content);
    dg_sb_puts(&o->b, "<|im_end|>\n");
}

/* Qwen3 assistant message i (template logic described in chat.h). */
static void qwen3_assistant(chat_out *o, span content, int after_last_query, int is_last)
{
    span reasoning = {"", 0};
    if (sp_find(content, "</think>")) {
        const char *first_close = sp_find(content, "</think>");
        span r = {content.p, (size_t)(first_close - content.p)};
        r = rstrip_nl(r);
        const char *open = sp_rfind(r, "<think>");
        if (open) {
            size_t skip = (size_t)(open - r.p) + strlen("<think>");
            r.p += skip;
            r.n -= skip;
        }
        reasoning = lstrip_nl(r);
        const char *last_close = sp_rfind(content, "</think>");
        size_t skip = (size_t)(last_close - content.p) + strlen("</think>");
        content = lstrip_nl((span){content.p + skip, content.n - skip});
    }
    dg_sb_puts(&o->b, "<|im_start|>assistant\n");
    if (after_last_query && (is_last || reasoning.n > 0)) {
        span r = rstrip_nl(lstrip_nl(reasoning));
        dg_sb_puts(&o->b, "<think>\n");
        put_content(o, r);
        dg_sb_puts(&o->b, "\n</think>\n\n");
        content = lstrip_nl(content);
    }
    put_content(o, content);
    dg_sb_puts(&o->b, "<|im_end|>\n");
}

/* Python's str.isspace for the code point at p (len bytes of UTF-8 there). */
static int py_space(const unsigned char *p, size_t avail, size_t *len)
{
    *len = 1;
    if (p[0] < 0x80) return (p[0] >= 0x09 && p[0] <= 0x0d) || (p[0] >= 0x1c && p[0] <= 0x20);
    unsigned cp;
    if ((p[0] & 0xe0) == 0xc0 && avail >= 2) cp = (p[0] & 0x1fu) << 6 | (p[1] & 0x3fu), *len = 2;
    else if ((p[0] & 0xf0) == 0xe0 && avail >= 3)
        cp = (p[0] & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu), *len = 3;
    else return 0;
    return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Jinja's trim (Python str.strip()): whitespace off both ends. */
static span py_strip(span s)
{
    size_t len;
    while (s.n && py_space((const unsigned char *)s.p, s.n, &len)) s.p += len, s.n -= len;
    while (s.n) { /* the last code point starts past its continuation bytes */
        size_t i = s.n - 1;
        while (i && s.n - i < 3 && ((unsigned char)s.p[i] & 0xc0) == 0x80) i--;
        if (!py_space((const unsigned char *)s.p + i, s.n - i, &len) || i + len != s.n) break;
        s.n = i;
    }
    return s;
}

/* Gemma 4 message content: a model message without its thinking (chat.h),
 * then trimmed; into tmp (the stripped text is rebuilt there). */
static span gemma4_content(dg_strbuf *tmp, span c, int model)
{
    if (!model) return py_strip(c);
    tmp->len = 0;
    while (c.n) {
        const char *close = sp_find(c, "<channel|>");
        span part = {c.p, close ? (size_t)(close - c.p) : c.n};
        const char *open = sp_find(part, "<|channel>");
        dg_sb_put(tmp, part.p, open ? (size_t)(open - part.p) : part.n);
        if (!close) break;
        size_t skip = (size_t)(close - c.p) + strlen("<channel|>");
        c.p += skip;
        c.n -= skip;
    }
    return py_strip((span){tmp->p ? tmp->p : "", tmp->len});
}

/* Gemma 4 (rules in chat.h). */
static void render_gemma4(chat_out *o, const deg_chat_message *m, size_t n,
                          int add_generation_prompt)
{
    dg_strbuf tmp = {0};
    dg_sb_puts(&o->b, "<bos>");
    for (size_t i = 0; i < n; i++) {
        int model = strcmp(m[i].role, "assistant") == 0;
        if (!(model && i > 0 && strcmp(m[i - 1].role, "assistant") == 0)) {
            dg_sb_puts(&o->b, "<|turn>");
            dg_sb_puts(&o->b, model ? "model" : m[i].role);
            dg_sb_puts(&o->b, "\n");
        }
        put_content(o, gemma4_content(&tmp, sp_of(m[i].content), model));
        dg_sb_puts(&o->b, "<turn|>\n");
    }
    if (tmp.oom) o->b.oom = 1;
    free(tmp.p);
    if (add_generation_prompt) dg_sb_puts(&o->b, "<|turn>model\n<|channel>thought\n<channel|>");
}

static deg_status check_messages(dg_chat_layout layout, const deg_chat_message *m, size_t n)
{
    if (layout != DG_CHAT_CHATML && layout != DG_CHAT_QWEN3 && layout != DG_CHAT_LFM2 &&
        layout != DG_CHAT_GEMMA4)
        return dg_fail(DEG_ERR_UNSUPPORTED, "chat: the model has no known chat layout");
    if (n == 0 || !m) return dg_fail(DEG_ERR_ARG, "chat: no messages");
    for (size_t i = 0; i < n; i++) {
        if (!m[i].role || !m[i].content)
            return dg_fail(DEG_ERR_ARG, "chat: message %zu has a NULL role or content", i);
        if (strcmp(m[i].role, "system") && strcmp(m[i].role, "user") &&
            strcmp(m[i].role, "assistant"))
            return dg_fail(DEG_ERR_ARG,
                           "chat: message %zu has role \"%.40s\"; expected system, user or "
                           "assistant",
                           i, m[i].role);
    }
    return DEG_OK;
}

/* Render into o (messages already checked). */
static void render(chat_out *o, dg_chat_layout layout, const char *default_system,
                   const deg_chat_message *m, size_t n, int add_generation_prompt)
{
    if (layout == DG_CHAT_CHATML) {
        if (strcmp(m[0].role, "system") != 0 && default_system)
            turn(o, "system", sp_of(default_system));
        for (size_t i = 0; i < n; i++) turn(o, m[i].role, sp_of(m[i].content));
        if (add_generation_prompt) dg_sb_puts(&o->b, "<|im_start|>assistant\n");
        return;
    }
    if (layout == DG_CHAT_GEMMA4) {
        render_gemma4(o, m, n, add_generation_prompt);
        return;
    }
    if (layout == DG_CHAT_LFM2) {
        dg_sb_puts(&o->b, "<|startoftext|>");
        size_t i = 0;
        if (strcmp(m[0].role, "system") == 0) { /* an empty system message renders nothing */
            if (m[0].content[0]) turn(o, "system", sp_of(m[0].content));
            i = 1;
        }
        for (; i < n; i++) turn(o, m[i].role, sp_of(m[i].content));
        if (add_generation_prompt) dg_sb_puts(&o->b, "<|im_start|>assistant\n");
        return;
    }
    /* last_query_index: the last user message that is not a tool response;
     * the last message when there is none. */
    size_t last_query = n - 1;
    for (size_t i = n; i-- > 0;) {
        span c = sp_of(m[i].content);
        if (strcmp(m[i].role, "user") == 0 &&
            !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].role, "assistant") == 0)
            qwen3_assistant(o, sp_of(m[i].content), i > last_query, i == n - 1);
        else
            turn(o, m[i].role, sp_of(m[i].content));
    }
    if (add_generation_prompt) dg_sb_puts(&o->b, "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

deg_status dg_chat_render(dg_chat_layout layout, const char *default_system,
                          const deg_chat_message *m, size_t n, int add_generation_prompt,
                          char **out)
{
    if (!out) return dg_fail(DEG_ERR_ARG, "chat: out is NULL");
    *out = NULL;
    DG_TRY(check_messages(layout, m, n));
    chat_out o = {0};
    render(&o, layout, default_system, m, n, add_generation_prompt);
    if (o.b.oom) {
        free(o.b.p);
        return dg_fail(DEG_ERR_NOMEM, "chat: out of memory rendering %zu messages", n);
    }
    *out = o.b.p;
    return DEG_OK;
}

deg_status dg_chat_user_turn(dg_chat_layout layout, char **open, char **close)
{
    if (!open || !close) return dg_fail(DEG_ERR_ARG, "chat: NULL output");
    *open = *close = NULL;
    const deg_chat_message m = {"user", "x"};
    DG_TRY(check_messages(layout, &m, 1));
    dg_tok_range r = {0, 0};
    chat_out o = {.ranges = &r};
    render(&o, layout, NULL, &m, 1, 1);
    if (!o.b.oom) {
        *open = strndup(o.b.p, r.start);
        *close = strdup(o.b.p + r.end);
    }
    free(o.b.p);
    if (!*open || !*close) {
        free(*open);
        free(*close);
        *open = *close = NULL;
        return dg_fail(DEG_ERR_NOMEM, "chat: out of memory");
    }
    return DEG_OK;
}

deg_status dg_chat_tokenize(const dg_tokenizer *tok, dg_chat_layout layout,
                            const char *default_system, const deg_chat_message *m, size_t n,
                            int add_generation_prompt, unsigned flags, int32_t **ids,
                            size_t *n_ids)
{
    if (!tok || !ids || !n_ids) return dg_fail(DEG_ERR_ARG, "chat: NULL tokenizer or output");
    *ids = NULL;
    *n_ids = 0;
    if (flags & ~DEG_TOKENIZE_DROP_MISSING_BYTES)
        return dg_fail(DEG_ERR_ARG, "chat: unknown flags 0x%x", flags);
    DG_TRY(check_messages(layout, m, n));
    /* at most two content ranges per message (Qwen3: reasoning, answer) and
     * the default system message */
    chat_out o = {.ranges = malloc((2 * n + 1) * sizeof *o.ranges)};
    if (!o.ranges) return dg_fail(DEG_ERR_NOMEM, "chat: out of memory");
    render(&o, layout, default_system, m, n, add_generation_prompt);
    deg_status s =
        o.b.oom ? dg_fail(DEG_ERR_NOMEM, "chat: out of memory rendering %zu messages", n)
                : dg_tokenizer_encode_alloc(tok, o.b.p, o.b.len, flags | DEG_TOKENIZE_SPECIAL,
                                            o.ranges, o.n_ranges, ids, n_ids);
    free(o.b.p);
    free(o.ranges);
    return s;
}

/* ---- public ------------------------------------------------------------- */

dg_chat_layout dg_chat_layout_of_model(const deg_model *m)
{
    deg_model_info info;
    if (deg_model_get_info(m, &info) != DEG_OK) return DG_CHAT_NONE;
    dg_chat_layout layout = dg_chat_layout_from_name(info.chat_layout);
    return layout != DG_CHAT_NONE ? layout : dg_chat_layout_detect(dg_model_chat_template(m));
}

size_t dg_chat_stop_ids(const deg_model *m, dg_chat_layout layout,
                        int32_t out[DG_CHAT_MAX_STOPS])
{
    deg_model_info info;
    size_t n = 0;
    if (deg_model_get_info(m, &info) != DEG_OK) return 0;
    if (info.eos_id >= 0) out[n++] = info.eos_id;
    if (layout != DG_CHAT_NONE) {
        const dg_tokenizer *t = dg_model_tokenizer(m);
        const char *eot = layout == DG_CHAT_GEMMA4 ? "<turn|>" : "<|im_end|>";
        int32_t im_end = t ? dg_tokenizer_find(t, eot, strlen(eot)) : -1;
        if (im_end >= 0 && (n == 0 || out[0] != im_end)) out[n++] = im_end;
    }
    return n;
}

deg_status deg_model_stop_ids(const deg_model *model, int32_t *ids, size_t cap, size_t *n_ids)
{
    if (!model || !n_ids || (cap && !ids))
        return dg_fail(DEG_ERR_ARG, "deg_model_stop_ids: NULL argument");
    int32_t s[DG_CHAT_MAX_STOPS];
    size_t n = dg_chat_stop_ids(model, dg_chat_layout_of_model(model), s);
    *n_ids = n;
    if (n > cap)
        return dg_fail(DEG_ERR_RANGE, "deg_model_stop_ids: %zu ids do not fit in %zu", n, cap);
    for (size_t i = 0; i < n; i++) ids[i] = s[i];
    return DEG_OK;
}

/* The model's layout and default system message (*sys malloc'd or NULL). */
static deg_status model_layout(const deg_model *model, const char *who, dg_chat_layout *layout,
                               char **sys)
{
    *sys = NULL;
    deg_model_info info;
    DG_TRY(deg_model_get_info(model, &info));
    *layout = dg_chat_layout_of_model(model);
    if (*layout == DG_CHAT_NONE)
        return dg_fail(DEG_ERR_UNSUPPORTED,
                       "%s: no known chat layout for model \"%s\" (arch %s, "
                       "layout \"%s\"); supported: chatml, qwen3, lfm2, gemma4",
                       who, info.name ? info.name : "", info.arch ? info.arch : "?",
                       info.chat_layout ? info.chat_layout : "");
    if (*layout == DG_CHAT_CHATML)
        DG_TRY(dg_chat_default_system(dg_model_chat_template(model), sys));
    return DEG_OK;
}

deg_status deg_chat_format(const deg_model *model, const deg_chat_message *messages,
                           size_t n_messages, int add_generation_prompt, char **out)
{
    if (out) *out = NULL;
    if (!model || !out) return dg_fail(DEG_ERR_ARG, "deg_chat_format: model or out is NULL");
    dg_chat_layout layout;
    char *sys = NULL;
    DG_TRY(model_layout(model, "deg_chat_format", &layout, &sys));
    deg_status s = dg_chat_render(layout, sys, messages, n_messages, add_generation_prompt, out);
    free(sys);
    if (s != DEG_OK) return dg_fail_context(s, "deg_chat_format");
    return DEG_OK;
}

deg_status dg_model_chat_tokenize(const deg_model *model, const char *who,
                                  const deg_chat_message *messages, size_t n_messages,
                                  int add_generation_prompt, unsigned flags, int32_t **ids,
                                  size_t *n_ids)
{
    const dg_tokenizer *t = dg_model_tokenizer(model);
    if (!t) return dg_fail(DEG_ERR_STATE, "%s: the model has no tokenizer", who);
    dg_chat_layout layout;
    char *sys = NULL;
    DG_TRY(model_layout(model, who, &layout, &sys));
    deg_status s = dg_chat_tokenize(t, layout, sys, messages, n_messages, add_generation_prompt,
                                    flags, ids, n_ids);
    free(sys);
    return s == DEG_OK ? DEG_OK : dg_fail_context(s, who);
}

deg_status deg_chat_tokenize(const deg_model *model, const deg_chat_message *messages,
                             size_t n_messages, int add_generation_prompt, unsigned flags,
                             int32_t *ids, size_t cap, size_t *n_ids)
{
    if (n_ids) *n_ids = 0;
    if (!model || !n_ids || (cap && !ids))
        return dg_fail(DEG_ERR_ARG, "deg_chat_tokenize: NULL model, n_ids or ids");
    int32_t *all = NULL;
    size_t n = 0;
    DG_TRY(dg_model_chat_tokenize(model, "deg_chat_tokenize", messages, n_messages,
                                  add_generation_prompt, flags, &all, &n));
    *n_ids = n;
    if (n && cap) memcpy(ids, all, (n < cap ? n : cap) * sizeof *ids);
    free(all);
    if (n > cap)
        return dg_fail(DEG_ERR_RANGE, "deg_chat_tokenize: %zu ids do not fit in a buffer of %zu",
                       n, cap);
    return DEG_OK;
}
