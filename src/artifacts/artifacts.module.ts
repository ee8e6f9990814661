import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ArtifactEntity } from './artifact.entity';
import { ArtifactTagEntity } from './artifact-tag.entity';
import { ArtifactTranscriptEntity } from './artifact-transcript.entity';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { ArtifactMetrics } from './artifact-metrics';
import { ArtifactRetention } from './artifact-retention.service';
import { ArtifactStore } from './artifact-store';
import { TypeOrmArtifactStore } from './artifact-store.typeorm';
import { ArtifactsController } from './artifacts.controller';
import { ArtifactsService } from './artifacts.service';
import { JobArtifactRecorder } from './job-artifact-recorder.service';
import { JOB_ARTIFACTS } from './job-artifacts.port';

/**
 * The artifact registry: `/v1/artifacts`, the write-behind recorder behind the `JOB_ARTIFACTS`
 * port (the task API records every finished task through it), the store and its retention (a
 * step of the cleanup job). Registers its entities; needs `DatabaseModule` (the DataSource) and the
 * global `WorkerRecordsModule` (the cleanup job).
 *
 * Global, like the usage module: Nest runs a global module's shutdown hooks after the feature
 * modules', so the artifacts of tasks ended while the gateway drains are still written before the
 * DataSource closes.
 */
@Global()
@Module({
  imports: [ApiKeysModule, TenancyModule, TypeOrmModule.forFeature([ArtifactEntity, ArtifactTagEntity, ArtifactTranscriptEntity])],
  controllers: [ArtifactsController],
  providers: [
    TypeOrmArtifactStore,
    { provide: ArtifactStore, useExisting: TypeOrmArtifactStore },
    ArtifactMetrics,
    JobArtifactRecorder,
    { provide: JOB_ARTIFACTS, useExisting: JobArtifactRecorder },
    ArtifactsService,
    ArtifactRetention,
  ],
  exports: [JOB_ARTIFACTS, JobArtifactRecorder, ArtifactStore, ArtifactRetention],
})
export class ArtifactsModule {}
