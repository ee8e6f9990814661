import { getMetadataStorage } from 'class-validator';
import { getMetadataArgsStorage } from 'typeorm';
import type { SchemaObject } from '@nestjs/swagger';
import { JsonBodyPipe } from '../common/json-body.pipe';
import { GatewayError } from '../common/gateway-error';
import { ProviderEntity } from '../providers/provider.entity';
import { ADMIN_LIMITS, PROVIDER_LIMITS } from '../providers/provider-limits';
import { ADMIN_SCHEMAS } from './admin.schemas';
import { UpdateProviderDto } from './dto/provider.dto';

// The DTO and the entity declare the provider's limits on their own (decorators); the table in
// providers/provider-limits.ts is what everything else is read from. A limit added to one and
// forgotten in another fails here, by name, nullability and (the DTO's) bounds.

/** Body fields and columns that are not limits: secrets, declarations, bookkeeping. */
const NOT_LIMITS = {
  body: ['secret', 'models', 'capabilities'],
  columns: ['name', 'secret_hash', 'models', 'capabilities', 'aliases', 'source', 'created_at', 'updated_at'],
};
const ANSWER_NOT_LIMITS = ['name', 'source', 'has_secret', 'models', 'capabilities', 'aliases', 'workers_connected', 'queue_depth'];

const sorted = (names: Iterable<string>) => [...names].sort();
const apiNames = sorted(ADMIN_LIMITS.map((f) => f.api));
const nullableApiNames = sorted(ADMIN_LIMITS.filter((f) => f.nullable).map((f) => f.api));

/** The DTO's fields whose type admits null (checked by the compiler: a key missing or extra fails to build). */
type NullableDtoField = { [K in keyof UpdateProviderDto]-?: null extends UpdateProviderDto[K] ? K : never }[keyof UpdateProviderDto];
const DTO_NULLABLE: Record<NullableDtoField, true> = { first_byte_timeout_secs: true, priority: true, translation: true };

const limitProperties = (schema: SchemaObject, notLimits: string[]) =>
  Object.entries(schema.properties as Record<string, SchemaObject>).filter(([name]) => !notLimits.includes(name));

describe('the provider limits (issue 17: one table, checked against the declarations)', () => {
  it('the admin DTO validates exactly the table’s admin limits, nullable where the table says', () => {
    const validated = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(UpdateProviderDto, '', true, false)
        .map((m) => m.propertyName),
    );
    expect(sorted([...validated].filter((name) => !NOT_LIMITS.body.includes(name)))).toEqual(apiNames);
    expect(sorted(Object.keys(DTO_NULLABLE))).toEqual(nullableApiNames);
  });

  it('the admin DTO accepts each limit at its bounds and refuses it past them', () => {
    const pipe = new JsonBodyPipe(UpdateProviderDto);
    const refused = (body: object) => {
      try {
        pipe.transform(JSON.stringify(body));
        return false;
      } catch (e) {
        if (e instanceof GatewayError) return true;
        throw e;
      }
    };
    for (const f of ADMIN_LIMITS) {
      const ok: unknown[] = { count: [f.min ?? 0], ms: [f.min, f.max], number: [f.min ?? 0], boolean: [true, false], enum: [...(f.values ?? [])] }[f.kind];
      const bad: unknown[] = { count: [(f.min ?? 0) + 0.5, 'x'], ms: ['x'], number: ['x'], boolean: ['yes'], enum: ['other'] }[f.kind];
      if (f.min !== undefined) bad.push(f.min - (f.kind === 'count' ? 1 : f.min / 2));
      if (f.max !== undefined) bad.push(f.max + 1);
      for (const v of ok) expect({ [f.api]: v, refused: refused({ [f.api]: v }) }).toEqual({ [f.api]: v, refused: false });
      for (const v of bad) expect({ [f.api]: v, refused: refused({ [f.api]: v }) }).toEqual({ [f.api]: v, refused: true });
    }
  });

  it('the entity has a column for every limit, named and nullable as the table says, and no other limit', () => {
    const columns = getMetadataArgsStorage().columns.filter((c) => c.target === ProviderEntity);
    const byProperty = new Map(columns.map((c) => [c.propertyName, { column: c.options.name ?? c.propertyName, nullable: c.options.nullable === true }]));
    for (const f of PROVIDER_LIMITS) expect({ key: f.key, ...byProperty.get(f.key) }).toEqual({ key: f.key, column: f.column, nullable: f.nullable });
    const others = [...byProperty.values()].map((c) => c.column).filter((c) => !NOT_LIMITS.columns.includes(c));
    expect(sorted(others)).toEqual(sorted(PROVIDER_LIMITS.map((f) => f.column)));
  });

  it('the OpenAPI request and answer schemas list the admin limits, nullable as the table says', () => {
    for (const [schema, notLimits] of [
      [ADMIN_SCHEMAS.CreateProvider, ['name', ...NOT_LIMITS.body]],
      [ADMIN_SCHEMAS.UpdateProvider, NOT_LIMITS.body],
      [ADMIN_SCHEMAS.Provider, ANSWER_NOT_LIMITS],
    ] as const) {
      const limits = limitProperties(schema, [...notLimits]);
      expect(sorted(limits.map(([name]) => name))).toEqual(apiNames);
      expect(sorted(limits.filter(([, s]) => s.nullable).map(([name]) => name))).toEqual(nullableApiNames);
    }
  });
});
