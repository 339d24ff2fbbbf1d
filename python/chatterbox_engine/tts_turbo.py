"""ChatterboxTurboTTS: Turbo and Nano, as chatterbox.tts_turbo of the official package."""

from __future__ import annotations

from ._model import DEFAULT_BATCH, arguments, SAMPLE_RATE, Conditionals, TextToSpeech, download

__all__ = ["ChatterboxTurboTTS", "Conditionals"]

REPO_ID = "ResembleAI/chatterbox-turbo"
NANO_REPO_ID = "ResembleAI/chatterbox-nano"


class ChatterboxTurboTTS(TextToSpeech):
    """Chatterbox Turbo (or Nano with nano=True) on Chatterbox Engine, with the official class's API.

    model = ChatterboxTurboTTS.from_pretrained(device="cpu")
    wav = model.generate("Hi there [chuckle], got a minute?", audio_prompt_path="ref_10s.wav")
    """

    _VARIANTS = ("turbo",)
    _IGNORED = ("cfg_weight", "min_p", "exaggeration")
    sr = SAMPLE_RATE

    @classmethod
    def from_local(
        cls, ckpt_dir, device, nano=False, *, threads: int = 0, batch: int = DEFAULT_BATCH
    ) -> "ChatterboxTurboTTS":
        """Loads the official Turbo folder (Nano's with nano=True), or a .gguf of it.

        device, threads and batch as ChatterboxTTS.from_local; a model of another variant is a ValueError.
        """
        return cls._open(ckpt_dir, device, variants=("nano",) if nano else ("turbo",), threads=threads, batch=batch)

    @classmethod
    def from_pretrained(cls, device, nano=False, *, threads: int = 0, batch: int = DEFAULT_BATCH) -> "ChatterboxTurboTTS":
        """Loads the official Turbo (or Nano) model, downloading it first as `chatterbox download --variant` does."""
        return cls.from_local(download("nano" if nano else "turbo"), device, nano, threads=threads, batch=batch)

    def prepare_conditionals(self, wav_fpath, exaggeration=0.5, norm_loudness=True) -> None:
        """Builds the voice of a reference recording (longer than 5 s) into self.conds; norm_loudness:
        the reference normalised to -27 LUFS first, as the official Turbo does."""
        self.conds = self._conditionals(wav_fpath, exaggeration, norm_loudness)

    def generate(
        self,
        text,
        repetition_penalty=1.2,
        min_p=0.00,
        top_p=0.95,
        audio_prompt_path=None,
        exaggeration=0.0,
        cfg_weight=0.0,
        temperature=0.8,
        top_k=1000,
        norm_loudness=True,
        *,
        seed=None,
        max_new_tokens=None,
        flow_noise=None,
        **engine_params,
    ):
        """Speech of text in the current voice; ChatterboxTTS.generate says more.

        top_k: the k likeliest speech tokens are kept at each step. norm_loudness: a reference from
        audio_prompt_path is normalised to -27 LUFS first. cfg_weight, min_p and exaggeration are
        ignored by Turbo (a warning says so when set), as officially.
        """
        return self._run(self._call(**arguments(locals())))

