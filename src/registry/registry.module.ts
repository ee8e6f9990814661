import { Module } from '@nestjs/common';
import { WorkerRegistry } from './worker-registry.service';

@Module({ providers: [WorkerRegistry], exports: [WorkerRegistry] })
export class RegistryModule {}
