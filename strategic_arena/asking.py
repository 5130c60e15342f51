r"""How a model is asked and how it samples: two small settings objects, one home.

Every place that asks a language model for a move -- the model player
(:class:`~strategic_arena.players.LLMPlayer`), the arena's entrants and ``eval``, the
integrations' game session, ``serve`` and the trainer (its rollouts, its evaluation, the
settings it writes beside each checkpoint) -- takes these two objects, so a setting has one
name, one default, one check and one description:

* :class:`Asking`: the prompt and the answer -- style, strictness, reasoning, history, menu
  order, the illegal-move policy, the prompt set, a prefill, the chat template's keyword
  arguments and any extra request fields;
* :class:`Sampling`: how the model samples -- temperature, top-p, top-k, min-p, the response
  budget, stop strings and the request seed (``None``: the server's default).

Each field is documented once, by the docstring under it (:func:`strategic_arena.field_docs.
field_docs` reads them): the CLI's option help and the config docs come from there. Values are
checked when an object is made (``ValueError`` naming the field); :func:`settings_from_dict`
reads one back from plain data (JSON, YAML) with unknown keys refused by name. Both are plain
frozen dataclasses with no heavy import, so pydantic can validate them as they are.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from strategic_arena.prompt_sets import PromptSet, cached_prompts

__all__ = [
    "SETTINGS_FILE",
    "Asking",
    "Sampling",
    "game_sampling_params",
    "read_settings",
    "settings_from_dict",
    "settings_to_dict",
    "write_settings",
]

#: The file beside a training checkpoint that says how its evaluation asked the model.
SETTINGS_FILE = "eval_settings.json"

#: What :func:`write_settings` writes and :func:`read_settings` accepts.
SETTINGS_FORMAT = "strategic-arena/model-settings/1"


@dataclass(frozen=True)
class Asking:
    """How a model is asked for a move: the prompt it sees and the answer it must give."""

    style: str = "marshal"
    """Response format, a registered answer style: marshal
    (<think>...</think><answer>MOVE</answer>), boxed (\\boxed{MOVE}), json, tools (the model
    calls play(move); needs tool calling), spiral (SPIRAL's parser: the last \\boxed{} wins)
    or spin_bench ({"reason": ..., "action": ID}); see docs/styles.md."""
    strict: bool = True
    """Strict answer validation: exactly one answer block in the style's exact layout (off:
    lenient, an answer that breaks the layout is still read)."""
    require_reasoning: bool | None = None
    """Whether an answer without reasoning is invalid (unset: the style decides; spiral and
    tools need none, the other styles do)."""
    include_history: bool = False
    """Put the public move history in every prompt (SPIRAL's Markov prompts)."""
    thinking_in_history: Literal["keep", "strip", "answer"] = "keep"
    """What a re-asked model sees of its earlier answers: keep them, strip the <think>
    blocks, or the answer only."""
    shuffle_actions: bool = False
    """List the legal actions in a seeded random order at each decision instead of the game's
    canonical order (a small model that copies the first listed action then explores every
    move; a model trained so should be evaluated so)."""
    policy: str = "forfeit"
    """What an invalid answer costs: forfeit (the game is lost at once, MARSHAL), retry:K
    (re-ask with the error as feedback, up to K times) or random (a random legal move)."""
    prompts: str | None = None
    """A prompt set: a folder laid out like the package's prompts/ whose files override the
    package's (unset: the package's own); recorded with every game, and a model asked with a
    set of its own is named and stored apart."""
    response_prefix: str = ""
    """Text the answer starts with, written after the chat template's generation prompt (a
    prefill, e.g. <think>\\n as in MARSHAL): the model continues it, and the answer read is
    the prefix plus what the model wrote. Over HTTP it is sent as a final assistant message
    with continue_final_message (vLLM, SGLang)."""
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of the chat template (the trainer's tokenizer; vLLM and SGLang
    servers take them as the chat_template_kwargs request field), e.g. Qwen3's
    {"enable_thinking": false}."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """More fields for every request body, as given (after every other field, so they win),
    e.g. {"repetition_penalty": 1.1}; stored with the model's settings."""
    system_prompt: str | None = None
    """A persona: text put before the game's own system prompt (or as the system message
    where the game has none) in every request to an endpoint, e.g. "You play aggressively."
    (In2AI's opponents: one model prompted aggressive, cooperative, unpredictable or
    analytical); unset: the game's prompt alone."""

    def __post_init__(self) -> None:
        """Check every value (``ValueError`` naming the field); the style in the registry."""
        # Imported here: the styles and the turn need the games (OpenSpiel); importing this
        # module (the training config does) needs nothing but the standard library, so the
        # learner imports on a GPU machine with only torch and numpy (benchmarks/gpu_check.py).
        from strategic_arena.styles import style_names
        from strategic_arena.turn import IllegalMovePolicy
        from strategic_arena.validation import THINKING_IN_HISTORY

        if self.style not in style_names():
            raise ValueError(f"style must be one of {', '.join(style_names())}; got {self.style!r}")
        IllegalMovePolicy.parse(self.policy)  # raises with the accepted forms
        if self.system_prompt is not None and not self.system_prompt.strip():
            raise ValueError("system_prompt must be a non-empty text or unset")
        if self.thinking_in_history not in THINKING_IN_HISTORY:
            raise ValueError(
                f"thinking_in_history must be one of {', '.join(THINKING_IN_HISTORY)}; "
                f"got {self.thinking_in_history!r}"
            )
        for name in ("chat_template_kwargs", "extra_body"):
            value = getattr(self, name)
            if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
                raise ValueError(f"{name} must be a mapping with string keys; got {value!r}")
            try:
                json.dumps(dict(value), allow_nan=False)
            except (TypeError, ValueError) as error:
                raise ValueError(f"{name} must be plain JSON data: {error}") from None
            object.__setattr__(self, name, dict(value))

    def prompt_set(self) -> PromptSet:
        """The prompt set (:attr:`prompts`), loaded and checked once per folder.

        Raises:
            ValueError: the folder is missing or holds a file the package never reads.
        """
        return cached_prompts(self.prompts)

    def request_fields(self) -> dict[str, Any]:
        """The request body fields these settings add: template kwargs, then ``extra_body``."""
        fields: dict[str, Any] = {}
        if self.chat_template_kwargs:
            fields["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        fields.update(self.extra_body)
        return fields


#: The highest temperature sent (servers take any finite one; past this no text is readable).
MAX_TEMPERATURE = 100.0
#: The largest token count or ``top_k`` sent: a signed 32-bit integer, what servers parse.
MAX_COUNT = 2**31 - 1


@dataclass(frozen=True)
class Sampling:
    """How a model samples its answer (each field unset: the server's default)."""

    temperature: float | None = None
    """Softmax temperature (0: greedy)."""
    top_p: float | None = None
    """Nucleus sampling threshold (1: off)."""
    top_k: int | None = None
    """Sample among the k most likely tokens (0 or -1: off); an extra body field (vLLM,
    SGLang)."""
    min_p: float | None = None
    """Drop tokens less likely than min_p times the most likely one (0: off); an extra body
    field (vLLM, SGLang)."""
    max_tokens: int | None = None
    """Longest answer in tokens; a longer one is cut off, which is an invalid (truncated)
    answer."""
    stop: tuple[str, ...] = ()
    """Stop strings: an answer ends right after the first one it writes, which is kept in the
    answer (e.g. </answer>)."""
    seed: int | None = None
    """The request's seed field (servers that honour it sample reproducibly)."""

    def __post_init__(self) -> None:
        """Check every value (``ValueError`` naming the field)."""
        for name in ("temperature", "top_p", "min_p"):
            value = getattr(self, name)
            if value is not None and not _is_finite(value):
                raise ValueError(f"{name} must be a finite number; got {value!r}")
        broken = {
            "temperature": (
                f"must lie in [0, {MAX_TEMPERATURE:g}]",
                self.temperature is not None and not 0 <= self.temperature <= MAX_TEMPERATURE,
            ),
            "top_p": ("must lie in (0, 1]", self.top_p is not None and not 0 < self.top_p <= 1),
            "top_k": (
                f"must lie in [-1, {MAX_COUNT}] (0 or -1: off)",
                self.top_k is not None and not -1 <= self.top_k <= MAX_COUNT,
            ),
            "min_p": ("must lie in [0, 1]", self.min_p is not None and not 0 <= self.min_p <= 1),
            "max_tokens": (
                f"must lie in [1, {MAX_COUNT}] (unset: the server's)",
                self.max_tokens is not None and not 1 <= self.max_tokens <= MAX_COUNT,
            ),
            "seed": (
                "must fit in a signed 64-bit integer",
                self.seed is not None and not -(2**63) <= self.seed < 2**63,
            ),
        }
        for name, (rule, wrong) in broken.items():
            if wrong:
                raise ValueError(f"{name} {rule}; got {getattr(self, name)!r}")
        stop = tuple(self.stop) if isinstance(self.stop, list | tuple) else self.stop
        if not isinstance(stop, tuple) or not all(isinstance(s, str) and s for s in stop):
            raise ValueError(f"stop must be a list of non-empty strings; got {self.stop!r}")
        object.__setattr__(self, "stop", stop)

    def request_fields(self) -> dict[str, Any]:
        """The standard fields of a chat request that are set (OpenAI's names)."""
        fields: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "stop": list(self.stop) or None,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def extra_fields(self) -> dict[str, Any]:
        """The extra body fields that are set (``top_k``, ``min_p``: vLLM and SGLang)."""
        fields = {"top_k": self.top_k, "min_p": self.min_p}
        return {key: value for key, value in fields.items() if value is not None}

    def over(self, base: Sampling) -> Sampling:
        """``base`` with every field these settings set (unset: ``None`` or no stop strings).

        A game's own sampling over the run's (``eval --game-sampling``, the trainer's
        ``eval.game_sampling``): each field it sets wins for that game, the rest stay.
        """
        chosen = {
            item.name: getattr(self, item.name)
            for item in dataclasses.fields(self)
            if getattr(self, item.name) not in (None, ())
        }
        return dataclasses.replace(base, **chosen)


def _is_finite(value: float) -> bool:
    """Whether ``value`` is a finite number a float can hold (``10**400`` is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


Settings = TypeVar("Settings", Asking, Sampling)


def settings_to_dict(settings: Asking | Sampling) -> dict[str, Any]:
    """``settings`` as plain JSON data (every field; tuples as lists)."""
    data = dataclasses.asdict(settings)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


def game_sampling_params(game_sampling: Mapping[str, Sampling]) -> dict[str, dict[str, Any]]:
    """Per-game sampling as a player's stored parameters record it (``game_sampling``).

    Each game's own settings as given (every field, unset ones ``None``), not merged with
    the run's: the player's other parameters hold those. ``eval`` and the trainer's
    evaluation both store this, so a report or replay reads one form.
    """
    return {env_id: settings_to_dict(game) for env_id, game in game_sampling.items()}


def settings_from_dict(cls: type[Settings], data: Mapping[str, Any], where: str = "") -> Settings:
    """``cls`` (:class:`Asking` or :class:`Sampling`) from plain data; missing keys default.

    Args:
        cls: the settings class.
        data: its fields by name (JSON or YAML data).
        where: what the data is (a file, a section), put before every error.

    Raises:
        ValueError: one line: an unknown key (with the nearest known one), a value of the
            wrong type, or a value the field refuses.
    """
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        raise ValueError(f"{prefix}expected a mapping of {cls.__name__} fields, got {data!r}")
    hints = typing.get_type_hints(cls)
    known = [item.name for item in dataclasses.fields(cls)]
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"{prefix}unknown {cls.__name__} key {key!r}{hint}")
        if not _fits(value, hints[key]):
            raise ValueError(f"{prefix}{key} must be {_type_text(hints[key])}; got {value!r}")
        values[key] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**values)
    except ValueError as error:
        raise ValueError(f"{prefix}{error}") from None


def _fits(value: Any, hint: Any) -> bool:
    """Whether plain data ``value`` fits the annotation ``hint`` (ints fit a float)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, option) for option in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if origin is tuple:
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if hint is Any:
        return True
    if origin is not None:  # Mapping[str, Any]
        return isinstance(value, Mapping)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _type_text(hint: Any) -> str:
    """A reader's name of an annotation: ``a float or null``, ``one of 'keep', 'strip'``."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_text(option) for option in get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(repr(option) for option in get_args(hint))
    if origin is tuple:
        return "a list of strings"
    if origin is not None:
        return "a mapping"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return "null" if hint is type(None) else names.get(hint, str(hint))


def write_settings(
    path: str | Path,
    asking: Asking,
    sampling: Sampling,
    serving: Mapping[str, Any] | None = None,
) -> Path:
    """Write how a model is asked and samples as JSON (:data:`SETTINGS_FILE` in a folder).

    Args:
        path: a folder (the file is :data:`SETTINGS_FILE` in it) or a file path.
        asking: how the model is asked.
        sampling: how it samples.
        serving: what a server needs to format chats as the writer did (the trainer: the
            generation-config handling, dtype and context length of its vLLM server); kept
            as given, for :mod:`strategic_arena.serving` to read.

    Returns:
        The file written (atomically: a reader never sees half a file).
    """
    target = Path(path)
    if target.is_dir():
        target = target / SETTINGS_FILE
    data = {
        "format": SETTINGS_FORMAT,
        "asking": settings_to_dict(asking),
        "sampling": settings_to_dict(sampling),
        "serving": dict(serving or {}),
    }
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(target)
    return target


def settings_file(path: str | Path) -> Path:
    """The settings file of ``path``: the file itself, or :data:`SETTINGS_FILE` in a folder.

    A folder without one is looked at one level up too, so a checkpoint's ``policy/`` folder
    (the model a server loads) finds its checkpoint's file.

    Raises:
        ValueError: no settings file there.
    """
    given = Path(path).expanduser()
    if given.is_file():
        return given
    for folder in (given, given.parent):
        if (folder / SETTINGS_FILE).is_file():
            return folder / SETTINGS_FILE
    raise ValueError(
        f"no model settings at {path}: give a checkpoint folder (the trainer writes "
        f"{SETTINGS_FILE} in each) or a settings file"
    )


def read_settings(path: str | Path) -> tuple[Asking, Sampling]:
    """The :class:`Asking` and :class:`Sampling` of a settings file or checkpoint folder.

    Raises:
        ValueError: no such file, not JSON, not a settings file, or a bad field (one line).
    """
    data = read_settings_data(path)
    where = str(settings_file(path))
    asking = settings_from_dict(Asking, data.get("asking", {}), f"{where}: asking")
    return asking, settings_from_dict(Sampling, data.get("sampling", {}), f"{where}: sampling")


def read_settings_data(path: str | Path) -> dict[str, Any]:
    """The plain data of a settings file (see :func:`read_settings`), format checked."""
    file = settings_file(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{file}: not a readable JSON settings file ({error})") from None
    if not isinstance(data, dict) or data.get("format") != SETTINGS_FORMAT:
        raise ValueError(f"{file}: not a model settings file (format {SETTINGS_FORMAT!r})")
    return data
