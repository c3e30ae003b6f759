// model.test.mjs - tests of the dashboard's pure logic (web/js/model.js) in node: the OpenTSDB
// m= grammar both ways, URL state round trips, time specs, lenient JSON, gap handling, series
// alignment, region rates, and reading /api/storage. Run by tests/integration/test_web_model.sh.
import assert from 'node:assert/strict';
import { test, run } from './harness.mjs';
import {
  parseM, formatM, newQuery, parseFilterValue, formatFilterValue, stateFromHash, hashFromState,
  defaultState, parseTimeSpec, formatAbsolute, zoomSpec, parseJsonLenient, seriesLabel,
  dpsColumns, insertGaps, alignColumns, summarizeColumn, regionRates, displayKey, timeTicks,
  parseDurationMs, rateCell, heatCellColor, heatColor, NOT_POLLED_COLOR,
} from '../../web/js/model.js';
import { normalizeStorage } from '../../web/js/storage.js';

test('parseM reads aggregator, metric and nothing else for a bare query', () => {
  const q = parseM('sum:sys.cpu.user');
  assert.equal(q.aggregator, 'sum');
  assert.equal(q.metric, 'sys.cpu.user');
  assert.deepEqual(q.filters, []);
  assert.equal(q.rate, false);
  assert.equal(q.downsample.interval, '');
});

test('parseM reads downsample with fill, counter rate options and both tag groups', () => {
  const q = parseM('avg:1m-max-nan:rate{counter,1000,5}:net.bytes{host=*,dc=lga|ewr}{cpu=regexp(0|1)}');
  assert.deepEqual(q.downsample, { interval: '1m', fn: 'max', fill: 'nan' });
  assert.equal(q.rate, true);
  assert.deepEqual(q.rateOptions, { counter: true, counterMax: '1000', resetValue: '5', dropResets: false });
  assert.deepEqual(q.filters, [
    { tagk: 'host', type: 'wildcard', filter: '*', groupBy: true },
    { tagk: 'dc', type: 'literal_or', filter: 'lga|ewr', groupBy: true },
    { tagk: 'cpu', type: 'regexp', filter: '0|1', groupBy: false },
  ]);
});

test('parseM accepts middle parts in any order and dropcounter', () => {
  const q = parseM('sum:rate{dropcounter,,10}:10s-avg:m{}{host=not_key()}');
  assert.equal(q.rateOptions.dropResets, true);
  assert.equal(q.rateOptions.counter, true);
  assert.equal(q.rateOptions.counterMax, '');
  assert.equal(q.rateOptions.resetValue, '10');
  assert.equal(q.downsample.interval, '10s');
  assert.deepEqual(q.filters, [{ tagk: 'host', type: 'not_key', filter: '', groupBy: false }]);
});

test('parseM rejects malformed queries with a message', () => {
  assert.throws(() => parseM('sys.cpu'), /not enough/);
  assert.throws(() => parseM('a:b:c:d:e:f'), /too many/);
  assert.throws(() => parseM('sum:m{host=a'), /missing '}'/);
  assert.throws(() => parseM('sum:m{host}'), /key=value/);
  assert.throws(() => parseM('sum:1m:m'), /downsampling/);
});

test('filter values map to OpenTSDB filter types and back', () => {
  assert.deepEqual(parseFilterValue('*'), { type: 'wildcard', filter: '*' });
  assert.deepEqual(parseFilterValue('web*'), { type: 'iwildcard', filter: 'web*' });
  assert.deepEqual(parseFilterValue('a|b'), { type: 'literal_or', filter: 'a|b' });
  assert.deepEqual(parseFilterValue('ILITERAL_OR(A)'), { type: 'iliteral_or', filter: 'A' });
  assert.equal(formatFilterValue({ type: 'literal_or', filter: 'a|b' }), 'a|b');
  assert.equal(formatFilterValue({ type: 'literal_or', filter: 'a*' }), 'literal_or(a*)');
  assert.equal(formatFilterValue({ type: 'wildcard', filter: '*' }), '*');
  assert.equal(formatFilterValue({ type: 'not_literal_or', filter: 'x' }), 'not_literal_or(x)');
});

