// e2e.mjs - end-to-end tests of the dashboard in headless Debian Chromium (playwright-core),
// against a real TSD that tests/integration/test_web_e2e.sh started and loaded (over telnet)
// with known data:
//   e2e.cpu      host=web01 value i, host=web02 value 100+i, dc=lga; one point a minute, i=0..89
//   e2e.counter  host=web01 value 120*i (a counter rising 2 per second), same times
//   e2e.gap      host=web01 value 7, minutes 0..29 and 60..89 only (a 30 minute hole)
//   e2e.big      host=web01 20000 points one second apart ending at the last e2e.cpu minute
//   e2e.huge     host=h1..h5 value 1000*h + (k % 600), at the times of e2e.big (100,000 points)
//   e2e.wrap     host=web01 value (60*i) % 1000: a counter rising 1 per second, wrapping at 1000
//                five times (so its plain rate dips below zero five times)
// Point i is at E2E_BASE + 60*i seconds. Each test prints ok/not ok; screenshots go to
// E2E_OUT (test-output/web/). Every wait is bounded.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { test, run } from './harness.mjs';
import { putLines } from './load.mjs';

const TSD = process.env.TSD_URL;
const PORT = Number(process.env.TSD_PORT);
const BASE = Number(process.env.E2E_BASE);
const OUT = process.env.E2E_OUT || 'test-output/web';
const N = 90;
const WAIT = 20000;
const LAST = BASE + 60 * (N - 1);

let context;
let page;
let userDir;
const pageErrors = [];

async function shot(name) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
}

async function runGen() {
  return Number(await page.getAttribute('#chart', 'data-run') || 0);
}

// Waits until the chart finished a run newer than `after` and returns its plot summary.
async function nextPlot(after) {
  try {
    await page.waitForFunction((a) => {
      const c = document.getElementById('chart');
      return c && Number(c.dataset.run || 0) > a && c.dataset.state !== 'loading';
    }, after, { timeout: WAIT });
  } catch (e) {
    const info = await page.evaluate(() => ({
      url: location.href,
      run: document.getElementById('chart')?.dataset.run,
      state: document.getElementById('chart')?.dataset.state,
      status: document.getElementById('status')?.textContent,
      errors: document.getElementById('errors')?.textContent,
    }));
    throw new Error(`no new chart run after ${after}: ${JSON.stringify(info)}`);
  }
  return JSON.parse(await page.getAttribute('#chart', 'data-plot'));
}

// Waits until the open suggestion list holds only names starting with prefix (an older lookup,
// e.g. the one on focus with an empty prefix, may still be showing).
async function waitSuggest(prefix) {
  await page.waitForFunction((pfx) => {
    const items = [...document.querySelectorAll('ul.suggest:not([hidden]) li')].map((x) => x.textContent);
    return items.length > 0 && items.every((x) => x.startsWith(pfx));
  }, prefix, { timeout: WAIT });
}

async function plot() {
  return JSON.parse(await page.getAttribute('#chart', 'data-plot'));
}

// Loads the page afresh (through about:blank: going to the same page with another fragment
// would only be a fragment change in the same document, with the old chart still there).
async function open(hash) {
  await page.goto('about:blank');
  await page.goto(`${TSD}/${hash || ''}`);
  await page.waitForSelector('#graph-view, #storage-view', { state: 'attached', timeout: WAIT });
}

function hashParams() {
  return page.evaluate(() => Object.fromEntries([...new URLSearchParams(location.hash.slice(1))].map(([k]) => [k, new URLSearchParams(location.hash.slice(1)).getAll(k)])));
}

// How many pixels of the given colour (r, g, b) the chart's canvas has in the plot area's
// column at time tSec (seconds): the line really drawn there, whatever the summary says.
async function inkAt(tSec, rgb) {
  const p = await plot();
  return page.evaluate(({ t, range, rgb: [r, g, b] }) => {
    const canvas = document.querySelector('#chart canvas');
    const over = document.querySelector('#chart .u-over');
    const cb = canvas.getBoundingClientRect();
    const ob = over.getBoundingClientRect();
    const k = canvas.width / cb.width;
    const x = Math.round((ob.left - cb.left + ((t * 1000 - range[0]) / (range[1] - range[0])) * ob.width) * k);
    const y0 = Math.round((ob.top - cb.top) * k);
    const h = Math.round(ob.height * k);
    const px = canvas.getContext('2d').getImageData(x - 1, y0, 3, h).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 100 && Math.abs(px[i] - r) + Math.abs(px[i + 1] - g) + Math.abs(px[i + 2] - b) < 90) n++;
    }
    return n;
  }, { t: tSec, range: p.range, rgb });
}

// The y scales uPlot drew the latest run with ({y: {min, max, distr}, y2: ...}).
async function drawnScales() {
  const run = await runGen();
  await page.waitForFunction((r) => {
    const s = document.getElementById('chart').dataset.scales;
    return s && JSON.parse(s).run === r;
  }, run, { timeout: WAIT });
  return JSON.parse(await page.getAttribute('#chart', 'data-scales'));
}

function range3h() {
  return `start=${BASE - 300}&end=${LAST + 300}`;
}

// Moves the mouse over the plot at time t (seconds) and returns the legend's read-out.
async function hoverAt(tSec) {
  const p = await plot();
  const box = await page.locator('#chart .u-over').boundingBox();
  const [s, e] = p.range;
  const x = box.x + ((tSec * 1000 - s) / (e - s)) * box.width;
  await page.mouse.move(x, box.y + box.height / 2);
  await page.waitForTimeout(100);
  return page.$$eval('#chart .u-legend .u-series', (rows) => rows.map((r) => ({
    label: (r.querySelector('.u-label') || {}).textContent,
    value: (r.querySelector('.u-value') || {}).textContent,
  })));
}


// ---- graph -------------------------------------------------------------------------------

test('the page loads at / with its scripts, the version and no script errors', async () => {
  await open('');
  await page.waitForFunction(() => document.getElementById('version').textContent !== '', null, { timeout: WAIT });
  assert.equal(await page.title(), 'ctsdb - graph');
  assert.equal(await page.evaluate(() => typeof window.uPlot), 'function');
  assert.match(await page.textContent('#version'), /^v/);
  assert.equal(await page.isHidden('#errors'), true, await page.textContent('#errors'));
  // The footer links the vendored uPlot's license, served from web/vendor/.
  const href = await page.getAttribute('#uplot-license', 'href');
  const lic = await page.evaluate(async (h) => { const r = await fetch(h); return [r.status, await r.text()]; }, href);
  assert.equal(lic[0], 200);
  assert.match(lic[1], /The MIT License/);
});

test('an empty page offers the stored metrics from /api/suggest', async () => {
  await page.waitForSelector('#quick-metrics .chip', { timeout: WAIT });
  const chips = await page.$$eval('#quick-metrics .chip', (b) => b.map((x) => x.textContent));
  for (const m of ['e2e.big', 'e2e.counter', 'e2e.cpu', 'e2e.gap']) assert.ok(chips.includes(m), `${m} in ${chips}`);
  await shot('01-empty');
});

