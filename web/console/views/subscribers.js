// Subscribers: search, create; one subscriber's keys (issue, revoke), state (suspend, activate),
// plan, alert contacts and webhook endpoint. Every action asks first and shows the server's error.
import { html, useState } from '../vendor/preact-htm.js';
import { ConfirmButton, ErrorNote, ShownOnce, Table, fmtTime, useLoad } from '../shared/ui.js';

const LIST = `{
  allSubscribers(first: 1000) { nodes { rowId name status createdAt planByPlanId { name } } }
  allPlans(first: 200) { nodes { name } }
}`;

export function Subscribers({ gql }) {
  const { data, error, reload } = useLoad(() => gql(LIST), []);
  const [q, setQ] = useState('');
  const [name, setName] = useState('');
  const [plan, setPlan] = useState('');
  if (error)
    return html`<h2>Subscribers</h2>
      <${ErrorNote} error=${error} />`;
  if (!data)
    return html`<h2>Subscribers</h2>
      <p>Loading…</p>`;
  const needle = q.trim().toLowerCase();
  const rows = data.allSubscribers.nodes
    .filter((s) => !needle || s.name.toLowerCase().includes(needle) || s.rowId.startsWith(needle))
    .sort((a, b) => a.name.localeCompare(b.name));
  const create = async () => {
    const d = await gql(
      'mutation($name: String!, $plan: String) { createSubscriber(input: { name: $name, planName: $plan }) { result { rowId } } }',
      { name: name.trim(), plan: plan || null },
    );
    location.hash = `#/subscribers/${d.createSubscriber.result.rowId}`;
  };
  return html`<h2>Subscribers</h2>
    <div class="row">
      <label>Search by name or id <input type="search" value=${q} onInput=${(e) => setQ(e.target.value)} /></label>
    </div>
    <${Table}
      caption=${`${rows.length} of ${data.allSubscribers.nodes.length} subscribers`}
      rows=${rows}
      empty="No subscriber matches."
      columns=${[
        { label: 'name', value: (s) => html`<a href=${`#/subscribers/${s.rowId}`}>${s.name}</a>` },
        { label: 'status', value: (s) => s.status },
        { label: 'plan', value: (s) => (s.planByPlanId ? s.planByPlanId.name : '—') },
        { label: 'since', value: (s) => fmtTime(s.createdAt) },
      ]}
    />
    <section>
      <h3>New subscriber</h3>
      <div class="row">
        <label>Name <input value=${name} onInput=${(e) => setName(e.target.value)} /></label>
        <label
          >Plan
          <select value=${plan} onChange=${(e) => setPlan(e.target.value)}>
            <option value="">(the default plan)</option>
            ${data.allPlans.nodes.map((p) => html`<option value=${p.name}>${p.name}</option>`)}
          </select>
        </label>
        <${ConfirmButton}
          label="Create"
          question=${`Create the subscriber "${name.trim()}"?`}
          action=${() => create().then(reload)}
        />
      </div>
    </section>`;
}

const ONE = `query($id: UUID!) {
  subscriberByRowId(rowId: $id) {
    rowId name status subscriptionEndsAt createdAt
    planByPlanId { name perMinute perDay perMonth }
    apiKeysBySubscriberId(first: 200) { nodes { rowId keyPrefix status createdAt lastUsedAt revokedAt } }
    alertContactsBySubscriberId(first: 20) { nodes { email state stateReason } }
    webhookEndpointBySubscriberId { url createdAt updatedAt }
  }
  allPlans(first: 200) { nodes { name perMinute perDay perMonth } }
}`;

const limit = (n) => (n === null || n === undefined ? 'unlimited' : n);