test('formatM(parseM(s)) round-trips every builder feature', () => {
  for (const s of [
    'sum:sys.cpu.user',
    'avg:1m-max-nan:rate{counter,1000,5}:net.bytes{host=*,dc=lga|ewr}{cpu=regexp(0|1)}',
    'zimsum:1h-sum:rate:m{}{host=not_key()}',
    'max:rate{dropcounter,,10}:m{host=iwildcard(WEB*)}',
    'count:5m-count-zero:m{a=b}',
    'sum:explicit_tags:m{a=b}',
  ]) {
    assert.equal(formatM(parseM(s)), s);
  }
});

test('formatM leaves out unfinished filters and writes minimal rate options', () => {
  const q = newQuery();
  q.metric = 'm';
  q.filters.push({ tagk: '', type: 'literal_or', filter: 'x', groupBy: true });
  q.filters.push({ tagk: 'host', type: 'literal_or', filter: '', groupBy: true });
  q.rate = true;
  q.rateOptions.counter = true;
  assert.equal(formatM(q), 'sum:rate{counter}:m');
  q.rateOptions.resetValue = '7';
  assert.equal(formatM(q), 'sum:rate{counter,,7}:m');
});

test('URL state round-trips queries, right axis, log, zone and refresh', () => {
  const st = defaultState();
  st.start = '2026/01/02-03:04:05';
  st.end = '2026/01/03';
  const a = parseM('sum:a{host=*}');
  const b = parseM('avg:1m-avg:rate:b');
  b.axis = 'right';
  st.queries = [a, b];
  st.log = true;
  st.utc = false;
  st.refresh = 30;
  const h = hashFromState(st);
  const back = stateFromHash(h);
  assert.deepEqual(back, st);
  assert.match(h, /y2=1/);
});

test('URL state keeps storage view settings and reports bad queries', () => {
  const st = defaultState();
  st.view = 'storage';
  st.table = 'tsdb';
  st.poll = 2;
  st.heat = 'log';
  assert.deepEqual(stateFromHash(hashFromState(st)), st);
  const errors = [];
  const s2 = stateFromHash('#view=graph&m=nonsense&m=sum:ok', errors);
  assert.equal(s2.queries.length, 1);
  assert.equal(s2.queries[0].metric, 'ok');
  assert.equal(errors.length, 1);
});

test('time specs: relative, absolute UTC, epoch seconds and ms', () => {
  const now = Date.UTC(2026, 10, 22, 12, 0, 0);
  assert.equal(parseTimeSpec('1h-ago', now), now - 3600000);
  assert.equal(parseTimeSpec('2d-ago', now), now - 2 * 86400000);
  assert.equal(parseTimeSpec('', now), now);
  assert.equal(parseTimeSpec('now', now), now);
  assert.equal(parseTimeSpec('2026/11/22-10:30:15', now), Date.UTC(2026, 10, 22, 10, 30, 15));
  assert.equal(parseTimeSpec('2026/11/22 10:30', now), Date.UTC(2026, 10, 22, 10, 30, 0));
  assert.equal(parseTimeSpec('2026/11/22', now), Date.UTC(2026, 10, 22));
  assert.equal(parseTimeSpec('1700000000', now), 1700000000000);
  assert.equal(parseTimeSpec('1700000000123', now), 1700000000123);
  assert.equal(parseTimeSpec('1700000000.5', now), 1700000000500);
  assert.equal(parseTimeSpec('1700000000123ms', now), 1700000000123);
  assert.ok(Number.isNaN(parseTimeSpec('yesterday', now)));
  assert.equal(parseDurationMs('90s'), 90000);
  assert.ok(Number.isNaN(parseDurationMs('1x')));
});

