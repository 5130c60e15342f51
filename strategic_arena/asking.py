r"""How a model is asked, how it samples and how it is served: small settings objects, one home.

Every place that asks a language model for a move -- the model player
(:class:`~strategic_arena.players.LLMPlayer`), the arena's entrants and ``eval``, the
integrations' game session, ``serve`` and the trainer (its rollouts, its evaluation, the
settings it writes beside each checkpoint) -- takes these two objects, so a setting has one
name, one default, one check and one description:

* :class:`Asking`: the prompt and the answer -- style, strictness, reasoning, history, menu
  order, the illegal-move policy, the prompt set, a prefill, the chat template's keyword
  arguments and any extra request fields;
* :class:`Sampling`: how the model samples -- temperature, top-p, top-k, min-p, the response
  budget, stop strings and the request seed (``None``: the server's default);
* :class:`Serving` (with its :class:`Evaluation`): what a checkpoint's settings file says about
  serving it -- the tokenizer folder, names, dtype, context length, whether its trainer allowed
  remote code, and the games its evaluation played.

Each field is documented once, by the docstring under it (:func:`strategic_arena.field_docs.
field_docs` reads them): the CLI's option help and the config docs come from there. Values are
checked when an object is made (``ValueError`` naming the field); :func:`settings_from_dict`
reads one back from plain data (JSON, YAML) with unknown keys refused by name. All are plain
frozen dataclasses with no heavy import, so pydantic can validate them as they are.

A checkpoint's settings file (:data:`SETTINGS_FILE`) comes from outside: it is read through the
door (:func:`~strategic_arena.door.read_json`: a regular file, size-capped, depth-bounded) and
every section by :func:`settings_from_dict`, so ``"trust_remote_code": "false"`` is refused, not
read as true, and its tokenizer must lie inside the checkpoint (:func:`read_serving`).
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

from strategic_arena.door import printable_line, read_json
from strategic_arena.prompt_sets import PromptSet, cached_prompts

__all__ = [
    "SETTINGS_FILE",
    "Asking",
    "Evaluation",
    "Sampling",
    "Serving",
    "game_sampling_params",
    "read_serving",
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
    """Put the public move history (``$history``) in every prompt of a menu game, making a
    partially observed state Markov. SPIRAL's code does not: its prompt is its template around
    the game's observation alone (``examples/prompts/spiral`` has no ``$history``)."""
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


#: The dtypes a vLLM server takes (``--dtype``).
ServerDType = Literal["auto", "float32", "float16", "bfloat16", "half", "float"]

#: The longest name, path or opponent spec a settings file may give (one line of a command).
MAX_NAME_CHARS = 512


def _one_line(name: str, value: str) -> None:
    """Refuse ``value`` unless it is a non-empty, printable line of at most MAX_NAME_CHARS."""
    if not value or len(value) > MAX_NAME_CHARS or printable_line(value) != value:
        raise ValueError(
            f"{name} must be one printable line of 1 to {MAX_NAME_CHARS} characters; "
            f"got {printable_line(repr(value), limit=80)}"
        )


@dataclass(frozen=True)
class Evaluation:
    """The games a checkpoint's trainer evaluated it on, for ``eval`` to play them again."""

    seed: int | None = None
    """The run's seed (eval --seed): the same seed plays the trainer's deals."""
    num_games: int | None = None
    """Games per game and opponent (eval --num-games; 0 or unset: eval's default)."""
    opponents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The opponent specs of each game (eval --envs, --opponents), by env id: the solvers and
    bots eval can name."""
    game_sampling: Mapping[str, Sampling] = field(default_factory=dict)
    """Each game's own sampling (the trainer's eval.game_sampling; eval --game-sampling), by
    env id, read as a Sampling each."""

    def __post_init__(self) -> None:
        """Check every value (``ValueError`` naming the field); lists become tuples."""
        if self.seed is not None and not -(2**63) <= self.seed < 2**63:
            raise ValueError(f"seed must fit in a signed 64-bit integer; got {self.seed!r}")
        if self.num_games is not None and not 0 <= self.num_games <= MAX_COUNT:
            raise ValueError(f"num_games must lie in [0, {MAX_COUNT}]; got {self.num_games!r}")
        opponents: dict[str, tuple[str, ...]] = {}
        for env_id, specs in _mapping("opponents", self.opponents).items():
            if not isinstance(specs, list | tuple) or not all(isinstance(s, str) for s in specs):
                raise ValueError(f"opponents {env_id} must be a list of strings; got {specs!r}")
            for spec in specs:
                _one_line(f"opponents {env_id}", spec)
            opponents[env_id] = tuple(specs)
        games: dict[str, Sampling] = {}
        for env_id, data in _mapping("game_sampling", self.game_sampling).items():
            games[env_id] = (
                data
                if isinstance(data, Sampling)
                else settings_from_dict(Sampling, data, f"game_sampling {env_id}")
            )
        object.__setattr__(self, "opponents", opponents)
        object.__setattr__(self, "game_sampling", games)


def _plain_values(name: str, value: Any) -> None:
    """Refuse ``value`` unless it maps printable keys to numbers, lines or lists of lines."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError(f"{name} must be a mapping of keys to values; got {value!r}"[:200])
    for key, item in value.items():
        _one_line(f"{name} key", key)
        items = item if isinstance(item, list | tuple) else [item]
        for one in items:
            if isinstance(one, str):
                _one_line(f"{name} {key}", one)
            elif one is not None and not isinstance(one, int | float):
                raise ValueError(f"{name} {key} must be a number or text; got {one!r}"[:200])


