import { Module } from '@nestjs/common';
import { RequestQueues } from './request-queues.service';

@Module({ providers: [RequestQueues], exports: [RequestQueues] })
export class QueueModule {}
