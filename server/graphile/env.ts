/**
 * Grafast reads its mode once, when first loaded, from GRAPHILE_ENV (else
 * NODE_ENV), and prints a warning on stderr when both are unset. Tell it the
 * mode loadConfig() derives (unset NODE_ENV = development), so `npm start`
 * keeps stderr for its own messages. Import before anything from postgraphile.
 */
if (process.env.GRAPHILE_ENV === undefined) {
  const nodeEnv = process.env.NODE_ENV;
  process.env.GRAPHILE_ENV = nodeEnv === 'production' || nodeEnv === 'test' ? nodeEnv : 'development';
}

export {};