test('metric autocomplete finds e2e.cpu and the chart plots the sum of both hosts', async () => {
  await open(`#view=graph&${range3h()}`);
  await page.click('#add-query');
  const input = page.locator('.query .metric-input').first();
  await input.fill('e2e.c');
  await waitSuggest('e2e.c');
  const names = await page.$$eval('ul.suggest:not([hidden]) li', (l) => l.map((x) => x.textContent));
  assert.deepEqual(names, ['e2e.counter', 'e2e.cpu']);
  const g = await runGen();
  await page.click('ul.suggest li:has-text("e2e.cpu")');
  const p = await nextPlot(g);
  assert.equal(p.series.length, 1, JSON.stringify(p));
  const s = p.series[0];
  assert.equal(s.label, 'e2e.cpu{dc=lga,host=*}');
  assert.equal(s.points, N);
  assert.deepEqual(s.first, [BASE * 1000, 100]);
  assert.deepEqual(s.last, [LAST * 1000, 100 + 2 * (N - 1)]);
  await shot('02-sum');
});

test('the legend reads out the value under the mouse', async () => {
  const rows = await hoverAt(BASE + 60 * 45);
  assert.equal(rows[1].label, 'e2e.cpu{dc=lga,host=*}');
  assert.equal(rows[1].value, String(100 + 2 * 45));
  const d = new Date((BASE + 60 * 45) * 1000).toISOString().slice(0, 19).replace('T', ' ');
  assert.equal(rows[0].value, d);
  await shot('03-hover');
  // Off the chart, the legend shows the latest values.
  await page.mouse.move(5, 5);
  await page.waitForFunction((v) => {
    const cells = document.querySelectorAll('#chart .u-legend .u-series .u-value');
    return cells[1] && cells[1].textContent === v;
  }, String(100 + 2 * (N - 1)), { timeout: WAIT });
});

test('a tag filter with autocomplete and group-by splits the chart per host', async () => {
  await page.click('.query .add-filter');
  const key = page.locator('.query .tagk-input').first();
  await key.fill('ho');
  await waitSuggest('ho');
  await page.click('ul.suggest:not([hidden]) li:has-text("host")');
  const val = page.locator('.query .tagv-input').first();
  await val.fill('web');
  await waitSuggest('web');
  const vals = await page.$$eval('ul.suggest:not([hidden]) li', (l) => l.map((x) => x.textContent));
  assert.deepEqual(vals, ['web01', 'web02']);
  // Leaving the value field (its change event) and the type change each start a run; the
  // later one supersedes the earlier, so wait for it before the next edit.
  const g0 = await runGen();
  await page.selectOption('.query .filter-type', 'wildcard');
  await nextPlot(g0);
  const g = await runGen();
  await val.fill('web*');
  await val.press('Tab');
  const p = await nextPlot(g);
  const labels = p.series.map((s) => s.label).sort();
  assert.deepEqual(labels, ['e2e.cpu{dc=lga,host=web01}', 'e2e.cpu{dc=lga,host=web02}']);
  const w1 = p.series.find((s) => s.label.includes('web01'));
  const w2 = p.series.find((s) => s.label.includes('web02'));
  assert.equal(w1.max, N - 1);
  assert.equal(w2.min, 100);
  const h = await hashParams();
  assert.deepEqual(h.m, ['sum:e2e.cpu{host=wildcard(web*)}']);
  await shot('04-group-by');
});

test('the URL alone restores the same view (bookmark)', async () => {
  const url = page.url();
  await page.goto('about:blank');
  await page.goto(url);
  const p = await nextPlot(0);
  assert.equal(p.series.length, 2);
  assert.equal(await page.inputValue('.query .metric-input'), 'e2e.cpu');
  assert.equal(await page.inputValue('.query .tagk-input'), 'host');
  assert.equal(await page.inputValue('.query .filter-type'), 'wildcard');
  assert.equal(await page.inputValue('#start'), String(BASE - 300));
});

test('a literal list is completed one value at a time', async () => {
  const g0 = await runGen();
  await page.selectOption('.query .filter-type', 'literal_or');
  await nextPlot(g0);
  const val = page.locator('.query .tagv-input').first();
  await val.fill('web01|web0');
  await waitSuggest('web0');
  const g = await runGen();
  await page.click('ul.suggest:not([hidden]) li:has-text("web02")');
  assert.equal(await val.inputValue(), 'web01|web02');
  const p = await nextPlot(g);
  assert.deepEqual(p.series.map((s) => s.label).sort(), ['e2e.cpu{dc=lga,host=web01}', 'e2e.cpu{dc=lga,host=web02}']);
  assert.deepEqual((await hashParams()).m, ['sum:e2e.cpu{host=web01|web02}']);
});

test('a filter without group-by aggregates the matching series into one line', async () => {
  assert.equal(await page.isChecked('.query .groupby'), true);
  let g = await runGen();
  await page.uncheck('.query .groupby');
  let p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:e2e.cpu{}{host=web01|web02}']);
  assert.equal(p.series.length, 1, JSON.stringify(p));
  assert.deepEqual(p.series[0].first, [BASE * 1000, 100]);
  assert.deepEqual(p.series[0].last, [LAST * 1000, 100 + 2 * (N - 1)]);
  // The filter still selects: web01 alone, not grouped, is web01's values.
  const val = page.locator('.query .tagv-input').first();
  g = await runGen();
  await val.fill('web01');
  await val.press('Tab');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:e2e.cpu{}{host=web01}']);
  assert.equal(p.series.length, 1);
  assert.deepEqual(p.series[0].first, [BASE * 1000, 0]);
  assert.deepEqual(p.series[0].last, [LAST * 1000, N - 1]);
});

