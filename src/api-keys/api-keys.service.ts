import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ClientAuthFailureReason, MetricsService } from '../observability/metrics.service';
import { ClientIdentity, identifyByHeaders } from '../tenancy/client-identity';
import { TenantsService } from '../tenancy/tenants.service';
import type { KeyFields } from '../config/sections/api-key-fields';
import { displayPrefix, generateKey, hasOnlyKeyCharacters, hashKey, looksLikeGatewayKey } from './api-key-material';
import { KeyedTenants } from './keyed-tenants';
import { dropStrayKeys, Presented, presentedCredentials } from './presented-credentials';
import { ApiKeyRecord, ApiKeyStore } from './api-key-store';
import { identifyByKey } from './key-identity';
import { loadKeys } from './api-key-boot';

export type KeyStatus = 'active' | 'disabled' | 'revoked' | 'expired';

type Verdict =
  | { kind: 'foreign'; p: Presented } // not a gateway key: a backend credential, forwarded as it is
  | { kind: 'malformed'; p: Presented }
  | { kind: 'unknown'; p: Presented } // in the gateway's format (`sb-`), but no such key
  | { kind: 'key'; p: Presented; record: ApiKeyRecord };

export interface NewKey {
  record: ApiKeyRecord;
  /** The key itself: returned once, never stored. */
  key: string;
}

/**
 * Client API keys. Verification never touches the database: keys are held in memory, indexed by
 * the SHA-256 of the key, and every admin change is written through to the store and applied to
 * the index before it answers. `last_used_at` is written behind: remembered per key and written
 * for all keys used meanwhile in one statement every `API_KEY_LAST_USED_FLUSH_SECS`. In cluster
 * mode a change is published on the cluster bus and the other replicas re-read the key
 * (api-key-sync.ts); a key in the gateway's format that this replica does not hold yet is looked up
 * once in the database before the request is judged (cluster-key-lookup.ts).
 */
