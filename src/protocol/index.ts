export * from './messages';
export * from './codec';
export * from './http-headers';
export * from './capabilities';
