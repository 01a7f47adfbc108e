// The operator console: a page over the operator GraphQL endpoint, its only backend. Sign-in is
// the operator token, kept in this tab's sessionStorage and sent as Bearer (no cookie).
import { html, render, useEffect, useState } from './vendor/preact-htm.js';
import { graphql, store, stored } from './shared/api.js';
import { ErrorNote } from './shared/ui.js';
import { Overview } from './views/overview.js';
import { Subscribers, SubscriberView } from './views/subscribers.js';
import { KeyView } from './views/key.js';
import { Lookup } from './views/lookup.js';
import { Plans } from './views/plans.js';

const TOKEN = 'operator-token';

const VIEWS = [
  ['overview', 'Overview'],
  ['subscribers', 'Subscribers'],
  ['lookup', 'Request lookup'],
  ['plans', 'Plans'],
];

/** The view named by the hash: #/subscribers/<id>, #/keys/<id>, #/lookup/<request id>, ... */
function route() {
  const [name = 'overview', arg = ''] = location.hash.replace(/^#\/?/, '').split('/');
  return { name, arg: decodeURIComponent(arg) };
}

function SignIn({ onSignedIn }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      await graphql(token.trim(), '{ allPlans(first: 1) { totalCount } }');
      store(TOKEN, token.trim());
      onSignedIn(token.trim());
    } catch (err) {
      setError(err);
    }
  };
  return html`<main>
    <h1>Operator console</h1>
    <p>
      Sign in with an operator token (<code>npm run admin -- operator create NAME</code>). It is kept in this tab only,
      until you sign out or close it.
    </p>
    <form onSubmit=${submit} class="row">
      <label
        >Operator token
        <input type="password" autocomplete="off" required value=${token} onInput=${(e) => setToken(e.target.value)} />
      </label>
      <button type="submit">Sign in</button>
    </form>
    <${ErrorNote} error=${error} />
  </main>`;
}

function Console() {
  const [token, setToken] = useState(stored(TOKEN));
  const [where, setWhere] = useState(route());
  useEffect(() => {
    const onHash = () => setWhere(route());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (!token) return html`<${SignIn} onSignedIn=${setToken} />`;
  const signOut = () => {
    store(TOKEN, '');
    setToken('');
  };
  const gql = (query, variables) =>
    graphql(token, query, variables).catch((e) => {
      if (e.status === 401) signOut();
      throw e;
    });
  const section = where.name === 'keys' ? 'subscribers' : where.name;
  let view;
  if (where.name === 'subscribers' && where.arg) view = html`<${SubscriberView} gql=${gql} id=${where.arg} />`;
  else if (where.name === 'subscribers') view = html`<${Subscribers} gql=${gql} />`;
  else if (where.name === 'keys') view = html`<${KeyView} gql=${gql} id=${where.arg} />`;
  else if (where.name === 'lookup') view = html`<${Lookup} gql=${gql} initial=${where.arg} />`;
  else if (where.name === 'plans') view = html`<${Plans} gql=${gql} />`;
  else view = html`<${Overview} gql=${gql} />`;
  return html`<header class="top">
      <h1>Operator console</h1>
      <nav aria-label="Views">
        ${VIEWS.map(
          ([name, label]) =>
            html`<a href=${`#/${name}`} aria-current=${section === name ? 'page' : undefined}>${label}</a>`,
        )}
      </nav>
      <button onClick=${signOut}>Sign out</button>
    </header>
    <main>${view}</main>`;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" line: render() adds to what is there
render(html`<${Console} />`, root);
