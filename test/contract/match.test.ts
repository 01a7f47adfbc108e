import { apiSql, CALLS } from '../../server/contract/calls';
import { matchEndpoint, NO_ENDPOINT } from '../../server/contract/match';

describe('matchEndpoint (from the declarations, before routing)', () => {
  const P = '/api/v1/partner';
  it.each([
    ['GET', `${P}/test_endpoint`, 'test_endpoint'],
    ['HEAD', `${P}/bars`, 'bars'],
    ['GET', `${P}/bars/`, 'bars'],
    ['GET', `${P}/BARS/12`, 'bars/:id'],
    ['GET', `${P}/bars_by_city/NY/New%20York`, 'bars_by_city/:state/:city'],
    ['GET', `${P}/usage/history`, 'usage/history'],
    ['GET', `${P}/export/events`, 'export/events'],
    ['POST', `${P}/graphql`, 'graphql'],
    ['GET', `${P}/graphql`, 'graphql'],
  ])('%s %s is %s', (method, path, name) => {
    expect(matchEndpoint(method, path)).toBe(name);
  });
  it.each([
    ['POST', `${P}/bars`], // GET routes only
    ['GET', `${P}/bars/1/2`],
    ['GET', `${P}/bars/%E0%A4%A`], // an undecodable parameter matches nothing
    ['GET', `${P}//bars`],
    ['GET', `${P}`],
    ['GET', '/healthz'],
    ['GET', `${P}/nope`],
  ])('%s %s is (none)', (method, path) => {
    expect(matchEndpoint(method, path)).toBe(NO_ENDPOINT);
  });
});

describe('apiSql (the one table of api.* calls)', () => {
  it('passes the given arguments by name, in the declared order, and leaves undefined ones to their defaults', () => {
    const s = apiSql(CALLS.bar, { now: 'n', id: '7' });
    expect(s.text).toBe('select api.bar(p_id => $1, p_now => $2)::text as body');
    expect(s.values).toEqual(['7', 'n']);
    expect(apiSql(CALLS.bar, { id: '7' }).text).toBe('select api.bar(p_id => $1)::text as body');
  });
  it('passes null as an argument, casts and names the result column, quotes reserved names', () => {
    expect(apiSql(CALLS.usage, { subscriber_id: 's', plan: null, buckets: '{}' })).toEqual({
      text: 'select api.usage(p_subscriber_id => $1, p_plan => $2, p_buckets => $3::json)::text as body',
      values: ['s', null, '{}'],
    });
    expect(apiSql(CALLS.recordUsageAlert, { api_key_id: 'k', limit: 5 }).text).toBe(
      'select api.record_usage_alert(api_key_id => $1, "limit" => $2) as created',
    );
  });
});
