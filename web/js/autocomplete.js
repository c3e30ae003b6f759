// autocomplete.js - a suggestion list under a text input, fed by /api/suggest.
// Typing asks the TSD (debounced, older requests aborted) for names starting with the text;
// arrow keys move, Enter or a click picks, Escape closes. A failed lookup is reported through
// onError and leaves the input usable.

import { suggest } from './api.js';

let seq = 0;

// opts.separator: the input holds a list (e.g. `a|b` for literal_or); suggestions complete
// the last item and a pick replaces only that item.
export function attachAutocomplete(input, kind, { onPick, onError, separator } = {}) {
  const list = document.createElement('ul');
  list.className = 'suggest';
  list.id = `suggest-${++seq}`;
  list.setAttribute('role', 'listbox');
  list.hidden = true;
  input.setAttribute('autocomplete', 'off');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-controls', list.id);
  input.parentNode.insertBefore(list, input.nextSibling);
  let timer = 0;
  let ctl = null;
  let items = [];
  let active = -1;

  function close() {
    list.hidden = true;
    active = -1;
  }

  function render() {
    list.replaceChildren();
    items.forEach((name, i) => {
      const li = document.createElement('li');
      li.textContent = name;
      li.setAttribute('role', 'option');
      if (i === active) li.className = 'active';
      li.addEventListener('mousedown', (ev) => {
        ev.preventDefault();
        pick(name);
      });
      list.appendChild(li);
    });
    list.hidden = items.length === 0;
  }

  function head() {
    if (!separator) return '';
    const i = input.value.lastIndexOf(separator);
    return i < 0 ? '' : input.value.slice(0, i + 1);
  }

  function pick(name) {
    input.value = head() + name;
    close();
    input.dispatchEvent(new Event('change', { bubbles: true }));
    if (onPick) onPick(name);
  }

  async function lookup() {
    if (ctl) ctl.abort();
    ctl = new AbortController();
    const q = input.value.slice(head().length);
    try {
      const names = await suggest(kind, q, 50, ctl.signal);
      if (document.activeElement !== input) return;
      items = Array.isArray(names) ? names : [];
      active = -1;
      render();
    } catch (e) {
      if (e.name === 'AbortError') return;
      close();
      if (onError) onError(e);
    }
  }

  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(lookup, 120);
  });
  input.addEventListener('focus', () => {
    clearTimeout(timer);
    timer = setTimeout(lookup, 50);
  });
  input.addEventListener('blur', () => setTimeout(close, 100));
  input.addEventListener('keydown', (ev) => {
    if (list.hidden) return;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const d = ev.key === 'ArrowDown' ? 1 : -1;
      active = (active + d + items.length) % items.length;
      render();
    } else if (ev.key === 'Enter' && active >= 0) {
      ev.preventDefault();
      pick(items[active]);
    } else if (ev.key === 'Escape') {
      close();
    }
  });
}
