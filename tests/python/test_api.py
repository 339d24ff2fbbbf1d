"""The official classes, constructors, arguments, defaults and return shapes, and what goes beyond them."""

import inspect
import subprocess
import sys
import wave

import numpy as np
import pytest

import chatterbox_engine
from chatterbox_engine.mtl_tts import SUPPORTED_LANGUAGES, ChatterboxMultilingualTTS
from chatterbox_engine.tts import ChatterboxTTS
from chatterbox_engine.tts_turbo import ChatterboxTurboTTS
from chatterbox_engine.vc import ChatterboxVC
from conftest import ENGLISH_REFERENCE, TEXT, TURBO_REFERENCE, samples

SHORT = dict(max_new_tokens=30)


def defaults(function):
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    }


def test_official_names_and_defaults():
    assert chatterbox_engine.ChatterboxTTS is ChatterboxTTS
    assert chatterbox_engine.ChatterboxVC is ChatterboxVC
    assert chatterbox_engine.ChatterboxMultilingualTTS is ChatterboxMultilingualTTS
    assert chatterbox_engine.SUPPORTED_LANGUAGES is SUPPORTED_LANGUAGES
    assert defaults(ChatterboxTTS.generate) == dict(
        repetition_penalty=1.2, min_p=0.05, top_p=1.0, audio_prompt_path=None, exaggeration=0.5, cfg_weight=0.5,
        temperature=0.8)
    assert defaults(ChatterboxTurboTTS.generate) == dict(
        repetition_penalty=1.2, min_p=0.0, top_p=0.95, audio_prompt_path=None, exaggeration=0.0, cfg_weight=0.0,
        temperature=0.8, top_k=1000, norm_loudness=True)
    assert defaults(ChatterboxMultilingualTTS.generate) == dict(
        audio_prompt_path=None, exaggeration=0.5, cfg_weight=0.5, temperature=0.8, repetition_penalty=1.2, min_p=0.05,
        top_p=1.0)
    assert list(inspect.signature(ChatterboxMultilingualTTS.generate).parameters)[:3] == ["self", "text", "language_id"]
    assert defaults(ChatterboxVC.generate) == dict(target_voice_path=None)
    assert defaults(ChatterboxTurboTTS.from_local) == dict(nano=False)
    assert defaults(ChatterboxTurboTTS.from_pretrained) == dict(nano=False)
    assert defaults(ChatterboxMultilingualTTS.from_pretrained) == dict(t3_model=None)
    assert defaults(ChatterboxTTS.prepare_conditionals) == dict(exaggeration=0.5)
    assert defaults(ChatterboxTurboTTS.prepare_conditionals) == dict(exaggeration=0.5, norm_loudness=True)
    for cls in (ChatterboxTTS, ChatterboxTurboTTS, ChatterboxMultilingualTTS, ChatterboxVC):
        assert cls.sr == 24000
        assert cls.generate.__doc__ and cls.from_local.__doc__ and cls.from_pretrained.__doc__


def test_help_shows_signatures_and_docs():
    text = subprocess.run([sys.executable, "-c", "import chatterbox_engine.tts as t; help(t.ChatterboxTTS.generate)"],
                          capture_output=True, text=True, check=True).stdout
    assert "audio_prompt_path=None" in text and "max_new_tokens" in text and "Speech of text" in text


def test_languages_come_from_the_engine():
    assert len(SUPPORTED_LANGUAGES) == 23
    assert SUPPORTED_LANGUAGES["fr"] == "French" and SUPPORTED_LANGUAGES["zh"] == "Chinese"
    languages = ChatterboxMultilingualTTS.get_supported_languages()
    languages["xx"] = "changed"
    assert "xx" not in SUPPORTED_LANGUAGES


def test_generate_returns_a_float32_tensor_of_one_row(english):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    wav = english.generate(TEXT, **SHORT)
    assert isinstance(wav, torch.Tensor) and wav.dtype == torch.float32 and wav.shape[0] == 1 and wav.shape[1] > 0
    assert english.sr == 24000 and english.device == "cpu"
    assert "english" in english.description


