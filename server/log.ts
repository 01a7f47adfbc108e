import pino from 'pino';

export type Logger = pino.Logger;

/** Structured JSON logs on stdout. Secrets never reach a log line. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'partner-bar-api' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'api_key', 'token', 'password'],
      censor: '[redacted]',
    },
  });
}
