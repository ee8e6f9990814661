import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, GatewayErrorCode, statusOf } from '../common/gateway-error';
import { dialectOf, errorBody, errorHeaders } from './error-dialect';

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
    const error = this.toGatewayError(exception);
    const status = statusOf(error.code);
    if (reply.sent || reply.raw.headersSent) return;
    reply
      .status(status)
      .headers(errorHeaders(error))
      .header('content-type', 'application/json')
      .send(JSON.stringify(errorBody(dialectOf(req.url.split('?')[0]), error)));
  }

  private toGatewayError(exception: unknown): GatewayError {
    if (exception instanceof GatewayError) return exception;
    const status =
      exception instanceof HttpException
        ? exception.getStatus()
        : typeof (exception as { statusCode?: unknown })?.statusCode === 'number'
          ? (exception as { statusCode: number }).statusCode
          : 500;
    const code = CODE_BY_STATUS[status];
    if (code === 'not_found') return new GatewayError(code, 'Route not found');
    if (code === 'payload_too_large') return new GatewayError(code, 'Request body is too large');
    if (code && exception instanceof HttpException) return new GatewayError(code, sanitize(exception.message));
    if (code) return new GatewayError(code, 'Invalid request');
    this.log.error(`unhandled error: ${(exception as Error)?.stack ?? String(exception)}`);
    return new GatewayError('internal_error', 'Internal error');
  }
}

function sanitize(message: string): string {
  return message.length > 200 ? `${message.slice(0, 200)}…` : message;
}
