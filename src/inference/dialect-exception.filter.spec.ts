import { HttpException, MethodNotAllowedException, NotFoundException } from '@nestjs/common';
import { ArgumentsHost } from '@nestjs/common';
import { Errors } from '../common/gateway-error';
import { DialectExceptionFilter } from './dialect-exception.filter';

function capture(url: string) {
  const sent: { status?: number; headers: Record<string, string>; body?: any } = { headers: {} };
  const reply: any = {
    sent: false,
    raw: { headersSent: false },
    status(s: number) {
      sent.status = s;
      return reply;
    },
    headers(h: Record<string, string>) {
      Object.assign(sent.headers, h);
      return reply;
    },
    header(k: string, v: string) {
      sent.headers[k] = v;
      return reply;
    },
    send(b: string) {
      sent.body = JSON.parse(b);
      return reply;
    },
  };
  const host = { switchToHttp: () => ({ getRequest: () => ({ url }), getResponse: () => reply }) } as unknown as ArgumentsHost;
  return { host, sent };
}

describe('DialectExceptionFilter', () => {
  const filter = new DialectExceptionFilter();

  it('answers domain errors with their contract status, headers and dialect', () => {
    const { host, sent } = capture('/v1/messages');
    filter.catch(Errors.queueFull(2000, 7, 350), host);
    expect(sent.status).toBe(429);
    expect(sent.headers).toMatchObject({ 'retry-after': '2', 'x-backoff-ms': '2000' });
    expect(sent.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', code: 'queue_full', queue_depth: 7, avg_wait_ms: 350 } });
  });

  it('keeps the status of framework 4xx errors it has no code for', () => {
    const { host, sent } = capture('/admin/providers');
    filter.catch(new MethodNotAllowedException(), host);
    expect(sent.status).toBe(405);
    expect(sent.body.error.code).toBe('invalid_request');
  });

  it('turns unknown routes into a 404 and unexpected errors into a sanitized 500', () => {
    const a = capture('/nope');
    filter.catch(new NotFoundException(), a.host);
    expect(a.sent.status).toBe(404);
    const b = capture('/v1/chat/completions');
    filter.catch(new Error('database password is hunter2'), b.host);
    expect(b.sent.status).toBe(500);
    expect(JSON.stringify(b.sent.body)).not.toContain('hunter2');
    const c = capture('/v1/chat/completions');
    filter.catch(new HttpException('upstream', 503), c.host);
    expect(c.sent.status).toBe(500);
  });
});
