r"""A tiny policy built locally: a word-level tokenizer over the games' texts and a small Qwen2.

Tests and CPU runs need a causal language model without hub access. :func:`build_tiny` makes
one from nothing but the package:

1. **Tokenizer.** Seeded random playouts of the games give their prompts (every style's
   format section included) and every canonical action text. The pre-tokenizer splits text into
   runs of word characters, runs of whitespace and single punctuation marks; each piece is one
   token, and the ``Fuse`` decoder concatenates tokens back, so decoding reproduces the text
   exactly. Whole answer blocks (``<answer>bet</answer>``, ``\boxed{bet}``, a ``play`` tool
   call...) are single added
   tokens, matched before splitting. The chat template is ChatML
   (``<|im_start|>role\ncontent<|im_end|>``), as in Qwen.
2. **Model.** A :class:`transformers.Qwen2ForCausalLM` of a few layers with tied embeddings,
   initialised from the given seed inside :func:`torch.random.fork_rng` (the global generator
   is left as it was).

With ``vocab="answers"`` the vocabulary keeps only the configured style's answer pieces, the
action words and a few filler words (everything else reads as ``[UNK]``), and every answer piece
also stops generation (as a stop string ``</answer>`` would): a random policy then writes a
valid answer often enough for reinforcement learning to take off in a few dozen steps on a CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from strategic_arena._extras import require
from strategic_arena.env import make
from strategic_arena.free_text_env import FreeTextEnv
from strategic_arena.games import GameSpec
from strategic_arena.prompting import render_messages
from strategic_arena.styles import get_style, style_names
from strategic_arena.validation import Style

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

PAD = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
UNK = "[UNK]"
SPECIAL_TOKENS = (PAD, IM_START, IM_END, UNK)

#: Pre-tokenizer pattern: a run of word characters or one other character, each with the
#: whitespace that follows it, or a run of whitespace (at the start of a text).
PIECE_PATTERN = r"\w+\s*|[^\w\s]\s*|\s+"

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

FILLER_WORDS = ("I ", "think", " ", "\n")
#: The chat roles, so that the template's role lines are words of the vocabulary.
ROLE_WORDS = ("system\n", "user\n", "assistant\n")


def answer_pieces(style: Style, action_texts: Iterable[str]) -> list[str]:
    """Single-token answer pieces of ``style`` for each action text, plus the style's markers."""
    return get_style(style).vocabulary(action_texts)


def game_texts(
    env_ids: Sequence[str], *, games: int = 30, seed: int = 0
) -> tuple[list[str], set[str]]:
    """Prompts (every style, with and without history) and action texts of seeded random games.

    Returns:
        ``(texts, action_texts)``: every system and user message seen, and every canonical
        action text offered in a menu.
    """
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    actions: set[str] = set()
    for env_id in env_ids:
        env = make(env_id)
        for game in range(games):
            env.reset(seed=int(rng.integers(2**31)))
            while not env.terminations[env.agent_selection]:
                agent = env.agent_selection
                view = env.seat_view(agent)
                # A free-text game has no menu: its sample moves are the answers to learn.
                moves = list(view.legal_actions.values()) or list(env.spec.sample_moves)
                actions.update(moves)
                if game < 3:  # the prompts repeat; a few games cover their words
                    for style in _styles_of(env.spec):
                        for history in (False, True):
                            messages = render_messages(
                                env.spec, view, style, include_history=history
                            )
                            texts += [message["content"] for message in messages]
                if isinstance(env, FreeTextEnv):
                    env.step(moves[int(rng.integers(len(moves)))])
                else:
                    legal = list(view.legal_actions)
                    env.step(legal[int(rng.integers(len(legal)))])
    return texts, actions


def _styles_of(spec: GameSpec) -> list[str]:
    """The answer styles that can play ``spec`` (id-answering styles need a menu)."""
    return [
        name for name in style_names() if spec.move_kind == "menu" or not get_style(name).menu_only
    ]


