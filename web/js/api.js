// api.js - talks to the TSD's HTTP JSON API. Every failure (HTTP error object, bad JSON,
// network error) becomes an ApiError carrying the status, OpenTSDB's message and details, so the
// page can show it; nothing is swallowed here. Aborted requests reject with an AbortError that
// callers ignore on purpose (a newer request replaced them).

import { parseJsonLenient } from './model.js';

export class ApiError extends Error {
  constructor(status, message, details, path) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.details = details || '';
    this.path = path;
  }

  toString() {
    const d = this.details ? ` (${this.details})` : '';
    const s = this.status ? `${this.status} ` : '';
    return `${this.path}: ${s}${this.message}${d}`;
  }
}

// Builds "path?k=v&k=v"; params is an object (arrays repeat the key) or a URLSearchParams.
export function apiUrl(path, params) {
  const p = params instanceof URLSearchParams ? params : new URLSearchParams();
  if (!(params instanceof URLSearchParams)) {
    for (const [k, v] of Object.entries(params || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (Array.isArray(v)) v.forEach((x) => p.append(k, x));
      else p.set(k, v === true ? '' : String(v));
    }
  }
  const qs = p.toString();
  return qs ? `${path}?${qs}` : path;
}

// GET a JSON endpoint. Resolves with the parsed body (null for 204).
export async function apiGet(path, params, signal) {
  const url = apiUrl(path, params);
  let res;
  try {
    res = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `cannot reach the TSD: ${e.message}`, '', path);
  }
  const text = await res.text();
  if (res.status === 204) return null;
  let body;
  try {
    body = text ? parseJsonLenient(text) : null;
  } catch (e) {
    if (!res.ok) throw new ApiError(res.status, res.statusText || 'request failed', text.slice(0, 200), path);
    throw new ApiError(res.status, 'the TSD sent a reply that is not JSON', text.slice(0, 200), path);
  }
  if (!res.ok) {
    const err = body && body.error ? body.error : {};
    throw new ApiError(err.code || res.status, err.message || res.statusText || 'request failed',
      err.details || '', path);
  }
  if (body && !Array.isArray(body) && body.error) {
    throw new ApiError(body.error.code || res.status, body.error.message || 'error', body.error.details, path);
  }
  return body;
}

// /api/suggest for one kind (metrics, tagk, tagv) and prefix.
export function suggest(type, q, max, signal) {
  return apiGet('/api/suggest', { type, q, max: max || 25 }, signal);
}
