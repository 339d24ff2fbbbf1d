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

// MPEG audio (the server's MPEG-2 layer III at 24 kHz): 576 samples a frame, frames walked by their
// headers (bitrate, rate and padding give each frame's length); a whole file's first frame is
// LAME's Info frame, silent in a stream, and counts like the others.
function mp3Samples(bytes) {
  const bitrates = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]; // MPEG-2 layer III, kbit/s
  const rates = [22050, 24000, 16000];
  let frames = 0;
  for (let at = 0; at + 4 <= bytes.length; ) {
    if (bytes[at] !== 0xff || (bytes[at + 1] & 0xe0) !== 0xe0) throw new Error(`MP3: no frame header at byte ${at}`);
    const version = (bytes[at + 1] >> 3) & 3, layer = (bytes[at + 1] >> 1) & 3;
    if (version !== 2 || layer !== 1) throw new Error(`MP3: frame at ${at} is not MPEG-2 layer III`);
    const bitrate = bitrates[bytes[at + 2] >> 4], rate = rates[(bytes[at + 2] >> 2) & 3];
    if (!bitrate || rate !== SAMPLE_RATE) throw new Error(`MP3: frame at ${at} has bitrate ${bitrate}, rate ${rate}`);
    at += Math.floor((72000 * bitrate) / rate) + ((bytes[at + 2] >> 1) & 1);
    ++frames;
  }
  if (frames === 0) throw new Error('MP3 without frames');
  return frames * 576;
}

// AAC in ADTS: 1024 samples a frame, each frame's length in its 7-byte header.
function aacSamples(bytes) {
  let frames = 0;
  for (let at = 0; at + 7 <= bytes.length; ++frames) {
    if (bytes[at] !== 0xff || (bytes[at + 1] & 0xf0) !== 0xf0) throw new Error(`AAC: no ADTS header at byte ${at}`);
    const length = ((bytes[at + 3] & 3) << 11) | (bytes[at + 4] << 3) | (bytes[at + 5] >> 5);
    if (length < 7) throw new Error(`AAC: ADTS frame of ${length} bytes at ${at}`);
    at += length;
  }
  if (frames === 0) throw new Error('AAC without frames');
  return frames * 1024;
}

// Ogg Opus: the last page's granule position (48 kHz samples) less OpusHead's pre-skip, at 24 kHz.
function opusSamples(bytes) {
  if (ascii(bytes, 0, 4) !== 'OggS') throw new Error('not an Ogg stream');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  let granule = 0n, preSkip = null;
  for (let at = 0; at + 27 <= bytes.length; ) {
    if (ascii(bytes, at, 4) !== 'OggS') throw new Error(`Ogg: no page at byte ${at}`);
    const segments = bytes[at + 26];
    let body = 0;
    for (let i = 0; i < segments; ++i) body += bytes[at + 27 + i];
    const data = at + 27 + segments;
    if (preSkip === null) {
      if (ascii(bytes, data, 8) !== 'OpusHead') throw new Error('Ogg stream without OpusHead');
      preSkip = view.getUint16(data + 10, true);
    }
    granule = view.getBigUint64(at + 6, true);
    at = data + body;
  }
  return Math.max(0, Number(granule) - preSkip) / 2;
}

// The formats the tests ask for, one line each: the sample count of such a file, and by how many
// samples it may differ from the pcm of the same request (a lossy codec pads to whole frames).
export const AUDIO_FORMATS = {
  wav: { samples: wavSamples, tolerance: 0 },
  pcm: { samples: pcmSamples, tolerance: 0 },
  flac: { samples: flacSamples, tolerance: 0 },
  mp3: { samples: mp3Samples, tolerance: 4 * 576 }, // the Info frame, encoder delay, the last frame's padding
  aac: { samples: aacSamples, tolerance: 3 * 1024 }, // the priming frame, the last frame's padding
  opus: { samples: opusSamples, tolerance: 960 }, // end trimming to whole 20 ms packets
};
