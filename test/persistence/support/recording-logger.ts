import { Logger as TypeOrmLogger } from 'typeorm';

/** TypeORM logger that keeps every statement, so tests can count what reached the database. */
export class RecordingLogger implements TypeOrmLogger {
  readonly statements: string[] = [];

  logQuery(query: string): void {
    this.statements.push(query);
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}

  /** Statements that write to `table` (INSERT, UPDATE or DELETE). */
  writesTo(table: string): string[] {
    const pattern = new RegExp(`^\\s*(INSERT INTO|UPDATE|DELETE FROM)\\s+("?[\\w]+"?\\.)?"?${table}"?\\b`, 'i');
    return this.statements.filter((s) => pattern.test(s));
  }

  clear(): void {
    this.statements.length = 0;
  }
}
