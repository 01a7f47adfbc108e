// Request-log entries as a table (the key view, the request lookup).
import { html } from '../vendor/preact-htm.js';
import { Table, fmtTime } from '../shared/ui.js';

export function LogTable({ entries, empty = 'No entry.' }) {
  return html`<${Table}
    rows=${entries}
    empty=${empty}
    columns=${[
      { label: 'at', value: (e) => fmtTime(e.createdAt) },
      { label: 'request id', value: (e) => html`<code>${e.requestId}</code>` },
      { label: 'status', value: (e) => e.status },
      { label: 'request', value: (e) => html`<code>${e.method} ${e.path}</code>` },
      { label: 'endpoint', value: (e) => e.endpoint },
      { label: 'error', value: (e) => e.error || '—' },
      { label: 'ms', value: (e) => Math.round(e.durationMs) },
      { label: 'key', value: (e) => e.keyPrefix || '(no valid key)' },
      { label: 'client', value: (e) => e.clientIp || '—' },
    ]}
  />`;
}
