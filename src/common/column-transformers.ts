import { ValueTransformer } from 'typeorm';

/**
 * Timestamps are stored as epoch milliseconds in BIGINT columns: the same on SQLite and
 * PostgreSQL, free of time-zone conversions, and directly comparable with `Clock.now()`.
 * PostgreSQL returns BIGINT as a string, hence the conversion back to a number.
 */
export const epochMillis: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? value : Number(value)),
};
