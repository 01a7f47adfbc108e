// Request lookup: the log entries of an X-Request-Id a partner reported (401s without a valid key too).
import { html, useEffect, useState } from '../vendor/preact-htm.js';
import { ErrorNote } from '../shared/ui.js';
import { LogTable } from './log.js';

const LOOKUP = `query($id: String!) {
  requestLogEntries(requestId: $id, first: 20) {
    nodes { requestId createdAt method path endpoint status error durationMs clientIp keyPrefix
            subscriberBySubscriberId { rowId name } }
  }
}`;

export function Lookup({ gql, initial }) {
  const [id, setId] = useState(initial || '');
  const [found, setFound] = useState(null);
  const [error, setError] = useState(null);
  const find = async (value) => {
    setError(null);
    setFound(null);
    try {
      const d = await gql(LOOKUP, { id: value.trim() });
      setFound({ id: value.trim(), entries: d.requestLogEntries.nodes });
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    if (initial) find(initial);
  }, [initial]);
  const submit = (e) => {
    e.preventDefault();
    if (id.trim()) location.hash = `#/lookup/${encodeURIComponent(id.trim())}`;
  };
  return html`<h2>Request lookup</h2>
    <form class="row" onSubmit=${submit}>
      <label>X-Request-Id <input size="40" required value=${id} onInput=${(e) => setId(e.target.value)} /></label>
      <button type="submit">Look up</button>
    </form>
    <${ErrorNote} error=${error} />
    ${
      found
        ? html`<${LogTable}
              entries=${found.entries}
              empty=${`No entry for ${found.id}: only 4xx and 5xx answers are kept (all with REQUEST_LOG=all), for 30 days.`}
            />
            ${found.entries.map((e) =>
              e.subscriberBySubscriberId
                ? html`<p>
                    Subscriber:
                    <a href=${`#/subscribers/${e.subscriberBySubscriberId.rowId}`}
                      >${e.subscriberBySubscriberId.name}</a
                    >
                  </p>`
                : html`<p class="muted">No subscriber: the request had no valid key.</p>`,
            )}`
        : ''
    }`;
}
