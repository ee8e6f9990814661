import type Redis from 'ioredis';
import { GcraMode, MAX_DEBT_MS } from './gcra';
import type { RateBucket, RateDecision } from './rate-limiter';

/**
 * gcraStep (gcra.ts) in Lua, run atomically by Redis: one key per bucket holding
 * "level:updatedAt:windowMs" (see GcraState), with PEXPIRE at the time the bucket is full again.
 *
 * KEYS[1] bucket key
 * ARGV[1] 'consume' | 'charge'; ARGV[2] limit; ARGV[3] windowMs; ARGV[4] cost
 * ARGV[5] optional now (epoch ms) — only for tests comparing this script with gcraStep; the
 *         limiter never sends it, so the time is Redis TIME and replicas with skewed clocks agree.
 * Returns {allowed 1|0, remaining, resetAt, retryAfterMs, charged (0 for consume)}.
 *
 * The debt ceiling is gcra.ts's MAX_DEBT_MS (24 h of refill), and one charge moves the level at
 * most one window past max(level, capacity), as in gcraStep.
 * Numbers are written with %.17g (Lua's tostring keeps only 14 digits) and every value returned
 * is a whole number (Redis truncates Lua numbers to integers).
 */
export const GCRA_LUA = `
local key = KEYS[1]
local mode = ARGV[1]
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local now
if ARGV[5] and ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local capacity = limit * window
local ceiling = capacity + limit * ${MAX_DEBT_MS}
local level0 = 0
local ref = now
local raw = redis.call('GET', key)
if raw then
  local l, u, w = string.match(raw, '^([^:]+):([^:]+):([^:]+)$')
  l = tonumber(l)
  u = tonumber(u)
  w = tonumber(w)
  if l and u and w and w > 0 then
    if w ~= window then l = math.ceil(l * window / w) end
    ref = math.max(now, u)
    level0 = math.min(ceiling, math.max(0, l - limit * (ref - u)))
  end
end
local wanted = level0 + cost * window
local allowed
local level1
if mode == 'charge' then
  level1 = math.min(wanted, math.max(level0, capacity) + capacity, ceiling)
  allowed = wanted <= capacity
else
  allowed = wanted <= capacity
  if allowed then level1 = wanted else level1 = level0 end
end
local remaining = 0
if level1 < capacity then remaining = math.floor((capacity - level1) / window) end
local resetAt = ref + math.ceil(level1 / limit)
local retry = 0
if not allowed then
  if mode == 'charge' then
    retry = ref - now + math.ceil((level1 - capacity) / limit)
  elseif cost > limit then
    retry = math.max(1, resetAt - now)
  else
    retry = ref - now + math.ceil((wanted - capacity) / limit)
  end
end
if cost > 0 and (allowed or mode == 'charge') then
  redis.call('SET', key, string.format('%.17g:%.17g:%.17g', level1, ref, window),
    'PX', string.format('%d', math.ceil(level1 / limit)))
end
if allowed then allowed = 1 else allowed = 0 end
local charged = 0
if mode == 'charge' then charged = math.ceil((level1 - level0) / window) end
return {allowed, remaining, resetAt, retry, charged}
`;

export const GCRA_COMMAND = 'switchboardGcra';

/** The command `defineCommand` adds (EVALSHA, falling back to EVAL when the script is not cached). */
interface GcraCommand {
  switchboardGcra(key: string, mode: GcraMode, limit: number, windowMs: number, cost: number, now?: number | string): Promise<unknown>;
}

/** Adds the script to a client (idempotent). */
export function defineGcraCommand(client: Redis): void {
  if (typeof (client as unknown as Partial<GcraCommand>)[GCRA_COMMAND] !== 'function') {
    client.defineCommand(GCRA_COMMAND, { numberOfKeys: 1, lua: GCRA_LUA });
  }
}

/**
 * Runs one GCRA step in Redis. `nowForTests` replaces Redis TIME (tests only: the limiter itself
 * never passes it).
 */
export async function runGcraScript(
  client: Redis,
  redisKey: string,
  mode: GcraMode,
  bucket: RateBucket,
  cost: number,
  nowForTests?: number,
): Promise<RateDecision> {
  const args: [string, GcraMode, number, number, number, ...Array<number | string>] = [redisKey, mode, bucket.limit, bucket.windowMs, cost];
  if (nowForTests !== undefined) args.push(nowForTests);
  const reply = await (client as unknown as GcraCommand).switchboardGcra(...args);
  if (!Array.isArray(reply) || reply.length !== 5 || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, resetAt, retryAfterMs, charged] = reply as number[];
  const decision: RateDecision = { allowed: allowed === 1, limit: bucket.limit, remaining, resetAt, retryAfterMs };
  if (mode === 'charge') decision.charged = charged;
  return decision;
}
