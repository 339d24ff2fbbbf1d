"""The official package's README examples, verbatim but for the import (chatterbox -> chatterbox_engine), run
with torchaudio.save on the tiny models: from_pretrained's download answers with them, and the reference
clips the examples name are the test data's recordings."""

import contextlib
import os
import re
import shutil
import struct

import pytest

import chatterbox_engine._model as model_module
from conftest import ENGLISH_REFERENCE, TURBO_REFERENCE

EXAMPLES = open(os.path.join(os.path.dirname(__file__), "data", "official_readme_examples.md"), encoding="utf-8").read()
BLOCKS = [block for block in re.findall(r"```python\n(.*?)```", EXAMPLES, re.S) if "from chatterbox" in block]


def with_t3_model(source: str, target: str, t3_model: str) -> None:
    """A copy of a GGUF model with the metadata chatterbox.t3_model (which official T3 it was converted from)
    added: the tiny multilingual model stands in for the official v3 folder."""
    data = open(source, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version == 3
    scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    alignment = 32

    def skip_value(at, kind):
        if kind in scalar:
            return at + scalar[kind]
        if kind == 8:
            return at + 8 + struct.unpack_from("<Q", data, at)[0]
        item, count = struct.unpack_from("<IQ", data, at)
        at += 12
        for _ in range(count):
            at = skip_value(at, item)
        return at

    at = 24
    for _ in range(n_kv):
        key_length = struct.unpack_from("<Q", data, at)[0]
        key = data[at + 8: at + 8 + key_length]
        kind = struct.unpack_from("<I", data, at + 8 + key_length)[0]
        value_at = at + 12 + key_length
        if key == b"general.alignment":
            alignment = struct.unpack_from("<I", data, value_at)[0]
        at = skip_value(value_at, kind)
    for _ in range(n_tensors):
        name_length = struct.unpack_from("<Q", data, at)[0]
        at += 8 + name_length
        n_dims = struct.unpack_from("<I", data, at)[0]
        at += 4 + 8 * n_dims + 4 + 8
    data_start = (at + alignment - 1) // alignment * alignment

    def string(text):
        encoded = text.encode()
        return struct.pack("<Q", len(encoded)) + encoded

    added = string("chatterbox.t3_model") + struct.pack("<I", 8) + string(t3_model)
    head = struct.pack("<4sIQQ", magic, version, n_tensors, n_kv + 1) + added + data[24:at]
    with open(target, "wb") as out:
        out.write(head + b"\0" * (-len(head) % alignment))
        out.write(memoryview(data)[data_start:])


@pytest.fixture
def official_setup(tmp_path, monkeypatch, english_path, turbo_path, nano_path, multilingual_path):
    pytest.importorskip("torchaudio", reason="python3-torchaudio is not installed (scripts/setup.sh installs it)")
    multilingual_v3 = tmp_path / "multilingual-v3.gguf"
    with_t3_model(multilingual_path, multilingual_v3, "v3")
    models = {"english": english_path, "turbo": turbo_path, "nano": nano_path, "multilingual": str(multilingual_v3)}
    fetched = []

    def download(variant, t3_model=None):
        fetched.append((variant, t3_model))
        return models[variant]

    monkeypatch.setattr(model_module, "download", download)
    for module in ("tts", "tts_turbo", "mtl_tts", "vc"):
        monkeypatch.setattr(f"chatterbox_engine.{module}.download", download)
    shutil.copy(TURBO_REFERENCE, tmp_path / "your_10s_ref_clip.wav")
    shutil.copy(ENGLISH_REFERENCE, tmp_path / "YOUR_FILE.wav")
    monkeypatch.chdir(tmp_path)
    return fetched


def test_the_examples_are_there():
    assert len(BLOCKS) == 3
    assert all(line.startswith(("import", "from")) for block in BLOCKS for line in block.splitlines()
               if "chatterbox" in line and "import" in line)


@pytest.mark.parametrize("index", range(3))
def test_official_readme_example(index, official_setup, tmp_path):
    import torchaudio

    source = BLOCKS[index].replace("from chatterbox.", "from chatterbox_engine.")
    with pytest.warns(UserWarning, match="no GPU") if model_module._ext.why_no_gpu() else contextlib.nullcontext():
        exec(compile(source, f"official README example {index + 1}", "exec"), {"__name__": "__example__"})
    written = re.findall(r'ta\.save\("([^"]+)"', source)
    assert written
    for name in written:
        wav, rate = torchaudio.load(str(tmp_path / name))
        assert rate == 24000 and wav.shape[0] == 1 and wav.shape[1] > 0
    if index == 2:
        assert ("multilingual", "v3") in official_setup

