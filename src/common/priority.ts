/** Request priorities, highest first; their index is the queue level (0 = served first). */
export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];
export type PriorityLevel = 0 | 1 | 2;

export function parsePriority(value: unknown): Priority | undefined {
  return typeof value === 'string' && (PRIORITIES as readonly string[]).includes(value.trim().toLowerCase())
    ? (value.trim().toLowerCase() as Priority)
    : undefined;
}

export function levelOf(p: Priority): PriorityLevel {
  return PRIORITIES.indexOf(p) as PriorityLevel;
}