test('every control of the graph view is restored from the URL, and edits go back into it', async () => {
  const m1 = 'max:10m-avg-null:explicit_tags:e2e.cpu{host=wildcard(web*)}{dc=lga}';
  const m2 = 'sum:rate{counter,1000,100}:e2e.wrap';
  await open(`#view=graph&start=${BASE - 300}&end=${LAST + 300}&m=${encodeURIComponent(m1)}&m=${encodeURIComponent(m2)}&y2=1&log=1&tz=local&refresh=30`);
  const p = await nextPlot(0);
  assert.equal(p.series.length, 3, JSON.stringify(p));
  assert.deepEqual([p.log, p.rightAxis], [true, true]);
  const cards = page.locator('.query');
  assert.equal(await cards.count(), 2);
  const c1 = cards.nth(0);
  const c2 = cards.nth(1);
  assert.deepEqual(
    [await c1.locator('.agg').inputValue(), await c1.locator('.metric-input').inputValue(),
      await c1.locator('.ds-interval').inputValue(), await c1.locator('.ds-fn').inputValue(),
      await c1.locator('.ds-fill').inputValue(), await c1.locator('.explicit-tags').isChecked(),
      await c1.locator('.axis').inputValue()],
    ['max', 'e2e.cpu', '10m', 'avg', 'null', true, 'left']);
  const filters = await c1.locator('.filter').evaluateAll((rows) => rows.map((r) => [
    r.querySelector('.tagk-input').value, r.querySelector('.filter-type').value,
    r.querySelector('.tagv-input').value, r.querySelector('.groupby').checked]));
  assert.deepEqual(filters, [['host', 'wildcard', 'web*', true], ['dc', 'literal_or', 'lga', false]]);
  assert.deepEqual(
    [await c2.locator('.agg').inputValue(), await c2.locator('.rate').isChecked(),
      await c2.locator('.counter').isChecked(), await c2.locator('.counter-max').inputValue(),
      await c2.locator('.counter-reset').inputValue(), await c2.locator('.axis').inputValue()],
    ['sum', true, true, '1000', '100', 'right']);
  assert.deepEqual(
    [await page.inputValue('#start'), await page.inputValue('#end'), await page.isChecked('#log'),
      await page.inputValue('#tz'), await page.inputValue('#refresh')],
    [String(BASE - 300), String(LAST + 300), true, 'local', '30']);
  // An edit in the page is in the URL at once, and a reload of that URL keeps it.
  await page.selectOption('#refresh', '60');
  assert.deepEqual((await hashParams()).refresh, ['60']);
  const g = await runGen();
  await page.uncheck('#log');
  await nextPlot(g);
  const url = page.url();
  assert.equal((await hashParams()).log, undefined);
  await page.goto('about:blank');
  await page.goto(url);
  await nextPlot(0);
  assert.deepEqual([await page.inputValue('#refresh'), await page.isChecked('#log')], ['60', false]);
  assert.deepEqual((await hashParams()).m, [m1, m2]);
});

test('the aggregator list comes from /api/aggregators and picking one re-queries', async () => {
  const fromApi = await (await fetch(`${TSD}/api/aggregators`)).json();
  assert.ok(fromApi.length >= 10, JSON.stringify(fromApi));
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.cpu')}`);
  let p = await nextPlot(0);
  const opts = await page.$$eval('.query .agg option', (o) => o.map((x) => x.value));
  assert.deepEqual(opts, [...fromApi].sort());
  // The downsample functions are the same list without `none`.
  const fns = await page.$$eval('.query .ds-fn option', (o) => o.map((x) => x.value));
  assert.deepEqual(fns, [...fromApi].filter((a) => a !== 'none').sort());
  // web01 is i, web02 is 100+i: each aggregator gives its own known line.
  for (const [agg, first, last] of [['max', 100, 100 + N - 1], ['min', 0, N - 1], ['avg', 50, 50 + N - 1], ['count', 2, 2]]) {
    const g = await runGen();
    await page.selectOption('.query .agg', agg);
    p = await nextPlot(g);
    assert.deepEqual((await hashParams()).m, [`${agg}:e2e.cpu`]);
    assert.equal(p.series[0].points, N, agg);
    assert.deepEqual([p.series[0].first[1], p.series[0].last[1]], [first, last], agg);
  }
});

test('downsampling with a function gives one point per bucket', async () => {
  // The range starts on a bucket boundary so that every bucket is inside it.
  const start = Math.floor(BASE / 600) * 600;
  await open(`#view=graph&start=${start}&end=${LAST + 300}&m=${encodeURIComponent('sum:10m-max:e2e.cpu{host=web01}')}`);
  const p = await nextPlot(0);
  assert.equal(await page.inputValue('.query .ds-interval'), '10m');
  assert.equal(await page.inputValue('.query .ds-fn'), 'max');
  const s = p.series[0];
  const firstBucket = Math.floor(BASE / 600) * 600;
  const lastBucket = Math.floor(LAST / 600) * 600;
  assert.equal(s.points, (lastBucket - firstBucket) / 600 + 1);
  assert.equal(s.max, N - 1);
  assert.equal(s.last[0], lastBucket * 1000);
  assert.equal(s.last[1], N - 1);
});

test('changing the downsample function in the builder re-queries', async () => {
  const g = await runGen();
  await page.selectOption('.query .ds-fn', 'min');
  const p = await nextPlot(g);
  const s = p.series[0];
  const lastBucket = Math.floor(LAST / 600) * 600;
  // The last bucket's smallest point is the first i with BASE + 60*i >= lastBucket.
  assert.equal(s.last[1], Math.ceil((lastBucket - BASE) / 60));
  assert.match((await hashParams()).m[0], /^sum:10m-min:e2e\.cpu/);
});

test('the downsample interval and fill policy are edited in the builder', async () => {
  // 30 minute buckets over the 90 minutes of data.
  const start = Math.floor(BASE / 1800) * 1800;
  await open(`#view=graph&start=${start}&end=${LAST}&m=${encodeURIComponent('sum:e2e.gap')}`);
  let p = await nextPlot(0);
  assert.equal(p.series[0].points, 60);
  let g = await runGen();
  await page.fill('.query .ds-interval', '1m');
  await page.press('.query .ds-interval', 'Tab');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:1m-avg:e2e.gap']);
  // Without a fill policy the empty minutes are simply absent (one gap drawn for the hole).
  assert.deepEqual([p.series[0].points, p.series[0].gaps], [60, 1]);
  g = await runGen();
  await page.selectOption('.query .ds-fill', 'zero');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:1m-avg-zero:e2e.gap']);
  // Zero fills every empty minute of the range, the 30 of the hole and those before the data.
  assert.deepEqual([p.series[0].points, p.series[0].gaps, p.series[0].min], [(LAST - start) / 60 + 1, 0, 0]);
  g = await runGen();
  await page.fill('.query .ds-interval', '30m');
  await page.press('.query .ds-interval', 'Tab');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:30m-avg-zero:e2e.gap']);
  const buckets = Math.floor(LAST / 1800) - Math.floor(BASE / 1800) + 1;
  assert.equal(p.series[0].points, buckets);
  assert.equal(p.series[0].max, 7);
});

test('rate turns the counter into its per-second rate', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.counter')}`);
  let p = await nextPlot(0);
  assert.equal(p.series[0].last[1], 120 * (N - 1));
  const g = await runGen();
  await page.check('.query .rate');
  p = await nextPlot(g);
  const s = p.series[0];
  assert.equal(s.points, N - 1);
  assert.equal(s.min, 2);
  assert.equal(s.max, 2);
  const g2 = await runGen();
  await page.check('.query .counter');
  p = await nextPlot(g2);
  assert.match((await hashParams()).m[0], /^sum:rate\{counter\}:e2e\.counter$/);
  assert.equal(p.series[0].max, 2);
});

