// Reads the sample count out of the audio files chatterbox-server writes, to check that every
// response format holds the same audio. Each format is one entry of AUDIO_FORMATS.

export const SAMPLE_RATE = 24000; // OpenAI's pcm, and the model's rate

function ascii(bytes, offset, length) {
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

// RIFF/WAVE, PCM16 mono 24 kHz: the data chunk's length in samples.
function wavSamples(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  if (ascii(bytes, 0, 4) !== 'RIFF' || ascii(bytes, 8, 4) !== 'WAVE') throw new Error('not a RIFF/WAVE file');
  let format = null;
  for (let offset = 12; offset + 8 <= bytes.length; ) {
    const id = ascii(bytes, offset, 4);
    const size = view.getUint32(offset + 4, true);
    if (id === 'fmt ') {
      format = {
        encoding: view.getUint16(offset + 8, true),
        channels: view.getUint16(offset + 10, true),
        rate: view.getUint32(offset + 12, true),
        bits: view.getUint16(offset + 22, true),
      };
    } else if (id === 'data') {
      if (!format) throw new Error('WAV data before its fmt chunk');
      const expected = { encoding: 1, channels: 1, rate: SAMPLE_RATE, bits: 16 };
      for (const key of Object.keys(expected))
        if (format[key] !== expected[key]) throw new Error(`WAV ${key} is ${format[key]}, expected ${expected[key]}`);
      if (offset + 8 + size !== bytes.length) throw new Error(`WAV data chunk of ${size} bytes, file has ${bytes.length - offset - 8}`);
      return size / 2;
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error('WAV without a data chunk');
}

// FLAC: STREAMINFO's rate, channels, bits and total samples.
function flacSamples(bytes) {
  if (ascii(bytes, 0, 4) !== 'fLaC') throw new Error('not a FLAC file');
  if ((bytes[4] & 0x7f) !== 0) throw new Error('FLAC without STREAMINFO first');
  const info = bytes.subarray(8, 8 + 34);
  const rate = (info[10] << 12) | (info[11] << 4) | (info[12] >> 4);
  const channels = ((info[12] >> 1) & 0x7) + 1;
  const bits = (((info[12] & 1) << 4) | (info[13] >> 4)) + 1;
  const total = (info[13] & 0xf) * 2 ** 32 + ((info[14] << 24) >>> 0) + (info[15] << 16) + (info[16] << 8) + info[17];
  if (rate !== SAMPLE_RATE || channels !== 1 || bits !== 16)
    throw new Error(`FLAC of ${rate} Hz, ${channels} channel(s), ${bits} bits; expected ${SAMPLE_RATE}, 1, 16`);
  if (bytes.length <= 42) throw new Error('FLAC without audio frames');
  return total;
}

// Raw s16le: two bytes a sample.
function pcmSamples(bytes) {
  if (bytes.length === 0 || bytes.length % 2) throw new Error(`pcm of ${bytes.length} bytes: expected an even count > 0`);
  return bytes.length / 2;
}

// The formats the tests ask for, one line each: the sample count of such a file, and by how many
// samples it may differ from the pcm of the same request (a lossy codec pads to whole frames).
export const AUDIO_FORMATS = {
  wav: { samples: wavSamples, tolerance: 0 },
  pcm: { samples: pcmSamples, tolerance: 0 },
  flac: { samples: flacSamples, tolerance: 0 },
};
