// storage.js - the Storage view: the store's tables, their families and settings, and each
// region with its key range and read/write request rates, drawn as heat maps (regions down,
// time across) so that a hot region - the reason for salting and pre-splitting - stands out;
// plus the TSD's ingest rate and block-cache hit ratio over time from /api/stats.
//
// It polls /api/storage and /api/stats every `state.poll` seconds while the view is open.
// Rates are differences of the cumulative counters between two polls (model.regionRates). The
// regions count requests (a batch of puts, a get or a scan), not datapoints as the ingest chart
// and cards do, and the page says so. A region with no rate yet (before the second poll, or new
// since the last) is "not polled yet": grey (model.NOT_POLLED_COLOR) on the heat maps and in
// the table, apart from an idle region's 0/s (the coldest heat colour). History lives in memory only (a reload starts over). The root element
// carries data-state (loading|ready|error), the heat map canvases data-heat (the latest
// column, the busiest cell, how many regions had requests in the history) and the two charts
// over time data-series (polls, points with a value, min, max, latest) for the tests.

import { apiGet } from './api.js';
import { regionRates, heatColor, heatCellColor, rateCell, NOT_POLLED_COLOR, displayKey, timeTicks } from './model.js';
import { fmtValue } from './graph.js';

const HISTORY = 120;
const POLL_CHOICES = [1, 2, 5, 10, 30];

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (v === true) e.setAttribute(k, '');
    else if (v !== false && v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

function fmtBytes(n) {
  if (n === undefined || n === null || Number.isNaN(Number(n))) return '';
  let v = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

function pick(o, ...names) {
  for (const n of names) if (o && o[n] !== undefined && o[n] !== null) return o[n];
  return undefined;
}

// A region boundary as the TSD sends it: hex (`start_key`, `end_key`; empty = table edge).
function keyText(r, base) {
  const hex = pick(r, base, `${base}_hex`);
  return hex === undefined ? '' : displayKey(String(hex));
}

// Family attributes in HBase's words, with values for people.
const FAMILY_ATTRS = [
  ['versions', 'VERSIONS', String],
  ['min_versions', 'MIN_VERSIONS', String],
  // WC_TTL_FOREVER is INT32_MAX seconds, as in HBase.
  ['ttl_s', 'TTL', (v) => (Number(v) >= 2147483647 || Number(v) <= 0 ? 'FOREVER' : `${v} s (${fmtDuration(Number(v))})`)],
  ['compression', 'COMPRESSION', String],
  ['bloom', 'BLOOMFILTER', String],
  ['blocksize', 'BLOCKSIZE', (v) => `${fmtBytes(v)}`],
  ['blockcache', 'BLOCKCACHE', String],
];

function fmtDuration(s) {
  const units = [['y', 365 * 86400], ['d', 86400], ['h', 3600], ['m', 60]];
  for (const [u, n] of units) if (s >= n && s % n === 0) return `${s / n}${u}`;
  return `${s}s`;
}

// Normalises /api/storage ({store: {...}, tables: [{name, enabled, families, regions}]}) to
// {store, tables: [{name, attrs, families: [{name, attrs: [[LABEL, text]...]}], regions}]}.
export function normalizeStorage(body) {
  const tables = Array.isArray(body) ? body : (body && body.tables) || [];
  const out = tables.map((t) => {
    const attrs = {};
    for (const [k, v] of Object.entries(t)) {
      if (!['name', 'families', 'regions'].includes(k) && (typeof v !== 'object' || v === null)) attrs[k] = v;
    }
    const families = (t.families || []).map((f) => {
      const fa = [];
      for (const [k, label, fmt] of FAMILY_ATTRS) if (f[k] !== undefined) fa.push([label, fmt(f[k])]);
      for (const [k, v] of Object.entries(f)) {
        if (k !== 'name' && !FAMILY_ATTRS.some((a) => a[0] === k) && (typeof v !== 'object' || v === null)) fa.push([k.toUpperCase(), String(v)]);
      }
      return { name: f.name, attrs: fa };
    });
    const regions = (t.regions || []).map((r, i) => ({
      id: String(pick(r, 'id') ?? i),
      start: keyText(r, 'start_key'),
      end: keyText(r, 'end_key'),
      reads: Number(pick(r, 'read_requests') || 0),
      writes: Number(pick(r, 'write_requests') || 0),
      memstore: pick(r, 'memstore_bytes'),
      files: pick(r, 'store_files'),
      fileBytes: pick(r, 'store_file_bytes'),
    }));
    return { name: t.name, attrs, families, regions };
  });
  return { store: (body && body.store) || null, tables: out };
}

// Finds a stat's numeric value in the /api/stats array: metric name and optional tags to match.
function statValue(stats, metric, tags = {}) {
  let sum = null;
  for (const s of stats) {
    if (s.metric !== metric) continue;
    if (!Object.entries(tags).every(([k, v]) => s.tags && s.tags[k] === v)) continue;
    const v = Number(s.value);
    if (Number.isFinite(v)) sum = (sum || 0) + v;
  }
  return sum;
}

// The ingest counter (datapoints in the write-ahead log; points accepted if that is missing)
// and the block-cache hit/miss counters, as the TSD names them in /api/stats.
const INGEST = [['tsd.datapoints.written', {}], ['tsd.datapoints.added', {}]];
const CACHE_HITS = [['tsd.storage.cache.hits', {}]];
const CACHE_MISSES = [['tsd.storage.cache.misses', {}]];

function firstStat(stats, cands) {
  for (const [m, tags] of cands) {
    const v = statValue(stats, m, tags);
    if (v !== null) return { v, name: m };
  }
  return null;
}

export function createStorageView(root, ctx) {
  let timer = 0;
  let prevSnap = null;
  let prevStats = null;
  let prevT = 0;
  let inFlight = false;
  let tables = [];
  let store = null;
  // per table: { ids: [regionId...] (latest order), cols: [{t, rates: Map}] }
  const history = new Map();
  const statHistory = { t: [], ingest: [], hit: [] };
  let ingestChart = null;
  let cacheChart = null;

  const tableSel = el('select', { id: 'table-select' });
  const pollSel = el('select', { id: 'poll-select' });
  for (const s of POLL_CHOICES) pollSel.append(el('option', { value: s, text: `every ${s}s` }));
  const pauseBox = el('input', { id: 'pause', type: 'checkbox' });
  const heatSel = el('select', { id: 'heat-scale', title: 'how heat map cells are coloured' },
    el('option', { value: 'poll', text: 'colour: share of the busiest region per poll' }),
    el('option', { value: 'log', text: 'colour: rate, log scale over all polls' }));
  const summary = el('div', { id: 'store-summary', class: 'cards' });
  const tableInfo = el('div', { id: 'table-info' });
  const heatReads = el('canvas', { id: 'heat-reads', class: 'heat', width: 600, height: 200 });
  const heatWrites = el('canvas', { id: 'heat-writes', class: 'heat', width: 600, height: 200 });
  const regionTable = el('table', { id: 'regions', class: 'grid' });
  const ingestEl = el('div', { id: 'ingest-chart', class: 'mini-chart' });
  const cacheEl = el('div', { id: 'cache-chart', class: 'mini-chart' });
  root.append(
    el('div', { class: 'toolbar' },
      el('label', {}, 'table ', tableSel),
      el('label', {}, 'poll ', pollSel),
      el('label', {}, pauseBox, ' pause'),
      heatSel),
    summary,
    el('div', { class: 'two' },
      el('section', {}, el('h3', { text: 'Ingest rate (datapoints/s)' }), ingestEl),
      el('section', {}, el('h3', { text: 'Block cache hit ratio' }), cacheEl)),
    tableInfo,
    el('h3', { text: 'Region heat map' }),
    el('p', { id: 'region-counts-hint', class: 'hint', text: 'Regions count requests, not datapoints: a write request is one batch of puts applied to the region (it may carry many datapoints), a read request one get or scan. The ingest chart and cards above count datapoints. One row per region in key order, one column per poll; brighter = more requests per second. A single bright row is a hotspot: salting and pre-splitting spread the load.' }),
    el('div', { class: 'two' },
      el('section', {}, el('h4', { text: 'Write requests/s' }), heatWrites),
      el('section', {}, el('h4', { text: 'Read requests/s' }), heatReads)),
    el('div', { id: 'heat-legend', class: 'legend-bar' },
      el('span', { class: 'swatch not-polled', 'data-state': 'not-polled' }),
      el('span', { text: 'not polled yet' }),
      el('span', { class: 'swatch idle', 'data-state': 'idle' }),
      el('span', { text: '0 requests/s' }),
      el('span', { class: 'ramp' }), el('span', { text: 'busiest' })),
    el('h3', { text: 'Regions' }),
    regionTable);

  tableSel.addEventListener('change', () => { ctx.state.table = tableSel.value; ctx.commit({ norun: true }); });
  pollSel.addEventListener('change', () => { ctx.state.poll = Number(pollSel.value); ctx.commit({}); });
  pauseBox.addEventListener('change', () => schedule());
  heatSel.addEventListener('change', () => { ctx.state.heat = heatSel.value; ctx.commit({ norun: true }); render(); });

  function schedule() {
    clearInterval(timer);
    timer = 0;
    if (!pauseBox.checked) timer = setInterval(poll, ctx.state.poll * 1000);
  }

  async function poll() {
    if (inFlight || document.hidden) return;
    inFlight = true;
    const t = Date.now() / 1000;
    try {
      const [st, stats] = await Promise.allSettled([apiGet('/api/storage'), apiGet('/api/stats')]);
      if (st.status === 'fulfilled') {
        ctx.clearError('storage');
        const norm = normalizeStorage(st.value);
        tables = norm.tables;
        store = norm.store;
        const snap = new Map();
        for (const tb of tables) for (const r of tb.regions) snap.set(`${tb.name}/${r.id}`, r);
        const rates = regionRates(prevSnap, snap, t - prevT);
        for (const tb of tables) {
          const h = history.get(tb.name) || { cols: [] };
          h.ids = tb.regions.map((r) => r.id);
          if (prevSnap) {
            const m = new Map();
            for (const r of tb.regions) {
              const rr = rates.get(`${tb.name}/${r.id}`);
              if (rr) m.set(r.id, rr);
            }
            h.cols.push({ t, rates: m });
            if (h.cols.length > HISTORY) h.cols.shift();
          }
          history.set(tb.name, h);
        }
        prevSnap = snap;
        root.dataset.state = 'ready';
      } else {
        root.dataset.state = 'error';
        ctx.error('storage', st.reason);
      }
      if (stats.status === 'fulfilled' && Array.isArray(stats.value)) {
        ctx.clearError('stats');
        addStats(stats.value, t);
      } else if (stats.status === 'rejected') {
        ctx.error('stats', stats.reason);
      }
      prevT = t;
      render();
    } finally {
      inFlight = false;
    }
  }

  function addStats(stats, t) {
    const ing = firstStat(stats, INGEST);
    const hits = firstStat(stats, CACHE_HITS);
    const miss = firstStat(stats, CACHE_MISSES);
    const cur = { ing: ing && ing.v, hits: hits && hits.v, miss: miss && miss.v };
    let ingestRate = null;
    let hitRatio = null;
    if (prevStats && t > prevT) {
      if (cur.ing !== null && prevStats.ing !== null && cur.ing >= prevStats.ing) {
        ingestRate = (cur.ing - prevStats.ing) / (t - prevT);
      }
      if (cur.hits !== null && cur.miss !== null && prevStats.hits !== null) {
        const dh = cur.hits - prevStats.hits;
        const dm = cur.miss - prevStats.miss;
        hitRatio = dh + dm > 0 ? dh / (dh + dm) : null;
      }
      statHistory.t.push(t);
      statHistory.ingest.push(ingestRate);
      statHistory.hit.push(hitRatio);
      if (statHistory.t.length > HISTORY) {
        statHistory.t.shift();
        statHistory.ingest.shift();
        statHistory.hit.shift();
      }
    }
    prevStats = cur;
    const totalRatio = cur.hits !== null && cur.miss !== null && cur.hits + cur.miss > 0
      ? cur.hits / (cur.hits + cur.miss) : null;
    const card = (id, label, value) => el('div', { class: 'card', id },
      el('div', { class: 'card-value', text: value }), el('div', { class: 'card-label', text: label }));
    const n = (v) => (v === undefined || v === null ? '—' : fmtValue(Number(v)));
    const cards = [
      card('card-ingest', 'datapoints/s now', ingestRate === null ? '—' : fmtValue(Math.round(ingestRate * 10) / 10)),
      card('card-points', ing ? `datapoints (${ing.name})` : 'no ingest counter in /api/stats', cur.ing === null ? '—' : fmtValue(cur.ing)),
      card('card-cache', 'block cache hit ratio since start', totalRatio === null ? '—' : `${(totalRatio * 100).toFixed(1)}%`),
      card('card-tables', 'tables', String(tables.length)),
      card('card-regions', 'regions', String(tables.reduce((a, tb) => a + tb.regions.length, 0))),
    ];
    if (store) {
      cards.push(
        card('card-cache-bytes', 'block cache used / capacity', `${fmtBytes(store.cache_bytes)} / ${fmtBytes(store.cache_capacity_bytes)}`),
        card('card-flushes', 'memstore flushes', n(store.flushes)),
        card('card-compactions', 'compactions minor / major', `${n(store.minor_compactions)} / ${n(store.major_compactions)}`),
        card('card-splits', 'region splits', n(store.splits)),
        card('card-wal', 'write-ahead log written', fmtBytes(store.wal_bytes)));
    }
    summary.replaceChildren(...cards);
    drawMini();
  }

  function drawMini() {
    if (!window.uPlot) return;
    const w = Math.max(280, ingestEl.clientWidth || 400);
    const mk = (elm, label, color, range, data) => new window.uPlot({
      width: w, height: 160,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: range ? { range } : {} },
      series: [{}, { label, stroke: color, width: 1.5, fill: `${color}22`, spanGaps: false, value: (u, v) => fmtValue(v) }],
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      axes: [{ grid: { stroke: '#eee' }, space: 70, values: (u, splits, ai, space, incr) => timeTicks(splits, incr, true) }, { grid: { stroke: '#eee' }, size: 60, values: (u, s) => s.map(fmtValue) }],
    }, data, elm);
    if (!ingestChart) ingestChart = mk(ingestEl, 'datapoints/s', '#1f77b4', null, [statHistory.t, statHistory.ingest]);
    else ingestChart.setData([statHistory.t, statHistory.ingest]);
    if (!cacheChart) cacheChart = mk(cacheEl, 'hit ratio', '#2ca02c', [0, 1], [statHistory.t, statHistory.hit]);
    else cacheChart.setData([statHistory.t, statHistory.hit]);
    ingestEl.dataset.series = JSON.stringify(miniSummary(statHistory.ingest));
    cacheEl.dataset.series = JSON.stringify(miniSummary(statHistory.hit));
  }

  // What a mini chart plots, for people reading the DOM and for the tests: how many polls it
  // holds, how many have a value (null = no change to measure, drawn as a gap), their range and
  // the latest value.
  function miniSummary(v) {
    const vals = v.filter((x) => x !== null && Number.isFinite(x));
    return {
      polls: v.length,
      points: vals.length,
      min: vals.length ? Math.min(...vals) : null,
      max: vals.length ? Math.max(...vals) : null,
      last: v.length ? v[v.length - 1] : null,
    };
  }

  function render() {
    const names = tables.map((tb) => tb.name);
    if (!ctx.state.table || !names.includes(ctx.state.table)) {
      ctx.state.table = names.includes('tsdb') ? 'tsdb' : (names.find((n) => /(^|:)tsdb$/.test(n)) || names[0] || '');
    }
    if ([...tableSel.options].map((o) => o.value).join('\n') !== names.join('\n')) {
      tableSel.replaceChildren(...names.map((n) => el('option', { value: n, text: n })));
    }
    tableSel.value = ctx.state.table;
    const tb = tables.find((x) => x.name === ctx.state.table);
    if (!tb) {
      tableInfo.replaceChildren(el('p', { text: 'The store has no tables yet.' }));
      regionTable.replaceChildren();
      return;
    }
    renderTableInfo(tb);
    const h = history.get(tb.name) || { ids: [], cols: [] };
    drawHeat(heatWrites, h, tb, 'write');
    drawHeat(heatReads, h, tb, 'read');
    renderRegions(tb, h);
  }

  function renderTableInfo(tb) {
    const attrRows = Object.entries(tb.attrs).map(([k, v]) => el('tr', {}, el('th', { text: k }), el('td', { text: String(v) })));
    const keys = [];
    for (const f of tb.families) for (const [k] of f.attrs) if (!keys.includes(k)) keys.push(k);
    const famTable = el('table', { id: 'families', class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', { text: 'family' }), ...keys.map((k) => el('th', { text: k })))),
      el('tbody', {}, ...tb.families.map((f) => {
        const m = new Map(f.attrs);
        return el('tr', { 'data-family': f.name },
          el('td', { text: f.name }), ...keys.map((k) => el('td', { text: m.has(k) ? m.get(k) : '' })));
      })));
    tableInfo.replaceChildren(
      el('h3', { text: `Table ${tb.name}` }),
      attrRows.length ? el('table', { id: 'table-attrs', class: 'kv' }, el('tbody', {}, ...attrRows)) : '',
      el('h4', { text: 'Column families' }),
      famTable);
  }

  // The colour level of one cell: by default its share of the busiest region in the same poll
  // (a hotspot stands out whatever the total load); `heat=log` compares with the busiest cell
  // of the whole history on a log scale instead.
  function heatLevel(v, col, kind, max) {
    if (!(v > 0)) return 0;
    if (ctx.state.heat === 'log') return max > 0 ? Math.log1p(v) / Math.log1p(max) : 0;
    let colMax = 0;
    for (const x of col.rates.values()) colMax = Math.max(colMax, x[kind]);
    return colMax > 0 ? v / colMax : 0;
  }

  function drawHeat(canvas, h, tb, kind) {
    const ids = tb.regions.map((r) => r.id);
    const cols = h.cols;
    const width = Math.max(300, canvas.parentElement.clientWidth - 4 || 600);
    const rowH = Math.max(4, Math.min(24, Math.floor(360 / Math.max(1, ids.length))));
    const labelW = 36;
    canvas.width = width;
    canvas.height = rowH * ids.length + 18;
    const g = canvas.getContext('2d');
    g.fillStyle = '#fff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    let max = 0;
    for (const c of cols) for (const v of c.rates.values()) max = Math.max(max, v[kind]);
    const colW = (width - labelW) / Math.max(30, cols.length);
    const x0 = width - cols.length * colW;
    g.font = '10px sans-serif';
    g.textBaseline = 'middle';
    ids.forEach((id, ri) => {
      g.fillStyle = '#555';
      if (rowH >= 9) g.fillText(String(ri + 1), 2, ri * rowH + rowH / 2);
      g.fillStyle = NOT_POLLED_COLOR; // until a poll gives this row a rate
      g.fillRect(labelW, ri * rowH, width - labelW, rowH - (rowH > 6 ? 1 : 0));
    });
    cols.forEach((c, ci) => {
      ids.forEach((id, ri) => {
        const v = c.rates.get(id);
        if (!v) return;
        g.fillStyle = heatColor(heatLevel(v[kind], c, kind, max));
        g.fillRect(x0 + ci * colW, ri * rowH, Math.ceil(colW), rowH - (rowH > 6 ? 1 : 0));
      });
    });
    g.fillStyle = '#555';
    g.fillText(cols.length ? `max ${fmtValue(Math.round(max * 10) / 10)} requests/s · ${cols.length} polls` : 'not polled yet: rates appear after the second poll', labelW, ids.length * rowH + 9);
    const last = cols[cols.length - 1];
    canvas.dataset.heat = JSON.stringify({
      regions: ids.length,
      columns: cols.length,
      max,
      latest: ids.map((id) => (last && last.rates.get(id) ? last.rates.get(id)[kind] : null)),
      active: ids.filter((id) => cols.some((c) => c.rates.get(id) && c.rates.get(id)[kind] > 0)).length,
    });
  }

  function renderRegions(tb, h) {
    const last = h.cols[h.cols.length - 1];
    let maxR = 0;
    let maxW = 0;
    if (last) for (const v of last.rates.values()) { maxR = Math.max(maxR, v.read); maxW = Math.max(maxW, v.write); }
    // A rate cell: not polled yet (grey, says so), idle (0, the coldest heat colour) or active.
    const cell = (rate, max) => {
      const c = rateCell(rate, max);
      const td = el('td', { class: `num rate ${c.state}`, 'data-rate-state': c.state,
        text: c.state === 'active' ? fmtValue(Number(c.text)) : c.text });
      td.style.background = heatCellColor(c.level);
      td.style.color = c.level === null || c.level > 0.55 ? '#111' : '#fff';
      return td;
    };
    const rows = tb.regions.map((r, i) => {
      const rr = last && last.rates.get(r.id);
      return el('tr', { 'data-region': r.id, 'data-writes': r.writes, 'data-reads': r.reads },
        el('td', { class: 'num', text: String(i + 1) }),
        el('td', { class: 'key', text: r.start || '(start)' }),
        el('td', { class: 'key', text: r.end || '(end)' }),
        cell(rr ? rr.write : null, maxW),
        cell(rr ? rr.read : null, maxR),
        el('td', { class: 'num', text: fmtValue(r.writes) }),
        el('td', { class: 'num', text: fmtValue(r.reads) }),
        el('td', { class: 'num', text: fmtBytes(r.memstore) }),
        el('td', { class: 'num', text: r.files === undefined ? '' : String(r.files) }),
        el('td', { class: 'num', text: fmtBytes(r.fileBytes) }));
    });
    regionTable.replaceChildren(
      el('thead', {}, el('tr', {}, ...['#', 'start key', 'end key', 'write requests/s', 'read requests/s',
        'write requests', 'read requests', 'memstore', 'files', 'file size'].map((x) => el('th', { text: x })))),
      el('tbody', {}, ...rows));
  }

  return {
    update() {
      heatSel.value = ctx.state.heat;
      pollSel.value = String(ctx.state.poll);
      if (pollSel.value !== String(ctx.state.poll)) {
        pollSel.append(el('option', { value: ctx.state.poll, text: `every ${ctx.state.poll}s`, selected: true }));
      }
      root.dataset.state = root.dataset.state || 'loading';
      if (tables.length) render();
      schedule();
      poll();
    },
    stop() {
      clearInterval(timer);
      timer = 0;
    },
  };
}
