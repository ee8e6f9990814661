import { Controller, Get } from '@nestjs/common';
import { Errors } from '../common/gateway-error';
import { LifecycleState } from '../observability/lifecycle-state';
import { CapabilitiesDocument, CapabilitiesService } from './capabilities.service';

/** Discovery for clients and tools: what the gateway's pools can do right now. */
@Controller('v1')
export class CapabilitiesController {
  constructor(
    private readonly capabilities: CapabilitiesService,
    private readonly lifecycle: LifecycleState,
  ) {}

  @Get('capabilities')
  document(): CapabilitiesDocument {
    if (this.lifecycle.isShuttingDown) throw Errors.serverShutdown();
    return this.capabilities.document();
  }
}
