/** What `npm start` prints (embedded demo database) so a newcomer gets a working key. */
export function firstKeyHint(baseUrl: string): string {
  return [
    'Get an API key (a demo subscriber on the standard plan and its key, in one step):',
    '  npm run --silent admin -- key issue --new-subscriber "Demo partner"',
    '(or: npm run --silent admin -- subscriber create --name "Demo partner", then key issue <its id>)',
    'Then:',
    `  curl -H "Authorization: Bearer <api_key>" ${baseUrl}/api/v1/partner/test_endpoint`,
  ].join('\n');
}
