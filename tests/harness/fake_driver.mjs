// A tiny protocol driver for testing the harness's plumbing (tests/harness): it answers
// like a well-behaved peer until asked to misbehave: crash, hang, junk, wrong id, stderr.
import readline from 'node:readline';

const rl = readline.createInterface({ input: process.stdin });
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
let clock = null;

for await (const line of rl) {
  const req = JSON.parse(line);
  const { id, op, args = {} } = req;
  switch (op) {
    case 'hello':
      out({ id, ok: true, result: { impl: 'fake', version: '0', pid: process.pid, ops: ['hello', 'reset', 'set_clock', 'echo', 'crash', 'hang', 'junk', 'wrong_id', 'diag', 'fail', 'exit'] } });
      break;
    case 'reset': out({ id, ok: true, result: null }); break;
    case 'set_clock': clock = args.now; out({ id, ok: true, result: null }); break;
    case 'echo': out({ id, ok: true, result: args.value ?? clock }); break;
    case 'diag': process.stderr.write(`[fake] ${args.text}\n`); out({ id, ok: true, result: null }); break;
    case 'fail': out({ id, ok: false, error: { kind: 'Error', message: 'boom', code: 'EIO' } }); break;
    case 'crash': process.stderr.write('fake driver crashing on purpose\n'); process.exit(3);
    case 'hang': break;
    case 'junk': process.stdout.write('this is not json\n'); break;
    case 'wrong_id': out({ id: id + 100, ok: true, result: null }); break;
    case 'exit': out({ id, ok: true, result: null }); process.exit(0);
    default: out({ id, ok: false, error: { kind: 'unsupported', message: `unsupported op: ${op}` } });
  }
}
