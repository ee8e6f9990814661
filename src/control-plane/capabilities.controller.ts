import { Controller, Get, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { Errors, GatewayError } from '../common/gateway-error';
import { LifecycleState } from '../observability/lifecycle-state';
import { CapabilitiesDocument, CapabilitiesService } from './capabilities.service';
import { ApiDoc } from '../common/api-doc';
import { CONTROL_PLANE_API } from './control-plane.schemas';

/** Discovery for clients and tools: what the gateway's pools can do right now. */
@Controller('v1')
export class CapabilitiesController {
  constructor(
    private readonly capabilities: CapabilitiesService,
    private readonly lifecycle: LifecycleState,
    private readonly apiKeys: ApiKeysService,
  ) {}

  /** Needs a client key when keys are required, like the inference routes and /v1/models. */
  @Get('capabilities')
  @ApiDoc(CONTROL_PLANE_API.capabilities)
  document(@Req() req: FastifyRequest): CapabilitiesDocument {
    const caller = this.apiKeys.authenticate(req);
    if (caller instanceof GatewayError) throw caller;
    if (this.lifecycle.isShuttingDown) throw Errors.serverShutdown();
    return this.capabilities.document();
  }
}
