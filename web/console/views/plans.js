// Plans: the list and a new plan (limits a minute, a day, a month; empty = unlimited).
import { html, useState } from '../vendor/preact-htm.js';
import { ConfirmButton, ErrorNote, Table, fmtNumber, fmtTime, useLoad } from '../shared/ui.js';

const PLANS = '{ allPlans(first: 200) { nodes { rowId name perMinute perDay perMonth createdAt } } }';
const limit = (n) => (n === null || n === undefined ? 'unlimited' : fmtNumber(n));
const optionalInt = (text) => (text.trim() === '' ? null : Number(text));

export function Plans({ gql }) {
  const { data, error, reload } = useLoad(() => gql(PLANS), []);
  const [form, setForm] = useState({ name: '', perMinute: '', perDay: '', perMonth: '' });
  const field = (name) => (e) => setForm({ ...form, [name]: e.target.value });
  if (error)
    return html`<h2>Plans</h2>
      <${ErrorNote} error=${error} />`;
  if (!data)
    return html`<h2>Plans</h2>
      <p>Loading…</p>`;
  const create = () =>
    gql(
      `mutation($name: String!, $m: Int, $d: Int, $mo: Int) {
        createPlan(input: { name: $name, perMinute: $m, perDay: $d, perMonth: $mo }) { result { rowId } } }`,
      {
        name: form.name.trim(),
        m: optionalInt(form.perMinute),
        d: optionalInt(form.perDay),
        mo: optionalInt(form.perMonth),
      },
    ).then(reload);
  return html`<h2>Plans</h2>
    <${Table}
      rows=${data.allPlans.nodes}
      columns=${[
        { label: 'name', value: (p) => p.name },
        { label: 'a minute', value: (p) => limit(p.perMinute) },
        { label: 'a day', value: (p) => limit(p.perDay) },
        { label: 'a month', value: (p) => limit(p.perMonth) },
        { label: 'created', value: (p) => fmtTime(p.createdAt) },
      ]}
    />
    <section>
      <h3>New plan</h3>
      <div class="row">
        <label>Name <input value=${form.name} onInput=${field('name')} /></label>
        <label
          >A minute <input inputmode="numeric" size="8" value=${form.perMinute} onInput=${field('perMinute')}
        /></label>
        <label>A day <input inputmode="numeric" size="8" value=${form.perDay} onInput=${field('perDay')} /></label>
        <label
          >A month <input inputmode="numeric" size="10" value=${form.perMonth} onInput=${field('perMonth')}
        /></label>
        <${ConfirmButton} label="Create plan" question=${`Create the plan "${form.name.trim()}"?`} action=${create} />
      </div>
    </section>`;
}