def test_without_torch_generate_returns_numpy(english_path):
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from chatterbox_engine.tts import ChatterboxTTS\n"
        f"wav = ChatterboxTTS.from_local({english_path!r}, 'cpu').generate('Hi there.', max_new_tokens=20)\n"
        "print(type(wav).__module__, wav.dtype, wav.shape[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["numpy", "float32", "1"]


def test_the_seed_decides_the_samples(english):
    a = samples(english.generate(TEXT, seed=7, **SHORT))
    assert np.array_equal(a, samples(english.generate(TEXT, seed=7, **SHORT)))
    assert not np.array_equal(a, samples(english.generate(TEXT, seed=8, **SHORT)))


def test_max_new_tokens_bounds_the_length(english):
    short = samples(english.generate(TEXT, seed=1, max_new_tokens=10, length_bound=0, stop_guards=0))
    assert 0 < len(short) <= 10 * 960


# Under torch's draw (argmax of p / q over an exponential row) a change of the tiny models' small
# logits flips a token only near a tie. So each argument is tried where its change is large enough
# to show: the repetition penalty over a long generation (it acts on repeated tokens), the
# exaggeration at a low temperature; and over seeds until one speaks differently.
LONG = dict(max_new_tokens=200, length_bound=0, stop_guards=0)
EFFECT_SEEDS = range(8)


def has_an_effect(model, change, setting):
    for seed in EFFECT_SEEDS:
        base = samples(model.generate(TEXT, seed=seed, **setting))
        if not np.array_equal(base, samples(model.generate(TEXT, seed=seed, **setting, **change))):
            return True
    return False


@pytest.mark.parametrize("name, value, setting", [
    ("repetition_penalty", 2.0, dict(temperature=0.3, **LONG)), ("min_p", 0.3, SHORT), ("top_p", 0.3, SHORT),
    ("exaggeration", 1.5, dict(temperature=0.05, **LONG)), ("cfg_weight", 0.0, SHORT), ("temperature", 0.3, SHORT)])
def test_every_english_argument_has_an_effect(english, name, value, setting):
    assert has_an_effect(english, {name: value}, setting), name


@pytest.mark.parametrize("name, value, setting", [("repetition_penalty", 2.0, LONG), ("top_p", 0.3, SHORT),
                                                  ("temperature", 0.3, SHORT), ("top_k", 2, SHORT)])
def test_every_turbo_argument_has_an_effect(turbo, name, value, setting):
    assert has_an_effect(turbo, {name: value}, setting), name


def test_flow_noise_is_where_the_flow_starts(english):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    noise = np.random.default_rng(0).standard_normal((80, 1000)).astype(np.float32)
    given = samples(english.generate(TEXT, seed=4, flow_noise=noise, **SHORT))
    assert np.array_equal(given, samples(english.generate(TEXT, seed=4, flow_noise=torch.from_numpy(noise)[None], **SHORT)))
    assert not np.array_equal(given, samples(english.generate(TEXT, seed=4, **SHORT)))
    assert not np.array_equal(given, samples(english.generate(TEXT, seed=4, flow_noise=noise[:, ::-1], **SHORT)))


@pytest.mark.parametrize("noise, message", [
    (np.zeros((40, 100), np.float32), r"flow_noise must have the shape \(80, frames\) or \(1, 80, frames\), got \(40, 100\)"),
    (np.zeros((80, 3), np.float32), "the flow noise holds 3 frames; this text piece needs more"),
    (np.full((80, 1000), np.nan, np.float32), "the flow noise has nan at"),
])
def test_bad_flow_noise_is_a_value_error(english, noise, message):
    with pytest.raises(ValueError, match=message):
        english.generate(TEXT, flow_noise=noise, **SHORT)


def test_turbo_ignores_what_the_official_turbo_ignores(turbo, caplog):
    base = samples(turbo.generate(TEXT, seed=3, **SHORT))
    with caplog.at_level("WARNING", logger="chatterbox_engine"):
        same = samples(turbo.generate(TEXT, seed=3, cfg_weight=0.5, min_p=0.1, **SHORT))
    assert np.array_equal(base, same)
    assert "cfg_weight, min_p not supported" in caplog.text


