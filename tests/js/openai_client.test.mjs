// chatterbox-server called by the official OpenAI client (npm `openai`), as users call it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { AUDIO_FORMATS, SAMPLE_RATE } from './audio_files.mjs';
import { startServer } from './server.mjs';

const API_KEY = 'test-key-for-the-js-tests';
// Short answers keep the tiny model quick: 40 speech tokens = 1.6 s at most. A fixed seed makes two
// requests comparable.
const SHORT = { model: 'chatterbox', voice: 'alloy', input: 'Hello there.', max_new_tokens: 40, seed: 7 };
// Two sentences: a stream of several chunks, so that the first arrives before the last is made.
const LONGER = { ...SHORT, input: 'Hello there. This is the second sentence of a stream.', max_new_tokens: 60 };

let server;
let client;

before(async () => {
  server = await startServer({ apiKey: API_KEY });
  client = new OpenAI({ apiKey: API_KEY, baseURL: `${server.url}/v1`, maxRetries: 0, timeout: 120_000 });
});
after(async () => server?.stop());

const bytesOf = async (response) => new Uint8Array(await response.arrayBuffer());

// Reads a streamed body as it comes: the chunks, and when each arrived.
async function readChunks(body) {
  const chunks = [];
  for await (const chunk of body) chunks.push({ bytes: new Uint8Array(chunk), at: performance.now() });
  return chunks;
}

function concatenate(arrays) {
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let offset = 0;
  for (const a of arrays) { out.set(a, offset); offset += a.length; }
  return out;
}

describe('audio.speech.create', () => {
  test('every response format holds the audio of the same request', async () => {
    const pcm = await bytesOf(await client.audio.speech.create({ ...SHORT, response_format: 'pcm' }));
    const expected = AUDIO_FORMATS.pcm.samples(pcm);
    assert.ok(expected / SAMPLE_RATE > 0.1, `${expected} samples: too short to be speech`);
    for (const [format, { samples, tolerance }] of Object.entries(AUDIO_FORMATS)) {
      const response = await client.audio.speech.create({ ...SHORT, response_format: format });
      const n = samples(await bytesOf(response));
      assert.ok(Math.abs(n - expected) <= tolerance, `${format}: ${n} samples, the pcm has ${expected}`);
    }
  });

  test('the default response format is wav', async () => {
    const response = await client.audio.speech.create(SHORT).asResponse();
    assert.equal(response.headers.get('content-type'), 'audio/wav');
    assert.ok(AUDIO_FORMATS.wav.samples(await bytesOf(response)) > 0);
  });

  test('stream_format audio: the first bytes arrive before the last are made', async () => {
    const started = performance.now();
    const response = await client.audio.speech.create({ ...LONGER, response_format: 'pcm', stream_format: 'audio' });
    const chunks = await readChunks(response.body);
    const ended = performance.now();
    assert.ok(chunks.length >= 2, `the audio came in ${chunks.length} read(s); a stream sends a chunk at a time`);
    const first = chunks[0].at - started, total = ended - started;
    assert.ok(first < 0.8 * total, `first bytes after ${first.toFixed(0)} ms of ${total.toFixed(0)} ms`);
    const pcm = concatenate(chunks.map((c) => c.bytes));
    AUDIO_FORMATS.pcm.samples(pcm);
    const whole = await bytesOf(await client.audio.speech.create({ ...LONGER, response_format: 'pcm' }));
    // Streamed audio is made in overlapping windows (README): the same length, not the same bytes.
    assert.equal(pcm.length, whole.length);
  });

  test("stream_format sse: speech.audio.delta events, then speech.audio.done, read through the SDK's raw response", async () => {
    const response = await client.audio.speech
      .create({ ...LONGER, response_format: 'pcm', stream_format: 'sse' })
      .asResponse();
    assert.match(response.headers.get('content-type'), /^text\/event-stream/);
    const decoder = new TextDecoder();
    let text = '';
    const events = [];
    for (const { bytes, at } of await readChunks(response.body)) {
      text += decoder.decode(bytes, { stream: true });
      let end;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        assert.match(block, /^data: /, `an SSE event: ${block.slice(0, 80)}`);
        events.push({ event: JSON.parse(block.slice('data: '.length)), at });
      }
    }
    assert.equal(text, '', 'the stream ends with a whole event');
    const types = events.map((e) => e.event.type);
    assert.equal(types.at(-1), 'speech.audio.done');
    const deltas = events.filter((e) => e.event.type === 'speech.audio.delta');
    assert.equal(deltas.length, events.length - 1, `events: ${[...new Set(types)]}`);
    assert.ok(deltas.length >= 2, `${deltas.length} delta(s)`);
    assert.ok(deltas[0].at < deltas.at(-1).at, 'the first delta arrived before the last');
    const sse = concatenate(deltas.map((d) => new Uint8Array(Buffer.from(d.event.audio, 'base64'))));
    const audio = concatenate(
      (await readChunks((await client.audio.speech.create({ ...LONGER, response_format: 'pcm', stream_format: 'audio' })).body))
        .map((c) => c.bytes));
    assert.deepEqual(sse, audio, 'the SSE audio equals the streamed audio of the same request');
  });
});