def _mapping(name: str, value: Any) -> Mapping[str, Any]:
    """``value``, a mapping whose keys are env ids (one printable line each), else refused."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError(f"{name} must be a mapping of env ids; got {value!r}")
    for key in value:
        _one_line(f"{name} env id", key)
    return value


@dataclass(frozen=True)
class Serving:
    """How a checkpoint is served so ``eval`` asks it as its trainer did (the ``serving`` section).

    Written by the trainer beside each checkpoint; read back by ``serve-model`` and the trainer's
    closing commands. Remote code is never turned on by this section alone: ``serve-model``
    needs its ``--trust-remote-code`` flag (the file's wish is only reported).
    """

    tokenizer: str | None = None
    """A folder of the tokenizer alone, relative to the settings file's folder and inside it
    (unset: the model folder's own tokenizer)."""
    served_model_name: str | None = None
    """The name the server answers to (vllm --served-model-name; eval --model)."""
    name: str | None = None
    """The trainer's name of the evaluated policy (eval --name): the same name plays the same
    games and seeds."""
    dtype: ServerDType = "auto"
    """The server's dtype, the one the trainer's engine computed in (auto: the model's)."""
    max_model_len: int | None = None
    """The server's context length in tokens (unset: the model's)."""
    generation_config: Literal["vllm"] = "vllm"
    """Where the server's default sampling comes from: vllm alone (nothing from the model's
    generation_config.json; every field the evaluation used is in the request)."""
    trust_remote_code: bool = False
    """Whether the trainer's model needed code from the hub. Only reported: serve-model turns
    remote code on with its own --trust-remote-code flag, never from this file."""
    evaluation: Evaluation = field(default_factory=Evaluation)
    """The games the trainer's evaluation played (seed, games, opponents, per-game sampling)."""
    transfer: Mapping[str, Any] = field(default_factory=dict)
    """The trainer's transfer plan (its ``transfer`` section's plan keys: paper, benchmarks,
    samples, max tokens...), for ``transfer run --settings`` to ask the same benchmarks the
    same way; plain values only here (``transfer run`` reads them as a plan, strictly)."""

    def __post_init__(self) -> None:
        """Check every value (``ValueError`` naming the field)."""
        _plain_values("transfer", self.transfer)
        for name in ("tokenizer", "served_model_name", "name"):
            value = getattr(self, name)
            if value is not None:
                _one_line(name, value)
        if self.tokenizer is not None and Path(self.tokenizer).is_absolute():
            raise ValueError(
                f"tokenizer must be a folder relative to the checkpoint; got {self.tokenizer!r}"
            )
        if self.max_model_len is not None and not 1 <= self.max_model_len <= MAX_COUNT:
            raise ValueError(
                f"max_model_len must lie in [1, {MAX_COUNT}] (unset: the model's); "
                f"got {printable_line(repr(self.max_model_len), limit=80)}"
            )

    def tokenizer_in(self, folder: str | Path) -> Path | None:
        """The tokenizer folder resolved inside ``folder`` (the settings file's folder).

        Raises:
            ValueError: it resolves outside ``folder`` (``../../etc``, a link leading out).
        """
        if self.tokenizer is None:
            return None
        base = Path(folder).resolve()
        try:
            resolved = (base / self.tokenizer).resolve()
        except (OSError, RuntimeError):  # a link loop
            resolved = None
        if resolved is None or not resolved.is_relative_to(base):
            raise ValueError(
                f"tokenizer {printable_line(self.tokenizer)} lies outside the checkpoint "
                f"{printable_line(base)}, where it must be"
            )
        return resolved


Settings = TypeVar("Settings", Asking, Sampling, Serving, Evaluation)


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
    """``cls`` (a settings class of this module) from plain data; missing keys default.

    A field whose type is another settings class (:attr:`Serving.evaluation`) is read from its
    mapping the same way, its key put in ``where``.

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
        raise ValueError(
            f"{prefix}expected a mapping of {cls.__name__} fields, got {_shown_value(data)}"
        )
    hints = typing.get_type_hints(cls)
    known = [item.name for item in dataclasses.fields(cls)]
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"{prefix}unknown {cls.__name__} key {_shown_value(key)}{hint}")
        if not _fits(value, hints[key]):
            raise ValueError(
                f"{prefix}{key} must be {_type_text(hints[key])}; got {_shown_value(value)}"
            )
        if dataclasses.is_dataclass(hints[key]) and isinstance(value, Mapping):
            value = settings_from_dict(hints[key], value, f"{prefix}{key}")
        values[key] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**values)
    except ValueError as error:
        raise ValueError(f"{prefix}{error}") from None


def _shown_value(value: Any) -> str:
    """``value`` in an error line: its repr, printable and cut short (a file may hold a MB)."""
    return printable_line(repr(value), limit=80)


def _fits(value: Any, hint: Any) -> bool:
    """Whether plain data ``value`` fits the annotation ``hint`` (ints fit a float)."""
    if dataclasses.is_dataclass(hint):  # a nested settings class: its mapping, or itself
        return isinstance(value, Mapping | hint)
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
    if origin is not None or dataclasses.is_dataclass(hint):
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
            generation-config handling, dtype and context length of its vLLM server), the
            fields of :class:`Serving`; written as given, once :func:`read_serving` would
            read it back.

    Returns:
        The file written (atomically: a reader never sees half a file).

    Raises:
        ValueError: ``serving`` is not a :class:`Serving` section (nothing is written).
    """
    target = Path(path)
    if target.is_dir():
        target = target / SETTINGS_FILE
    settings_from_dict(Serving, serving or {}, "serving")  # never write what cannot be read
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
        f"no model settings at {printable_line(path)}: give a checkpoint folder (the trainer "
        f"writes {SETTINGS_FILE} in each) or a settings file"
    )


def read_settings(path: str | Path) -> tuple[Asking, Sampling]:
    """The :class:`Asking` and :class:`Sampling` of a settings file or checkpoint folder.

    Raises:
        ValueError: no such file, not JSON, not a settings file, or a bad field (one line).
    """
    data = read_settings_data(path)
    where = printable_line(settings_file(path))
    asking = settings_from_dict(Asking, data.get("asking", {}), f"{where}: asking")
    return asking, settings_from_dict(Sampling, data.get("sampling", {}), f"{where}: sampling")


def read_serving(path: str | Path) -> tuple[Serving, Path | None]:
    """The :class:`Serving` section of a settings file, and its tokenizer folder resolved.

    Args:
        path: a settings file or a checkpoint folder (its ``policy/`` too).

    Returns:
        The section, and its tokenizer as an absolute folder inside the settings file's folder
        (``None``: none given).

    Raises:
        ValueError: as :func:`read_settings`, or the tokenizer lies outside the checkpoint.
    """
    data = read_settings_data(path)
    file = settings_file(path)
    where = f"{printable_line(file)}: serving"
    serving = settings_from_dict(Serving, data.get("serving", {}), where)
    try:
        return serving, serving.tokenizer_in(file.parent)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


#: The sections of a settings file.
SETTINGS_KEYS = ("format", "asking", "sampling", "serving")


def read_settings_data(path: str | Path) -> dict[str, Any]:
    """The plain data of a settings file (see :func:`read_settings`), format checked.

    Read through the door (a regular file, at most the size of a settings file, JSON no deeper
    than the door's bound); a section the format does not have is refused by name.
    """
    file = settings_file(path)
    data = read_json(file, "settings")
    if not isinstance(data, dict) or data.get("format") != SETTINGS_FORMAT:
        raise ValueError(
            f"{printable_line(file)}: not a model settings file (format {SETTINGS_FORMAT!r})"
        )
    for key in data:
        if key not in SETTINGS_KEYS:
            near = difflib.get_close_matches(key, SETTINGS_KEYS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"{printable_line(file)}: unknown section {_shown_value(key)}{hint}")
    return data