def test_top_k_is_checked(turbo):
    for bad in (-1, 2.5):
        with pytest.raises(ValueError, match="top_k is"):
            turbo.generate(TEXT, top_k=bad, **SHORT)


def test_norm_loudness_changes_the_voice(turbo_path, tmp_path):
    model = ChatterboxTurboTTS.from_local(turbo_path, "cpu")
    normalised = samples(model.generate(TEXT, audio_prompt_path=TURBO_REFERENCE, seed=2, **SHORT))
    model.save_voice(tmp_path / "normalised.voice")
    as_recorded = samples(model.generate(TEXT, audio_prompt_path=TURBO_REFERENCE, norm_loudness=False, seed=2, **SHORT))
    model.save_voice(tmp_path / "as_recorded.voice")
    assert (tmp_path / "normalised.voice").read_bytes() != (tmp_path / "as_recorded.voice").read_bytes()
    assert not np.array_equal(normalised, as_recorded)
    model.prepare_conditionals(TURBO_REFERENCE, norm_loudness=False)
    assert np.array_equal(as_recorded, samples(model.generate(TEXT, seed=2, **SHORT)))


def test_nano_loads_with_nano_true_only(nano_path, turbo_path):
    nano = ChatterboxTurboTTS.from_local(nano_path, "cpu", nano=True)
    assert nano.variant == "nano" and samples(nano.generate(TEXT, **SHORT)).size > 0
    with pytest.raises(ValueError, match="holds a nano model"):
        ChatterboxTurboTTS.from_local(nano_path, "cpu")
    with pytest.raises(ValueError, match="holds a turbo model"):
        ChatterboxTurboTTS.from_local(turbo_path, "cpu", nano=True)


def test_multilingual_speaks_each_language_by_code(multilingual):
    french = samples(multilingual.generate("Bonjour, comment ça va ?", language_id="fr", seed=1, **SHORT))
    assert french.size > 0
    assert np.array_equal(french, samples(multilingual.generate("Bonjour, comment ça va ?", "FR", seed=1, **SHORT)))
    assert samples(multilingual.generate("你好，今天天气真不错。", language_id="zh", **SHORT)).size > 0
    with pytest.raises(ValueError, match="xx"):
        multilingual.generate("Hello.", language_id="xx")


def test_voices_prepare_save_and_load(english_path, tmp_path):
    model = ChatterboxTTS.from_local(english_path, "cpu")
    builtin = samples(model.generate(TEXT, seed=5, **SHORT))
    cloned = samples(model.generate(TEXT, audio_prompt_path=ENGLISH_REFERENCE, seed=5, **SHORT))
    assert not np.array_equal(builtin, cloned)
    # audio_prompt_path becomes the current voice, as officially.
    assert np.array_equal(cloned, samples(model.generate(TEXT, seed=5, **SHORT)))
    model.save_voice(tmp_path / "ref.voice")
    model.conds.save(tmp_path / "conds.voice")
    assert (tmp_path / "ref.voice").read_bytes() == (tmp_path / "conds.voice").read_bytes()
    fresh = ChatterboxTTS.from_local(english_path, "cpu")
    fresh.load_voice(tmp_path / "ref.voice")
    assert np.array_equal(cloned, samples(fresh.generate(TEXT, seed=5, **SHORT)))
    fresh.conds = chatterbox_engine.Conditionals.load(tmp_path / "conds.voice")
    assert np.array_equal(cloned, samples(fresh.generate(TEXT, seed=5, **SHORT)))
    fresh.prepare_conditionals(ENGLISH_REFERENCE, exaggeration=0.5)
    assert np.array_equal(cloned, samples(fresh.generate(TEXT, seed=5, **SHORT)))


