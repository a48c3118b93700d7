// A load balancer's probe, in a process of its own so that the test's busy event loop
// (hundreds of streams and sockets) does not delay it: GET `path` on a fresh connection
// every `everyMs`, until the parent sends 'stop'; then it sends back every result
// ({status, ms}, and with a `field`: value, that field of the JSON body) and exits.
// Usage: fork('prober.mjs', [port, path, everyMs, field?]).
import http from 'node:http';

const [port, path, everyMs, field] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4]),
  process.argv[5]];
const results = [];
let running = true;

function probe() {
  return new Promise((resolve) => {
    const start = performance.now();
    const request = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 30000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { if (field) body += chunk; });
      response.on('end', () => {
        const result = { status: response.statusCode, ms: performance.now() - start };
        if (field) {
          try { result.value = JSON.parse(body)[field]; } catch { result.value = null; }
        }
        resolve(result);
      });
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error) => resolve({ status: String(error.message), ms: performance.now() - start }));
  });
}

process.on('message', (message) => { if (message === 'stop') running = false; });
while (running) {
  results.push(await probe());
  await new Promise((resolve) => setTimeout(resolve, everyMs));
}
process.send(results, () => process.exit(0));