test('counter options: counter max, reset value and drop resets handle a wrapping counter', async () => {
  const wraps = 5;
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:rate:e2e.wrap')}`);
  let p = await nextPlot(0);
  // A plain rate goes negative where the counter wrapped.
  assert.equal(p.series[0].points, N - 1);
  assert.equal(p.series[0].max, 1);
  assert.ok(p.series[0].min < 0, JSON.stringify(p.series[0]));
  assert.equal(await page.isHidden('.query .counter-opts'), true);
  let g = await runGen();
  await page.check('.query .counter');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:rate{counter}:e2e.wrap']);
  // As a counter with the default maximum (2^63-1) a wrap is a huge rise.
  assert.ok(p.series[0].max > 1e15, JSON.stringify(p.series[0]));
  assert.equal(await page.isVisible('.query .counter-max'), true);
  g = await runGen();
  await page.fill('.query .counter-max', '1000');
  await page.press('.query .counter-max', 'Tab');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:rate{counter,1000}:e2e.wrap']);
  assert.deepEqual([p.series[0].points, p.series[0].min, p.series[0].max], [N - 1, 1, 1]);
  // A reset value instead: a rate above it is a reset and reads 0.
  g = await runGen();
  await page.fill('.query .counter-max', '');
  await page.press('.query .counter-max', 'Tab');
  await nextPlot(g);
  g = await runGen();
  await page.fill('.query .counter-reset', '100');
  await page.press('.query .counter-reset', 'Tab');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:rate{counter,,100}:e2e.wrap']);
  assert.deepEqual([p.series[0].points, p.series[0].min, p.series[0].max, p.series[0].sum], [N - 1, 0, 1, N - 1 - wraps]);
  // Drop resets: the wrapped points are left out.
  g = await runGen();
  await page.fill('.query .counter-reset', '');
  await page.press('.query .counter-reset', 'Tab');
  await nextPlot(g);
  g = await runGen();
  await page.check('.query .drop-resets');
  p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:rate{dropcounter}:e2e.wrap']);
  assert.deepEqual([p.series[0].points, p.series[0].min, p.series[0].max], [N - 1 - wraps, 1, 1]);
  // And the URL brings all of it back.
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:rate{counter,1000,100}:e2e.wrap')}`);
  p = await nextPlot(0);
  assert.equal(await page.isChecked('.query .counter'), true);
  assert.equal(await page.inputValue('.query .counter-max'), '1000');
  assert.equal(await page.inputValue('.query .counter-reset'), '100');
  assert.deepEqual([p.series[0].min, p.series[0].max], [1, 1]);
});

test('two queries share the chart, the second on a right axis, then a log y axis', async () => {
  const m1 = encodeURIComponent('sum:e2e.cpu{host=web01}');
  const m2 = encodeURIComponent('sum:e2e.counter');
  await open(`#view=graph&${range3h()}&m=${m1}&m=${m2}`);
  let p = await nextPlot(0);
  assert.equal(p.series.length, 2);
  assert.equal(p.rightAxis, false);
  // One axis: the counter (up to 120*89) squeezes the cpu line (up to 89) to the bottom.
  let sc = await drawnScales();
  assert.ok(sc.y.max >= 120 * (N - 1), JSON.stringify(sc));
  assert.equal(sc.y2, undefined);
  let g = await runGen();
  await page.locator('.query').nth(1).locator('.axis').selectOption('right');
  p = await nextPlot(g);
  assert.equal(p.rightAxis, true);
  assert.deepEqual(p.series.map((s) => s.axis), ['left', 'right']);
  assert.equal(await page.locator('#chart .u-axis').count(), 3);
  // Each axis is scaled to its own query.
  sc = await drawnScales();
  assert.ok(sc.y.max >= N - 1 && sc.y.max < 200, JSON.stringify(sc));
  assert.ok(sc.y2.max >= 120 * (N - 1), JSON.stringify(sc));
  assert.equal((await hashParams()).y2[0], '1');
  const legend = await page.$$eval('#chart .u-legend .u-label', (l) => l.map((x) => x.textContent));
  assert.deepEqual(legend.slice(1), ['#1 e2e.cpu{dc=lga,host=web01}', '#2 e2e.counter{host=web01}']);
  await shot('05-two-axes');
  // Clicking a legend entry hides that line, clicking again shows it.
  const red = [0xd6, 0x27, 0x28];
  const mid = BASE + 60 * 45;
  assert.ok(await inkAt(mid, red) > 0, 'the second line is drawn');
  const entry = page.locator('#chart .u-legend .u-series').nth(2);
  await entry.click();
  await page.waitForFunction(() => document.querySelectorAll('#chart .u-legend .u-series')[2].classList.contains('u-off'), null, { timeout: WAIT });
  assert.equal(await inkAt(mid, red), 0, 'the hidden line is not drawn');
  await entry.click();
  await page.waitForFunction(() => !document.querySelectorAll('#chart .u-legend .u-series')[2].classList.contains('u-off'), null, { timeout: WAIT });
  assert.ok(await inkAt(mid, red) > 0, 'the line is drawn again');
  g = await runGen();
  await page.check('#log');
  p = await nextPlot(g);
  assert.equal(p.log, true);
  sc = await drawnScales();
  assert.deepEqual([sc.y.distr, sc.y2.distr], [3, 3], JSON.stringify(sc));
  assert.ok(sc.y.min > 0 && sc.y2.min > 0, JSON.stringify(sc));
  // Zero is not on a log axis: e2e.cpu web01 starts at 0, that point is dropped.
  assert.equal(p.series[0].points, N - 1);
  assert.equal((await hashParams()).log[0], '1');
  await shot('06-log');
});

test('explicit tags keep only series with exactly the filtered tag keys', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.cpu{host=*,dc=*}')}`);
  let p = await nextPlot(0);
  assert.equal(p.series.length, 2);
  let g = await runGen();
  await page.check('.query .explicit-tags');
  p = await nextPlot(g);
  assert.match((await hashParams()).m[0], /^sum:explicit_tags:e2e\.cpu\{/);
  assert.equal(p.series.length, 2);
  // Without dc in the filters, no e2e.cpu series (they all have dc) is left.
  g = await runGen();
  await page.locator('.query .filter').nth(1).locator('button.icon').click();
  p = await nextPlot(g);
  assert.equal(p.series.length, 0);
  assert.match(await page.textContent('#status'), /no data for query 1/);
});

test('a hole in the data is drawn as a gap', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.gap')}`);
  const p = await nextPlot(0);
  const s = p.series[0];
  assert.equal(s.points, 60);
  assert.equal(s.gaps, 1);
  // And on the canvas: the line is there on both sides of the hole and not across it.
  const blue = [0x1f, 0x77, 0xb4];
  assert.ok(await inkAt(BASE + 60 * 15, blue) > 0, 'the line is drawn before the hole');
  assert.ok(await inkAt(BASE + 60 * 75, blue) > 0, 'the line is drawn after the hole');
  assert.equal(await inkAt(BASE + 60 * 45, blue), 0, 'nothing is drawn in the hole');
  await shot('07-gap');
});

test('fill policies: null and nan buckets are gaps, zero fills them', async () => {
  const start = Math.floor(BASE / 60) * 60;
  const range = `start=${start}&end=${LAST}`;
  for (const fill of ['null', 'nan']) {
    await open(`#view=graph&${range}&m=${encodeURIComponent(`sum:1m-avg-${fill}:e2e.gap`)}`);
    const p = await nextPlot(0);
    assert.equal(await page.inputValue('.query .ds-fill'), fill);
    assert.equal(p.series[0].points, 60, `${fill}: ${JSON.stringify(p.series[0])}`);
    assert.ok(p.series[0].gaps >= 30, `${fill}: ${p.series[0].gaps} gaps`);
  }
  await open(`#view=graph&${range}&m=${encodeURIComponent('sum:1m-avg-zero:e2e.gap')}`);
  const p = await nextPlot(0);
  assert.equal(p.series[0].gaps, 0);
  assert.equal(p.series[0].points, 90);
  assert.equal(p.series[0].min, 0);
});

