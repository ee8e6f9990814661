import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

/**
 * Row of `op_token_nonces`: a nonce some verifiedOpToken used. Kept while a token carrying it
 * could still pass the time window (until `expires_at`), then pruned.
 */
@Entity('op_token_nonces')
@Index('IDX_op_token_nonces_expires_at', ['expiresAt'])
export class OpTokenNonceEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  nonce: string;

  @Column({ name: 'expires_at', type: 'bigint', transformer: epochMillis })
  expiresAt: number;
}
