// graph.js - the Graph view: a query builder (metric, tag filters, aggregator, downsample, rate,
// axis; several queries), a time range bar (presets, absolute dates, zoom, auto-refresh) and
// the uPlot chart with its live legend.
//
// Invariants: the builder edits `ctx.state` and then calls ctx.commit(), which writes the URL
// and re-runs the queries, so what is drawn always matches the URL. Each run has a generation
// number; results of an older run are dropped. Every query is its own /api/query request, so
// one failing query is reported on its card while the others still plot. The chart element
// carries `data-state` (idle|loading|ready|error), `data-plot` (JSON summary of each plotted
// series), `data-run` (the generation of the last finished run) and `data-scales` (the y
// scales uPlot drew with, and the run whose data they hold) for people reading the DOM and for
// the end-to-end tests.

import { apiGet, apiUrl } from './api.js';
import { attachAutocomplete } from './autocomplete.js';
import {
  FILTER_TYPES, FILL_POLICIES, TIME_PRESETS, REFRESH_CHOICES, newQuery, formatM, parseTimeSpec,
  parseDurationMs, formatAbsolute, zoomSpec, dpsColumns, insertGaps, alignColumns,
  seriesLabel, summarizeColumn, timeTicks,
} from './model.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
  '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#ad494a'];

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else if (v !== false && v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}

function select(options, value, attrs) {
  const s = el('select', attrs);
  for (const o of options) {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    const opt = el('option', { value: v, text: label });
    if (String(v) === String(value)) opt.selected = true;
    s.append(opt);
  }
  if (![...s.options].some((o) => o.selected) && value !== undefined && value !== '') {
    s.append(el('option', { value, text: value, selected: true }));
  }
  return s;
}

export function fmtValue(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e9 || a < 1e-3)) return v.toExponential(3);
  return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toLocaleString('en-US', { maximumFractionDigits: 4 });
}

