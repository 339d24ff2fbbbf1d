// chatterbox-server's web page: streams speech as 16-bit PCM and plays each chunk through the Web
// Audio API as it arrives; then keeps the whole result as a WAV for the player and the download.
// Plain ES module, no build step, no third-party code.

// OpenAI's "pcm" response format: signed 16-bit little-endian, mono, 24 kHz.
const PCM_SAMPLE_RATE = 24000;
// The parameters shown at the top; the rest of the server's table goes under "More parameters".
const MAIN_PARAMETERS = ['exaggeration', 'cfg_weight', 'temperature', 'speed'];
// Where the first chunk starts after it arrives, so that playback does not stutter on a late chunk.
const PLAYBACK_LEAD_SECONDS = 0.1;

const $ = (id) => document.getElementById(id);

const page = {
  parameters: [],           // the server's table (/web/parameters.json)
  voiceLibrary: false,      // GET /v1/audio/voices answered
  controller: null,         // aborts the request in flight
  audioContext: null,
  result: null,             // {pcm: Uint8Array, body: the request}
  downloadUrl: null,
  playerUrl: null,
};
// For the browser console and the page's tests (tests/js/web_page.test.mjs).
window.chatterboxPage = page;

function setState(state, message) {
  document.body.dataset.state = state;
  if (message !== undefined) $('status').textContent = message;
}

function apiHeaders(extra = {}) {
  const key = $('api-key').value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

// The error message of an OpenAI-shaped error body, else the HTTP status.
async function errorMessage(response) {
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) return `${response.status}: ${body.error.message}`;
  } catch { /* not JSON */ }
  return `HTTP ${response.status} ${response.statusText}`;
}

// ---- parameters ------------------------------------------------------------------------------

function decimals(parameter) {
  const span = parameter.max - parameter.min;
  return parameter.integer ? 0 : span > 0 && span <= 1 ? 3 : 2;
}

function parameterControl(parameter) {
  const wrapper = document.createElement('div');
  wrapper.className = 'parameter';
  const label = document.createElement('label');
  const id = `param-${parameter.name}`;
  label.htmlFor = id;
  const input = document.createElement('input');
  input.id = id;
  input.dataset.parameter = parameter.name;
  input.title = parameter.meaning;
  if (parameter.flag) {
    wrapper.classList.add('flag');
    input.type = 'checkbox';
    input.checked = parameter.default !== 0;
    label.append(input, ` ${parameter.name.replace(/_/g, ' ')}`);
    wrapper.append(label);
  } else {
    input.type = 'range';
    const step = parameter.integer ? 1 : Math.pow(10, -decimals(parameter));
    // An excluded lower end (temperature's (0, 5]) starts one step above it.
    input.min = parameter.min_excluded ? parameter.min + step : parameter.min;
    input.max = parameter.max;
    input.step = step;
    input.value = parameter.default;
    input.disabled = parameter.min === parameter.max; // fixed on this server: shown, not sent
    const value = document.createElement('output');
    value.htmlFor = id;
    value.textContent = Number(parameter.default).toFixed(decimals(parameter));
    input.addEventListener('input', () => { value.textContent = Number(input.value).toFixed(decimals(parameter)); });
    label.append(`${parameter.name.replace(/_/g, ' ')} `, value);
    const range = document.createElement('span');
    range.className = 'hint';
    range.textContent = input.disabled
      ? parameter.meaning
      : `${parameter.meaning}; ${parameter.min_excluded ? '(' : '['}${parameter.min}, ${parameter.max}]`;
    wrapper.append(label, input, range);
  }
  return wrapper;
}

async function loadParameters() {
  const response = await fetch('/web/parameters.json');
  if (!response.ok) throw new Error(`the parameter table: ${await errorMessage(response)}`);
  const info = await response.json();
  page.parameters = info.parameters;
  for (const parameter of info.parameters) {
    const control = parameterControl(parameter);
    if (MAIN_PARAMETERS.includes(parameter.name)) $('main-parameters').insertBefore(control, $('seed-parameter'));
    else $('more-parameters').append(control);
  }
  for (const format of info.response_formats) $('response-format').append(new Option(format, format));
  $('text-limit').textContent = info.max_input_chars;
  $('text').maxLength = info.max_input_chars;
}

// The request body for the text, voice and parameters on the page.
function speechBody() {
  const body = { model: 'chatterbox', input: $('text').value, voice: $('voice').value };
  for (const input of document.querySelectorAll('[data-parameter]:not(:disabled)')) {
    const parameter = page.parameters.find((p) => p.name === input.dataset.parameter);
    body[parameter.name] = parameter.flag ? input.checked : Number(input.value);
  }
  // A seed is always sent, so a download in another format says the same as what was heard.
  body.seed = $('seed').value === '' ? Math.floor(Math.random() * 2 ** 32) : Number($('seed').value);
  return body;
}

// ---- voices ------------------------------------------------------------------------------------

