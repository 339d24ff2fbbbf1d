"""ChatterboxMultilingualTTS: the 23-language model, as chatterbox.mtl_tts of the official package."""

from __future__ import annotations

from typing import Dict, Optional

from . import _chatterbox_engine as _ext
from ._model import DEFAULT_BATCH, arguments, SAMPLE_RATE, Conditionals, TextToSpeech, download

__all__ = ["ChatterboxMultilingualTTS", "Conditionals", "SUPPORTED_LANGUAGES"]

REPO_ID = "ResembleAI/chatterbox"
# The engine's languages (C API chatterbox_language_code / _name): code -> English name.
SUPPORTED_LANGUAGES: Dict[str, str] = dict(_ext.languages())
# The T3 checkpoints of the multilingual folder, by the names the official t3_model takes.
MULTILINGUAL_T3_MODELS = {"v2": "v2", "t3_mtl23ls_v2": "v2", "v3": "v3", "t3_mtl23ls_v3": "v3"}


def _t3_model(t3_model: Optional[str]) -> Optional[str]:
    if t3_model is None:
        return None
    name = t3_model[: -len(".safetensors")] if t3_model.endswith(".safetensors") else t3_model
    if name not in MULTILINGUAL_T3_MODELS:
        raise ValueError(
            f"Unknown multilingual T3 model '{t3_model}'. Expected one of {sorted(MULTILINGUAL_T3_MODELS)} "
            "or one of their .safetensors file names."
        )
    return MULTILINGUAL_T3_MODELS[name]


class ChatterboxMultilingualTTS(TextToSpeech):
    """Multilingual Chatterbox on Chatterbox Engine, with the official class's API.

    model = ChatterboxMultilingualTTS.from_pretrained(device="cpu", t3_model="v3")
    wav = model.generate("Bonjour, comment ça va ?", language_id="fr")
    """

    _VARIANTS = ("multilingual",)
    sr = SAMPLE_RATE

    @classmethod
    def get_supported_languages(cls) -> Dict[str, str]:
        """The supported language codes and their English names."""
        return SUPPORTED_LANGUAGES.copy()

    @classmethod
    def from_local(
        cls, ckpt_dir, device, t3_model: Optional[str] = None, *, threads: int = 0, batch: int = DEFAULT_BATCH
    ) -> "ChatterboxMultilingualTTS":
        """Loads the official multilingual folder (t3_model: "v2", the default, or "v3"), or a .gguf of it."""
        return cls._open(ckpt_dir, device, t3_model=_t3_model(t3_model), threads=threads, batch=batch)

    @classmethod
    def from_pretrained(
        cls, device, t3_model: Optional[str] = None, *, threads: int = 0, batch: int = DEFAULT_BATCH
    ) -> "ChatterboxMultilingualTTS":
        """Loads the official multilingual model with the T3 t3_model, downloading it first when missing."""
        path = download("multilingual", _t3_model(t3_model))
        return cls.from_local(path, device, t3_model, threads=threads, batch=batch)

    def generate(
        self,
        text,
        language_id,
        audio_prompt_path=None,
        exaggeration=0.5,
        cfg_weight=0.5,
        temperature=0.8,
        repetition_penalty=1.2,
        min_p=0.05,
        top_p=1.0,
        *,
        seed=None,
        max_new_tokens=None,
        flow_noise=None,
        **engine_params,
    ):
        """Speech of text in the language language_id (a code of SUPPORTED_LANGUAGES, any case) in the
        current voice; ChatterboxTTS.generate says more. An unsupported language is a ValueError."""
        return self._run(self._call(**arguments(locals())))
