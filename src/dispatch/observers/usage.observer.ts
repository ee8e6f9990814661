import { Injectable } from '@nestjs/common';
import { UsageRecorder } from '../../usage/usage-recorder.port';
import { usageRecordOf } from '../../usage/usage-record';
import type { RelayRequest } from '../relay-request';
import { RequestObserver } from './request-observer';

/** One usage record per finished request (chargeback), appended to a bounded buffer written later in batches. */
@Injectable()
export class UsageObserver implements RequestObserver {
  constructor(private readonly usage: UsageRecorder) {}

  finished(req: RelayRequest, status: number, now: number): void {
    this.usage.record(usageRecordOf(req, status, now));
  }
}
