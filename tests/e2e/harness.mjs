// harness.mjs - a minimal test runner for the dashboard's node tests. Tests run in order; each
// prints "ok - NAME" or "not ok - NAME: reason" (the lines tests/integration/run.sh counts), and
// run() ends with "N passed, N failed" and sets the exit status.

const tests = [];

export function test(name, fn) {
  tests.push({ name, fn });
}

export async function run({ before, after } = {}) {
  let passed = 0;
  let failed = 0;
  try {
    if (before) await before();
  } catch (e) {
    console.log(`not ok - setup: ${e && e.stack ? e.stack : e}`);
    process.exitCode = 1;
    if (after) await after().catch(() => {});
    return;
  }
  const only = process.env.TEST_ONLY; // a substring: run only the tests whose name has it
  for (const t of tests.filter((x) => !only || x.name.includes(only))) {
    try {
      await t.fn();
      passed++;
      console.log(`ok - ${t.name}`);
    } catch (e) {
      failed++;
      const msg = (e && e.message ? e.message : String(e)).split('\n').slice(0, 6).join(' | ');
      console.log(`not ok - ${t.name}: ${msg}`);
    }
  }
  if (after) {
    try {
      await after();
    } catch (e) {
      console.log(`not ok - teardown: ${e && e.message ? e.message : e}`);
      failed++;
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}
