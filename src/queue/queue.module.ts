import { Module } from '@nestjs/common';
import { AdmissionQueue } from './admission-queue';

@Module({ providers: [AdmissionQueue], exports: [AdmissionQueue] })
export class QueueModule {}
