import { DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config';
import { buildDataSourceOptions } from './data-source-options';

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
        TypeOrmModule.forRoot({
          ...buildDataSourceOptions(config.databaseUrl),
          // The entities of the feature modules in this application, not every entity file found.
          entities: [],
          autoLoadEntities: true,
          migrationsRun: true,
          // A database that is still starting gets a few seconds; a wrong URL fails the boot quickly.
          retryAttempts: 3,
          retryDelay: 2000,
        }),
      ],
      exports: [TypeOrmModule],
    };
  }
}
