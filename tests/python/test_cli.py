"""The `deg` command line (run as a subprocess)."""
import json
import re
import shutil

import pytest

import deg
from conftest import needs, run_cli


def test_help_lists_commands():
    out = run_cli("--help").stdout
    for cmd in ("generate", "info", "fetch-model"):
        assert cmd in out


def test_version():
    assert run_cli("--version").stdout.strip() == f"deg {deg.version()}"


def test_console_script_installed():
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.executable).parent / "deg"
    if not exe.exists():
        exe = shutil.which("deg")
        if exe is None:
            pytest.skip("`deg` console script not installed (package not pip-installed)")
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"deg {deg.version()}"


@needs("deg_runtime_info")
def test_info_json():
    out = json.loads(run_cli("info", "--json").stdout)
    assert out["version"] == deg.version()
    assert out["runtime"]["blas_arch"] == deg.blas_arch()


def test_unknown_option_before_command_is_named():
    res = run_cli("--bogus", check=False)
    assert res.returncode == 2
    assert "'--bogus'" in res.stderr and "before the COMMAND" in res.stderr


def test_generate_requires_prompt_or_chat():
    res = run_cli("generate", check=False)
    assert res.returncode == 2 and "--prompt" in res.stderr


def test_generate_missing_model_is_a_clear_error(tmp_path):
    res = run_cli("generate", "--prompt", "x", env={"DEG_CACHE": str(tmp_path), "DEG_MODEL": ""},
                  check=False)
    assert res.returncode == 1
    assert "fetch-model" in res.stderr and "Traceback" not in res.stderr


@needs("deg_tokenize", "deg_detokenize", "deg_generate", "deg_chat_format", "deg_runtime_info")
def test_generate_chat(model_path):
    # native-f32act: the f32 path's answer (the default native mode flips this
    # question's first-token near-tie, as llama.cpp does; test_quant_smollm2.c).
    # The flag wins over DEG_WEIGHTS (native here would not answer Paris).
    res = run_cli("generate", "--model", model_path, "--chat",
                  "What is the capital of France?", "--max-tokens", "12", "--verbose",
                  "--weights", "native-f32act", env={"DEG_WEIGHTS": "native"})
    assert "Paris" in res.stdout
    assert "tokens/s" in res.stderr and "prefill" in res.stderr and "decode" in res.stderr
    assert deg.blas_arch() in res.stderr


def test_generate_unknown_weights_mode():
    res = run_cli("generate", "--prompt", "x", "--weights", "f16", check=False)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--weights" in res.stderr and "'f16'" in res.stderr
    assert "native-f32act" in res.stderr


@needs("deg_tokenize", "deg_detokenize", "deg_generate")
def test_generate_prompt_seeded(model_path):
    args = ("generate", "--model", model_path, "--prompt", "Once upon a time",
            "--max-tokens", "6", "--temperature", "0.8", "--seed", "3", "--top-k", "50",
            "--top-p", "0.9")
    assert run_cli(*args).stdout == run_cli(*args).stdout


def test_fill_names_the_missing_file(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "properties": {"a": {"type": "boolean"}}}')
    res = run_cli("fill", "--context", tmp_path / "nope.txt", "--schema", schema, check=False)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--context" in res.stderr and "nope.txt" in res.stderr
    assert "No such file" in res.stderr
    res = run_cli("fill", "--context", schema, "--schema", tmp_path / "gone.json", check=False)
    assert res.returncode == 2 and "--schema" in res.stderr and "gone.json" in res.stderr


def test_fill_names_the_missing_checkpoint(tmp_path):
    """A checkpoint that cannot be loaded exits 1 (deg fill --help says so), naming it."""
    ctx, schema = tmp_path / "c.txt", tmp_path / "s.json"
    ctx.write_text("Order 4711")
    schema.write_text('{"type": "object", "properties": {"a": {"type": "boolean"}}}')
    res = run_cli("fill", "--ckpt", tmp_path / "no-ckpt", "--context", ctx, "--schema", schema,
                  check=False)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "no-ckpt" in res.stderr and res.stdout == ""
    assert re.search(r"cannot be\s+loaded\s+\(missing,\s+corrupt,\s+another\s+backbone\)\s+exits\s+1",
                     run_cli("fill", "--help").stdout)


def test_fill_limits_flags(tmp_path):
    """deg fill's --deadline-ms / --max-fields / --max-fork-tokens (issue 19):
    a limit stops the fill with exit 4 and a message naming the flag that lifts
    it (not the library call); a limit the request's options set says so."""
    from conftest import ROOT
    ck, ctx, schema = tmp_path / "ck", tmp_path / "c.txt", tmp_path / "s.json"
    deg.create_random_checkpoint(ROOT / "tests" / "goldens" / "tiny-llama", ck, seed=3)
    ctx.write_text("two rows")
    schema.write_text(json.dumps({"type": "object", "properties": {"xs": {
        "type": "array", "minItems": 2, "maxItems": 2,
        "items": {"type": "object", "properties": {"a": {"type": "boolean"},
                                                   "b": {"type": "boolean"}}}}}}))
    base = ("fill", "--ckpt", ck, "--context", ctx, "--schema", schema)
    ok = run_cli(*base, "--max-fields", "5", "--deadline-ms", "0")
    assert json.loads(ok.stdout)["value"] == json.loads(run_cli(*base).stdout)["value"]
    res = run_cli(*base, "--max-fields", "4", check=False)
    assert res.returncode == 4 and "Traceback" not in res.stderr, res.stderr
    assert "max_fields 4: the schema instantiates at least 5 fields" in res.stderr
    assert res.stderr.rstrip().endswith("; to lift it: run deg fill with --max-fields N "
                                        "(0 = none)"), res.stderr
    assert "deg_run_limits" not in res.stderr
    res = run_cli(*base, "--max-fork-tokens", "3", "--options", '{"max_fields": 4}',
                  check=False)
    assert res.returncode == 4 and "set by the request's options.max_fields" in res.stderr
    res = run_cli(*base, "--max-fields", "-1", check=False)  # a usage error: exit 2, as argparse's
    assert res.returncode == 2, res.stderr
    assert "deg fill: error: argument --max-fields: -1 must be >= 0 (0 = none)" in res.stderr
    res = run_cli(*base, "--deadline-ms", "soon", check=False)
    assert res.returncode == 2 and "argument --deadline-ms: 'soon' is not an integer" in res.stderr
