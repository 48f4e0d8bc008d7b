// The example driver (examples/reworded_driver.mjs) with crash defects planted in its store
// (issue 30 item 1): it runs the example in this process, behind the reference's `serve` with
// the defects MEMCONFORM_PLANT names (planted_backend.py: in-place, tombstone-after-index).
// The interpreter the harness gave (MEMCONFORM_PYTHON) runs planted_backend.py instead of
// `-m memconform.reference serve`, through planted_python.sh.
import { fileURLToPath } from 'node:url';

process.env.MEMCONFORM_PLANTED_PYTHON = process.env.MEMCONFORM_PYTHON || 'python3';
process.env.MEMCONFORM_PYTHON = fileURLToPath(new URL('./planted_python.sh', import.meta.url));
await import(new URL('../../examples/reworded_driver.mjs', import.meta.url).href);