test('twenty thousand points plot in one chart', async () => {
  await open(`#view=graph&start=${LAST - 20000 - 60}&end=${LAST + 60}&m=${encodeURIComponent('sum:e2e.big')}`);
  const p = await nextPlot(0);
  assert.equal(p.series[0].points, 20000);
  const ms = await page.getAttribute('#status', 'data-draw-ms');
  console.log(`# draw of 20000 points: ${ms} ms`);
  // The read-out follows the mouse across the 20000 points and shows the stored value of the
  // time it names (e2e.big's values are a known function of the time).
  const bigValue = (t) => {
    const k = t - (LAST - 19999);
    return Math.round(1000 * Math.sin(k / 500)) / 10 + 200;
  };
  const t0 = Date.now();
  for (let j = 1; j <= 12; j++) {
    const rows = await hoverAt(LAST - 20000 + j * 1500);
    const t = Date.parse(`${rows[0].value.replace(' ', 'T')}Z`) / 1000;
    assert.ok(Math.abs(t - (LAST - 20000 + j * 1500)) <= 60, `${rows[0].value} near the mouse`);
    assert.equal(Number(rows[1].value.replace(/,/g, '')), bigValue(t), `value at ${rows[0].value}`);
  }
  console.log(`# 12 hover read-outs over 20000 points: ${Date.now() - t0} ms (each with a 100 ms settle)`);
  await shot('08-big');
});

test('a hundred thousand points in five series plot, and the read-out follows the mouse', async () => {
  await open(`#view=graph&start=${LAST - 20000 - 60}&end=${LAST + 60}&m=${encodeURIComponent('sum:e2e.huge{host=*}')}`);
  const p = await nextPlot(0);
  assert.equal(p.series.length, 5);
  assert.equal(p.series.reduce((a, s) => a + s.points, 0), 100000);
  console.log(`# draw of 100000 points in 5 series: ${await page.getAttribute('#status', 'data-draw-ms')} ms`);
  // An auto-refresh style re-run draws into the same chart (setData).
  const g = await runGen();
  await page.click('#run');
  await nextPlot(g);
  console.log(`# redraw of 100000 points: ${await page.getAttribute('#status', 'data-draw-ms')} ms`);
  const t0 = Date.now();
  for (let j = 1; j <= 8; j++) {
    const rows = await hoverAt(LAST - 20000 + j * 2200);
    const t = Date.parse(`${rows[0].value.replace(' ', 'T')}Z`) / 1000;
    const k = t - (LAST - 19999);
    for (let h = 1; h <= 5; h++) {
      const row = rows.find((r) => r.label === `e2e.huge{host=h${h}}`);
      assert.ok(row, JSON.stringify(rows));
      assert.equal(Number(row.value.replace(/,/g, '')), 1000 * h + (k % 600), `h${h} at ${rows[0].value}`);
    }
  }
  console.log(`# 8 hover read-outs over 100000 points: ${Date.now() - t0} ms (each with a 100 ms settle)`);
  await shot('08b-huge');
});

test('dragging across the chart zooms in to that time range', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.cpu')}`);
  const before = await nextPlot(0);
  const box = await page.locator('#chart .u-over').boundingBox();
  const g = await runGen();
  await page.mouse.move(box.x + box.width * 0.25, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 8 });
  await page.mouse.up();
  const p = await nextPlot(g);
  const [s0, e0] = before.range;
  const [s1, e1] = p.range;
  assert.ok(Math.abs(s1 - (s0 + (e0 - s0) * 0.25)) < (e0 - s0) * 0.02, `start ${s1}`);
  assert.ok(Math.abs(e1 - (s0 + (e0 - s0) * 0.5)) < (e0 - s0) * 0.02, `end ${e1}`);
  assert.ok(p.series[0].points < before.series[0].points && p.series[0].points > 15, String(p.series[0].points));
  const h = await hashParams();
  assert.match(h.start[0], /^\d{4}\/\d\d\/\d\d-\d\d:\d\d:\d\d$/);
  await shot('09-zoomed');
  const g2 = await runGen();
  await page.goBack();
  const back = await nextPlot(g2);
  assert.deepEqual(back.range, before.range);
});

test('time presets and absolute dates set the range', async () => {
  await open(`#view=graph&start=1h-ago&m=${encodeURIComponent('sum:e2e.cpu')}`);
  await nextPlot(0);
  let g = await runGen();
  await page.click('button[data-preset="3h"]');
  let p = await nextPlot(g);
  assert.equal((await hashParams()).start[0], '3h-ago');
  assert.ok(Math.abs((p.range[1] - p.range[0]) - 3 * 3600000) < 5000);
  const abs = new Date((BASE + 600) * 1000).toISOString().slice(0, 19).replace('T', '-').replace(/-/g, '/').replace(/\/(\d\d:\d\d:\d\d)$/, '-$1');
  g = await runGen();
  await page.fill('#start', abs);
  await page.fill('#end', String(LAST));
  await page.press('#end', 'Enter');
  p = await nextPlot(g);
  assert.deepEqual(p.range, [(BASE + 600) * 1000, LAST * 1000]);
  assert.equal(p.series[0].first[0], (BASE + 600) * 1000);
  assert.equal(p.series[0].points, N - 10);
});

// 2026-11-22T10:00:00 for a time in seconds, shifted by offMin minutes (a datetime-local value).
function pickValue(tSec, offMin = 0) {
  return new Date(tSec * 1000 + offMin * 60000).toISOString().slice(0, 19);
}

// A datetime-local input's value with its seconds (Chromium leaves out ":00").
async function pickInput(sel) {
  const v = await page.inputValue(sel);
  return v.length === 16 ? `${v}:00` : v;
}

// 2026/11/22-10:00:00 (UTC) for a time in seconds: how ctsdb reads absolute dates.
function absSpec(tSec) {
  return new Date(tSec * 1000).toISOString().slice(0, 19).replace(/-/g, '/').replace('T', '-');
}

