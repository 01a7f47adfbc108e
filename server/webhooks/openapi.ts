/**
 * The OpenAPI 3.1 `webhooks` section: the events a subscriber's endpoint
 * receives (decisions.md "Webhooks"), signed the Standard Webhooks way.
 */
const TYPES = {
  'usage.warning': 'A key used 80% of a rate-limit bucket (minute, day or month).',
  'usage.high_warning': 'A key used 90% of a rate-limit bucket.',
  'usage.limit_reached': 'A key reached 100% of a rate-limit bucket: further requests in the window get 429.',
  'key.revoked': "An operator revoked one of the subscriber's API keys (final).",
  'subscriber.suspended': 'An operator suspended the subscriber: every key is refused until it is activated.',
  'subscriber.activated': 'An operator re-activated the subscriber.',
} as const;

const usageData = {
  type: 'object',
  properties: {
    subscriber_id: { type: 'string', format: 'uuid' },
    key_id: { type: 'string', format: 'uuid' },
    bucket: { type: 'string', enum: ['minute', 'day', 'month'] },
    window_start: { type: 'string', format: 'date-time' },
    level: { type: 'string', enum: ['warning', 'high_warning', 'limit_reached'] },
    used: { type: 'integer' },
    limit: { type: 'integer' },
  },
  required: ['subscriber_id', 'key_id', 'bucket', 'window_start', 'level', 'used', 'limit'],
};
const keyData = {
  type: 'object',
  properties: {
    subscriber_id: { type: 'string', format: 'uuid' },
    key_id: { type: 'string', format: 'uuid' },
    key_prefix: { type: 'string' },
    revoked_at: { type: 'string', format: 'date-time' },
  },
  required: ['subscriber_id', 'key_id', 'key_prefix', 'revoked_at'],
};
const subscriberData = {
  type: 'object',
  properties: {
    subscriber_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['active', 'suspended'] },
  },
  required: ['subscriber_id', 'status'],
};

const signatureHeaders = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id: the same on every retry (deduplicate on it).',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt; reject values far from your clock (5 minutes).',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the base64-decoded part of your `whsec_` secret (Standard Webhooks).',
    schema: { type: 'string' },
  },
];

export const webhookOperations = Object.fromEntries(
  Object.entries(TYPES).map(([type, summary]) => {
    const data = type.startsWith('usage.') ? usageData : type === 'key.revoked' ? keyData : subscriberData;
    return [
      type,
      {
        post: {
          operationId: `webhook_${type.replace('.', '_')}`,
          summary,
          description:
            "Sent to the subscriber's webhook endpoint. Answer 2xx within 10 s; any other answer or a timeout is retried with exponential backoff for about 24 hours (same `webhook-id`). Delivery is at least once.",
          security: [],
          parameters: signatureHeaders,
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    id: { type: 'string', format: 'uuid', description: 'Equals the webhook-id header.' },
                    type: { type: 'string', const: type },
                    created_at: { type: 'string', format: 'date-time' },
                    data,
                  },
                  required: ['id', 'type', 'created_at', 'data'],
                },
              },
            },
          },
          responses: { 200: { description: 'Any 2xx acknowledges the event.' } },
        },
      },
    ];
  }),
);
