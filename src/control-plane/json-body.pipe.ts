import { Injectable, PipeTransform, Type } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { Errors } from '../common/gateway-error';

/**
 * Bodies arrive as raw strings (inference forwards them untouched), so admin routes parse and
 * validate theirs here: JSON → DTO class → class-validator, with one clear 400 on failure.
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
    if (errors.length) {
      const detail = errors.flatMap((e) => Object.values(e.constraints ?? {})).join('; ');
      throw Errors.invalidRequest(detail, errors[0].property);
    }
    return instance;
  }
}