def build_tokenizer(
    env_ids: Sequence[str],
    vocab: Literal["prompts", "answers"] = "prompts",
    *,
    style: Style | None = None,
    seed: int = 0,
) -> PreTrainedTokenizerFast:
    """The word-level tokenizer of the module docstring, as a ``PreTrainedTokenizerFast``.

    Args:
        env_ids: the games whose texts and actions make the vocabulary.
        vocab: ``prompts`` (every piece of the prompts) or ``answers`` (answer pieces, the
            action words and a few fillers).
        style: with ``answers``, keep only this style's answer pieces (every style's when
            ``None``); the smaller the vocabulary, the likelier a random valid answer.
        seed: seed of the playouts that collect the texts.
    """
    tokenizers = require("tokenizers", "the tiny local tokenizer")
    transformers = require("transformers", "the tiny local tokenizer")
    import re

    texts, actions = game_texts(env_ids, seed=seed)
    pieces: list[str] = []
    for option in style_names() if vocab == "prompts" or style is None else (style,):
        pieces += answer_pieces(option, actions)
    pieces = list(dict.fromkeys(pieces))
    words: list[str] = [*ROLE_WORDS, *FILLER_WORDS]
    words += [f"{action}{space}" for action in sorted(actions) for space in ("", " ", "\n")]
    if vocab == "prompts":
        found = {piece for text in texts for piece in re.findall(PIECE_PATTERN, text)}
        words += sorted(found)
    elif vocab != "answers":
        raise ValueError(f"unknown tiny vocabulary {vocab!r}; use prompts or answers")
    table: dict[str, int] = {}
    for token in [*SPECIAL_TOKENS, *pieces, *words]:
        table.setdefault(token, len(table))
    model = tokenizers.models.WordLevel(vocab=table, unk_token=UNK)
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(PIECE_PATTERN), behavior="isolated"
    )
    tokenizer.decoder = tokenizers.decoders.Fuse()
    tokenizer.add_special_tokens(
        [tokenizers.AddedToken(token, normalized=False, special=True) for token in SPECIAL_TOKENS]
    )
    tokenizer.add_tokens(
        [tokenizers.AddedToken(piece, normalized=False, special=False) for piece in pieces]
    )
    fast: PreTrainedTokenizerFast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=UNK,
        padding_side="left",
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
    max_positions: int = 16384,
    stop_at_answers: bool = False,
) -> PreTrainedModel:
    """A randomly initialised Qwen2 causal LM sized for ``tokenizer`` (float32).

    With ``stop_at_answers`` every single-token answer block is also a stop token of the
    generation config (what a stop string such as ``</answer>`` does for a real model), so a
    response ends as soon as it has given its answer.
    """
    torch = require("torch", "the tiny local model")
    transformers = require("transformers", "the tiny local model")
    if hidden_size % heads:
        raise ValueError(f"tiny_hidden_size {hidden_size} is not a multiple of tiny_heads {heads}")
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        attention_dropout=0.0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model: Any = transformers.Qwen2ForCausalLM(config)
    stops = [tokenizer.eos_token_id]
    if stop_at_answers:
        stops += [
            token_id
            for token, token_id in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
            if token.startswith(("<answer>", "\\boxed{", '", "action"', "<tool_call>"))
        ]
    model.generation_config.eos_token_id = stops if len(stops) > 1 else stops[0]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    result: PreTrainedModel = model.float()
    return result


def build_tiny(
    env_ids: Sequence[str],
    *,
    vocab: Literal["prompts", "answers"] = "prompts",
    style: Style | None = None,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """The tiny model and its tokenizer for ``env_ids`` (deterministic given the arguments)."""
    tokenizer = build_tokenizer(env_ids, vocab, style=style)
    model = build_model(
        tokenizer,
        hidden_size=hidden_size,
        layers=layers,
        heads=heads,
        seed=seed,
        stop_at_answers=vocab == "answers",
    )
    return model, tokenizer
