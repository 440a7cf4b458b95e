#!/usr/bin/env python3
"""Goldens for deg_chat_format: conversations rendered by transformers'
apply_chat_template.

- "chatml": SmolLM2-135M-Instruct's own template, from the tokenizer that
  transformers loads out of the GGUF file (tokenizer.chat_template).
- "qwen3": the Qwen3 chat template (qwen3_chat_template.jinja, the
  "chat_template" of Qwen/Qwen3-0.6B's tokenizer_config.json) with
  enable_thinking=False, rendered by the same apply_chat_template.
- "lfm2": LiquidAI LFM2's chat layout (lfm2_chat_template.jinja: the rules of
  the "chat_template" of LiquidAI/LFM2-1.2B's tokenizer for plain string
  messages -- bos_token "<|startoftext|>", a system turn only from a non-empty
  messages[0] system message, ChatML turns; its tool branches left out),
  rendered by the same apply_chat_template.
- "gemma4" (written to chat_gemma4.json): Gemma 4's own chat template
  (gemma4_chat_template.jinja: the "chat_template.jinja" of google/gemma-4-31B-it,
  as llama.cpp keeps it in models/templates/google-gemma-4-31B-it.jinja),
  thinking off (no enable_thinking), bos_token "<bos>", rendered by the same
  apply_chat_template, on the conversations above plus Gemma-specific ones
  (thinking channels in model messages, consecutive model messages, Unicode
  whitespace that the template's trim removes). No Gemma 4 tokenizer is
  available offline, so these have no ids golden (chat_ids.json).

Usage: /tmp/venv/bin/python tests/goldens/gen_chat.py [MODEL.gguf]
(default model: $DEG_MODEL or ${DEG_CACHE:-~/.cache/deg}/models/SmolLM2-135M-Instruct.Q4_1.gguf)
Writes tests/goldens/chat_goldens.json and tests/goldens/chat_gemma4.json.
"""
import json
import os
import sys

from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))

