// The partner's own usage page. It calls GET usage, usage/history and usage/requests with the key
// typed here (kept in this tab's sessionStorage, sent as Bearer), so it shows nothing an API call
// could not. None of these calls counts against a bucket.
import { html, render, useEffect, useMemo, useState } from './vendor/preact-htm.js';
import { requestJson, store, stored } from './shared/api.js';
import { HourlyChart, hourlyFrame } from './shared/chart.js';
import { ErrorNote, Table, fmtNumber, fmtTime } from './shared/ui.js';

const KEY = 'partner-api-key';
const API = '/api/v1/partner';

const SERIES = [
  { key: '2xx', label: '2xx', color: '#009E73', dash: [] },
  { key: '3xx', label: '3xx', color: '#56B4E9', dash: [6, 3] },
  { key: '4xx', label: '4xx', color: '#E69F00', dash: [10, 4] },
  { key: '5xx', label: '5xx', color: '#D55E00', dash: [2, 3] },
  { key: 'rate_limited', label: '429 (part of 4xx)', color: '#CC79A7', dash: [1, 4] },
];

function SignIn({ onKey }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      await requestJson(`${API}/usage`, { credential: key.trim() });
      store(KEY, key.trim());
      onKey(key.trim());
    } catch (err) {
      setError(err);
    }
  };
  return html`<main>
    <h1>Your API usage</h1>
    <p>Type your API key. It stays in this tab (until you sign out or close it) and is sent only to this API.</p>
    <form class="row" onSubmit=${submit}>
      <label
        >API key
        <input type="password" autocomplete="off" required value=${key} onInput=${(e) => setKey(e.target.value)}
      /></label>
      <button type="submit">Show my usage</button>
    </form>
    <${ErrorNote} error=${error} />
  </main>`;
}

function Buckets({ usage }) {
  const names = ['minute', 'day', 'month'].filter((b) => usage.buckets && usage.buckets[b]);
  return html`<div class="cards">
    ${names.map((b) => {
      const x = usage.buckets[b];
      const resets = `resets ${fmtTime(new Date(x.reset * 1000).toISOString())}`;
      if (x.limit === -1 || x.limit === null)
        return html`<div class="card">
          <div class="value">unlimited</div>
          this ${b} · ${resets}
        </div>`;
      return html`<div class="card">
        <div class="value">${fmtNumber(x.used)} / ${fmtNumber(x.limit)}</div>
        this ${b}, ${fmtNumber(x.remaining)} left · ${resets}
      </div>`;
    })}
  </div>`;
}

function History({ history }) {
  const frame = useMemo(() => {
    const byHour = new Map();
    for (const s of history.series) {
      const t = Math.floor(Date.parse(s.start) / 1000);
      const r = byHour.get(t) || { t, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0, rate_limited: 0 };
      for (const c of ['2xx', '3xx', '4xx', '5xx']) r[c] += s.status[c];
      r.rate_limited += s.rate_limited;
      byHour.set(t, r);
    }
    return hourlyFrame([...byHour.values()], new Date(history.start), new Date(Date.parse(history.end) - 1), SERIES);
  }, [history]);
  return html`<${HourlyChart}
    title="Your requests per hour by status class, last 24 hours"
    frame=${frame}
    series=${SERIES}
  />`;
}

function Requests({ credential }) {
  const [status, setStatus] = useState('');
  const [endpoint, setEndpoint] = useState('');
  const [pages, setPages] = useState([]);
  const [error, setError] = useState(null);
  const load = async (cursor, reset) => {
    setError(null);
    const q = new URLSearchParams({ limit: '50' });
    if (status.trim()) q.set('status', status.trim());
    if (endpoint.trim()) q.set('endpoint', endpoint.trim());
    if (cursor) q.set('cursor', cursor);
    try {
      const page = await requestJson(`${API}/usage/requests?${q}`, { credential });
      setPages((p) => [...(reset ? [] : p), page]);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    load(null, true);
  }, [credential]);
  const last = pages[pages.length - 1];
  return html`<form
      class="row"
      aria-label="Filter your request log"
      onSubmit=${(e) => (e.preventDefault(), load(null, true))}
    >
      <label
        >Status (400, 4xx, 5xx…) <input size="6" value=${status} onInput=${(e) => setStatus(e.target.value)}
      /></label>
      <label>Endpoint <input size="16" value=${endpoint} onInput=${(e) => setEndpoint(e.target.value)} /></label>
      <button type="submit">Filter</button>
    </form>
    <${ErrorNote} error=${error} />
    <${Table}
      rows=${pages.flatMap((p) => p.requests)}
      empty="No failed request in the last 30 days."
      columns=${[
        { label: 'at', value: (r) => fmtTime(r.created_at) },
        { label: 'request id', value: (r) => html`<code>${r.request_id}</code>` },
        { label: 'status', value: (r) => r.status },
        { label: 'request', value: (r) => html`<code>${r.method} ${r.path}</code>` },
        { label: 'error', value: (r) => r.error || '—' },
        { label: 'key', value: (r) => r.key_prefix },
        { label: 'ms', value: (r) => Math.round(r.duration_ms) },
      ]}
    />
    ${last && last.next_cursor ? html`<button onClick=${() => load(last.next_cursor, false)}>Older requests</button>` : ''}`;
}

function Dashboard() {
  const [credential, setCredential] = useState(stored(KEY));
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!credential) return;
    setError(null);
    Promise.all([
      requestJson(`${API}/usage`, { credential }),
      requestJson(`${API}/usage/history?granularity=hour`, { credential }),
    ]).then(([usage, history]) => setData({ usage, history }), setError);
  }, [credential]);
  if (!credential) return html`<${SignIn} onKey=${setCredential} />`;
  const signOut = () => {
    store(KEY, '');
    setCredential('');
    setData(null);
  };
  return html`<header class="top">
      <h1>Your API usage</h1>
      <button onClick=${signOut}>Sign out</button>
    </header>
    <main>
      <${ErrorNote} error=${error} />
      ${
        data
          ? html`<section>
                <h2>Your buckets now (plan ${data.usage.plan})</h2>
                <${Buckets} usage=${data.usage} />
              </section>
              <section><${History} history=${data.history} /></section>`
          : error
            ? ''
            : html`<p>Loading…</p>`
      }
      <section>
        <h2>Your failed requests</h2>
        <${Requests} credential=${credential} />
      </section>
    </main>`;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" line: render() adds to what is there
render(html`<${Dashboard} />`, root);
