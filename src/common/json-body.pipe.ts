import { Injectable, PipeTransform, Type } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { Errors } from './gateway-error';

export interface FieldError {
  /** The body field, dotted for nested ones (`capabilities.m.vision`). */
  field: string;
  message: string;
}

/**
 * Bodies arrive as raw strings (inference forwards them untouched), so admin routes parse and
 * validate theirs here: JSON → DTO class → class-validator. A body that is not JSON, or not a JSON
 * object, is a 400 `invalid_request`; a JSON object whose fields fail validation (wrong type, out
 * of range, unknown field) is a 422 `validation_failed` listing every field and what is wrong.
 */
@Injectable()
export class JsonBodyPipe<T extends object> implements PipeTransform<unknown, T> {
  constructor(private readonly dto: Type<T>) {}

  transform(raw: unknown): T {
    let plain: unknown = {};
    if (typeof raw === 'string' && raw.trim() !== '') {
      try {
        plain = JSON.parse(raw);
      } catch {
        throw Errors.invalidRequest('Request body is not valid JSON');
      }
    }
    if (!plain || typeof plain !== 'object' || Array.isArray(plain)) throw Errors.invalidRequest('Request body must be a JSON object');
    const instance = plainToInstance(this.dto, plain);
    const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true });
    if (errors.length) throw Errors.validationFailed(fieldErrors(errors));
    return instance;
  }
}

/** class-validator's tree as a flat list, one entry per field (its failed constraints joined by '; '). */
export function fieldErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    const messages = Object.values(e.constraints ?? {});
    if (messages.length) out.push({ field, message: messages.join('; ') });
    if (e.children?.length) out.push(...fieldErrors(e.children, field));
  }
  return out;
}
