"""ChatterboxVC: voice conversion, as chatterbox.vc of the official package."""

from __future__ import annotations

from typing import Optional

from ._model import DEFAULT_BATCH, SAMPLE_RATE, Conditionals, Model, download, existing_path, make_request

__all__ = ["ChatterboxVC"]

REPO_ID = "ResembleAI/chatterbox"


class ChatterboxVC(Model):
    """Voice conversion on Chatterbox Engine (S3Tokenizer -> S3Gen -> HiFT), with the official class's API.

    vc = ChatterboxVC.from_pretrained(device="cpu")
    wav = vc.generate("speech.wav", target_voice_path="target.wav")
    """

    _VARIANTS = ("english", "multilingual", "turbo", "nano")
    sr = SAMPLE_RATE

    @classmethod
    def from_local(cls, ckpt_dir, device, *, threads: int = 0, batch: int = DEFAULT_BATCH) -> "ChatterboxVC":
        """Loads a model folder or .gguf (any variant: its S3Gen converts; the official uses English's)."""
        return cls._open(ckpt_dir, device, threads=threads, batch=batch)

    @classmethod
    def from_pretrained(cls, device, *, threads: int = 0, batch: int = DEFAULT_BATCH) -> "ChatterboxVC":
        """Loads the official English model, downloading it first when missing."""
        return cls.from_local(download("english"), device, threads=threads, batch=batch)

    @property
    def ref_dict(self) -> Optional[Conditionals]:
        """The target voice (the official attribute's name; the same as conds)."""
        return self.conds

    def set_target_voice(self, wav_fpath) -> None:
        """Makes the voice of a recording the target of generate."""
        self.conds = self._conditionals(wav_fpath, 0.5)

    def generate(self, audio, target_voice_path=None, *, seed=None, flow_noise=None):
        """The speech of the recording at path `audio`, said in the target voice (target_voice_path, which
        becomes the target as officially, else set_target_voice's, else the model's built-in voice).
        Returns a float32 torch.Tensor (1, N) at self.sr (NumPy without torch)."""
        if target_voice_path:
            self.set_target_voice(target_voice_path)
        if self.conds is None:
            raise ValueError("Please `set_target_voice` first or specify `target_voice_path`")
        source = existing_path(audio, "source audio")
        request = make_request({}, seed, flow_noise=flow_noise)
        with self._session() as session:
            samples = session.convert(source, self.conds._voice, request).result()
        return self._output(samples)

