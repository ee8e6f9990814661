import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, GatewayErrorCode, statusOf } from '../common/gateway-error';
import { dialectOf, errorBody, errorHeaders } from '../common/error-dialect';
import { CACHE_HIT_HEADER, CACHE_TOKENS_REUSED_HEADER } from '../usage/cache-headers';
import { INFERENCE_PATHS } from './inference-paths';

const CODE_BY_STATUS: Record<number, GatewayErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  413: 'payload_too_large',
};

/**
 * Every error that escapes a handler — domain errors, Nest HTTP exceptions, Fastify errors such
 * as an oversized body — answers in the caller's dialect with a stable code; internals never leak.
 */
@Catch()
export class DialectExceptionFilter implements ExceptionFilter {
  private readonly log = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const status = statusOfException(exception);
    const error = this.toGatewayError(exception, status);
    if (reply.sent || reply.raw.headersSent) return;
    const path = req.url.split('?')[0];
    // An inference answer carries the model-runner API's cache headers even when it is an error.
    if (INFERENCE_PATHS.has(path)) reply.headers({ [CACHE_HIT_HEADER]: 'false', [CACHE_TOKENS_REUSED_HEADER]: '0' });
    reply
      // Known codes answer their contract status; other framework 4xx (405, 415…) keep theirs.
      .status(exception instanceof GatewayError || status >= 500 ? statusOf(error.code) : status)
      .headers(errorHeaders(error))
      .header('content-type', 'application/json')
      .send(JSON.stringify(errorBody(dialectOf(path), error)));
  }

  private toGatewayError(exception: unknown, status: number): GatewayError {
    if (exception instanceof GatewayError) return exception;
    const code = CODE_BY_STATUS[status] ?? (status >= 400 && status < 500 ? 'invalid_request' : undefined);
    if (code === 'not_found') return new GatewayError(code, 'Route not found');
    if (code === 'payload_too_large') return new GatewayError(code, 'Request body is too large');
    if (code && exception instanceof HttpException) return new GatewayError(code, sanitize(exception.message));
    if (code) return new GatewayError(code, 'Invalid request');
    this.log.error(`unhandled error: ${(exception as Error)?.stack ?? String(exception)}`);
    return new GatewayError('internal_error', 'Internal error');
  }
}

function statusOfException(exception: unknown): number {
  if (exception instanceof GatewayError) return statusOf(exception.code);
  if (exception instanceof HttpException) return exception.getStatus();
  const statusCode = (exception as { statusCode?: unknown })?.statusCode;
  return typeof statusCode === 'number' ? statusCode : 500;
}

function sanitize(message: string): string {
  return message.length > 200 ? `${message.slice(0, 200)}…` : message;
}
