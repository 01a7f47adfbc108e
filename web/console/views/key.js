// One key: requests per hour by endpoint, its day and month against the plan's limits, its alerts,
// and its request log with filters (newest first, 50 at a time).
import { html, useEffect, useMemo, useState } from '../vendor/preact-htm.js';
import { HourlyChart, hourlyFrame, namedSeries } from '../shared/chart.js';
import { ErrorNote, Table, fmtNumber, fmtTime, pgSeconds, useLoad } from '../shared/ui.js';
import { LogTable } from './log.js';

const KEY = `query($id: UUID!, $since: Datetime!, $today: Date!, $month: Date!) {
  apiKeyByRowId(rowId: $id) {
    rowId keyPrefix status createdAt lastUsedAt revokedAt
    bucketsNow { minute { ...B } day { ...B } month { ...B } }
    subscriberBySubscriberId { rowId name planByPlanId { name perMinute perDay perMonth } }
    usageAlertsByApiKeyId(first: 20, orderBy: CREATED_AT_DESC) { nodes { createdAt level bucket used limit } }
  }
  hourlyUsageSince(since: $since, condition: { apiKeyId: $id }) {
    groupedAggregates(groupBy: [HOUR, ENDPOINT]) { keys sum { requests } }
  }
  today: dailyUsageSince(since: $today, condition: { apiKeyId: $id }) { aggregates { sum { requests rateLimited } } }
  month: dailyUsageSince(since: $month, condition: { apiKeyId: $id }) { aggregates { sum { requests rateLimited } } }
}
fragment B on KeyBucketNow { limit used remaining reset }`;

const HOUR = 3600_000;
const limit = (n) => (n === null || n === undefined ? 'unlimited' : fmtNumber(n));

export function KeyView({ gql, id }) {
  const [days, setDays] = useState(1);
  const { data, error } = useLoad(() => {
    const now = new Date();
    const today = now.toISOString().slice(0, 10);
    return gql(KEY, {
      id,
      since: new Date(now.getTime() - days * 24 * HOUR).toISOString(),
      today,
      month: `${today.slice(0, 8)}01`,
    }).then((d) => ({ ...d, at: now }));
  }, [id, days]);
  const chart = useMemo(() => {
    if (!data) return null;
    const groups = data.hourlyUsageSince.groupedAggregates;
    const endpoints = [...new Set(groups.map((g) => g.keys[1]))].sort();
    const series = namedSeries(endpoints);
    const byHour = new Map();
    for (const g of groups) {
      const t = pgSeconds(g.keys[0]);
      byHour.set(t, { ...(byHour.get(t) || { t }), [g.keys[1]]: Number(g.sum.requests) });
    }
    return { series, frame: hourlyFrame([...byHour.values()], new Date(data.at - days * 24 * HOUR), data.at, series) };
  }, [data]);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p>Loading…</p>`;
  const k = data.apiKeyByRowId;
  if (!k) return html`<p>No key ${id}.</p>`;
  const s = k.subscriberBySubscriberId;
  const plan = s.planByPlanId;
  const today = data.today.aggregates.sum;
  const month = data.month.aggregates.sum;
  return html`<h2>Key ${k.keyPrefix}</h2>
    <p class="muted">
      of <a href=${`#/subscribers/${s.rowId}`}>${s.name}</a> · ${k.status} · created ${fmtTime(k.createdAt)} · last used
      ${fmtTime(k.lastUsedAt)}
    </p>
    <section>
      <h3>Buckets (plan ${plan.name})</h3>
      ${
        k.bucketsNow
          ? html`<div class="cards">
              ${['minute', 'day', 'month'].map((b) => {
                const x = k.bucketsNow[b];
                return html`<div class="card">
                  <div class="value">${fmtNumber(x.used)} / ${limit(x.limit)}</div>
                  this ${b} · resets ${fmtTime(x.reset)}
                </div>`;
              })}
            </div>`
          : html`<div class="cards">
              <div class="card">
                <div class="value">${limit(plan.perMinute)}</div>
                a minute (no shared counters here: the count is per server)
              </div>
              <div class="card">
                <div class="value">${fmtNumber(today.requests)} / ${limit(plan.perDay)}</div>
                today (UTC), ${fmtNumber(today.rateLimited)} refused
              </div>
              <div class="card">
                <div class="value">${fmtNumber(month.requests)} / ${limit(plan.perMonth)}</div>
                this month, ${fmtNumber(month.rateLimited)} refused
              </div>
            </div>`
      }
    </section>
    <div class="row" role="group" aria-label="Period">
      <button aria-pressed=${days === 1} onClick=${() => setDays(1)}>Last 24 hours</button>
      <button aria-pressed=${days === 7} onClick=${() => setDays(7)}>Last 7 days</button>
    </div>
    <${HourlyChart}
      title=${`Requests per hour by endpoint, key ${k.keyPrefix}`}
      frame=${chart.frame}
      series=${chart.series}
    />
    <section>
      <h3>Alerts</h3>
      <${Table}
        rows=${k.usageAlertsByApiKeyId.nodes}
        empty="No alert."
        columns=${[
          { label: 'at', value: (a) => fmtTime(a.createdAt) },
          { label: 'level', value: (a) => a.level },
          { label: 'bucket', value: (a) => a.bucket },
          { label: 'used / limit', value: (a) => `${fmtNumber(a.used)} / ${fmtNumber(a.limit)}` },
        ]}
      />
    </section>
    <section>
      <h3>Request log</h3>
      <${KeyLog} gql=${gql} id=${id} />
    </section>`;
}

// A condition field given as null would match NULL: only the filters set are sent.
const LOG = `query($since: Datetime!, $condition: RequestLogCondition!, $after: Cursor) {
  requestLogSince(since: $since, condition: $condition, orderBy: CREATED_AT_DESC, first: 50, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { requestId createdAt method path endpoint status error durationMs clientIp keyPrefix }
  }
}`;

function KeyLog({ gql, id }) {
  const [status, setStatus] = useState('');
  const [endpoint, setEndpoint] = useState('');
  const [filters, setFilters] = useState({ status: null, endpoint: null });
  const [pages, setPages] = useState([]);
  const [error, setError] = useState(null);
  const load = async (after, reset, f = filters) => {
    setError(null);
    try {
      const condition = { apiKeyId: id };
      if (f.status !== null) condition.status = f.status;
      if (f.endpoint !== null) condition.endpoint = f.endpoint;
      const d = await gql(LOG, {
        since: new Date(Date.now() - 30 * 24 * HOUR).toISOString(),
        condition,
        after: after || null,
      });
      setPages((p) => [...(reset ? [] : p), d.requestLogSince]);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    load(null, true);
  }, [id]);
  const apply = (e) => {
    e.preventDefault();
    const f = { status: status.trim() ? Number(status) : null, endpoint: endpoint.trim() || null };
    setFilters(f);
    load(null, true, f);
  };
  const last = pages[pages.length - 1];
  return html`<form class="row" onSubmit=${apply} aria-label="Filter the request log">
      <label
        >Status <input inputmode="numeric" size="5" value=${status} onInput=${(e) => setStatus(e.target.value)}
      /></label>
      <label>Endpoint <input size="16" value=${endpoint} onInput=${(e) => setEndpoint(e.target.value)} /></label>
      <button type="submit">Filter</button>
    </form>
    <${ErrorNote} error=${error} />
    <${LogTable} entries=${pages.flatMap((p) => p.nodes)} />
    ${
      last && last.pageInfo.hasNextPage
        ? html`<button onClick=${() => load(last.pageInfo.endCursor, false)}>Older entries</button>`
        : ''
    }`;
}
