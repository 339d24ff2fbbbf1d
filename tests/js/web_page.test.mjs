// chatterbox-server's web page in a real headless Chromium (Debian's chromium) driven by
// puppeteer-core: type, press Speak, the audio arrives and plays while it streams.
//
// CHATTERBOX_CHROMIUM overrides the browser (default /usr/bin/chromium); CHATTERBOX_WEB_SCREENSHOT
// names where the screenshot goes (ctest: the build folder; docs/web-page.png is one of these).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

import { startServer } from './server.mjs';

const API_KEY = 'test-key-for-the-web-page';
const CHROMIUM = process.env.CHATTERBOX_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOT = process.env.CHATTERBOX_WEB_SCREENSHOT;
// A voice to upload: a few seconds of speech from the golden test data.
const RECORDING = fileURLToPath(new URL('../data/golden/ref_voice.wav', import.meta.url));
const SPEECH_TIMEOUT_MS = 120_000; // the tiny model on a busy 2-core machine

let server;
let browser;

// Opens the page with its data-state changes recorded in window.stateHistory.
async function openPage() {
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 1250 });
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // Refused requests (401 before the key, 404 for a missing voice library) are the page's to handle;
  // any other console error is a problem.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(`console: ${message.text()}`);
  });
  await page.evaluateOnNewDocument(() => {
    window.stateHistory = [];
    new MutationObserver(() => window.stateHistory.push(document.body.dataset.state)).observe(document, {
      subtree: true, attributes: true, attributeFilter: ['data-state'],
    });
  });
  await page.goto(`${server.url}/`, { waitUntil: 'networkidle0' });
  await page.waitForFunction(() => ['idle', 'error'].includes(document.body.dataset.state));
  return { page, problems };
}

// Types the API key, as a user does: the page reloads the voices when the field changes.
async function giveKey(page) {
  await page.type('#api-key', API_KEY);
  await page.$eval('#api-key', (input) => input.dispatchEvent(new Event('change')));
}

const state = (page) => page.evaluate(() => ({
  state: document.body.dataset.state,
  status: document.getElementById('status').textContent,
}));

async function speak(page) {
  await page.click('#speak');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), {
    timeout: SPEECH_TIMEOUT_MS,
  });
  return state(page);
}

