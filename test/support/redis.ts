/** Tests that need a real Redis run only when one is configured; otherwise they are skipped (and globalSetup says so). */
export const redisUrl: string | undefined = process.env.TEST_REDIS_URL || undefined;

export const describeWithRedis: jest.Describe = redisUrl ? describe : describe.skip;
