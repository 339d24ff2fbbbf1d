from typing import Any, Optional

from ._model import ArrayLike, Audio, Conditionals as Conditionals, PathLike, TextToSpeech

REPO_ID: str
NANO_REPO_ID: str

class ChatterboxTurboTTS(TextToSpeech):
    @classmethod
    def from_local(
        cls, ckpt_dir: PathLike, device: Any, nano: bool = False, *, threads: int = ..., batch: int = ...
    ) -> ChatterboxTurboTTS: ...
    @classmethod
    def from_pretrained(
        cls, device: Any, nano: bool = False, *, threads: int = ..., batch: int = ...
    ) -> ChatterboxTurboTTS: ...
    def prepare_conditionals(
        self, wav_fpath: PathLike, exaggeration: float = 0.5, norm_loudness: bool = True
    ) -> None: ...
    def generate(
        self,
        text: str,
        repetition_penalty: float = 1.2,
        min_p: float = 0.0,
        top_p: float = 0.95,
        audio_prompt_path: Optional[PathLike] = None,
        exaggeration: float = 0.0,
        cfg_weight: float = 0.0,
        temperature: float = 0.8,
        top_k: int = 1000,
        norm_loudness: bool = True,
        *,
        seed: Optional[int] = None,
        max_new_tokens: Optional[int] = None,
        flow_noise: Optional[ArrayLike] = None,
        **engine_params: float,
    ) -> Audio: ...
