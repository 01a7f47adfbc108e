/**
 * Admin CLI (operators.md §5): subscriber contacts [set | clear-bounce],
 * email deliveries; and the same contacts and deliveries in the operator
 * GraphQL endpoint, which can set contacts.
 */
import { COMMANDS, helpText, runCommand, UsageError } from '../../server/admin/cli';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startOperatorHarness, type OperatorHarness } from '../operator/support';
import { subscriberWithContacts } from './support';

describe('admin CLI: alert contacts and e-mail deliveries', () => {
  let db: TestDatabase;
  const run = (...argv: string[]) => runCommand(db.owner, argv);

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  test('set normalises and validates; an invalid address changes nothing; at most 5', async () => {
    const s = await subscriberWithContacts(db, []);
    expect(await run('subscriber', 'contacts', s.subscriberId)).toEqual([]);
    const set = (await run('subscriber', 'contacts', 'set', s.subscriberId, ' Ops@Acme.Example ,cto@acme.example')) as {
      email: string;
      state: string;
    }[];
    expect(set.map((c) => [c.email, c.state])).toEqual([
      ['cto@acme.example', 'active'],
      ['ops@acme.example', 'active'],
    ]);
    for (const bad of ['ops@acme.example,not-an-address', 'a@b', 'two@@acme.example', 'x@acme.example,']) {
      await expect(run('subscriber', 'contacts', 'set', s.subscriberId, bad)).rejects.toThrow(
        /invalid e-mail address|without empty entries/,
      );
    }
    await expect(
      run(
        'subscriber',
        'contacts',
        'set',
        s.subscriberId,
        'a@x.example,b@x.example,c@x.example,d@x.example,e@x.example,f@x.example',
      ),
    ).rejects.toThrow(/at most 5 alert contacts per subscriber, got 6/);
    const after = (await run('subscriber', 'contacts', s.subscriberId)) as { email: string }[];
    expect(after.map((c) => c.email)).toEqual(['cto@acme.example', 'ops@acme.example']);
    // replacing keeps the state of kept addresses (an unsubscribed one stays unsubscribed)
    await db.owner.query(`select api.unsubscribe_alert_contact($1, 'ops@acme.example')`, [s.subscriberId]);
    const replaced = (await run(
      'subscriber',
      'contacts',
      'set',
      s.subscriberId,
      'ops@acme.example,new@acme.example',
    )) as {
      email: string;
      state: string;
    }[];
    expect(replaced.map((c) => [c.email, c.state])).toEqual([
      ['new@acme.example', 'active'],
      ['ops@acme.example', 'unsubscribed'],
    ]);
  });

  test('clear-bounce: a bouncing contact is active again; errors are clear', async () => {
    const s = await subscriberWithContacts(db, ['b@acme.example', 'u@acme.example']);
    await db.owner.query(
      `update admin.alert_contacts set state = 'bouncing', state_reason = '550 No such user' where email = 'b@acme.example'`,
    );
    const cleared = (await run('subscriber', 'contacts', 'clear-bounce', s.subscriberId, 'B@acme.example')) as {
      state: string;
      state_reason: string | null;
    };
    expect(cleared).toMatchObject({ state: 'active', state_reason: null });
    await db.owner.query(`select api.unsubscribe_alert_contact($1, 'u@acme.example')`, [s.subscriberId]);
    await expect(run('subscriber', 'contacts', 'clear-bounce', s.subscriberId, 'u@acme.example')).rejects.toThrow(
      /unsubscribed itself/,
    );
    await expect(run('subscriber', 'contacts', 'clear-bounce', s.subscriberId, 'zz@acme.example')).rejects.toThrow(
      /no alert contact/,
    );
    await expect(run('subscriber', 'contacts', 'not-a-uuid')).rejects.toThrow(UsageError);
    await expect(run('subscriber', 'contacts', '00000000-0000-0000-0000-000000000000')).rejects.toThrow(
      /unknown subscriber/,
    );
    await expect(
      run('subscriber', 'contacts', 'set', '00000000-0000-0000-0000-000000000000', 'a@b.example'),
    ).rejects.toThrow(/unknown subscriber/);
    await expect(run('subscriber', 'contacts', 'set', s.subscriberId)).rejects.toThrow(/expected SUBSCRIBER_ID EMAIL/);
  });

  test('email deliveries: newest first, filtered by subscriber and status', async () => {
    const s = await subscriberWithContacts(db, ['d@acme.example']);
    await db.owner.query(`select api.record_usage_alert($1, 'day', '2026-11-24T00:00:00Z', 'warning', 80, 100)`, [
      s.keyId,
    ]);
    await db.owner.query(
      `select api.record_usage_alert($1, 'day', '2026-11-24T00:00:00Z', 'limit_reached', 100, 100)`,
      [s.keyId],
    );
    const all = (await run('email', 'deliveries', '--subscriber', s.subscriberId)) as Record<string, unknown>[];
    expect(all.map((d) => [d.email, d.level, d.status, d.key_prefix])).toEqual([
      ['d@acme.example', 'limit_reached', 'pending', s.keyPrefix],
      ['d@acme.example', 'warning', 'pending', s.keyPrefix],
    ]);
    expect(await run('email', 'deliveries', '--subscriber', s.subscriberId, '--status', 'sent')).toEqual([]);
    await expect(run('email', 'deliveries', '--status', 'bounced')).rejects.toThrow(
      /--status must be pending, sent or failed, got "bounced"/,
    );
    await expect(run('email', 'deliveries', '--subscriber', 'x')).rejects.toThrow(/--subscriber must be a UUID/);
  });

  test('help lists the commands', () => {
    const names = COMMANDS.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['subscriber contacts', 'email deliveries']));
    expect(helpText()).toMatch(/subscriber contacts SUBSCRIBER_ID \| set SUBSCRIBER_ID EMAIL\[,EMAIL\.\.\.\]/);
    expect(helpText()).toMatch(/email deliveries \[--subscriber ID\] \[--status pending\|sent\|failed\]/);
  });
});

