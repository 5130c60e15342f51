"""The one-GPU recipe's hand-off decided on an 80 GB H100's memory (``handoff_h100`` row).

The one-GPU recipe (``configs/gpu1_qwen3_4b_colocated.yaml``) shares an H100 between a
Qwen3-4B learner and a vLLM server in sleep mode. Whether the server's first wake fits depends
on what the learner's allocator keeps after ``empty_cache`` and what a sleeping server keeps,
so it is measured, setting by setting, on whatever card the check runs on, made to look like
an H100:

* a **stand-in server** (:data:`SERVER`, a torch-only child process, not vLLM) first takes a
  ballast that leaves the card :data:`H100_BYTES` (an H100 80GB's 79.19 GiB), then the
  recipe's share awake: its weights, sampler, activations and KV cache (``0.3`` of the card)
  plus its CUDA graphs; asleep it keeps :data:`ASLEEP_BYTES` (the estimate's sleeping server);
* the **learner** builds the 4B-shaped model in float32 masters (the ``learner`` row's), the
  server falls asleep (the learner measures what it released, as the trainer does), and two
  rounds of update, release and wake follow, exactly as
  :class:`~strategic_arena.train.engines.colocation.ColocatedMemory` drives them in training.
  The wake is real: the stand-in allocates what it released, and fails as a server would.

Each **setting** runs in a process of its own (``PYTORCH_CUDA_ALLOC_CONF`` is read when CUDA
starts): ``expandable_segments`` off or on, AdamW's state kept on the GPU or offloaded. A
setting passes when both wakes fit with the trainer's 1 GiB margin; its figures are the free
memory at each wake, what the wake took back, the margin left, and the learner's reserved
memory after emptying its cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: An H100 80GB's memory as ``torch.cuda.mem_get_info`` reports it.
H100_BYTES = int(79.19 * 1024**3)

#: What the stand-in keeps asleep: the estimate's sleeping server (2 GiB) and CUDA graphs (1).
ASLEEP_BYTES = 3 * 1024**3

#: The settings: (name, ``expandable_segments``, offload AdamW's state).
SETTINGS = (
    ("default", False, False),
    ("expandable", True, False),
    ("offload", False, True),
    ("expandable+offload", True, True),
)

#: The stand-in server: reads commands from stdin, answers one JSON line each.
#: ``take N`` allocates N bytes more, ``keep N`` frees all but N bytes, ``quit`` ends.
SERVER = r"""
import json, sys, torch
device = torch.device(sys.argv[1])
blocks = []
held = 0
def answer(**fields):
    print(json.dumps(fields), flush=True)
for line in sys.stdin:
    command, _, value = line.strip().partition(" ")
    if command == "quit":
        break
    size = int(value or 0)
    try:
        if command == "take":
            blocks.append(torch.empty(size, dtype=torch.uint8, device=device))
            held += size
        elif command == "keep":
            blocks = [torch.empty(size, dtype=torch.uint8, device=device)] if size else []
            held = size
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
        answer(ok=True, held=held)
    except RuntimeError as error:
        answer(ok=False, held=held, error=str(error).splitlines()[0][:300])
"""


class StandInServer:
    """The stand-in server process (see the module docstring): ``take`` and ``keep`` bytes."""

    def __init__(self, device: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, device],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def _call(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f"the stand-in server exited ({self.process.wait()})")
        answer: dict[str, Any] = json.loads(reply)
        return answer

    def take(self, size: int) -> dict[str, Any]:
        """Allocate ``size`` bytes more (a start or a wake)."""
        return self._call(f"take {int(size)}")

    def keep(self, size: int) -> dict[str, Any]:
        """Free everything but ``size`` bytes (falling asleep)."""
        return self._call(f"keep {int(size)}")

    def close(self) -> None:
        """End the process."""
        if self.process.poll() is None:
            self._call_quietly("quit")
            self.process.wait(timeout=30)

    def _call_quietly(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()


def handoff_rows(args: argparse.Namespace, script: Path) -> list[dict[str, Any]]:
    """One row's fields per setting, each measured in a process of its own."""
    rows = []
    for name, expandable, offload in SETTINGS:
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if expandable:
            env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        command = [
            sys.executable,
            str(script),
            f"--handoff-setting={name}:{int(offload)}",
            f"--shape={args.shape}",
            f"--batch={args.batch}",
            f"--prompt-tokens={args.prompt_tokens}",
            f"--response-tokens={args.response_tokens}",
            f"--micro-batch={args.micro_batch}",
        ]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        fields: dict[str, Any] = {"status": "fail", "figures": {"setting": name}, "note": ""}
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if lines:
            fields = json.loads(lines[-1])
        else:
            fields["note"] = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        fields["seconds"] = round(time.perf_counter() - started, 1)
        rows.append(fields)
    return rows


def run_setting(
    setting: str,
    learner: Any,
    turns: list[Any],
    stand_in: StandInServer,
    server: dict[str, int],
) -> dict[str, Any]:
    """One setting (``name:offload``) in this process: two rounds of the hand-off.

    Each round: the stand-in falls asleep (the release measured), AdamW's state comes back,
    the update runs, the learner releases, the wake is checked and then really taken.
    ``learner`` holds the 4B-shaped model, built after the stand-in took its share;
    ``server`` is the estimate's server part for the recipe on an H100.
    """
    import numpy as np
    import torch

    from strategic_arena.train.engines.colocation import ColocatedMemory, TorchCuda

    name, _, offload = setting.partition(":")
    device = learner.device
    memory = ColocatedMemory(
        TorchCuda(device),
        weights_bytes=server["weights"],
        kv_bytes=server["KV cache"],
        offload_optimizer=offload == "1",
    )
    figures: dict[str, Any] = {"setting": name}
    awake = server["reserved"] + server["CUDA graphs"]
    status, note = "ok", ""
    for round_ in (1, 2):
        before = memory.free_bytes()
        stand_in.keep(ASLEEP_BYTES)
        memory.note_release(before, memory.free_bytes())
        memory.restore([learner.optimizer], device)
        for turn, values in zip(turns, learner.recompute_logprobs(turns), strict=True):
            turn.logprobs = values  # the model's own: ratio 1, nothing clipped
        learner.update(turns, np.random.default_rng(round_))
        torch.cuda.synchronize(device)
        memory.release([learner.optimizer])
        free = memory.free_bytes()
        need = memory.wake_bytes()
        figures[f"wake{round_}_free_gib"] = round(free / 1024**3, 2)
        figures[f"wake{round_}_needs_gib"] = round(need / 1024**3, 2)
        figures[f"wake{round_}_margin_gib"] = round((free - need) / 1024**3, 2)
        figures[f"reserved_after_release{round_}_gib"] = round(
            torch.cuda.memory_reserved(device) / 1024**3, 2
        )
        woke = stand_in.take(awake - ASLEEP_BYTES)
        if not woke["ok"]:
            status, note = "fail", f"wake {round_} did not fit: {woke.get('error', '')}"
            break
        if free - need < memory.margin_bytes:
            status = "fail"
            note = f"wake {round_} fitted with less than the trainer's {memory.margin_bytes} margin"
    return {"status": status, "figures": figures, "note": note}
