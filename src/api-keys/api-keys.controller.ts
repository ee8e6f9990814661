import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { CLOCK, Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import { describeKey, parseCreateKeyBody, parseUpdateKeyBody } from './api-key.dto';
import type { ApiKeyRecord } from './api-key-store';
import { ApiKeysService } from './api-keys.service';
import { Audited } from '../governance/audited';
import { ApiDoc } from '../common/api-doc';
import { API_KEYS_API } from './api-keys.schemas';

/** Operator API for client API keys (bearer ADMIN_TOKEN); see docs/tenancy.md. */
@Controller('admin/keys')
@UseGuards(AdminGuard)
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** 201 with the key in `key`: the only time it is shown. */
  @Post()
  @AdminRole('admin')
  @Audited('keys.create', { target: ({ result }) => (result as { id?: string } | undefined)?.id })
  @ApiDoc(API_KEYS_API.createKey)
  @HttpCode(201)
  async create(@Body() raw: unknown) {
    const { record, key } = await this.keys.create(parseCreateKeyBody(raw, this.clock.now()));
    return { ...this.describe(record), key };
  }

  @Get()
  @AdminRole('viewer')
  @ApiDoc(API_KEYS_API.listKeys)
  list() {
    return { data: this.keys.list().map((k) => this.describe(k)) };
  }

  @Get(':id')
  @AdminRole('viewer')
  @ApiDoc(API_KEYS_API.getKey)
  get(@Param('id') id: string) {
    return this.describe(this.keyOr404(id));
  }

  @Patch(':id')
  @AdminRole('admin')
  @Audited('keys.update')
  @ApiDoc(API_KEYS_API.updateKey)
  async update(@Param('id') id: string, @Body() raw: unknown) {
    this.keyOr404(id);
    const updated = await this.keys.update(id, parseUpdateKeyBody(raw, this.clock.now()));
    return this.describe(updated ?? this.keyOr404(id));
  }

  @Delete(':id')
  @AdminRole('admin')
  @Audited('keys.delete')
  @ApiDoc(API_KEYS_API.deleteKey)
  async remove(@Param('id') id: string) {
    this.keyOr404(id);
    if (!(await this.keys.remove(id))) throw notFound(id);
    return { deleted: id };
  }

  private keyOr404(id: string): ApiKeyRecord {
    const key = this.keys.get(id);
    if (!key) throw notFound(id);
    return key;
  }

  private describe(r: ApiKeyRecord) {
    return describeKey(r, this.keys.statusOf(r));
  }
}

function notFound(id: string): GatewayError {
  // The id comes from the URL: echo a bounded prefix.
  return new GatewayError('not_found', `API key '${id.slice(0, 80)}' not found`);
}
