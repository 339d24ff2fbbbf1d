from typing import Any, Dict, Optional

from ._model import ArrayLike, Audio, Conditionals as Conditionals, PathLike, TextToSpeech

REPO_ID: str
SUPPORTED_LANGUAGES: Dict[str, str]
MULTILINGUAL_T3_MODELS: Dict[str, str]

class ChatterboxMultilingualTTS(TextToSpeech):
    @classmethod
    def get_supported_languages(cls) -> Dict[str, str]: ...
    @classmethod
    def from_local(
        cls, ckpt_dir: PathLike, device: Any, t3_model: Optional[str] = None, *, threads: int = ..., batch: int = ...
    ) -> ChatterboxMultilingualTTS: ...
    @classmethod
    def from_pretrained(
        cls, device: Any, t3_model: Optional[str] = None, *, threads: int = ..., batch: int = ...
    ) -> ChatterboxMultilingualTTS: ...
    def generate(
        self,
        text: str,
        language_id: str,
        audio_prompt_path: Optional[PathLike] = None,
        exaggeration: float = 0.5,
        cfg_weight: float = 0.5,
        temperature: float = 0.8,
        repetition_penalty: float = 1.2,
        min_p: float = 0.05,
        top_p: float = 1.0,
        *,
        seed: Optional[int] = None,
        max_new_tokens: Optional[int] = None,
        flow_noise: Optional[ArrayLike] = None,
        **engine_params: float,
    ) -> Audio: ...