test('absolute formatting and zoom specs read back to the same instant', () => {
  const t = Date.UTC(2026, 0, 2, 3, 4, 5);
  assert.equal(formatAbsolute(t), '2026/01/02-03:04:05');
  assert.equal(parseTimeSpec(zoomSpec(t), 0), t);
  assert.equal(zoomSpec(t + 250), `${t + 250}ms`);
  assert.equal(parseTimeSpec(zoomSpec(t + 250), 0), t + 250);
});

test('lenient JSON turns bare NaN and Infinity values into null', () => {
  const r = parseJsonLenient('[{"metric":"m","dps":{"1":NaN,"2":1.5,"3":-Infinity}}]');
  assert.deepEqual(r[0].dps, { 1: null, 2: 1.5, 3: null });
  assert.deepEqual(parseJsonLenient('{"a":"NaN"}'), { a: 'NaN' });
});

test('series labels list tags sorted and aggregated tags as =*', () => {
  assert.equal(seriesLabel({ metric: 'm', tags: { host: 'a', dc: 'x' }, aggregateTags: ['cpu'] }), 'm{dc=x,host=a,cpu=*}');
  assert.equal(seriesLabel({ metric: 'm', tags: {}, aggregateTags: [] }), 'm');
});

test('dps become sorted columns with NaN, null and quoted NaN as gaps', () => {
  const b = 1700000000000;
  const c = dpsColumns({ [b + 3000]: 3, [b + 1000]: 1, [b + 2000]: null, [b + 4000]: 'NaN', [b + 5000]: '2.5' });
  assert.deepEqual(c.t, [b + 1000, b + 2000, b + 3000, b + 4000, b + 5000]);
  assert.deepEqual(c.v, [1, null, 3, null, 2.5]);
  const a = dpsColumns([[1700000002000, 5], [1700000001000, 4]]);
  assert.deepEqual(a, { t: [1700000001000, 1700000002000], v: [4, 5] });
  // A reply in seconds is read as seconds.
  assert.deepEqual(dpsColumns({ 1700000000: 1 }).t, [1700000000000]);
});

test('a hole longer than the step breaks the line; regular spacing does not', () => {
  const t = [0, 10, 20, 30, 100, 110, 120];
  const g = insertGaps({ t, v: t.map(() => 1) }, 0);
  assert.deepEqual(g.t, [0, 10, 20, 30, 40, 100, 110, 120]);
  assert.equal(g.v[4], null);
  const even = insertGaps({ t: [0, 10, 20, 30], v: [1, 2, 3, 4] }, 0);
  assert.deepEqual(even.t, [0, 10, 20, 30]);
  const ds = insertGaps({ t: [0, 60000, 180000], v: [1, 2, 3] }, 60000);
  assert.deepEqual(ds.t, [0, 60000, 120000, 180000]);
  assert.equal(ds.v[2], null);
});

test('alignment joins x values in seconds; holes are undefined, data nulls stay null', () => {
  const { x, ys } = alignColumns([{ t: [1000, 3000], v: [1, null] }, { t: [2000, 3000], v: [5, 6] }]);
  assert.deepEqual(x, [1, 2, 3]);
  assert.deepEqual(ys[0], [1, undefined, null]);
  assert.deepEqual(ys[1], [undefined, 5, 6]);
});

test('column summary counts only real points', () => {
  const s = summarizeColumn([1, null, 5, undefined, 3], [10, 20, 30, 40, 50]);
  assert.deepEqual(s, { points: 3, gaps: 1, min: 1, max: 5, sum: 9, first: [10, 1], last: [50, 3] });
});

test('region rates are counter deltas per second; new or reset regions get none', () => {
  const prev = new Map([['a', { reads: 10, writes: 100 }], ['b', { reads: 5, writes: 50 }]]);
  const cur = new Map([['a', { reads: 30, writes: 400 }], ['b', { reads: 1, writes: 60 }], ['c', { reads: 9, writes: 9 }]]);
  const r = regionRates(prev, cur, 2);
  assert.deepEqual(r.get('a'), { read: 10, write: 150 });
  assert.equal(r.has('b'), false);
  assert.equal(r.has('c'), false);
  assert.equal(regionRates(null, cur, 2).size, 0);
});