describe('errors', () => {
  test('a parameter out of range: BadRequestError 400 naming the field', async () => {
    await assert.rejects(client.audio.speech.create({ ...SHORT, temperature: 99 }), (error) => {
      assert.ok(error instanceof OpenAI.BadRequestError, `${error.constructor.name}: ${error.message}`);
      assert.equal(error.status, 400);
      assert.equal(error.param, 'temperature');
      assert.match(error.message, /temperature/);
      return true;
    });
  });

  test('a parameter of the wrong type: 400 naming the field', async () => {
    await assert.rejects(client.audio.speech.create({ ...SHORT, exaggeration: 'lots' }), (error) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'exaggeration');
      return true;
    });
  });

  test('a wrong API key: AuthenticationError 401', async () => {
    const intruder = new OpenAI({ apiKey: 'not-the-key', baseURL: `${server.url}/v1`, maxRetries: 0 });
    await assert.rejects(intruder.audio.speech.create(SHORT), (error) => {
      assert.ok(error instanceof OpenAI.AuthenticationError, `${error.constructor.name}: ${error.message}`);
      assert.equal(error.status, 401);
      return true;
    });
  });

  test('models.list names the model', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    assert.deepEqual(models, ['chatterbox']);
  });
});

// The voice library: GET/POST/DELETE /v1/audio/voices.
describe('voice library', () => {
  const VOICE = 'js-test-voice';
  const auth = { Authorization: `Bearer ${API_KEY}` };
  const voiceNames = async () => {
    const response = await fetch(`${server.url}/v1/audio/voices`, { headers: auth });
    assert.equal(response.status, 200);
    const listing = await response.json();
    return (listing.data ?? listing.voices).map((v) => (typeof v === 'string' ? v : v.name ?? v.id));
  };

  test('a voice created from a recording is listed, speaks, and is deleted', async () => {
    // The recording: the server's own built-in voice saying a sentence.
    const recording = await bytesOf(await client.audio.speech.create({ ...SHORT, max_new_tokens: 150, response_format: 'wav' }));
    const form = new FormData();
    form.append('name', VOICE);
    form.append('file', new Blob([recording], { type: 'audio/wav' }), 'recording.wav');
    const created = await fetch(`${server.url}/v1/audio/voices`, { method: 'POST', headers: auth, body: form });
    assert.ok(created.ok, `POST /v1/audio/voices: ${created.status} ${await created.clone().text()}`);
    assert.ok((await voiceNames()).includes(VOICE));

    const speech = await client.audio.speech.create({ ...SHORT, voice: VOICE, response_format: 'pcm' });
    assert.ok(AUDIO_FORMATS.pcm.samples(await bytesOf(speech)) > 0);

    const deleted = await fetch(`${server.url}/v1/audio/voices/${VOICE}`, { method: 'DELETE', headers: auth });
    assert.ok(deleted.ok, `DELETE: ${deleted.status}`);
    assert.ok(!(await voiceNames()).includes(VOICE));
    await assert.rejects(client.audio.speech.create({ ...SHORT, voice: VOICE }), (error) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'voice');
      return true;
    });
  });
});
