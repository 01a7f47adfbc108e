import { randomBytes } from 'node:crypto';
import {
  decryptSecret,
  encryptSecret,
  generateSecret,
  parseEncryptionKey,
  sign,
  signedHeaders,
  verify,
} from '../../server/webhooks/signing';
import { checkWebhookTarget, isPrivateAddress, parseWebhookUrl } from '../../server/webhooks/address';

describe('Standard Webhooks signing', () => {
  test('matches the published reference vector', () => {
    // Vector of the Standard Webhooks / svix reference libraries.
    expect(
      sign(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  test('headers verify; a changed body, id or secret does not', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const h = signedHeaders(secret, 'evt_1', '{"a":1}', new Date(1_700_000_000_000));
    expect(h['webhook-timestamp']).toBe('1700000000');
    expect(verify(secret, 'evt_1', 1700000000, '{"a":1}', `v1,xxx ${h['webhook-signature']}`)).toBe(true);
    expect(verify(secret, 'evt_1', 1700000000, '{"a":2}', h['webhook-signature'])).toBe(false);
    expect(verify(secret, 'evt_2', 1700000000, '{"a":1}', h['webhook-signature'])).toBe(false);
    expect(verify(generateSecret(), 'evt_1', 1700000000, '{"a":1}', h['webhook-signature'])).toBe(false);
    expect(() => sign('nope', 'a', 1, '')).toThrow(/whsec_/);
  });

  test('secrets round-trip through AES-256-GCM; tampering and a wrong key fail', () => {
    const key = parseEncryptionKey(randomBytes(32).toString('base64'));
    const secret = generateSecret();
    const stored = encryptSecret(key, secret);
    expect(stored).not.toContain(secret.slice(6));
    expect(decryptSecret(key, stored)).toBe(secret);
    expect(encryptSecret(key, secret)).not.toBe(stored);
    const raw = Buffer.from(stored.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => decryptSecret(key, 'v1:' + raw.toString('base64'))).toThrow();
    expect(() => decryptSecret(randomBytes(32), stored)).toThrow();
    expect(() => parseEncryptionKey(undefined)).toThrow(/WEBHOOK_SECRET_KEY/);
    expect(() => parseEncryptionKey('abcd')).toThrow(/32 bytes/);
    expect(parseEncryptionKey('00'.repeat(32))).toHaveLength(32);
  });
});

describe('webhook URL rules', () => {
  const strict = { allowHttp: false, allowPrivate: false };

  test('https only unless http is allowed; no credentials', () => {
    expect(() => parseWebhookUrl('http://example.com/h', strict)).toThrow(/https/);
    expect(parseWebhookUrl('http://example.com/h', { ...strict, allowHttp: true }).host).toBe('example.com');
    expect(() => parseWebhookUrl('ftp://example.com', { ...strict, allowHttp: true })).toThrow();
    expect(() => parseWebhookUrl('https://u:p@example.com', strict)).toThrow(/credentials/);
    expect(() => parseWebhookUrl('not a url', strict)).toThrow(/valid/);
  });

  test('private, loopback and link-local addresses are classified', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::',
    ]) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
    }
  });

  test('a loopback URL is refused after resolution unless private addresses are allowed', async () => {
    await expect(checkWebhookTarget('https://localhost:9/h', strict)).rejects.toThrow(/non-public/);
    await expect(checkWebhookTarget('https://127.0.0.1/h', strict)).rejects.toThrow(/non-public/);
    await expect(checkWebhookTarget('https://[::1]/h', strict)).rejects.toThrow(/non-public/);
    const ok = await checkWebhookTarget('http://127.0.0.1:8080/h', { allowHttp: true, allowPrivate: true });
    expect(ok).toMatchObject({ address: '127.0.0.1', family: 4 });
  });
});
