// `lmrun serve -tp 2` when a rank dies, on both backends: a worker killed during generation
// ends every request in flight with an error (mp: error responses; mpi: mpirun aborts the
// job, so the connections close), /health stops answering 200 and the server exits non-zero
// within 5 s; rank 0 killed takes its worker with it within 5 s. (The suites whose requests
// reach the model run against -tp 2 as a second CTest entry, see helpers.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, postJson, sleep } from './helpers.mjs';

const backends = {
  mp: { args: ['-tp', '2'], launcher: [] },
  mpi: {
    args: ['-tp', '2', '--distributed-executor-backend', 'mpi'],
    launcher: ['mpirun', '--allow-run-as-root', '--mca', 'btl', 'tcp,self', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2'],
  },
};
process.env.OMPI_ALLOW_RUN_AS_ROOT = '1';
process.env.OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = '1';

function rankPid(server, rank) {
  const match = server.log().match(new RegExp(`rank ${rank}: cpus? [0-9,-]+ \\(\\d+ threads?\\), pid (\\d+)`));
  assert.ok(match, `no rank ${rank} in the log:\n${server.log()}`);
  return Number(match[1]);
}

// Gone, or a zombie nobody reaps yet (it was re-parented): either way it no longer runs.
function processGone(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function waitUntil(predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(20);
  }
  return false;
}

for (const [name, backend] of Object.entries(backends)) {
  test(`-tp 2 (${name}): a worker killed during generation fails the requests in flight; the server exits non-zero`, async () => {
    // One sequence at a time: the requests behind the stream are certainly still in flight.
    const server = await startServer([...backend.args, '--max-num-seqs', '1'], { launcher: backend.launcher });
    const worker = rankPid(server, 1);
    const stream = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: [1], max_tokens: 480, ignore_eos: true, stream: true }),
    });
    assert.equal(stream.status, 200);
    const reader = stream.body.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    const queued = Array.from({ length: 3 }, () =>
      postJson(server.url, '/v1/completions', { prompt: [1], max_tokens: 480, ignore_eos: true }).catch((error) => ({ status: 0, error })));
    await sleep(20);
    const killedAt = Date.now();
    process.kill(worker, 'SIGKILL');
    const unhealthy = await waitUntil(async () => {
      try {
        return (await fetch(`${server.url}/health`)).status !== 200;
      } catch {
        return true;  // already closed
      }
    }, 5000);
    assert.ok(unhealthy, '/health still answers 200 after the worker died');
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
    } catch { /* the server closed the stream */ }
    assert.ok(!/"finish_reason":"length"/.test(text), 'the stream ran to its end');
    for (const response of await Promise.all(queued)) {
      assert.ok(response.status === 0 || response.status >= 400, `a queued request got ${response.status}: ${response.text}`);
    }
    const { code } = await server.exited;
    assert.notEqual(code, 0);
    assert.ok(Date.now() - killedAt < 5000, `exited ${Date.now() - killedAt} ms after the kill`);
  });

  test(`-tp 2 (${name}): when rank 0 is killed its worker is gone within 5 s`, async () => {
    const server = await startServer(backend.args, { launcher: backend.launcher });
    const rank0 = rankPid(server, 0);
    const worker = rankPid(server, 1);
    assert.ok(!processGone(worker));
    process.kill(rank0, 'SIGKILL');
    assert.ok(await waitUntil(() => processGone(worker), 5000), `worker ${worker} outlived rank 0`);
    await server.exited;
  });
}
