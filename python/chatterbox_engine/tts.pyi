from typing import Any, Optional

from ._model import ArrayLike, Audio, Conditionals as Conditionals, PathLike, TextToSpeech

REPO_ID: str

class ChatterboxTTS(TextToSpeech):
    @classmethod
    def from_local(cls, ckpt_dir: PathLike, device: Any, *, threads: int = ..., batch: int = ...) -> ChatterboxTTS: ...
    @classmethod
    def from_pretrained(cls, device: Any, *, threads: int = ..., batch: int = ...) -> ChatterboxTTS: ...
    def generate(
        self,
        text: str,
        repetition_penalty: float = 1.2,
        min_p: float = 0.05,
        top_p: float = 1.0,
        audio_prompt_path: Optional[PathLike] = None,
        exaggeration: float = 0.5,
        cfg_weight: float = 0.5,
        temperature: float = 0.8,
        *,
        seed: Optional[int] = None,
        max_new_tokens: Optional[int] = None,
        flow_noise: Optional[ArrayLike] = None,
        **engine_params: float,
    ) -> Audio: ...