test('a region not polled yet is shown apart from an idle one, in text and colour', () => {
  for (const r of [undefined, null, NaN]) {
    const c = rateCell(r, 10);
    assert.deepEqual(c, { state: 'not-polled', text: 'not polled yet', level: null });
    assert.equal(heatCellColor(c.level), NOT_POLLED_COLOR);
  }
  const idle = rateCell(0, 10);
  assert.deepEqual(idle, { state: 'idle', text: '0', level: 0 });
  assert.equal(heatCellColor(idle.level), heatColor(0));
  assert.notEqual(heatCellColor(null), heatCellColor(0));
  // No rate's colour is the not-polled grey.
  for (let i = 0; i <= 100; i++) assert.notEqual(heatColor(i / 100), NOT_POLLED_COLOR, `level ${i / 100}`);
  assert.deepEqual(rateCell(5, 10), { state: 'active', text: '5', level: 0.5 });
  assert.deepEqual(rateCell(2.345, 0), { state: 'active', text: '2.3', level: 0 });
  assert.equal(rateCell(20, 10).level, 1);
});

test('row keys show printable bytes as text and others escaped', () => {
  assert.equal(displayKey('00000141'), '\\x00\\x00\\x01A');
  assert.equal(displayKey(''), '');
  assert.equal(displayKey('5c'), '\\x5C');
});

test('the /api/storage reply is read into tables, HBase-named family settings and regions', () => {
  const body = {
    store: { cache_hits: 3, cache_misses: 1 },
    tables: [{
      name: 'default:tsdb', enabled: true,
      families: [{ name: 't', versions: 1, min_versions: 0, ttl_s: 2147483647, bloom: 'ROW', compression: 'SNAPPY', blocksize: 65536, blockcache: true },
        { name: 'x', versions: 3, ttl_s: 86400 }],
      regions: [{ id: 7, start_key: '', end_key: '01', read_requests: 5, write_requests: 9, memstore_bytes: 10, store_files: 1, store_file_bytes: 100 },
        { id: 8, start_key: '01', end_key: '', read_requests: 0, write_requests: 2 }],
    }],
  };
  const n = normalizeStorage(body);
  assert.deepEqual(n.store, body.store);
  const t = n.tables[0];
  assert.equal(t.name, 'default:tsdb');
  assert.deepEqual(t.attrs, { enabled: true });
  assert.deepEqual(t.families[0].attrs, [['VERSIONS', '1'], ['MIN_VERSIONS', '0'], ['TTL', 'FOREVER'],
    ['COMPRESSION', 'SNAPPY'], ['BLOOMFILTER', 'ROW'], ['BLOCKSIZE', '64.0 KiB'], ['BLOCKCACHE', 'true']]);
  assert.deepEqual(t.families[1].attrs, [['VERSIONS', '3'], ['TTL', '86400 s (1d)']]);
  assert.deepEqual(t.regions.map((r) => [r.id, r.start, r.end, r.reads, r.writes]),
    [['7', '', '\\x01', 5, 9], ['8', '\\x01', '', 0, 2]]);
});

test('time ticks show the date where the day changes', () => {
  const day = Date.UTC(2026, 10, 22) / 1000;
  const ticks = timeTicks([day - 3600, day, day + 3600], 3600, true);
  assert.deepEqual(ticks, ['23:00\n2026-11-21', '00:00\n2026-11-22', '01:00']);
  assert.deepEqual(timeTicks([day], 86400, true), ['2026-11-22']);
  assert.deepEqual(timeTicks([day + 5], 5, true), ['00:00:05\n2026-11-22']);
  assert.deepEqual(timeTicks([day + 5, day + 5.5], 0.5, true), ['00:00:05.000\n2026-11-22', '00:00:05.500']);
});

run();