export function createGraphView(root, ctx) {
  let aggregators = [];
  let chart = null;
  let chartKey = '';
  let generation = 0;
  let controllers = [];
  let refreshTimer = 0;
  let lastRange = null;
  let dataRun = 0;

  // ---- layout --------------------------------------------------------------------------------
  const presetBar = el('div', { class: 'presets', role: 'group', 'aria-label': 'time range presets' });
  const startIn = el('input', { id: 'start', type: 'text', size: 20, placeholder: '1h-ago', title: 'start: 1h-ago, 2026/11/22-10:00:00, epoch seconds or ms' });
  const endIn = el('input', { id: 'end', type: 'text', size: 20, placeholder: 'now', title: 'end: empty for now' });
  const startPick = el('input', { id: 'start-pick', type: 'datetime-local', step: 1, title: 'pick an absolute start' });
  const endPick = el('input', { id: 'end-pick', type: 'datetime-local', step: 1, title: 'pick an absolute end' });
  const tzSel = select([['utc', 'UTC'], ['local', 'local time']], 'utc', { id: 'tz', title: 'time zone of the axis and the date pickers' });
  const refreshSel = select(REFRESH_CHOICES.map((s) => [s, s === 0 ? 'off' : s < 60 ? `${s}s` : `${s / 60}m`]), 0,
    { id: 'refresh', title: 'auto-refresh' });
  const logBox = el('input', { id: 'log', type: 'checkbox' });
  const runBtn = el('button', { id: 'run', class: 'primary', text: 'Run', type: 'button' });
  const zoomOutBtn = el('button', { id: 'zoom-out', type: 'button', text: 'Zoom out', title: 'double the time range' });
  const copyBtn = el('button', { id: 'copy-link', type: 'button', text: 'Copy link' });
  const toolbar = el('div', { class: 'toolbar' },
    presetBar,
    el('span', { class: 'grp' }, el('label', { for: 'start' }, 'from'), startIn, startPick),
    el('span', { class: 'grp' }, el('label', { for: 'end' }, 'to'), endIn, endPick, tzSel),
    el('span', { class: 'grp' },
      el('label', { title: 'logarithmic y axes' }, logBox, ' log y'),
      el('label', {}, 'refresh ', refreshSel)),
    el('span', { class: 'grp push' }, zoomOutBtn, copyBtn, runBtn));
  const queriesBox = el('div', { id: 'queries' });
  const addBtn = el('button', { id: 'add-query', type: 'button', text: '+ Add query' });
  const quick = el('div', { id: 'quick-metrics', class: 'quick' });
  const chartEl = el('div', { id: 'chart', 'data-state': 'idle', 'data-plot': '{"series":[]}' });
  const emptyMsg = el('div', { id: 'chart-empty', class: 'chart-empty', text: 'Pick a metric to plot it.' });
  const status = el('div', { id: 'status', class: 'status' });
  const apiLinks = el('div', { id: 'api-links', class: 'api-links' });
  root.append(toolbar, queriesBox, el('div', { class: 'row' }, addBtn), quick,
    el('div', { id: 'chart-wrap', class: 'chart-wrap' }, chartEl, emptyMsg), status, apiLinks);

  for (const p of TIME_PRESETS) {
    presetBar.append(el('button', {
      type: 'button', 'data-preset': p, text: p,
      onclick: () => {
        ctx.state.start = `${p}-ago`;
        ctx.state.end = '';
        ctx.commit({ push: true });
      },
    }));
  }

  function setTimeFromInputs() {
    ctx.state.start = startIn.value.trim() || '1h-ago';
    ctx.state.end = endIn.value.trim();
    ctx.commit({ push: true });
  }
  for (const inp of [startIn, endIn]) {
    inp.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') setTimeFromInputs(); });
    inp.addEventListener('change', setTimeFromInputs);
  }
  // A picked date is in the chosen zone; the text field gets the UTC form ctsdb reads.
  function pickToSpec(v) {
    if (!v) return '';
    const [d, t = '00:00:00'] = v.split('T');
    const [y, mo, da] = d.split('-').map(Number);
    const [h, mi, s = 0] = t.split(':').map(Number);
    const ms = ctx.state.utc ? Date.UTC(y, mo - 1, da, h, mi, s) : new Date(y, mo - 1, da, h, mi, s).getTime();
    return formatAbsolute(ms);
  }
  function specToPick(spec) {
    const ms = parseTimeSpec(spec, Date.now());
    if (!spec || Number.isNaN(ms)) return '';
    const d = new Date(ms);
    const p2 = (n) => String(n).padStart(2, '0');
    return ctx.state.utc
      ? `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}T${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`
      : `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  }
  startPick.addEventListener('change', () => { startIn.value = pickToSpec(startPick.value); setTimeFromInputs(); });
  endPick.addEventListener('change', () => { endIn.value = pickToSpec(endPick.value); setTimeFromInputs(); });
  tzSel.addEventListener('change', () => { ctx.state.utc = tzSel.value === 'utc'; ctx.commit({ rebuild: true }); });
  refreshSel.addEventListener('change', () => { ctx.state.refresh = Number(refreshSel.value); ctx.commit({ norun: true }); });
  logBox.addEventListener('change', () => { ctx.state.log = logBox.checked; ctx.commit({ rebuild: true }); });
  runBtn.addEventListener('click', () => run());
  zoomOutBtn.addEventListener('click', () => {
    const now = Date.now();
    const s = parseTimeSpec(ctx.state.start, now);
    const e = parseTimeSpec(ctx.state.end, now);
    if (Number.isNaN(s) || Number.isNaN(e)) return;
    const span = e - s;
    ctx.state.start = zoomSpec(Math.round((s - span / 2) / 1000) * 1000);
    ctx.state.end = e + span / 2 >= now ? '' : zoomSpec(Math.round((e + span / 2) / 1000) * 1000);
    ctx.commit({ push: true });
  });
  copyBtn.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(location.href);
      copyBtn.textContent = 'Copied';
    } catch (e) {
      copyBtn.textContent = 'Copy failed';
    }
    setTimeout(() => { copyBtn.textContent = 'Copy link'; }, 1500);
  });
  addBtn.addEventListener('click', () => {
    ctx.state.queries.push(newQuery());
    renderEditors();
    const inputs = queriesBox.querySelectorAll('.metric-input');
    inputs[inputs.length - 1].focus();
  });

  // ---- query cards ---------------------------------------------------------------------------
  function changed() { ctx.commit({}); }

  function filterRow(q, f, qi) {
    const key = el('input', { class: 'tagk-input', type: 'text', size: 12, placeholder: 'tag key', value: f.tagk });
    const type = select(FILTER_TYPES, f.type, { class: 'filter-type' });
    const val = el('input', { class: 'tagv-input', type: 'text', size: 18, placeholder: 'value, a|b, web*', value: f.filter });
    const gb = el('input', { class: 'groupby', type: 'checkbox' });
    gb.checked = f.groupBy;
    const rm = el('button', { type: 'button', class: 'icon', title: 'remove this filter', text: '×' });
    key.addEventListener('change', () => { f.tagk = key.value.trim(); changed(); });
    val.addEventListener('change', () => { f.filter = val.value; changed(); });
    type.addEventListener('change', () => { f.type = type.value; changed(); });
    gb.addEventListener('change', () => { f.groupBy = gb.checked; changed(); });
    rm.addEventListener('click', () => { q.filters.splice(q.filters.indexOf(f), 1); renderEditors(); changed(); });
    const row = el('div', { class: 'filter' },
      el('span', { class: 'wrap' }, key), type, el('span', { class: 'wrap' }, val),
      el('label', { title: 'one line per value of this tag' }, gb, ' group by'), rm);
    attachAutocomplete(key, 'tagk', { onError: (e) => ctx.error(`suggest-${qi}`, e) });
    // Values of a literal list (a|b) are suggested one item at a time.
    attachAutocomplete(val, 'tagv', {
      separator: '|',
      onError: (e) => ctx.error(`suggest-${qi}`, e),
    });
    return row;
  }

  function queryCard(q, qi) {
    const metric = el('input', { class: 'metric-input', type: 'text', size: 32, placeholder: 'metric name', value: q.metric });
    const agg = select(aggregators.length ? aggregators : [q.aggregator], q.aggregator, { class: 'agg' });
    const axis = select([['left', 'left axis'], ['right', 'right axis']], q.axis, { class: 'axis' });
    const dsInt = el('input', { class: 'ds-interval', type: 'text', size: 6, placeholder: 'e.g. 1m', value: q.downsample.interval, title: 'downsample interval (empty = raw points)' });
    const dsFn = select(aggregators.filter((a) => a !== 'none').length ? aggregators.filter((a) => a !== 'none') : [q.downsample.fn], q.downsample.fn, { class: 'ds-fn' });
    const dsFill = select(FILL_POLICIES, q.downsample.fill, { class: 'ds-fill' });
    const rate = el('input', { class: 'rate', type: 'checkbox' });
    rate.checked = q.rate;
    const counter = el('input', { class: 'counter', type: 'checkbox' });
    counter.checked = q.rateOptions.counter || q.rateOptions.dropResets;
    const cmax = el('input', { class: 'counter-max', type: 'text', size: 10, placeholder: 'max', value: q.rateOptions.counterMax });
    const creset = el('input', { class: 'counter-reset', type: 'text', size: 6, placeholder: 'reset', value: q.rateOptions.resetValue });
    const cdrop = el('input', { class: 'drop-resets', type: 'checkbox' });
    cdrop.checked = q.rateOptions.dropResets;
    const explicit = el('input', { class: 'explicit-tags', type: 'checkbox' });
    explicit.checked = q.explicitTags;
    explicit.addEventListener('change', () => { q.explicitTags = explicit.checked; changed(); });
    const rm = el('button', { type: 'button', class: 'icon remove-query', title: 'remove this query', text: '×' });
    const err = el('div', { class: 'query-error', role: 'alert' });
    const filters = el('div', { class: 'filters' });
    q.filters.forEach((f) => filters.append(filterRow(q, f, qi)));
    const addFilter = el('button', { type: 'button', class: 'add-filter', text: '+ tag filter' });
    addFilter.addEventListener('click', () => {
      q.filters.push({ tagk: '', type: 'literal_or', filter: '', groupBy: true });
      renderEditors();
      const cards = queriesBox.querySelectorAll('.query');
      const keys = cards[qi].querySelectorAll('.tagk-input');
      keys[keys.length - 1].focus();
    });
    metric.addEventListener('change', () => { q.metric = metric.value.trim(); changed(); });
    metric.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { q.metric = metric.value.trim(); changed(); } });
    agg.addEventListener('change', () => { q.aggregator = agg.value; changed(); });
    axis.addEventListener('change', () => { q.axis = axis.value; ctx.commit({ rebuild: true }); });
    dsInt.addEventListener('change', () => { q.downsample.interval = dsInt.value.trim(); changed(); });
    dsFn.addEventListener('change', () => { q.downsample.fn = dsFn.value; changed(); });
    dsFill.addEventListener('change', () => { q.downsample.fill = dsFill.value; changed(); });
    rate.addEventListener('change', () => { q.rate = rate.checked; changed(); });
    counter.addEventListener('change', () => {
      q.rateOptions.counter = counter.checked;
      if (!counter.checked) q.rateOptions.dropResets = false;
      if (counter.checked) q.rate = true;
      renderEditors();
      changed();
    });
    cmax.addEventListener('change', () => { q.rateOptions.counterMax = cmax.value.trim(); changed(); });
    creset.addEventListener('change', () => { q.rateOptions.resetValue = creset.value.trim(); changed(); });
    cdrop.addEventListener('change', () => {
      q.rateOptions.dropResets = cdrop.checked;
      if (cdrop.checked) { q.rateOptions.counter = true; q.rate = true; }
      renderEditors();
      changed();
    });
    rm.addEventListener('click', () => { ctx.state.queries.splice(qi, 1); renderEditors(); ctx.commit({ rebuild: true }); });
    const counterOpts = el('span', { class: 'counter-opts', hidden: !(q.rateOptions.counter || q.rateOptions.dropResets) },
      cmax, creset, el('label', { title: 'skip points where the counter went back' }, cdrop, ' drop resets'));
    const card = el('fieldset', { class: 'query', 'data-index': qi },
      el('legend', {}, `Query ${qi + 1}`),
      el('div', { class: 'line' },
        el('span', { class: 'wrap' }, metric),
        el('label', {}, 'aggregate ', agg),
        axis, rm),
      filters,
      el('div', { class: 'line' }, addFilter),
      el('div', { class: 'line' },
        el('label', {}, 'downsample ', dsInt), dsFn, el('label', {}, 'fill ', dsFill),
        el('span', { class: 'sep' }),
        el('label', {}, rate, ' rate'),
        el('label', { title: 'the metric is a monotonic counter' }, counter, ' counter'),
        counterOpts,
        el('span', { class: 'sep' }),
        el('label', { title: 'only series whose tag keys are exactly the filtered keys' }, explicit, ' explicit tags')),
      err);
    attachAutocomplete(metric, 'metrics', {
      onPick: (name) => { q.metric = name; },
      onError: (e) => ctx.error(`suggest-${qi}`, e),
    });
    return card;
  }

  function renderEditors() {
    queriesBox.replaceChildren(...ctx.state.queries.map((q, i) => queryCard(q, i)));
    if (ctx.state.queries.length === 0) showQuickMetrics();
    else quick.replaceChildren();
  }

  async function showQuickMetrics() {
    try {
      const names = await apiGet('/api/suggest', { type: 'metrics', q: '', max: 30 });
      ctx.clearError('quick');
      if (ctx.state.queries.length) return;
      quick.replaceChildren(el('span', { text: names.length ? 'Metrics: ' : 'No metrics stored yet.' }),
        ...names.map((n) => el('button', {
          type: 'button', class: 'chip', text: n,
          onclick: () => {
            const q = newQuery();
            q.metric = n;
            ctx.state.queries.push(q);
            renderEditors();
            ctx.commit({});
          },
        })));
    } catch (e) {
      ctx.error('quick', e);
    }
  }

  // ---- running queries -----------------------------------------------------------------------
  function syncToolbar() {
    startIn.value = ctx.state.start;
    endIn.value = ctx.state.end;
    startPick.value = specToPick(ctx.state.start);
    endPick.value = specToPick(ctx.state.end);
    tzSel.value = ctx.state.utc ? 'utc' : 'local';
    refreshSel.value = String(ctx.state.refresh);
    if (refreshSel.value !== String(ctx.state.refresh)) {
      refreshSel.append(el('option', { value: ctx.state.refresh, text: `${ctx.state.refresh}s`, selected: true }));
    }
    logBox.checked = ctx.state.log;
    for (const b of presetBar.children) {
      b.classList.toggle('active', !ctx.state.end && ctx.state.start === `${b.dataset.preset}-ago`);
    }
  }

  function scheduleRefresh() {
    clearInterval(refreshTimer);
    refreshTimer = 0;
    if (ctx.state.refresh > 0 && ctx.state.view === 'graph') {
      refreshTimer = setInterval(() => { if (!document.hidden) run(); }, ctx.state.refresh * 1000);
    }
  }

  async function run() {
    const gen = ++generation;
    controllers.forEach((c) => c.abort());
    controllers = [];
    const st = ctx.state;
    const now = Date.now();
    const startMs = parseTimeSpec(st.start, now);
    const endMs = parseTimeSpec(st.end, now);
    ctx.clearError('time');
    ctx.clearError('query-*');
    if (Number.isNaN(startMs) || Number.isNaN(endMs) || endMs <= startMs) {
      ctx.error('time', `cannot use the time range '${st.start}' to '${st.end || 'now'}': ` +
        'use e.g. 1h-ago, 2026/11/22-10:00:00, epoch seconds or ms, with the end after the start');
      chartEl.dataset.state = 'error';
      chartEl.dataset.run = String(gen);
      return;
    }
    const active = st.queries.map((q, i) => ({ q, i })).filter(({ q }) => q.metric);
    const cards = queriesBox.querySelectorAll('.query');
    cards.forEach((c) => { c.querySelector('.query-error').textContent = ''; c.classList.remove('failed'); });
    apiLinks.replaceChildren();
    if (active.length === 0) {
      drawChart([], startMs, endMs, 0);
      chartEl.dataset.state = 'idle';
      chartEl.dataset.run = String(gen);
      status.textContent = '';
      return;
    }
    chartEl.dataset.state = 'loading';
    status.textContent = 'Loading…';
    const t0 = performance.now();
    const results = await Promise.all(active.map(async ({ q, i }) => {
      const params = { start: st.start, end: st.end || undefined, m: formatM(q), ms: true };
      const url = apiUrl('/api/query', params);
      apiLinks.append(el('a', { href: url, target: '_blank', rel: 'noopener', text: `query ${i + 1} JSON` }));
      const c = new AbortController();
      controllers.push(c);
      try {
        const data = await apiGet('/api/query', params, c.signal);
        ctx.clearError(`query-${i}`);
        return { q, i, data: Array.isArray(data) ? data.filter((r) => r && r.metric !== undefined) : [] };
      } catch (e) {
        if (e.name === 'AbortError') return { q, i, aborted: true };
        ctx.error(`query-${i}`, e, `Query ${i + 1}`);
        if (cards[i]) {
          cards[i].classList.add('failed');
          cards[i].querySelector('.query-error').textContent = String(e);
        }
        return { q, i, error: e };
      }
    }));
    if (gen !== generation || results.some((r) => r.aborted)) return;
    const tq = performance.now() - t0;
    const failed = results.filter((r) => r.error).length;
    const t1 = performance.now();
    dataRun = gen;
    const info = drawChart(results.filter((r) => r.data), startMs, endMs, tq);
    // uPlot draws in a microtask queued by setData (or its constructor): let it run, so that the
    // draw time below includes the drawing itself.
    await Promise.resolve();
    const td = performance.now() - t1;
    chartEl.dataset.state = failed === results.length ? 'error' : 'ready';
    chartEl.dataset.run = String(gen);
    const empty = results.filter((r) => r.data && r.data.length === 0).map((r) => r.i + 1);
    status.textContent = `${info.series} series · ${info.points.toLocaleString('en-US')} points · ` +
      `query ${Math.round(tq)} ms · draw ${Math.round(td)} ms` +
      (empty.length ? ` · no data for query ${empty.join(', ')}` : '') +
      (failed ? ` · ${failed} failed` : '') +
      (st.refresh ? ` · refreshing every ${st.refresh}s` : '');
    status.dataset.drawMs = String(Math.round(td));
  }

  // ---- chart ---------------------------------------------------------------------------------
  function drawChart(results, startMs, endMs) {
    const st = ctx.state;
    const multi = st.queries.filter((q) => q.metric).length > 1;
    const list = [];
    for (const r of results) {
      const ds = r.q.downsample.interval ? parseDurationMs(r.q.downsample.interval) : 0;
      for (const g of r.data) {
        let cols = insertGaps(dpsColumns(g.dps), Number.isNaN(ds) ? 0 : ds);
        if (st.log) cols = { t: cols.t, v: cols.v.map((y) => (y !== null && y <= 0 ? null : y)) };
        list.push({ label: (multi ? `#${r.i + 1} ` : '') + seriesLabel(g), axis: r.q.axis, query: r.i, cols });
      }
    }
    const { x, ys } = alignColumns(list.map((s) => s.cols));
    let points = 0;
    const summary = list.map((s) => {
      const sm = summarizeColumn(s.cols.v, s.cols.t);
      points += sm.points;
      return { label: s.label, query: s.query + 1, axis: s.axis, ...sm };
    });
    const hasRight = list.some((s) => s.axis === 'right');
    const key = JSON.stringify([list.map((s) => [s.label, s.axis]), st.log, st.utc, hasRight]);
    const data = [x, ...ys];
    const range = [startMs / 1000, endMs / 1000];
    lastRange = range;
    emptyMsg.hidden = list.length > 0;
    emptyMsg.textContent = st.queries.some((q) => q.metric)
      ? (results.length ? 'No data in this time range.' : 'Every query failed; see the errors above.')
      : 'Pick a metric to plot it.';
    if (chart && key === chartKey) {
      chart.setData(data);
    } else {
      if (chart) chart.destroy();
      chart = null;
      chartKey = key;
      if (list.length) chart = new window.uPlot(chartOptions(list, hasRight), data, chartEl);
    }
    if (chart) showLatest(chart);
    chartEl.dataset.plot = JSON.stringify({ series: summary, range: [startMs, endMs], log: st.log, rightAxis: hasRight });
    return { series: list.length, points };
  }

  function chartOptions(list, hasRight) {
    const st = ctx.state;
    const distr = st.log ? 3 : 1;
    const axisValues = (u, splits) => splits.map((v) => (v === null ? '' : fmtValue(v)));
    const series = [{
      label: st.utc ? 'time (UTC)' : 'time',
      value: (u, v) => (v === null || v === undefined ? '—' : formatTime(v * 1000, st.utc)),
    }];
    list.forEach((s, i) => {
      series.push({
        label: s.label,
        scale: s.axis === 'right' ? 'y2' : 'y',
        stroke: PALETTE[i % PALETTE.length],
        width: 1.5,
        spanGaps: false,
        value: (u, v) => fmtValue(v),
      });
    });
    const axes = [
      { stroke: '#444', grid: { stroke: '#eee' }, space: 70, values: (u, splits, ai, space, incr) => timeTicks(splits, incr, st.utc) },
      { scale: 'y', stroke: '#444', grid: { stroke: '#eee' }, values: axisValues, size: 70 },
    ];
    if (hasRight) {
      const names = (side) => [...new Set(st.queries.filter((q) => q.metric && q.axis === side).map((q) => q.metric))].join(', ');
      axes[1].label = names('left');
      axes.push({ scale: 'y2', side: 1, stroke: '#444', grid: { show: false }, values: axisValues, size: 70, label: names('right') });
    }
    return {
      width: Math.max(300, chartEl.clientWidth || 800),
      height: 420,
      tzDate: st.utc ? (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') : (ts) => new Date(ts * 1000),
      scales: {
        x: { time: true, range: () => lastRange },
        y: { distr, log: 10 },
        y2: { distr, log: 10 },
      },
      series,
      axes,
      legend: { live: true },
      cursor: { drag: { x: true, y: false, setScale: false }, focus: { prox: 16 } },
      focus: { alpha: 0.35 },
      hooks: {
        setLegend: [showLatest],
        // What was drawn: each y scale's range and kind (3 = log), for people and the tests.
        draw: [(u) => {
          const sc = {};
          for (const k of ['y', 'y2']) {
            if (u.scales[k] && u.scales[k].min != null) sc[k] = { min: u.scales[k].min, max: u.scales[k].max, distr: u.scales[k].distr };
          }
          chartEl.dataset.scales = JSON.stringify({ run: dataRun, ...sc });
        }],
        setSelect: [(u) => {
          if (u.select.width < 4) return;
          const a = u.posToVal(u.select.left, 'x') * 1000;
          const b = u.posToVal(u.select.left + u.select.width, 'x') * 1000;
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          zoomTo(a, b);
        }],
      },
    };
  }

  // With the mouse off the chart, the legend shows each series' latest value (and the latest
  // time) rather than dashes.
  function showLatest(u) {
    if (u.legend.idx != null || !u.data || !u.data[0] || u.data[0].length === 0) return;
    const idxs = u.data.map((col, si) => {
      if (si === 0) return col.length - 1;
      for (let i = col.length - 1; i >= 0; i--) if (col[i] !== null && col[i] !== undefined) return i;
      return null;
    });
    u.setLegend({ idxs }, false);
  }

  function zoomTo(a, b) {
    let s = a;
    let e = b;
    if (e - s >= 60000) {
      s = Math.floor(s / 1000) * 1000;
      e = Math.ceil(e / 1000) * 1000;
    } else {
      s = Math.floor(s);
      e = Math.ceil(e);
    }
    if (e <= s) return;
    ctx.state.start = zoomSpec(s);
    ctx.state.end = zoomSpec(e);
    ctx.commit({ push: true });
  }

  function formatTime(ms, utc) {
    const d = new Date(ms);
    const p2 = (n) => String(n).padStart(2, '0');
    const frac = ms % 1000 ? `.${String(Math.round(ms % 1000)).padStart(3, '0')}` : '';
    return utc
      ? `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}${frac}`
      : `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}${frac}`;
  }

  new ResizeObserver(() => {
    if (chart && chartEl.clientWidth) chart.setSize({ width: chartEl.clientWidth, height: 420 });
  }).observe(chartEl);

  async function loadAggregators() {
    try {
      const a = await apiGet('/api/aggregators');
      aggregators = Array.isArray(a) ? [...a].sort() : [];
      ctx.clearError('aggregators');
    } catch (e) {
      ctx.error('aggregators', e);
    }
  }

  return {
    // Called when the state changed. opts.rebuild forces a new chart; opts.editors re-renders the
    // query cards (the state came from the URL, not from the cards).
    async update(opts = {}) {
      if (!aggregators.length) {
        await loadAggregators();
        opts.editors = true;
      }
      if (opts.editors) renderEditors();
      syncToolbar();
      if (opts.rebuild) chartKey = '';
      scheduleRefresh();
      if (!opts.norun) await run();
    },
    stop() {
      clearInterval(refreshTimer);
      refreshTimer = 0;
    },
  };
}
