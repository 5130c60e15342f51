r"""MAPoRL's learned verifier: the policy's base model, a linear head and a softmax (Appendix E).

The verifier reads a question and a solution and says how likely the solution is right: a score
in [0, 1]. It is the reward of MAPoRL's debate training (:mod:`strategic_arena.rl.maporl`) and
the ``learned`` entry of the verifier registry (:mod:`strategic_arena.rl.verifiers`).

**Model.** The policy's base model (MAPoRL quantizes it; any ``transformers`` causal LM here,
loaded in the dtype asked) gives a hidden state per token; a linear head maps it to two logits,
*wrong* and *right*, and a softmax to probabilities. The score of a solution is the probability
of *right* at its last token.

**Data** (E.1), in steps, each a function:

1. :func:`sample_solutions` -- the base model's own solutions to the training problems
   (MAPoRL: 100 paths per GSM8K question, 50 per ANLI question), sampled in process;
2. :func:`label` -- each solution right or wrong by the exact-answer check; solutions with no
   ``\boxed{}`` answer are dropped (MAPoRL excluded outputs not in the required format);
3. :func:`balance` -- per question, as many right as wrong solutions, at most ``per_class`` of
   each, drawn from a seed (MAPoRL: 20 and 20 for GSM8K, 10 and 10 for ANLI). MAPoRL filled a
   missing class with extra generated paths (a reference solution, or one with a planted
   error); here a question that lacks one class is left out instead;
4. :func:`split` -- whole questions held out for the accuracy (no question on both sides).

**Loss.** Token-level cross-entropy: every token of the *latter half* of a solution is labelled
with the solution's correctness, and the loss is the mean cross-entropy of the head's two
logits over those tokens (MAPoRL found the latter half better than all tokens or the last).

**Accuracy** (:func:`accuracy`): the share of held-out solutions whose score is on the right
side of 0.5 (MAPoRL reports 0.91 on GSM8K and 0.92 on ANLI).

**Files** (:meth:`LearnedVerifier.save`, :func:`load_verifier`): the backbone and tokenizer as
``transformers`` saves them, the head as ``head.pt`` and ``verifier.json`` (the settings).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from strategic_arena._extras import require
from strategic_arena.door import read_json
from strategic_arena.problems import Problem, check_answer, extract_boxed, extract_choice
from strategic_arena.seeding import derive_seed
from strategic_arena.train.policy.models import load_saved_tokenizer

__all__ = [
    "LearnedVerifier",
    "VerifierSample",
    "VerifierTraining",
    "accuracy",
    "balance",
    "label",
    "load_verifier",
    "sample_solutions",
    "split",
    "train_verifier",
]

#: The file of a saved verifier's settings (beside the backbone's files and ``head.pt``).
SETTINGS_FILE = "verifier.json"
HEAD_FILE = "head.pt"


@dataclass(frozen=True)
class VerifierSample:
    """One labelled solution: a problem, a solution to it and whether it is right."""

    problem: Problem
    solution: str
    right: bool


def _has_answer(problem: Problem, solution: str) -> bool:
    if problem.multiple_choice:
        return extract_choice(solution, len(problem.choices)) is not None
    return extract_boxed(solution) is not None


def label(problem: Problem, solutions: Sequence[str]) -> list[VerifierSample]:
    """Each solution with an answer, labelled right or wrong (those without one are dropped)."""
    return [
        VerifierSample(problem, text, check_answer(problem, text))
        for text in solutions
        if _has_answer(problem, text)
    ]


def balance(samples: Sequence[VerifierSample], per_class: int, seed: int) -> list[VerifierSample]:
    """Per question, ``k`` right and ``k`` wrong solutions, ``k = min(per_class, both counts)``.

    A question with no right or no wrong solution is left out. The draw is seeded per question
    (by its id), so the result does not depend on the order of the questions.
    """
    if per_class < 1:
        raise ValueError(f"per_class must be at least 1, got {per_class}")
    by_question: dict[str, list[VerifierSample]] = defaultdict(list)
    for sample in samples:
        by_question[sample.problem.id].append(sample)
    balanced: list[VerifierSample] = []
    for question, group in by_question.items():
        right = [s for s in group if s.right]
        wrong = [s for s in group if not s.right]
        k = min(per_class, len(right), len(wrong))
        if k == 0:
            continue
        rng = np.random.default_rng(derive_seed(seed, "balance", question))
        for side in (right, wrong):
            chosen = sorted(rng.choice(len(side), size=k, replace=False))
            balanced += [side[int(i)] for i in chosen]
    return balanced


def split(
    samples: Sequence[VerifierSample], held_out: float, seed: int
) -> tuple[list[VerifierSample], list[VerifierSample]]:
    """``(train, held-out)``: a seeded share ``held_out`` of the *questions* held out whole."""
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"held_out must be between 0 and 1, got {held_out}")
    questions = sorted({sample.problem.id for sample in samples})
    rng = np.random.default_rng(derive_seed(seed, "split"))
    count = max(1, round(held_out * len(questions))) if len(questions) > 1 else 0
    kept_out = {questions[int(i)] for i in rng.permutation(len(questions))[:count]}
    train = [s for s in samples if s.problem.id not in kept_out]
    test = [s for s in samples if s.problem.id in kept_out]
    return train, test


def _messages(problem: Problem) -> list[dict[str, str]]:
    """The chat that asks the question (its lettered choices included)."""
    question = problem.question
    if problem.multiple_choice:
        lines = [f"{x}. {c}" for x, c in zip(problem.letters, problem.choices, strict=True)]
        question = "\n".join([question, *lines])
    return [{"role": "user", "content": question}]


@dataclass(frozen=True)
class Encoded:
    """One tokenized (question, solution): token ids and where the solution's tokens start."""

    ids: list[int]
    solution_start: int

    @property
    def latter_half(self) -> range:
        """The positions of the latter half of the solution's tokens (at least its last)."""
        length = len(self.ids) - self.solution_start
        return range(self.solution_start + length // 2, len(self.ids))


def prompt_text(tokenizer: Any, problem: Problem) -> str:
    """The question as the policy is asked it: its chat template's prompt, else a plain header."""
    if getattr(tokenizer, "chat_template", None):
        text: str = tokenizer.apply_chat_template(
            _messages(problem), tokenize=False, add_generation_prompt=True
        )
        return text
    return f"Question: {_messages(problem)[0]['content']}\nSolution: "


def encode(tokenizer: Any, problem: Problem, solution: str, max_tokens: int) -> Encoded:
    """The token ids of the question's prompt, then of the solution, as the policy wrote it.

    A text longer than ``max_tokens`` keeps its last ``max_tokens`` tokens (the solution's end,
    which the loss and the score read).
    """
    prompt = tokenizer(prompt_text(tokenizer, problem), add_special_tokens=False)["input_ids"]
    answer = tokenizer(solution, add_special_tokens=False)["input_ids"] or [tokenizer.eos_token_id]
    ids = [int(i) for i in [*prompt, *answer]]
    start = len(prompt)
    if len(ids) > max_tokens:
        cut = len(ids) - max_tokens
        ids, start = ids[cut:], max(0, start - cut)
    return Encoded(ids, start)


class LearnedVerifier:
    """A backbone with a two-way linear head: ``score_all`` gives P(right) per solution.

    Args:
        backbone: a ``transformers`` model whose forward pass returns hidden states (a causal
            LM: its last hidden layer is read).
        tokenizer: the backbone's tokenizer.
        head: the linear layer (hidden size -> 2); a fresh one (seeded) when ``None``.
        max_tokens: the longest (question, solution) read.
        seed: seeds the fresh head.
    """

    name = "learned"

    def __init__(
        self,
        backbone: Any,
        tokenizer: Any,
        head: Any = None,
        *,
        max_tokens: int = 1024,
        seed: int = 0,
    ) -> None:
        torch = require("torch", "the learned verifier")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        if head is None:
            hidden = int(backbone.config.hidden_size)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                head = torch.nn.Linear(hidden, 2)
            head = head.to(next(backbone.parameters()).device)
        self.head = head

    def parameters(self) -> Iterator[Any]:
        """Every trainable parameter: the backbone's and the head's."""
        yield from self.backbone.parameters()
        yield from self.head.parameters()

    def logits(self, batch: Sequence[Encoded]) -> tuple[Any, Any]:
        """Per-token logits ``[batch, length, 2]`` and the attention mask (right-padded)."""
        torch = require("torch", "the learned verifier")
        device = next(self.backbone.parameters()).device
        length = max(len(item.ids) for item in batch)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(batch), length), pad, dtype=torch.long, device=device)
        mask = torch.zeros((len(batch), length), dtype=torch.long, device=device)
        for row, item in enumerate(batch):
            ids[row, : len(item.ids)] = torch.tensor(item.ids, device=device)
            mask[row, : len(item.ids)] = 1
        out = self.backbone(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        hidden = out.hidden_states[-1]
        return self.head(hidden.to(self.head.weight.dtype)), mask

    def loss(self, samples: Sequence[VerifierSample]) -> Any:
        """Mean token-level cross-entropy over the latter half of each solution's tokens."""
        torch = require("torch", "the learned verifier")
        encoded = [self._encode(s.problem, s.solution) for s in samples]
        logits, _ = self.logits(encoded)
        picked, targets = [], []
        for row, (item, sample) in enumerate(zip(encoded, samples, strict=True)):
            positions = list(item.latter_half)
            picked.append(logits[row, positions])
            targets += [int(sample.right)] * len(positions)
        target = torch.tensor(targets, dtype=torch.long, device=logits.device)
        return torch.nn.functional.cross_entropy(torch.cat(picked), target)

    def score_all(self, items: Sequence[tuple[Problem, str]], batch_size: int = 8) -> list[float]:
        """P(right) at the last token of each solution."""
        torch = require("torch", "the learned verifier")
        scores: list[float] = []
        with torch.no_grad():
            for start in range(0, len(items), batch_size):
                chunk = [self._encode(p, s) for p, s in items[start : start + batch_size]]
                logits, _ = self.logits(chunk)
                for row, item in enumerate(chunk):
                    last = logits[row, len(item.ids) - 1]
                    scores.append(float(torch.softmax(last.float(), dim=-1)[1]))
        return scores

    def _encode(self, problem: Problem, solution: str) -> Encoded:
        return encode(self.tokenizer, problem, solution, self.max_tokens)

    def save(self, path: str | Path) -> Path:
        """Save backbone, tokenizer, head and settings under ``path`` (created)."""
        torch = require("torch", "the learned verifier")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        torch.save(self.head.state_dict(), path / HEAD_FILE)
        settings = {
            "max_tokens": self.max_tokens,
            "hidden_size": int(self.head.in_features),
            # A generic tokenizer (the tiny word-level one), not a model type's own class, is
            # read back exactly as saved: the model type's class would rebuild it around the
            # vocabulary and split text differently.
            "exact_tokenizer": not type(self.tokenizer).__module__.startswith(
                "transformers.models."
            ),
        }
        (path / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        return path


def load_verifier(path: str | Path, device: str = "cpu", dtype: str = "float32") -> LearnedVerifier:
    """The verifier saved at ``path`` (:meth:`LearnedVerifier.save`), ready to score.

    Raises:
        ValueError: ``path`` holds no saved verifier.
    """
    torch = require("torch", "the learned verifier")
    transformers = require("transformers", "the learned verifier")
    path = Path(path)
    if not (path / SETTINGS_FILE).is_file() or not (path / HEAD_FILE).is_file():
        raise ValueError(f"{path} holds no saved verifier ({SETTINGS_FILE} and {HEAD_FILE})")
    settings = read_json(path / SETTINGS_FILE, "settings", within=path)
    try:
        backbone = transformers.AutoModelForCausalLM.from_pretrained(
            path, dtype=getattr(torch, dtype)
        )
    except TypeError:  # transformers before 4.56 calls it torch_dtype
        backbone = transformers.AutoModelForCausalLM.from_pretrained(
            path, torch_dtype=getattr(torch, dtype)
        )
    backbone.to(device).eval()
    tokenizer = load_saved_tokenizer(path, tiny=bool(settings.get("exact_tokenizer")))
    head = torch.nn.Linear(int(settings["hidden_size"]), 2)
    head.load_state_dict(torch.load(path / HEAD_FILE, map_location=device))
    head.to(device)
    return LearnedVerifier(backbone, tokenizer, head, max_tokens=int(settings["max_tokens"]))


def sample_solutions(
    model: Any,
    tokenizer: Any,
    problems: Sequence[Problem],
    paths: int,
    *,
    temperature: float = 0.7,
    max_new_tokens: int = 256,
    seed: int = 0,
) -> dict[str, list[str]]:
    """``paths`` solutions of ``model`` to each problem (in process), by problem id."""
    torch = require("torch", "sampling the policy's solutions")
    solutions: dict[str, list[str]] = {}
    device = next(model.parameters()).device
    for problem in problems:
        prompt = tokenizer(prompt_text(tokenizer, problem), add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prompt] * paths, dtype=torch.long, device=device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "sample", problem.id) % 2**63)
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
        texts = tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
        solutions[problem.id] = [str(text) for text in texts]
    return solutions