test('the date pickers write absolute dates, in UTC or in the local time zone', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.cpu')}`);
  await nextPlot(0);
  // The pickers show the range of the URL.
  assert.equal(await pickInput('#end-pick'), pickValue(LAST + 300));
  let g = await runGen();
  await page.fill('#start-pick', pickValue(BASE + 1200));
  let p = await nextPlot(g);
  assert.equal(await page.inputValue('#start'), absSpec(BASE + 1200));
  assert.deepEqual((await hashParams()).start, [absSpec(BASE + 1200)]);
  assert.equal(p.range[0], (BASE + 1200) * 1000);
  assert.deepEqual(p.series[0].first, [(BASE + 1200) * 1000, 100 + 2 * 20]);
  // In local time (the browser's zone made UTC+05:30 here), the pickers and the read-out are in
  // that zone while the fields and the URL keep UTC.
  const cdp = await context.newCDPSession(page);
  try {
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Kolkata' });
    await open(`#view=graph&${range3h()}&tz=local&m=${encodeURIComponent('sum:e2e.cpu')}`);
    await nextPlot(0);
    assert.equal(await page.inputValue('#tz'), 'local');
    assert.equal(await pickInput('#end-pick'), pickValue(LAST + 300, 330));
    g = await runGen();
    await page.fill('#start-pick', pickValue(BASE + 2400, 330));
    p = await nextPlot(g);
    assert.equal(await page.inputValue('#start'), absSpec(BASE + 2400));
    assert.equal(p.range[0], (BASE + 2400) * 1000);
    const rows = await hoverAt(BASE + 60 * 45);
    assert.equal(rows[0].label, 'time');
    assert.equal(rows[0].value, pickValue(BASE + 60 * 45, 330).replace('T', ' '));
    // Switching to UTC in the page keeps the range and shows it in UTC.
    g = await runGen();
    await page.selectOption('#tz', 'utc');
    await nextPlot(g);
    assert.equal((await hashParams()).tz, undefined);
    assert.equal(await pickInput('#start-pick'), pickValue(BASE + 2400));
    const utcRows = await hoverAt(BASE + 60 * 45);
    assert.equal(utcRows[0].label, 'time (UTC)');
    assert.equal(utcRows[0].value, pickValue(BASE + 60 * 45).replace('T', ' '));
  } finally {
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: '' }).catch(() => {});
    await cdp.detach().catch(() => {});
  }
});

test('API errors are shown in the page', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:no.such.metric')}`);
  const p = await nextPlot(0);
  assert.equal(p.series.length, 0);
  await page.waitForSelector('#errors .error', { timeout: WAIT });
  const text = await page.textContent('#errors');
  assert.match(text, /no\.such\.metric/);
  assert.match(text, /400/);
  assert.match(await page.textContent('.query .query-error'), /no\.such\.metric/);
  assert.equal(await page.getAttribute('#chart', 'data-state'), 'error');
  await shot('10-error');
});

test('failing suggestion and aggregator lookups are shown in the page', async () => {
  // The TSD is made to fail here by intercepting its answers in the browser.
  await page.route('**/api/aggregators', (route) => route.fulfill({
    status: 500, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 500, message: 'no aggregators today' } }),
  }));
  await page.route('**/api/suggest?*', (route) => route.fulfill({
    status: 400, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 400, message: 'suggest refused', details: 'e2e' } }),
  }));
  try {
    await open(`#view=graph&${range3h()}`);
    await page.waitForSelector('#errors .error[data-key="aggregators"]', { timeout: WAIT });
    assert.match(await page.textContent('#errors'), /\/api\/aggregators: 500 no aggregators today/);
    // The empty page's metric list and the metric box's suggestions both report the failure.
    await page.waitForSelector('#errors .error[data-key="quick"]', { timeout: WAIT });
    await page.click('#add-query');
    await page.locator('.query .metric-input').fill('e2e.c');
    await page.waitForSelector('#errors .error[data-key="suggest-0"]', { timeout: WAIT });
    assert.match(await page.textContent('#errors .error[data-key="suggest-0"]'), /\/api\/suggest: 400 suggest refused \(e2e\)/);
    // The input stays usable: typing the whole name still plots it.
    const g = await runGen();
    await page.locator('.query .metric-input').fill('e2e.cpu');
    await page.press('.query .metric-input', 'Enter');
    const p = await nextPlot(g);
    assert.equal(p.series[0].points, N);
  } finally {
    await page.unroute('**/api/aggregators');
    await page.unroute('**/api/suggest?*');
  }
});

test('a bad URL query is reported, not ignored', async () => {
  await open('#view=graph&m=garbage');
  await page.waitForSelector('#errors .error[data-key="url"]', { timeout: WAIT });
  assert.match(await page.textContent('#errors'), /garbage/);
});

test('an unreadable time range is reported and nothing is queried', async () => {
  await open(`#view=graph&start=yesterday&m=${encodeURIComponent('sum:e2e.cpu')}`);
  await page.waitForSelector('#errors .error[data-key="time"]', { timeout: WAIT });
  assert.match(await page.textContent('#errors'), /yesterday/);
  assert.equal(await page.getAttribute('#chart', 'data-state'), 'error');
});

test('auto-refresh picks up a new point without a reload', async () => {
  const now = Math.floor(Date.now() / 1000);
  await open(`#view=graph&start=10m-ago&refresh=5&m=${encodeURIComponent('sum:e2e.live')}`);
  await nextPlot(0);
  await putLines(PORT, [`put e2e.live ${now - 30} 41 host=web01`, `put e2e.live ${now - 20} 42 host=web01`]);
  await page.waitForFunction(() => {
    const p = JSON.parse(document.getElementById('chart').dataset.plot);
    return p.series.length === 1 && p.series[0].last && p.series[0].last[1] === 42;
  }, null, { timeout: 15000 });
  assert.match(await page.textContent('#status'), /refreshing every 5s/);
});

// ---- storage -----------------------------------------------------------------------------

test('the storage page says regions count requests, and shows not polled yet apart from idle', async () => {
  // poll=5: the first poll has drawn, the second (the first with rates) is seconds away.
  await open('#view=storage&poll=5');
  await page.waitForFunction(() => document.getElementById('storage-view').dataset.state === 'ready', null, { timeout: WAIT });
  const head = await page.$$eval('#regions th', (r) => r.map((x) => x.textContent));
  for (const h of ['write requests/s', 'read requests/s', 'write requests', 'read requests']) {
    assert.ok(head.includes(h), `${h} in ${head}`);
  }
  assert.ok(!head.includes('writes/s') && !head.includes('writes'), `no bare writes column: ${head}`);
  const hint = await page.textContent('#region-counts-hint');
  assert.match(hint, /requests, not datapoints/);
  const h4 = await page.$$eval('#storage-view h4', (r) => r.map((x) => x.textContent));
  assert.ok(h4.includes('Write requests/s') && h4.includes('Read requests/s'), `${h4}`);
  assert.match(await page.textContent('#storage-view h3'), /datapoints\/s/);
  const model = await page.evaluate(async () => {
    const m = await import('/js/model.js');
    return { grey: m.NOT_POLLED_COLOR, zero: m.heatColor(0) };
  });
  const cellsOf = () => page.$$eval('#regions tbody td.rate', (r) => r.map((x) => ({
    state: x.dataset.rateState, text: x.textContent, bg: getComputedStyle(x).backgroundColor.replace(/ /g, ''),
  })));
  let cells = await cellsOf();
  assert.equal(cells.length, 16, JSON.stringify(cells));
  for (const c of cells) assert.deepEqual(c, { state: 'not-polled', text: 'not polled yet', bg: model.grey });
  // The heat map: rows without a rate are the grey, not the colour of 0 requests/s.
  const px = await page.evaluate(() => {
    const c = document.getElementById('heat-writes');
    const p = c.getContext('2d').getImageData(c.width - 2, 2, 1, 1).data;
    return `rgb(${p[0]},${p[1]},${p[2]})`;
  });
  assert.equal(px, model.grey);
  assert.notEqual(model.grey, model.zero);
  const legend = await page.$$eval('#heat-legend .swatch', (r) => r.map((x) => [x.dataset.state, getComputedStyle(x).backgroundColor.replace(/ /g, '')]));
  assert.deepEqual(legend, [['not-polled', model.grey], ['idle', model.zero]]);
  assert.match(await page.textContent('#heat-legend'), /not polled yet.*0 requests\/s/);
  await shot('10b-storage-not-polled');
  // After the second poll every region has a rate: an idle one shows 0 in the coldest colour.
  await page.waitForFunction(() => !document.querySelector('#regions td.rate[data-rate-state="not-polled"]'), null, { timeout: WAIT });
  cells = await cellsOf();
  assert.ok(cells.every((c) => c.state === 'idle' || c.state === 'active'), JSON.stringify(cells));
  const idle = cells.filter((c) => c.state === 'idle');
  assert.ok(idle.length > 0, `some region had no requests between two polls: ${JSON.stringify(cells)}`);
  for (const c of idle) assert.deepEqual(c, { state: 'idle', text: '0', bg: model.zero });
});

