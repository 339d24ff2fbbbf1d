"""What the four model classes share: loading an engine, the pool of sessions, voices and requests.

One engine (the loaded model) serves every call; each running call has a session of its own from a
pool, so calls from several threads run at once and their T3 steps are batched by the engine
(continuous batching). The synthesis itself runs on an engine thread with the GIL released.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import logging
import numbers
import os
import sys
import warnings
from collections import deque
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence

import numpy as np

from . import _chatterbox_engine as _ext

logger = logging.getLogger("chatterbox_engine")

CancelledError = _ext.CancelledError
SAMPLE_RATE = 24000
# Concurrent requests whose T3 steps are batched together (C API chatterbox_engine_params.batch).
DEFAULT_BATCH = 4
# The engine's synthesis parameter table (name -> range, default, meaning): every keyword beyond the
# official ones that generate() accepts.
PARAMETERS: Dict[str, Dict[str, Any]] = {row["name"]: row for row in _ext.parameter_table()}
_UINT64_MAX = 2**64 - 1
_WHOLE, _PIECES, _LOW_LATENCY = _ext.Job.Delivery.whole, _ext.Job.Delivery.pieces, _ext.Job.Delivery.low_latency


def _torch():
    """torch when it imports (generate then returns tensors, as the official package), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def existing_path(path, what: str) -> str:
    """path as a string; FileNotFoundError naming it when nothing is there."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", path)
    return path


def backend_for(device) -> str:
    """The engine backend of an official device name ("cpu", "cuda", or a torch.device of those)."""
    name = getattr(device, "type", device)
    if name == "cpu":
        return "cpu"
    if name == "cuda":
        reason = _ext.why_no_gpu()
        if reason:
            # As the official from_pretrained falls back from an unusable "mps".
            warnings.warn(f"device='cuda' but no GPU can be used ({reason}); running on the CPU", stacklevel=3)
            return "cpu"
        return "cuda"
    raise ValueError(f"device {device!r} is not supported: use 'cpu' or 'cuda'")


def download(variant: str, t3_model: Optional[str] = None) -> str:
    """The official model of variant in its default place (as `chatterbox download`), fetched when missing."""

    def announce(index: int, count: int, name: str) -> None:
        print(f"chatterbox_engine: downloading [{index + 1}/{count}] {name}", file=sys.stderr, flush=True)

    return _ext.download_model(variant, t3_model or "", announce)


class Conditionals:
    """A voice: the conditionals computed from a reference recording (the official ``Conditionals``).

    ``save(path)`` writes the engine's small voice file and ``Conditionals.load(path)`` reads it back
    bit-identical; the file is the engine's format (also the CLI's and server's), not a torch pickle.
    """

    def __init__(self, voice: "_ext.Voice"):
        self._voice = voice

    def save(self, fpath) -> None:
        """Writes the voice to fpath."""
        self._voice.save(os.fspath(fpath))

    @classmethod
    def load(cls, fpath, map_location=None) -> "Conditionals":
        """Reads a voice file written by save (map_location is accepted for the official signature)."""
        return cls(_ext.Voice.load(existing_path(fpath, "voice file")))


class _Call(NamedTuple):
    text: str
    voice: Optional["_ext.Voice"]
    request: "_ext.Request"


def _number(name: str, value) -> float:
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{name} must be a number, got {type(value).__name__}")


def arguments(given: Dict[str, Any]) -> Dict[str, Any]:
    """A generate()'s arguments from its locals(): all but self, its **engine_params spread out."""
    given = dict(given)
    del given["self"]
    engine_params = given.pop("engine_params")
    return {**given, **engine_params}


