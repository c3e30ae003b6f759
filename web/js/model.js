// model.js - the dashboard's pure logic, no DOM: OpenTSDB `m=` sub-query strings to and from
// query objects, the page state to and from the URL fragment, time specs, turning /api/query
// results into plottable columns (gaps kept as gaps), and per-region rates for the storage view.
//
// Invariants: formatM(parseM(s)) round-trips every query the builder can express; state in the
// URL is the only state (stateFromHash(hashFromState(s)) equals s after normalize()); NaN, null
// and missing buckets become `null` in plotted columns so uPlot draws them as gaps, while
// alignment holes between series are `undefined` so lines span them.

export const FILTER_TYPES = [
  'literal_or', 'iliteral_or', 'not_literal_or', 'not_iliteral_or',
  'wildcard', 'iwildcard', 'regexp', 'not_key',
];
export const FILL_POLICIES = ['none', 'nan', 'null', 'zero'];
export const TIME_PRESETS = ['5m', '15m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '30d', '90d', '1y'];
export const REFRESH_CHOICES = [0, 5, 10, 30, 60, 300];

const UNIT_MS = {
  ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000, w: 7 * 86400000,
  n: 30 * 86400000, y: 365 * 86400000,
};

// --- splitting helpers -----------------------------------------------------------------------

// Splits `s` on `sep` where it is outside {} and () nesting.
function splitTop(s, sep) {
  const out = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '{' || ch === '(') depth++;
    else if ((ch === '}' || ch === ')') && depth > 0) depth--;
    if (ch === sep && depth === 0) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out;
}

// --- queries ---------------------------------------------------------------------------------

export function newQuery() {
  return {
    aggregator: 'sum',
    metric: '',
    filters: [],
    downsample: { interval: '', fn: 'avg', fill: 'none' },
    rate: false,
    rateOptions: { counter: false, counterMax: '', resetValue: '', dropResets: false },
    explicitTags: false,
    axis: 'left',
  };
}

// A tag filter value as written in `m=`: `*`, `type(expr)`, a glob, or a literal (a|b).
export function parseFilterValue(v) {
  const m = /^([A-Za-z_]+)\((.*)\)$/s.exec(v);
  if (m && FILTER_TYPES.includes(m[1].toLowerCase())) {
    return { type: m[1].toLowerCase(), filter: m[2] };
  }
  if (v === '*') return { type: 'wildcard', filter: '*' };
  if (v.includes('*')) return { type: 'iwildcard', filter: v };
  return { type: 'literal_or', filter: v };
}

export function formatFilterValue(f) {
  if (f.type === 'literal_or' && !f.filter.includes('*') && !/^[A-Za-z_]+\(.*\)$/s.test(f.filter)) {
    return f.filter;
  }
  if (f.type === 'wildcard' && f.filter === '*') return '*';
  return `${f.type}(${f.filter})`;
}

