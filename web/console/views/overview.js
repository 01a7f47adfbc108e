// Overview: requests per hour by status class (24 hours or 7 days), totals, the busiest keys, the
// alerts of the last 24 hours and the e-mail and webhook deliveries that failed.
import { html, useMemo, useState } from '../vendor/preact-htm.js';
import { HourlyChart, STATUS_SERIES, hourlyFrame } from '../shared/chart.js';
import { ErrorNote, Table, fmtNumber, fmtTime, pgSeconds, useLoad } from '../shared/ui.js';

const QUERY = `query Overview($since: Datetime!, $day: Datetime!) {
  hourlyUsageSince(since: $since) {
    aggregates { sum { requests status2Xx status3Xx status4Xx status5Xx rateLimited } }
    byHour: groupedAggregates(groupBy: [HOUR]) { keys sum { status2Xx status3Xx status4Xx status5Xx rateLimited } }
    byKey: groupedAggregates(groupBy: [API_KEY_ID]) { keys sum { requests status4Xx status5Xx rateLimited } }
  }
  usageAlertsSince(since: $day, orderBy: CREATED_AT_DESC, first: 50) {
    nodes { createdAt level bucket used limit subscriberBySubscriberId { rowId name } apiKeyByApiKeyId { rowId keyPrefix } }
  }
  allEmailDeliveries(orderBy: CREATED_AT_DESC, first: 200) {
    nodes { rowId email status attempts lastResult lastAttemptAt subscriberBySubscriberId { rowId name } }
  }
  allWebhookDeliveries(orderBy: CREATED_AT_DESC, first: 200) {
    nodes { rowId url status attempts lastStatusCode lastError lastAttemptAt subscriberBySubscriberId { rowId name } }
  }
  allApiKeys(first: 1000) { nodes { rowId keyPrefix subscriberBySubscriberId { rowId name } } }
}`;

const HOUR = 3600_000;
const sub = (s) => (s ? html`<a href=${`#/subscribers/${s.rowId}`}>${s.name}</a>` : '—');

export function Overview({ gql }) {
  const [days, setDays] = useState(1);
  const { data, error } = useLoad(() => {
    const now = Date.now();
    return gql(QUERY, {
      since: new Date(now - days * 24 * HOUR).toISOString(),
      day: new Date(now - 24 * HOUR).toISOString(),
    }).then((d) => ({ ...d, at: now }));
  }, [days]);
  const frame = useMemo(() => {
    if (!data) return [];
    const rows = data.hourlyUsageSince.byHour.map((g) => ({ t: pgSeconds(g.keys[0]), ...g.sum }));
    return hourlyFrame(rows, new Date(data.at - days * 24 * HOUR), new Date(data.at), STATUS_SERIES);
  }, [data]);
  if (error)
    return html`<h2>Overview</h2>
      <${ErrorNote} error=${error} />`;
  if (!data)
    return html`<h2>Overview</h2>
      <p>Loading…</p>`;
  const sum = data.hourlyUsageSince.aggregates.sum;
  const keys = new Map(data.allApiKeys.nodes.map((k) => [k.rowId, k]));
  const top = data.hourlyUsageSince.byKey
    .map((g) => ({ key: keys.get(g.keys[0]), id: g.keys[0], ...g.sum }))
    .sort((a, b) => Number(b.requests) - Number(a.requests))
    .slice(0, 10);
  const failedEmails = data.allEmailDeliveries.nodes.filter((d) => d.status === 'failed');
  const failedHooks = data.allWebhookDeliveries.nodes.filter((d) => d.status === 'failed');
  return html`<h2>Overview</h2>
    <div class="row" role="group" aria-label="Period">
      <button aria-pressed=${days === 1} onClick=${() => setDays(1)}>Last 24 hours</button>
      <button aria-pressed=${days === 7} onClick=${() => setDays(7)}>Last 7 days</button>
    </div>
    <div class="cards">
      <div class="card">
        <div class="value">${fmtNumber(sum.requests)}</div>
        requests
      </div>
      <div class="card">
        <div class="value">${fmtNumber(Number(sum.status4Xx) + Number(sum.status5Xx))}</div>
        errors (4xx and 5xx)
      </div>
      <div class="card">
        <div class="value">${fmtNumber(sum.status5Xx)}</div>
        5xx
      </div>
      <div class="card">
        <div class="value">${fmtNumber(sum.rateLimited)}</div>
        rate-limited (429)
      </div>
    </div>
    <${HourlyChart}
      title=${`Requests per hour by status class, last ${days === 1 ? '24 hours' : '7 days'}`}
      frame=${frame}
      series=${STATUS_SERIES}
    />
    <section>
      <h3>Top keys</h3>
      <${Table}
        rows=${top}
        columns=${[
          { label: 'key', value: (r) => html`<a href=${`#/keys/${r.id}`}>${r.key ? r.key.keyPrefix : r.id}</a>` },
          { label: 'subscriber', value: (r) => sub(r.key && r.key.subscriberBySubscriberId) },
          { label: 'requests', value: (r) => fmtNumber(r.requests) },
          { label: '4xx', value: (r) => fmtNumber(r.status4Xx) },
          { label: '5xx', value: (r) => fmtNumber(r.status5Xx) },
          { label: '429', value: (r) => fmtNumber(r.rateLimited) },
        ]}
      />
    </section>
    <section>
      <h3>Alerts of the last 24 hours</h3>
      <${Table}
        rows=${data.usageAlertsSince.nodes}
        empty="No alert in the last 24 hours."
        columns=${[
          { label: 'at', value: (a) => fmtTime(a.createdAt) },
          { label: 'level', value: (a) => a.level },
          { label: 'bucket', value: (a) => a.bucket },
          { label: 'used / limit', value: (a) => `${fmtNumber(a.used)} / ${fmtNumber(a.limit)}` },
          { label: 'subscriber', value: (a) => sub(a.subscriberBySubscriberId) },
          {
            label: 'key',
            value: (a) =>
              a.apiKeyByApiKeyId
                ? html`<a href=${`#/keys/${a.apiKeyByApiKeyId.rowId}`}>${a.apiKeyByApiKeyId.keyPrefix}</a>`
                : '—',
          },
        ]}
      />
    </section>
    <section>
      <h3>Failed e-mails</h3>
      <${Table}
        rows=${failedEmails}
        empty="No failed e-mail among the last 200."
        columns=${[
          { label: 'to', value: (d) => d.email },
          { label: 'subscriber', value: (d) => sub(d.subscriberBySubscriberId) },
          { label: 'attempts', value: (d) => d.attempts },
          { label: 'last attempt', value: (d) => fmtTime(d.lastAttemptAt) },
          { label: 'last reply', value: (d) => d.lastResult || '—' },
        ]}
      />
      <h3>Failed webhook deliveries</h3>
      <${Table}
        rows=${failedHooks}
        empty="No failed webhook delivery among the last 200."
        columns=${[
          { label: 'URL', value: (d) => d.url },
          { label: 'subscriber', value: (d) => sub(d.subscriberBySubscriberId) },
          { label: 'attempts', value: (d) => d.attempts },
          { label: 'last status', value: (d) => d.lastStatusCode || '—' },
          { label: 'last error', value: (d) => d.lastError || '—' },
          { label: 'last attempt', value: (d) => fmtTime(d.lastAttemptAt) },
        ]}
      />
    </section>`;
}
