import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
# torch.Tensor (1, N) float32 when torch imports, else a NumPy array of that shape.
Audio = Any
# A NumPy array or a torch.Tensor (generate's flow_noise: (80, frames) or (1, 80, frames)).
ArrayLike = Any

class CancelledError(RuntimeError): ...

SAMPLE_RATE: int
DEFAULT_BATCH: int
PARAMETERS: Dict[str, Dict[str, Any]]

class Conditionals:
    def save(self, fpath: PathLike) -> None: ...
    @classmethod
    def load(cls, fpath: PathLike, map_location: Any = ...) -> Conditionals: ...

class Model:
    sr: int
    device: str
    conds: Optional[Conditionals]
    @property
    def variant(self) -> str: ...
    @property
    def description(self) -> str: ...
    def prepare_conditionals(self, wav_fpath: PathLike, exaggeration: float = ...) -> None: ...
    def save_voice(self, path: PathLike) -> None: ...
    def load_voice(self, path: PathLike) -> Conditionals: ...

class TextToSpeech(Model):
    def stream(self, text: str, *, low_latency: bool = False, **kwargs: Any) -> Iterator[np.ndarray]: ...
    def generate_many(self, texts: Sequence[str], **kwargs: Any) -> List[Audio]: ...
