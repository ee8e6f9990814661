/** REDIS_URL checks and the forms of it that are safe to show (no password, ever). */

const DEFAULT_PORT = 6379;

/**
 * Throws an Error naming the problem (with the password masked) unless `url` is a
 * `redis://` or `rediss://` URL with a host, an optional port and an optional numeric db path.
 */
export function validateRedisUrl(url: string): void {
  const shown = maskRedisUrl(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got "${shown}"`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL must start with redis:// or rediss://, got "${shown}"`);
  }
  if (!parsed.hostname) throw new Error(`REDIS_URL needs a host, got "${shown}"`);
  if (parsed.pathname && parsed.pathname !== '/' && !/^\/\d{1,2}$/.test(parsed.pathname)) {
    throw new Error(`REDIS_URL path must be a database number (/0 … /99), got "${shown}"`);
  }
}

/** `host:port` of a Redis URL (IPv6 in brackets, default port 6379), for health and logs. */
export function redisHostPort(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || DEFAULT_PORT}`;
  } catch {
    return 'invalid-url';
  }
}

/** The URL with its credentials replaced by `***` (for error messages). */
export function maskRedisUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
