import { loadConfig } from '../config';
import { WorkerNumberBounds } from '../protocol/number-bounds';
import { registerFrameCap } from './register-frame-cap';
import { sanitizeModels, WorkerLimits } from './sanitize-models';

describe('registerFrameCap', () => {
  const { connections } = loadConfig({});

  it('is the base (WORKER_REGISTER_FRAME_BYTES) plus 256 bytes per model the provider allows, up to the gateway ceiling', () => {
    expect(registerFrameCap(connections, undefined)).toBe(64 * 1024); // unknown provider: the base only
    expect(registerFrameCap(connections, 256)).toBe(64 * 1024 + 256 * 256);
    expect(registerFrameCap(connections, 1024)).toBe(64 * 1024 + 1024 * 256);
    expect(registerFrameCap(connections, 1_000_000)).toBe(64 * 1024 + WorkerLimits.models * 256);
    // Never above MAX_WORKER_FRAME_BYTES.
    expect(registerFrameCap(loadConfig({ MAX_WORKER_FRAME_BYTES: String(100 * 1024) }).connections, 1024)).toBe(100 * 1024);
  });

  it('fits the largest model list the gateway keeps whole: 1024 names filling the 65 536-character total, every capability at its bound', () => {
    const models = Array.from({ length: WorkerLimits.models }, (_, i) =>
      `m${String(i).padStart(4, '0')}`.padEnd(WorkerLimits.modelsTotalChars / WorkerLimits.models, 'x'),
    );
    expect(sanitizeModels(models, WorkerLimits.models).models).toHaveLength(WorkerLimits.models); // nothing trimmed: a valid list
    const caps = { vision: false, tools: false, json_mode: false, context_length: WorkerNumberBounds.contextLength };
    const frame = {
      type: 'register',
      worker_name: 'w'.repeat(WorkerLimits.workerNameChars),
      models,
      max_concurrent: 4096,
      protocol_version: '2026-04-bridge-v1',
      capabilities: Object.fromEntries(models.map((m) => [m, caps])),
    };
    expect(Buffer.byteLength(JSON.stringify(frame))).toBeLessThanOrEqual(registerFrameCap(connections, WorkerLimits.models) - 64 * 1024 + 4 * 1024);
  });
});