def _text(text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return text


def make_request(parameters: Dict[str, Any], seed=None, language: Optional[str] = None,
                 flow_noise=None) -> "_ext.Request":
    """The engine's request: each parameter through its table (ValueError naming a value out of range).
    flow_noise: the flow's initial noise, (80, frames) or (1, 80, frames), a NumPy array or a tensor."""
    for name in parameters:
        if name not in PARAMETERS:
            raise TypeError(f"unexpected keyword argument '{name}' (the engine's parameters: {', '.join(PARAMETERS)})")
    values = [(name, _number(name, value)) for name, value in parameters.items() if value is not None]
    if seed is not None:
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
            raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
        if not 0 <= seed <= _UINT64_MAX:
            raise ValueError(f"seed is {seed}, expected 0 .. 2**64 - 1")
        seed = int(seed)
    if language is not None and not isinstance(language, str):
        raise TypeError(f"language_id must be a string, got {type(language).__name__}")
    if flow_noise is not None and hasattr(flow_noise, "detach"):  # a torch tensor
        flow_noise = flow_noise.detach().cpu().numpy()
    return _ext.Request(values, seed, language, None if flow_noise is None else np.asarray(flow_noise, np.float32))


class Model:
    """The engine, its session pool and the current voice (conds); the base of the four official classes."""

    # Engine variants the class serves (chatterbox_engine_variant).
    _VARIANTS: Sequence[str] = ()

    def __init__(self, engine: "_ext.Engine", device: str, batch: int):
        self._engine = engine
        self._batch = batch
        self._sessions: List["_ext.Session"] = []
        self.device = device
        self.sr = engine.sample_rate
        try:
            self.conds: Optional[Conditionals] = Conditionals(_ext.Voice.builtin(engine, 0.5))
        except RuntimeError:  # the model has no built-in voice: prepare_conditionals first
            self.conds = None

    @classmethod
    def _open(cls, path, device, *, variants=None, t3_model=None, threads: int = 0, batch: int = DEFAULT_BATCH):
        path = existing_path(path, "model")
        variants = variants or cls._VARIANTS
        for name, value in (("threads", threads), ("batch", batch)):
            if not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"{name} is {value!r}, expected a whole number >= 0")
        engine = _ext.Engine(path, backend_for(device), int(threads), int(batch), t3_model)
        if engine.variant not in variants:
            raise ValueError(f"{path} holds a {engine.variant} model; this takes {' or '.join(variants)} models")
        return cls(engine, str(getattr(device, "type", device)), int(batch))

    @property
    def variant(self) -> str:
        """The model's variant: "english", "multilingual", "turbo" or "nano"."""
        return self._engine.variant

    @property
    def description(self) -> str:
        """One line: variant, weight type, backend."""
        return self._engine.description

    # list.pop and list.append are atomic under the GIL: the pool needs no lock of its own.
    def _acquire(self) -> "_ext.Session":
        try:
            return self._sessions.pop()
        except IndexError:
            return _ext.Session(self._engine)

    def _release(self, session: "_ext.Session") -> None:
        self._sessions.append(session)

    @contextlib.contextmanager
    def _session(self):
        session = self._acquire()
        try:
            yield session
        finally:
            self._release(session)

    # ---- voices --------------------------------------------------------------------------------

    def _conditionals(self, wav_fpath, exaggeration, norm_loudness=True) -> Conditionals:
        path = existing_path(wav_fpath, "voice recording")
        exaggeration = _number("exaggeration", exaggeration)
        with self._session() as session:
            return Conditionals(session.voice_from_recording(path, exaggeration, bool(norm_loudness)))

    def prepare_conditionals(self, wav_fpath, exaggeration=0.5) -> None:
        """Builds the voice of a reference recording (any format libsndfile reads) into self.conds."""
        self.conds = self._conditionals(wav_fpath, exaggeration)

    def save_voice(self, path) -> None:
        """Writes the current voice (self.conds) to a voice file."""
        if self.conds is None:
            raise ValueError("no voice to save: prepare_conditionals first (the model has no built-in voice)")
        self.conds.save(path)

    def load_voice(self, path) -> Conditionals:
        """Makes a voice file written by save_voice the current voice (self.conds) and returns it."""
        self.conds = Conditionals.load(path)
        return self.conds

    @staticmethod
    def _output(samples: np.ndarray):
        torch = _torch()
        wav = samples.reshape(1, -1)
        return torch.from_numpy(wav) if torch is not None else wav


