// Starts the real `lmrun serve` (and `lmrun router`) on free loopback ports for the
// integration tests and stops them again. LMRUN_BIN names the binary (CTest sets it; default
// build/lmrun), LMRUN_TESTDATA the shared test data (default ../shared/testdata
// beside the source tree). LMRUN_SERVE_ARGS adds arguments to every server the
// tests start, unless a test chose its own -tp (CTest runs the suites whose requests
// reach the model again with "-tp 2": tensor parallelism; CMakeLists.txt lists them).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sourceRoot = path.resolve(here, '..', '..');

export const testdataDir = process.env.LMRUN_TESTDATA || path.resolve(sourceRoot, '..', 'shared', 'testdata');
export const lmrunBin = process.env.LMRUN_BIN || path.join(sourceRoot, 'build', 'lmrun');
export const storiesDir = path.join(testdataDir, 'stories260k');
export const plainChatTemplate = path.join(here, 'plain_chat_template.jinja');
const suiteArgs = (process.env.LMRUN_SERVE_ARGS || '').split(/\s+/).filter((arg) => arg !== '');
// Random-weight Qwen3 with the real Qwen3 tokenizer and chat template.
export const qwen3TinyDir = path.join(testdataDir, 'qwen3-tiny');
export const qwen3TokenizerDir = path.join(testdataDir, 'qwen3-tokenizer');

export function storiesGoldens() {
  return JSON.parse(readFileSync(path.join(storiesDir, 'expected.json'), 'utf8')).cases;
}

// Starts `lmrun ARGS` and resolves once it logs "listening on" and `readyPath` answers 200.
// `launcher`: a command that starts lmrun, e.g. ['mpirun', '-np', '2'] (the server is then
// rank 0 of an MPI job).
async function startLmrun(args, { timeoutMs = 60000, readyPath = '/health', launcher = [] } = {}) {
  const command = [...launcher, lmrunBin, ...args];
  const proc = spawn(command[0], command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let stopping = false;
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  // A server that exits while a test runs (a crash, or a test that killed it) shows its log in the
  // test output: a client that only sees "Connection error." then still has the reason.
  exited.then(({ code, signal }) => {
    if (!stopping) process.stderr.write(`${args[0]} exited (code ${code}, signal ${signal}) before stop() was called; its log:\n${log}\n`);
  });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start:\n${log}`)), timeoutMs);
    proc.stderr.on('data', (data) => {
      log += data.toString();
      const match = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited with ${code}:\n${log}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}${readyPath}`)).status === 200) break;
    } catch { /* not yet */ }
    await sleep(50);
  }
  return {
    url,
    port,
    proc,
    log: () => log,
    // SIGTERM, then the exit code (null if it had to be killed).
    async stop({ timeoutMs: stopTimeoutMs = 30000 } = {}) {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      stopping = true;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), stopTimeoutMs);
      const { code } = await exited;
      clearTimeout(timer);
      return code;
    },
    exited,
  };
}

// `lmrun serve` of stories260k (or `model`, with `tokenizer`) on a free port (or `port`),
// with LMRUN_SERVE_ARGS unless the test chose its own -tp.
export async function startWorker(extraArgs = [],
  { timeoutMs = 60000, model = storiesDir, tokenizer, port = 0, launcher = [] } = {}) {
  const defaults = extraArgs.includes('--kv-cache-memory') ? [] : ['--kv-cache-memory', '0.25'];
  const suite = extraArgs.includes('-tp') ? [] : suiteArgs;
  const args = ['serve', '--model', model, ...(tokenizer ? ['--tokenizer', tokenizer] : []), '--host', '127.0.0.1',
    '--port', String(port), '--threads', '1', ...defaults, ...suite, ...extraArgs];
  return startLmrun(args, { timeoutMs, launcher });
}

// `lmrun router` over `workerUrls` on a free port; ready once some worker is up.
export async function startRouter(workerUrls, extraArgs = [], { timeoutMs = 60000 } = {}) {
  const args = ['router', ...workerUrls.flatMap((url) => ['--worker', url]), '--host', '127.0.0.1', '--port', '0',
    ...extraArgs];
  return startLmrun(args, { timeoutMs });
}

// The server the tests talk to: one `lmrun serve`, or with LMRUN_VIA_ROUTER=1 two of them
// behind `lmrun router` (the same suites then check that the router changes nothing a
// client can see). `stop()` stops them all and returns the router's exit code (or the
// worker's), failing on a worker that did not exit 0.
export async function startServer(extraArgs = [], options = {}) {
  if (process.env.LMRUN_VIA_ROUTER !== '1') return startWorker(extraArgs, options);
  const workers = await Promise.all([startWorker(extraArgs, options), startWorker(extraArgs, options)]);
  const router = await startRouter(workers.map((w) => w.url), ['--health-interval', '0.2']);
  return {
    ...router,
    workers,
    async stop(stopOptions) {
      const code = await router.stop(stopOptions);
      const codes = await Promise.all(workers.map((w) => w.stop(stopOptions)));
      if (codes.some((c) => c !== 0)) throw new Error(`a worker exited with ${codes}`);
      return code;
    },
  };
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Prometheus text -> { 'name{labels}': value }.
export async function scrapeMetrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  return values;
}

export function metric(values, name, extraLabel = '') {
  const key = Object.keys(values).find((k) => k.startsWith(`${name}{`) && k.includes(extraLabel));
  if (key === undefined) throw new Error(`metric ${name} ${extraLabel} not found`);
  return values[key];
}

export async function postJson(url, path_, body, headers = {}) {
  const response = await fetch(`${url}${path_}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: response.status, headers: response.headers, text, json };
}

// Reads an SSE response body to the end: the list of raw events and parsed data objects.
export async function readSse(response) {
  const text = await response.text();
  const events = text.split('\n\n');
  return { text, events, data: events.filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6))) };
}
