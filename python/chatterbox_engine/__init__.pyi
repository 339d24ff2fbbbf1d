from ._model import PARAMETERS as PARAMETERS, CancelledError as CancelledError, Conditionals as Conditionals
from .mtl_tts import SUPPORTED_LANGUAGES as SUPPORTED_LANGUAGES, ChatterboxMultilingualTTS as ChatterboxMultilingualTTS
from .tts import ChatterboxTTS as ChatterboxTTS
from .tts_turbo import ChatterboxTurboTTS as ChatterboxTurboTTS
from .vc import ChatterboxVC as ChatterboxVC

__version__: str
