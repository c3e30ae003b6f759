// app.js - the dashboard's entry: reads the state from the URL fragment, switches between the
// Graph and Storage views, keeps the URL in step with every change (edits replace the history
// entry; time range changes and zooms push one, so Back undoes them), and shows API errors in
// the banner at the top of the page.
//
// Invariant: ctx.state is the only state and location.hash always encodes it.

import { stateFromHash, hashFromState } from './model.js';
import { apiGet } from './api.js';
import { createGraphView } from './graph.js';
import { createStorageView } from './storage.js';

const errorsBox = document.getElementById('errors');
const errors = new Map();
const views = {};
let lastHash = '';
let graphHash = '';

function renderErrors() {
  errorsBox.replaceChildren();
  for (const [key, text] of errors) {
    const item = document.createElement('div');
    item.className = 'error';
    item.dataset.key = key;
    const msg = document.createElement('span');
    msg.textContent = text;
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'icon';
    close.title = 'dismiss';
    close.textContent = '×';
    close.addEventListener('click', () => { errors.delete(key); renderErrors(); });
    item.append(msg, close);
    errorsBox.append(item);
  }
  errorsBox.hidden = errors.size === 0;
}

const ctx = {
  state: null,
  error(key, err, prefix) {
    const text = `${prefix ? `${prefix}: ` : ''}${err && err.toString ? err.toString() : String(err)}`;
    errors.set(key, text);
    renderErrors();
    console.warn(text);
  },
  // Forgets an error; a key ending in '*' forgets every error whose key starts with the rest.
  clearError(key) {
    let changed = false;
    if (key.endsWith('*')) {
      for (const k of [...errors.keys()]) if (k.startsWith(key.slice(0, -1))) changed = errors.delete(k) || changed;
    } else {
      changed = errors.delete(key);
    }
    if (changed) renderErrors();
  },
  commit(opts = {}) {
    const h = hashFromState(ctx.state);
    if (h !== location.hash) {
      if (opts.push) history.pushState(null, '', h);
      else history.replaceState(null, '', h);
    }
    lastHash = h;
    show(opts);
  },
};

function show(opts) {
  const v = ctx.state.view;
  document.getElementById('graph-view').hidden = v !== 'graph';
  document.getElementById('storage-view').hidden = v !== 'storage';
  for (const a of document.querySelectorAll('nav [data-view]')) {
    a.classList.toggle('active', a.dataset.view === v);
    a.setAttribute('aria-current', a.dataset.view === v ? 'page' : 'false');
  }
  document.title = v === 'graph' ? 'ctsdb - graph' : 'ctsdb - storage';
  if (v === 'graph') {
    graphHash = lastHash;
    if (views.storage) views.storage.stop();
    if (!views.graph) {
      views.graph = createGraphView(document.getElementById('graph-view'), ctx);
      opts.editors = true;
    }
    views.graph.update(opts);
  } else {
    if (views.graph) views.graph.stop();
    if (!views.storage) views.storage = createStorageView(document.getElementById('storage-view'), ctx);
    views.storage.update(opts);
  }
}

function loadFromUrl() {
  if (location.hash === lastHash && ctx.state) return;
  const problems = [];
  ctx.state = stateFromHash(location.hash, problems);
  errors.delete('url');
  if (problems.length) ctx.error('url', problems.join('; '), 'URL');
  lastHash = hashFromState(ctx.state);
  if (!location.hash) history.replaceState(null, '', lastHash);
  show({ editors: true, rebuild: true });
}

for (const a of document.querySelectorAll('nav [data-view]')) {
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    if (a.dataset.view === ctx.state.view) return;
    if (a.dataset.view === 'graph' && graphHash) {
      history.pushState(null, '', graphHash);
      loadFromUrl();
      return;
    }
    ctx.state.view = a.dataset.view;
    ctx.commit({ push: true, editors: true });
  });
}

window.addEventListener('popstate', loadFromUrl);
window.addEventListener('hashchange', loadFromUrl);

(async () => {
  if (!window.uPlot) {
    ctx.error('uplot', 'the chart library web/vendor/uPlot.iife.min.js did not load: build ctsdb with `make` (it vendors uPlot)');
  }
  loadFromUrl();
  try {
    const v = await apiGet('/api/version');
    document.getElementById('version').textContent = v && v.version ? `v${v.version}` : '';
  } catch (e) {
    ctx.error('version', e);
  }
})();
