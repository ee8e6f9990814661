/**
 * What the tests need of the Compose format: the property names of the compose-spec JSON schema
 * (https://github.com/compose-spec/compose-spec, schema/compose-spec.json at commit 170098ba07d9),
 * variable interpolation, and the short syntaxes of ports and volumes.
 */

export const TOP_LEVEL_KEYS = ['configs', 'include', 'models', 'name', 'networks', 'secrets', 'services', 'version', 'volumes'];

export const SERVICE_KEYS = [
  'annotations',
  'attach',
  'blkio_config',
  'build',
  'cap_add',
  'cap_drop',
  'cgroup',
  'cgroup_parent',
  'command',
  'configs',
  'container_name',
  'cpu_count',
  'cpu_percent',
  'cpu_period',
  'cpu_quota',
  'cpu_rt_period',
  'cpu_rt_runtime',
  'cpu_shares',
  'cpus',
  'cpuset',
  'credential_spec',
  'depends_on',
  'deploy',
  'develop',
  'device_cgroup_rules',
  'devices',
  'dns',
  'dns_opt',
  'dns_search',
  'domainname',
  'entrypoint',
  'env_file',
  'environment',
  'expose',
  'extends',
  'external_links',
  'extra_hosts',
  'gpus',
  'group_add',
  'healthcheck',
  'hostname',
  'image',
  'init',
  'ipc',
  'isolation',
  'label_file',
  'labels',
  'links',
  'logging',
  'mac_address',
  'mem_limit',
  'mem_reservation',
  'mem_swappiness',
  'memswap_limit',
  'models',
  'network_mode',
  'networks',
  'oom_kill_disable',
  'oom_score_adj',
  'pid',
  'pids_limit',
  'platform',
  'ports',
  'post_start',
  'pre_stop',
  'privileged',
  'profiles',
  'provider',
  'pull_policy',
  'pull_refresh_after',
  'read_only',
  'restart',
  'runtime',
  'scale',
  'secrets',
  'security_opt',
  'shm_size',
  'stdin_open',
  'stop_grace_period',
  'stop_signal',
  'storage_opt',
  'sysctls',
  'tmpfs',
  'tty',
  'ulimits',
  'use_api_socket',
  'user',
  'userns_mode',
  'uts',
  'volumes',
  'volumes_from',
  'working_dir',
];

export const BUILD_KEYS = [
  'additional_contexts',
  'args',
  'cache_from',
  'cache_to',
  'context',
  'dockerfile',
  'dockerfile_inline',
  'entitlements',
  'extra_hosts',
  'isolation',
  'labels',
  'network',
  'no_cache',
  'platforms',
  'privileged',
  'provenance',
  'pull',
  'sbom',
  'secrets',
  'shm_size',
  'ssh',
  'tags',
  'target',
  'ulimits',
];

export const HEALTHCHECK_KEYS = ['disable', 'interval', 'retries', 'start_interval', 'start_period', 'test', 'timeout'];
export const VOLUME_KEYS = ['driver', 'driver_opts', 'external', 'labels', 'name'];
export const DEPENDS_ON_CONDITIONS = ['service_started', 'service_healthy', 'service_completed_successfully'];
export const RESTART_POLICIES = ['no', 'always', 'on-failure', 'unless-stopped'];
/** Service names and volume names: `^[a-zA-Z0-9._-]+$` in the schema. */
export const NAME = /^[a-zA-Z0-9._-]+$/;
/** Compose durations: 1h30m, 45s, 500ms. */
export const DURATION = /^(\d+(\.\d+)?(us|ms|s|m|h))+$/;

/**
 * Compose interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error},
 * $VAR and $$. Throws on a malformed or required-but-unset variable.
 */
export function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\$|\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$/g, (match, braced: string | undefined, bare: string | undefined) => {
    if (match === '$$') return '$';
    if (bare !== undefined) return env[bare] ?? '';
    if (braced === undefined) throw new Error(`lone $ in "${value}"`);
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?$/s.exec(braced);
    if (!m) throw new Error(`bad interpolation \${${braced}} in "${value}"`);
    const [, name, op, arg = ''] = m;
    const v = env[name];
    const unsetOrEmpty = v === undefined || (op?.startsWith(':') && v === '');
    switch (op) {
      case undefined:
        return v ?? '';
      case ':-':
      case '-':
        return unsetOrEmpty ? interpolate(arg, env) : v!;
      case ':?':
      case '?':
        if (unsetOrEmpty) throw new Error(`${name} is required: ${arg}`);
        return v!;
      case ':+':
      case '+':
        return unsetOrEmpty ? '' : interpolate(arg, env);
      default:
        throw new Error(`bad operator in \${${braced}}`);
    }
  });
}

/** A service's environment as a map (the list form `KEY=value` too), interpolated. */
export function environmentOf(service: Record<string, unknown>, env: Record<string, string | undefined>): Record<string, string> {
  const raw = service.environment;
  const out: Record<string, string> = {};
  if (raw === undefined || raw === null) return out;
  if (Array.isArray(raw)) {
    for (const item of raw) {
      const s = String(item);
      const eq = s.indexOf('=');
      if (eq > 0) out[s.slice(0, eq)] = interpolate(s.slice(eq + 1), env);
    }
    return out;
  }
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (v === null || v === undefined) continue;
    if (typeof v === 'object') throw new Error(`environment ${k} must be a scalar`);
    out[k] = interpolate(String(v), env);
  }
  return out;
}

export interface PortMapping {
  hostIp?: string;
  published?: number;
  target: number;
}

/** The short port syntax `[HOST_IP:][PUBLISHED:]TARGET[/PROTOCOL]` (single ports only). */
export function parsePort(spec: string | number): PortMapping {
  const text = String(spec).replace(/\/(tcp|udp)$/, '');
  const m = /^(?:(?:(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?(\d+):)?(\d+)$/.exec(text);
  if (!m) throw new Error(`bad port "${spec}"`);
  const port = (s: string) => {
    const n = Number(s);
    if (n < 1 || n > 65535) throw new Error(`port out of range in "${spec}"`);
    return n;
  };
  return { hostIp: m[1], published: m[2] ? port(m[2]) : undefined, target: port(m[3]) };
}

export interface VolumeMount {
  type: 'bind' | 'volume';
  source: string;
  target: string;
  readOnly: boolean;
}

/** The short volume syntax `SOURCE:TARGET[:MODE]`: a path source is a bind mount, a name a named volume. */
export function parseVolume(spec: string): VolumeMount {
  const parts = spec.split(':');
  if (parts.length < 2 || parts.length > 3) throw new Error(`bad volume "${spec}"`);
  const [source, target, mode = 'rw'] = parts;
  if (!target.startsWith('/')) throw new Error(`volume target must be absolute in "${spec}"`);
  if (!['ro', 'rw', 'z', 'Z'].some((m) => mode.split(',').includes(m))) throw new Error(`bad volume mode in "${spec}"`);
  const isPath = source.startsWith('.') || source.startsWith('/') || source.startsWith('~');
  if (!isPath && !NAME.test(source)) throw new Error(`bad volume name in "${spec}"`);
  return { type: isPath ? 'bind' : 'volume', source, target, readOnly: mode.split(',').includes('ro') };
}