export function SubscriberView({ gql, id }) {
  const { data, error, reload } = useLoad(() => gql(ONE, { id }), [id]);
  const [issued, setIssued] = useState(null);
  const [plan, setPlan] = useState('');
  const [contacts, setContacts] = useState(null);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p>Loading…</p>`;
  const s = data.subscriberByRowId;
  if (!s) return html`<p>No subscriber ${id}.</p>`;
  const keys = [...s.apiKeysBySubscriberId.nodes].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const emails = contacts ?? s.alertContactsBySubscriberId.nodes.map((c) => c.email).join(', ');
  const act = (query, variables) => gql(query, variables).then(reload);
  const issue = async () => {
    const d = await gql(
      'mutation($id: UUID!) { issueKey(input: { subscriberId: $id }) { result { rowId apiKey keyPrefix } } }',
      { id },
    );
    setIssued(d.issueKey.result);
    reload();
  };
  return html`<h2>Subscriber: ${s.name}</h2>
    <p class="muted">
      id <code>${s.rowId}</code> · created ${fmtTime(s.createdAt)} · subscription ends ${fmtTime(s.subscriptionEndsAt)}
    </p>
    <section>
      <h3>State: ${s.status}</h3>
      ${
        s.status === 'active'
          ? html`<${ConfirmButton}
              danger
              label="Suspend"
              question=${`Suspend ${s.name}? Their keys are refused within a second.`}
              action=${() => act('mutation($id: UUID!) { suspendSubscriber(input: { id: $id }) { result { status } } }', { id })}
            />`
          : html`<${ConfirmButton}
              label="Activate"
              question=${`Activate ${s.name}?`}
              action=${() => act('mutation($id: UUID!) { activateSubscriber(input: { id: $id }) { result { status } } }', { id })}
            />`
      }
    </section>
    <section>
      <h3>Plan: ${s.planByPlanId.name}</h3>
      <p>
        ${limit(s.planByPlanId.perMinute)} a minute · ${limit(s.planByPlanId.perDay)} a day ·
        ${limit(s.planByPlanId.perMonth)} a month
      </p>
      <div class="row">
        <label
          >New plan
          <select value=${plan} onChange=${(e) => setPlan(e.target.value)}>
            <option value="">(choose)</option>
            ${data.allPlans.nodes.map((p) => html`<option value=${p.name}>${p.name}</option>`)}
          </select>
        </label>
        <${ConfirmButton}
          label="Change plan"
          question=${`Move ${s.name} to the plan "${plan}"?`}
          action=${() => act('mutation($id: UUID!, $plan: String!) { setSubscriberPlan(input: { id: $id, planName: $plan }) { result { rowId } } }', { id, plan })}
        />
      </div>
    </section>
    <section>
      <h3>Keys</h3>
      ${issued ? html`<${ShownOnce} label=${`New key ${issued.keyPrefix}.`} value=${issued.apiKey} />` : ''}
      <${ConfirmButton} label="Issue a key" question=${`Issue a new key for ${s.name}?`} action=${issue} />
      <${Table}
        rows=${keys}
        empty="No key yet."
        columns=${[
          { label: 'key', value: (k) => html`<a href=${`#/keys/${k.rowId}`}>${k.keyPrefix}</a>` },
          { label: 'state', value: (k) => k.status },
          { label: 'created', value: (k) => fmtTime(k.createdAt) },
          { label: 'last used', value: (k) => fmtTime(k.lastUsedAt) },
          {
            label: '',
            value: (k) =>
              k.status === 'revoked'
                ? `revoked ${fmtTime(k.revokedAt)}`
                : html`<${ConfirmButton}
                    danger
                    label="Revoke"
                    question=${`Revoke ${k.keyPrefix}? This cannot be undone.`}
                    action=${() => act('mutation($k: UUID!) { revokeKey(input: { keyId: $k }) { result { status } } }', { k: k.rowId })}
                  />`,
          },
        ]}
      />
    </section>
    <section>
      <h3>Alert contacts</h3>
      <${Table}
        rows=${s.alertContactsBySubscriberId.nodes}
        empty="No contact: usage alerts are not e-mailed."
        columns=${[
          { label: 'e-mail', value: (c) => c.email },
          { label: 'state', value: (c) => c.state + (c.stateReason ? ` (${c.stateReason})` : '') },
        ]}
      />
      <div class="row">
        <label
          >Contacts (comma-separated, at most 5)
          <input size="60" value=${emails} onInput=${(e) => setContacts(e.target.value)} />
        </label>
        <${ConfirmButton}
          label="Set contacts"
          question="Replace the alert contacts with this list?"
          action=${() =>
            act(
              'mutation($id: UUID!, $emails: [String]!) { setAlertContacts(input: { subscriber: $id, emails: $emails }) { clientMutationId } }',
              {
                id,
                emails: emails
                  .split(',')
                  .map((e) => e.trim())
                  .filter(Boolean),
              },
            ).then(() => setContacts(null))}
        />
      </div>
    </section>
    <section>
      <h3>Webhook endpoint</h3>
      ${
        s.webhookEndpointBySubscriberId
          ? html`<p>
              <code>${s.webhookEndpointBySubscriberId.url}</code> · since
              ${fmtTime(s.webhookEndpointBySubscriberId.createdAt)}
            </p>`
          : html`<p class="muted">None.</p>`
      }
    </section>`;
}
