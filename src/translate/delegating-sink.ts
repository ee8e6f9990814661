import type { GatewayError } from '../common/gateway-error';
import type { ResponseSink } from '../dispatch/relay-request';

/**
 * A sink that passes everything to the client's sink: the base of sinks that change only what is
 * written (translation, count_tokens' fallback). The client's connection (backpressure, progress,
 * drain, abort) and the gateway's headers stay the client sink's own.
 */
export class DelegatingSink implements ResponseSink {
  constructor(protected readonly client: ResponseSink) {}

  get clientGone(): boolean {
    return this.client.clientGone;
  }

  get pendingBytes(): number {
    return this.client.pendingBytes;
  }

  get progress(): number | undefined {
    return this.client.progress;
  }

  onDrain(listener: () => void): void {
    this.client.onDrain(listener);
  }

  abort(): void {
    this.client.abort();
  }

  routed(servedModel: string, fallbackFor: string | undefined): void {
    this.client.routed(servedModel, fallbackFor);
  }

  queueWaited(ms: number): void {
    this.client.queueWaited(ms);
  }

  addHeaders(headers: Record<string, string>): void {
    this.client.addHeaders?.(headers);
  }

  gpuTime(ms: number): void {
    this.client.gpuTime?.(ms);
  }

  startStream(status?: number, headers?: Record<string, string>): void {
    this.client.startStream(status, headers);
  }

  writeChunk(chunk: string): boolean {
    return this.client.writeChunk(chunk);
  }

  endStream(status?: number): void {
    this.client.endStream(status);
  }

  sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]): void {
    this.client.sendComplete(status, headers, body);
  }

  fail(error: GatewayError): void {
    this.client.fail(error);
  }
}
