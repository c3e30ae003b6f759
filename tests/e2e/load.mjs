// load.mjs - writes datapoints to a TSD over the telnet protocol: `put` lines on one connection,
// then `version`, whose reply comes only after every put before it is in the write-ahead log.
// Error replies (`put: ...`) fail the load. Used by test_web_e2e.sh (node load.mjs PORT FILE,
// FILE holding put lines) and by e2e.mjs (putLines). Bounded by a 60 s timeout.
import net from 'node:net';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export function putLines(port, lines) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error('telnet put: no reply in 60 s')); }, 60000);
    s.on('error', (e) => { clearTimeout(timer); reject(e); });
    s.on('data', (d) => {
      got += d.toString();
      if (!got.includes('\n')) return;
      clearTimeout(timer);
      s.end();
      const errors = got.split('\n').filter((l) => l.startsWith('put:'));
      if (errors.length) reject(new Error(`telnet put: ${errors.slice(0, 3).join(' | ')}`));
      else if (!/ctsdb|opentsdb/i.test(got)) reject(new Error(`telnet put: unexpected reply ${got.slice(0, 200)}`));
      else resolve(lines.length);
    });
    s.write(`${lines.join('\n')}\nversion\n`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [port, file] = process.argv.slice(2);
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  putLines(Number(port), lines).then(
    (n) => { console.log(`wrote ${n} points`); },
    (e) => { console.error(e.message); process.exitCode = 1; },
  );
}
