export * from './membership.port';
export * from './membership-store';
export * from './single-process-membership';
export * from './heartbeat-membership';
export * from './redis-membership-store';
export * from './advertise-url';
export * from './internal-link';