describe('operator GraphQL: alert contacts and e-mail deliveries', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  test('setAlertContacts sets (validated, as the CLI); contacts and deliveries are readable', async () => {
    const s = await subscriberWithContacts(db, []);
    const set = await ops.gql(
      `mutation ($id: UUID!, $emails: [String]!) {
         setAlertContacts(input: { subscriber: $id, emails: $emails }) { result { email state } } }`,
      { id: s.subscriberId, emails: ['Ops@Acme.example'] },
    );
    expect(set.body.errors).toBeUndefined();
    expect(set.body.data!.setAlertContacts.result).toEqual([{ email: 'ops@acme.example', state: 'active' }]);
    const bad = await ops.gql(
      `mutation ($id: UUID!) { setAlertContacts(input: { subscriber: $id, emails: ["nope"] }) { clientMutationId } }`,
      { id: s.subscriberId },
    );
    expect(bad.body.errors?.[0]?.message).toMatch(/invalid e-mail address "nope"/);
    await db.owner.query(`select api.record_usage_alert($1, 'month', '2026-11-01T00:00:00Z', 'warning', 8, 10)`, [
      s.keyId,
    ]);
    const read = await ops.gql(
      `{ allAlertContacts { nodes { subscriberId email state } }
         allEmailDeliveries(orderBy: CREATED_AT_DESC) { nodes { email bucket level status alertCount attempts } } }`,
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data!.allAlertContacts.nodes).toEqual([
      { subscriberId: s.subscriberId, email: 'ops@acme.example', state: 'active' },
    ]);
    expect(read.body.data!.allEmailDeliveries.nodes).toEqual([
      { email: 'ops@acme.example', bucket: 'month', level: 'warning', status: 'pending', alertCount: 1, attempts: 0 },
    ]);
  });
});
