// Starts the real chatterbox-server binary on the tiny model, on a free loopback port, for the tests
// in this folder. ctest passes the paths (tests/CMakeLists.txt, js.server_clients):
//   CHATTERBOX_SERVER      the chatterbox-server binary
//   CHATTERBOX_TINY_MODEL  the tiny synthetic model (fixture tiny_model)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests from ctest (ctest -R js.server_clients)`);
  return value;
}

// Resolves to {url, port, stop(), log()} once the server says where it listens (its stderr line
// "listening on http://HOST:PORT").
export async function startServer({ apiKey } = {}) {
  const args = ['-m', required('CHATTERBOX_TINY_MODEL'), '--host', '127.0.0.1', '--port', '0', '--sessions', '2'];
  // A fresh voice library per server, not the user's.
  const dataHome = mkdtempSync(join(tmpdir(), 'chatterbox-js-test-'));
  args.push('--voices', join(dataHome, 'voices'));
  const env = { ...process.env };
  delete env.CHATTERBOX_API_KEY;
  if (apiKey) args.push('--api-key', apiKey);
  const child = spawn(required('CHATTERBOX_SERVER'), args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const listening = new Promise((resolve, reject) => {
    child.stderr.on('data', (data) => {
      stderr += data;
      const match = /listening on (http:\/\/[\d.]+:(\d+))/.exec(stderr);
      if (match) resolve({ url: match[1], port: Number(match[2]) });
    });
    child.on('exit', (code) => reject(new Error(`chatterbox-server exited (${code}) before listening:\n${stderr}`)));
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    const { url, port } = await listening.catch((error) => {
      rmSync(dataHome, { recursive: true, force: true });
      throw error;
    });
    return {
      url,
      port,
      log: () => stderr,
      async stop() {
        if (child.exitCode === null) {
          child.kill('SIGTERM');
          await once(child, 'exit');
        }
        rmSync(dataHome, { recursive: true, force: true });
      },
    };
  } finally {
    clearTimeout(timeout);
  }
}