function parseBraces(body, groupBy, filters) {
  if (body.trim() === '') return;
  for (const pair of splitTop(body, ',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`invalid tag filter '${pair}' (expected key=value)`);
    const f = parseFilterValue(pair.slice(eq + 1));
    filters.push({ tagk: pair.slice(0, eq), type: f.type, filter: f.filter, groupBy });
  }
}

function parseRate(part, q) {
  q.rate = true;
  const m = /^rate(?:\{(.*)\})?$/is.exec(part);
  if (!m) throw new Error(`invalid rate specifier '${part}'`);
  if (m[1] === undefined) return;
  const bits = m[1].split(',');
  const first = bits[0] || '';
  q.rateOptions.counter = /counter$/i.test(first);
  q.rateOptions.dropResets = /^dropcounter$/i.test(first);
  q.rateOptions.counterMax = bits[1] || '';
  q.rateOptions.resetValue = bits[2] || '';
}

// Parses an OpenTSDB sub-query `AGG[:DOWNSAMPLE][:RATE]:METRIC{groupby}{filters}`.
// Throws Error with a readable message on malformed input.
export function parseM(m) {
  const parts = splitTop(m, ':');
  if (parts.length < 2) throw new Error(`invalid query '${m}': not enough :-separated parts`);
  if (parts.length > 5) throw new Error(`invalid query '${m}': too many :-separated parts`);
  const q = newQuery();
  q.aggregator = parts[0];
  for (const p of parts.slice(1, -1)) {
    if (/^rate/i.test(p)) {
      parseRate(p, q);
    } else if (/^[0-9]/.test(p)) {
      const ds = p.split('-');
      if (ds.length < 2 || ds.length > 3) throw new Error(`invalid downsampling specifier '${p}'`);
      q.downsample = { interval: ds[0], fn: ds[1], fill: ds[2] || 'none' };
    } else if (p === 'explicit_tags') {
      q.explicitTags = true;
    }
  }
  const metricPart = parts[parts.length - 1];
  const brace = metricPart.indexOf('{');
  if (brace < 0) {
    q.metric = metricPart;
    return q;
  }
  q.metric = metricPart.slice(0, brace);
  const groups = [];
  let i = brace;
  while (i < metricPart.length) {
    if (metricPart[i] !== '{') throw new Error(`invalid query '${m}': text after tags`);
    let depth = 0;
    let j = i;
    for (; j < metricPart.length; j++) {
      const ch = metricPart[j];
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      else if (ch === '}' && depth <= 0) break;
    }
    if (j >= metricPart.length) throw new Error(`invalid query '${m}': missing '}'`);
    groups.push(metricPart.slice(i + 1, j));
    i = j + 1;
  }
  if (groups.length > 2) throw new Error(`invalid query '${m}': more than two tag groups`);
  parseBraces(groups[0], true, q.filters);
  if (groups.length > 1) parseBraces(groups[1], false, q.filters);
  return q;
}

// Formats a query object as an `m=` string. Filters still being typed (no key, or no value
// for a type that needs one) are left out.
export function formatM(q) {
  const parts = [q.aggregator || 'sum'];
  const ds = q.downsample;
  if (ds && ds.interval) {
    parts.push(`${ds.interval}-${ds.fn || 'avg'}${ds.fill && ds.fill !== 'none' ? `-${ds.fill}` : ''}`);
  }
  if (q.rate) {
    const o = q.rateOptions || {};
    if (o.counter || o.dropResets) {
      const head = o.dropResets ? 'dropcounter' : 'counter';
      const bits = [head, o.counterMax || '', o.resetValue || ''];
      while (bits.length > 1 && bits[bits.length - 1] === '') bits.pop();
      parts.push(`rate{${bits.join(',')}}`);
    } else {
      parts.push('rate');
    }
  }
  if (q.explicitTags) parts.push('explicit_tags');
  const used = q.filters.filter((f) => f.tagk && (f.filter !== '' || f.type === 'not_key'));
  const gb = used.filter((f) => f.groupBy).map((f) => `${f.tagk}=${formatFilterValue(f)}`);
  const nf = used.filter((f) => !f.groupBy).map((f) => `${f.tagk}=${formatFilterValue(f)}`);
  let metric = q.metric;
  if (gb.length || nf.length) metric += `{${gb.join(',')}}`;
  if (nf.length) metric += `{${nf.join(',')}}`;
  parts.push(metric);
  return parts.join(':');
}

// --- page state in the URL fragment -----------------------------------------------------------

export function defaultState() {
  return {
    view: 'graph',
    start: '1h-ago',
    end: '',
    queries: [],
    log: false,
    utc: true,
    refresh: 0,
    table: '',
    poll: 5,
    heat: 'poll',
  };
}

// Reads the state from a fragment like `#view=graph&start=1h-ago&m=sum:x&y2=1`. Bad queries are
// reported through `errors` (an array that gets one message per problem) and skipped.
export function stateFromHash(hash, errors = []) {
  const st = defaultState();
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  if (p.get('view') === 'storage') st.view = 'storage';
  if (p.has('start')) st.start = p.get('start');
  if (p.has('end')) st.end = p.get('end');
  const right = new Set((p.get('y2') || '').split(',').filter(Boolean).map(Number));
  p.getAll('m').forEach((m, i) => {
    try {
      const q = parseM(m);
      q.axis = right.has(i) ? 'right' : 'left';
      st.queries.push(q);
    } catch (e) {
      errors.push(e.message);
    }
  });
  st.log = p.get('log') === '1';
  st.utc = p.get('tz') !== 'local';
  const r = Number(p.get('refresh') || 0);
  st.refresh = Number.isFinite(r) && r >= 0 ? r : 0;
  st.table = p.get('table') || '';
  const poll = Number(p.get('poll') || 5);
  st.poll = Number.isFinite(poll) && poll >= 1 ? poll : 5;
  st.heat = p.get('heat') === 'log' ? 'log' : 'poll';
  return st;
}

export function hashFromState(st) {
  const p = new URLSearchParams();
  p.set('view', st.view);
  if (st.view === 'storage') {
    if (st.table) p.set('table', st.table);
    if (st.poll !== 5) p.set('poll', String(st.poll));
    if (st.heat === 'log') p.set('heat', 'log');
    return `#${p.toString()}`;
  }
  p.set('start', st.start);
  if (st.end) p.set('end', st.end);
  const right = [];
  st.queries.forEach((q, i) => {
    p.append('m', formatM(q));
    if (q.axis === 'right') right.push(i);
  });
  if (right.length) p.set('y2', right.join(','));
  if (st.log) p.set('log', '1');
  if (!st.utc) p.set('tz', 'local');
  if (st.refresh) p.set('refresh', String(st.refresh));
  return `#${p.toString()}`;
}

// --- time ------------------------------------------------------------------------------------

export function parseDurationMs(s) {
  const m = /^([0-9]+)(ms|s|m|h|d|w|n|y)$/i.exec(s);
  if (!m) return NaN;
  return Number(m[1]) * UNIT_MS[m[2].toLowerCase()];
}

// An OpenTSDB start/end spec to epoch ms (absolute dates are UTC, as ctsdb reads them);
// '' and 'now' are `now`. Returns NaN when the spec is not understood.
export function parseTimeSpec(s, now) {
  const t = (s || '').trim();
  if (t === '' || t === 'now') return now;
  let m = /^([0-9]+(?:ms|s|m|h|d|w|n|y))-ago$/i.exec(t);
  if (m) return now - parseDurationMs(m[1]);
  m = /^([0-9]+)ms$/.exec(t);
  if (m) return Number(m[1]);
  m = /^[0-9]{10}\.[0-9]{1,3}$/.exec(t);
  if (m) return Math.round(Number(t) * 1000);
  if (/^[0-9]+$/.test(t)) return t.length <= 10 ? Number(t) * 1000 : Number(t);
  m = /^([0-9]{4})\/([0-9]{2})\/([0-9]{2})(?:[- ]([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?)?$/.exec(t);
  if (m) {
    return Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), +(m[6] || 0));
  }
  return NaN;
}

const pad = (n) => String(n).padStart(2, '0');

// Epoch ms to OpenTSDB's absolute form `yyyy/MM/dd-HH:mm:ss` in UTC.
export function formatAbsolute(ms) {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}-` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

// A time spec for a zoom boundary: the absolute UTC form when whole seconds suffice, else ms.
export function zoomSpec(ms) {
  return ms % 1000 === 0 ? formatAbsolute(ms) : `${Math.round(ms)}ms`;
}

// Axis tick labels for epoch-second splits `incr` seconds apart: time of day (with seconds
// under a minute apart), with the date on the first tick and where the day changes; dates alone
// when ticks are a day or more apart.
export function timeTicks(splits, incr, utc) {
  let prevDay = '';
  return splits.map((s) => {
    const d = new Date(s * 1000);
    const Y = utc ? d.getUTCFullYear() : d.getFullYear();
    const M = pad((utc ? d.getUTCMonth() : d.getMonth()) + 1);
    const D = pad(utc ? d.getUTCDate() : d.getDate());
    const h = pad(utc ? d.getUTCHours() : d.getHours());
    const m = pad(utc ? d.getUTCMinutes() : d.getMinutes());
    const sec = pad(utc ? d.getUTCSeconds() : d.getSeconds());
    const day = `${Y}-${M}-${D}`;
    if (incr >= 86400) return day;
    let tod = incr < 60 ? `${h}:${m}:${sec}` : `${h}:${m}`;
    if (incr < 1) tod += `.${String(Math.round((s * 1000) % 1000)).padStart(3, '0')}`;
    const out = day !== prevDay ? `${tod}\n${day}` : tod;
    prevDay = day;
    return out;
  });
}

// --- query results ---------------------------------------------------------------------------

// JSON.parse that also accepts the bare NaN / Infinity tokens OpenTSDB may write for values.
export function parseJsonLenient(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    const fixed = text.replace(/([:[,]\s*)-?(?:NaN|Infinity)(?=\s*[,}\]])/g, '$1null');
    return JSON.parse(fixed);
  }
}

// The legend name of one result group: metric{k=v,...,agg=*}.
export function seriesLabel(r) {
  const tags = Object.keys(r.tags || {}).sort().map((k) => `${k}=${r.tags[k]}`);
  const agg = [...(r.aggregateTags || [])].sort().map((k) => `${k}=*`);
  const all = tags.concat(agg);
  return all.length ? `${r.metric}{${all.join(',')}}` : r.metric;
}

function toNumber(v) {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

// A dps timestamp to ms: the page asks for ms (`ms` flag), but a timestamp below 1e11 can only
// be seconds (1e11 ms is 1973; 1e11 s is year 5138), so a reply in seconds still plots right.
const toMs = (t) => (t < 1e11 ? t * 1000 : t);

// One result's dps (object keyed by timestamp strings, or [[ts, v], ...]) as sorted columns
// { t: [ms...], v: [number|null...] }; NaN/null values are null (a gap).
export function dpsColumns(dps) {
  const pairs = Array.isArray(dps)
    ? dps.map((p) => [toMs(Number(p[0])), toNumber(p[1])])
    : Object.keys(dps || {}).map((k) => [toMs(Number(k)), toNumber(dps[k])]);
  pairs.sort((a, b) => a[0] - b[0]);
  return { t: pairs.map((p) => p[0]), v: pairs.map((p) => p[1]) };
}

function median(xs) {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Inserts a null point in every hole longer than the series' step so the line breaks there.
// The step is the downsample interval when known, else the median spacing of the series; a
// hole counts when it is longer than 2.5 steps (1.5 with a known interval).
export function insertGaps(cols, intervalMs) {
  const { t, v } = cols;
  if (t.length < 3 && !intervalMs) return cols;
  let step = intervalMs;
  let factor = 1.5;
  if (!step) {
    const deltas = [];
    for (let i = 1; i < t.length; i++) deltas.push(t[i] - t[i - 1]);
    step = median(deltas);
    factor = 2.5;
  }
  if (!(step > 0)) return cols;
  const ot = [];
  const ov = [];
  for (let i = 0; i < t.length; i++) {
    if (i > 0 && t[i] - t[i - 1] > step * factor) {
      ot.push(t[i - 1] + step);
      ov.push(null);
    }
    ot.push(t[i]);
    ov.push(v[i]);
  }
  return { t: ot, v: ov };
}

// Aligns several columns on one sorted x axis (seconds as floats, for uPlot). Holes created by
// alignment are `undefined` (spanned); nulls from the data stay null (gaps).
export function alignColumns(list) {
  const xsSet = new Set();
  for (const c of list) for (const t of c.t) xsSet.add(t);
  const xs = Float64Array.from(xsSet).sort();
  const index = new Map();
  xs.forEach((t, i) => index.set(t, i));
  const ys = list.map((c) => {
    const col = new Array(xs.length).fill(undefined);
    for (let i = 0; i < c.t.length; i++) col[index.get(c.t[i])] = c.v[i];
    return col;
  });
  return { x: Array.from(xs, (t) => t / 1000), ys };
}

// Summary of one plotted column (gaps = null entries, i.e. breaks in the line), exposed on the chart element for people and tests.
export function summarizeColumn(v, t) {
  let n = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let first = null;
  let last = null;
  let gaps = 0;
  for (let i = 0; i < v.length; i++) {
    const y = v[i];
    if (y === null) gaps++;
    if (y === null || y === undefined) continue;
    n++;
    if (y < min) min = y;
    if (y > max) max = y;
    sum += y;
    if (first === null) first = [t[i], y];
    last = [t[i], y];
  }
  return { points: n, gaps, min: n ? min : null, max: n ? max : null, sum, first, last };
}

// --- storage ---------------------------------------------------------------------------------

// Per-region request rates between two snapshots: Map regionId -> {read, write} per second.
// A region missing from the previous snapshot (new after a split) or whose counters went back
// (restart) gets no rate.
export function regionRates(prev, cur, dtSec) {
  const out = new Map();
  if (!prev || !(dtSec > 0)) return out;
  for (const [id, c] of cur) {
    const p = prev.get(id);
    if (!p || c.reads < p.reads || c.writes < p.writes) continue;
    out.set(id, { read: (c.reads - p.reads) / dtSec, write: (c.writes - p.writes) / dtSec });
  }
  return out;
}

// A heat colour for t in [0, 1]: dark blue through teal and yellow to red.
export function heatColor(t) {
  const stops = [[18, 24, 48], [21, 94, 117], [42, 157, 143], [233, 196, 106], [244, 162, 97], [230, 57, 70]];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// The colour of a heat map cell or rate cell with no rate yet (the region has not been polled
// twice, or appeared since the last poll): light grey, apart from the whole heatColor ramp, so
// "not polled yet" never reads as "0 requests/s" (heatColor(0), dark blue).
export const NOT_POLLED_COLOR = 'rgb(221,221,221)';

// What a region's rate cell shows: { state, text, level }. state is 'not-polled' (no rate yet:
// rate undefined or null), 'idle' (0 requests/s) or 'active'; level is the heat level in [0, 1]
// (the rate's share of max), null when not polled.
export function rateCell(rate, max) {
  if (rate === undefined || rate === null || !Number.isFinite(rate)) {
    return { state: 'not-polled', text: 'not polled yet', level: null };
  }
  if (!(rate > 0)) return { state: 'idle', text: '0', level: 0 };
  return { state: 'active', text: String(Math.round(rate * 10) / 10), level: max > 0 ? Math.min(1, rate / max) : 0 };
}

// The colour of a cell at heat level `level`, NOT_POLLED_COLOR for null.
export function heatCellColor(level) {
  return level === null || level === undefined ? NOT_POLLED_COLOR : heatColor(level);
}

// A row key (hex) shown for people: printable ASCII as is, other bytes as \xNN.
export function displayKey(hex) {
  if (!hex) return '';
  let out = '';
  for (let i = 0; i + 1 < hex.length; i += 2) {
    const b = parseInt(hex.slice(i, i + 2), 16);
    out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${hex.slice(i, i + 2).toUpperCase()}`;
  }
  return out;
}