// A voice list entry: a name, or an object naming one.
const voiceName = (entry) => (typeof entry === 'string' ? entry : entry.name ?? entry.id);

async function loadVoices(select) {
  const response = await fetch('/v1/audio/voices', { headers: apiHeaders() });
  if (response.status === 404) {
    // This server has no voice library: the built-in voice only.
    page.voiceLibrary = false;
    $('voice-upload').hidden = true;
    $('delete-voice').hidden = true;
    $('voice-note').textContent = 'This server has no voice library; it speaks with the built-in voice.';
    return;
  }
  if (response.status === 401) {
    $('voice-note').textContent = 'Enter the API key to see the voice library.';
    return;
  }
  if (!response.ok) {
    $('voice-note').textContent = `The voice library: ${await errorMessage(response)}`;
    return;
  }
  const listing = await response.json();
  const names = (listing.data ?? listing.voices ?? []).map(voiceName).filter(Boolean);
  page.voiceLibrary = true;
  $('voice-upload').hidden = false;
  const voice = $('voice');
  const keep = select ?? voice.value;
  voice.replaceChildren(new Option('Built-in voice (default)', 'default'));
  for (const name of names) voice.append(new Option(name, name));
  voice.value = names.includes(keep) ? keep : 'default';
  $('voice-note').textContent = names.length ? '' : 'The library is empty: add a voice from a recording.';
  updateDeleteButton();
}

function updateDeleteButton() {
  $('delete-voice').hidden = !page.voiceLibrary || $('voice').value === 'default';
}

async function uploadVoice() {
  const name = $('voice-name').value.trim();
  const file = $('voice-file').files[0];
  if (!name || !file) {
    setState('error', 'A voice needs a name and a recording.');
    return;
  }
  const form = new FormData();
  form.append('name', name);
  form.append('file', file);
  setState('uploading', `Adding voice “${name}”…`);
  const response = await fetch('/v1/audio/voices', { method: 'POST', headers: apiHeaders(), body: form });
  if (!response.ok) {
    setState('error', `The voice was not added: ${await errorMessage(response)}`);
    return;
  }
  await loadVoices(name);
  setState('idle', `Voice “${name}” added.`);
}

async function deleteVoice() {
  const name = $('voice').value;
  const response = await fetch(`/v1/audio/voices/${encodeURIComponent(name)}`, { method: 'DELETE', headers: apiHeaders() });
  if (!response.ok) {
    setState('error', `The voice was not deleted: ${await errorMessage(response)}`);
    return;
  }
  await loadVoices('default');
  setState('idle', `Voice “${name}” deleted.`);
}

// ---- playback ----------------------------------------------------------------------------------

// Schedules PCM16 chunks back to back on one AudioContext as they arrive.
class StreamPlayer {
  constructor(context) {
    this.context = context;
    this.nextTime = 0;
    this.carry = null; // an odd byte left over from the last chunk
    this.sources = [];
  }

  // Returns the samples scheduled.
  play(bytes) {
    if (this.carry) {
      const joined = new Uint8Array(bytes.length + 1);
      joined[0] = this.carry[0];
      joined.set(bytes, 1);
      bytes = joined;
      this.carry = null;
    }
    if (bytes.length % 2) {
      this.carry = bytes.slice(-1);
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const n = bytes.length / 2;
    if (n === 0) return 0;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const buffer = this.context.createBuffer(1, n, PCM_SAMPLE_RATE);
    const samples = buffer.getChannelData(0);
    for (let i = 0; i < n; ++i) samples[i] = view.getInt16(2 * i, true) / 32768;
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.context.destination);
    this.nextTime = Math.max(this.nextTime, this.context.currentTime + PLAYBACK_LEAD_SECONDS);
    source.start(this.nextTime);
    this.nextTime += buffer.duration;
    this.sources.push(source);
    source.onended = () => { this.sources = this.sources.filter((s) => s !== source); };
    return n;
  }

  stop() {
    for (const source of this.sources) source.stop();
    this.sources = [];
  }
}

// A WAV file (PCM16 mono) around raw samples.
function wavBlob(pcm) {
  const header = new DataView(new ArrayBuffer(44));
  const text = (offset, s) => { for (let i = 0; i < s.length; ++i) header.setUint8(offset + i, s.charCodeAt(i)); };
  text(0, 'RIFF'); header.setUint32(4, 36 + pcm.length, true); text(8, 'WAVE');
  text(12, 'fmt '); header.setUint32(16, 16, true); header.setUint16(20, 1, true); header.setUint16(22, 1, true);
  header.setUint32(24, PCM_SAMPLE_RATE, true); header.setUint32(28, PCM_SAMPLE_RATE * 2, true);
  header.setUint16(32, 2, true); header.setUint16(34, 16, true);
  text(36, 'data'); header.setUint32(40, pcm.length, true);
  return new Blob([header, pcm], { type: 'audio/wav' });
}

function concatenate(chunks, total) {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) { out.set(chunk, offset); offset += chunk.length; }
  return out;
}

