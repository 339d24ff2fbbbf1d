"""README.md's install line in a fresh venv (Debian's Python, its system packages visible): pip builds the
package from this build folder (CHATTERBOX_BUILD_DIR: only the module target, already built) and the
installed package synthesizes from outside the source tree."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT


def test_pip_install_into_a_fresh_venv(tmp_path, english_path):
    build_dir = os.environ.get("CHATTERBOX_BUILD_DIR")
    if not build_dir:
        pytest.skip("CHATTERBOX_BUILD_DIR is not set: run through ctest")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp_path / ".venv")], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PIP_NO_INDEX"] = "1"  # everything it needs is installed: never wait on a registry
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = subprocess.run([str(tmp_path / ".venv" / "bin" / "pip"), "install", "--no-build-isolation", "./python"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    script = (
        "import chatterbox_engine, sys\n"
        "from chatterbox_engine.tts import ChatterboxTTS\n"
        "assert chatterbox_engine.__file__.startswith(sys.prefix), chatterbox_engine.__file__\n"
        f"wav = ChatterboxTTS.from_local({english_path!r}, 'cpu').generate('Hello from the venv.', max_new_tokens=20)\n"
        "print(tuple(wav.shape)[0], wav.shape[1] > 0)\n"
    )
    run = subprocess.run([str(tmp_path / ".venv" / "bin" / "python"), "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "True"]
