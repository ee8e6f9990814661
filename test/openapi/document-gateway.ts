import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPENAPI_PATH } from '../../src/openapi/openapi.setup';
import { TestGateway } from '../support/gateway';
import { RegisteredRoute, startRecordingGateway } from './support';

// The gateway the OpenAPI document tests read (openapi.e2e-spec.ts, openapi-answers.e2e-spec.ts), and its document.

type Json = any;

/** The gateway's config file: valid, and changing nothing the tests look at. */
export const CONFIG = 'routing:\n  strategy: smart\n';

export interface DocumentGateway {
  gw: TestGateway;
  routes: RegisteredRoute[];
  doc: Json;
  configFile: string;
}

/** Starts a gateway recording its routes and fetches GET /openapi.json from it (which must answer 200 JSON). */
export async function openDocumentGateway(): Promise<DocumentGateway> {
  const configFile = join(mkdtempSync(join(tmpdir(), 'sb-openapi-')), 'config.yaml');
  writeFileSync(configFile, CONFIG);
  const { gw, routes } = await startRecordingGateway({ MAX_BODY_BYTES: '65536', CONFIG_FILE: configFile });
  const res = await fetch(`${gw.url}${OPENAPI_PATH}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const doc = await res.json();
  return { gw, routes, doc, configFile };
}
