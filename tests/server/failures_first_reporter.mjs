// A node:test reporter for CTest: a failure is printed the moment it happens, with its
// error; passes and timings are collected and printed after, as one summary. A CI log that
// keeps only the head of a failing test's output then still shows why it failed.
// Used by the integration tests in CMakeLists.txt (node --test-reporter=./failures_first_reporter.mjs).
import { inspect } from 'node:util';

// The test's error and every cause under it: the OpenAI client's "Connection error." says
// only that fetch failed; why (a reset, a timeout, the server gone) is in the causes below it.
function describeError(error) {
  const lines = [];
  let current = error?.cause ?? error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    const text = current instanceof Error ? (current.stack ?? String(current)) : inspect(current, { depth: 4 });
    lines.push(depth === 0 ? text : `caused by: ${text}`);
    if (current?.code) lines.push(`  (code ${current.code})`);
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines.join('\n');
}

export default async function* failuresFirst(source) {
  const passed = [];
  const logs = [];
  let failures = 0;
  for await (const event of source) {
    const { type, data } = event;
    if (type === 'test:fail') {
      // A file's own entry repeats its failing subtests: name only the tests themselves.
      if (data.details?.error?.failureType === 'subtestsFailed') continue;
      failures++;
      yield `not ok - ${data.name} (${data.file ?? ''})\n${describeError(data.details?.error)}\n\n`;
    } else if (type === 'test:pass') {
      if (data.nesting === 0 && data.details?.type === 'suite') continue;
      passed.push(`ok - ${data.name} (${Math.round(data.details?.duration_ms ?? 0)} ms)`);
    } else if (type === 'test:stdout' || type === 'test:stderr') {
      logs.push(data.message);
    } else if (type === 'test:diagnostic') {
      logs.push(`# ${data.message}\n`);
    }
  }
  yield `${passed.join('\n')}\n`;
  yield logs.join('');
  yield `# ${passed.length} passed, ${failures} failed\n`;
}