def test_voice_conversion(english_path, tmp_path):
    vc = ChatterboxVC.from_local(english_path, "cpu")
    builtin = samples(vc.generate(str(ENGLISH_REFERENCE)))
    with wave.open(str(ENGLISH_REFERENCE)) as source:
        seconds = source.getnframes() / source.getframerate()
    assert abs(len(builtin) / 24000 - seconds) < 0.1  # the source's duration
    target = samples(vc.generate(ENGLISH_REFERENCE, target_voice_path=TURBO_REFERENCE))
    assert not np.array_equal(builtin, target)
    assert vc.ref_dict is vc.conds
    vc2 = ChatterboxVC.from_local(english_path, "cpu")
    vc2.set_target_voice(TURBO_REFERENCE)
    assert np.array_equal(target, samples(vc2.generate(ENGLISH_REFERENCE)))


def test_engine_parameters_by_name(english):
    base = samples(english.generate(TEXT, seed=4, **SHORT))
    faster = samples(english.generate(TEXT, seed=4, speed=2.0, **SHORT))
    assert len(faster) < len(base)
    assert "cfm_steps" in chatterbox_engine.PARAMETERS and "top_k" in chatterbox_engine.PARAMETERS
    with pytest.raises(TypeError, match="pitch"):
        english.generate(TEXT, pitch=2)


def test_stream_concatenated_is_generate(english):
    text = "Streaming speech arrives in pieces. And then a second sentence follows."
    whole = samples(english.generate(text, seed=9, **SHORT))
    chunks = list(english.stream(text, seed=9, **SHORT))
    assert len(chunks) > 1 and all(c.dtype == np.float32 and c.ndim == 1 for c in chunks)
    assert np.array_equal(np.concatenate(chunks), whole)
    low_latency = list(english.stream(text, seed=9, low_latency=True, max_new_tokens=60))
    assert len(low_latency) > 1 and np.concatenate(low_latency).size > 0


def test_stream_closed_early_frees_its_session(english):
    stream = english.stream("One sentence. Two sentences. Three sentences.", **SHORT)
    next(stream)
    stream.close()
    assert samples(english.generate(TEXT, **SHORT)).size > 0


def test_generate_many_gives_what_generate_gives(english):
    texts = ["First text.", "Second text, a little longer.", "Third.", "Fourth text here.", "Fifth and last."]
    many = english.generate_many(texts, seed=11, **SHORT)
    assert len(many) == len(texts)
    for text, wav in zip(texts, many):
        assert np.array_equal(samples(wav), samples(english.generate(text, seed=11, **SHORT)))
    assert english.generate_many([]) == []


def test_devices(english_path):
    with pytest.raises(ValueError, match="'mps' is not supported"):
        ChatterboxTTS.from_local(english_path, "mps")
    reason = chatterbox_engine._chatterbox_engine.why_no_gpu()
    if reason:
        with pytest.warns(UserWarning, match="no GPU can be used"):
            model = ChatterboxTTS.from_local(english_path, "cuda")
        assert "CPU" in model.description


def test_from_pretrained_uses_chatterbox_model(english_path, monkeypatch):
    monkeypatch.setenv("CHATTERBOX_MODEL", english_path)
    assert ChatterboxTTS.from_pretrained("cpu").variant == "english"
    assert ChatterboxVC.from_pretrained("cpu").variant == "english"


def test_from_pretrained_downloads_from_the_hub(tmp_path, monkeypatch):
    ext = chatterbox_engine._chatterbox_engine
    from chatterbox_engine import tts_turbo

    files = tmp_path / "hub" / tts_turbo.REPO_ID / "resolve" / "main"
    files.mkdir(parents=True)
    for name in ext.official_model_files("turbo", ""):
        (files / name).write_text("bytes of " + name)
    monkeypatch.setenv("HF_ENDPOINT", "file://" + str(tmp_path / "hub"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError):  # the downloaded files are not a model
        ChatterboxTurboTTS.from_pretrained("cpu")
    folder = next((tmp_path / "cache" / "chatterbox" / "models").iterdir())
    assert sorted(p.name for p in folder.iterdir()) == sorted(ext.official_model_files("turbo", ""))
