"""The constrained-decoding baseline of deg contract §11: the same GGUF model
emits the whole JSON object under a JSON-Schema-derived grammar, greedy, from
the same prompt, through llama.cpp (the optional `llama-cpp-python` package,
built from source by pip; not needed by the test suite).

    from deg.baseline import BaselineSystem
    sys = BaselineSystem("SmolLM2-135M-Instruct.Q4_1.gguf")
    sys(context, schema) -> {"value", "meta": {}, "usage": {...}, "raw"}

The grammar comes from llama.cpp's JSON-schema converter
(`LlamaGrammar.from_json_schema`), given the schema without deg's x-*
annotations (they mean nothing to it). A completion that is not JSON gives
value None (an invalid response); the harness counts it. The KV cache is
reset before every call, so no response reuses an earlier prompt's prefix
(each latency is a cold, end-to-end one, as deg's).
"""
import json

__all__ = ["BaselineSystem", "prompt_messages", "grammar_schema", "available"]

SYSTEM = ("You fill a JSON object from a document. Answer with JSON that follows the schema; "
          "copy names, numbers, dates, e-mails and links exactly as the document writes them.")


def available():
    """(True, None) if llama_cpp imports, else (False, reason)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as e:
        return False, f"llama-cpp-python is not installed ({e}); pip install llama-cpp-python"
    return True, None


def grammar_schema(schema):
    """The schema without x-* keywords (deg annotations)."""
    if isinstance(schema, dict):
        return {k: grammar_schema(v) for k, v in schema.items() if not k.startswith("x-")}
    if isinstance(schema, list):
        return [grammar_schema(v) for v in schema]
    return schema


def prompt_messages(context, schema):
    ctx = context if isinstance(context, str) else json.dumps(
        context, ensure_ascii=False, separators=(", ", ": "))
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{ctx}\n\nJSON schema:\n"
             f"{json.dumps(grammar_schema(schema), ensure_ascii=False)}"}]


class BaselineSystem:
    """Callable (context, schema) -> response, greedy grammar-constrained JSON."""

    def __init__(self, model_path=None, n_threads=1, n_ctx=4096, max_tokens=1024):
        ok, why = available()
        if not ok:
            raise ImportError(why)
        import llama_cpp
        from llama_cpp import Llama, LlamaGrammar
        if model_path is None:
            from ..fetch import default_model_path
            model_path = default_model_path()
        self.model_path = str(model_path)
        self.llama_cpp_version = getattr(llama_cpp, "__version__", None)
        self._grammar = LlamaGrammar
        self.llm = Llama(model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads,
                         n_threads_batch=n_threads, seed=0, verbose=False)
        self.max_tokens = max_tokens
        self._cache = {}

    def grammar(self, schema):
        key = json.dumps(schema, sort_keys=True)
        if key not in self._cache:
            self._cache[key] = self._grammar.from_json_schema(
                json.dumps(grammar_schema(schema)), verbose=False)
        return self._cache[key]

    def __call__(self, context, schema):
        self.llm.reset()  # no prefix reuse across calls
        out = self.llm.create_chat_completion(
            messages=prompt_messages(context, schema), grammar=self.grammar(schema),
            temperature=0.0, top_k=1, max_tokens=self.max_tokens, seed=0)
        text = out["choices"][0]["message"]["content"] or ""
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        u = out.get("usage") or {}
        return {"value": value, "meta": {}, "raw": text,
                "usage": {"prompt_tokens": u.get("prompt_tokens"),
                          "generated_tokens": u.get("completion_tokens")}}
