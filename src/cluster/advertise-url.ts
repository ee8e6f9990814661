import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';

export interface AdvertiseInputs {
  /** CLUSTER_ADVERTISE_URL, used as is. */
  advertiseUrl?: string;
  /** CLUSTER_LISTEN_ADDR (`host:port`): the internal routes' own listener. */
  listenAddr?: string;
  /** LISTEN_ADDR's host. */
  listenHost: string;
  /** HTTPS on the public listener. */
  tls: boolean;
  /** The public listener's bound address (its port is known only once it listens: LISTEN_ADDR may say 0). */
  bound: AddressInfo | string | null;
}

const ANY = new Set(['0.0.0.0', '::', '']);

/**
 * Where the other replicas reach this one: CLUSTER_ADVERTISE_URL when set, else the internal
 * listener, else the public one. A listener on every address is named by the host name, which
 * is what other containers or hosts resolve.
 */
export function resolveAdvertiseUrl(inputs: AdvertiseInputs): string | undefined {
  if (inputs.advertiseUrl) return inputs.advertiseUrl.replace(/\/$/, '');
  if (inputs.listenAddr) {
    const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(inputs.listenAddr.trim());
    if (m) return `http://${hostFor(m[1].replace(/^\[|\]$/g, ''))}:${m[2]}`;
  }
  if (!inputs.bound || typeof inputs.bound === 'string') return undefined;
  return `${inputs.tls ? 'https' : 'http'}://${hostFor(inputs.listenHost)}:${inputs.bound.port}`;
}

function hostFor(host: string): string {
  if (ANY.has(host)) return hostname();
  return host.includes(':') ? `[${host}]` : host;
}
