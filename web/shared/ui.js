// Small pieces both pages use. Everything is rendered as text by Preact (never as HTML), and no
// value from the server becomes a link, so a name, path or URL a partner chose cannot run script.
import { html, useEffect, useState } from '../vendor/preact-htm.js';

export { html };

export const fmtTime = (iso) => (iso ? new Date(iso).toISOString().replace('.000Z', 'Z') : '—');
export const fmtNumber = (n) => (n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US'));

/** A failed call, as the server said it, with the request id to report. */
export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">
    ${error.message}${error.requestId ? html` <span class="muted">(request id <code>${error.requestId}</code>)</span>` : ''}
  </p>`;
}

/**
 * A button that asks before it acts: the first press shows what will happen with Confirm and
 * Cancel; Confirm runs `action` and shows the server's error if it fails.
 */
export function ConfirmButton({ label, question, action, danger = false }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      await action();
      setAsking(false);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  if (!asking)
    return html`<span class="action"
      ><button class=${danger ? 'danger' : ''} onClick=${() => setAsking(true)}>${label}</button
      ><${ErrorNote} error=${error}
    /></span>`;
  return html`<span class="confirm" role="group" aria-label=${question}>
    <span>${question}</span>
    <button class=${danger ? 'danger' : ''} disabled=${busy} onClick=${run}>Confirm</button>
    <button disabled=${busy} onClick=${() => setAsking(false)}>Cancel</button>
    <${ErrorNote} error=${error} />
  </span>`;
}

/** A secret shown once, with a copy button. */
export function ShownOnce({ label, value }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return html`<div class="shown-once" role="status">
    <p><strong>${label}</strong> It is shown once: copy it now.</p>
    <input class="secret" readonly value=${value} aria-label=${label} onFocus=${(e) => e.target.select()} />
    <button onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button>
  </div>`;
}

/** A table from rows and columns ({label, value: row => text}). */
export function Table({ caption, rows, columns, empty = 'Nothing yet.' }) {
  if (!rows.length) return html`<p class="muted">${empty}</p>`;
  return html`<table>
    ${
      caption
        ? html`<caption>
            ${caption}
          </caption>`
        : ''
    }
    <thead>
      <tr>
        ${columns.map((c) => html`<th scope="col">${c.label}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            ${columns.map((c) => html`<td>${c.value(r)}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** Runs `load` now and whenever a dependency changes: {data, error, reload}. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, error: null }));
    load().then(
      (data) => live && setState({ data, error: null }),
      (error) => live && setState({ data: null, error }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** A PostgreSQL timestamp as PostGraphile sends group-by keys ("2026-11-25 15:00:00+00") → epoch seconds. */
export function pgSeconds(text) {
  const iso = String(text)
    .replace(' ', 'T')
    .replace(/([+-]\d\d)$/, '$1:00');
  return Math.floor(Date.parse(iso) / 1000);
}
