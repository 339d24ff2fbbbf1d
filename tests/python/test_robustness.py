"""Concurrency, Ctrl-C, bad input, memory over many calls, and parity with the C API."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from chatterbox_engine.mtl_tts import ChatterboxMultilingualTTS
from chatterbox_engine.tts import ChatterboxTTS
from chatterbox_engine.tts_turbo import ChatterboxTurboTTS
from chatterbox_engine.vc import ChatterboxVC
from conftest import ENGLISH_REFERENCE, TEXT, samples

SHORT = dict(max_new_tokens=30)


def test_four_threads_at_once_give_what_each_gives_alone(english):
    texts = ["The first thread speaks.", "A second one, longer than the first.", "Third.", "And the fourth thread."]
    alone = [samples(english.generate(text, seed=20 + i, max_new_tokens=60)) for i, text in enumerate(texts)]
    together = [None] * len(texts)
    start = threading.Barrier(len(texts))

    def speak(i):
        start.wait()
        together[i] = samples(english.generate(texts[i], seed=20 + i, max_new_tokens=60))

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(len(texts)):
        assert np.array_equal(alone[i], together[i]), f"thread {i}"


CTRL_C_SCRIPT = """
import sys, time
from chatterbox_engine.tts import ChatterboxTTS
model = ChatterboxTTS.from_local(sys.argv[1], "cpu")
model.generate("Warm up.", max_new_tokens=10)
print("ready", flush=True)
started = time.monotonic()
try:
    model.generate("This sentence never ends.", max_new_tokens=4000, ignore_eos=1)
    print("finished", time.monotonic() - started, flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_ctrl_c_stops_a_long_synthesis_within_a_second(english_path):
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, english_path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # well into the synthesis (4000 tokens take far longer)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    line = child.stdout.readline().strip()
    answered = time.monotonic() - sent
    _, err = child.communicate(timeout=30)
    assert line == "interrupted", err
    assert answered < 1.0, f"KeyboardInterrupt {answered:.2f} s after SIGINT"
    assert child.returncode != 0 and "KeyboardInterrupt" in err


def test_ten_bad_inputs_raise_the_expected_exceptions(english, english_path, multilingual, tmp_path):
    not_a_model = tmp_path / "model.gguf"
    not_a_model.write_text("not a model")
    not_audio = tmp_path / "voice.wav"
    not_audio.write_text("not audio")
    cases = [
        (lambda: multilingual.generate(TEXT, language_id="xx"), ValueError, "xx"),
        (lambda: english.generate(TEXT, temperature=0), ValueError, r"temperature is 0, expected \(0, 5\]"),
        (lambda: english.generate(TEXT, top_p=1.5), ValueError, "top_p is 1.5"),
        (lambda: english.generate(TEXT, max_new_tokens=0), ValueError, "max_new_tokens is 0"),
        (lambda: english.generate(""), ValueError, "empty"),
        (lambda: english.generate(TEXT, seed=-1), ValueError, "seed is -1"),
        (lambda: english.generate(TEXT, audio_prompt_path=tmp_path / "absent.wav"), FileNotFoundError, "absent.wav"),
        (lambda: english.generate(TEXT, audio_prompt_path=not_audio), RuntimeError, "voice.wav"),
        (lambda: ChatterboxTTS.from_local(tmp_path / "absent.gguf", "cpu"), FileNotFoundError, "absent.gguf"),
        (lambda: ChatterboxTTS.from_local(not_a_model, "cpu"), RuntimeError, "model.gguf"),
        (lambda: ChatterboxTTS.from_local(english_path, "mps"), ValueError, "mps"),
        (lambda: ChatterboxTurboTTS.from_local(english_path, "cpu"), ValueError, "holds a english model"),
        (lambda: ChatterboxMultilingualTTS.from_local(english_path, "cpu", t3_model="v9"), ValueError, "v9"),
        (lambda: ChatterboxVC.from_local(english_path, "cpu").generate(tmp_path / "absent.wav"), FileNotFoundError,
         "absent.wav"),
        (lambda: english.generate(12), TypeError, "text must be a string"),
        (lambda: english.generate(TEXT, exaggeration=5), ValueError, "exaggeration is 5"),
    ]
    for call, exception, message in cases:
        with pytest.raises(exception, match=message):
            call()
    assert samples(english.generate(TEXT, **SHORT)).size > 0  # the model still works


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_200_calls(english):
    for _ in range(20):  # warm-up: the session pool, the allocator's arenas
        english.generate(TEXT, max_new_tokens=10)
    before = resident_bytes()
    for i in range(200):
        english.generate(TEXT, max_new_tokens=10)
        if i % 50 == 0:
            list(english.stream(TEXT, max_new_tokens=10))
    growth = resident_bytes() - before
    assert growth < 16 * 2**20, f"resident memory grew {growth / 2**20:.1f} MiB over 200 calls"


def c_api_samples(model, text, seed, max_new_tokens, voice, tmp_path):
    helper = os.environ.get("CHATTERBOX_C_API_SYNTHESIZE", "")
    if not os.path.isfile(helper):
        pytest.skip("CHATTERBOX_C_API_SYNTHESIZE is not set: run through ctest")
    out = tmp_path / "c_api.f32"
    subprocess.run([helper, model, text, str(seed), str(max_new_tokens), voice, "4", str(out)], check=True)
    return np.fromfile(out, dtype=np.float32)


def test_parity_with_the_c_api(english, english_path, tmp_path):
    text = "Parity between Python and C. Two sentences of it."
    builtin = samples(english.generate(text, seed=31, max_new_tokens=50))
    assert np.array_equal(builtin, c_api_samples(english_path, text, 31, 50, "-", tmp_path))
    model = ChatterboxTTS.from_local(english_path, "cpu")
    model.prepare_conditionals(ENGLISH_REFERENCE)
    model.save_voice(tmp_path / "ref.voice")
    cloned = samples(model.generate(text, seed=32, max_new_tokens=50))
    assert np.array_equal(cloned, c_api_samples(english_path, text, 32, 50, str(tmp_path / "ref.voice"), tmp_path))