describe('the web page', { skip: existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM} (Debian chromium)` }, () => {
  before(async () => {
    server = await startServer({ apiKey: API_KEY });
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // --no-sandbox: Chromium's sandbox refuses to run as root, as the tests do in CI.
      args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required', '--mute-audio'],
    });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the page and its files are served without the API key', async () => {
    for (const [path, type] of [['/', 'text/html'], ['/web/app.js', 'text/javascript'], ['/web/style.css', 'text/css']]) {
      const response = await fetch(`${server.url}${path}`);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type'), new RegExp(`^${type}`), path);
    }
    assert.equal((await fetch(`${server.url}/web/missing.js`)).status, 404);
  });

  test('type, press Speak: the audio streams, plays while it arrives, and is offered for download', async () => {
    const { page, problems } = await openPage();
    // The parameters come from the server's table.
    for (const name of ['exaggeration', 'cfg_weight', 'temperature', 'speed', 'top_p'])
      assert.ok(await page.$(`#param-${name}`), `a control for ${name}`);
    assert.equal(await page.$eval('label[for="text"]', (l) => l.textContent), 'Text to say');
    const formats = await page.$$eval('#response-format option', (options) => options.map((o) => o.value));
    assert.ok(formats.includes('wav') && formats.includes('pcm'), `formats ${formats}`);
    assert.equal(await page.$eval('#voice-upload', (f) => f.hidden), true, 'no upload before the key is known');

    await page.type('#text', 'Hello from the web page. This sentence streams while it is made.');
    await page.$eval('#param-max_new_tokens', (input) => { input.value = 60; }); // short: the tiny model
    await page.type('#seed', '11');

    // Without the key, /v1/ refuses, and the page says so.
    let result = await speak(page);
    assert.equal(result.state, 'error');
    assert.match(result.status, /401/);

    await giveKey(page);
    await page.evaluate(() => { window.stateHistory = []; });
    result = await speak(page);
    assert.equal(result.state, 'done', result.status);

    const history = await page.evaluate(() => window.stateHistory);
    assert.ok(history.indexOf('streaming') >= 0 && history.indexOf('streaming') < history.indexOf('done'),
      `played while streaming, then done: ${history}`);
    const received = Number(await page.$eval('#bytes-received', (e) => e.textContent));
    assert.ok(received > 0 && received % 2 === 0, `${received} bytes of pcm`);
    const scheduled = Number(await page.$eval('#audio-seconds', (e) => e.textContent));
    assert.ok(Math.abs(scheduled - received / 2 / 24000) < 0.01, `${scheduled} s scheduled for ${received} bytes`);

    // Web Audio played it: the context runs and its clock passed the start of the audio.
    const playback = await page.evaluate(() => ({
      state: window.chatterboxPage.audioContext.state,
      time: window.chatterboxPage.audioContext.currentTime,
    }));
    assert.equal(playback.state, 'running');
    assert.ok(playback.time > 0, `AudioContext time ${playback.time}`);

    // The result: a WAV in the player (a blob URL with a duration) and the download link.
    await page.waitForFunction(() => document.getElementById('player').duration > 0);
    const player = await page.$eval('#player', (audio) => ({ src: audio.src, duration: audio.duration }));
    assert.match(player.src, /^blob:/);
    assert.ok(Math.abs(player.duration - received / 2 / 24000) < 0.05, `player duration ${player.duration}`);
    const download = await page.$eval('#download', (a) => ({ href: a.href, name: a.download, off: a.getAttribute('aria-disabled') }));
    assert.match(download.href, /^blob:/);
    assert.equal(download.name, 'speech.wav');
    assert.equal(download.off, 'false');
    // The <audio> element plays it too.
    await page.$eval('#player', (audio) => audio.play());
    await page.waitForFunction(() => document.getElementById('player').currentTime > 0);

    // A format the server encodes: asked for as a whole file with the same seed.
    if (formats.includes('flac')) {
      await page.select('#response-format', 'flac');
      await page.waitForFunction(() => document.getElementById('download').download === 'speech.flac', {
        timeout: SPEECH_TIMEOUT_MS,
      });
      const flac = await page.evaluate(async () => {
        const bytes = new Uint8Array(await (await fetch(document.getElementById('download').href)).arrayBuffer());
        return String.fromCharCode(...bytes.subarray(0, 4));
      });
      assert.equal(flac, 'fLaC');
      await page.select('#response-format', 'wav');
    }

    // With the key given, the voice library shows.
    assert.equal(await page.$eval('#voice-upload', (f) => f.hidden), false);
    if (SCREENSHOT) {
      await page.$eval('#player', (audio) => audio.pause());
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
    }
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('Stop while it streams: playback stops, and the next Speak is served', async () => {
    const { page, problems } = await openPage();
    await giveKey(page);
    await page.type('#text', 'A long text that keeps streaming. '.repeat(6));
    await page.$eval('#param-max_new_tokens', (input) => { input.value = 400; });
    await page.click('#speak');
    await page.waitForFunction(() => document.body.dataset.state === 'streaming', { timeout: SPEECH_TIMEOUT_MS });
    await page.click('#stop');
    await page.waitForFunction(() => document.body.dataset.state === 'idle');
    assert.equal((await state(page)).status, 'Stopped.');
    assert.equal(await page.$eval('#stop', (b) => b.disabled), true);

    await page.$eval('#text', (t) => { t.value = 'Hi.'; });
    await page.$eval('#param-max_new_tokens', (input) => { input.value = 20; });
    const result = await speak(page);
    // Failed once under `ctest -j2` with an empty 200 stream ("the server sent no audio"): the
    // server's log says why a stream ended early.
    assert.equal(result.state, 'done', `${result.status}\nserver log:\n${server.log()}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a voice added from a recording is picked, speaks, and is deleted', async () => {
    const { page, problems } = await openPage();
    await giveKey(page);
    await page.waitForFunction(() => !document.getElementById('voice-upload').hidden);
    await page.type('#voice-name', 'web-test-voice');
    await (await page.$('#voice-file')).uploadFile(RECORDING);
    await page.click('#upload-voice');
    await page.waitForFunction(() => document.getElementById('voice').value === 'web-test-voice', {
      timeout: SPEECH_TIMEOUT_MS,
    });
    await page.type('#text', 'Hello in a new voice.');
    await page.$eval('#param-max_new_tokens', (input) => { input.value = 30; });
    const result = await speak(page);
    assert.equal(result.state, 'done', result.status);

    await page.click('#delete-voice');
    await page.waitForFunction(() => document.getElementById('voice').value === 'default');
    const voices = await page.$$eval('#voice option', (options) => options.map((o) => o.value));
    assert.ok(!voices.includes('web-test-voice'), `voices after the delete: ${voices}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a server without a voice library (404): the built-in voice only, no upload', async () => {
    const page = await browser.newPage();
    await page.setRequestInterception(true);
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/audio/voices')
        request.respond({ status: 404, contentType: 'application/json', body: '{"error": {"message": "no such route"}}' });
      else request.continue();
    });
    await page.goto(`${server.url}/`, { waitUntil: 'networkidle0' });
    await giveKey(page);
    await page.waitForFunction(() => /no voice library/.test(document.getElementById('voice-note').textContent));
    assert.equal(await page.$eval('#voice-upload', (f) => f.hidden), true);
    assert.equal(await page.$eval('#delete-voice', (b) => b.hidden), true);
    assert.deepEqual(await page.$$eval('#voice option', (options) => options.map((o) => o.value)), ['default']);
    await page.close();
  });

  test('a parameter out of range: the page shows the server\'s message naming it', async () => {
    const { page } = await openPage();
    await giveKey(page);
    await page.type('#text', 'Hi.');
    // Out of the slider's range, as a hand-edited request would be.
    await page.$eval('#param-max_new_tokens', (input) => { input.type = 'number'; input.value = 999999; });
    const result = await speak(page);
    assert.equal(result.state, 'error');
    assert.match(result.status, /400: .*max_new_tokens/);
    await page.close();
  });
});
