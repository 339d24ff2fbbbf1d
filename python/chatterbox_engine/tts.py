"""ChatterboxTTS: the English model, as chatterbox.tts of the official package."""

from __future__ import annotations

from ._model import DEFAULT_BATCH, arguments, SAMPLE_RATE, Conditionals, TextToSpeech, download

__all__ = ["ChatterboxTTS", "Conditionals"]

REPO_ID = "ResembleAI/chatterbox"


class ChatterboxTTS(TextToSpeech):
    """English Chatterbox on Chatterbox Engine, with the official class's constructors and generate().

    model = ChatterboxTTS.from_pretrained(device="cpu")
    wav = model.generate("Hello there.", audio_prompt_path="ref.wav")   # torch.Tensor (1, N), 24 kHz
    """

    _VARIANTS = ("english",)
    sr = SAMPLE_RATE

    @classmethod
    def from_local(cls, ckpt_dir, device, *, threads: int = 0, batch: int = DEFAULT_BATCH) -> "ChatterboxTTS":
        """Loads the official model folder ckpt_dir, or a .gguf from chatterbox-convert.

        device: "cpu" or "cuda" (the CPU, with a warning, where no GPU can be used). threads: CPU
        threads per call (0: all cores). batch: concurrent calls whose T3 steps are batched.
        """
        return cls._open(ckpt_dir, device, threads=threads, batch=batch)

    @classmethod
    def from_pretrained(cls, device, *, threads: int = 0, batch: int = DEFAULT_BATCH) -> "ChatterboxTTS":
        """Loads the official model, downloading it first as `chatterbox download` does ($CHATTERBOX_MODEL,
        else ~/.cache/chatterbox/models/chatterbox; $HF_ENDPOINT selects a mirror)."""
        return cls.from_local(download("english"), device, threads=threads, batch=batch)

    def generate(
        self,
        text,
        repetition_penalty=1.2,
        min_p=0.05,
        top_p=1.0,
        audio_prompt_path=None,
        exaggeration=0.5,
        cfg_weight=0.5,
        temperature=0.8,
        *,
        seed=None,
        max_new_tokens=None,
        flow_noise=None,
        **engine_params,
    ):
        """Speech of text (any length: said sentence by sentence) in the current voice.

        audio_prompt_path: a reference recording to clone (it becomes self.conds, as officially);
        otherwise the voice of prepare_conditionals / load_voice, or the model's built-in one.
        Returns a float32 torch.Tensor (1, N) at self.sr (a NumPy array when torch is missing).
        Beyond the official arguments: seed (same seed, text, voice and parameters: the same samples;
        default the engine's 0; T3 then draws what torch.manual_seed(seed) and the official generate() draw),
        max_new_tokens (speech tokens per sentence, 25 a second), flow_noise (the flow's initial noise
        instead of noise drawn from the seed: (80, frames) or (1, 80, frames), e.g. the z an official run
        started from, read from its first frame by each sentence), and any
        other parameter of the engine's table by name (chatterbox_engine.PARAMETERS: speed, cfm_steps,
        split_text ...). Bad values raise ValueError naming the parameter and its range.
        """
        return self._run(self._call(**arguments(locals())))
