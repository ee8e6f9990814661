import { Logger } from '../logger';
import { ProxySettings, describeProxy, proxyFor } from '../network/proxy-env';

export interface NetworkSetup {
  gatewayUrl: string;
  backendUrl: string;
  proxy: ProxySettings;
  insecureSkipVerify?: boolean;
  caFile?: string;
}

/** At start: how the worker reaches the gateway and the backend (TLS trust, proxies), with warnings for risky setups. */
export function logNetworkSetup(log: Logger, setup: NetworkSetup): void {
  if (setup.insecureSkipVerify) {
    log.warn(
      'TLS CERTIFICATE VERIFICATION IS OFF (--insecure-skip-verify): anyone on the network path can impersonate the gateway ' +
        'and read the worker secret and every prompt. Use --ca-file with your CA instead; never run this in production.',
    );
  }
  if (setup.caFile) log.info('trusting the CA certificates of --ca-file in addition to the public roots', { ca_file: setup.caFile });
  const gatewayProxy = proxyFor(new URL(setup.gatewayUrl), setup.proxy);
  if (gatewayProxy) log.info('gateway connection goes through a proxy (CONNECT tunnel)', { proxy: describeProxy(gatewayProxy) });
  const backendUrl = new URL(setup.backendUrl);
  const backendProxy = proxyFor(backendUrl, setup.proxy);
  if (backendProxy) {
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(backendUrl.hostname) || backendUrl.hostname.startsWith('127.');
    const fields = { proxy: describeProxy(backendProxy), backend: backendUrl.origin };
    if (loopback) {
      log.warn('backend calls go through the proxy although the backend is on this host; add it to NO_PROXY unless that is intended', {
        ...fields,
        hint: `NO_PROXY=${backendUrl.hostname.replace(/^\[|\]$/g, '')},localhost,127.0.0.1`,
      });
    } else {
      log.info('backend calls go through a proxy', fields);
    }
  }
}
