import { Module } from '@nestjs/common';

/** Worker records (persistence of who connected when); the live workers are the Fleet's (src/fleet). */
@Module({})
export class RegistryModule {}