@Injectable()
export class ApiKeysService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('ApiKeys');
  private readonly byId = new Map<string, ApiKeyRecord>();
  private readonly byHash = new Map<string, ApiKeyRecord>();
  private readonly keyedTenants = new KeyedTenants();
  /** `enabled` as the config file declares it, for keys from the file. */
  private readonly configEnabled = new Map<string, boolean>();
  private pendingLastUsed = new Map<string, number>();
  private flushChain: Promise<void> = Promise.resolve();
  private flushRunning = false;
  private flushTimer: TimerHandle | undefined;
  private closed = false;
  /** Failed key authentications per client address (its own instance: worker failures are separate). */
  readonly limiter: FailedAuthLimiter;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly store: ApiKeyStore,
    private readonly tenants: TenantsService,
    private readonly metrics: MetricsService,
    @Optional() private readonly bus?: ClusterBus,
  ) {
    this.limiter = new FailedAuthLimiter({ ...config.apiKeys.authLimiter, trustedProxies: config.authLimiter.trustedProxies }, clock);
  }

  /** `REQUIRE_API_KEYS`: requests without a valid key are refused. */
  get required(): boolean {
    return this.config.apiKeys.requireApiKeys;
  }

  async onModuleInit(): Promise<void> {
    await this.load();
    this.flushTimer = this.clock.setInterval(() => {
      if (!this.flushRunning) void this.flushLastUsed();
    }, this.config.apiKeys.lastUsedFlushIntervalMs);
    if (this.required && ![...this.byId.values()].some((k) => this.statusOf(k) === 'active')) {
      this.log.warn(
        'REQUIRE_API_KEYS is on and no usable API key exists: every client request is refused until one is created (POST /admin/keys) or declared (keys: in the config file)',
      );
    }
  }

  /** Runs before the DataSource is destroyed: writes the pending `last_used_at` values. */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.flushTimer !== undefined) this.clock.clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    this.limiter.stop();
    await this.flushLastUsed();
    this.closed = true;
  }

  // ---- request path (synchronous, in memory)

  /**
   * Who is calling an inference route: authenticates the request's key when one is required or
   * presented, then identifies the tenant (the key's, else `x-tenant-id`). A gateway key is removed
   * from `req.headers`, so it is never forwarded to a worker.
   */
  identify(req: FastifyRequest): ClientIdentity | GatewayError {
    const key = this.authenticate(req);
    if (key instanceof GatewayError) return key;
    const settingsOf = (tenant: string) => this.tenants.settingsOf(tenant);
    if (key) return identifyByKey(key, req.headers, settingsOf);
    const identity = identifyByHeaders(req.headers, settingsOf);
    // H3: a tenant with an active key is reached only with one of its keys, whatever REQUIRE_API_KEYS
    // says; otherwise naming it in x-tenant-id would open its data and spend its limits.
    if (!(identity instanceof GatewayError) && this.keyedTenants.hasActiveKey(identity.tenant, this.clock.now())) {
      return this.refuse('tenant_has_keys', Errors.tenantKeyRequired());
    }
    return identity;
  }

  /**
   * The key that authenticates this request, or null for an anonymous request (keys not required
   * and no gateway key presented), or the error to answer. Gateway keys are removed from
   * `req.headers` (wherever in a header value they were put); other credentials (a backend's own
   * key) stay and are forwarded.
   *
   * Keys are looked up before the failed-auth limiter is asked: a lookup is a hash and a Map get,
   * so a valid key is accepted even while its address is throttled (one client behind a shared
   * proxy address cannot lock out every key holder), and only unknown material is counted and limited.
   */
  authenticate(req: FastifyRequest): ApiKeyRecord | null | GatewayError {
    const headers = req.headers;
    dropStrayKeys(headers);
    const presented = presentedCredentials(headers);
    if (presented.length === 0 && !this.required) return null;
    const verdicts = presented.map((p) => this.classify(p));
    const gateway = verdicts.filter((v) => v.kind !== 'foreign');
    if (gateway.length === 0 && !this.required) return null;

    // From here on the request authenticates with a key.
    const keys = gateway.filter((v): v is Extract<Verdict, { kind: 'key' }> => v.kind === 'key');
    if (keys.length === 0 || keys.length < gateway.length) return this.refuseUnknown(req, presented, gateway);
    for (const { record } of keys) {
      const status = this.statusOf(record);
      // A real key that no longer works is not a guess: counted, but it does not block the address.
      if (status !== 'active') return this.refuse(status, Errors.invalidApiKey());
    }
    const record = keys[0].record;
    if (keys.some((k) => k.record !== record)) {
      return this.refuse('malformed', Errors.invalidRequest('Authorization and x-api-key carry two different API keys; send one'));
    }
    for (const v of keys) delete headers[v.p.header];
    this.touch(record);
    return record;
  }

  /** No valid key among what was presented: the limiter is asked, and a guess is counted. */
  private refuseUnknown(req: FastifyRequest, presented: Presented[], gateway: Verdict[]): GatewayError {
    const client = this.limiter.clientKey(req.raw.socket?.remoteAddress, req.headers);
    if (this.limiter.isBlocked(client)) return this.refuse('rate_limited', Errors.authRateLimited(this.config.apiKeys.authLimiter.blockMs));
    const malformed = gateway.find((v) => v.kind === 'malformed');
    if (malformed) {
      return this.refuse(
        'malformed',
        Errors.invalidRequest(`The API key in ${malformed.p.header} has characters an API key cannot have (only visible ASCII)`, malformed.p.header),
      );
    }
    if (gateway.length === 0 && presented.length === 0) return this.refuse('missing', Errors.missingApiKey());
    // An unknown gateway key, or (keys required) only credentials that are not keys: counted like a guess.
    this.limiter.recordFailure(client);
    return this.refuse('invalid', Errors.invalidApiKey());
  }

  private classify(p: Presented): Verdict {
    if (!hasOnlyKeyCharacters(p.value)) return this.required || looksLikeGatewayKey(p.value) ? { kind: 'malformed', p } : { kind: 'foreign', p };
    // Hash, then one Map lookup: the work is the same whatever was presented, and no string is compared.
    const record = this.byHash.get(hashKey(p.value));
    if (record) return { kind: 'key', p, record };
    return looksLikeGatewayKey(p.value) ? { kind: 'unknown', p } : { kind: 'foreign', p };
  }

  private refuse(reason: ClientAuthFailureReason, error: GatewayError): GatewayError {
    this.metrics.auth.clientFailure(reason);
    return error;
  }

  private touch(record: ApiKeyRecord): void {
    const now = this.clock.now();
    record.lastUsedAt = now;
    if (!this.closed) this.pendingLastUsed.set(record.id, now);
  }

  statusOf(record: ApiKeyRecord): KeyStatus {
    if (!record.enabled) return record.revokedAt !== null ? 'revoked' : 'disabled';
    if (record.expiresAt !== null && record.expiresAt <= this.clock.now()) return 'expired';
    return 'active';
  }

  // ---- write-behind of last_used_at

  /** Writes the pending `last_used_at` values (one statement) and waits for earlier flushes too. */
  flushLastUsed(): Promise<void> {
    this.flushChain = this.flushChain.then(async () => {
      if (this.pendingLastUsed.size === 0) return;
      // Taken when the write starts, so uses that arrive while an earlier write runs are included.
      const batch = this.pendingLastUsed;
      this.pendingLastUsed = new Map();
      this.flushRunning = true;
      try {
        await this.store.recordLastUsed([...batch]);
      } catch (e) {
        this.log.warn(`writing last_used_at of ${batch.size} API key(s) failed: ${(e as Error).message}`);
      } finally {
        this.flushRunning = false;
      }
    });
    return this.flushChain;
  }

  /** Resolves once the flushes started so far have finished (without starting one); for tests. */
  whenIdle(): Promise<void> {
    return this.flushChain;
  }

  // ---- admin (write-through)

  list(): ApiKeyRecord[] {
    return [...this.byId.values()].sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.byId.get(id);
  }

  /** A new key for `fields.tenant`; the key itself is in the result and nowhere else. */
  async create(fields: KeyFields & { name: string; tenant: string }): Promise<NewKey> {
    const key = generateKey();
    let id: string;
    do id = `key_${randomBytes(12).toString('base64url')}`;
    while (this.byId.has(id));
    const enabled = fields.enabled ?? true;
    const now = this.clock.now();
    const record: ApiKeyRecord = {
      id,
      name: fields.name,
      keyHash: hashKey(key),
      prefix: displayPrefix(key),
      tenant: fields.tenant,
      enabled,
      source: 'admin',
      rpm: fields.rpm ?? null,
      tpm: fields.tpm ?? null,
      maxConcurrent: fields.maxConcurrent ?? null,
      priority: fields.priority ?? null,
      models: fields.models ?? null,
      expiresAt: fields.expiresAt ?? null,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: enabled ? null : now,
    };
    await this.store.save(record);
    this.index(record);
    this.changed(id);
    this.log.log(`API key ${id} (${record.prefix}…) created for tenant ${record.tenant}`);
    return { record, key };
  }

  /**
   * Changes a key; `enabled: false` revokes it at once (`revoked_at` set), `enabled: true`
   * restores it. Keys from the config file only take `enabled` (their settings live in the file).
   */
  async update(id: string, fields: KeyFields): Promise<ApiKeyRecord | undefined> {
    const current = this.byId.get(id);
    if (!current) return undefined;
    if (current.source === 'config') {
      const other = (Object.keys(fields) as Array<keyof KeyFields>).filter((k) => k !== 'enabled' && fields[k] !== undefined);
      if (other.length > 0) {
        throw new GatewayError('conflict', `Key '${id}' is declared in the config file: change its settings there (the admin API may only set enabled)`);
      }
      if (fields.enabled === true && this.configEnabled.get(id) === false) {
        throw new GatewayError('conflict', `Key '${id}' is disabled in the config file: enable it there`);
      }
    }
    const next: ApiKeyRecord = { ...current };
    if (fields.name !== undefined) next.name = fields.name;
    if (fields.tenant !== undefined) next.tenant = fields.tenant;
    if (fields.rpm !== undefined) next.rpm = fields.rpm;
    if (fields.tpm !== undefined) next.tpm = fields.tpm;
    if (fields.maxConcurrent !== undefined) next.maxConcurrent = fields.maxConcurrent;
    if (fields.priority !== undefined) next.priority = fields.priority;
    if (fields.models !== undefined) next.models = fields.models;
    if (fields.expiresAt !== undefined) next.expiresAt = fields.expiresAt;
    if (fields.enabled !== undefined && fields.enabled !== current.enabled) {
      next.enabled = fields.enabled;
      next.revokedAt = fields.enabled ? null : this.clock.now();
    }
    await this.store.save(next);
    const latest = this.byId.get(id);
    if (!latest) {
      // Deleted while this write ran: the upsert must not bring it back.
      await this.store.delete(id);
      return undefined;
    }
    next.lastUsedAt = latest.lastUsedAt; // the use recorded while the write ran is kept
    this.index(next);
    this.changed(id);
    if (next.enabled !== current.enabled) this.log.log(`API key ${id} ${next.enabled ? 'restored' : 'revoked'}`);
    return next;
  }

  /** Deletes an admin key: it stops working at once and its row is removed. */
  async remove(id: string): Promise<boolean> {
    const current = this.byId.get(id);
    if (!current) return false;
    if (current.source === 'config') {
      throw new GatewayError(
        'conflict',
        `Key '${id}' is declared in the config file and returns at the next boot: remove it there, or revoke it now with PATCH {"enabled": false}`,
      );
    }
    await this.store.delete(id);
    this.byId.delete(id);
    this.byHash.delete(current.keyHash);
    this.keyedTenants.drop(id);
    this.pendingLastUsed.delete(id);
    this.changed(id);
    this.log.log(`API key ${id} deleted`);
    return true;
  }

  /** Cluster mode: the other replicas re-read the key (api-key-sync.ts). */
  private changed(id: string): void {
    this.bus?.publish(BUS_TOPICS.apiKey, { id });
  }

  private index(record: ApiKeyRecord): void {
    const previous = this.byId.get(record.id);
    if (previous && previous.keyHash !== record.keyHash) this.byHash.delete(previous.keyHash);
    this.byId.set(record.id, record);
    this.byHash.set(record.keyHash, record);
    // O(1) per key (keyed-tenants.ts): a pass over every key here made loading N keys O(N²).
    this.keyedTenants.put(record);
  }

  // ---- boot, and changes made by other replicas (api-key-sync.ts)

  private async load(): Promise<void> {
    const { records, configEnabled } = await loadKeys(this.store, this.config.apiKeys.keys, this.clock.now(), this.log);
    for (const [id, enabled] of configEnabled) this.configEnabled.set(id, enabled);
    for (const r of records) this.index(r);
    this.log.log(`${records.length} API key(s) loaded (${configEnabled.size} from the config file)${this.required ? '; keys are required' : ''}`);
  }

  /**
   * Applies a key as stored now (another replica changed it): indexed like a local change, or
   * forgotten when the row is gone. `last_used_at` this replica recorded meanwhile is kept.
   */
  applyStored(id: string, stored: ApiKeyRecord | undefined): void {
    const current = this.byId.get(id);
    if (!stored) {
      if (!current) return;
      this.byId.delete(id);
      this.byHash.delete(current.keyHash);
      this.keyedTenants.drop(id);
      this.pendingLastUsed.delete(id);
      return;
    }
    if (current && current.lastUsedAt !== null && (stored.lastUsedAt === null || stored.lastUsedAt < current.lastUsedAt)) {
      stored.lastUsedAt = current.lastUsedAt;
    }
    this.index(stored);
  }

  /** Whether a key with this SHA-256 is held in memory (the cluster lookup skips those). */
  knowsHash(hash: string): boolean {
    return this.byHash.has(hash);
  }

  /** Every key held in memory, by id (resync compares them with the store). */
  heldIds(): string[] {
    return [...this.byId.keys()];
  }
}

export { configKeyId } from './api-key-boot';
