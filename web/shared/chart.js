// Hourly charts drawn by uPlot, each with the same numbers as a table for keyboards and screen
// readers. Colours are Okabe-Ito (safe for colour-blind readers), and each series has its own
// dash pattern, so no reading depends on colour alone.
import uPlot from '../vendor/uplot.js';
import { html, useEffect, useRef } from '../vendor/preact-htm.js';

export const STATUS_SERIES = [
  { key: 'status2Xx', label: '2xx', color: '#009E73', dash: [] },
  { key: 'status3Xx', label: '3xx', color: '#56B4E9', dash: [6, 3] },
  { key: 'status4Xx', label: '4xx', color: '#E69F00', dash: [10, 4] },
  { key: 'status5Xx', label: '5xx', color: '#D55E00', dash: [2, 3] },
  { key: 'rateLimited', label: '429 (part of 4xx)', color: '#CC79A7', dash: [1, 4] },
];

const OTHER_COLORS = ['#0072B2', '#009E73', '#E69F00', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000'];

/** Series for arbitrary names (e.g. endpoints), in a fixed colour and dash order. */
export function namedSeries(names) {
  return names.map((name, i) => ({
    key: name,
    label: name,
    color: OTHER_COLORS[i % OTHER_COLORS.length],
    dash: i < OTHER_COLORS.length ? [] : [6, 3],
  }));
}

/** Every hour from `from` to `to` (Date), with the rows' values (missing hours are 0). */
export function hourlyFrame(rows, from, to, series) {
  const start = Math.floor(from.getTime() / 3600_000) * 3600;
  const end = Math.floor(to.getTime() / 3600_000) * 3600;
  const byHour = new Map(rows.map((r) => [r.t, r]));
  const frame = [];
  for (let t = start; t <= end; t += 3600) {
    const r = byHour.get(t) || {};
    frame.push({ t, ...Object.fromEntries(series.map((s) => [s.key, Number(r[s.key] || 0)])) });
  }
  return frame;
}

const hourLabel = (t) => new Date(t * 1000).toISOString().slice(0, 13).replace('T', ' ') + ':00Z';

export function HourlyChart({ title, frame, series }) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const data = [frame.map((r) => r.t), ...series.map((s) => frame.map((r) => r[s.key]))];
    const plot = new uPlot(
      {
        width: Math.max(280, Math.min(el.clientWidth || 800, 1200)),
        height: 220,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'), // hours in UTC, like the table
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, dash: s.dash, width: 2 }))],
        axes: [{ label: 'UTC' }, { label: 'requests' }],
      },
      data,
      el,
    );
    const resize = () => plot.setSize({ width: Math.max(280, Math.min(el.clientWidth || 800, 1200)), height: 220 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [frame, series]);
  const total = frame.reduce((n, r) => n + series.reduce((m, s) => m + (s.key === 'rateLimited' ? 0 : r[s.key]), 0), 0);
  return html`<figure class="chart" aria-label=${title}>
    <figcaption>${title}</figcaption>
    <div ref=${box} class="plot" role="img" aria-label=${`${title}: ${total} requests`}></div>
    <details>
      <summary>The numbers as a table</summary>
      <table>
        <thead>
          <tr>
            <th scope="col">hour (UTC)</th>
            ${series.map((s) => html`<th scope="col">${s.label}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${frame
            .filter((r) => series.some((s) => r[s.key]))
            .map(
              (r) =>
                html`<tr>
                  <th scope="row">${hourLabel(r.t)}</th>
                  ${series.map((s) => html`<td>${r[s.key]}</td>`)}
                </tr>`,
            )}
        </tbody>
      </table>
    </details>
  </figure>`;
}
