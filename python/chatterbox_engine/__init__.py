"""Chatterbox Engine for Python: the official chatterbox package's classes on the C++/ggml engine.

Change ``chatterbox`` to ``chatterbox_engine`` in an import and the rest of a script stays:

    import torchaudio as ta
    from chatterbox_engine.tts import ChatterboxTTS

    model = ChatterboxTTS.from_pretrained(device="cpu")
    wav = model.generate("Hello there.", audio_prompt_path="ref.wav")
    ta.save("hello.wav", wav, model.sr)

Beyond the official API: generate(..., seed=, max_new_tokens=), stream() (NumPy chunks as they are
made), generate_many(), concurrent generate() from several threads on one model (batched by the
engine), save_voice()/load_voice(), and KeyboardInterrupt cancels a running synthesis.
"""

from ._chatterbox_engine import VERSION as __version__
from ._model import PARAMETERS, CancelledError, Conditionals
from .mtl_tts import SUPPORTED_LANGUAGES, ChatterboxMultilingualTTS
from .tts import ChatterboxTTS
from .tts_turbo import ChatterboxTurboTTS
from .vc import ChatterboxVC

__all__ = [
    "ChatterboxTTS",
    "ChatterboxTurboTTS",
    "ChatterboxMultilingualTTS",
    "ChatterboxVC",
    "Conditionals",
    "SUPPORTED_LANGUAGES",
    "PARAMETERS",
    "CancelledError",
    "__version__",
]
