"""The tiny synthetic models of the ctest fixtures (tests/CMakeLists.txt sets their paths), loaded once."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ENGLISH_REFERENCE = DATA / "golden" / "ref_voice.wav"
TURBO_REFERENCE = DATA / "turbo" / "ref_voice.wav"  # Turbo needs more than 5 s
TEXT = "Hello there, this is a test."


def tiny_model_path(variable: str) -> str:
    path = os.environ.get(variable, "")
    if not os.path.isfile(path):
        pytest.skip(f"{variable} is not a model file: run these tests through ctest (-L python), which makes the tiny models")
    return path


@pytest.fixture(scope="session")
def english_path():
    return tiny_model_path("CHATTERBOX_TINY_MODEL")


@pytest.fixture(scope="session")
def turbo_path():
    return tiny_model_path("CHATTERBOX_TINY_TURBO_MODEL")


@pytest.fixture(scope="session")
def nano_path():
    return tiny_model_path("CHATTERBOX_TINY_NANO_MODEL")


@pytest.fixture(scope="session")
def multilingual_path():
    return tiny_model_path("CHATTERBOX_TINY_MULTILINGUAL_MODEL")


@pytest.fixture(scope="session")
def english(english_path):
    from chatterbox_engine.tts import ChatterboxTTS

    return ChatterboxTTS.from_local(english_path, "cpu")


@pytest.fixture(scope="session")
def turbo(turbo_path):
    from chatterbox_engine.tts_turbo import ChatterboxTurboTTS

    return ChatterboxTurboTTS.from_local(turbo_path, "cpu")


@pytest.fixture(scope="session")
def multilingual(multilingual_path):
    from chatterbox_engine.mtl_tts import ChatterboxMultilingualTTS

    return ChatterboxMultilingualTTS.from_local(multilingual_path, "cpu")


def samples(wav):
    """generate's (1, N) output as a NumPy vector."""
    import numpy as np

    array = wav.numpy() if hasattr(wav, "numpy") else wav
    assert array.dtype == np.float32 and array.ndim == 2 and array.shape[0] == 1
    return array[0]
