// A driver shim for tests (issue 25 item 1): it runs the example driver (examples/reworded_driver.mjs)
// and plants bugs in what it answers, named by MEMCONFORM_PLANT (comma-separated):
//   pin-refused  pin_memory is done, but answered with outcome refused (one difference: the outcome)
//   pin-lost     pin_memory is never done, yet answered as pinned (a second one: the store)
//   no-outcome   write_memory answers carry no outcome, though hello declares outcome_kinds
//   always-created  every done write_memory answers outcome ok:created, its text unchanged
//                (issue 30 item 2: the history checkers must read the kind, not the words)
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const EXAMPLE = fileURLToPath(new URL('../../examples/reworded_driver.mjs', import.meta.url));
const plant = new Set((process.env.MEMCONFORM_PLANT || '').split(',').filter(Boolean));
const inner = spawn(process.execPath, [EXAMPLE], { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = [];
createInterface({ input: inner.stdout }).on('line', (line) => waiting.shift()?.(JSON.parse(line)));
const forward = (request) => new Promise((resolve) => {
  waiting.push(resolve);
  inner.stdin.write(JSON.stringify(request) + '\n');
});

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  let answer = request.op === 'pin_memory' && plant.has('pin-lost')
    ? { id: request.id, ok: true, result: 'Pinned.', outcome: { kind: 'ok', detail: 'pinned' } }
    : await forward(request);
  if (request.op === 'pin_memory' && plant.has('pin-refused')) {
    answer = { ...answer, result: 'Not pinned.', outcome: { kind: 'refused', detail: 'pinned' } };
  }
  if (request.op === 'write_memory' && plant.has('no-outcome')) delete answer.outcome;
  if (request.op === 'write_memory' && plant.has('always-created') && answer.outcome?.kind === 'ok') {
    answer = { ...answer, outcome: { kind: 'ok', detail: 'created' } };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
  if (request.op === 'exit') break;
}
inner.stdin.end();
