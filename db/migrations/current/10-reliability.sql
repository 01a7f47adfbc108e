-- Issue 22 (reliability round 3).

-- Webhook secret rotation (admin.rotate_webhook_secret, 45-webhooks.sql): the replaced secret keeps
-- signing, beside the new one, until previous_secret_expires_at (24 h), as Standard Webhooks allows.
alter table admin.webhook_endpoints add column if not exists previous_secret_encrypted text
  check (previous_secret_encrypted like 'v1:%');
alter table admin.webhook_endpoints add column if not exists previous_secret_expires_at timestamptz;