@dataclass(frozen=True)
class VerifierTraining:
    """How the verifier is trained (MAPoRL's settings where the seed gives them).

    Attributes:
        epochs: passes over the training solutions.
        batch_size: solutions per optimizer step.
        learning_rate: AdamW's learning rate (MAPoRL's released GSM8K verifier config: 1e-4).
        weight_decay: AdamW's weight decay.
        max_tokens: the longest (question, solution) read.
        seed: the shuffle's and the head's seed.
    """

    epochs: int = 1
    batch_size: int = 8
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    max_tokens: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.max_tokens < 2:
            raise ValueError("epochs and batch_size must be >= 1, max_tokens >= 2")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


#: The default training settings.
DEFAULT_TRAINING = VerifierTraining()


def train_verifier(
    backbone: Any,
    tokenizer: Any,
    samples: Sequence[VerifierSample],
    training: VerifierTraining = DEFAULT_TRAINING,
) -> tuple[LearnedVerifier, list[float]]:
    """Train a verifier (backbone and head) on labelled ``samples``; returns it and the losses."""
    torch = require("torch", "training the learned verifier")
    if not samples:
        raise ValueError("no labelled solutions to train the verifier on")
    verifier = LearnedVerifier(
        backbone, tokenizer, max_tokens=training.max_tokens, seed=training.seed
    )
    backbone.train()
    optimizer = torch.optim.AdamW(
        list(verifier.parameters()),
        lr=training.learning_rate,
        weight_decay=training.weight_decay,
    )
    rng = np.random.default_rng(derive_seed(training.seed, "verifier-shuffle"))
    losses: list[float] = []
    for _ in range(training.epochs):
        order = rng.permutation(len(samples))
        for start in range(0, len(order), training.batch_size):
            batch = [samples[int(i)] for i in order[start : start + training.batch_size]]
            loss = verifier.loss(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            value = float(loss.detach())
            if not math.isfinite(value):
                raise ValueError(f"the verifier's loss is {value} at step {len(losses)}")
            losses.append(value)
    backbone.eval()
    return verifier, losses


def accuracy(verifier: LearnedVerifier, samples: Sequence[VerifierSample]) -> float:
    """The share of ``samples`` whose score is on the right side of 0.5 (Table 6's measure)."""
    if not samples:
        raise ValueError("no held-out solutions to measure the verifier on")
    scores = verifier.score_all([(s.problem, s.solution) for s in samples])
    hits = sum((score >= 0.5) == s.right for score, s in zip(scores, samples, strict=True))
    return hits / len(samples)


def settings_of(training: VerifierTraining) -> dict[str, Any]:
    """The training settings as JSON-ready data (reported beside the accuracy)."""
    return asdict(training)


@dataclass(frozen=True)
class VerifierReport:
    """What :func:`verifier_from_policy` did: the data, the losses and the held-out accuracy.

    Attributes:
        problems: problems the policy was asked.
        solutions: solutions sampled.
        labelled: solutions with an answer (right or wrong).
        balanced: solutions kept after balancing (as many right as wrong per question).
        train / held_out: solutions trained on / measured on (whole questions held out).
        first_loss / last_loss: the mean loss of the first and of the last few steps.
        accuracy: the held-out accuracy (Table 6's measure).
        path: where the verifier was saved (``None``: not saved).
    """

    problems: int
    solutions: int
    labelled: int
    balanced: int
    train: int
    held_out: int
    first_loss: float
    last_loss: float
    accuracy: float
    path: str | None = None


def verifier_from_policy(
    model: Any,
    tokenizer: Any,
    problems: Sequence[Problem],
    *,
    paths: int = 20,
    per_class: int = 5,
    held_out: float = 0.1,
    training: VerifierTraining = DEFAULT_TRAINING,
    temperature: float = 0.7,
    max_new_tokens: int = 256,
    out: str | Path | None = None,
) -> tuple[LearnedVerifier, VerifierReport]:
    """MAPoRL's recipe end to end: sample, label, balance, split, train, measure, save.

    Raises:
        ValueError: too few labelled solutions of both kinds to train and measure on.
    """
    sampled = sample_solutions(
        model,
        tokenizer,
        problems,
        paths,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        seed=training.seed,
    )
    by_id = {problem.id: problem for problem in problems}
    labelled = [s for pid, texts in sampled.items() for s in label(by_id[pid], texts)]
    balanced = balance(labelled, per_class, training.seed)
    if len({s.problem.id for s in balanced}) < 2:
        raise ValueError(
            f"the policy's {sum(map(len, sampled.values()))} solutions give fewer than two "
            "questions with both a right and a wrong answer: ask more paths or problems"
        )
    train, test = split(balanced, held_out, training.seed)
    verifier, losses = train_verifier(model, tokenizer, train, training)
    window = max(1, min(3, len(losses) // 2))
    report = VerifierReport(
        problems=len(problems),
        solutions=sum(map(len, sampled.values())),
        labelled=len(labelled),
        balanced=len(balanced),
        train=len(train),
        held_out=len(test),
        first_loss=sum(losses[:window]) / window,
        last_loss=sum(losses[-window:]) / window,
        accuracy=accuracy(verifier, test),
        path=None if out is None else str(verifier.save(out)),
    )
    return verifier, report