test('the storage page lists tables, families and the pre-split regions with key ranges', async () => {
  await open('#view=storage&poll=1');
  await page.waitForFunction(() => document.getElementById('storage-view').dataset.state === 'ready', null, { timeout: WAIT });
  const tables = await page.$$eval('#table-select option', (o) => o.map((x) => x.value));
  const data = tables.find((t) => /(^|:)tsdb$/.test(t));
  assert.ok(data, `a tsdb table in ${tables}`);
  assert.ok(tables.some((t) => /(^|:)tsdb-uid$/.test(t)), `a tsdb-uid table in ${tables}`);
  assert.equal(await page.inputValue('#table-select'), data);
  const fams = await page.$$eval('#families tbody tr', (r) => r.map((x) => x.dataset.family));
  assert.deepEqual(fams, ['t']);
  const head = await page.$$eval('#families th', (r) => r.map((x) => x.textContent));
  for (const h of ['VERSIONS', 'TTL', 'COMPRESSION', 'BLOOMFILTER', 'BLOCKSIZE']) assert.ok(head.includes(h), `${h} in ${head}`);
  const regions = await page.$$eval('#regions tbody tr', (r) => r.map((x) => ({
    start: x.children[1].textContent, end: x.children[2].textContent, writes: Number(x.dataset.writes),
  })));
  // One byte of salt, 8 buckets: split at \x01 .. \x07.
  assert.equal(regions.length, 8);
  assert.equal(regions[0].start, '(start)');
  assert.equal(regions[1].start, '\\x01');
  assert.equal(regions[7].end, '(end)');
  for (let i = 1; i < regions.length; i++) assert.equal(regions[i].start, regions[i - 1].end);
  assert.ok(regions.filter((r) => r.writes > 0).length >= 2, `salting spread the loaded series: ${JSON.stringify(regions)}`);
});

// Writes put lines for `ms` milliseconds (bounded in count too), `series` distinct series.
async function writeFor(ms, series, metric) {
  const stop = Date.now() + ms;
  for (let i = 0; Date.now() < stop && i < 100; i++) {
    const now = Math.floor(Date.now() / 1000);
    const lines = [];
    for (let k = 0; k < 200; k++) lines.push(`put ${metric} ${now - k} ${k} host=h${k % series}`);
    await putLines(PORT, lines);
    await new Promise((res) => setTimeout(res, 100));
  }
}

// The latest heat map column: write rate per region.
async function latestWrites() {
  return JSON.parse(await page.getAttribute('#heat-writes', 'data-heat'));
}

