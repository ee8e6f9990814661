import { DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config';
import { buildDataSourceOptions } from './data-source-options';
import { runMigrationsLocked } from './migration-lock';

/**
 * Connects, then runs the pending migrations under the migration lock (migration-lock.ts): replicas
 * booting together on an empty PostgreSQL database migrate one at a time.
 */
export async function connectAndMigrate(options: DataSourceOptions): Promise<DataSource> {
  const dataSource = new DataSource(options);
  await dataSource.initialize();
  try {
    await runMigrationsLocked(dataSource);
  } catch (e) {
    await dataSource.destroy().catch(() => undefined);
    throw e;
  }
  return dataSource;
}

/**
 * Persistence: the TypeORM DataSource for DATABASE_URL (migrations run at boot, never
 * `synchronize`), and nothing of any feature. Each feature's module registers its own entities
 * (`TypeOrmModule.forFeature([...])`, collected here by `autoLoadEntities`) and provides its own
 * stores behind its persistence ports. Global, so `DataSource` can be injected anywhere.
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...buildDataSourceOptions(config.databaseUrl),
            // The entities of the feature modules in this application, not every entity file found.
            entities: [],
            autoLoadEntities: true,
            // Run by connectAndMigrate, under the migration lock.
            migrationsRun: false,
            // A database that is still starting gets a few seconds; a wrong URL fails the boot quickly.
            retryAttempts: 3,
            retryDelay: 2000,
          }),
          dataSourceFactory: (options) => connectAndMigrate(options ?? buildDataSourceOptions(config.databaseUrl)),
        }),
      ],
      exports: [TypeOrmModule],
    };
  }
}
