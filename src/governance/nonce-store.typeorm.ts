import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { NonceStore } from './nonce-store';
import { OpTokenNonceEntity } from './op-token-nonce.entity';

/**
 * A claim whose nonce row vanished between its failed INSERT and its look at the row (the cleanup
 * job pruned the expired row at that moment) starts over; each round needs another concurrent
 * prune, so a few are plenty.
 */
const CLAIM_ATTEMPTS = 3;

@Injectable()
export class TypeOrmNonceStore extends NonceStore {
  constructor(@InjectRepository(OpTokenNonceEntity) private readonly repo: Repository<OpTokenNonceEntity>) {
    super();
  }

  /**
   * The primary key makes the claim atomic: the INSERT of a nonce already there fails. A row that
   * expired but was not pruned yet is taken over by a conditional UPDATE, so whether a reused
   * nonce passes never depends on when the last prune ran.
   */
  async claim(nonce: string, expiresAt: number, now: number): Promise<boolean> {
    let lastError: unknown;
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      try {
        await this.repo.insert({ nonce, expiresAt });
        return true;
      } catch (insertError) {
        lastError = insertError;
      }
      const taken = await this.repo
        .createQueryBuilder()
        .update(OpTokenNonceEntity)
        .set({ expiresAt })
        .where('nonce = :nonce AND expires_at < :now', { nonce, now })
        .execute();
      if ((taken.affected ?? 0) > 0) return true;
      if (await this.repo.existsBy({ nonce })) return false;
      // Neither there nor inserted: pruned concurrently (try again), or the INSERT failed for
      // another reason (it fails again, and that error is thrown).
    }
    throw lastError;
  }

  async prune(now: number): Promise<number> {
    const result = await this.repo.createQueryBuilder().delete().from(OpTokenNonceEntity).where('expires_at < :now', { now }).execute();
    return result.affected ?? 0;
  }
}