class TextToSpeech(Model):
    """generate() of text and what goes with it (stream, generate_many); each class gives generate its
    official signature."""

    # Parameters the variant's official generate() ignores with a warning (Turbo: cfg_weight, min_p, exaggeration).
    _IGNORED: Sequence[str] = ()

    def _call(self, text, *, audio_prompt_path=None, exaggeration=0.5, norm_loudness=True, language_id=None,
              seed=None, flow_noise=None, **parameters) -> _Call:
        """One synthesis, checked and ready: the text, its voice and the engine request."""
        _text(text)
        given = {**parameters, "exaggeration": exaggeration}
        ignored = [name for name in self._IGNORED if (given.get(name) or 0) > 0]
        if ignored:
            logger.warning("%s not supported by the %s model and ignored", ", ".join(ignored), self.variant)
        request = make_request(parameters, seed, language_id, flow_noise)
        if audio_prompt_path:
            self.conds = self._conditionals(audio_prompt_path, exaggeration, norm_loudness)
        conds = self.conds
        if conds is None:
            raise ValueError("Please `prepare_conditionals` first or specify `audio_prompt_path`")
        return _Call(text, conds._voice.with_exaggeration(_number("exaggeration", exaggeration)), request)

    def _defaults(self) -> Dict[str, Any]:
        """generate()'s keyword defaults: stream and generate_many take the same keywords."""
        return {
            name: p.default
            for name, p in inspect.signature(self.generate).parameters.items()
            if p.default is not inspect.Parameter.empty
        }

    def _run(self, call: _Call):
        with self._session() as session:
            samples = session.synthesize(call.text, call.voice, call.request, _WHOLE).result()
        return self._output(samples)

    def stream(self, text: str, *, low_latency: bool = False, **kwargs) -> Iterator[np.ndarray]:
        """Like generate (the same keywords), but yields the audio as float32 NumPy chunks as they are made.

        By default each chunk is a sentence (or the pause after one) as soon as it is done, and the
        chunks concatenated are exactly what generate returns for the same arguments. low_latency=True
        streams as the engine's server does: audio is vocoded while speech tokens are generated and the
        first chunk comes after a few dozen tokens (the same tokens; the samples differ slightly from
        generate's: chunks are cross-faded and a trailing silence is kept). Closing the generator early
        cancels the synthesis.
        """
        call = self._call(text, **{**self._defaults(), **kwargs})
        return self._chunks(call, _LOW_LATENCY if low_latency else _PIECES)

    def _chunks(self, call: _Call, delivery) -> Iterator[np.ndarray]:
        with self._session() as session:
            job = session.synthesize(call.text, call.voice, call.request, delivery)
            try:
                while True:
                    chunk = job.next_chunk()
                    if chunk is None:
                        return
                    yield chunk
            finally:
                job.stop()  # the session goes back to the pool only once its call has stopped

    def generate_many(self, texts: Sequence[str], **kwargs) -> list:
        """generate for each text (the same keywords), `batch` of them at a time so that the engine
        batches their T3 steps; the results in the order of texts. A voice from audio_prompt_path is
        built once."""
        if not texts:
            return []
        first = self._call(texts[0], **{**self._defaults(), **kwargs})
        calls = [first._replace(text=_text(text)) for text in texts]
        results = []
        running: deque = deque()  # (session, job) in the order of texts
        try:
            for call in calls:
                if len(running) == max(1, self._batch):
                    results.append(self._finish(running))
                session = self._acquire()
                running.append((session, session.synthesize(call.text, call.voice, call.request, _WHOLE)))
            while running:
                results.append(self._finish(running))
        finally:
            for session, job in running:
                job.stop()
                self._release(session)
        return results

    def _finish(self, running: deque):
        """The result of the oldest running job, its session back in the pool."""
        session, job = running[0]
        samples = job.result()
        running.popleft()
        self._release(session)
        return self._output(samples)
