import { readFileSync } from 'node:fs';
import * as tls from 'node:tls';

export interface TlsTrustConfig {
  /** A PEM file with the private CA(s) to trust in addition to the usual ones. */
  caFile?: string;
  /** NODE_EXTRA_CA_CERTS, which a custom CA list would otherwise shadow. */
  extraCaCertsFile?: string;
  insecureSkipVerify: boolean;
}

/** What every TLS connection of the daemon (gateway, https backend, https proxy) is given. */
export interface TlsTrust {
  /** undefined = Node's default trust store (which already includes NODE_EXTRA_CA_CERTS). */
  ca?: string[];
  rejectUnauthorized: boolean;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM file; throws a readable error when there are none. */
export function readPemCertificates(path: string, source: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`${source} "${path}" cannot be read: ${(e as Error).message}`);
  }
  const certs = text.match(PEM_CERT) ?? [];
  if (certs.length === 0) throw new Error(`${source} "${path}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return certs;
}

export function tlsTrust(config: TlsTrustConfig): TlsTrust {
  if (!config.caFile) return { rejectUnauthorized: !config.insecureSkipVerify };
  // A `ca` option replaces Node's trust store instead of adding to it: keep the public roots and
  // NODE_EXTRA_CA_CERTS, so a private CA for the gateway does not break a public one elsewhere.
  const ca = [...tls.rootCertificates];
  if (config.extraCaCertsFile) ca.push(...readPemCertificates(config.extraCaCertsFile, 'NODE_EXTRA_CA_CERTS'));
  ca.push(...readPemCertificates(config.caFile, '--ca-file'));
  return { ca, rejectUnauthorized: !config.insecureSkipVerify };
}
