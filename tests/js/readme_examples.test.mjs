// README.md's server examples, run as written against the tiny model: the fenced blocks of the
// "## Server" section marked with MARKER on the line before (curl in ```sh, the OpenAI SDK in ```js),
// with only the address replaced by the test server's. Each must write at least one audio file, and
// every file it writes must decode.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { AUDIO_FORMATS } from './audio_files.mjs';
import { startServer } from './server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const README_ADDRESS = 'http://127.0.0.1:8080';
const MARKER = '<!-- run as written by tests/js/readme_examples.test.mjs -->';
const run = promisify(execFile);

// The fenced blocks of README.md's "## Server" section: [{language, code}].
function serverSectionBlocks() {
  const readme = readFileSync(join(HERE, '..', '..', 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Server\n');
  assert.ok(start >= 0, 'README.md has a "## Server" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^(.*)\n```(\w+)\n([\s\S]*?)```/gm)];
  return blocks.filter((m) => m[1] === MARKER).map((m) => ({ language: m[2], code: m[3] }));
}

// Runs `execute(folder)` in a fresh folder; then checks the audio files it left there.
async function expectAudioFiles(execute) {
  const folder = mkdtempSync(join(tmpdir(), 'chatterbox-readme-'));
  try {
    await execute(folder);
    const files = readdirSync(folder);
    assert.ok(files.length > 0, 'the example wrote no file');
    for (const file of files) {
      const format = AUDIO_FORMATS[extname(file).slice(1)];
      assert.ok(format, `${file}: an audio file of a known format`);
      assert.ok(format.samples(new Uint8Array(readFileSync(join(folder, file)))) > 0, `${file} holds audio`);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

describe("README.md's server examples", () => {
  let server;
  const blocks = serverSectionBlocks();
  // The README's examples use no key: the server as the one-line start runs it.
  before(async () => { server = await startServer(); });
  after(async () => server?.stop());
  const withServer = (code) => {
    assert.ok(code.includes(README_ADDRESS), `the example calls ${README_ADDRESS}`);
    return code.replaceAll(README_ADDRESS, server.url);
  };

  test('the curl examples', async () => {
    const curl = blocks.filter((b) => b.language === 'sh');
    assert.ok(curl.length > 0 && curl.every((b) => /^curl /m.test(b.code)), 'marked ```sh blocks of curl commands');
    for (const { code } of curl)
      await expectAudioFiles((folder) => run('bash', ['-euo', 'pipefail', '-c', withServer(code)], { cwd: folder }));
  });

  test('the JavaScript example (OpenAI SDK)', async () => {
    const js = blocks.filter((b) => b.language === 'js');
    assert.equal(js.length, 1, 'one marked ```js block');
    // Beside node_modules, so that `import OpenAI from 'openai'` finds the pinned package.
    const script = join(HERE, `.readme-example-${process.pid}.mjs`);
    writeFileSync(script, withServer(js[0].code));
    try {
      await expectAudioFiles((folder) => run(process.execPath, [script], { cwd: folder }));
    } finally {
      rmSync(script, { force: true });
    }
  });
});
