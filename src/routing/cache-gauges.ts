import { Injectable } from '@nestjs/common';
import { ProvidersService } from '../providers/providers.service';
import { MetricsService } from '../observability/metrics.service';
import { Fleet } from '../fleet/fleet.service';

/**
 * `switchboard_worker_kv_cache_usage_ratio{provider,worker}`: each worker's last reported KV-cache
 * usage, filled when metrics are scraped (no request pays for it); workers that report none are absent.
 */
@Injectable()
export class CacheGauges {
  constructor(fleet: Fleet, providers: ProvidersService, metrics: MetricsService) {
    metrics.collectKvCacheWith(function* () {
      for (const p of providers.all()) {
        for (const w of fleet.directory.ofProvider(p.name)) {
          const ratio = w.cacheStats?.kv_cache_usage_ratio;
          if (ratio !== undefined) yield { provider: p.name, worker: w.name, ratio };
        }
      }
    });
  }
}
