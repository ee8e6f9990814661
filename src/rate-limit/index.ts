export * from './rate-limiter';
export * from './gcra';
export * from './memory-rate-limiter';
export * from './redis-rate-limiter';
export * from '../common/redis-url';
export * from './rate-limit.module';
