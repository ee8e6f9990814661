import { Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Router } from '../routing/router.service';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { GatewayError } from '../common/gateway-error';
import { EndpointOptions, InferenceService } from './inference.service';
import { ApiDoc } from '../common/api-doc';
import { INFERENCE_API } from './inference.schemas';

const STREAMABLE: EndpointOptions = { streamable: true };
const WHOLE: EndpointOptions = { streamable: false };

/**
 * The relayed routes: each path, the controller method declaring it, and whether it may stream.
 * Fastify calls InferenceService.relay for them directly (direct-routes.ts, wired in
 * inference.module.ts); the methods below are what Nest declares and documents, and what serves
 * a route if it ever carries a guard, interceptor or pipe.
 */
export const RELAYED_ROUTES: ReadonlyArray<{ path: string; method: keyof InferenceController; options: EndpointOptions }> = [
  { path: '/v1/chat/completions', method: 'chatCompletions', options: STREAMABLE },
  { path: '/v1/completions', method: 'completions', options: STREAMABLE },
  { path: '/v1/responses', method: 'responses', options: STREAMABLE },
  { path: '/v1/embeddings', method: 'embeddings', options: WHOLE },
  { path: '/v1/messages', method: 'messages', options: STREAMABLE },
  { path: '/v1/messages/count_tokens', method: 'countTokens', options: WHOLE },
];

/** OpenAI- and Anthropic-compatible endpoints. Thin: everything happens in InferenceService. */
@Controller('v1')
export class InferenceController {
  constructor(
    private readonly inference: InferenceService,
    private readonly router: Router,
    private readonly apiKeys: ApiKeysService,
  ) {}

  @Post('chat/completions')
  @ApiDoc(INFERENCE_API.chatCompletions)
  chatCompletions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/chat/completions', STREAMABLE);
  }

  @Post('completions')
  @ApiDoc(INFERENCE_API.completions)
  completions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/completions', STREAMABLE);
  }

  @Post('responses')
  @ApiDoc(INFERENCE_API.responses)
  responses(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/responses', STREAMABLE);
  }

  @Post('embeddings')
  @ApiDoc(INFERENCE_API.embeddings)
  embeddings(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/embeddings', WHOLE);
  }

  @Post('messages')
  @ApiDoc(INFERENCE_API.messages)
  messages(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/messages', STREAMABLE);
  }

  @Post('messages/count_tokens')
  @ApiDoc(INFERENCE_API.countTokens)
  countTokens(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    this.inference.relay(req, reply, '/v1/messages/count_tokens', WHOLE);
  }

  /**
   * Models of connected, non-draining workers of enabled providers, and the aliases that point at
   * them; the `*` wildcard is never listed. Only what the caller could use: a key or tenant that
   * restricts models sees only those, a tenant restricted to pools only what those pools serve.
   */
  @Get('models')
  @ApiDoc(INFERENCE_API.models)
  @HttpCode(200)
  models(@Req() req: FastifyRequest): { object: 'list'; data: Array<{ id: string; object: 'model'; created: number; owned_by: string }> } {
    const caller = this.apiKeys.identify(req);
    if (caller instanceof GatewayError) throw caller;
    return {
      object: 'list',
      data: this.router.listModels({ allowedModels: caller.allowedModels, allowedPools: caller.allowedPools }).map((m) => ({
        id: m.id,
        object: 'model',
        created: Math.floor(m.createdAt / 1000),
        owned_by: m.provider,
      })),
    };
  }
}