CONVERSATIONS = [
    ("user_only", [{"role": "user", "content": "Hello!"}]),
    ("system_user", [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "What is 2+2?"}]),
    ("multi_turn", [{"role": "user", "content": "Name a color."},
                    {"role": "assistant", "content": "Blue."},
                    {"role": "user", "content": "Another one?"}]),
    ("ends_with_assistant", [{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello"}]),
    ("unicode_and_newlines", [{"role": "user",
                               "content": "Ünïcödé ✓ 日本語 🙂\n\nline 3  \n"}]),
    ("system_not_first", [{"role": "user", "content": "a"},
                          {"role": "system", "content": "b"},
                          {"role": "user", "content": "c"}]),
    ("empty_content", [{"role": "user", "content": ""}]),
    ("think_in_history", [{"role": "user", "content": "q1"},
                          {"role": "assistant",
                           "content": "<think>\nreasoning one\n</think>\n\nanswer one"},
                          {"role": "user", "content": "q2"}]),
    ("think_last_assistant", [{"role": "user", "content": "q"},
                              {"role": "assistant",
                               "content": "<think>\n\nr1\n\n</think>\n\n\nfinal"}]),
    ("think_after_query_not_last", [{"role": "user", "content": "q"},
                                    {"role": "assistant",
                                     "content": "<think>x<think>y</think>mid</think>\nz"},
                                    {"role": "assistant", "content": "plain"}]),
    ("only_system", [{"role": "system", "content": "S"}]),
    ("only_assistant", [{"role": "assistant", "content": "<think></think>ok"}]),
]


GEMMA4_EXTRA = [
    ("gemma4_thinking_in_history",
     [{"role": "user", "content": "q1"},
      {"role": "assistant", "content": "<|channel>thought\nplan it<channel|>The answer."},
      {"role": "user", "content": "q2"}]),
    ("gemma4_thinking_last", [{"role": "user", "content": "q"},
                              {"role": "assistant",
                               "content": "  <|channel>thought\nx<channel|>\n final \n"}]),
    ("gemma4_channel_edge_cases",
     [{"role": "user", "content": "q"},
      {"role": "assistant", "content": "a<channel|>b<|channel>hidden"},
      {"role": "user", "content": "<|channel>kept in a user turn<channel|>"}]),
    ("gemma4_consecutive_model",
     [{"role": "system", "content": "S"}, {"role": "assistant", "content": "one"},
      {"role": "assistant", "content": " two "}, {"role": "user", "content": "u"},
      {"role": "assistant", "content": "three"}]),
    ("gemma4_unicode_whitespace",
     [{"role": "system", "content": "\u3000\xa0 Be brief.\u2003\n"},
      {"role": "user", "content": "\t\x1c hi \u2029\u205f"},
      {"role": "assistant", "content": "\u00e9\u3000"}]),
    # the fill prompt's user turn (lib/deg: the trunk opens it, a value fork closes
    # it): "CONTEXT:\n", a context with its own surrounding whitespace, the field's
    # lines, "VALUE:" -- the template's trim keeps all of it (the ends are not blank)
    ("gemma4_fill_prompt",
     [{"role": "user", "content": "CONTEXT:\n  Order 4711 from ACME Corp.\n\t \n\nFIELD: "
                                  "/company\nTYPE: string\nVALUE:"}]),
]


def gemma4_cases(tok):
    with open(os.path.join(HERE, "gemma4_chat_template.jinja"), encoding="utf-8") as f:
        tmpl = f.read()
    cases = []
    for name, msgs in CONVERSATIONS + [("empty_system", [{"role": "system", "content": ""},
                                                        {"role": "user", "content": "hi"}])] \
            + GEMMA4_EXTRA:
        for gen in (True, False):
            text = tok.apply_chat_template(msgs, chat_template=tmpl, tokenize=False,
                                           add_generation_prompt=gen, bos_token="<bos>")
            assert text.startswith("<bos>"), text
            cases.append({"layout": "gemma4", "name": name, "add_generation_prompt": gen,
                          "messages": msgs, "text": text})
    out = {"source": "transformers apply_chat_template with gemma4_chat_template.jinja; "
                     "see gen_chat.py", "cases": cases}
    with open(os.path.join(HERE, "chat_gemma4.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} gemma4 cases")


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DEG_MODEL") or os.path.join(
        os.environ.get("DEG_CACHE", os.path.expanduser("~/.cache/deg")), "models",
        "SmolLM2-135M-Instruct.Q4_1.gguf")
    tok = AutoTokenizer.from_pretrained(os.path.dirname(model),
                                        gguf_file=os.path.basename(model))
    with open(os.path.join(HERE, "qwen3_chat_template.jinja"), encoding="utf-8") as f:
        qwen3 = f.read().rstrip("\n")
    with open(os.path.join(HERE, "lfm2_chat_template.jinja"), encoding="utf-8") as f:
        lfm2 = f.read()
    conversations = CONVERSATIONS + [
        ("empty_system", [{"role": "system", "content": ""},
                          {"role": "user", "content": "hi"}]),
    ]
    cases = []
    for name, msgs in conversations:
        for gen in (True, False):
            cases.append({"layout": "chatml", "name": name, "add_generation_prompt": gen,
                          "messages": msgs,
                          "text": tok.apply_chat_template(msgs, tokenize=False,
                                                          add_generation_prompt=gen)})
            cases.append({"layout": "qwen3", "name": name, "add_generation_prompt": gen,
                          "messages": msgs,
                          "text": tok.apply_chat_template(msgs, chat_template=qwen3,
                                                          tokenize=False,
                                                          add_generation_prompt=gen,
                                                          enable_thinking=False)})
            text = tok.apply_chat_template(msgs, chat_template=lfm2, tokenize=False,
                                           add_generation_prompt=gen, bos_token="<|startoftext|>")
            assert text.startswith("<|startoftext|>"), text
            cases.append({"layout": "lfm2", "name": name, "add_generation_prompt": gen,
                          "messages": msgs, "text": text})
    out = {"source": "transformers apply_chat_template; see gen_chat.py",
           "chatml_template": tok.chat_template, "cases": cases}
    with open(os.path.join(HERE, "chat_goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases")
    gemma4_cases(tok)


if __name__ == "__main__":
    main()