test('writes and queries over many series light up several regions, and the ingest rate shows', async () => {
  const reading = (async () => {
    // Seven series of five metrics: their salt buckets put these reads on several regions;
    // e2e.big is in store files (test_web_e2e.sh waits for its hours to be handed off and
    // flushed), so reading it again and again goes through the block cache.
    const stop = Date.now() + 3500;
    for (let i = 0; Date.now() < stop && i < 100; i++) {
      const r = await fetch(`${TSD}/api/query?start=2h-ago&m=sum:e2e.cpu&m=sum:e2e.counter&m=sum:e2e.gap&m=sum:e2e.live&m=sum:e2e.big`);
      assert.equal(r.status, 200);
      await r.text();
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  await writeFor(3500, 40, 'e2e.spread');
  await reading;
  await page.waitForFunction(() => {
    const w = JSON.parse(document.getElementById('heat-writes').dataset.heat || '{}');
    return w.columns >= 2 && w.active >= 2;
  }, null, { timeout: WAIT });
  await page.waitForFunction(() => {
    const r = JSON.parse(document.getElementById('heat-reads').dataset.heat || '{}');
    return r.active >= 2;
  }, null, { timeout: WAIT });
  const heat = await latestWrites();
  assert.equal(heat.regions, 8);
  assert.notEqual(await page.textContent('#card-points .card-value'), '—');
  await page.waitForFunction(() => document.querySelector('#card-ingest .card-value').textContent !== '—', null, { timeout: WAIT });
  await shot('11-storage-spread');
});

test('the ingest rate and the block-cache hit ratio are drawn over time from /api/stats', async () => {
  const series = (id) => page.evaluate((x) => JSON.parse(document.getElementById(x).dataset.series || '{}'), id);
  // The writes and reads of the test before ran over several 1 s polls.
  await page.waitForFunction(() => {
    const s = JSON.parse(document.getElementById('ingest-chart').dataset.series || '{}');
    return s.points >= 2;
  }, null, { timeout: WAIT });
  const ingest = await series('ingest-chart');
  assert.ok(ingest.polls >= 3, JSON.stringify(ingest));
  // About 200 points every 100-odd ms were written: well over 100 per second at the peak.
  assert.ok(ingest.max > 100, JSON.stringify(ingest));
  assert.ok(ingest.min >= 0, JSON.stringify(ingest));
  const cache = await series('cache-chart');
  assert.ok(cache.points >= 1, JSON.stringify(cache));
  assert.ok(cache.min >= 0 && cache.max <= 1 && cache.max > 0, JSON.stringify(cache));
  // Both are real charts (uPlot canvases), and the cache card agrees with /api/stats.
  assert.equal(await page.locator('#ingest-chart canvas').count(), 1);
  assert.equal(await page.locator('#cache-chart canvas').count(), 1);
  const stats = await (await fetch(`${TSD}/api/stats`)).json();
  const stat = (m) => Number(stats.find((x) => x.metric === m).value);
  assert.ok(stat('tsd.storage.cache.hits') > 0, 'the reads hit the block cache');
  assert.match(await page.textContent('#card-cache .card-value'), /^\d+(\.\d)?%$/);
});

test('writes to one series show as a single hot region', async () => {
  await page.evaluate(async () => { window.e2eModel = await import('/js/model.js'); });
  const writing = writeFor(4000, 1, 'e2e.hot');
  await page.waitForFunction(() => {
    const h = JSON.parse(document.getElementById('heat-writes').dataset.heat || '{}');
    return h.latest && h.latest.filter((v) => v > 0).length === 1;
  }, null, { timeout: WAIT });
  // On the canvas: the latest column has one row in the hottest colour and the rest in the
  // coldest, each cell the colour of its share of the busiest region.
  const drawn = await page.waitForFunction(() => {
    const c = document.getElementById('heat-writes');
    const h = JSON.parse(c.dataset.heat || '{}');
    if (!h.latest || h.latest.filter((v) => v > 0).length !== 1) return false;
    const rowH = (c.height - 18) / h.regions;
    const top = Math.max(...h.latest.map((v) => v || 0));
    const g = c.getContext('2d');
    const cells = h.latest.map((v, ri) => {
      const px = g.getImageData(c.width - 2, Math.floor(ri * rowH + rowH / 2), 1, 1).data;
      return { got: `rgb(${px[0]},${px[1]},${px[2]})`, want: window.e2eModel.heatColor((v || 0) / top) };
    });
    return cells;
  }, null, { timeout: WAIT });
  const cells = await drawn.jsonValue();
  for (const [ri, cell] of cells.entries()) assert.equal(cell.got, cell.want, `region ${ri + 1}`);
  assert.equal(cells.filter((cell) => cell.got === 'rgb(230,57,70)').length, 1, JSON.stringify(cells));
  assert.equal(cells.filter((cell) => cell.got === 'rgb(18,24,48)').length, cells.length - 1, JSON.stringify(cells));
  await writing;
  const heat = await latestWrites();
  assert.equal(heat.latest.filter((v) => v > 0).length, 1);
  await shot('12-storage-hotspot');
  await page.selectOption('#heat-scale', 'log');
  assert.deepEqual((await hashParams()).heat, ['log']);
  await shot('13-storage-log-scale');
});

test('the storage view is restored from the URL: table, poll period and heat map scale', async () => {
  const uid = (await (await fetch(`${TSD}/api/storage`)).json()).tables.map((t) => t.name).find((n) => /(^|:)tsdb-uid$/.test(n));
  await open(`#view=storage&table=${encodeURIComponent(uid)}&poll=2&heat=log`);
  await page.waitForFunction(() => document.getElementById('storage-view').dataset.state === 'ready', null, { timeout: WAIT });
  assert.equal(await page.inputValue('#table-select'), uid);
  assert.equal(await page.inputValue('#poll-select'), '2');
  assert.equal(await page.inputValue('#heat-scale'), 'log');
  assert.match(await page.textContent('#table-info h3'), new RegExp(`Table ${uid}`));
  const fams = await page.$$eval('#families tbody tr', (r) => r.map((x) => x.dataset.family));
  assert.deepEqual(fams.sort(), ['id', 'name']);
  // Picking a table in the page goes into the URL.
  const data = (await page.$$eval('#table-select option', (o) => o.map((x) => x.value))).find((t) => /(^|:)tsdb$/.test(t));
  await page.selectOption('#table-select', data);
  assert.deepEqual((await hashParams()).table, [data]);
  await page.selectOption('#poll-select', '1');
  assert.deepEqual((await hashParams()).poll, ['1']);
  assert.deepEqual(await page.$$eval('#families tbody tr', (r) => r.map((x) => x.dataset.family)), ['t']);
});

test('storage API errors are shown in the page, and cleared when the API answers again', async () => {
  // The TSD is made to fail here by intercepting its answers in the browser.
  await page.route('**/api/storage', (route) => route.fulfill({
    status: 503, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 503, message: 'the store is closing', details: 'e2e' } }),
  }));
  await page.route('**/api/stats', (route) => route.fulfill({ status: 500, contentType: 'text/plain', body: 'broken' }));
  try {
    await open('#view=storage&poll=1');
    await page.waitForSelector('#errors .error[data-key="storage"]', { timeout: WAIT });
    await page.waitForSelector('#errors .error[data-key="stats"]', { timeout: WAIT });
    const text = await page.textContent('#errors');
    assert.match(text, /\/api\/storage: 503 the store is closing \(e2e\)/);
    assert.match(text, /\/api\/stats: 500/);
    assert.equal(await page.getAttribute('#storage-view', 'data-state'), 'error');
    await shot('14-storage-error');
  } finally {
    await page.unroute('**/api/storage');
    await page.unroute('**/api/stats');
  }
  await page.waitForFunction(() => document.getElementById('storage-view').dataset.state === 'ready', null, { timeout: WAIT });
  await page.waitForFunction(() => !document.querySelector('#errors .error[data-key="storage"], #errors .error[data-key="stats"]'), null, { timeout: WAIT });
});

test('switching to Storage and back keeps the graph and its queries', async () => {
  await open(`#view=graph&${range3h()}&m=${encodeURIComponent('sum:e2e.cpu')}`);
  await nextPlot(0);
  await page.click('nav a[data-view="storage"]');
  await page.waitForFunction(() => !document.getElementById('storage-view').hidden, null, { timeout: WAIT });
  assert.deepEqual((await hashParams()).view, ['storage']);
  assert.equal(await page.title(), 'ctsdb - storage');
  const g = await runGen();
  await page.click('nav a[data-view="graph"]');
  const p = await nextPlot(g);
  assert.deepEqual((await hashParams()).m, ['sum:e2e.cpu']);
  assert.equal(p.series[0].points, N);
  await page.goBack();
  await page.waitForFunction(() => !document.getElementById('storage-view').hidden, null, { timeout: WAIT });
});

test('scripts and styles reach the browser with their content types', async () => {
  const r = await page.evaluate(async () => {
    const get = async (p) => { const x = await fetch(p); return [x.status, x.headers.get('content-type')]; };
    return { js: await get('/js/app.js'), css: await get('/style.css'), vendor: await get('/vendor/uPlot.iife.min.js') };
  });
  assert.match(r.js[1], /javascript/);
  assert.match(r.css[1], /text\/css/);
  assert.equal(r.vendor[0], 200);
});

test('no script errors happened in any page', async () => {
  assert.deepEqual(pageErrors, []);
});

run({
  async before() {
    assert.ok(TSD, 'TSD_URL is set');
    assert.ok(BASE > 0, 'E2E_BASE is set');
    assert.ok(PORT > 0, 'TSD_PORT is set');
    const v = await fetch(`${TSD}/api/version`);
    assert.equal(v.status, 200, 'the TSD answers /api/version');
    fs.mkdirSync(OUT, { recursive: true });
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctsdb-chromium-'));
    context = await chromium.launchPersistentContext(userDir, {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      viewport: { width: 1400, height: 1000 },
      // The browser's zone is UTC through its environment, not an emulation, so that a test can
      // put it elsewhere for a while (Emulation.setTimezoneOverride) and then clear that.
      env: { ...process.env, TZ: 'UTC' },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context.setDefaultTimeout(WAIT);
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    if (process.env.E2E_CONSOLE) page.on('console', (m) => console.log(`# console: ${m.text()}`));
  },
  async after() {
    if (context) await context.close();
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  },
});
