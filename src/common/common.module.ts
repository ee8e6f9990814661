import { Global, Module } from '@nestjs/common';
import { CLOCK, systemClock } from './clock';

/** Process-wide ports every module may inject (the Clock), provided once. */
@Global()
@Module({
  providers: [{ provide: CLOCK, useValue: systemClock }],
  exports: [CLOCK],
})
export class CommonModule {}