function offerDownload(blob, filename) {
  if (page.downloadUrl) URL.revokeObjectURL(page.downloadUrl);
  page.downloadUrl = URL.createObjectURL(blob);
  const link = $('download');
  link.href = page.downloadUrl;
  link.download = filename;
  link.setAttribute('aria-disabled', 'false');
}

function showProgress(bytes, samples) {
  $('bytes-received').textContent = bytes;
  $('audio-seconds').textContent = (samples / PCM_SAMPLE_RATE).toFixed(2);
}

async function speak() {
  if (!$('text').value.trim()) {
    setState('error', 'Type some text first.');
    return;
  }
  page.audioContext ??= new AudioContext();
  await page.audioContext.resume(); // a click is the user gesture browsers want before sound
  const player = new StreamPlayer(page.audioContext);
  const body = speechBody();
  page.controller = new AbortController();
  $('speak').disabled = true;
  $('stop').disabled = false;
  setState('requesting', 'Asking the server…');
  showProgress(0, 0);
  $('first-audio').textContent = '–';
  const started = performance.now();
  const chunks = [];
  let bytes = 0, samples = 0;
  try {
    const response = await fetch('/v1/audio/speech', {
      method: 'POST',
      headers: apiHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ ...body, response_format: 'pcm', stream_format: 'audio' }),
      signal: page.controller.signal,
    });
    if (!response.ok) throw new Error(await errorMessage(response));
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (bytes === 0) $('first-audio').textContent = `${Math.round(performance.now() - started)} ms`;
      bytes += value.length;
      chunks.push(value);
      samples += player.play(value);
      showProgress(bytes, samples);
      setState('streaming', 'Playing while the rest is made…');
    }
    if (bytes === 0) throw new Error('the server sent no audio');
    const pcm = concatenate(chunks, bytes);
    page.result = { pcm, body };
    if (page.playerUrl) URL.revokeObjectURL(page.playerUrl);
    page.playerUrl = URL.createObjectURL(wavBlob(pcm));
    $('player').src = page.playerUrl;
    await prepareDownload();
  } catch (error) {
    if (error.name === 'AbortError') {
      player.stop();
      setState('idle', 'Stopped.');
    } else {
      setState('error', `Failed: ${error.message}`);
    }
  } finally {
    page.controller = null;
    $('speak').disabled = false;
    $('stop').disabled = true;
  }
}

// The download in the chosen format: wav and pcm are what was heard; another format is asked of the
// server as a whole file, with the same text, parameters and seed.
async function prepareDownload() {
  if (!page.result) return;
  const format = $('response-format').value;
  if (format === 'wav' || format === 'pcm') {
    const blob = format === 'wav' ? wavBlob(page.result.pcm) : new Blob([page.result.pcm], { type: 'audio/pcm' });
    offerDownload(blob, `speech.${format}`);
    setState('done', `Done: ${(page.result.pcm.length / 2 / PCM_SAMPLE_RATE).toFixed(2)} s of audio ` +
      `(seed ${page.result.body.seed}); the download is what you heard, as ${format}.`);
    return;
  }
  $('download').setAttribute('aria-disabled', 'true');
  setState('encoding', `Asking the server for ${format}…`);
  const response = await fetch('/v1/audio/speech', {
    method: 'POST',
    headers: apiHeaders({ 'Content-Type': 'application/json' }),
    body: JSON.stringify({ ...page.result.body, response_format: format }),
  });
  if (!response.ok) throw new Error(`the ${format} file: ${await errorMessage(response)}`);
  offerDownload(await response.blob(), `speech.${format}`);
  setState('done', `The ${format} file is ready to download.`);
}

// ---- wiring ------------------------------------------------------------------------------------

function wire() {
  $('speech-form').addEventListener('submit', (event) => { event.preventDefault(); speak(); });
  $('stop').addEventListener('click', () => page.controller?.abort());
  $('text').addEventListener('input', () => { $('text-count').textContent = [...$('text').value].length; });
  $('voice').addEventListener('change', updateDeleteButton);
  $('upload-voice').addEventListener('click', () => uploadVoice().catch((e) => setState('error', e.message)));
  $('delete-voice').addEventListener('click', () => deleteVoice().catch((e) => setState('error', e.message)));
  $('response-format').addEventListener('change', () => prepareDownload().catch((e) => setState('error', e.message)));
  $('download').addEventListener('click', (event) => {
    if ($('download').getAttribute('aria-disabled') === 'true') event.preventDefault();
  });
  const key = $('api-key');
  key.value = sessionStorage.getItem('chatterbox-api-key') ?? '';
  key.addEventListener('change', () => {
    sessionStorage.setItem('chatterbox-api-key', key.value);
    loadVoices().catch((e) => setState('error', e.message));
  });
}

async function start() {
  wire();
  try {
    await loadParameters();
    await loadVoices();
    setState('idle', 'Ready.');
  } catch (error) {
    setState('error', `The page could not start: ${error.message}`);
  }
}

start();
